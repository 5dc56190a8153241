/* zb_schedule_vocab.c - see zb_schedule_vocab.h. */
#include "common/zb_schedule_vocab.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/zb_sim.h"

/* End of F(mb) of the last virtual stage in the unit-cost run, into
 * x_end[m]; ZB_EINPUT when they do not increase with mb. */
static zb_status last_f_ends(const zb_schedule *s, const zb_sim_result *res,
                             double *x_end, zb_err *err) {
    int L, cl, next = 0;
    zb_vstage_owner(s, s->p * s->v - 1, &L, &cl);
    for (int i = 0; i < s->len[L]; i++) {
        const zb_action *a = &s->acts[L][i];
        if (a->pass != ZB_F || a->chunk != cl) continue;
        if (a->mb != next)
            return zb_fail(err, ZB_EINPUT, "vocabulary passes: rank %d runs "
                           "the last virtual stage's F of mb %d where mb %d "
                           "was due (S and T follow it in microbatch order)",
                           L, (int)a->mb, next);
        x_end[next++] = res->end[res->off[L] + i];
    }
    return ZB_OK;
}

static zb_status push_copy(zb_schedule *d, int r, const zb_action *a,
                           zb_err *err) {
    ZB_TRY(zb_schedule_push(d, r, (zb_pass)a->pass, a->mb, a->chunk, err));
    d->acts[r][d->len[r] - 1].flags = a->flags;
    return ZB_OK;
}

/* s's lists with S(k), T(k) before the first action of each rank that
 * starts at or after x_end[k], into d (initialised here). */
static zb_status insert_all(const zb_schedule *s, const zb_sim_result *res,
                            const double *x_end, zb_schedule *d, zb_err *err) {
    int maxlen = 1;
    for (int r = 0; r < s->p; r++)
        if (s->len[r] > maxlen) maxlen = s->len[r];
    ZB_TRY(zb_schedule_init(d, s->name, s->p, s->m, s->v, s->placement,
                            maxlen + 2 * s->m, err));
    for (int r = 0; r < s->p; r++) {
        int k = 0;
        for (int i = 0; i <= s->len[r]; i++) {
            bool end = i == s->len[r];
            double t0 = end ? 0 : res->start[res->off[r] + i];
            for (; k < s->m && (end || t0 >= x_end[k]); k++) {
                ZB_TRY(zb_schedule_push(d, r, ZB_S, k, 0, err));
                ZB_TRY(zb_schedule_push(d, r, ZB_T, k, 0, err));
            }
            if (!end) ZB_TRY(push_copy(d, r, &s->acts[r][i], err));
        }
    }
    return ZB_OK;
}

static zb_status check_input(const zb_schedule *s, int variant, zb_err *err) {
    if (variant != 1 && variant != 2)
        return zb_fail(err, ZB_EINPUT, "vocabulary parallelism %d: expected 1 "
                       "or 2", variant);
    if (s->p < 2)
        return zb_fail(err, ZB_EINPUT, "vocabulary parallelism needs at least "
                       "2 pipeline ranks, the schedule has %d", s->p);
    for (int r = 0; r < s->p; r++)
        for (int i = 0; i < s->len[r]; i++)
            if (s->vocab || s->acts[r][i].pass == ZB_S || s->acts[r][i].pass == ZB_T)
                return zb_fail(err, ZB_EINPUT, "the schedule already holds "
                               "vocabulary passes");
    return ZB_OK;
}

zb_status zb_schedule_place_vocab(zb_schedule *s, int variant, zb_err *err) {
    ZB_TRY(check_input(s, variant, err));
    zb_costs c;
    zb_sim_result res;
    zb_schedule d = {0};
    memset(&res, 0, sizeof res);
    double *x_end = zb_calloc((size_t)s->m, sizeof *x_end, err);
    if (!x_end) return ZB_ENOMEM;
    zb_status st = zb_costs_uniform(&c, s->p * s->v, 1, 1, 1, 0, 0, 0, err);
    if (st == ZB_OK) st = zb_simulate(s, &c, &res, err);
    if (st == ZB_OK) st = last_f_ends(s, &res, x_end, err);
    if (st == ZB_OK) st = insert_all(s, &res, x_end, &d, err);
    if (st == ZB_OK) {
        d.vocab = variant;
        zb_schedule_free(s);
        *s = d;
    } else {
        zb_schedule_free(&d);
    }
    zb_sim_result_free(&res);
    zb_costs_free(&c);
    free(x_end);
    return st;
}
