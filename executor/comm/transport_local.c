/* transport_local.c - the local transport (transport.h): every rank is a
 * thread of this process.
 *
 * Point-to-point: each rank has an inbox of max_msgs_per_rank slots of
 * max_msg_floats floats, all allocated by zb_local_world_new. send copies the
 * data into a free slot of the receiver's inbox and signals it; recv waits on
 * its own inbox until a slot with (peer, tag) is there, copies it out and
 * frees the slot. A full inbox is an error (the runtime sizes the inboxes
 * from the programs, so it means a bug), never a silent wait.
 *
 * Collectives: every member publishes a pointer to its own buffer, waits for
 * the others (barrier), then member i sums its slice i of the elements over
 * members 0, 1, ..., n-1 in that order and writes the sum into that slice of
 * every member's buffer; a second barrier ends the call. Each element is
 * summed by one thread in one fixed order, so all members get bitwise
 * identical results and every run the same ones; the slices run in parallel
 * and no staging buffer is needed (max_reduce_floats only bounds n; 0 = no
 * bound).
 *
 * Groups are identified by zb_group.id; their shared state lives in a table
 * allocated up front (room for 4*world+8 groups), claimed by the first member
 * that uses a group, which also allocates its member tables (n pointers and
 * lengths: no bound on the group size; nothing per rank grows with the
 * world).
 *
 * Abort sets a flag and wakes every waiter (inboxes and group barriers);
 * every call after it, and every wait it interrupts, fails with ZB_ERUNTIME.
 *
 * The inboxes, the group table with its barrier, and abort are the
 * rendezvous shared with the device-local transport (rendezvous.h); here
 * are the host copies and the float reduction.
 */
#include "executor/comm/transport.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "executor/comm/rendezvous.h"

struct zb_local_world {
    zb_rdv rdv;             /* inboxes, groups, abort (rendezvous.h) */
    int world;
    size_t max_msg_floats, max_reduce_floats;
    float *pool;            /* the slots' data */
    zb_transport *ends;     /* [world] */
};

static void local_abort(zb_transport *t) {
    zb_rdv_abort(&((zb_local_world *)t->impl)->rdv);
}

/* ---- point to point ---- */

static zb_status local_send(zb_transport *t, int peer, int tag,
                            const float *buf, size_t n, zb_err *err) {
    zb_local_world *w = t->impl;
    zb_rdv_inbox *in;
    zb_rdv_slot *s;
    ZB_TRY(zb_rdv_check_peer(&w->rdv, t, "send", peer, tag, n,
                             w->max_msg_floats, err));
    if (zb_rdv_is_aborted(&w->rdv)) return zb_rdv_aborted_err(t, err);
    ZB_TRY(zb_rdv_claim(&w->rdv, t, peer, tag, n, &in, &s, err));
    memcpy(s->data, buf, n * sizeof *buf);
    zb_rdv_post(in);
    return ZB_OK;
}

static zb_status local_recv(zb_transport *t, int peer, int tag, float *buf,
                            size_t n, zb_err *err) {
    zb_local_world *w = t->impl;
    zb_rdv_inbox *in;
    zb_rdv_slot *s;
    ZB_TRY(zb_rdv_check_peer(&w->rdv, t, "recv", peer, tag, n, 0, err));
    ZB_TRY(zb_rdv_take(&w->rdv, t, peer, tag, n, &in, &s, err));
    memcpy(buf, s->data, n * sizeof *buf);
    zb_rdv_release(in, s);
    return ZB_OK;
}

/* ---- groups ---- */

static zb_status local_barrier(zb_transport *t, const zb_group *g,
                               zb_err *err) {
    zb_local_world *w = t->impl;
    int me;
    zb_rdv_group *gs;
    ZB_TRY(zb_rdv_group_of(&w->rdv, t, g, &me, &gs, err));
    return zb_rdv_wait(&w->rdv, t, gs, err);
}

/* Sum slice [lo, hi) over the members' buffers in member order, then write
 * the sum back to every member. */
static void reduce_f32(void *const *bufs, int n, size_t lo, size_t hi) {
    for (size_t k = lo; k < hi; k++) {
        float s = ((float *)bufs[0])[k];
        for (int i = 1; i < n; i++) s += ((float *)bufs[i])[k];
        for (int i = 0; i < n; i++) ((float *)bufs[i])[k] = s;
    }
}

