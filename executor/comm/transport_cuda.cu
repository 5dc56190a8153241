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
 */
extern "C" {
#include "executor/comm/transport.h"
}
#include "executor/host/cuda_util.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct dl_slot {
    bool used, ready;
    int from, tag;
    size_t n;
    float *data;            /* device, max_msg_floats */
    cudaEvent_t full, empty;
    bool empty_recorded;
};

struct dl_inbox {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    dl_slot *slots;         /* [max_msgs] */
};

struct dl_group {
    bool claimed;
    zb_group g;             /* as its first user named it */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int arrived;
    unsigned long gen;
    void **bufs;            /* [g.n] */
    size_t *lens;           /* [g.n] */
    bool *events_made;      /* [g.n] */
    cudaEvent_t *ready, *done; /* [g.n] */
};

/* Member pointers one reduction kernel takes (by value). */
#define ZB_DL_WINDOW 64

struct zb_cuda_world {
    int world, device, max_msgs;
    size_t max_msg_floats;
    float *pool;            /* device */
    dl_slot *slot_pool;     /* [world * max_msgs] */
    dl_inbox *inbox;        /* [world] */
    cudaStream_t *xfer;     /* [world] transfer streams */
    cudaEvent_t *src_ready; /* [world] sender's compute stream, per send */
    zb_transport *ends;     /* [world] */
    pthread_mutex_t mu;     /* group claims */
    dl_group *groups;
    int n_groups;
    int aborted;
};

static bool is_aborted(zb_cuda_world *w) {
    return __atomic_load_n(&w->aborted, __ATOMIC_ACQUIRE) != 0;
}

static zb_status aborted_err(zb_transport *t, zb_err *err) {
    return zb_fail(err, ZB_ERUNTIME,
                   "rank %d: transport aborted (another rank failed)", t->rank);
}

static void dl_abort(zb_transport *t) {
    zb_cuda_world *w = (zb_cuda_world *)t->impl;
    __atomic_store_n(&w->aborted, 1, __ATOMIC_RELEASE);
    for (int r = 0; r < w->world; r++) {
        pthread_mutex_lock(&w->inbox[r].mu);
        pthread_cond_broadcast(&w->inbox[r].cv);
        pthread_mutex_unlock(&w->inbox[r].mu);
    }
    for (int g = 0; g < w->n_groups; g++) {
        pthread_mutex_lock(&w->groups[g].mu);
        pthread_cond_broadcast(&w->groups[g].cv);
        pthread_mutex_unlock(&w->groups[g].mu);
    }
}

static zb_status need_stream(zb_transport *t, zb_err *err) {
    if (!t->stream)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: device transport used "
                       "before a CUDA stage set its compute stream", t->rank);
    return ZB_OK;
}

/* ---- point to point ---- */

/* Enqueue the copy of buf into slot s (inbox mutex held). */
static zb_status fill_slot(zb_transport *t, dl_slot *s, const float *buf,
                           size_t n, zb_err *err) {
    zb_cuda_world *w = (zb_cuda_world *)t->impl;
    cudaStream_t compute = (cudaStream_t)t->stream, xs = w->xfer[t->rank];
    ZB_CUDA(cudaEventRecord(w->src_ready[t->rank], compute));
    ZB_CUDA(cudaStreamWaitEvent(xs, w->src_ready[t->rank], 0));
    if (s->empty_recorded) ZB_CUDA(cudaStreamWaitEvent(xs, s->empty, 0));
    ZB_CUDA(cudaMemcpyAsync(s->data, buf, n * sizeof(float),
                            cudaMemcpyDeviceToDevice, xs));
    ZB_CUDA(cudaEventRecord(s->full, xs));
    ZB_CUDA(cudaStreamWaitEvent(compute, s->full, 0));
    return ZB_OK;
}

