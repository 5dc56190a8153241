/* rendezvous.c - see rendezvous.h. */
#include "executor/comm/rendezvous.h"

#include <stdlib.h>
#include <string.h>

/* ---- tables ---- */

zb_status zb_rdv_init(zb_rdv *r, int world, int max_msgs,
                      void *(*ext_new)(int n),
                      void (*ext_free)(void *ext, int n), zb_err *err) {
    memset(r, 0, sizeof *r);
    r->ext_new = ext_new;
    r->ext_free = ext_free;
    r->world = world;
    r->max_msgs = max_msgs;
    size_t slots = (size_t)world * (size_t)max_msgs;
    r->slot_pool = zb_calloc(slots, sizeof *r->slot_pool, err);
    r->inbox = r->slot_pool ? zb_calloc((size_t)world, sizeof *r->inbox, err) : NULL;
    int n_groups = 4 * world + 8;
    r->groups = r->inbox ? zb_calloc((size_t)n_groups, sizeof *r->groups, err)
                         : NULL;
    if (!r->groups) {
        zb_rdv_destroy(r);
        return ZB_ENOMEM;
    }
    r->n_groups = n_groups;  /* mutexes exist exactly when n_groups > 0 */
    pthread_mutex_init(&r->mu, NULL);
    for (int i = 0; i < world; i++) {
        pthread_mutex_init(&r->inbox[i].mu, NULL);
        pthread_cond_init(&r->inbox[i].cv, NULL);
        r->inbox[i].slots = r->slot_pool + (size_t)i * (size_t)max_msgs;
    }
    for (int g = 0; g < n_groups; g++) {
        pthread_mutex_init(&r->groups[g].mu, NULL);
        pthread_cond_init(&r->groups[g].cv, NULL);
    }
    return ZB_OK;
}

static void group_tables_free(zb_rdv *r, zb_rdv_group *gs) {
    if (gs->ext && r->ext_free) r->ext_free(gs->ext, gs->g.n);
    free(gs->bufs);
    free(gs->lens);
    gs->ext = NULL;
    gs->bufs = NULL;
    gs->lens = NULL;
}

void zb_rdv_destroy(zb_rdv *r) {
    if (r->n_groups > 0) {
        pthread_mutex_destroy(&r->mu);
        for (int i = 0; i < r->world; i++) {
            pthread_mutex_destroy(&r->inbox[i].mu);
            pthread_cond_destroy(&r->inbox[i].cv);
        }
        for (int g = 0; g < r->n_groups; g++) {
            group_tables_free(r, &r->groups[g]);
            pthread_mutex_destroy(&r->groups[g].mu);
            pthread_cond_destroy(&r->groups[g].cv);
        }
    }
    free(r->groups);
    free(r->inbox);
    free(r->slot_pool);
    r->groups = NULL;
    r->inbox = NULL;
    r->slot_pool = NULL;
    r->n_groups = 0;
}

/* ---- abort ---- */

bool zb_rdv_is_aborted(zb_rdv *r) {
    return __atomic_load_n(&r->aborted, __ATOMIC_ACQUIRE) != 0;
}

zb_status zb_rdv_aborted_err(const zb_transport *t, zb_err *err) {
    return zb_fail(err, ZB_ERUNTIME,
                   "rank %d: transport aborted (another rank failed)", t->rank);
}

void zb_rdv_abort(zb_rdv *r) {
    __atomic_store_n(&r->aborted, 1, __ATOMIC_RELEASE);
    /* Lock each mutex before broadcasting so no waiter misses the wakeup
     * between its check of the flag and its wait. */
    for (int i = 0; i < r->world; i++) {
        pthread_mutex_lock(&r->inbox[i].mu);
        pthread_cond_broadcast(&r->inbox[i].cv);
        pthread_mutex_unlock(&r->inbox[i].mu);
    }
    for (int g = 0; g < r->n_groups; g++) {
        pthread_mutex_lock(&r->groups[g].mu);
        pthread_cond_broadcast(&r->groups[g].cv);
        pthread_mutex_unlock(&r->groups[g].mu);
    }
}

