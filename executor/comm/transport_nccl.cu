/* transport_nccl.cu - the NCCL transport (transport.h): one rank per CUDA
 * device; ranks are threads of this process (zb_nccl_threads_new) or
 * processes (zb_nccl_new, with a unique id broadcast by the caller).
 *
 * Every NCCL, CUDA call is checked; the first failure is returned as
 * ZB_ERUNTIME naming the call, the NCCL error string, file and line.
 * Streams: sends and receives run on the transfer stream of their lane
 * (p2p_channel.h: direction x message kind x the lower end's pipeline
 * parity, each lane its own communicator
 * split from the world, so activations and gradients between two ranks
 * never match each other's slots); all-reduces run on the compute stream
 * itself. The compute stream never waits for a send
 * to be matched (an NCCL send blocks its stream until the receiver's recv
 * runs, and a compute stream waiting for that could wait on a peer that
 * waits on us): send copies buf into a staging ring on the compute stream
 * and NCCL sends from the ring on the transfer stream; recv receives into
 * a ring on the transfer stream and the compute stream copies out after
 * it. A ring slot is reused after its previous transfer (send ring) or
 * copy-out (recv ring) finished (events); one ring per direction and end
 * (send, recv), shared by the direction's lanes, of the caller's
 * ring_slots (common/zb_staging.h, the planner counts the same bytes): at
 * least the messages it carries in one step, so no slot is reused inside
 * a step; a ring no message uses (0 slots) is not allocated. allreduce_f64 and barrier copy through a pinned and a device
 * buffer and wait for the stream, polling ncclCommGetAsyncError (they work
 * on host memory). Creation ends with every lane's first exchange with the
 * pipeline neighbours (warm_lanes), so that NCCL's connection set-up, a
 * host rendezvous with the peer, never happens inside a step.
 * abort follows NCCL's rule that one thread operates a communicator at a
 * time: every NCCL call of a rank's thread is bracketed by its abort gate
 * (abort_gate.h), the aborting thread aborts only the ranks no thread is
 * inside of, and a rank inside a call aborts its own on leaving it.
 */
extern "C" {
#include "executor/comm/abort_gate.h"
#include "executor/comm/p2p_channel.h"
#include "executor/comm/transport.h"
#include "executor/host/watchdog.h"
}
#include "executor/host/cuda_util.h"

#include <nccl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static_assert(sizeof(ncclUniqueId) == ZB_NCCL_ID_BYTES,
              "ZB_NCCL_ID_BYTES must equal sizeof(ncclUniqueId)");

#define ZB_NCCL(call)                                                          \
    do {                                                                       \
        ncclResult_t zb_nr_ = (call);                                          \
        if (zb_nr_ != ncclSuccess)                                             \
            return zb_fail(err, ZB_ERUNTIME, "%s: %s (%s:%d)", #call,          \
                           ncclGetErrorString(zb_nr_), __FILE__, __LINE__);    \
    } while (0)

#define ZB_F64_CHUNK 4096 /* doubles per device round trip of allreduce_f64 */

struct nccl_shared;

struct nccl_gcomm {
    int id, n;
    ncclComm_t comm;        /* NULL: this rank is not a member */
};

/* Staging ring of one direction and kind (send or recv). */
struct nccl_ring {
    float *data;            /* device [n, max_msg_floats] */
    cudaEvent_t *done;      /* [n] the slot's last use ended */
    bool *recorded;         /* [n] done has been recorded */
    int next;
};

struct nccl_ep {
    zb_transport t;         /* t.impl points back here */
    int device;
    ncclComm_t world;
    ncclComm_t lane[ZB_P2P_CHANNELS];     /* p2p_channel.h */
    cudaStream_t lane_s[ZB_P2P_CHANNELS];
    cudaStream_t host_s;    /* allreduce_f64 before a compute stream exists */
    cudaEvent_t ev_in, ev_out;
    int ring_n[ZB_NCCL_RINGS]; /* slots per ring (zb_nccl_ring) */
    size_t max_msg_floats;
    nccl_ring rings[2][2];  /* [up?][send?] */
    int ng;
    nccl_gcomm groups[ZB_NCCL_MAX_GROUPS];
    double *dbuf;           /* device [ZB_F64_CHUNK] */
    double *hbuf;           /* pinned host [ZB_F64_CHUNK] */
    zb_abort_gate gate;     /* who aborts these communicators (abort_gate.h) */
    nccl_shared *shared;    /* the endpoints of this process */
};

