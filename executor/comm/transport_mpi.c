/* transport_mpi.c - the MPI transport and process-wide MPI calls; see
 * transport_mpi.h. Without ZB_HAVE_MPI only the stubs at the end exist. */
#include "executor/comm/transport_mpi.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#ifdef ZB_HAVE_MPI

#include <mpi.h>
#include <sched.h>
#include <string.h>
#include <time.h>

/* Staging area of one all-reduce chunk, per member besides member 0. */
#define ZB_MPI_STAGE_BYTES (4u << 20)
/* Contributions the root of an all-reduce has in flight at once: the
 * stage holds ZB_MPI_WINDOW chunks, whatever the group's size. */
#define ZB_MPI_WINDOW 64

static bool mpi_up;   /* zb_mpi_init succeeded and no finalize yet */
static int last_rc;   /* MPI's code of the last failed wait (one MPI thread) */

bool zb_mpi_built(void) { return true; }
bool zb_mpi_initialized(void) { return mpi_up; }

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* "MPI_Xxx failed: <MPI's words>" for return code rc. */
static zb_status mpi_fail(zb_err *err, int rank, const char *call, int rc) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) len = 0;
    text[len] = '\0';
    return zb_fail(err, ZB_ERUNTIME, "rank %d: %s failed: %s", rank, call,
                   len ? text : "unknown MPI error");
}

zb_status zb_mpi_init(int expect_rank, int expect_world, zb_err *err) {
    int provided, rank, world, rc;
    rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
    if (rc != MPI_SUCCESS) return mpi_fail(err, expect_rank, "MPI_Init_thread", rc);
    mpi_up = true;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (provided < MPI_THREAD_FUNNELED)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: MPI provides thread level "
                       "%d, zbrun needs MPI_THREAD_FUNNELED", expect_rank, provided);
    if ((rc = MPI_Comm_rank(MPI_COMM_WORLD, &rank)) != MPI_SUCCESS ||
        (rc = MPI_Comm_size(MPI_COMM_WORLD, &world)) != MPI_SUCCESS)
        return mpi_fail(err, expect_rank, "MPI_Comm_rank/size", rc);
    if (rank != expect_rank || world != expect_world)
        return zb_fail(err, ZB_EINPUT, "MPI sees rank %d of %d processes but "
                       "the launcher started rank %d of %d (is this MPI built "
                       "for this launcher? under Slurm, try mpirun inside the "
                       "allocation or srun --mpi=pmix)", rank, world,
                       expect_rank, expect_world);
    return ZB_OK;
}

void zb_mpi_finalize(void) {
    if (!mpi_up) return;
    mpi_up = false;
    MPI_Finalize();
}

void zb_mpi_abort(int code) {
    fflush(stdout);
    fflush(stderr);
    if (mpi_up) MPI_Abort(MPI_COMM_WORLD, code);
    _exit(code);
}

/* ---- waiting ---- */

/* Complete *req, polling: a few quick tests, then yield, then sleep with a
 * growing pause (up to 1 ms). Gives up after timeout_s, or at once when
 * *aborted is set. `what` and `peer` name the wait in the message. */
static zb_status wait_req(MPI_Request *req, MPI_Status *st, double timeout_s,
                          const volatile int *aborted, int rank,
                          const char *what, int peer, zb_err *err) {
    double t0 = 0;
    long pause_ns = 2000;
    for (int spins = 0;; spins++) {
        int done = 0, rc = MPI_Test(req, &done, st);
        if (rc != MPI_SUCCESS) {
            char call[160];
            snprintf(call, sizeof call, "MPI_Test (waiting for %s rank %d)", what, peer);
            last_rc = rc;
            return mpi_fail(err, rank, call, rc);
        }
        if (done) return ZB_OK;
        if (aborted && *aborted)
            return zb_fail(err, ZB_ERUNTIME, "rank %d: transport aborted", rank);
        if (spins < 50) continue;
        if (spins == 50) t0 = now_s();
        if (spins < 200) {
            sched_yield();
            continue;
        }
        struct timespec ts = {0, pause_ns};
        nanosleep(&ts, NULL);
        if (pause_ns < 1000000) pause_ns += pause_ns / 4;
        if (now_s() - t0 > timeout_s)
            return zb_fail(err, ZB_ERUNTIME, "rank %d: waited %.0f s for %s "
                           "rank %d: that rank failed, hangs or is far slower "
                           "(ZB_COMM_TIMEOUT_S)", rank, timeout_s, what, peer);
    }
}

