/* stage_params.c - parameter table and initialisation, see stage_params.h. */
#include "executor/stage/stage_params.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- counter-based generator: value = mix(key, counter) ---- */

/* splitmix64 finaliser (Steele et al.): a bijective 64-bit mixer. */
static uint64_t mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static uint64_t tensor_key(uint64_t seed, int layer, int id) {
    uint64_t k = mix64(seed);
    k = mix64(k ^ (uint64_t)(int64_t)(layer + 2));
    return mix64(k ^ ((uint64_t)id << 32));
}

/* Uniform in (0, 1), never 0 (log below). */
static double uniform(uint64_t key, uint64_t counter) {
    uint64_t x = mix64(key ^ mix64(counter));
    return ((double)(x >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/* Standard normal number `counter` of the stream (Box-Muller, cos branch). */
static double normal(uint64_t key, uint64_t counter) {
    double u1 = uniform(key, 2 * counter), u2 = uniform(key, 2 * counter + 1);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* ---- building the table ---- */

typedef struct {
    zb_ptable *pt;
    size_t off;
} builder;

/* Append a tensor; pt->t is NULL while counting. Returns its index. */
static int add(builder *b, const char *name, int layer, int id, int rows,
               int cols, int full_rows, int full_cols, zb_shard shard,
               float std, float value) {
    zb_ptable *pt = b->pt;
    int idx = pt->n++;
    if (pt->t) {
        zb_ptensor *t = &pt->t[idx];
        memset(t, 0, sizeof *t);
        strncpy(t->name, name, sizeof t->name - 1);
        t->layer = layer;
        t->id = id;
        t->rows = rows;
        t->cols = cols;
        t->full_rows = full_rows;
        t->full_cols = full_cols;
        t->shard = shard;
        t->decay = full_cols > 1; /* matrices and embedding tables */
        t->norm = shard != ZB_SHARD_NONE || pt->tp_rank == 0;
        t->std = std;
        t->value = value;
        t->off = b->off;
    }
    b->off += (size_t)rows * cols;
    return idx;
}

/* The twelve tensors of block `layer`, sharded for this TP rank. A Llama
 * block keeps the twelve ids with the absent ones empty (0 rows: RMSNorm
 * has no bias, bias: false drops the linear biases), so a block's tensor
 * j stays at layer0 + l * ZB_T_PER_LAYER + j. qkv.w holds q of C rows and
 * k, v of kv_heads * hs rows each (GQA); under SwiGLU fc.w is W1 over W3
 * ([2F, C], ZB_SHARD_GLU) and fc2.w is W2. */
static int add_block(builder *b, const zb_arch *a, int layer, int tp) {
    int C = a->hidden, F = a->ffn_hidden, Cl = C / tp, Fl = F / tp;
    int hs = C / a->heads, kv = zb_arch_kv_heads(a) * hs;
    int Q = C + 2 * kv, Ql = Cl + 2 * (kv / tp);
    int G = a->mlp == ZB_MLP_SWIGLU ? 2 : 1; /* fc.w row blocks */
    int nb = a->norm == ZB_NORM_RMSNORM ? 0 : C; /* norm bias rows */
    int lb = a->no_bias ? 0 : 1, qb = !a->no_bias || a->qkv_bias ? 1 : 0;
    zb_shard fcs = G == 2 ? ZB_SHARD_GLU : ZB_SHARD_ROWS;
    float std = 0.02f, rstd = 0.02f / sqrtf(2.0f * (float)a->layers);
    int first = add(b, "ln1.w", layer, ZB_T_LN1W, C, 1, C, 1, ZB_SHARD_NONE, 0, 1);
    add(b, "ln1.b", layer, ZB_T_LN1B, nb, 1, nb, 1, ZB_SHARD_NONE, 0, 0);
    add(b, "qkv.w", layer, ZB_T_QKVW, Ql, C, Q, C, ZB_SHARD_QKV, std, 0);
    add(b, "qkv.b", layer, ZB_T_QKVB, qb * Ql, 1, qb * Q, 1, ZB_SHARD_QKV, 0, 0);
    add(b, "proj.w", layer, ZB_T_PROJW, C, Cl, C, C, ZB_SHARD_COLS, rstd, 0);
    add(b, "proj.b", layer, ZB_T_PROJB, lb * C, 1, lb * C, 1, ZB_SHARD_NONE, 0, 0);
    add(b, "ln2.w", layer, ZB_T_LN2W, C, 1, C, 1, ZB_SHARD_NONE, 0, 1);
    add(b, "ln2.b", layer, ZB_T_LN2B, nb, 1, nb, 1, ZB_SHARD_NONE, 0, 0);
    add(b, "fc.w", layer, ZB_T_FCW, G * Fl, C, G * F, C, fcs, std, 0);
    add(b, "fc.b", layer, ZB_T_FCB, lb * Fl, 1, lb * F, 1, ZB_SHARD_ROWS, 0, 0);
    add(b, "fc2.w", layer, ZB_T_FC2W, C, Fl, C, F, ZB_SHARD_COLS, rstd, 0);
    add(b, "fc2.b", layer, ZB_T_FC2B, lb * C, 1, lb * C, 1, ZB_SHARD_NONE, 0, 0);
    return first;
}

/* Vocabulary parallelism: this rank's shard of the token table and, untied,
 * of the LM head, before the chunks' tensors. */
static void layout_vocab(zb_ptable *pt, builder *b, const zb_plan *plan,
                         int pp_rank) {
    const zb_arch *a = &plan->model.arch;
    int rows;
    zb_vocab_split(a->vocab, pp_rank * pt->tp + pt->tp_rank,
                   plan->pp * pt->tp, &pt->vocab_row0, &rows);
    pt->vocab_wte = pt->vocab_head =
        add(b, "wte", -1, ZB_T_WTE, rows, a->hidden, a->vocab, a->hidden,
            ZB_SHARD_VOCAB, 0.02f, 0);
    if (!a->tied_embeddings)
        pt->vocab_head = add(b, "lm_head", -1, ZB_T_LMHEAD, rows, a->hidden,
                             a->vocab, a->hidden, ZB_SHARD_VOCAB, 0.02f, 0);
}

/* Fill pt->chunk and (when pt->t is set) pt->t; counts tensors and floats. */
static void layout(zb_ptable *pt, const zb_plan *plan, int pp_rank) {
    const zb_arch *a = &plan->model.arch;
    int C = a->hidden, V = a->vocab, T = a->seq_len;
    int Vl = zb_vocab_rows_per_rank(V, pt->tp);
    bool has_embed = false;
    for (int c = 0; c < plan->v; c++)
        if (plan->stages[zb_vstage(&plan->sched, pp_rank, c)].embed)
            has_embed = true;
    builder b = {pt, 0};
    pt->n = 0;
    pt->tied = -1;
    pt->vocab_wte = pt->vocab_head = -1;
    bool vp = plan->vocab_parallel != 0; /* never with DUAL (refused) */
    if (vp) layout_vocab(pt, &b, plan, pp_rank);
    int wte = -1, wte_later = -1;
    bool dual = plan->sched.placement == ZB_PLACE_DUAL;
    for (int c = 0; c < plan->v; c++) {
        const zb_stage_span *sp = &plan->stages[zb_vstage(&plan->sched, pp_rank, c)];
        zb_pchunk ck = {-1, -1, -1, sp->n_layers, -1, -1, -1, 0, 0};
        int first = pt->n;
        size_t off0 = b.off;
        if (sp->embed && vp) {
            if (a->position == ZB_POS_LEARNED)
                ck.wpe = add(&b, "wpe", -1, ZB_T_WPE, T, C, T, C, ZB_SHARD_NONE, 0.02f, 0);
        } else if (sp->embed) {
            ck.wte = wte = add(&b, "wte", -1, ZB_T_WTE, Vl, C, V, C, ZB_SHARD_ROWS, 0.02f, 0);
            if (a->position == ZB_POS_LEARNED)
                ck.wpe = add(&b, "wpe", -1, ZB_T_WPE, T, C, T, C, ZB_SHARD_NONE, 0.02f, 0);
        }
        for (int l = 0; l < sp->n_layers; l++) {
            int first = add_block(&b, a, sp->first_layer + l, pt->tp);
            if (l == 0) ck.layer0 = first;
        }
        if (sp->head) {
            ck.lnfw = add(&b, "lnf.w", -1, ZB_T_LNFW, C, 1, C, 1, ZB_SHARD_NONE, 0, 1);
            int nb = a->norm == ZB_NORM_RMSNORM ? 0 : C;
            ck.lnfb = add(&b, "lnf.b", -1, ZB_T_LNFB, nb, 1, nb, 1, ZB_SHARD_NONE, 0, 0);
            if (vp)
                ; /* the head's rows are the rank's vocabulary shard */
            else if (!a->tied_embeddings)
                ck.head = add(&b, "lm_head", -1, ZB_T_LMHEAD, Vl, C, V, C, ZB_SHARD_ROWS, 0.02f, 0);
            else if (has_embed && wte < 0)
                wte_later = c; /* DUAL rank p-1: the up copy's wte follows */
            else if (has_embed)
                ck.head = wte;
            else {
                ck.head = pt->tied = add(&b, "wte.copy", -1, ZB_T_WTE, Vl, C, V, C, ZB_SHARD_ROWS, 0.02f, 0);
                if (pt->t) {
                    pt->t[ck.head].copy = true;
                    pt->t[ck.head].norm = false; /* the first stage counts wte */
                }
            }
        }
        /* DUAL: chunk 1 is another rank's chunk 0 (the other copy of
         * the same stage): the norm counts each stage once */
        for (int j = first; dual && c == 1 && pt->t && j < pt->n; j++)
            pt->t[j].norm = false;
        ck.copy_off = off0;
        ck.copy_floats = b.off - off0;
        if (pt->chunk) pt->chunk[c] = ck;
    }
    if (wte_later >= 0 && pt->chunk) pt->chunk[wte_later].head = wte;
    /* The embedding's rank syncs wte with the head's copy when they differ. */
    bool has_head = false;
    for (int c = 0; c < plan->v; c++)
        if (plan->stages[zb_vstage(&plan->sched, pp_rank, c)].head) has_head = true;
    if (a->tied_embeddings && has_embed && !has_head && !vp) pt->tied = wte;
    /* DUAL: ranks 0 and p-1 each hold one table for an embedding and the
     * other copy's head; the two tables are summed as the tied pair */
    if (a->tied_embeddings && dual) pt->tied = wte;
    /* the tied table leads its chunk (embedding first): the copies' sum
     * leaves it to the tied pair's */
    for (int c = 0; pt->chunk && pt->t && pt->tied >= 0 && c < plan->v; c++)
        if (pt->chunk[c].wte == pt->tied) {
            size_t k = (size_t)pt->t[wte].rows * pt->t[wte].cols;
            pt->chunk[c].copy_off += k;
            pt->chunk[c].copy_floats -= k;
        }
    pt->floats = b.off;
}

zb_status zb_ptable_build(zb_ptable *pt, const zb_plan *plan, int pp_rank,
                          int tp_rank, zb_err *err) {
    memset(pt, 0, sizeof *pt);
    const zb_arch *a = &plan->model.arch;
    int tp = plan->tp;
    if (tp < 1 || tp_rank < 0 || tp_rank >= tp)
        return zb_fail(err, ZB_EINPUT, "tp rank %d out of range for tp=%d", tp_rank, tp);
    if (pp_rank < 0 || pp_rank >= plan->pp)
        return zb_fail(err, ZB_EINPUT, "pp rank %d out of range for pp=%d", pp_rank, plan->pp);
    if (a->heads < 1 || a->hidden % a->heads != 0)
        return zb_fail(err, ZB_EINPUT, "hidden %d is not a multiple of heads %d",
                       a->hidden, a->heads);
    if (a->heads % tp != 0 || a->ffn_hidden % tp != 0)
        return zb_fail(err, ZB_EINPUT, "tp=%d must divide heads (%d) and ffn_hidden (%d)",
                       tp, a->heads, a->ffn_hidden);
    int kvh = zb_arch_kv_heads(a);
    if (kvh < 1 || a->heads % kvh != 0)
        return zb_fail(err, ZB_EINPUT, "kv_heads %d does not divide heads %d",
                       kvh, a->heads);
    if (kvh % tp != 0)
        return zb_fail(err, ZB_EINPUT, "tp=%d must divide kv_heads (%d): a "
                       "key/value head is never split over TP ranks", tp, kvh);
    pt->q_rows = a->hidden;
    pt->kv_rows = kvh * (a->hidden / a->heads);
    pt->tp = tp;
    pt->tp_rank = tp_rank;
    pt->v = plan->v;
    layout(pt, plan, pp_rank); /* count */
    int n = pt->n;
    pt->t = zb_calloc((size_t)(n > 0 ? n : 1), sizeof *pt->t, err);
    pt->chunk = zb_calloc((size_t)plan->v, sizeof *pt->chunk, err);
    if (!pt->t || !pt->chunk) {
        zb_ptable_free(pt);
        return ZB_ENOMEM;
    }
    layout(pt, plan, pp_rank); /* fill */
    return ZB_OK;
}

void zb_ptable_free(zb_ptable *pt) {
    if (!pt) return;
    free(pt->t);
    free(pt->chunk);
    pt->t = NULL;
    pt->chunk = NULL;
    pt->n = 0;
}

size_t zb_ptable_full_index(const zb_ptable *pt, const zb_ptensor *t,
                            size_t i) {
    size_t r = i / (size_t)t->cols, c = i % (size_t)t->cols;
    size_t k = (size_t)pt->tp_rank;
    switch (t->shard) {
    case ZB_SHARD_ROWS:
        r += k * (size_t)t->rows;
        if (r >= (size_t)t->full_rows) return ZB_PTABLE_PAD; /* vocab pad */
        break;
    case ZB_SHARD_COLS: c += k * (size_t)t->cols; break;
    case ZB_SHARD_QKV: {
        /* local rows: [q of my heads | k of my kv heads | v of them] */
        size_t tp = (size_t)pt->tp, qf = (size_t)pt->q_rows,
               kf = (size_t)pt->kv_rows, ql = qf / tp, kl = kf / tp;
        if (r < ql) r = k * ql + r;
        else if (r < ql + kl) r = qf + k * kl + (r - ql);
        else r = qf + kf + k * kl + (r - ql - kl);
        break;
    }
    case ZB_SHARD_GLU: {
        /* local rows: [my rows of W1 | my rows of W3] */
        size_t blk = (size_t)t->rows / 2, full_blk = (size_t)t->full_rows / 2;
        r = (r / blk) * full_blk + k * blk + r % blk;
        break;
    }
    case ZB_SHARD_VOCAB: r += (size_t)pt->vocab_row0; break;
    case ZB_SHARD_NONE: break;
    }
    return r * (size_t)t->full_cols + c;
}

void zb_ptable_init(const zb_ptable *pt, float *params, uint64_t seed) {
    for (int j = 0; j < pt->n; j++) {
        const zb_ptensor *t = &pt->t[j];
        float *p = params + t->off; /* [rows, cols] */
        size_t n = (size_t)t->rows * t->cols;
        if (t->std <= 0) {
            for (size_t i = 0; i < n; i++) p[i] = t->value;
            continue;
        }
        uint64_t key = tensor_key(seed, t->layer, t->id);
        for (size_t i = 0; i < n; i++) {
            size_t fi = zb_ptable_full_index(pt, t, i);
            p[i] = fi == ZB_PTABLE_PAD ? 0.0f : (float)(t->std * normal(key, fi));
        }
    }
}

int zb_ptable_find(const zb_ptable *pt, int layer, int id, bool copy) {
    for (int j = 0; j < pt->n; j++)
        if (pt->t[j].layer == layer && pt->t[j].id == id && pt->t[j].copy == copy)
            return j;
    return -1;
}

int zb_vocab_rows_per_rank(int vocab, int tp) {
    return tp > 0 ? (vocab + tp - 1) / tp : vocab;
}

void zb_vocab_split(int vocab, int k, int n, int *row0, int *rows) {
    long long v = vocab;
    *row0 = (int)(k * v / n);
    *rows = (int)((k + 1) * v / n - *row0);
}
