/* rendezvous.h - the host-side meeting points of the two in-process
 * transports (transport_local.c: ranks are threads sharing host memory;
 * transport_cuda.cu: ranks are threads sharing one device): the abort flag,
 * per-rank inboxes of tagged message slots, and a table of groups claimed
 * on first use, each with a generation barrier that an abort breaks and the
 * members' published buffers for a collective.
 *
 * What a transport keeps to itself: where a slot's data lives and how it
 * is moved (memcpy, or device copies ordered by events), and the reduction.
 * Both keep their own state per slot and per group in `ext`.
 *
 * Locking: an inbox's mutex guards its slots; the table mutex guards the
 * claims; a group's mutex guards its barrier. bufs[i] and lens[i] are
 * written only by member i, before a barrier, and read by all after it.
 */
#ifndef ZB_COMM_RENDEZVOUS_H
#define ZB_COMM_RENDEZVOUS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "executor/comm/transport.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    bool used;       /* holds a message; claimed, filled and posted under
                        the inbox mutex, so a receiver never sees one
                        half written */
    int from, tag;
    size_t n;        /* floats */
    float *data;     /* the transport's memory, max_msg_floats */
    void *ext;       /* the transport's per-slot state */
} zb_rdv_slot;

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    zb_rdv_slot *slots;  /* [max_msgs] */
} zb_rdv_inbox;

typedef struct {
    bool claimed;
    zb_group g;          /* as its first user named it */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int arrived;         /* barrier: members arrived in this generation */
    unsigned long gen;   /* barrier: generation number */
    void **bufs;         /* [g.n] collective: member buffers */
    size_t *lens;        /* [g.n] collective: member element counts */
    void *ext;           /* the transport's per-group tables (ext_new) */
} zb_rdv_group;

typedef struct zb_rdv {
    int world, max_msgs;
    zb_rdv_slot *slot_pool;  /* [world * max_msgs] */
    zb_rdv_inbox *inbox;     /* [world] */
    pthread_mutex_t mu;      /* guards the group claims */
    zb_rdv_group *groups;    /* [n_groups]: 4 * world + 8 */
    int n_groups;
    int aborted;             /* atomic */
    /* the transport's per-group tables for a group of n members, made
     * when the group is claimed and freed with the table; NULL: none */
    void *(*ext_new)(int n);
    void (*ext_free)(void *ext, int n);
} zb_rdv;

/* Tables for `world` ranks of max_msgs slots each (slot data left NULL
 * for the transport to place); ext_new / ext_free (may be NULL) make and
 * free the transport's per-group tables. On failure everything made is
 * freed. */
zb_status zb_rdv_init(zb_rdv *r, int world, int max_msgs,
                      void *(*ext_new)(int n),
                      void (*ext_free)(void *ext, int n), zb_err *err);
/* Frees the tables (ext through ext_free); r may be half made or zeroed. */
void zb_rdv_destroy(zb_rdv *r);

bool zb_rdv_is_aborted(zb_rdv *r);
/* Sets the flag and wakes every waiter of the inboxes and groups. */
void zb_rdv_abort(zb_rdv *r);
/* "rank R: transport aborted (another rank failed)" */
zb_status zb_rdv_aborted_err(const zb_transport *t, zb_err *err);

/* The checks every send/recv makes on (peer, n) before touching a slot:
 * peer in range, n within max_msg_floats (send only: n_max > 0). */
zb_status zb_rdv_check_peer(zb_rdv *r, const zb_transport *t, const char *op,
                            int peer, int tag, size_t n, size_t n_max,
                            zb_err *err);

/* Send: a free slot of peer's inbox, with its mutex held and the slot
 * marked used (from, tag, n set); fails (mutex released) when the inbox
 * is full. Fill it, then post it with zb_rdv_post (wakes the receiver,
 * releases the mutex), or give it back with zb_rdv_unclaim. */
zb_status zb_rdv_claim(zb_rdv *r, const zb_transport *t, int peer, int tag,
                       size_t n, zb_rdv_inbox **in, zb_rdv_slot **s,
                       zb_err *err);
void zb_rdv_post(zb_rdv_inbox *in);
void zb_rdv_unclaim(zb_rdv_inbox *in, zb_rdv_slot *s);

/* Recv: waits for the slot (peer, tag) of t's inbox and returns it
 * with the inbox mutex held; fails (mutex released, slot left alone) on
 * abort, or (slot freed) when it holds other than n floats. Copy out,
 * then zb_rdv_release. */
zb_status zb_rdv_take(zb_rdv *r, const zb_transport *t, int peer, int tag,
                      size_t n, zb_rdv_inbox **in, zb_rdv_slot **s,
                      zb_err *err);
void zb_rdv_release(zb_rdv_inbox *in, zb_rdv_slot *s);

/* The group g of which t is a member (*me its index), claimed on first
 * use; checks that every rank names it with the same members. */
zb_status zb_rdv_group_of(zb_rdv *r, const zb_transport *t, const zb_group *g,
                          int *me, zb_rdv_group **out, zb_err *err);
/* Barrier of the group's g.n members (or abort). */
zb_status zb_rdv_wait(zb_rdv *r, const zb_transport *t, zb_rdv_group *gs,
                      zb_err *err);
/* Collective start: publish (buf, n) as member me, barrier, then check
 * that every member passed n elements (all fail alike, after a second
 * barrier, when they did not). */
zb_status zb_rdv_publish(zb_rdv *r, const zb_transport *t, zb_rdv_group *gs,
                         int me, void *buf, size_t n, zb_err *err);
/* Member me's slice [lo, hi) of n elements (the slice it reduces). */
void zb_rdv_slice(const zb_rdv_group *gs, int me, size_t n, size_t *lo,
                  size_t *hi);
/* Host reduction of doubles, slice [lo, hi): summed over the members in
 * order 0, 1, ..., written back to every member. */
void zb_rdv_sum_f64(zb_rdv_group *gs, size_t lo, size_t hi);

#ifdef __cplusplus
}
#endif

#endif