static zb_status dl_send(zb_transport *t, int peer, int tag, const float *buf,
                         size_t n, zb_err *err) {
    zb_cuda_world *w = (zb_cuda_world *)t->impl;
    if (peer < 0 || peer >= w->world)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: send to rank %d out of "
                       "range 0..%d", t->rank, peer, w->world - 1);
    if (n > w->max_msg_floats)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: send to rank %d tag %d: "
                       "%zu floats exceed the %zu the transport was sized for",
                       t->rank, peer, tag, n, w->max_msg_floats);
    ZB_TRY(need_stream(t, err));
    if (is_aborted(w)) return aborted_err(t, err);
    ZB_CUDA(cudaSetDevice(w->device));
    dl_inbox *in = &w->inbox[peer];
    pthread_mutex_lock(&in->mu);
    dl_slot *s = NULL;
    for (int i = 0; i < w->max_msgs && !s; i++)
        if (!in->slots[i].used) s = &in->slots[i];
    zb_status st = ZB_OK;
    if (!s)
        st = zb_fail(err, ZB_ERUNTIME, "rank %d: send to rank %d tag %d: "
                     "inbox full (%d messages in flight)", t->rank, peer, tag,
                     w->max_msgs);
    else
        st = fill_slot(t, s, buf, n, err);
    if (st == ZB_OK) {
        s->used = s->ready = true;
        s->from = t->rank;
        s->tag = tag;
        s->n = n;
        pthread_cond_broadcast(&in->cv);
    }
    pthread_mutex_unlock(&in->mu);
    return st;
}

static dl_slot *find_slot(zb_cuda_world *w, dl_inbox *in, int peer, int tag) {
    for (int i = 0; i < w->max_msgs; i++) {
        dl_slot *s = &in->slots[i];
        if (s->used && s->ready && s->from == peer && s->tag == tag) return s;
    }
    return NULL;
}

static zb_status drain_slot(zb_transport *t, dl_slot *s, float *buf, size_t n,
                            zb_err *err) {
    cudaStream_t compute = (cudaStream_t)t->stream;
    ZB_CUDA(cudaStreamWaitEvent(compute, s->full, 0));
    ZB_CUDA(cudaMemcpyAsync(buf, s->data, n * sizeof(float),
                            cudaMemcpyDeviceToDevice, compute));
    ZB_CUDA(cudaEventRecord(s->empty, compute));
    s->empty_recorded = true;
    return ZB_OK;
}

static zb_status dl_recv(zb_transport *t, int peer, int tag, float *buf,
                         size_t n, zb_err *err) {
    zb_cuda_world *w = (zb_cuda_world *)t->impl;
    if (peer < 0 || peer >= w->world)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: recv from rank %d out of "
                       "range 0..%d", t->rank, peer, w->world - 1);
    ZB_TRY(need_stream(t, err));
    ZB_CUDA(cudaSetDevice(w->device));
    dl_inbox *in = &w->inbox[t->rank];
    pthread_mutex_lock(&in->mu);
    dl_slot *s;
    while (!(s = find_slot(w, in, peer, tag)) && !is_aborted(w))
        pthread_cond_wait(&in->cv, &in->mu);
    if (!s) {
        pthread_mutex_unlock(&in->mu);
        return aborted_err(t, err);
    }
    zb_status st;
    if (s->n != n)
        st = zb_fail(err, ZB_ERUNTIME, "rank %d: message from rank %d tag %d "
                     "has %zu floats, rank %d expected %zu", t->rank, peer,
                     tag, s->n, t->rank, n);
    else
        st = drain_slot(t, s, buf, n, err);
    s->used = s->ready = false;
    pthread_cond_broadcast(&in->cv);
    pthread_mutex_unlock(&in->mu);
    return st;
}

/* ---- groups ---- */

static void group_tables_free(dl_group *gs) {
    free(gs->bufs);
    free(gs->lens);
    free(gs->events_made);
    free(gs->ready);
    free(gs->done);
    gs->bufs = NULL;
    gs->lens = NULL;
    gs->events_made = NULL;
    gs->ready = gs->done = NULL;
}

