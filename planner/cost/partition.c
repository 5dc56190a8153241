/* partition.c - see cost/partition.h.
 *
 * zb_partition is exact: a min-max dynamic program over contiguous splits,
 * run twice. Pass 1 finds T*, the smallest possible largest stage time,
 * over the stages that fit the memory limit. Pass 2 minimises the largest
 * stage memory over the stages that also take no longer than T*. A split
 * with all stages <= T* has largest time exactly T*, so pass 2 returns an
 * optimum of (largest time, then largest memory). A single lexicographic
 * DP would not be exact: the max of pairs does not respect their order.
 *
 * Stage memory here is a feasibility filter only: static memory of the
 * stage's parameters (weights, gradients, AdamW state, no ZeRO-1 sharding,
 * i.e. dp = 1, an upper bound) plus one microbatch's M_B. How many
 * microbatches a schedule keeps in flight is the caller's business.
 */
#include "planner/cost/partition.h"

#include <math.h>
#include <stdlib.h>

typedef struct {
    int n, layers;
    double mem_limit;  /* <= 0: none */
    /* Stage time and memory by kind (bit 0: holds the embedding, bit 1:
     * the head) and layer count, [4][layers + 1]: all layers cost the
     * same, so the DP's inner loop only looks these up. */
    double *time, *mem;
} part_ctx;

static double pass_sum(const zb_pass_cost *c) { return c->f_s + c->b_s + c->w_s; }

/* F+B+W time of a vstage holding nl layers (and the embedding/head). */
static double stage_time(const zb_cost_table *ct, int nl, bool embed, bool head) {
    double t = nl * pass_sum(&ct->layer);
    if (embed) t += pass_sum(&ct->embed);
    if (head) t += pass_sum(&ct->head);
    return t;
}

/* Parameters held by one vstage. With tied embeddings, a stage holding both
 * the embedding and the head keeps one (V/tp) x h table shard, not two. */
static double stage_params(const zb_model *m, const zb_cost_table *ct, int nl,
                           bool embed, bool head) {
    double p = nl * ct->layer.params;
    if (embed) p += ct->embed.params;
    if (head) p += ct->head.params;
    if (embed && head && m->arch.tied_embeddings) p -= ct->vocab_params;
    return p;
}

static double stage_mem(const zb_model *m, const zb_cost_table *ct, int nl,
                        bool embed, bool head) {
    double mb = nl * ct->layer.m_b_bytes + ct->chunk_act_bytes;
    if (embed) mb += ct->embed.m_b_bytes;
    if (head) mb += ct->head.m_b_bytes;
    return zb_static_mem_bytes(m, stage_params(m, ct, nl, embed, head), 1) + mb;
}

/* Cost of vstage k-1's part when it holds nl layers: time or memory,
 * INFINITY when it breaks the memory limit or (by_mem) the time bound.
 * Nondecreasing in nl: every layer costs the same and nothing is negative. */
static double part_cost(const part_ctx *c, const double *time, const double *mem,
                        bool by_mem, double t_bound, int nl) {
    if (c->mem_limit > 0 && mem[nl] > c->mem_limit) return INFINITY;
    if (by_mem && time[nl] > t_bound) return INFINITY;
    return by_mem ? mem[nl] : time[nl];
}

/* val[k][j] = min over i in [lo, hi] of max(g(i), cost(j - i)) with
 * g = val[k-1] nondecreasing in i (more layers before: never better) and
 * cost(j - i) nonincreasing in i: a valley, so binary searches find the
 * smallest i with the least value (the tie-break of a plain scan). */
static void best_split(const part_ctx *c, const double *g, const double *time,
                       const double *mem, bool by_mem, double t_bound, int lo,
                       int hi, int j, double *val, int *from) {
    int a = lo, b = hi + 1;   /* first i with g(i) >= cost(j - i), or hi + 1 */
    while (a < b) {
        int mid = a + (b - a) / 2;
        if (g[mid] >= part_cost(c, time, mem, by_mem, t_bound, j - mid)) b = mid;
        else a = mid + 1;
    }
    double best = a <= hi ? g[a] : INFINITY;
    if (a > lo) {   /* left of the crossing the value is cost(j - i) */
        double left = part_cost(c, time, mem, by_mem, t_bound, j - (a - 1));
        if (left <= best) {
            best = left;   /* the smallest i with cost(j - i) <= left */
            int x = lo, y = a - 1;
            while (x < y) {
                int mid = x + (y - x) / 2;
                if (part_cost(c, time, mem, by_mem, t_bound, j - mid) <= left) y = mid;
                else x = mid + 1;
            }
            a = x;
        }
    }
    if (best < *val) {
        *val = best;
        *from = a;
    }
}

/* Min over splits of the max over stages of the stage time (by_mem false)
 * or memory (by_mem true), counting only stages that fit the memory limit
 * and, when by_mem, take at most t_bound. val/from: [(n+1) x (layers+1)].
 * val[k][j]: best over splits of layers [0, j) into vstages 0..k-1;
 * from[k][j]: where vstage k-1 starts in it. Returns val[n][layers].
 * O(n L log L): best_split replaces the scan over i. */
static double minmax(const part_ctx *c, bool by_mem, double t_bound,
                     double *val, int *from) {
    int L = c->layers, n = c->n, W = L + 1;
    for (int i = 0; i < (n + 1) * W; i++) val[i] = INFINITY;
    val[0] = -INFINITY;
    for (int k = 1; k <= n; k++) {
        int kind = (k == 1) | (k == n) << 1;
        const double *time = c->time + kind * W, *mem = c->mem + kind * W;
        int jlo = k == n ? L : k, jhi = L - (n - k);
        for (int j = jlo; j <= jhi; j++)
            best_split(c, val + (k - 1) * W, time, mem, by_mem, t_bound, k - 1,
                       j - 1, j, &val[k * W + j], &from[k * W + j]);
    }
    return val[n * W + L];
}

