/* transport_cuda.cu - the device-local transport (transport.h): every rank
 * is a thread of this process and all ranks share one CUDA device, so
 * messages are device-to-device copies and reductions are kernels reading
 * the members' buffers in place. Nothing here blocks the host on the
 * device: order comes from events.
 *
 * Point-to-point: each rank has an inbox of max_msgs slots in one device
 * pool. send claims a free slot of the receiver (host mutex), makes its
 * transfer stream wait for the sender's compute stream and for the slot's
 * last reader (event `empty`), copies buf into the slot, records `full`,
 * and makes the sender's compute stream wait for `full` before anything
 * that may overwrite buf. recv waits on the host for the slot, makes its
 * compute stream wait for `full`, copies out, records `empty`, frees the
 * slot. A full inbox is an error (the runtime sizes it from the programs).
 *
 * Collectives (same shape as transport_local.c): each member records
 * `ready` on its stream and publishes its buffer; host barrier; each member
 * makes its stream wait for every member's `ready` and launches kernels
 * summing its slice of the elements over members 0, 1, ... in that order
 * (windows of ZB_DL_WINDOW members per kernel, the running sum kept in
 * member 0's slice, whose own value the first window already read) and
 * writing the sum into every member's buffer; records `done`; host
 * barrier; waits for every member's `done` (peers wrote into its buffer).
 * A group's member tables (buffers, lengths, events) are allocated when
 * its first member uses it: any group size, nothing per rank grows with
 * the world.
 * Events are per group and member, so a re-record can only happen after
 * the group's next barrier, when every peer has enqueued its waits.
 * allreduce_f64 and barrier are host operations, as in the local transport.
 *
 * Abort sets a flag and wakes every host waiter; calls then fail.
 *
 * The inboxes, the group table with its barrier, and abort are the
 * rendezvous shared with the local transport (rendezvous.h); here are the
 * device copies, their events and the reduction kernels.
 */
extern "C" {
#include "executor/comm/rendezvous.h"
#include "executor/comm/transport.h"
}
#include "executor/host/cuda_util.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A slot's events (zb_rdv_slot.ext). */
struct dl_slot_ev {
    cudaEvent_t full, empty;
    bool empty_recorded;
};

/* A group's per-member events (zb_rdv_group.ext), made on first use. */
struct dl_group_ev {
    bool *made;                /* [n] */
    cudaEvent_t *ready, *done; /* [n] */
};

/* Member pointers one reduction kernel takes (by value). */
#define ZB_DL_WINDOW 64

struct zb_cuda_world {
    zb_rdv rdv;             /* inboxes, groups, abort (rendezvous.h) */
    int world, device;
    size_t max_msg_floats;
    float *pool;            /* device: the slots' data */
    dl_slot_ev *slot_ev;    /* [world * max_msgs] */
    cudaStream_t *xfer;     /* [world] transfer streams */
    cudaEvent_t *src_ready; /* [world] sender's compute stream, per send */
    zb_transport *ends;     /* [world] */
};

static void dl_abort(zb_transport *t) {
    zb_rdv_abort(&((zb_cuda_world *)t->impl)->rdv);
}

static zb_status need_stream(zb_transport *t, zb_err *err) {
    if (!t->stream)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: device transport used "
                       "before a CUDA stage set its compute stream", t->rank);
    return ZB_OK;
}

/* ---- point to point ---- */

/* Enqueue the copy of buf into slot s (inbox mutex held). */
static zb_status fill_slot(zb_transport *t, zb_rdv_slot *s, const float *buf,
                           size_t n, zb_err *err) {
    zb_cuda_world *w = (zb_cuda_world *)t->impl;
    dl_slot_ev *ev = (dl_slot_ev *)s->ext;
    cudaStream_t compute = (cudaStream_t)t->stream, xs = w->xfer[t->rank];
    ZB_CUDA(cudaEventRecord(w->src_ready[t->rank], compute));
    ZB_CUDA(cudaStreamWaitEvent(xs, w->src_ready[t->rank], 0));
    if (ev->empty_recorded) ZB_CUDA(cudaStreamWaitEvent(xs, ev->empty, 0));
    ZB_CUDA(cudaMemcpyAsync(s->data, buf, n * sizeof(float),
                            cudaMemcpyDeviceToDevice, xs));
    ZB_CUDA(cudaEventRecord(ev->full, xs));
    ZB_CUDA(cudaStreamWaitEvent(compute, ev->full, 0));
    return ZB_OK;
}

