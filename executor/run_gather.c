/* run_gather.c - one process per rank: every process measured only its
 * own rank; this gathers all ranks' measurements into every process's
 * result (run_ctx.h), so that rank 0 can print and write the report, trace
 * and timeline of the whole world.
 *
 * Each process writes its own rank's values into zeroed world-sized arrays
 * packed into one buffer, and a world all-reduce (a sum: every cell has one
 * non-zero writer, and x + 0 is x exactly) gives everyone all of them.
 * Packed, in order: step_span and step_busy [steps * world], static_bytes
 * and act_peak_bytes [world], then per rank r t_start[r] and t_end[r]
 * [trace_n * n_acts[r]].
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

#include "executor/run_ctx.h"
#include "executor/stage_params.h"

/* n doubles between cells and buf+at: into buf (out false) or back. */
static void move(double *buf, size_t at, double *cells, size_t n, bool out) {
    if (out) memcpy(cells, buf + at, n * sizeof *cells);
    else memcpy(buf + at, cells, n * sizeof *cells);
}

/* Walk the packed layout. out false: put this rank's cells into buf;
 * true: every rank's cells from buf. */
static void walk(zb_run_ctx *c, double *buf, int steps, bool out) {
    zb_run_result *res = c->res;
    size_t w = (size_t)c->world, me = (size_t)c->lead;
    size_t sc = (size_t)steps * w, at = 2 * sc;
    for (size_t k = 0; k < (size_t)steps && !out; k++) {
        buf[k * w + me] = c->step_span[k * w + me];
        buf[sc + k * w + me] = c->step_busy[k * w + me];
    }
    if (out) {
        move(buf, 0, c->step_span, sc, true);
        move(buf, sc, c->step_busy, sc, true);
        move(buf, at, res->static_bytes, w, true);
        move(buf, at + w, res->act_peak_bytes, w, true);
    } else {
        buf[at + me] = res->static_bytes[me];
        buf[at + w + me] = res->act_peak_bytes[me];
    }
    at += 2 * w;
    for (size_t r = 0; r < w; r++) {
        size_t n = (size_t)res->trace_n * (size_t)res->n_acts[r];
        if (out || r == me) {
            move(buf, at, res->t_start[r], n, out);
            move(buf, at + n, res->t_end[r], n, out);
        }
        at += 2 * n;
    }
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
    int steps = res->n_steps, w = c->world;
    size_t n = 2 * (size_t)steps * (size_t)w + 2 * (size_t)w;
    for (int r = 0; r < w; r++)
        n += 2 * (size_t)res->trace_n * (size_t)res->n_acts[r];
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
