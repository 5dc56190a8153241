/* run_gather.c - one process per rank: every process measured only its
 * own rank; this gathers all ranks' measurements into every process's
 * result (run_ctx.h), so that rank 0 can print and write the report, trace
 * and timeline of the whole world.
 *
 * Each process writes its own rank's values into zeroed world-sized arrays
 * packed into one buffer, and a world all-reduce (a sum: every cell has one
 * non-zero writer, and x + 0 is x exactly) gives everyone all of them.
 * Packed, in order (walk): the per-step per-rank times (span, busy, recv
 * wait, stall: [steps][world] each), the per-rank numbers (memory, send
 * and all-reduce times: [world] each), then per rank r its timelines:
 * passes [trace_n * n_acts[r]], transfers [trace_n * n_ops[r]] and step
 * tails [trace_n], starts and ends.
 *
 * With opts->keep_params (--export), rank 0 then gets every other rank's
 * parameter buffer, one rank after another, by the same all-reduce trick
 * in bounded chunks.
 */
#include <stdlib.h>
#include <string.h>

#include "executor/run_ctx.h"
#include "executor/stage_params.h"

/* One array in the packed buffer at *at: `total` doubles, of which this
 * rank owns [mine, mine + n). out false: put its own cells into buf; true:
 * take every rank's cells from buf; buf NULL: only count. */
static void cells(double *buf, size_t *at, double *a, size_t total,
                  size_t mine, size_t n, bool out) {
    if (buf && out) memcpy(a, buf + *at, total * sizeof *a);
    else if (buf && n) memcpy(buf + *at + mine, a + mine, n * sizeof *a);
    *at += total;
}

/* Walk the packed layout (see the top); returns the doubles it spans. */
static size_t walk(zb_run_ctx *c, double *buf, int steps, bool out) {
    zb_run_result *res = c->res;
    size_t w = (size_t)c->world, me = (size_t)c->lead, at = 0;
    double *per_step[] = {c->step_span, c->step_busy, c->step_recv, c->step_stall};
    double *per_rank[] = {res->static_bytes, res->act_peak_bytes, res->send_s,
                          res->dp_ar_s, res->emb_ar_s, res->post_s};
    for (size_t i = 0; i < sizeof per_step / sizeof *per_step; i++)
        for (size_t k = 0; k < (size_t)steps; k++)   /* [steps][world] */
            cells(buf, &at, per_step[i] + k * w, w, me, 1, out);
    for (size_t i = 0; i < sizeof per_rank / sizeof *per_rank; i++)
        cells(buf, &at, per_rank[i], w, me, 1, out);
    for (size_t r = 0; r < w; r++) {
        size_t na = (size_t)res->trace_n * (size_t)res->n_acts[r];
        size_t no = (size_t)res->trace_n * (size_t)res->n_ops[r];
        size_t nt = (size_t)res->trace_n;
        bool mine = r == me;   /* other ranks' rows: only read back */
        cells(buf, &at, res->t_start[r], na, 0, mine ? na : 0, out);
        cells(buf, &at, res->t_end[r], na, 0, mine ? na : 0, out);
        cells(buf, &at, res->x_start[r], no, 0, mine ? no : 0, out);
        cells(buf, &at, res->x_end[r], no, 0, mine ? no : 0, out);
        cells(buf, &at, res->tail_start[r], nt, 0, mine ? nt : 0, out);
        cells(buf, &at, res->tail_end[r], nt, 0, mine ? nt : 0, out);
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

/* Rank r's parameters onto rank 0, ZB_GATHER_CHUNK at a time: a world
 * all-reduce of doubles where only rank r writes (x + 0 is x exactly, and
 * every float is exact as a double). Collectives need no message pool, so
 * this works on every transport whatever the parameter count. */
#define ZB_GATHER_CHUNK ((size_t)1 << 20)

static zb_status gather_params(zb_run_ctx *c, zb_err *err) {
    zb_run_result *res = c->res;
    zb_rank *rk = &c->ranks[c->lead];
    double *buf = zb_calloc(ZB_GATHER_CHUNK, sizeof *buf, err);
    if (!buf) return ZB_ENOMEM;
    zb_status s = ZB_OK;
    for (int r = 1; r < c->world && s == ZB_OK; r++) {
        size_t n;
        s = params_of(c->plan, r, &n, err);
        if (s == ZB_OK && c->lead == r && res->n_params[r] != n)
            s = zb_fail(err, ZB_ERUNTIME, "rank %d: %zu parameters, its "
                        "table says %zu", r, res->n_params[r], n);
        if (s == ZB_OK && c->lead == 0) {
            res->params[r] = zb_calloc(n ? n : 1, sizeof(float), err);
            res->n_params[r] = n;
            if (!res->params[r]) s = ZB_ENOMEM;
        }
        for (size_t at = 0; s == ZB_OK && at < n; at += ZB_GATHER_CHUNK) {
            size_t k = n - at < ZB_GATHER_CHUNK ? n - at : ZB_GATHER_CHUNK;
            for (size_t i = 0; i < k; i++)
                buf[i] = c->lead == r ? (double)res->params[r][at + i] : 0.0;
            s = rk->tr->allreduce_f64(rk->tr, &rk->world_g, buf, k, err);
            for (size_t i = 0; s == ZB_OK && c->lead == 0 && i < k; i++)
                res->params[r][at + i] = (float)buf[i];
        }
    }
    free(buf);
    return s;
}

zb_status zb_run_gather(zb_run_ctx *c, zb_err *err) {
    zb_run_result *res = c->res;
    zb_rank *rk = &c->ranks[c->lead];
    int steps = res->n_steps;
    size_t n = walk(c, NULL, steps, true);   /* NULL: only count */
    double *buf = zb_calloc(n, sizeof *buf, err);
    if (!buf) return ZB_ENOMEM;
    walk(c, buf, steps, false);
    zb_status s = rk->tr->allreduce_f64(rk->tr, &rk->world_g, buf, n, err);
    if (s == ZB_OK) walk(c, buf, steps, true);
    free(buf);
    if (s == ZB_OK && c->opts->keep_params) s = gather_params(c, err);
    return s;
}