static zb_status dl_send(zb_transport *t, int peer, int tag, const float *buf,
                         size_t n, zb_err *err) {
    zb_cuda_world *w = (zb_cuda_world *)t->impl;
    zb_rdv_inbox *in;
    zb_rdv_slot *s;
    ZB_TRY(zb_rdv_check_peer(&w->rdv, t, "send", peer, tag, n,
                             w->max_msg_floats, err));
    ZB_TRY(need_stream(t, err));
    if (zb_rdv_is_aborted(&w->rdv)) return zb_rdv_aborted_err(t, err);
    ZB_CUDA(cudaSetDevice(w->device));
    ZB_TRY(zb_rdv_claim(&w->rdv, t, peer, tag, n, &in, &s, err));
    zb_status st = fill_slot(t, s, buf, n, err);
    if (st == ZB_OK) zb_rdv_post(in);
    else zb_rdv_unclaim(in, s);
    return st;
}

/* Enqueue the copy out of slot s into buf (inbox mutex held). */
static zb_status drain_slot(zb_transport *t, zb_rdv_slot *s, float *buf,
                            size_t n, zb_err *err) {
    dl_slot_ev *ev = (dl_slot_ev *)s->ext;
    cudaStream_t compute = (cudaStream_t)t->stream;
    ZB_CUDA(cudaStreamWaitEvent(compute, ev->full, 0));
    ZB_CUDA(cudaMemcpyAsync(buf, s->data, n * sizeof(float),
                            cudaMemcpyDeviceToDevice, compute));
    ZB_CUDA(cudaEventRecord(ev->empty, compute));
    ev->empty_recorded = true;
    return ZB_OK;
}

static zb_status dl_recv(zb_transport *t, int peer, int tag, float *buf,
                         size_t n, zb_err *err) {
    zb_cuda_world *w = (zb_cuda_world *)t->impl;
    zb_rdv_inbox *in;
    zb_rdv_slot *s;
    ZB_TRY(zb_rdv_check_peer(&w->rdv, t, "recv", peer, tag, n, 0, err));
    ZB_TRY(need_stream(t, err));
    ZB_CUDA(cudaSetDevice(w->device));
    ZB_TRY(zb_rdv_take(&w->rdv, t, peer, tag, n, &in, &s, err));
    zb_status st = drain_slot(t, s, buf, n, err);
    zb_rdv_release(in, s);
    return st;
}

/* ---- groups ---- */

static void group_ev_free(void *ext, int n) {
    dl_group_ev *e = (dl_group_ev *)ext;
    for (int i = 0; e->made && i < n; i++)
        if (e->made[i]) {
            cudaEventDestroy(e->ready[i]);
            cudaEventDestroy(e->done[i]);
        }
    free(e->made);
    free(e->ready);
    free(e->done);
    free(e);
}

static void *group_ev_new(int n) {
    dl_group_ev *e = (dl_group_ev *)calloc(1, sizeof *e);
    if (!e) return NULL;
    e->made = (bool *)calloc((size_t)n, sizeof(bool));
    e->ready = (cudaEvent_t *)calloc((size_t)n, sizeof(cudaEvent_t));
    e->done = (cudaEvent_t *)calloc((size_t)n, sizeof(cudaEvent_t));
    if (!e->made || !e->ready || !e->done) {
        group_ev_free(e, 0);
        return NULL;
    }
    return e;
}

static zb_status dl_barrier(zb_transport *t, const zb_group *g, zb_err *err) {
    zb_cuda_world *w = (zb_cuda_world *)t->impl;
    int me;
    zb_rdv_group *gs;
    ZB_TRY(zb_rdv_group_of(&w->rdv, t, g, &me, &gs, err));
    return zb_rdv_wait(&w->rdv, t, gs, err);
}

struct dl_bufs {
    float *p[ZB_DL_WINDOW];
};

/* Elements [lo, hi) of one window of cnt members: first window: acc =
 * p[0] + p[1] + ... in order; later ones: acc += p[0] + ... in order (acc
 * is member 0's buffer, read by the first window before it is written). */
__global__ static void reduce_window(dl_bufs b, int cnt, bool first,
                                     float *acc, size_t lo, size_t hi) {
    for (size_t k = lo + blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < hi;
         k += (size_t)gridDim.x * blockDim.x) {
        float s = first ? b.p[0][k] : acc[k];
        for (int i = first ? 1 : 0; i < cnt; i++) s += b.p[i][k];
        acc[k] = s;
    }
}

/* Elements [lo, hi): the sum in acc copied into cnt members' buffers. */
__global__ static void broadcast_window(dl_bufs b, int cnt, const float *acc,
                                        size_t lo, size_t hi) {
    for (size_t k = lo + blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < hi;
         k += (size_t)gridDim.x * blockDim.x) {
        float s = acc[k];
        for (int i = 0; i < cnt; i++) b.p[i][k] = s;
    }
}

/* This member's slice [lo, hi) summed over all members in order, then
 * written to every member, in windows of ZB_DL_WINDOW members. */
