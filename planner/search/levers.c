/* levers.c - the memory levers as search dimensions (search/levers.h,
 * zb_search_levers): recompute none/selective/full, sequence parallelism
 * and ZeRO-1. Each combination is a zb_search of the model with those
 * settings; the results merge into one top-k by step time, then memory,
 * then combination order. A later combination is pruned against the k-th
 * best so far (zb_search_opts.bound), so the likely winners go first:
 * selective recomputation (little time, much memory saved; Korthikanti et
 * al. 2022) before none (fastest when it fits) before full, each with
 * SP and ZeRO-1 on (they save memory for little or no time) before off.
 * SP is tried only when tp can be above 1 (and its candidates at tp 1
 * are dropped: nothing to split), ZeRO-1 only when dp can.
 * (1T parameters on 16384 GPUs: 0.7 s of CPU, tests/bench/bench_search.c;
 * none first took 1.5 s, most of it simulating layouts that do not fit.)
 */
#include "planner/search/levers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const zb_recompute rcs[] = {ZB_RECOMPUTE_SELECTIVE, ZB_RECOMPUTE_NONE,
                                   ZB_RECOMPUTE_FULL};

static bool better(const zb_candidate *a, const zb_candidate *b) {
    if (a->step_s != b->step_s) return a->step_s < b->step_s;
    if (a->peak_mem_bytes != b->peak_mem_bytes)
        return a->peak_mem_bytes < b->peak_mem_bytes;
    return a->key < b->key;
}

static void cand_free(zb_candidate *c) {
    zb_schedule_free(&c->sched);
    free(c->spans);
}

/* How many levers a candidate pulls: recompute none 0, selective 1, full
 * 2, and one each for SP and ZeRO-1. */
static int lever_count(const zb_candidate *c) {
    return (c->recompute == ZB_RECOMPUTE_SELECTIVE ? 1
            : c->recompute == ZB_RECOMPUTE_FULL    ? 2
                                                   : 0) +
           c->sp + c->zero1;
}

/* The same row of the table but for the levers: same layout and schedule,
 * and a step time and peak memory equal to 1e-9. A lever that changes
 * nothing there (selective recompute under fused attention, which keeps
 * no attention scores to drop) gives such a twin. */
static bool same_row(const zb_candidate *a, const zb_candidate *b) {
    return a->dp == b->dp && a->tp == b->tp && a->pp == b->pp && a->v == b->v &&
           a->micro_batch == b->micro_batch && a->m == b->m &&
           strcmp(a->schedule, b->schedule) == 0 &&
           fabs(a->step_s - b->step_s) <= 1e-9 * b->step_s &&
           fabs(a->peak_mem_bytes - b->peak_mem_bytes) <= 1e-9 * b->peak_mem_bytes;
}

/* c's twin in res: c is dropped (false) unless it pulls fewer levers, in
 * which case the twin leaves res and c goes in its place. */
static bool replaces_twin(zb_search_result *res, const zb_candidate *c) {
    for (int j = 0; j < res->n; j++) {
        if (!same_row(&res->cand[j], c)) continue;
        if (lever_count(c) >= lever_count(&res->cand[j])) return false;
        cand_free(&res->cand[j]);
        memmove(&res->cand[j], &res->cand[j + 1],
                (size_t)(res->n - j - 1) * sizeof *c);
        res->n--;
        return true;
    }
    return true;
}

/* Move r's candidates into res (which keeps o->top_k, best first, one
 * row per layout, schedule and prediction); r's array is emptied. */
static zb_status merge(zb_search_result *res, zb_search_result *r, long key0,
                       int k, zb_err *err) {
    for (int i = 0; i < r->n; i++) {
        zb_candidate c = r->cand[i];
        c.key += key0;
        if (!replaces_twin(res, &c)) { cand_free(&c); continue; }
        if (res->n == k && !better(&c, &res->cand[k - 1])) { cand_free(&c); continue; }
        if (res->n == k) cand_free(&res->cand[--res->n]);
        if (res->n == res->cap) {
            int nc = res->cap ? 2 * res->cap : 16;
            zb_candidate *na = realloc(res->cand, (size_t)nc * sizeof *na);
            if (!na) {
                for (int j = i; j < r->n; j++) cand_free(&r->cand[j]);
                r->n = 0;
                return zb_fail(err, ZB_ENOMEM, "out of memory merging candidates");
            }
            res->cand = na;
            res->cap = nc;
        }
        int at = res->n;
        while (at > 0 && better(&c, &res->cand[at - 1])) at--;
        memmove(&res->cand[at + 1], &res->cand[at],
                (size_t)(res->n - at) * sizeof c);
        res->cand[at] = c;
        res->n++;
    }
    r->n = 0;
    return ZB_OK;
}

