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
 */
#include "executor/comm/transport.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    bool used;
    int from, tag;
    size_t n;
    float *data;            /* max_msg_floats, inside world->pool */
} zb_slot;

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    zb_slot *slots;         /* [max_msgs] */
} zb_inbox;

typedef struct {
    bool claimed;
    zb_group g;             /* as its first user named it */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int arrived;            /* barrier: members arrived in this generation */
    unsigned long gen;      /* barrier: generation number */
    void **bufs;            /* [g.n] collective: member buffers */
    size_t *lens;           /* [g.n] collective: member element counts */
} zb_gstate;

struct zb_local_world {
    int world, max_msgs;
    size_t max_msg_floats, max_reduce_floats;
    float *pool;
    zb_slot *slot_pool;
    zb_inbox *inbox;        /* [world] */
    zb_transport *ends;     /* [world] */
    pthread_mutex_t mu;     /* guards the group table claims */
    zb_gstate *groups;      /* [n_groups] */
    int n_groups;
    volatile int aborted;   /* read under a mutex where it matters */
};

/* ---- abort ---- */

static bool is_aborted(zb_local_world *w) {
    return __atomic_load_n(&w->aborted, __ATOMIC_ACQUIRE) != 0;
}

static zb_status aborted_err(zb_transport *t, zb_err *err) {
    return zb_fail(err, ZB_ERUNTIME,
                   "rank %d: transport aborted (another rank failed)", t->rank);
}

static void local_abort(zb_transport *t) {
    zb_local_world *w = t->impl;
    __atomic_store_n(&w->aborted, 1, __ATOMIC_RELEASE);
    /* Lock each mutex before broadcasting so no waiter misses the wakeup
     * between its check of the flag and its wait. */
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

/* ---- point to point ---- */

static zb_status local_send(zb_transport *t, int peer, int tag,
                            const float *buf, size_t n, zb_err *err) {
    zb_local_world *w = t->impl;
    if (peer < 0 || peer >= w->world)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: send to rank %d out of "
                       "range 0..%d", t->rank, peer, w->world - 1);
    if (n > w->max_msg_floats)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: send to rank %d tag %d: "
                       "%zu floats exceed the %zu the transport was sized for",
                       t->rank, peer, tag, n, w->max_msg_floats);
    if (is_aborted(w)) return aborted_err(t, err);
    zb_inbox *in = &w->inbox[peer];
    pthread_mutex_lock(&in->mu);
    zb_slot *slot = NULL;
    for (int i = 0; i < w->max_msgs && !slot; i++)
        if (!in->slots[i].used) slot = &in->slots[i];
    if (!slot) {
        pthread_mutex_unlock(&in->mu);
        return zb_fail(err, ZB_ERUNTIME, "rank %d: send to rank %d tag %d: "
                       "inbox full (%d messages in flight)", t->rank, peer,
                       tag, w->max_msgs);
    }
    memcpy(slot->data, buf, n * sizeof *buf);
    slot->used = true;
    slot->from = t->rank;
    slot->tag = tag;
    slot->n = n;
    pthread_cond_broadcast(&in->cv);
    pthread_mutex_unlock(&in->mu);
    return ZB_OK;
}

static zb_slot *find_slot(zb_local_world *w, zb_inbox *in, int peer, int tag) {
    for (int i = 0; i < w->max_msgs; i++) {
        zb_slot *s = &in->slots[i];
        if (s->used && s->from == peer && s->tag == tag) return s;
    }
    return NULL;
}