/* ---- point to point ---- */

zb_status zb_rdv_check_peer(zb_rdv *r, const zb_transport *t, const char *op,
                            int peer, int tag, size_t n, size_t n_max,
                            zb_err *err) {
    bool send = strcmp(op, "send") == 0;
    if (peer < 0 || peer >= r->world)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: %s %s rank %d out of "
                       "range 0..%d", t->rank, op, send ? "to" : "from", peer,
                       r->world - 1);
    if (send && n > n_max)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: send to rank %d tag %d: "
                       "%zu floats exceed the %zu the transport was sized for",
                       t->rank, peer, tag, n, n_max);
    return ZB_OK;
}

zb_status zb_rdv_claim(zb_rdv *r, const zb_transport *t, int peer, int tag,
                       size_t n, zb_rdv_inbox **in, zb_rdv_slot **s,
                       zb_err *err) {
    zb_rdv_inbox *box = &r->inbox[peer];
    pthread_mutex_lock(&box->mu);
    zb_rdv_slot *slot = NULL;
    for (int i = 0; i < r->max_msgs && !slot; i++)
        if (!box->slots[i].used) slot = &box->slots[i];
    if (!slot) {
        pthread_mutex_unlock(&box->mu);
        return zb_fail(err, ZB_ERUNTIME, "rank %d: send to rank %d tag %d: "
                       "inbox full (%d messages in flight)", t->rank, peer,
                       tag, r->max_msgs);
    }
    slot->used = true;
    slot->from = t->rank;
    slot->tag = tag;
    slot->n = n;
    *in = box;
    *s = slot;
    return ZB_OK;
}

void zb_rdv_post(zb_rdv_inbox *in) {
    pthread_cond_broadcast(&in->cv);
    pthread_mutex_unlock(&in->mu);
}

void zb_rdv_unclaim(zb_rdv_inbox *in, zb_rdv_slot *s) {
    s->used = false;
    pthread_mutex_unlock(&in->mu);
}

static zb_rdv_slot *find_slot(zb_rdv *r, zb_rdv_inbox *in, int peer, int tag) {
    for (int i = 0; i < r->max_msgs; i++) {
        zb_rdv_slot *s = &in->slots[i];
        if (s->used && s->from == peer && s->tag == tag) return s;
    }
    return NULL;
}

zb_status zb_rdv_take(zb_rdv *r, const zb_transport *t, int peer, int tag,
                      size_t n, zb_rdv_inbox **in, zb_rdv_slot **s,
                      zb_err *err) {
    zb_rdv_inbox *box = &r->inbox[t->rank];
    pthread_mutex_lock(&box->mu);
    zb_rdv_slot *slot;
    while (!(slot = find_slot(r, box, peer, tag)) && !zb_rdv_is_aborted(r))
        pthread_cond_wait(&box->cv, &box->mu);
    if (!slot) {
        pthread_mutex_unlock(&box->mu);
        return zb_rdv_aborted_err(t, err);
    }
    if (slot->n != n) {
        zb_fail(err, ZB_ERUNTIME, "rank %d: message from rank %d tag %d has "
                "%zu floats, rank %d expected %zu", t->rank, peer, tag,
                slot->n, t->rank, n);
        zb_rdv_release(box, slot);
        return ZB_ERUNTIME;
    }
    *in = box;
    *s = slot;
    return ZB_OK;
}

void zb_rdv_release(zb_rdv_inbox *in, zb_rdv_slot *s) {
    s->used = false;
    pthread_cond_broadcast(&in->cv);
    pthread_mutex_unlock(&in->mu);
}

/* ---- groups ---- */

