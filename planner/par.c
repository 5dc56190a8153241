/* par.c - see par.h. */
#include "planner/par.h"

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

typedef struct {
    int n;
    zb_par_fn fn;
    void *arg;
    atomic_int next;      /* next item to hand out */
    atomic_int stop;      /* an item failed */
    int fail_item;        /* lowest failed item, n if none (under lock) */
    zb_status fail_st;
    pthread_mutex_t lock;
} loop;

typedef struct {
    loop *L;
    int worker;
} seat;

static void *run(void *arg) {
    seat *s = arg;
    loop *L = s->L;
    for (;;) {
        if (atomic_load(&L->stop)) break;
        int i = atomic_fetch_add(&L->next, 1);
        if (i >= L->n) break;
        zb_status st = L->fn(L->arg, i, s->worker);
        if (st != ZB_OK) {
            pthread_mutex_lock(&L->lock);
            if (i < L->fail_item) L->fail_item = i, L->fail_st = st;
            pthread_mutex_unlock(&L->lock);
            atomic_store(&L->stop, 1);
        }
    }
    return NULL;
}

int zb_par_threads(int threads, int n) {
    long t = threads > 0 ? threads : sysconf(_SC_NPROCESSORS_ONLN);
    if (t > ZB_PAR_MAX) t = ZB_PAR_MAX;
    if (t > n) t = n;
    return t < 1 ? 1 : (int)t;
}

zb_status zb_par_for(int n, int nthreads, zb_par_fn fn, void *arg) {
    loop L = {.n = n, .fn = fn, .arg = arg, .fail_item = n, .fail_st = ZB_OK};
    if (nthreads > ZB_PAR_MAX) nthreads = ZB_PAR_MAX;
    if (nthreads > 1 && pthread_mutex_init(&L.lock, NULL) != 0) nthreads = 1;
    if (nthreads <= 1) {
        for (int i = 0; i < n; i++) {
            zb_status st = fn(arg, i, 0);
            if (st != ZB_OK) return st;
        }
        return ZB_OK;
    }
    atomic_init(&L.next, 0);
    atomic_init(&L.stop, 0);
    pthread_t tid[ZB_PAR_MAX];
    seat seats[ZB_PAR_MAX];
    int started = 1;
    for (int w = 0; w < nthreads; w++) seats[w] = (seat){&L, w};
    for (; started < nthreads; started++)
        if (pthread_create(&tid[started], NULL, run, &seats[started]) != 0) break;
    run(&seats[0]);
    for (int w = 1; w < started; w++) pthread_join(tid[w], NULL);
    pthread_mutex_destroy(&L.lock);
    return L.fail_st;
}