static void fill_tables(const zb_model *m, const zb_cost_table *ct,
                        part_ctx *c) {
    int W = c->layers + 1;
    for (int kind = 0; kind < 4; kind++)
        for (int nl = 0; nl < W; nl++) {
            bool embed = kind & 1, head = kind & 2;
            c->time[kind * W + nl] = stage_time(ct, nl, embed, head);
            c->mem[kind * W + nl] = stage_mem(m, ct, nl, embed, head);
        }
}

zb_status zb_partition(const zb_model *m, const zb_cost_table *ct, int n,
                       double mem_limit_bytes, zb_stage_span *spans,
                       zb_err *err) {
    int L = m->arch.layers;
    if (n < 1 || n > L)
        return zb_fail(err, ZB_EINFEASIBLE, "cannot split %d layers into %d "
                       "virtual stages of at least one layer", L, n);
    if ((long long)(n + 1) * (L + 1) > ZB_PARTITION_MAX_CELLS)
        return zb_fail(err, ZB_EINPUT, "splitting %d layers into %d virtual "
                       "stages is over the partitioner's limit ((stages + 1) x "
                       "(layers + 1) <= %d, docs/zbplan.md)", L, n,
                       ZB_PARTITION_MAX_CELLS);
    part_ctx c = {.n = n, .layers = L, .mem_limit = mem_limit_bytes};
    size_t cells = (size_t)(n + 1) * (size_t)(L + 1), W = (size_t)L + 1;
    double *val = zb_calloc(cells + 8 * W, sizeof *val, err);
    int *from = val ? zb_calloc(cells, sizeof *from, err) : NULL;
    if (!from) {
        free(val);
        return ZB_ENOMEM;
    }
    c.time = val + cells;
    c.mem = c.time + 4 * W;
    fill_tables(m, ct, &c);
    zb_status st = ZB_OK;
    double t_best = minmax(&c, false, 0, val, from);
    if (t_best == INFINITY) {
        st = zb_fail(err, ZB_EINFEASIBLE, "no split of %d layers into %d "
                     "virtual stages fits %.3f GiB per stage", L, n,
                     mem_limit_bytes / (1024.0 * 1024.0 * 1024.0));
    } else {
        minmax(&c, true, t_best, val, from);
        for (int k = n, j = L; k >= 1; k--) {
            int i = from[k * (L + 1) + j];
            spans[k - 1] = (zb_stage_span){.first_layer = i, .n_layers = j - i,
                                           .embed = k == 1, .head = k == n};
            j = i;
        }
    }
    free(from);
    free(val);
    return st;
}

void zb_partition_even(int layers, int n, zb_stage_span *spans) {
    if (n < 1) return;
    int base = layers / n, extra = layers % n;
    /* The extra layers go to a centred run of middle stages, sparing the
     * first (embedding) and last (head) stages while it can; when all but
     * one stage get one, the last (head) stage is the one spared. */
    int lo = extra <= n - 2 ? 1 + (n - 2 - extra) / 2 : 0;
    for (int s = 0, first = 0; s < n; s++) {
        int nl = base + (s >= lo && s < lo + extra);
        spans[s] = (zb_stage_span){.first_layer = first, .n_layers = nl,
                                   .embed = s == 0, .head = s == n - 1};
        first += nl;
    }
}

/* Pipeline rank holding virtual stage s under placement pl. */
static int vstage_rank(zb_placement pl, int pp, int v, int s) {
    for (int r = 0; r < pp; r++)
        for (int ch = 0; ch < v; ch++)
            if (zb_placement_vstage(pl, pp, r, ch) == s) return r;
    return -1;
}

void zb_stage_costs(const zb_cost_table *ct, const zb_stage_span *spans,
                    int pp, int v, zb_placement pl, int dp, int tp,
                    int devices_per_node, zb_costs *c) {
    int n = pp * v, dpn = devices_per_node > 0 ? devices_per_node : 1;
    for (int s = 0; s < n; s++) {
        const zb_stage_span *sp = &spans[s];
        const zb_pass_cost *parts[3] = {&ct->layer, &ct->embed, &ct->head};
        double mult[3] = {sp->n_layers, sp->embed, sp->head};
        c->t_f[s] = c->t_b[s] = c->t_w[s] = 0;
        c->m_b[s] = c->m_w[s] = ct->chunk_act_bytes;
        for (int i = 0; i < 3; i++) {
            c->t_f[s] += mult[i] * parts[i]->f_s;
            c->t_b[s] += mult[i] * parts[i]->b_s;
            c->t_w[s] += mult[i] * parts[i]->w_s;
            c->m_b[s] += mult[i] * parts[i]->m_b_bytes;
            c->m_w[s] += mult[i] * parts[i]->m_w_bytes;
        }
        c->t_comm[s] = 0;
        if (s == n - 1) continue;
        int ra = vstage_rank(pl, pp, v, s), rb = vstage_rank(pl, pp, v, s + 1);
        if (ra == rb) continue;  /* no transfer (zb_lower_cross) */
        long na = (long)ra * dp * tp / dpn, nb = (long)rb * dp * tp / dpn;
        c->t_comm[s] = na == nb ? ct->p2p_intra_s : ct->p2p_inter_s;
    }
}