zb_status zb_mpi_bcast(void *blob, size_t n, double timeout_s, zb_err *err) {
    int rank = 0;
    if (!mpi_up)
        return zb_fail(err, ZB_ERUNTIME, "MPI broadcast before MPI_Init");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (n > (size_t)INT32_MAX)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: broadcast of %zu bytes is "
                       "too large", rank, n);
    MPI_Request req;
    int rc = MPI_Ibcast(blob, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD, &req);
    if (rc != MPI_SUCCESS) return mpi_fail(err, rank, "MPI_Ibcast", rc);
    return wait_req(&req, MPI_STATUS_IGNORE, timeout_s, NULL, rank,
                    "the bootstrap broadcast from", 0, err);
}

/* ---- the transport ---- */

typedef struct {
    MPI_Request req;      /* MPI_REQUEST_NULL when the slot is free */
    unsigned long seq;    /* send order, to wait for the oldest */
    int peer;             /* where it goes */
    float *data;
} zb_mpi_slot;

struct zb_mpi_world {
    zb_transport ep;
    MPI_Comm p2p, coll;
    int tag_ub;
    double timeout_s;
    volatile int aborted;
    int max_sends;
    size_t max_msg_floats;
    zb_mpi_slot *slots;   /* [max_sends] */
    float *pool;          /* [max_sends * max_msg_floats] */
    unsigned long seq;
    unsigned char *stage; /* ZB_MPI_STAGE_BYTES */
};

static zb_status check_tag(zb_mpi_world *w, int tag, zb_err *err) {
    if (tag < 0 || tag > w->tag_ub)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: MPI tag %d outside 0..%d",
                       w->ep.rank, tag, w->tag_ub);
    return ZB_OK;
}

static zb_status check_peer(zb_mpi_world *w, int peer, const char *dir,
                            zb_err *err) {
    if (peer < 0 || peer >= w->ep.world)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: %s rank %d out of range "
                       "0..%d", w->ep.rank, dir, peer, w->ep.world - 1);
    return ZB_OK;
}

/* A free staging slot: reclaim finished sends, else wait for the oldest. */
static zb_status free_slot(zb_mpi_world *w, zb_mpi_slot **out, zb_err *err) {
    zb_mpi_slot *oldest = NULL;
    for (int i = 0; i < w->max_sends; i++) {
        zb_mpi_slot *s = &w->slots[i];
        int done = 1;
        if (s->req != MPI_REQUEST_NULL) {
            int rc = MPI_Test(&s->req, &done, MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS) return mpi_fail(err, w->ep.rank, "MPI_Test", rc);
        }
        if (done) {
            *out = s;
            return ZB_OK;
        }
        if (!oldest || s->seq < oldest->seq) oldest = s;
    }
    ZB_TRY(wait_req(&oldest->req, MPI_STATUS_IGNORE, w->timeout_s, &w->aborted,
                    w->ep.rank, "an earlier send to be received by",
                    oldest->peer, err));
    *out = oldest;
    return ZB_OK;
}

static zb_status mpi_send(zb_transport *t, int peer, int tag, const float *buf,
                          size_t n, zb_err *err) {
    zb_mpi_world *w = t->impl;
    ZB_TRY(check_peer(w, peer, "send to", err));
    ZB_TRY(check_tag(w, tag, err));
    if (n > w->max_msg_floats)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: send to rank %d tag %d: %zu "
                       "floats exceed the %zu the transport was sized for",
                       t->rank, peer, tag, n, w->max_msg_floats);
    if (w->aborted)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: transport aborted", t->rank);
    zb_mpi_slot *s = NULL;
    ZB_TRY(free_slot(w, &s, err));
    memcpy(s->data, buf, n * sizeof *buf);
    s->seq = w->seq++;
    s->peer = peer;
    int rc = MPI_Isend(s->data, (int)n, MPI_FLOAT, peer, tag, w->p2p, &s->req);
    return rc == MPI_SUCCESS ? ZB_OK : mpi_fail(err, t->rank, "MPI_Isend", rc);
}

