/* par.h - a parallel loop for the planner's independent trials (internal
 * to the planner).
 *
 * zb_par_for runs fn(arg, i, w) for every item i in [0, n) on nthreads
 * threads (the calling thread is worker 0; w in [0, nthreads) names the
 * worker, for scratch of its own). Items are handed out in increasing
 * order from a shared counter, so when item k runs every item below k has
 * been handed out. fn returns a status: after the first that is not ZB_OK
 * no new item is handed out; the items already running finish. Returns
 * ZB_OK, or the status of the lowest item that failed. Callers that must
 * not depend on the thread count store each item's result by i and reduce
 * them in order afterwards. A thread that cannot be started leaves its
 * share to the others.
 */
#ifndef ZB_PAR_H
#define ZB_PAR_H

#include "common/zb_error.h"

/* Most threads the planner starts for one loop. */
#define ZB_PAR_MAX 8

/* Threads for n items: `threads` if > 0, else one per online core, at most
 * ZB_PAR_MAX and at most n, at least 1. */
int zb_par_threads(int threads, int n);

typedef zb_status (*zb_par_fn)(void *arg, int item, int worker);
zb_status zb_par_for(int n, int nthreads, zb_par_fn fn, void *arg);

#endif
