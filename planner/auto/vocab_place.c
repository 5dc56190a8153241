/* vocab_place.c - see auto/vocab_place.h.
 *
 * The placement generalises the simple one (common/zb_schedule_vocab.h)
 * from unit costs to the schedule's own: simulate it with prm->costs (unit
 * costs without them); S(mb) goes on every rank before the first action
 * that starts at or after X(mb), the end of F(mb) on the last virtual
 * stage; T(mb) before the first that starts at or after tau(mb), where
 *   variant 1: tau = min(start of B(mb) on the last stage, X(mb+1)): C2
 *              must come before that B, and T(mb) before S(mb+1);
 *   variant 2: tau = X(mb+1): T moves like W, a whole forward later, so
 *              the wait for C1 is spent on other passes.
 * Each dependency then still runs forward in that simulated time (keys
 * X(mb) <= tau(mb) <= X(mb+1) in the S0 T0 S1 T1 ... order), so the result
 * cannot deadlock, and every rank has the same S/T order.
 * 1F1B is first rebuilt as the paper does (Yeung et al. 2024, section 5):
 * every rank warms up with 3 - variant more forwards (p - r + 1 for
 * variant 1, p - r for variant 2), so the last stage has forwards to run
 * while the barriers of a microbatch complete; activation memory becomes
 * p + 2 and p + 1 microbatches, the paper's numbers.
 */
#include "planner/auto/vocab_place.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/zb_schedule_vocab.h"
#include "common/zb_sim.h"

/* 1F1B with `extra` more warm-up forwards on every rank (v = 1, fused
 * backward), into s (initialised here). */
static zb_status shifted_1f1b(int p, int m, int extra, zb_schedule *s,
                              zb_err *err) {
    ZB_TRY(zb_schedule_init(s, "1f1b", p, m, 1, ZB_PLACE_LOOP, 2 * m + 2, err));
    for (int r = 0; r < p; r++) {
        int warm = p - r - 1 + extra < m ? p - r - 1 + extra : m;
        for (int j = 0; j < warm; j++) ZB_TRY(zb_schedule_push(s, r, ZB_F, j, 0, err));
        for (int i = 0; i < m; i++) {
            if (warm + i < m) ZB_TRY(zb_schedule_push(s, r, ZB_F, warm + i, 0, err));
            ZB_TRY(zb_schedule_push(s, r, ZB_BW, i, 0, err));
        }
    }
    return ZB_OK;
}

/* X(mb) and the start of B/BW(mb) on the last virtual stage in res, into
 * x[m] and b[m]; false when the last stage's F or B do not run in mb
 * order (then the simple placement is used). */
static bool last_stage_times(const zb_schedule *s, const zb_sim_result *res,
                             double *x, double *b) {
    int L, cl, nf = 0, nb = 0;
    zb_vstage_owner(s, s->p * s->v - 1, &L, &cl);
    for (int i = 0; i < s->len[L]; i++) {
        const zb_action *a = &s->acts[L][i];
        if (a->chunk != cl) continue;
        double t0 = res->start[res->off[L] + i], t1 = res->end[res->off[L] + i];
        if (a->pass == ZB_F && a->mb == nf) x[nf++] = t1;
        else if ((a->pass == ZB_B || a->pass == ZB_BW) && a->mb == nb) b[nb++] = t0;
        else if (a->pass != ZB_W) return false;
    }
    return nf == s->m && nb == s->m;
}

/* The keys (see above): S(mb) at x[mb], T(mb) at tau[mb]. */
static void t_keys(int m, int variant, const double *x, const double *b,
                   double *tau) {
    for (int j = 0; j < m; j++) {
        double next = j + 1 < m ? x[j + 1] : INFINITY;
        tau[j] = variant == 1 ? (b[j] < next ? b[j] : next) : next;
        if (tau[j] < x[j]) tau[j] = x[j];
    }
}

static zb_status push_copy(zb_schedule *d, int r, const zb_action *a,
                           zb_err *err) {
    ZB_TRY(zb_schedule_push(d, r, (zb_pass)a->pass, a->mb, a->chunk, err));
    d->acts[r][d->len[r] - 1].flags = a->flags;
    return ZB_OK;
}