static zb_status reduce_slice(zb_rdv_group *gs, cudaStream_t st, size_t lo,
                              size_t hi, zb_err *err) {
    size_t blocks = (hi - lo + 255) / 256;
    unsigned grid = (unsigned)(blocks < 1024 ? blocks : 1024);
    float *acc = (float *)gs->bufs[0];
    for (int pass = 0; pass < 2; pass++)
        for (int w0 = 0; w0 < gs->g.n; w0 += ZB_DL_WINDOW) {
            int cnt = gs->g.n - w0 < ZB_DL_WINDOW ? gs->g.n - w0 : ZB_DL_WINDOW;
            dl_bufs b;
            for (int i = 0; i < cnt; i++) b.p[i] = (float *)gs->bufs[w0 + i];
            if (pass == 0)
                reduce_window<<<grid, 256, 0, st>>>(b, cnt, w0 == 0, acc, lo, hi);
            else
                broadcast_window<<<grid, 256, 0, st>>>(b, cnt, acc, lo, hi);
            ZB_CUDA(cudaGetLastError());
        }
    return ZB_OK;
}

/* Both barriers of one device all-reduce, after the length check. */
static zb_status reduce_on_device(zb_transport *t, zb_rdv_group *gs, int me,
                                  size_t n, zb_err *err) {
    zb_cuda_world *w = (zb_cuda_world *)t->impl;
    dl_group_ev *ev = (dl_group_ev *)gs->ext;
    cudaStream_t st = (cudaStream_t)t->stream;
    int members = gs->g.n;
    for (int i = 0; i < members; i++)
        ZB_CUDA(cudaStreamWaitEvent(st, ev->ready[i], 0));
    size_t lo, hi;
    zb_rdv_slice(gs, me, n, &lo, &hi);
    if (hi > lo) ZB_TRY(reduce_slice(gs, st, lo, hi, err));
    ZB_CUDA(cudaEventRecord(ev->done[me], st));
    ZB_TRY(zb_rdv_wait(&w->rdv, t, gs, err));
    for (int i = 0; i < members; i++)
        ZB_CUDA(cudaStreamWaitEvent(st, ev->done[i], 0));
    return ZB_OK;
}

static zb_status dl_allreduce(zb_transport *t, const zb_group *g, float *buf,
                              size_t n, zb_err *err) {
    zb_cuda_world *w = (zb_cuda_world *)t->impl;
    int me;
    zb_rdv_group *gs;
    ZB_TRY(need_stream(t, err));
    ZB_TRY(zb_rdv_group_of(&w->rdv, t, g, &me, &gs, err));
    if (g->n == 1) return ZB_OK;
    ZB_CUDA(cudaSetDevice(w->device));
    dl_group_ev *ev = (dl_group_ev *)gs->ext;
    if (!ev->made[me]) { /* first use of this group by this member */
        ZB_CUDA(cudaEventCreateWithFlags(&ev->ready[me], cudaEventDisableTiming));
        ZB_CUDA(cudaEventCreateWithFlags(&ev->done[me], cudaEventDisableTiming));
        ev->made[me] = true;
    }
    ZB_CUDA(cudaEventRecord(ev->ready[me], (cudaStream_t)t->stream));
    ZB_TRY(zb_rdv_publish(&w->rdv, t, gs, me, buf, n, err));
    return reduce_on_device(t, gs, me, n, err);
}

/* Host doubles, as in the local transport. */
static zb_status dl_allreduce_f64(zb_transport *t, const zb_group *g,
                                  double *buf, size_t n, zb_err *err) {
    zb_cuda_world *w = (zb_cuda_world *)t->impl;
    int me;
    zb_rdv_group *gs;
    ZB_TRY(zb_rdv_group_of(&w->rdv, t, g, &me, &gs, err));
    if (g->n == 1) return ZB_OK;
    ZB_TRY(zb_rdv_publish(&w->rdv, t, gs, me, buf, n, err));
    size_t lo, hi;
    zb_rdv_slice(gs, me, n, &lo, &hi);
    zb_rdv_sum_f64(gs, lo, hi);
    return zb_rdv_wait(&w->rdv, t, gs, err);
}

/* ---- world ---- */