static zb_status mpi_recv(zb_transport *t, int peer, int tag, float *buf,
                          size_t n, zb_err *err) {
    zb_mpi_world *w = t->impl;
    ZB_TRY(check_peer(w, peer, "recv from", err));
    ZB_TRY(check_tag(w, tag, err));
    if (n > (size_t)INT32_MAX)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: recv of %zu floats is too "
                       "large", t->rank, n);
    if (w->aborted)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: transport aborted", t->rank);
    MPI_Request req;
    MPI_Status st;
    int rc = MPI_Irecv(buf, (int)n, MPI_FLOAT, peer, tag, w->p2p, &req);
    if (rc != MPI_SUCCESS) return mpi_fail(err, t->rank, "MPI_Irecv", rc);
    zb_err e2;
    int cls = MPI_SUCCESS;
    last_rc = MPI_SUCCESS;
    zb_status s = wait_req(&req, &st, w->timeout_s, &w->aborted, t->rank,
                           "a message from", peer, &e2);
    if (s != ZB_OK && last_rc != MPI_SUCCESS) MPI_Error_class(last_rc, &cls);
    if (s != ZB_OK && cls == MPI_ERR_TRUNCATE)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: message from rank %d tag %d "
                       "has more than the %zu floats rank %d expected", t->rank,
                       peer, tag, n, t->rank);
    if (s != ZB_OK) {
        if (err) *err = e2;
        return s;
    }
    int got = 0;
    MPI_Get_count(&st, MPI_FLOAT, &got);
    if ((size_t)got != n)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: message from rank %d tag %d "
                       "has %d floats, rank %d expected %zu", t->rank, peer,
                       tag, got, t->rank, n);
    return ZB_OK;
}

/* This rank's index in g, after checking g (and its id as a tag). */
static zb_status member_of(zb_mpi_world *w, const zb_group *g, int *me,
                           zb_err *err) {
    ZB_TRY(zb_group_member(&w->ep, g, me, err));
    return check_tag(w, g->id, err);
}

typedef struct {
    MPI_Datatype type;
    size_t size;
    void (*add)(void *acc, const void *x, size_t n);
} zb_elem;

static void add_f32(void *acc, const void *x, size_t n) {
    float *a = acc;
    const float *b = x;
    for (size_t k = 0; k < n; k++) a[k] += b[k];
}

static void add_f64(void *acc, const void *x, size_t n) {
    double *a = acc;
    const double *b = x;
    for (size_t k = 0; k < n; k++) a[k] += b[k];
}

/* Members [lo, hi) of the root's window: receive them into the stage,
 * then add them in member order. */
static zb_status gather_window(zb_mpi_world *w, const zb_group *g,
                               const zb_elem *e, char *buf, size_t n, int lo,
                               int hi, zb_err *err) {
    MPI_Request req[ZB_MPI_WINDOW];
    for (int i = lo; i < hi; i++) {
        void *at = w->stage + (size_t)(i - lo) * n * e->size;
        int rc = MPI_Irecv(at, (int)n, e->type, zb_group_rank(g, i), g->id,
                           w->coll, &req[i - lo]);
        if (rc != MPI_SUCCESS) return mpi_fail(err, w->ep.rank, "MPI_Irecv", rc);
    }
    for (int i = lo; i < hi; i++) {
        ZB_TRY(wait_req(&req[i - lo], MPI_STATUS_IGNORE, w->timeout_s,
                        &w->aborted, w->ep.rank, "an all-reduce contribution "
                        "from", zb_group_rank(g, i), err));
        e->add(buf, w->stage + (size_t)(i - lo) * n * e->size, n);
    }
    return ZB_OK;
}

/* Member 0's half of one chunk: receive members 1.. into the stage (at
 * most ZB_MPI_WINDOW at a time), add in member order, send the sum back
 * (as many sends in flight). */
static zb_status reduce_root(zb_mpi_world *w, const zb_group *g,
                             const zb_elem *e, char *buf, size_t n, zb_err *err) {
    MPI_Request req[ZB_MPI_WINDOW];
    for (int lo = 1; lo < g->n; lo += ZB_MPI_WINDOW) {
        int hi = g->n - lo < ZB_MPI_WINDOW ? g->n : lo + ZB_MPI_WINDOW;
        ZB_TRY(gather_window(w, g, e, buf, n, lo, hi, err));
    }
    for (int lo = 1; lo < g->n; lo += ZB_MPI_WINDOW) {
        int hi = g->n - lo < ZB_MPI_WINDOW ? g->n : lo + ZB_MPI_WINDOW;
        for (int i = lo; i < hi; i++) {
            int rc = MPI_Isend(buf, (int)n, e->type, zb_group_rank(g, i), g->id,
                               w->coll, &req[i - lo]);
            if (rc != MPI_SUCCESS) return mpi_fail(err, w->ep.rank, "MPI_Isend", rc);
        }
        for (int i = lo; i < hi; i++)
            ZB_TRY(wait_req(&req[i - lo], MPI_STATUS_IGNORE, w->timeout_s,
                            &w->aborted, w->ep.rank, "the all-reduce result "
                            "to reach", zb_group_rank(g, i), err));
    }
    return ZB_OK;
}