/* Claim a free entry of the table for g (w->mu held). */
static dl_group *claim(zb_cuda_world *w, const zb_group *g) {
    for (int i = 0; i < w->n_groups; i++) {
        dl_group *gs = &w->groups[i];
        if (gs->claimed) continue;
        size_t n = (size_t)g->n;
        gs->bufs = (void **)calloc(n, sizeof(void *));
        gs->lens = (size_t *)calloc(n, sizeof(size_t));
        gs->events_made = (bool *)calloc(n, sizeof(bool));
        gs->ready = (cudaEvent_t *)calloc(n, sizeof(cudaEvent_t));
        gs->done = (cudaEvent_t *)calloc(n, sizeof(cudaEvent_t));
        if (!gs->bufs || !gs->lens || !gs->events_made || !gs->ready || !gs->done) {
            group_tables_free(gs);
            return NULL;
        }
        gs->claimed = true;
        gs->g = *g;
        return gs;
    }
    return NULL;
}

static zb_status group_state(zb_transport *t, const zb_group *g,
                             dl_group **out, zb_err *err) {
    zb_cuda_world *w = (zb_cuda_world *)t->impl;
    dl_group *gs = NULL;
    pthread_mutex_lock(&w->mu);
    for (int i = 0; i < w->n_groups && !gs; i++)
        if (w->groups[i].claimed && w->groups[i].g.id == g->id) gs = &w->groups[i];
    if (!gs) gs = claim(w, g);
    pthread_mutex_unlock(&w->mu);
    if (!gs)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: group %d: no room (%d "
                       "groups) or no memory for its %d members", t->rank,
                       g->id, w->n_groups, g->n);
    if (gs->g.n != g->n || gs->g.first != g->first ||
        (g->n > 1 && gs->g.stride != g->stride))
        return zb_fail(err, ZB_ERUNTIME, "rank %d: group %d used with "
                       "different members by different ranks", t->rank, g->id);
    *out = gs;
    return ZB_OK;
}

static zb_status group_wait(zb_transport *t, dl_group *gs, zb_err *err) {
    zb_cuda_world *w = (zb_cuda_world *)t->impl;
    pthread_mutex_lock(&gs->mu);
    unsigned long gen = gs->gen;
    if (++gs->arrived == gs->g.n) {
        gs->arrived = 0;
        gs->gen++;
        pthread_cond_broadcast(&gs->cv);
    } else {
        while (gen == gs->gen && !is_aborted(w))
            pthread_cond_wait(&gs->cv, &gs->mu);
    }
    bool done = gen != gs->gen;
    pthread_mutex_unlock(&gs->mu);
    return done && !is_aborted(w) ? ZB_OK : aborted_err(t, err);
}