static zb_status local_recv(zb_transport *t, int peer, int tag, float *buf,
                            size_t n, zb_err *err) {
    zb_local_world *w = t->impl;
    if (peer < 0 || peer >= w->world)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: recv from rank %d out of "
                       "range 0..%d", t->rank, peer, w->world - 1);
    zb_inbox *in = &w->inbox[t->rank];
    pthread_mutex_lock(&in->mu);
    zb_slot *s;
    while (!(s = find_slot(w, in, peer, tag)) && !is_aborted(w))
        pthread_cond_wait(&in->cv, &in->mu);
    if (!s) {
        pthread_mutex_unlock(&in->mu);
        return aborted_err(t, err);
    }
    zb_status st = ZB_OK;
    if (s->n != n)
        st = zb_fail(err, ZB_ERUNTIME, "rank %d: message from rank %d tag %d "
                     "has %zu floats, rank %d expected %zu", t->rank, peer,
                     tag, s->n, t->rank, n);
    else
        memcpy(buf, s->data, n * sizeof *buf);
    s->used = false;
    pthread_mutex_unlock(&in->mu);
    return st;
}

/* ---- groups ---- */

/* Claim a free entry of the table for g (w->mu held). */
static zb_gstate *claim(zb_local_world *w, const zb_group *g) {
    for (int i = 0; i < w->n_groups; i++) {
        zb_gstate *gs = &w->groups[i];
        if (gs->claimed) continue;
        gs->bufs = calloc((size_t)g->n, sizeof *gs->bufs);
        gs->lens = calloc((size_t)g->n, sizeof *gs->lens);
        if (!gs->bufs || !gs->lens) {
            free(gs->bufs);
            free(gs->lens);
            gs->bufs = NULL;
            gs->lens = NULL;
            return NULL;
        }
        gs->claimed = true;
        gs->g = *g;
        return gs;
    }
    return NULL;
}