/* The other members: contribute, then receive the sum in place. */
static zb_status reduce_leaf(zb_mpi_world *w, const zb_group *g,
                             const zb_elem *e, char *buf, size_t n, zb_err *err) {
    MPI_Request req;
    MPI_Status st;
    int root = zb_group_rank(g, 0);
    int rc = MPI_Isend(buf, (int)n, e->type, root, g->id, w->coll, &req);
    if (rc != MPI_SUCCESS) return mpi_fail(err, w->ep.rank, "MPI_Isend", rc);
    ZB_TRY(wait_req(&req, MPI_STATUS_IGNORE, w->timeout_s, &w->aborted,
                    w->ep.rank, "the all-reduce root", root, err));
    rc = MPI_Irecv(buf, (int)n, e->type, root, g->id, w->coll, &req);
    if (rc != MPI_SUCCESS) return mpi_fail(err, w->ep.rank, "MPI_Irecv", rc);
    zb_status s = wait_req(&req, &st, w->timeout_s, &w->aborted, w->ep.rank,
                           "the all-reduce result from", root, err);
    if (s != ZB_OK) return s;
    int got = 0;
    MPI_Get_count(&st, e->type, &got);
    if ((size_t)got != n)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: all-reduce on group %d: "
                       "rank %d sent %d elements, rank %d passes %zu",
                       w->ep.rank, g->id, root, got, w->ep.rank, n);
    return ZB_OK;
}

static zb_status allreduce_any(zb_transport *t, const zb_group *g, void *buf,
                               size_t n, const zb_elem *e, zb_err *err) {
    zb_mpi_world *w = t->impl;
    int me = -1;
    ZB_TRY(member_of(w, g, &me, err));
    if (w->aborted)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: transport aborted", t->rank);
    if (g->n == 1) return ZB_OK;
    int window = g->n - 1 < ZB_MPI_WINDOW ? g->n - 1 : ZB_MPI_WINDOW;
    size_t chunk = ZB_MPI_STAGE_BYTES / e->size / (size_t)window;
    if (chunk > (size_t)INT32_MAX) chunk = INT32_MAX;
    for (size_t lo = 0; lo < n; lo += chunk) {
        size_t len = n - lo < chunk ? n - lo : chunk;
        char *at = (char *)buf + lo * e->size;
        if (me == 0) ZB_TRY(reduce_root(w, g, e, at, len, err));
        else ZB_TRY(reduce_leaf(w, g, e, at, len, err));
    }
    return ZB_OK;
}

static zb_status mpi_allreduce(zb_transport *t, const zb_group *g, float *buf,
                               size_t n, zb_err *err) {
    zb_elem e = {MPI_FLOAT, sizeof(float), add_f32};
    return allreduce_any(t, g, buf, n, &e, err);
}

static zb_status mpi_allreduce_f64(zb_transport *t, const zb_group *g,
                                   double *buf, size_t n, zb_err *err) {
    zb_elem e = {MPI_DOUBLE, sizeof(double), add_f64};
    return allreduce_any(t, g, buf, n, &e, err);
}

static zb_status mpi_barrier(zb_transport *t, const zb_group *g, zb_err *err) {
    double one = 1;
    return mpi_allreduce_f64(t, g, &one, 1, err);
}

static void mpi_abort_ep(zb_transport *t) {
    zb_mpi_world *w = t->impl;
    w->aborted = 1;
}