static zb_status dl_barrier(zb_transport *t, const zb_group *g, zb_err *err) {
    int me;
    dl_group *gs;
    ZB_TRY(zb_group_member(t, g, &me, err));
    if (is_aborted((zb_cuda_world *)t->impl)) return aborted_err(t, err);
    ZB_TRY(group_state(t, g, &gs, err));
    return group_wait(t, gs, err);
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
static zb_status reduce_slice(dl_group *gs, cudaStream_t st, size_t lo,
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
static zb_status reduce_on_device(zb_transport *t, dl_group *gs, int me,
                                  size_t n, zb_err *err) {
    cudaStream_t st = (cudaStream_t)t->stream;
    int members = gs->g.n;
    for (int i = 0; i < members; i++)
        ZB_CUDA(cudaStreamWaitEvent(st, gs->ready[i], 0));
    size_t lo = n * (size_t)me / (size_t)members;
    size_t hi = n * (size_t)(me + 1) / (size_t)members;
    if (hi > lo) ZB_TRY(reduce_slice(gs, st, lo, hi, err));
    ZB_CUDA(cudaEventRecord(gs->done[me], st));
    ZB_TRY(group_wait(t, gs, err));
    for (int i = 0; i < members; i++)
        ZB_CUDA(cudaStreamWaitEvent(st, gs->done[i], 0));
    return ZB_OK;
}

static zb_status dl_allreduce(zb_transport *t, const zb_group *g, float *buf,
                              size_t n, zb_err *err) {
    zb_cuda_world *w = (zb_cuda_world *)t->impl;
    int me;
    dl_group *gs;
    ZB_TRY(zb_group_member(t, g, &me, err));
    ZB_TRY(need_stream(t, err));
    if (is_aborted(w)) return aborted_err(t, err);
    ZB_TRY(group_state(t, g, &gs, err));
    if (g->n == 1) return ZB_OK;
    ZB_CUDA(cudaSetDevice(w->device));
    if (!gs->events_made[me]) { /* first use of this group by this member */
        ZB_CUDA(cudaEventCreateWithFlags(&gs->ready[me], cudaEventDisableTiming));
        ZB_CUDA(cudaEventCreateWithFlags(&gs->done[me], cudaEventDisableTiming));
        gs->events_made[me] = true;
    }
    ZB_CUDA(cudaEventRecord(gs->ready[me], (cudaStream_t)t->stream));
    gs->bufs[me] = buf;
    gs->lens[me] = n;
    ZB_TRY(group_wait(t, gs, err));
    for (int i = 0; i < g->n; i++)
        if (gs->lens[i] != n) {
            zb_fail(err, ZB_ERUNTIME, "rank %d: all-reduce on group %d: "
                    "rank %d passes %zu elements, rank %d passes %zu", t->rank,
                    g->id, zb_group_rank(g, i), gs->lens[i], t->rank, n);
            group_wait(t, gs, NULL);
            return ZB_ERUNTIME;
        }
    return reduce_on_device(t, gs, me, n, err);
}

/* Host doubles, as in the local transport. */
static zb_status dl_allreduce_f64(zb_transport *t, const zb_group *g,
                                  double *buf, size_t n, zb_err *err) {
    zb_cuda_world *w = (zb_cuda_world *)t->impl;
    int me;
    dl_group *gs;
    ZB_TRY(zb_group_member(t, g, &me, err));
    if (is_aborted(w)) return aborted_err(t, err);
    ZB_TRY(group_state(t, g, &gs, err));
    if (g->n == 1) return ZB_OK;
    gs->bufs[me] = buf;
    gs->lens[me] = n;
    ZB_TRY(group_wait(t, gs, err));
    for (int i = 0; i < g->n; i++)
        if (gs->lens[i] != n) {
            zb_fail(err, ZB_ERUNTIME, "rank %d: all-reduce on group %d: "
                    "rank %d passes %zu elements, rank %d passes %zu", t->rank,
                    g->id, zb_group_rank(g, i), gs->lens[i], t->rank, n);
            group_wait(t, gs, NULL);
            return ZB_ERUNTIME;
        }
    size_t lo = n * (size_t)me / (size_t)g->n, hi = n * (size_t)(me + 1) / (size_t)g->n;
    for (size_t k = lo; k < hi; k++) {
        double s = ((double *)gs->bufs[0])[k];
        for (int i = 1; i < g->n; i++) s += ((double *)gs->bufs[i])[k];
        for (int i = 0; i < g->n; i++) ((double *)gs->bufs[i])[k] = s;
    }
    return group_wait(t, gs, err);
}

/* ---- world ---- */

static zb_status alloc_device(zb_cuda_world *w, zb_err *err) {
    size_t slots = (size_t)w->world * (size_t)w->max_msgs;
    size_t bytes = slots * w->max_msg_floats * sizeof(float);
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
        dl_slot *s = &w->slot_pool[i];
        s->data = w->pool + i * w->max_msg_floats;
        ZB_CUDA(cudaEventCreateWithFlags(&s->full, cudaEventDisableTiming));
        ZB_CUDA(cudaEventCreateWithFlags(&s->empty, cudaEventDisableTiming));
    }
    for (int r = 0; r < w->world; r++) {
        ZB_CUDA(cudaStreamCreateWithFlags(&w->xfer[r], cudaStreamNonBlocking));
        ZB_CUDA(cudaEventCreateWithFlags(&w->src_ready[r], cudaEventDisableTiming));
    }
    return ZB_OK;
}

static zb_status alloc_world(zb_cuda_world *w, zb_err *err) {
    size_t slots = (size_t)w->world * (size_t)w->max_msgs;
    w->slot_pool = (dl_slot *)zb_calloc(slots, sizeof(dl_slot), err);
    w->inbox = (dl_inbox *)zb_calloc((size_t)w->world, sizeof(dl_inbox), err);
    w->ends = (zb_transport *)zb_calloc((size_t)w->world, sizeof(zb_transport), err);
    w->xfer = (cudaStream_t *)zb_calloc((size_t)w->world, sizeof(cudaStream_t), err);
    w->src_ready = (cudaEvent_t *)zb_calloc((size_t)w->world, sizeof(cudaEvent_t), err);
    w->n_groups = 4 * w->world + 8;
    w->groups = (dl_group *)zb_calloc((size_t)w->n_groups, sizeof(dl_group), err);
    if (!w->slot_pool || !w->inbox || !w->ends || !w->xfer || !w->src_ready ||
        !w->groups) {
        w->n_groups = 0;
        return ZB_ENOMEM;
    }
    pthread_mutex_init(&w->mu, NULL);
    for (int r = 0; r < w->world; r++) {
        pthread_mutex_init(&w->inbox[r].mu, NULL);
        pthread_cond_init(&w->inbox[r].cv, NULL);
        w->inbox[r].slots = w->slot_pool + (size_t)r * (size_t)w->max_msgs;
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
    for (int g = 0; g < w->n_groups; g++) {
        pthread_mutex_init(&w->groups[g].mu, NULL);
        pthread_cond_init(&w->groups[g].cv, NULL);
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
    w->max_msgs = max_msgs_per_rank;
    w->max_msg_floats = max_msg_floats;
    zb_status st = alloc_world(w, err);
    if (st != ZB_OK) {
        zb_cuda_world_free(w);
        return st;
    }
    *out = w;
    return ZB_OK;
}

extern "C" void zb_cuda_world_free(zb_cuda_world *w) {
    if (!w) return;
    if (w->groups && w->n_groups) {
        cudaSetDevice(w->device);
        cudaDeviceSynchronize(); /* nothing may still use pool or events */
        size_t slots = (size_t)w->world * (size_t)w->max_msgs;
        for (size_t i = 0; i < slots; i++) {
            if (w->slot_pool[i].full) cudaEventDestroy(w->slot_pool[i].full);
            if (w->slot_pool[i].empty) cudaEventDestroy(w->slot_pool[i].empty);
        }
        for (int r = 0; r < w->world; r++) {
            if (w->xfer[r]) cudaStreamDestroy(w->xfer[r]);
            if (w->src_ready[r]) cudaEventDestroy(w->src_ready[r]);
            pthread_mutex_destroy(&w->inbox[r].mu);
            pthread_cond_destroy(&w->inbox[r].cv);
        }
        for (int g = 0; g < w->n_groups; g++) {
            for (int i = 0; w->groups[g].claimed && i < w->groups[g].g.n; i++)
                if (w->groups[g].events_made[i]) {
                    cudaEventDestroy(w->groups[g].ready[i]);
                    cudaEventDestroy(w->groups[g].done[i]);
                }
            group_tables_free(&w->groups[g]);
            pthread_mutex_destroy(&w->groups[g].mu);
            pthread_cond_destroy(&w->groups[g].cv);
        }
        pthread_mutex_destroy(&w->mu);
        if (w->pool) cudaFree(w->pool);
    }
    free(w->groups);
    free(w->ends);
    free(w->inbox);
    free(w->slot_pool);
    free(w->xfer);
    free(w->src_ready);
    free(w);
}

extern "C" zb_transport *zb_cuda_transport(zb_cuda_world *w, int rank) {
    if (!w || rank < 0 || rank >= w->world) return NULL;
    return &w->ends[rank];
}
