/* transport.h - how ranks talk: point-to-point messages between pipeline
 * ranks and sum all-reduces inside groups (TP, DP, tied embeddings, world).
 *
 * One zb_transport per rank. Implementations: local (threads of one
 * process, transport_local.c) and, later, NCCL. Buffers are in the memory
 * of the rank's backend (host for cpu, device for cuda).
 *
 * Contract:
 *  - send is buffered: it returns once buf may be reused, never waiting for
 *    the receiver. recv blocks until the message with (peer, tag) arrives;
 *    sizes must match (a mismatch is ZB_ERUNTIME naming both).
 *  - allreduce sums n floats over the group in a fixed order (group member
 *    0, 1, ...), so every member gets bitwise identical results and every
 *    run the same ones. All members must call it; calls on one group are
 *    matched in call order.
 *  - abort wakes every blocked rank with ZB_ERUNTIME so a failing rank
 *    cannot hang the others.
 */
#ifndef ZB_TRANSPORT_H
#define ZB_TRANSPORT_H

#include <stddef.h>

#include "common/zb_error.h"

#define ZB_MAX_GROUP 64

typedef struct {
    int id;                   /* unique among the world's groups */
    int n;                    /* members */
    int ranks[ZB_MAX_GROUP];  /* global ranks, same order on every member */
} zb_group;

typedef struct zb_transport zb_transport;
struct zb_transport {
    int rank, world;
    zb_status (*send)(zb_transport *t, int peer, int tag, const float *buf,
                      size_t n, zb_err *err);
    zb_status (*recv)(zb_transport *t, int peer, int tag, float *buf,
                      size_t n, zb_err *err);
    zb_status (*allreduce)(zb_transport *t, const zb_group *g, float *buf,
                           size_t n, zb_err *err);
    /* same, for doubles (grad norm, loss sums: exact enough to compare) */
    zb_status (*allreduce_f64)(zb_transport *t, const zb_group *g,
                               double *buf, size_t n, zb_err *err);
    zb_status (*barrier)(zb_transport *t, const zb_group *g, zb_err *err);
    void (*abort)(zb_transport *t);
    void *impl;
};

/* ---- local transport: all ranks are threads of this process ---- */
typedef struct zb_local_world zb_local_world;

/* max_msgs_per_rank / max_msg_floats size the send buffers allocated here,
 * up front (no allocation while training): at most max_msgs_per_rank
 * messages can be in flight towards any one rank. */
zb_status zb_local_world_new(int world, int max_msgs_per_rank,
                             size_t max_msg_floats, size_t max_reduce_floats,
                             zb_local_world **out, zb_err *err);
void zb_local_world_free(zb_local_world *w);
/* The endpoint of one rank (owned by the world). */
zb_transport *zb_local_transport(zb_local_world *w, int rank);

#endif