static zb_status alloc_device(zb_cuda_world *w, zb_err *err) {
    size_t slots = (size_t)w->world * (size_t)w->rdv.max_msgs;
    size_t bytes = zb_staging_ring_bytes(slots, w->max_msg_floats);
    ZB_CUDA(cudaSetDevice(w->device));
    cudaError_t e = cudaMalloc((void **)&w->pool, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        size_t free_b = 0, total_b = 0;
        cudaMemGetInfo(&free_b, &total_b);
        w->pool = NULL;
        return zb_fail(err, ZB_ERUNTIME, "device transport: cannot allocate "
                       "the message pool on device %d: %zu bytes asked, %zu "
                       "free (%s)", w->device, bytes, free_b,
                       cudaGetErrorString(e));
    }
    for (size_t i = 0; i < slots; i++) {
        dl_slot_ev *ev = &w->slot_ev[i];
        w->rdv.slot_pool[i].data = w->pool + i * w->max_msg_floats;
        w->rdv.slot_pool[i].ext = ev;
        ZB_CUDA(cudaEventCreateWithFlags(&ev->full, cudaEventDisableTiming));
        ZB_CUDA(cudaEventCreateWithFlags(&ev->empty, cudaEventDisableTiming));
    }
    for (int r = 0; r < w->world; r++) {
        ZB_CUDA(cudaStreamCreateWithFlags(&w->xfer[r], cudaStreamNonBlocking));
        ZB_CUDA(cudaEventCreateWithFlags(&w->src_ready[r], cudaEventDisableTiming));
    }
    return ZB_OK;
}

static zb_status alloc_world(zb_cuda_world *w, int max_msgs, zb_err *err) {
    ZB_TRY(zb_rdv_init(&w->rdv, w->world, max_msgs, group_ev_new,
                       group_ev_free, err));
    size_t slots = (size_t)w->world * (size_t)max_msgs;
    w->slot_ev = (dl_slot_ev *)zb_calloc(slots, sizeof(dl_slot_ev), err);
    w->ends = (zb_transport *)zb_calloc((size_t)w->world, sizeof(zb_transport), err);
    w->xfer = (cudaStream_t *)zb_calloc((size_t)w->world, sizeof(cudaStream_t), err);
    w->src_ready = (cudaEvent_t *)zb_calloc((size_t)w->world, sizeof(cudaEvent_t), err);
    if (!w->slot_ev || !w->ends || !w->xfer || !w->src_ready) return ZB_ENOMEM;
    for (int r = 0; r < w->world; r++) {
        zb_transport *t = &w->ends[r];
        memset(t, 0, sizeof *t);
        t->rank = r;
        t->world = w->world;
        t->send = dl_send;
        t->recv = dl_recv;
        t->allreduce = dl_allreduce;
        t->allreduce_f64 = dl_allreduce_f64;
        t->barrier = dl_barrier;
        t->abort = dl_abort;
        t->impl = w;
    }
    return alloc_device(w, err);
}

extern "C" zb_status zb_cuda_world_new(int world, int device,
                                       int max_msgs_per_rank,
                                       size_t max_msg_floats,
                                       zb_cuda_world **out, zb_err *err) {
    *out = NULL;
    if (world < 1 || max_msgs_per_rank < 1)
        return zb_fail(err, ZB_ERUNTIME, "device transport: world (%d) and "
                       "messages per rank (%d) must be >= 1", world,
                       max_msgs_per_rank);
    zb_cuda_world *w = (zb_cuda_world *)zb_calloc(1, sizeof *w, err);
    if (!w) return ZB_ENOMEM;
    w->world = world;
    w->device = device;
    w->max_msg_floats = max_msg_floats;
    zb_status st = alloc_world(w, max_msgs_per_rank, err);
    if (st != ZB_OK) {
        zb_cuda_world_free(w);
        return st;
    }
    *out = w;
    return ZB_OK;
}

extern "C" void zb_cuda_world_free(zb_cuda_world *w) {
    if (!w) return;
    if (w->slot_ev) {
        cudaSetDevice(w->device);
        cudaDeviceSynchronize(); /* nothing may still use pool or events */
        size_t slots = (size_t)w->world * (size_t)w->rdv.max_msgs;
        for (size_t i = 0; i < slots; i++) {
            if (w->slot_ev[i].full) cudaEventDestroy(w->slot_ev[i].full);
            if (w->slot_ev[i].empty) cudaEventDestroy(w->slot_ev[i].empty);
        }
    }
    for (int r = 0; w->xfer && w->src_ready && r < w->world; r++) {
        if (w->xfer[r]) cudaStreamDestroy(w->xfer[r]);
        if (w->src_ready[r]) cudaEventDestroy(w->src_ready[r]);
    }
    zb_rdv_destroy(&w->rdv);  /* the groups' events too (group_ev_free) */
    if (w->pool) cudaFree(w->pool);
    free(w->ends);
    free(w->slot_ev);
    free(w->xfer);
    free(w->src_ready);
    free(w);
}

extern "C" zb_transport *zb_cuda_transport(zb_cuda_world *w, int rank) {
    if (!w || rank < 0 || rank >= w->world) return NULL;
    return &w->ends[rank];
}
