/* zb_plan_hash.c - the plan's fingerprint (zb_plan.h): FNV-1a 64 over a
 * canonical text of what the stage costs and the predictions were computed
 * from. Numbers are printed with 12 significant digits, so a value that
 * went through the YAML text and back (memory_gib, bandwidths) hashes the
 * same; a changed shape, batch, precision, device or split does not. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/zb_plan.h"

typedef struct {
    uint64_t h;
} fnv;

static void put(fnv *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#include <stdarg.h>
static void put(fnv *f, const char *fmt, ...) {
    char buf[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n >= sizeof buf) n = (int)sizeof buf - 1;
    for (int i = 0; i <= n; i++) {   /* the NUL separates fields */
        f->h ^= (unsigned char)buf[i];
        f->h *= 1099511628211ull;
    }
}

static void put_model(fnv *f, const zb_model *m) {
    const zb_arch *a = &m->arch;
    const zb_training *t = &m->train;
    const zb_cluster *c = &m->cluster;
    put(f, "arch %d %d %d %d %d %d %d", a->layers, a->hidden, a->heads,
        a->ffn_hidden, a->seq_len, a->vocab, a->tied_embeddings);
    if (!zb_arch_is_gpt2(a))   /* GPT-2 plans keep their fingerprints */
        put(f, "block %d %d %d %d %.12g %d", zb_arch_kv_heads(a), (int)a->mlp, (int)a->norm,
            (int)a->position, a->rope_theta, !a->no_bias);
    if (a->no_bias && a->qkv_bias) put(f, "qkv_bias");
    put(f, "train %d %d %d %d %d %d", t->global_batch, t->micro_batch,
        (int)t->precision, (int)t->recompute, t->sequence_parallel, t->zero1);
    put(f, "cluster %d %d %s", c->nodes, c->devices_per_node, c->device.name);
    put(f, "%.12g %.12g %.12g", c->device.peak_bf16_flops,
        c->device.peak_fp32_flops, c->device.mem_bytes);
    put(f, "%.12g %.12g %.12g %.12g", c->intra_bw_Bps, c->intra_lat_s,
        c->inter_bw_Bps, c->inter_lat_s);
}

uint64_t zb_plan_fingerprint(const zb_plan *p) {
    fnv f = {14695981039346656037ull};
    put_model(&f, &p->model);
    put(&f, "parallel %d %d %d %d %d %d", p->dp, p->tp, p->pp, p->v,
        p->micro_batch, p->m);
    for (int s = 0; s < p->pp * p->v; s++) {
        const zb_stage_span *sp = &p->stages[s];
        const zb_costs *c = &p->costs;
        put(&f, "stage %d %d %d %d", sp->first_layer, sp->n_layers, sp->embed,
            sp->head);
        put(&f, "%.12g %.12g %.12g %.12g %.12g %.12g", c->t_f[s], c->t_b[s],
            c->t_w[s], c->t_comm[s], c->m_b[s], c->m_w[s]);
    }
    if (p->vocab_parallel) { /* absent from older plans' fingerprints */
        const zb_costs *c = &p->costs;
        put(&f, "vocab %d %.12g %.12g %.12g %.12g %.12g %.12g", p->vocab_parallel,
            c->t_s, c->t_t, c->t_bcast, c->t_c1, c->t_c2, c->m_s);
    }
    const zb_prediction *r = &p->pred;
    put(&f, "pred %.12g %.12g %.12g %.12g %.12g", r->step_s, r->pipeline_s,
        r->tokens_per_s, r->mfu, r->bubble_rate);
    for (int k = 0; k < p->pp; k++)
        put(&f, "%.12g %.12g %.12g", r->bubble[k], r->peak_mem_bytes[k],
            r->act_mem_bytes[k]);
    return f.h;
}

zb_status zb_plan_file_hash(const char *path, char hex[17], zb_err *err) {
    FILE *f = fopen(path, "rb");
    if (!f) return zb_fail(err, ZB_EIO, "%s: cannot read: %s", path, strerror(errno));
    uint64_t h = 14695981039346656037ull;
    unsigned char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        for (size_t i = 0; i < n; i++) {
            h ^= buf[i];
            h *= 1099511628211ull;
        }
    bool bad = ferror(f) != 0;
    int e = errno;
    fclose(f);
    if (bad) return zb_fail(err, ZB_EIO, "%s: cannot read: %s", path, strerror(e));
    snprintf(hex, 17, "%016" PRIx64, h);
    return ZB_OK;
}