static zb_status world_comms(zb_mpi_world *w, zb_err *err) {
    int rc, flag = 0, *ub = NULL;
    if ((rc = MPI_Comm_dup(MPI_COMM_WORLD, &w->p2p)) != MPI_SUCCESS)
        return mpi_fail(err, w->ep.rank, "MPI_Comm_dup", rc);
    if ((rc = MPI_Comm_dup(MPI_COMM_WORLD, &w->coll)) != MPI_SUCCESS)
        return mpi_fail(err, w->ep.rank, "MPI_Comm_dup", rc);
    MPI_Comm_set_errhandler(w->p2p, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(w->coll, MPI_ERRORS_RETURN);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    w->tag_ub = flag && ub ? *ub : 32767;
    return ZB_OK;
}

static zb_status world_alloc(zb_mpi_world *w, zb_err *err) {
    size_t cells = (size_t)w->max_sends * w->max_msg_floats;
    if (w->max_msg_floats && cells / w->max_msg_floats != (size_t)w->max_sends)
        return zb_fail(err, ZB_ENOMEM, "MPI transport: staging too large");
    w->slots = zb_calloc((size_t)w->max_sends, sizeof *w->slots, err);
    w->pool = w->slots ? zb_calloc(cells ? cells : 1, sizeof(float), err) : NULL;
    w->stage = w->pool ? zb_calloc(ZB_MPI_STAGE_BYTES, 1, err) : NULL;
    if (!w->stage) return ZB_ENOMEM;
    for (int i = 0; i < w->max_sends; i++) {
        w->slots[i].req = MPI_REQUEST_NULL;
        w->slots[i].data = w->pool + (size_t)i * w->max_msg_floats;
    }
    return ZB_OK;
}

zb_status zb_mpi_world_new(int max_sends, size_t max_msg_floats,
                           double timeout_s, zb_mpi_world **out, zb_err *err) {
    *out = NULL;
    if (!mpi_up)
        return zb_fail(err, ZB_ERUNTIME, "MPI transport before MPI_Init");
    if (max_sends < 1 || max_msg_floats > (size_t)INT32_MAX || !(timeout_s > 0))
        return zb_fail(err, ZB_ERUNTIME, "MPI transport: bad sizes (%d sends "
                       "of %zu floats, timeout %g s)", max_sends,
                       max_msg_floats, timeout_s);
    zb_mpi_world *w = zb_calloc(1, sizeof *w, err);
    if (!w) return ZB_ENOMEM;
    w->p2p = w->coll = MPI_COMM_NULL;
    w->max_sends = max_sends;
    w->max_msg_floats = max_msg_floats;
    w->timeout_s = timeout_s;
    MPI_Comm_rank(MPI_COMM_WORLD, &w->ep.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &w->ep.world);
    w->ep.send = mpi_send;
    w->ep.recv = mpi_recv;
    w->ep.allreduce = mpi_allreduce;
    w->ep.allreduce_f64 = mpi_allreduce_f64;
    w->ep.barrier = mpi_barrier;
    w->ep.abort = mpi_abort_ep;
    w->ep.impl = w;
    zb_status s = world_comms(w, err);
    if (s == ZB_OK) s = world_alloc(w, err);
    if (s != ZB_OK) {
        zb_mpi_world_free(w);
        return s;
    }
    *out = w;
    return ZB_OK;
}

/* Sends still in flight are completed first (after a failure the job is
 * aborted instead, so this only runs on success). */
void zb_mpi_world_free(zb_mpi_world *w) {
    if (!w) return;
    for (int i = 0; w->slots && i < w->max_sends; i++)
        if (w->slots[i].req != MPI_REQUEST_NULL && !w->aborted)
            wait_req(&w->slots[i].req, MPI_STATUS_IGNORE, w->timeout_s, NULL,
                     w->ep.rank, "a send to be received by", w->slots[i].peer,
                     NULL);
    if (w->p2p != MPI_COMM_NULL) MPI_Comm_free(&w->p2p);
    if (w->coll != MPI_COMM_NULL) MPI_Comm_free(&w->coll);
    free(w->stage);
    free(w->pool);
    free(w->slots);
    free(w);
}

zb_transport *zb_mpi_transport(zb_mpi_world *w) { return w ? &w->ep : NULL; }

#else /* !ZB_HAVE_MPI */

static zb_status no_mpi(zb_err *err) {
    return zb_fail(err, ZB_EINPUT, "zbrun was built without MPI, which a launch "
                   "by mpirun, srun or a PMI launcher needs (install Open MPI's "
                   "development files, e.g. libopenmpi-dev, and rebuild)");
}

bool zb_mpi_built(void) { return false; }
bool zb_mpi_initialized(void) { return false; }
zb_status zb_mpi_init(int expect_rank, int expect_world, zb_err *err) {
    (void)expect_rank;
    (void)expect_world;
    return no_mpi(err);
}
void zb_mpi_finalize(void) {}
void zb_mpi_abort(int code) {
    fflush(stdout);
    fflush(stderr);
    _exit(code);
}
zb_status zb_mpi_bcast(void *blob, size_t n, double timeout_s, zb_err *err) {
    (void)blob;
    (void)n;
    (void)timeout_s;
    return no_mpi(err);
}
zb_status zb_mpi_world_new(int max_sends, size_t max_msg_floats,
                           double timeout_s, zb_mpi_world **out, zb_err *err) {
    (void)max_sends;
    (void)max_msg_floats;
    (void)timeout_s;
    *out = NULL;
    return no_mpi(err);
}
void zb_mpi_world_free(zb_mpi_world *w) { (void)w; }
zb_transport *zb_mpi_transport(zb_mpi_world *w) {
    (void)w;
    return NULL;
}

#endif