struct nccl_shared {
    int n;                  /* endpoints in this process */
    nccl_ep *eps;           /* [n] */
    int aborted;            /* atomic: an abort was asked; every host wait
                               and every call polls it */
};

static nccl_ep *EP(zb_transport *t) { return (nccl_ep *)t->impl; }

static bool is_aborted(const nccl_ep *e) {
    return __atomic_load_n(&e->shared->aborted, __ATOMIC_ACQUIRE) != 0;
}

static zb_status aborted_err(zb_transport *t, zb_err *err) {
    return zb_fail(err, ZB_ERUNTIME,
                   "rank %d: transport aborted (another rank failed)", t->rank);
}

/* ncclCommAbort on every communicator of e, on e's device. The caller
 * holds e's gate's "abort now" (abort_gate.h): no other thread is inside
 * an NCCL call on them, and none will enter one. */
static void abort_comms(nccl_ep *e) {
    int was = -1;
    cudaGetDevice(&was);
    cudaSetDevice(e->device);
    for (int g = 0; g < e->ng; g++)
        if (e->groups[g].comm) ncclCommAbort(e->groups[g].comm);
    for (int k = 0; k < ZB_P2P_CHANNELS; k++)
        if (e->lane[k]) ncclCommAbort(e->lane[k]);
    if (e->world) ncclCommAbort(e->world);
    memset(e->lane, 0, sizeof e->lane);
    e->world = NULL;
    for (int g = 0; g < e->ng; g++) e->groups[g].comm = NULL;
    if (was >= 0) cudaSetDevice(was);
}

/* Threads mode: the failing rank's thread raises the flag every host wait
 * polls, then aborts each rank's communicators that no thread is inside
 * of (which also ends an owner's wait for device work stuck on them);
 * a rank inside an NCCL call aborts its own on leaving it (leave_nccl).
 * NCCL's rule: one thread operates a communicator at a time, and every
 * rank of the node aborts. */
static void nc_abort(zb_transport *t) {
    nccl_shared *sh = EP(t)->shared;
    __atomic_store_n(&sh->aborted, 1, __ATOMIC_SEQ_CST);
    for (int i = 0; i < sh->n; i++)
        if (zb_gate_claim(&sh->eps[i].gate)) abort_comms(&sh->eps[i]);
}

/* Brackets of an NCCL call by the endpoint's own thread. enter_nccl
 * fails once an abort was asked (no call on an aborted communicator);
 * leave_nccl aborts e's communicators when an abort came meanwhile. */
static zb_status enter_nccl(zb_transport *t, zb_err *err) {
    if (is_aborted(EP(t)) || !zb_gate_enter(&EP(t)->gate))
        return aborted_err(t, err);
    return ZB_OK;
}

static void leave_nccl(zb_transport *t) {
    if (zb_gate_leave(&EP(t)->gate)) abort_comms(EP(t));
}

/* One NCCL call of endpoint t, bracketed: the call's failure, else an
 * abort that came while it ran. */
#define ZB_NCCL_OWN(t, call)                                                   \
    do {                                                                       \
        ZB_TRY(enter_nccl(t, err));                                            \
        ncclResult_t zb_nr_ = (call);                                          \
        bool zb_ab_ = __atomic_load_n(&EP(t)->shared->aborted, __ATOMIC_SEQ_CST); \
        leave_nccl(t);                                                         \
        if (zb_nr_ != ncclSuccess)                                             \
            return zb_fail(err, ZB_ERUNTIME, "%s: %s (%s:%d)", #call,          \
                           ncclGetErrorString(zb_nr_), __FILE__, __LINE__);    \
        if (zb_ab_) return aborted_err(t, err);                                \
    } while (0)