/* s with S0 T0 S1 T1 ... inserted on every rank before the first action
 * starting at or after each one's key, into d (initialised here). */
static zb_status insert_keyed(const zb_schedule *s, const zb_sim_result *res,
                              const double *x, const double *tau,
                              zb_schedule *d, zb_err *err) {
    int maxlen = 1, m = s->m;
    for (int r = 0; r < s->p; r++)
        if (s->len[r] > maxlen) maxlen = s->len[r];
    ZB_TRY(zb_schedule_init(d, s->name, s->p, m, s->v, s->placement,
                            maxlen + 2 * m, err));
    for (int r = 0; r < s->p; r++) {
        int k = 0; /* next item: S(k/2) or T(k/2) */
        for (int i = 0; i <= s->len[r]; i++) {
            bool end = i == s->len[r];
            double t0 = end ? INFINITY : res->start[res->off[r] + i];
            for (; k < 2 * m; k++) {
                double key = k % 2 ? tau[k / 2] : x[k / 2];
                if (!end && key > t0) break;
                ZB_TRY(zb_schedule_push(d, r, k % 2 ? ZB_T : ZB_S, k / 2, 0, err));
            }
            if (!end) ZB_TRY(push_copy(d, r, &s->acts[r][i], err));
        }
    }
    d->vocab = 0;
    return ZB_OK;
}

static bool has_overlap(const zb_schedule *s) {
    for (int r = 0; r < s->p; r++)
        for (int i = 0; i < s->len[r]; i++)
            if (s->acts[r][i].flags) return true;
    return false;
}

/* The keyed placement of s under prm's costs into d, or *done = false
 * when it does not apply (then d is untouched). */
static zb_status keyed(const zb_schedule *s, const zb_sched_params *prm,
                       zb_schedule *d, bool *done, zb_err *err) {
    zb_costs unit;
    zb_sim_result res;
    memset(&unit, 0, sizeof unit);
    memset(&res, 0, sizeof res);
    *done = false;
    const zb_costs *c = prm->costs;
    zb_status st = ZB_OK;
    if (!c || c->n != s->p * s->v) {
        st = zb_costs_uniform(&unit, s->p * s->v, 1, 1, 1, 0, 0, 0, err);
        c = &unit;
    }
    int m = s->m;
    double *x = zb_calloc((size_t)3 * m, sizeof *x, err);
    if (!x) st = ZB_ENOMEM;
    if (st == ZB_OK) st = zb_simulate(s, c, &res, err);
    if (st == ZB_OK && !has_overlap(s) && last_stage_times(s, &res, x, x + m)) {
        t_keys(m, prm->vocab, x, x + m, x + 2 * m);
        st = insert_keyed(s, &res, x, x + 2 * m, d, err);
        *done = st == ZB_OK;
    }
    free(x);
    zb_sim_result_free(&res);
    zb_costs_free(&unit);
    return st;
}

zb_status zb_vocab_place(const char *name, const zb_sched_params *prm,
                         zb_schedule *s, zb_err *err) {
    if (prm->vocab != 1 && prm->vocab != 2)
        return zb_fail(err, ZB_EINPUT, "vocabulary parallelism %d: expected "
                       "1 or 2", prm->vocab);
    if (s->p < 2)
        return zb_fail(err, ZB_EINPUT, "vocabulary parallelism needs at least "
                       "2 pipeline ranks, the schedule has %d", s->p);
    zb_schedule base, d;
    memset(&base, 0, sizeof base);
    memset(&d, 0, sizeof d);
    zb_status st = ZB_OK;
    bool shifted = strcmp(name, "1f1b") == 0 && s->v == 1;
    if (shifted) st = shifted_1f1b(s->p, s->m, 3 - prm->vocab, &base, err);
    bool done = false;
    if (st == ZB_OK) st = keyed(shifted ? &base : s, prm, &d, &done, err);
    zb_schedule_free(&base);
    if (st != ZB_OK) {
        zb_schedule_free(&d);
        return st;
    }
    if (!done) return zb_schedule_place_vocab(s, prm->vocab, err);
    d.vocab = prm->vocab;
    snprintf(d.name, sizeof d.name, "%s", s->name);
    zb_schedule_free(s);
    *s = d;
    return ZB_OK;
}