/* The shared state of group g, claimed on first use. */
static zb_status group_state(zb_transport *t, const zb_group *g,
                             zb_gstate **out, zb_err *err) {
    zb_local_world *w = t->impl;
    zb_gstate *gs = NULL;
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

/* Wait until all gs->n members arrive (or abort). */
static zb_status group_wait(zb_transport *t, zb_gstate *gs, zb_err *err) {
    zb_local_world *w = t->impl;
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

static zb_status local_barrier(zb_transport *t, const zb_group *g,
                               zb_err *err) {
    int me;
    zb_gstate *gs;
    ZB_TRY(zb_group_member(t, g, &me, err));
    if (is_aborted(t->impl)) return aborted_err(t, err);
    ZB_TRY(group_state(t, g, &gs, err));
    return group_wait(t, gs, err);
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

static void reduce_f64(void *const *bufs, int n, size_t lo, size_t hi) {
    for (size_t k = lo; k < hi; k++) {
        double s = ((double *)bufs[0])[k];
        for (int i = 1; i < n; i++) s += ((double *)bufs[i])[k];
        for (int i = 0; i < n; i++) ((double *)bufs[i])[k] = s;
    }
}

static zb_status allreduce_any(zb_transport *t, const zb_group *g, void *buf,
                               size_t n, bool f64, zb_err *err) {
    zb_local_world *w = t->impl;
    int me;
    zb_gstate *gs;
    ZB_TRY(zb_group_member(t, g, &me, err));
    if (w->max_reduce_floats && n > w->max_reduce_floats)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: all-reduce of %zu elements "
                       "exceeds the %zu the transport was sized for", t->rank,
                       n, w->max_reduce_floats);
    if (is_aborted(w)) return aborted_err(t, err);
    ZB_TRY(group_state(t, g, &gs, err));
    if (g->n == 1) return ZB_OK;
    gs->bufs[me] = buf;   /* only this member writes its entries */
    gs->lens[me] = n;
    ZB_TRY(group_wait(t, gs, err));
    for (int i = 0; i < g->n; i++)
        if (gs->lens[i] != n) {
            /* Every member sees the same mismatch and fails alike. */
            zb_fail(err, ZB_ERUNTIME, "rank %d: all-reduce on group %d: "
                    "rank %d passes %zu elements, rank %d passes %zu", t->rank,
                    g->id, zb_group_rank(g, i), gs->lens[i], t->rank, n);
            group_wait(t, gs, NULL);
            return ZB_ERUNTIME;
        }
    size_t lo = n * (size_t)me / (size_t)g->n;
    size_t hi = n * (size_t)(me + 1) / (size_t)g->n;
    if (f64) reduce_f64(gs->bufs, g->n, lo, hi);
    else reduce_f32(gs->bufs, g->n, lo, hi);
    return group_wait(t, gs, err);
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

static zb_status alloc_pool(zb_local_world *w, zb_err *err) {
    size_t slots = (size_t)w->world * (size_t)w->max_msgs;
    if (w->max_msg_floats && slots > SIZE_MAX / sizeof(float) / w->max_msg_floats)
        return zb_fail(err, ZB_ENOMEM, "local transport: message pool of "
                       "%zu x %zu floats is too large", slots, w->max_msg_floats);
    w->pool = zb_calloc(slots * w->max_msg_floats, sizeof(float), err);
    w->slot_pool = w->pool ? zb_calloc(slots, sizeof(zb_slot), err) : NULL;
    if (!w->slot_pool) return ZB_ENOMEM;
    for (size_t i = 0; i < slots; i++)
        w->slot_pool[i].data = w->pool + i * w->max_msg_floats;
    return ZB_OK;
}

static zb_status alloc_world(zb_local_world *w, zb_err *err) {
    ZB_TRY(alloc_pool(w, err));
    w->inbox = zb_calloc((size_t)w->world, sizeof *w->inbox, err);
    w->ends = w->inbox ? zb_calloc((size_t)w->world, sizeof *w->ends, err) : NULL;
    w->n_groups = 4 * w->world + 8;
    w->groups = w->ends ? zb_calloc((size_t)w->n_groups, sizeof *w->groups, err)
                        : NULL;
    if (!w->groups) {
        w->n_groups = 0;
        return ZB_ENOMEM;
    }
    pthread_mutex_init(&w->mu, NULL);
    for (int r = 0; r < w->world; r++) {
        pthread_mutex_init(&w->inbox[r].mu, NULL);
        pthread_cond_init(&w->inbox[r].cv, NULL);
        w->inbox[r].slots = w->slot_pool + (size_t)r * (size_t)w->max_msgs;
        zb_transport *t = &w->ends[r];
        *t = (zb_transport){.rank = r, .world = w->world, .send = local_send,
                            .recv = local_recv, .allreduce = local_allreduce,
                            .allreduce_f64 = local_allreduce_f64,
                            .barrier = local_barrier, .abort = local_abort,
                            .impl = w};
    }
    for (int g = 0; g < w->n_groups; g++) {
        pthread_mutex_init(&w->groups[g].mu, NULL);
        pthread_cond_init(&w->groups[g].cv, NULL);
    }
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
    w->max_msgs = max_msgs_per_rank;
    w->max_msg_floats = max_msg_floats;
    w->max_reduce_floats = max_reduce_floats;
    zb_status st = alloc_world(w, err);
    if (st != ZB_OK) {
        zb_local_world_free(w);
        return st;
    }
    *out = w;
    return ZB_OK;
}

void zb_local_world_free(zb_local_world *w) {
    if (!w) return;
    if (w->groups) {   /* mutexes exist exactly when the tables do */
        pthread_mutex_destroy(&w->mu);
        for (int r = 0; r < w->world; r++) {
            pthread_mutex_destroy(&w->inbox[r].mu);
            pthread_cond_destroy(&w->inbox[r].cv);
        }
        for (int g = 0; g < w->n_groups; g++) {
            pthread_mutex_destroy(&w->groups[g].mu);
            pthread_cond_destroy(&w->groups[g].cv);
            free(w->groups[g].bufs);
            free(w->groups[g].lens);
        }
    }
    free(w->groups);
    free(w->ends);
    free(w->inbox);
    free(w->slot_pool);
    free(w->pool);
    free(w);
}

zb_transport *zb_local_transport(zb_local_world *w, int rank) {
    if (!w || rank < 0 || rank >= w->world) return NULL;
    return &w->ends[rank];
}