static zb_status ready(zb_transport *t, zb_err *err) {
    if (is_aborted(EP(t))) return aborted_err(t, err);
    if (!t->stream)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: NCCL transport used before "
                       "a CUDA stage set its compute stream", t->rank);
    ZB_CUDA(cudaSetDevice(EP(t)->device));
    return ZB_OK;
}

/* ---- point to point ---- */

static zb_status p2p(zb_transport *t, int peer, int tag, float *buf,
                     size_t n, bool send, zb_err *err) {
    nccl_ep *e = EP(t);
    if (peer < 0 || peer >= t->world || peer == t->rank)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: %s rank %d out of range "
                       "0..%d (or itself)", t->rank, send ? "send to" : "recv from",
                       peer, t->world - 1);
    if (n > e->max_msg_floats)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: message of %zu floats "
                       "exceeds the %zu the transport was sized for", t->rank,
                       n, e->max_msg_floats);
    ZB_TRY(ready(t, err));
    int from = send ? t->rank : peer, to = send ? peer : t->rank;
    bool up = from < to; /* message goes up */
    int lane = zb_p2p_channel(from, to, tag);
    ncclComm_t comm = e->lane[lane];
    cudaStream_t xs = e->lane_s[lane], compute = (cudaStream_t)t->stream;
    nccl_ring *ring = &e->rings[up][send];
    int slots = e->ring_n[zb_nccl_ring(up, send)];
    if (slots < 1)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: %s rank %d: the plan "
                       "gave the transport no staging ring for messages %s",
                       t->rank, send ? "send to" : "recv from", peer,
                       up ? "up" : "down");
    int k = ring->next;
    ring->next = (k + 1) % slots;
    float *stage = ring->data + (size_t)k * e->max_msg_floats;
    size_t bytes = n * sizeof(float);
    if (send) {
        if (ring->recorded[k]) ZB_CUDA(cudaStreamWaitEvent(compute, ring->done[k], 0));
        ZB_CUDA(cudaMemcpyAsync(stage, buf, bytes, cudaMemcpyDeviceToDevice, compute));
        ZB_CUDA(cudaEventRecord(e->ev_in, compute));
        ZB_CUDA(cudaStreamWaitEvent(xs, e->ev_in, 0));
        ZB_NCCL_OWN(t, ncclSend(stage, n, ncclFloat, peer, comm, xs));
        ZB_CUDA(cudaEventRecord(ring->done[k], xs));
    } else {
        if (ring->recorded[k]) ZB_CUDA(cudaStreamWaitEvent(xs, ring->done[k], 0));
        ZB_NCCL_OWN(t, ncclRecv(stage, n, ncclFloat, peer, comm, xs));
        ZB_CUDA(cudaEventRecord(e->ev_out, xs));
        ZB_CUDA(cudaStreamWaitEvent(compute, e->ev_out, 0));
        ZB_CUDA(cudaMemcpyAsync(buf, stage, bytes, cudaMemcpyDeviceToDevice, compute));
        ZB_CUDA(cudaEventRecord(ring->done[k], compute));
    }
    ring->recorded[k] = true;
    return ZB_OK;
}

static zb_status nc_send(zb_transport *t, int peer, int tag, const float *buf,
                         size_t n, zb_err *err) {
    return p2p(t, peer, tag, (float *)buf, n, true, err);
}

static zb_status nc_recv(zb_transport *t, int peer, int tag, float *buf,
                         size_t n, zb_err *err) {
    return p2p(t, peer, tag, buf, n, false, err);
}

/* ---- groups ---- */

static zb_status comm_of(zb_transport *t, const zb_group *g, ncclComm_t *out,
                         zb_err *err) {
    nccl_ep *e = EP(t);
    if (g->n == t->world) {
        *out = e->world;
        return ZB_OK;
    }
    for (int k = 0; k < e->ng; k++)
        if (e->groups[k].comm && e->groups[k].id == g->id && e->groups[k].n == g->n) {
            *out = e->groups[k].comm;
            return ZB_OK;
        }
    return zb_fail(err, ZB_ERUNTIME, "rank %d: group %d (%d ranks) has no NCCL "
                   "communicator (not announced when the transport was made)",
                   t->rank, g->id, g->n);
}