/* Claim a free entry of the table for g (r->mu held). */
static zb_rdv_group *claim(zb_rdv *r, const zb_group *g) {
    for (int i = 0; i < r->n_groups; i++) {
        zb_rdv_group *gs = &r->groups[i];
        if (gs->claimed) continue;
        gs->g = *g;
        gs->bufs = calloc((size_t)g->n, sizeof *gs->bufs);
        gs->lens = calloc((size_t)g->n, sizeof *gs->lens);
        gs->ext = r->ext_new ? r->ext_new(g->n) : NULL;
        if (!gs->bufs || !gs->lens || (r->ext_new && !gs->ext)) {
            group_tables_free(r, gs);
            return NULL;
        }
        gs->claimed = true;
        return gs;
    }
    return NULL;
}

zb_status zb_rdv_group_of(zb_rdv *r, const zb_transport *t, const zb_group *g,
                          int *me, zb_rdv_group **out, zb_err *err) {
    ZB_TRY(zb_group_member(t, g, me, err));
    if (zb_rdv_is_aborted(r)) return zb_rdv_aborted_err(t, err);
    zb_rdv_group *gs = NULL;
    pthread_mutex_lock(&r->mu);
    for (int i = 0; i < r->n_groups && !gs; i++)
        if (r->groups[i].claimed && r->groups[i].g.id == g->id) gs = &r->groups[i];
    if (!gs) gs = claim(r, g);
    pthread_mutex_unlock(&r->mu);
    if (!gs)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: group %d: no room (%d "
                       "groups) or no memory for its %d members", t->rank,
                       g->id, r->n_groups, g->n);
    if (gs->g.n != g->n || gs->g.first != g->first ||
        (g->n > 1 && gs->g.stride != g->stride))
        return zb_fail(err, ZB_ERUNTIME, "rank %d: group %d used with "
                       "different members by different ranks", t->rank, g->id);
    *out = gs;
    return ZB_OK;
}

zb_status zb_rdv_wait(zb_rdv *r, const zb_transport *t, zb_rdv_group *gs,
                      zb_err *err) {
    pthread_mutex_lock(&gs->mu);
    unsigned long gen = gs->gen;
    if (++gs->arrived == gs->g.n) {
        gs->arrived = 0;
        gs->gen++;
        pthread_cond_broadcast(&gs->cv);
    } else {
        while (gen == gs->gen && !zb_rdv_is_aborted(r))
            pthread_cond_wait(&gs->cv, &gs->mu);
    }
    bool done = gen != gs->gen;
    pthread_mutex_unlock(&gs->mu);
    return done && !zb_rdv_is_aborted(r) ? ZB_OK : zb_rdv_aborted_err(t, err);
}

zb_status zb_rdv_publish(zb_rdv *r, const zb_transport *t, zb_rdv_group *gs,
                         int me, void *buf, size_t n, zb_err *err) {
    gs->bufs[me] = buf;   /* only this member writes its entries */
    gs->lens[me] = n;
    ZB_TRY(zb_rdv_wait(r, t, gs, err));
    for (int i = 0; i < gs->g.n; i++)
        if (gs->lens[i] != n) {
            /* Every member sees the same mismatch and fails alike. */
            zb_fail(err, ZB_ERUNTIME, "rank %d: all-reduce on group %d: "
                    "rank %d passes %zu elements, rank %d passes %zu", t->rank,
                    gs->g.id, zb_group_rank(&gs->g, i), gs->lens[i], t->rank, n);
            zb_rdv_wait(r, t, gs, NULL);
            return ZB_ERUNTIME;
        }
    return ZB_OK;
}

void zb_rdv_slice(const zb_rdv_group *gs, int me, size_t n, size_t *lo,
                  size_t *hi) {
    *lo = n * (size_t)me / (size_t)gs->g.n;
    *hi = n * (size_t)(me + 1) / (size_t)gs->g.n;
}

void zb_rdv_sum_f64(zb_rdv_group *gs, size_t lo, size_t hi) {
    int n = gs->g.n;
    for (size_t k = lo; k < hi; k++) {
        double s = ((double *)gs->bufs[0])[k];
        for (int i = 1; i < n; i++) s += ((double *)gs->bufs[i])[k];
        for (int i = 0; i < n; i++) ((double *)gs->bufs[i])[k] = s;
    }
}
