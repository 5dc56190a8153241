/* vblock_search.c - zb_vblock_eval and zb_vblock_best
 * (schedules/vblock_search.h): the best order over a list of building
 * blocks, the blocks shared out to threads.
 *
 * Each block gives up to four orders, in this sequence: reordered
 * (zb_vreorder, when the reorder level asks for it), squeezed, squeezed
 * B-first (zb_vsqueeze) and as laid out (zb_vblock_order). Every order is
 * timed by zb_simulate_fast with the real costs; the best is the one with
 * the shortest longest span, then the earlier last end, within the memory
 * limit, and among equals the first in sequence (block by block). The
 * blocks are shared out to threads (par.h); each keeps its own best with
 * its sequence number and the bests then merge by (span, end, sequence), so
 * the result is the one a single pass over the list in order would keep,
 * on any number of threads.
 */
#include "planner/schedules/vblock_search.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "planner/par.h"
#include "planner/schedules/vreorder.h"
#include "planner/schedules/vsqueeze.h"

typedef struct {
    const zb_vblock_list *L;
    int m;
    const zb_costs *c;
    double limit, tol;
    int reorder;
    struct worker *w;         /* [threads] */
} shared;

typedef struct worker {
    shared *sh;
    zb_sim_ws *ws;
    zb_schedule best;
    double span, end;
    long seq;                 /* of best: block * 4 + order */
    int found;
    zb_status st;             /* of its failed block fail_b */
    int fail_b;
    zb_err err;
} worker;

/* Time s (consumed) and keep it in w if better than w's best. */
static zb_status consider(worker *w, zb_schedule s, long seq) {
    double span, peak;
    zb_err e2;
    zb_status st = zb_simulate_fast(&s, w->sh->c, w->ws, &span, &peak, &e2);
    if (st == ZB_ENOMEM) {
        zb_schedule_free(&s);
        return zb_fail(&w->err, st, "%s", e2.msg);
    }
    double end = st == ZB_OK ? zb_sim_ws_last_end(w->ws) : 0;
    if (st == ZB_OK && peak <= w->sh->limit + w->sh->tol &&
        (!w->found || span < w->span || (span == w->span && end < w->end))) {
        if (w->found) zb_schedule_free(&w->best);
        w->best = s;
        w->span = span, w->end = end, w->seq = seq, w->found = 1;
        return ZB_OK;
    }
    zb_schedule_free(&s);
    return ZB_OK;
}

/* Block b's orders, in sequence. */
static zb_status try_block(worker *w, int b) {
    const shared *sh = w->sh;
    const zb_vblock_list *L = sh->L;
    const int (*t)[4] = (const int (*)[4])L->t + (size_t)b * L->p;
    long seq = 4L * b;
    zb_schedule s, q, qb;
    if (sh->reorder >= L->level[b]) {
        ZB_TRY(zb_vreorder(L->p, sh->m, t, "zb-auto-v", &q, &w->err));
        ZB_TRY(consider(w, q, seq));
    }
    ZB_TRY(zb_vblock_order(L->p, sh->m, t, "zb-auto-v", &s, &w->err));
    zb_err e2;
    zb_status st = zb_vsqueeze(&s, &q, &qb, &e2);
    if (st == ZB_ENOMEM) {
        st = zb_fail(&w->err, st, "%s", e2.msg);
    } else if (st == ZB_OK) {
        st = consider(w, q, seq + 1);
        if (st == ZB_OK) st = consider(w, qb, seq + 2);
        else zb_schedule_free(&qb);
    } else {
        st = ZB_OK; /* a block that deadlocks: nothing to squeeze */
    }
    if (st == ZB_OK) return consider(w, s, seq + 3);
    zb_schedule_free(&s);
    return st;
}

/* zb_par_fn: block b on worker `worker`. */
static zb_status work(void *arg, int b, int worker) {
    shared *sh = arg;
    struct worker *w = &sh->w[worker];
    zb_status st = try_block(w, b);
    if (st != ZB_OK) w->st = st, w->fail_b = b;
    return st;
}

/* Is a better than b: span, then end, then sequence. */
static int before(const worker *a, const worker *b) {
    if (a->span != b->span) return a->span < b->span;
    if (a->end != b->end) return a->end < b->end;
    return a->seq < b->seq;
}

zb_status zb_vblock_eval(const zb_vblock_list *L, int m, const zb_costs *c,
                         double mem_limit, int reorder, int threads,
                         zb_schedule *out, int *found, zb_err *err) {
    *found = 0;
    int nt = zb_par_threads(threads, L->n);
    worker w[ZB_PAR_MAX];
    shared sh = {L, m, c, mem_limit, 1e-9 * fmax(1, fabs(mem_limit)), reorder, w};
    memset(w, 0, sizeof w);
    zb_status st = ZB_OK;
    for (int i = 0; i < nt; i++) {
        w[i].sh = &sh;
        if (!(w[i].ws = zb_sim_ws_new()))
            st = zb_fail(err, ZB_ENOMEM, "zb-auto-v: out of memory");
    }
    if (st == ZB_OK) st = zb_par_for(L->n, nt, work, &sh);
    int win = -1, failed = -1;
    for (int i = 0; i < nt; i++) {
        if (w[i].st != ZB_OK && (failed < 0 || w[i].fail_b < w[failed].fail_b))
            failed = i;
        if (w[i].found && (win < 0 || before(&w[i], &w[win]))) win = i;
    }
    if (failed >= 0) st = zb_fail(err, w[failed].st, "%s", w[failed].err.msg);
    for (int i = 0; i < nt; i++) {
        if (w[i].found && (i != win || st != ZB_OK)) zb_schedule_free(&w[i].best);
        zb_sim_ws_free(w[i].ws);
    }
    if (st == ZB_OK && win >= 0) {
        *out = w[win].best;
        *found = 1;
    }
    return st;
}

zb_status zb_vblock_best(int p, int m, const zb_costs *c, double mem_limit,
                         long budget, int reorder, zb_schedule *out,
                         int *found, zb_err *err) {
    *found = 0;
    zb_vblock_list L;
    ZB_TRY(zb_vblock_list_make(p, m, budget, reorder, &L, err));
    zb_status st = zb_vblock_eval(&L, m, c, mem_limit, reorder, 0, out, found,
                                  err);
    zb_vblock_list_free(&L);
    return st;
}