/* Sequence parallelism splits the sequence over the tensor-parallel
 * ranks: at tp 1 there is nothing to split, and such a candidate is the
 * same layout as the one without SP (same time and memory, and it would
 * win the tie as the earlier combination). Drop those from r. */
static void drop_sp_at_tp1(zb_search_result *r) {
    int n = 0;
    for (int i = 0; i < r->n; i++) {
        if (r->cand[i].tp == 1) cand_free(&r->cand[i]);
        else r->cand[n++] = r->cand[i];
    }
    r->n = n;
}

/* ZeRO-1 shards the optimizer state over the DP ranks: at dp 1 such a
 * candidate is the one without it (the same row with one lever more). */
static void drop_z1_at_dp1(zb_search_result *r) {
    int n = 0;
    for (int i = 0; i < r->n; i++) {
        if (r->cand[i].dp == 1) cand_free(&r->cand[i]);
        else r->cand[n++] = r->cand[i];
    }
    r->n = n;
}

static void add_counts(zb_search_result *res, const zb_search_result *r) {
    res->splits += r->splits;
    res->simulated += r->simulated;
    res->pruned += r->pruned;
    res->over_memory += r->over_memory;
    res->not_applicable += r->not_applicable;
    res->cores = r->cores;
    if (!res->why_not_applicable[0])
        memcpy(res->why_not_applicable, r->why_not_applicable,
               sizeof res->why_not_applicable);
    if (r->closest.mem_bytes > 0 && (res->closest.mem_bytes == 0 ||
                                     r->closest.mem_bytes < res->closest.mem_bytes))
        res->closest = r->closest;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

zb_status zb_search_levers(const zb_model *m, const zb_search_opts *o,
                           zb_search_result *res, zb_err *err) {
    if (!o->levers) return zb_search(m, o, res, err);
    memset(res, 0, sizeof *res);
    bool tp_free = o->tp != 1, dp_free = o->dp != 1;
    zb_status last = ZB_EINFEASIBLE;
    zb_err last_err = {{0}};
    long combo = 0;
    for (int i = 0; i < 3; i++)
        for (int sp = tp_free ? 1 : 0; sp >= 0; sp--)
            for (int z = dp_free ? 1 : 0; z >= 0; z--, combo++) {
                zb_model lm = *m;
                lm.train.recompute = rcs[i];
                lm.train.sequence_parallel = sp;
                lm.train.zero1 = z;
                zb_search_opts lo = *o;
                lo.levers = false;
                /* --solver ilp: the ILP once, on the merged top k below */
                if (o->solver == ZB_SOLVER_ILP) lo.solver = ZB_SOLVER_HEURISTIC;
                if (!o->exhaustive && res->n == o->top_k)
                    lo.bound = res->cand[o->top_k - 1].step_s;
                zb_search_result r;
                zb_err e;
                zb_status st = zb_search(&lm, &lo, &r, &e);
                add_counts(res, &r);
                res->elapsed_s += r.elapsed_s;
                if (st == ZB_OK && sp) drop_sp_at_tp1(&r);
                if (st == ZB_OK && z) drop_z1_at_dp1(&r);
                if (st == ZB_OK && sp && r.n == 0)
                    st = zb_fail(&e, ZB_EINFEASIBLE, "sequence parallelism "
                                 "needs tp > 1, and no such layout is left");
                if (st == ZB_OK) st = merge(res, &r, combo << 40, o->top_k, &e);
                zb_search_result_free(&r);
                /* nothing fits (or beats the bound) with these levers; SP can
                 * also not divide seq_len by a forced tp */
                if (st == ZB_EINFEASIBLE || (st == ZB_EINPUT && sp)) {
                    if (st == ZB_EINFEASIBLE) { last = st; last_err = e; }
                    continue;
                }
                if (st != ZB_OK) {
                    *err = e;
                    return st;
                }
            }
    if (res->n == 0) {
        *err = last_err;
        return last;
    }
    if (o->solver != ZB_SOLVER_ILP) return ZB_OK;
    double t = now_s();
    zb_status st = zb_search_refine_ilp(
        m, res, o->top_k, ZB_SEARCH_ILP_SHARE * o->time_limit_s - res->elapsed_s,
        o->mip_gap, err);
    res->elapsed_s += now_s() - t;
    return st;
}