static zb_status nc_allreduce(zb_transport *t, const zb_group *g, float *buf,
                              size_t n, zb_err *err) {
    if (g->n == 1) return ZB_OK;
    ZB_TRY(ready(t, err));
    ncclComm_t comm;
    ZB_TRY(comm_of(t, g, &comm, err));
    ZB_NCCL_OWN(t, ncclAllReduce(buf, buf, n, ncclFloat, ncclSum, comm,
                                 (cudaStream_t)t->stream));
    return ZB_OK;
}

/* Host doubles: staged through the device in chunks, on the compute
 * stream (after the work enqueued on it) or, before a stage exists, on
 * the endpoint's own stream. */
/* Waits for stream s on the host, under the watchdog, checking the
 * communicator for an asynchronous error (a peer that died, a network
 * failure) while it waits: those end the wait with NCCL's message instead
 * of a hang. */
static zb_status wait_stream(zb_transport *t, ncclComm_t comm, cudaStream_t s,
                             const char *what, zb_err *err) {
    const struct timespec nap = {0, 20000}; /* 20 us between polls */
    zb_watchdog_arm(what);
    cudaError_t ce;
    while ((ce = cudaStreamQuery(s)) == cudaErrorNotReady) {
        ncclResult_t ar = ncclSuccess, q = ncclInvalidUsage;
        if (zb_gate_enter(&EP(t)->gate)) { /* not while it is aborted */
            q = ncclCommGetAsyncError(comm, &ar);
            leave_nccl(t);
        }
        if (q == ncclSuccess && ar != ncclSuccess && ar != ncclInProgress) {
            zb_watchdog_disarm();
            return zb_fail(err, ZB_ERUNTIME, "rank %d: NCCL failed while "
                           "waiting for %s: %s", t->rank, what,
                           ncclGetErrorString(ar));
        }
        if (is_aborted(EP(t))) {
            zb_watchdog_disarm();
            return aborted_err(t, err);
        }
        nanosleep(&nap, NULL);
    }
    zb_watchdog_disarm();
    ZB_CUDA(ce);
    return ZB_OK;
}

/* Host doubles, through a pinned buffer (a copy from pageable memory
 * would block before the wait below is armed) and the device. */
static zb_status nc_allreduce_f64(zb_transport *t, const zb_group *g,
                                  double *buf, size_t n, zb_err *err) {
    if (g->n == 1) return ZB_OK;
    nccl_ep *e = EP(t);
    if (is_aborted(e)) return aborted_err(t, err);
    ZB_CUDA(cudaSetDevice(e->device));
    ncclComm_t comm;
    ZB_TRY(comm_of(t, g, &comm, err));
    cudaStream_t s = t->stream ? (cudaStream_t)t->stream : e->host_s;
    for (size_t lo = 0; lo < n; lo += ZB_F64_CHUNK) {
        size_t k = n - lo < ZB_F64_CHUNK ? n - lo : ZB_F64_CHUNK;
        memcpy(e->hbuf, buf + lo, k * sizeof(double));
        ZB_CUDA(cudaMemcpyAsync(e->dbuf, e->hbuf, k * sizeof(double),
                                cudaMemcpyHostToDevice, s));
        ZB_NCCL_OWN(t, ncclAllReduce(e->dbuf, e->dbuf, k, ncclDouble, ncclSum,
                                     comm, s));
        ZB_CUDA(cudaMemcpyAsync(e->hbuf, e->dbuf, k * sizeof(double),
                                cudaMemcpyDeviceToHost, s));
        ZB_TRY(wait_stream(t, comm, s, "an NCCL all-reduce of host values "
                           "(and the device work queued before it)", err));
        memcpy(buf + lo, e->hbuf, k * sizeof(double));
    }
    return ZB_OK;
}