static zb_status allreduce_any(zb_transport *t, const zb_group *g, void *buf,
                               size_t n, bool f64, zb_err *err) {
    zb_local_world *w = t->impl;
    int me;
    zb_rdv_group *gs;
    if (w->max_reduce_floats && n > w->max_reduce_floats)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: all-reduce of %zu elements "
                       "exceeds the %zu the transport was sized for", t->rank,
                       n, w->max_reduce_floats);
    ZB_TRY(zb_rdv_group_of(&w->rdv, t, g, &me, &gs, err));
    if (g->n == 1) return ZB_OK;
    ZB_TRY(zb_rdv_publish(&w->rdv, t, gs, me, buf, n, err));
    size_t lo, hi;
    zb_rdv_slice(gs, me, n, &lo, &hi);
    if (f64) zb_rdv_sum_f64(gs, lo, hi);
    else reduce_f32(gs->bufs, g->n, lo, hi);
    return zb_rdv_wait(&w->rdv, t, gs, err);
}

static zb_status local_allreduce(zb_transport *t, const zb_group *g,
                                 float *buf, size_t n, zb_err *err) {
    return allreduce_any(t, g, buf, n, false, err);
}

static zb_status local_allreduce_f64(zb_transport *t, const zb_group *g,
                                     double *buf, size_t n, zb_err *err) {
    return allreduce_any(t, g, buf, n, true, err);
}

/* ---- world ---- */

static zb_status alloc_world(zb_local_world *w, int max_msgs, zb_err *err) {
    ZB_TRY(zb_rdv_init(&w->rdv, w->world, max_msgs, NULL, NULL, err));
    size_t slots = (size_t)w->world * (size_t)max_msgs;
    if (w->max_msg_floats && slots > SIZE_MAX / sizeof(float) / w->max_msg_floats)
        return zb_fail(err, ZB_ENOMEM, "local transport: message pool of "
                       "%zu x %zu floats is too large", slots, w->max_msg_floats);
    w->pool = zb_calloc(slots * w->max_msg_floats, sizeof(float), err);
    w->ends = w->pool ? zb_calloc((size_t)w->world, sizeof *w->ends, err) : NULL;
    if (!w->ends) return ZB_ENOMEM;
    for (size_t i = 0; i < slots; i++)
        w->rdv.slot_pool[i].data = w->pool + i * w->max_msg_floats;
    for (int r = 0; r < w->world; r++)
        w->ends[r] = (zb_transport){.rank = r, .world = w->world,
                                    .send = local_send, .recv = local_recv,
                                    .allreduce = local_allreduce,
                                    .allreduce_f64 = local_allreduce_f64,
                                    .barrier = local_barrier,
                                    .abort = local_abort, .impl = w};
    return ZB_OK;
}

zb_status zb_local_world_new(int world, int max_msgs_per_rank,
                             size_t max_msg_floats, size_t max_reduce_floats,
                             zb_local_world **out, zb_err *err) {
    *out = NULL;
    if (world < 1 || max_msgs_per_rank < 1)
        return zb_fail(err, ZB_ERUNTIME, "local transport: world (%d) and "
                       "messages per rank (%d) must be >= 1", world,
                       max_msgs_per_rank);
    zb_local_world *w = zb_calloc(1, sizeof *w, err);
    if (!w) return ZB_ENOMEM;
    w->world = world;
    w->max_msg_floats = max_msg_floats;
    w->max_reduce_floats = max_reduce_floats;
    zb_status st = alloc_world(w, max_msgs_per_rank, err);
    if (st != ZB_OK) {
        zb_local_world_free(w);
        return st;
    }
    *out = w;
    return ZB_OK;
}

void zb_local_world_free(zb_local_world *w) {
    if (!w) return;
    zb_rdv_destroy(&w->rdv);
    free(w->ends);
    free(w->pool);
    free(w);
}

zb_transport *zb_local_transport(zb_local_world *w, int rank) {
    if (!w || rank < 0 || rank >= w->world) return NULL;
    return &w->ends[rank];
}
