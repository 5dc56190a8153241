/* vocab.c - see cost/vocab.h. */
#include "planner/cost/vocab.h"

#include <math.h>
#include <string.h>

/* The cost model for m with V = rows_per_tp * tp (each TP rank holds
 * rows_per_tp rows of the output layer). */
static zb_status head_at(const zb_model *m, int tp, int micro_batch,
                         double rows_per_tp, zb_cost_table *out, zb_err *err) {
    zb_model r = *m;
    r.arch.vocab = (int)(rows_per_tp * tp);
    return zb_cost_eval(&r, tp, micro_batch, out, err);
}

/* Bandwidth and latency of a collective over one pipeline group: its
 * ranks are dp tp apart (zb_plan.h), inside one node while they fit. */
static void pp_link(const zb_model *m, int dp, int tp, int pp, double *bw,
                    double *lat) {
    const zb_cluster *c = &m->cluster;
    bool intra = (long long)dp * tp * pp <= c->devices_per_node;
    *bw = intra ? c->intra_bw_Bps : c->inter_bw_Bps;
    *lat = intra ? c->intra_lat_s : c->inter_lat_s;
}

/* The communication of vocabulary parallelism (cost/vocab.h). */
static void comm_costs(const zb_model *m, int dp, int tp, int pp, int mb,
                       int variant, zb_vocab_cost *o, double *embed_ar_s) {
    double bw, lat, bs = (double)mb * m->arch.seq_len, h = m->arch.hidden;
    double e = zb_precision_bytes(m->train.precision), bsh = bs * h;
    pp_link(m, dp, tp, pp, &bw, &lat);
    o->t_bcast = e * bsh / bw + ceil(log2(pp)) * lat;
    o->t_c1 = zb_allreduce_s(12 * bs + (variant == 2 ? (4 + e) * bsh : 0), pp,
                             bw, lat);
    o->t_c2 = variant == 1 ? zb_allreduce_s(4 * bsh, pp, bw, lat) : 0;
    *embed_ar_s = zb_allreduce_s(e * bsh, pp, bw, lat);
}

zb_status zb_vocab_eval(const zb_model *m, int dp, int tp, int pp,
                        int micro_batch, int variant, zb_cost_table *ct,
                        zb_vocab_cost *out, zb_err *err) {
    memset(out, 0, sizeof *out);
    if (variant == 0) return ZB_OK;
    if (variant != 1 && variant != 2)
        return zb_fail(err, ZB_EINPUT, "vocabulary parallelism %d: expected "
                       "none, 1 or 2", variant);
    if (pp < 2)
        return zb_fail(err, ZB_EINPUT, "vocabulary parallelism needs pp >= 2 "
                       "(the vocabulary is sharded over the pipeline ranks)");
    zb_cost_table shard;
    double rows = ceil((double)m->arch.vocab / ((double)pp * tp));
    ZB_TRY(head_at(m, tp, micro_batch, rows, &shard, err));
    const zb_pass_cost *hs = &shard.head;
    out->variant = variant;
    out->shard_rows = rows;
    out->t_s = hs->f_s + (variant == 2 ? hs->b_s : 0);
    out->t_t = hs->w_s + (variant == 1 ? hs->b_s : 0);
    out->m_s = hs->m_b_bytes;
    double embed_ar_s;
    comm_costs(m, dp, tp, pp, micro_batch, variant, out, &embed_ar_s);
    double h = m->arch.hidden;
    ct->head = ct->head_norm;
    ct->embed.f_s += embed_ar_s;
    ct->embed.w_s += out->t_bcast;
    ct->embed.params -= ct->vocab_params;
    ct->vocab_rank_params = (m->arch.tied_embeddings ? 1 : 2) * rows * h;
    ct->vocab_params = 0;
    return ZB_OK;
}

void zb_vocab_apply(const zb_vocab_cost *vc, zb_costs *c) {
    c->t_s = vc->t_s;
    c->t_t = vc->t_t;
    c->t_bcast = vc->t_bcast;
    c->t_c1 = vc->t_c1;
    c->t_c2 = vc->t_c2;
    c->m_s = vc->m_s;
}