static zb_status nc_barrier(zb_transport *t, const zb_group *g, zb_err *err) {
    double one = 1.0;
    return nc_allreduce_f64(t, g, &one, 1, err);
}

/* ---- creation ---- */

static zb_status ep_device_init(nccl_ep *e, int rank, int world, zb_err *err) {
    memset(&e->t, 0, sizeof e->t);
    e->t.rank = rank;
    e->t.world = world;
    e->t.send = nc_send;
    e->t.recv = nc_recv;
    e->t.allreduce = nc_allreduce;
    e->t.allreduce_f64 = nc_allreduce_f64;
    e->t.barrier = nc_barrier;
    e->t.abort = nc_abort;
    e->t.impl = e;
    ZB_CUDA(cudaSetDevice(e->device));
    for (int k = 0; k < ZB_P2P_CHANNELS; k++)
        ZB_CUDA(cudaStreamCreateWithFlags(&e->lane_s[k], cudaStreamNonBlocking));
    ZB_CUDA(cudaStreamCreateWithFlags(&e->host_s, cudaStreamNonBlocking));
    ZB_CUDA(cudaEventCreateWithFlags(&e->ev_in, cudaEventDisableTiming));
    ZB_CUDA(cudaEventCreateWithFlags(&e->ev_out, cudaEventDisableTiming));
    ZB_CUDA(cudaMalloc((void **)&e->dbuf, ZB_F64_CHUNK * sizeof(double)));
    ZB_CUDA(cudaMallocHost((void **)&e->hbuf, ZB_F64_CHUNK * sizeof(double)));
    for (int u = 0; u < 2; u++)
        for (int k = 0; k < 2; k++) {
            nccl_ring *r = &e->rings[u][k];
            int slots = e->ring_n[zb_nccl_ring(u, k)];
            if (slots < 1) continue; /* a ring no message uses */
            size_t ring_bytes = zb_staging_ring_bytes((size_t)slots, e->max_msg_floats);
            r->done = (cudaEvent_t *)zb_calloc((size_t)slots, sizeof(cudaEvent_t), err);
            r->recorded = (bool *)zb_calloc((size_t)slots, sizeof(bool), err);
            if (!r->done || !r->recorded) return ZB_ENOMEM;
            cudaError_t ce = cudaMalloc((void **)&r->data, ring_bytes ? ring_bytes : 1);
            if (ce != cudaSuccess) {
                size_t free_b = 0, total_b = 0;
                cudaMemGetInfo(&free_b, &total_b);
                r->data = NULL;
                return zb_fail(err, ZB_ERUNTIME, "rank %d on CUDA device %d: "
                               "NCCL staging ring: %zu bytes asked, %zu free "
                               "(%s)", rank, e->device, ring_bytes, free_b,
                               cudaGetErrorString(ce));
            }
            for (int i = 0; i < slots; i++)
                ZB_CUDA(cudaEventCreateWithFlags(&r->done[i], cudaEventDisableTiming));
        }
    return ZB_OK;
}

/* Split every endpoint's world by color (group id or NOCOLOR), inside one
 * NCCL group so that one thread can make all of this process's ranks.
 * Inside a group every rank is issued even after one failed (the first
 * failure is returned after ncclGroupEnd): a rank left out would leave
 * the others waiting for it in ncclGroupEnd. */
