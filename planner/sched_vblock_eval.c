/* sched_vblock_eval.c - zb_vblock_eval (sched_vblock.h): the best order
 * over a list of building blocks, the blocks shared out to threads.
 *
 * Each block gives up to four orders, in this sequence: reordered
 * (zb_vreorder, when the reorder level asks for it), squeezed, squeezed
 * B-first (zb_vsqueeze) and as laid out (zb_vblock_order). Every order is
 * timed by zb_simulate_fast with the real costs; the best is the one with
 * the shortest longest span, then the earlier last end, within the memory
 * limit, and among equals the first in sequence (block by block). Threads
 * take blocks in turn from a shared counter and keep their own best with its
 * sequence number; the bests then merge by (span, end, sequence), so the
 * result is the one a single pass over the list in order would keep, on
 * any number of threads.
 */
#include "planner/sched_vblock.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Most threads the blocks are shared out to. */
#define MAX_THREADS 8

typedef struct {
    const zb_vblock_list *L;
    int m;
    const zb_costs *c;
    double limit, tol;
    int reorder;
    atomic_int next;          /* next block to take */
    atomic_int failed;        /* a thread ran out of memory: all stop */
} shared;

typedef struct {
    shared *sh;
    zb_sim_ws *ws;
    zb_schedule best;
    double span, end;
    long seq;                 /* of best: block * 4 + order */
    int found;
    zb_status st;
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

static void *work(void *arg) {
    worker *w = arg;
    shared *sh = w->sh;
    for (;;) {
        int b = atomic_fetch_add(&sh->next, 1);
        if (b >= sh->L->n || atomic_load(&sh->failed)) break;
        w->st = try_block(w, b);
        if (w->st != ZB_OK) {
            atomic_store(&sh->failed, 1);
            break;
        }
    }
    return NULL;
}

/* Is a better than b: span, then end, then sequence. */
static int before(const worker *a, const worker *b) {
    if (a->span != b->span) return a->span < b->span;
    if (a->end != b->end) return a->end < b->end;
    return a->seq < b->seq;
}

static int thread_count(int threads, int blocks) {
    long n = threads > 0 ? threads : sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
    if (n > MAX_THREADS) n = MAX_THREADS;
    return blocks < n ? (blocks > 0 ? blocks : 1) : (int)n;
}

zb_status zb_vblock_eval(const zb_vblock_list *L, int m, const zb_costs *c,
                         double mem_limit, int reorder, int threads,
                         zb_schedule *out, int *found, zb_err *err) {
    *found = 0;
    shared sh = {L, m, c, mem_limit, 1e-9 * fmax(1, fabs(mem_limit)), reorder,
                 0, 0};
    worker w[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    int nt = thread_count(threads, L->n), started = 1;
    memset(w, 0, sizeof w);
    for (int i = 0; i < nt; i++) {
        w[i].sh = &sh;
        if (!(w[i].ws = zb_sim_ws_new())) w[i].st = ZB_ENOMEM;
    }
    for (int i = 0; i < nt; i++)
        if (w[i].st != ZB_OK) atomic_store(&sh.failed, 1);
    /* the calling thread is worker 0; a thread that cannot start leaves
     * its share to the others */
    for (; started < nt; started++)
        if (pthread_create(&tid[started], NULL, work, &w[started]) != 0) break;
    work(&w[0]);
    for (int i = 1; i < started; i++) pthread_join(tid[i], NULL);
    zb_status st = ZB_OK;
    int win = -1;
    for (int i = 0; i < nt; i++) {
        if (w[i].st != ZB_OK && st == ZB_OK) {
            st = w[i].st == ZB_ENOMEM && !w[i].err.msg[0]
                     ? zb_fail(err, ZB_ENOMEM, "zb-auto-v: out of memory")
                     : zb_fail(err, w[i].st, "%s", w[i].err.msg);
        }
        if (w[i].found && (win < 0 || before(&w[i], &w[win]))) win = i;
    }
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
