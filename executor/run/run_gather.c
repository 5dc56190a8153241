/* run_gather.c - one process per rank: every process measured only its
 * own rank; this gathers all ranks' measurements into every process's
 * result (run_ctx.h), so that rank 0 can print and write the report, trace
 * and timeline of the whole world.
 *
 * Each process writes its own rank's values into zeroed world-sized arrays
 * packed into one buffer, and a world all-reduce (a sum: every cell has one
 * non-zero writer, and x + 0 is x exactly) gives everyone all of them.
 * Packed, in order: step_span, step_busy, step_recv, step_stall,
 * step_bnd[0..3] [steps * world]; static_bytes, act_peak_bytes, send_s, dp_ar_s, emb_ar_s, post_s
 * [world]; then per rank r the timeline of the kept steps: t_start[r] and
 * t_end[r] [trace_n * n_acts[r]], x_start[r] and x_end[r] [trace_n *
 * n_ops[r]], tail_start[r] and tail_end[r] [trace_n].
 *
 * With opts->keep_params (--export), rank 0 then receives every other
 * rank's parameter buffer, one rank after another, each through a world
 * all-reduce of doubles: host memory on every transport (NCCL's sends
 * take device memory only), collective (point-to-point messages would
 * fill a bounded inbox such as the local transport's), exact (only that
 * rank's values are non-zero, and float -> double -> float is exact).
 */
#include <stdlib.h>
#include <string.h>

#include "executor/run/run_ctx.h"
#include "executor/stage/stage_params.h"

/* Walk the packed layout; returns its length in doubles. buf NULL: only
 * the length; out false: put this rank's cells into buf; true: every
 * rank's cells from buf (a cell of rank r is at the same place in both). */
static size_t walk(zb_run_ctx *c, double *buf, int steps, bool out) {
    zb_run_result *res = c->res;
    size_t w = (size_t)c->world, me = (size_t)c->lead, at = 0;
    double *per_step[] = {c->step_span, c->step_busy, c->step_recv, c->step_stall,
                          c->step_bnd[0], c->step_bnd[1], c->step_bnd[2],
                          c->step_bnd[3]};
    double *per_rank[] = {res->static_bytes, res->act_peak_bytes, res->send_s,
                          res->dp_ar_s, res->emb_ar_s, res->post_s};
    for (size_t i = 0; i < sizeof per_step / sizeof *per_step; i++, at += (size_t)steps * w)
        for (size_t k = 0; buf && k < (size_t)steps; k++) {
            double *cell = &per_step[i][k * w], *b = buf + at + k * w;
            if (out) memcpy(cell, b, w * sizeof *b);
            else b[me] = cell[me];
        }
    for (size_t i = 0; i < sizeof per_rank / sizeof *per_rank; i++, at += w)
        if (buf && out) memcpy(per_rank[i], buf + at, w * sizeof *buf);
        else if (buf) buf[at + me] = per_rank[i][me];
    for (size_t r = 0; r < w; r++) {
        size_t tn = (size_t)res->trace_n;
        size_t len[] = {tn * (size_t)res->n_acts[r], tn * (size_t)res->n_acts[r],
                        tn * (size_t)res->n_ops[r], tn * (size_t)res->n_ops[r], tn, tn};
        double *arr[] = {res->t_start[r], res->t_end[r], res->x_start[r],
                         res->x_end[r], res->tail_start[r], res->tail_end[r]};
        for (size_t i = 0; i < 6; at += len[i], i++) {
            if (!buf || !(out || r == me)) continue;
            if (out) memcpy(arr[i], buf + at, len[i] * sizeof *buf);
            else memcpy(buf + at, arr[i], len[i] * sizeof *buf);
        }
    }
    return at;
}

/* Floats in rank r's parameter buffer (its stage's parameter table). */
static zb_status params_of(const zb_plan *p, int r, size_t *n, zb_err *err) {
    int pr, dr, tr;
    zb_ptable pt;
    zb_plan_coords(p, r, &pr, &dr, &tr);
    ZB_TRY(zb_ptable_build(&pt, p, pr, tr, err));
    *n = pt.floats;
    zb_ptable_free(&pt);
    return ZB_OK;
}

/* Rank r's n parameters onto rank 0 by a world all-reduce of doubles. */
static zb_status gather_one_f64(zb_run_ctx *c, int r, size_t n, zb_err *err) {
    zb_run_result *res = c->res;
    zb_rank *rk = &c->ranks[c->lead];
    double *d = zb_calloc(n ? n : 1, sizeof *d, err);
    if (!d) return ZB_ENOMEM;
    if (c->lead == r)
        for (size_t i = 0; i < n; i++) d[i] = res->params[r][i];
    zb_status s = rk->tr->allreduce_f64(rk->tr, &rk->world_g, d, n, err);
    if (s == ZB_OK && c->lead == 0) {
        res->params[r] = zb_calloc(n ? n : 1, sizeof(float), err);
        if (res->params[r]) {
            for (size_t i = 0; i < n; i++) res->params[r][i] = (float)d[i];
            res->n_params[r] = n;
        } else {
            s = ZB_ENOMEM;
        }
    }
    free(d);
    return s;
}

static zb_status gather_params(zb_run_ctx *c, zb_err *err) {
    for (int r = 1; r < c->world; r++) {
        size_t n;
        ZB_TRY(params_of(c->plan, r, &n, err));
        if (c->lead == r && c->res->n_params[r] != n)
            return zb_fail(err, ZB_ERUNTIME, "rank %d: %zu parameters, its "
                           "table says %zu", r, c->res->n_params[r], n);
        ZB_TRY(gather_one_f64(c, r, n, err));
    }
    return ZB_OK;
}

zb_status zb_run_gather(zb_run_ctx *c, zb_err *err) {
    zb_run_result *res = c->res;
    zb_rank *rk = &c->ranks[c->lead];
    int steps = res->n_steps;
    size_t n = walk(c, NULL, steps, false);
    double *buf = zb_calloc(n, sizeof *buf, err);
    if (!buf) return ZB_ENOMEM;
    walk(c, buf, steps, false);
    zb_status s = rk->tr->allreduce_f64(rk->tr, &rk->world_g, buf, n, err);
    if (s == ZB_OK) walk(c, buf, steps, true);
    free(buf);
    if (s == ZB_OK && c->opts->keep_params)
        s = gather_params(c, err);
    return s;
}