static zb_status split_all(nccl_ep *eps, int n, int ng, const zb_group *groups,
                           zb_err *err) {
    for (int which = 0; which < ZB_P2P_CHANNELS + ng; which++) {
        ZB_NCCL(ncclGroupStart());
        zb_status st = ZB_OK;
        for (int i = 0; i < n; i++) { /* every rank, even after a failure */
            nccl_ep *e = &eps[i];
            cudaError_t ce = cudaSetDevice(e->device);
            if (ce != cudaSuccess) {
                if (st == ZB_OK)
                    st = zb_fail(err, ZB_ERUNTIME, "cudaSetDevice(%d): %s",
                                 e->device, cudaGetErrorString(ce));
                continue;
            }
            ncclComm_t *dst;
            int color = 0, key = e->t.rank;
            if (which < ZB_P2P_CHANNELS) dst = &e->lane[which];
            else {
                int k = which - ZB_P2P_CHANNELS;
                const zb_group *g = &groups[(size_t)i * ng + k];
                nccl_gcomm *gc = &e->groups[k];
                gc->id = g->id;
                gc->n = g->n;
                dst = &gc->comm;
                color = g->n > 0 ? g->id : NCCL_SPLIT_NOCOLOR;
                for (int k = 0; k < g->n; k++)
                    if (zb_group_rank(g, k) == e->t.rank) key = k;
            }
            ncclResult_t r = ncclCommSplit(e->world, color, key, dst, NULL);
            if (r != ncclSuccess && st == ZB_OK)
                st = zb_fail(err, ZB_ERUNTIME, "ncclCommSplit (rank %d): %s",
                             e->t.rank, ncclGetErrorString(r));
        }
        ZB_NCCL(ncclGroupEnd());
        ZB_TRY(st);
    }
    return ZB_OK;
}

/* One lane's first exchange: each endpoint sends one float to, and
 * receives one from, each pipeline neighbour (ranks stride below and
 * above) whose messages use this lane, all in one NCCL group (threads:
 * every endpoint of this process in it). NCCL connects a peer on its
 * first send or receive, on the host and together with that peer; done
 * here, at creation, no step's transfer waits for it. A failure inside
 * the group still ends the group (NCCL's rule) and is returned after. */
static zb_status warm_lane(nccl_ep *eps, int n, int lane, int stride,
                           zb_err *err) {
    ZB_NCCL(ncclGroupStart());
    zb_status st = ZB_OK;
    for (int i = 0; i < n; i++) { /* every rank, even after a failure */
        nccl_ep *e = &eps[i];
        int r = e->t.rank;
        float *sbuf = (float *)e->dbuf, *rbuf = sbuf + 2;
        if (cudaSetDevice(e->device) != cudaSuccess) {
            if (st == ZB_OK)
                st = zb_fail(err, ZB_ERUNTIME, "cudaSetDevice(%d) failed",
                             e->device);
            continue;
        }
        for (int q = r - stride; q <= r + stride; q += 2 * stride)
            for (int kind = 0; kind < 2 && q >= 0 && q < e->t.world; kind++) {
                ncclResult_t nr = ncclSuccess;
                if (zb_p2p_channel(r, q, kind) == lane)
                    nr = ncclSend(sbuf, 1, ncclFloat, q, e->lane[lane], e->lane_s[lane]);
                if (nr == ncclSuccess && zb_p2p_channel(q, r, kind) == lane)
                    nr = ncclRecv(rbuf, 1, ncclFloat, q, e->lane[lane], e->lane_s[lane]);
                if (nr != ncclSuccess && st == ZB_OK)
                    st = zb_fail(err, ZB_ERUNTIME, "rank %d: lane %d's first "
                                 "exchange with rank %d: %s", r, lane, q,
                                 ncclGetErrorString(nr));
            }
    }
    ZB_NCCL(ncclGroupEnd());
    return st;
}

/* Every lane connected (warm_lane), then waited for. */
static zb_status warm_lanes(nccl_ep *eps, int n, int stride, zb_err *err) {
    if (stride < 1) return ZB_OK;
    for (int i = 0; i < n; i++) {
        ZB_CUDA(cudaSetDevice(eps[i].device));
        ZB_CUDA(cudaMemsetAsync(eps[i].dbuf, 0, sizeof(float), eps[i].host_s));
        ZB_CUDA(cudaStreamSynchronize(eps[i].host_s));
    }
    for (int lane = 0; lane < ZB_P2P_CHANNELS; lane++)
        ZB_TRY(warm_lane(eps, n, lane, stride, err));
    for (int i = 0; i < n; i++) {
        ZB_CUDA(cudaSetDevice(eps[i].device));
        for (int lane = 0; lane < ZB_P2P_CHANNELS; lane++)
            ZB_CUDA(cudaStreamSynchronize(eps[i].lane_s[lane]));
    }
    return ZB_OK;
}

static zb_status shared_new(int n, nccl_shared **out, zb_err *err) {
    nccl_shared *sh = (nccl_shared *)zb_calloc(1, sizeof *sh, err);
    if (!sh) return ZB_ENOMEM;
    sh->eps = (nccl_ep *)zb_calloc((size_t)n, sizeof(nccl_ep), err);
    if (!sh->eps) {
        free(sh);
        return ZB_ENOMEM;
    }
    sh->n = n;
    *out = sh;
    return ZB_OK;
}

static void shared_free(nccl_shared *sh) {
    for (int i = 0; i < sh->n; i++) {
        nccl_ep *e = &sh->eps[i];
        cudaSetDevice(e->device);
        /* every rank thread has ended: an abort its owner never reached
         * (PENDING) is ours; an aborted endpoint (DEAD) has no handles */
        int gate = zb_gate_state(&e->gate);
        if (gate == ZB_GATE_PENDING) abort_comms(e);
        if (gate == ZB_GATE_FREE) {
            for (int g = 0; g < e->ng; g++)
                if (e->groups[g].comm) ncclCommDestroy(e->groups[g].comm);
            for (int k = 0; k < ZB_P2P_CHANNELS; k++)
                if (e->lane[k]) ncclCommDestroy(e->lane[k]);
            if (e->world) ncclCommDestroy(e->world);
        }
        for (int k = 0; k < ZB_P2P_CHANNELS; k++)
            if (e->lane_s[k]) cudaStreamDestroy(e->lane_s[k]);
        if (e->host_s) cudaStreamDestroy(e->host_s);
        if (e->ev_in) cudaEventDestroy(e->ev_in);
        if (e->ev_out) cudaEventDestroy(e->ev_out);
        if (e->dbuf) cudaFree(e->dbuf);
        if (e->hbuf) cudaFreeHost(e->hbuf);
        for (int u = 0; u < 2; u++)
            for (int k = 0; k < 2; k++) {
                nccl_ring *r = &e->rings[u][k];
                for (int i = 0; r->done && i < e->ring_n[zb_nccl_ring(u, k)]; i++)
                    if (r->done[i]) cudaEventDestroy(r->done[i]);
                free(r->done);
                free(r->recorded);
                if (r->data) cudaFree(r->data);
            }
    }
    free(sh->eps);
    free(sh);
}

static zb_status check_groups(int ng, const int *slots, zb_err *err) {
    if (ng < 0 || ng > ZB_NCCL_MAX_GROUPS)
        return zb_fail(err, ZB_ERUNTIME, "NCCL transport: %d group kinds "
                       "(0..%d allowed)", ng, ZB_NCCL_MAX_GROUPS);
    for (int k = 0; k < ZB_NCCL_RINGS; k++)
        if (slots[k] < 0)
            return zb_fail(err, ZB_ERUNTIME, "NCCL transport: staging ring %d "
                           "of %d slots (>= 0 needed)", k, slots[k]);
    return ZB_OK;
}

extern "C" zb_status zb_nccl_unique_id(unsigned char id[ZB_NCCL_ID_BYTES],
                                       zb_err *err) {
    ncclUniqueId u;
    ZB_NCCL(ncclGetUniqueId(&u));
    memcpy(id, &u, sizeof u);
    return ZB_OK;
}

static zb_status make_threads(nccl_shared *sh, const int *devices, int ng,
                              const zb_group *groups, const int *slots,
                              size_t max_msg_floats, int stride, zb_err *err) {
    int world = sh->n;
    ncclUniqueId id;
    ZB_NCCL(ncclGetUniqueId(&id));
    for (int r = 0; r < world; r++) {
        sh->eps[r].device = devices[r];
        sh->eps[r].ng = ng;
        memcpy(sh->eps[r].ring_n, slots, sizeof sh->eps[r].ring_n);
        sh->eps[r].max_msg_floats = max_msg_floats;
        sh->eps[r].shared = sh;
        ZB_TRY(ep_device_init(&sh->eps[r], r, world, err));
    }
    ZB_NCCL(ncclGroupStart());
    zb_status st = ZB_OK;
    for (int r = 0; r < world; r++) { /* every rank, even after a failure */
        cudaError_t ce = cudaSetDevice(devices[r]);
        ncclResult_t nr = ce == cudaSuccess
                              ? ncclCommInitRank(&sh->eps[r].world, world, id, r)
                              : ncclInvalidUsage;
        if ((ce != cudaSuccess || nr != ncclSuccess) && st == ZB_OK)
            st = zb_fail(err, ZB_ERUNTIME, "ncclCommInitRank (rank %d on "
                         "device %d): %s", r, devices[r],
                         ce != cudaSuccess ? cudaGetErrorString(ce)
                                           : ncclGetErrorString(nr));
    }
    ZB_NCCL(ncclGroupEnd());
    ZB_TRY(st);
    ZB_TRY(split_all(sh->eps, world, ng, groups, err));
    return warm_lanes(sh->eps, world, stride, err);
}

extern "C" zb_status zb_nccl_threads_new(int world, const int *devices, int ng,
                                         const zb_group *groups,
                                         const int ring_slots[ZB_NCCL_RINGS],
                                         size_t max_msg_floats, int pipe_stride,
                                         zb_transport **ends, zb_err *err) {
    ZB_TRY(check_groups(ng, ring_slots, err));
    nccl_shared *sh;
    ZB_TRY(shared_new(world, &sh, err));
    zb_status st = make_threads(sh, devices, ng, groups, ring_slots,
                                max_msg_floats, pipe_stride, err);
    if (st != ZB_OK) {
        nc_abort(&sh->eps[0].t); /* abort, not destroy: a half-made world */
        shared_free(sh);
        return st;
    }
    for (int r = 0; r < world; r++) ends[r] = &sh->eps[r].t;
    return ZB_OK;
}

static zb_status make_one(nccl_shared *sh, int rank, int world, int device,
                          const unsigned char *id, int ng,
                          const zb_group *groups, const int *slots,
                          size_t max_msg_floats, int stride, zb_err *err) {
    nccl_ep *e = &sh->eps[0];
    e->device = device;
    e->ng = ng;
    memcpy(e->ring_n, slots, sizeof e->ring_n);
    e->max_msg_floats = max_msg_floats;
    e->shared = sh;
    ZB_TRY(ep_device_init(e, rank, world, err));
    ncclUniqueId u;
    memcpy(&u, id, sizeof u);
    ZB_NCCL(ncclCommInitRank(&e->world, world, u, rank));
    ZB_TRY(split_all(e, 1, ng, groups, err));
    return warm_lanes(e, 1, stride, err);
}

extern "C" zb_status zb_nccl_new(int rank, int world, int device,
                                 const unsigned char id[ZB_NCCL_ID_BYTES],
                                 int ng, const zb_group *groups,
                                 const int ring_slots[ZB_NCCL_RINGS],
                                 size_t max_msg_floats,
                                 int pipe_stride, zb_transport **out,
                                 zb_err *err) {
    *out = NULL;
    ZB_TRY(check_groups(ng, ring_slots, err));
    nccl_shared *sh;
    ZB_TRY(shared_new(1, &sh, err));
    zb_status st = make_one(sh, rank, world, device, id, ng, groups, ring_slots,
                            max_msg_floats, pipe_stride, err);
    if (st != ZB_OK) {
        nc_abort(&sh->eps[0].t); /* peers blocked in init are released */
        shared_free(sh);
        return st;
    }
    *out = &sh->eps[0].t;
    return ZB_OK;
}

extern "C" void zb_nccl_free(zb_transport *t) {
    if (!t) return;
    nccl_shared *sh = EP(t)->shared;
    /* threads: every endpoint points at the same shared block; free it
     * once, through the first endpoint */
    if (EP(t) != &sh->eps[0]) return;
    shared_free(sh);
}
