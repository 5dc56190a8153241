/* transport.h - how ranks talk: point-to-point messages between pipeline
 * ranks and sum all-reduces inside groups (TP, DP, tied embeddings, world).
 *
 * One zb_transport per rank. Implementations: local (threads of one
 * process, host buffers, transport_local.c), device-local (threads of one
 * process whose ranks share one CUDA device, transport_cuda.cu) and NCCL
 * (one rank per device, transport_nccl.cu). Buffers of send, recv and
 * allreduce are in the memory of the rank's backend (host for cpu, device
 * for cuda); allreduce_f64 and barrier always work on host memory.
 *
 * CUDA transports are stream ordered: `stream` is the rank's compute
 * stream (a cudaStream_t, set by the CUDA stage when it is built). A send
 * reads buf after the work enqueued on it so far, and later work on it
 * may overwrite buf; a recv or allreduce leaves its result for the work
 * enqueued on the stream after the call. The host never waits for the
 * device inside these calls (except allreduce_f64, whose buffer is host
 * memory).
 *
 * Contract:
 *  - send is buffered: it returns once buf may be reused, never waiting for
 *    the receiver. recv blocks until the message with (peer, tag) arrives;
 *    sizes must match (a mismatch is ZB_ERUNTIME naming both). Pipeline
 *    tags are zb_lower_tag values; their lowest bit is the message kind
 *    (p2p_channel.h), which transports without tags use to pick a lane.
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
#include "common/zb_staging.h"

/* A group: n global ranks in arithmetic progression, member i being
 * first + i * stride (every group of a dp x tp x pp layout is one: TP
 * stride 1, DP stride tp, the tied-embedding pair stride (pp-1)*dp*tp,
 * the world stride 1). A value, no storage: any world size, same on every
 * member. */
typedef struct {
    int id;                   /* unique among the world's groups */
    int n;                    /* members, >= 1 */
    int first, stride;        /* global rank of member 0; step (nonzero
                                 when n > 1; negative: descending ranks) */
} zb_group;

/* Global rank of member i of g (0 <= i < g->n). */
static inline int zb_group_rank(const zb_group *g, int i) {
    return g->first + i * g->stride;
}

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
    void *stream;             /* cuda: the rank's compute stream; else NULL */
};

/* Check that g is a valid group of t's world (n >= 1 members, stride != 0
 * when n > 1, each a rank of the world) holding t's rank; *me = its index
 * in g. For the transports' collectives (transport.c). */
zb_status zb_group_member(const zb_transport *t, const zb_group *g, int *me,
                          zb_err *err);

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

/* ---- device-local transport (CUDA builds): all ranks are threads of this
 * process on one CUDA device. Messages go through a device pool of
 * max_msgs_per_rank x max_msg_floats floats per rank (allocated here,
 * once); copies and reductions are ordered by CUDA events, reductions sum
 * members in group order (bitwise identical on every member). */
typedef struct zb_cuda_world zb_cuda_world;
zb_status zb_cuda_world_new(int world, int device, int max_msgs_per_rank,
                            size_t max_msg_floats, zb_cuda_world **out,
                            zb_err *err);
void zb_cuda_world_free(zb_cuda_world *w);
zb_transport *zb_cuda_transport(zb_cuda_world *w, int rank);

/* ---- NCCL transport (CUDA builds): one rank per device, in this process
 * (threads) or across processes. Communicators: the world, eight copies
 * of it for pipeline messages (one per lane of p2p_channel.h: direction x
 * message kind x parity of the lower end's pipeline rank, each on its own
 * transfer stream: a rank's pending sends never hold up its receives, and
 * activations never match gradient receives), and one per group announced at creation (ng groups per rank,
 * the same kinds in the same order on every rank; n = 0 where a rank is in
 * no group of that kind), split from the world with ncclCommSplit.
 * Pipeline messages go through device staging rings (per direction, one
 * for sends and one for receives: ring_slots[zb_nccl_ring(up, send)]
 * slots of max_msg_floats each, at least the messages that ring carries in
 * one step, so no slot is reused inside a step; 0: the ring is not made
 * and a message that needs it fails) so that no compute stream
 * waits for a peer to match a send. NCCL matches
 * messages in posting order per communicator (it has no tags): the lane
 * comes from the tag (zb_p2p_channel), and per (sender, receiver, lane)
 * the lowered programs of every schedule post sends and receives in the
 * same order (tests/unit/test_lower_order.c; with one lane per direction
 * they do not: zb-v and zb-auto-v interleave activations and gradients
 * between the same two ranks in different orders). allreduce uses
 * ncclAllReduce (NCCL's fixed ring/tree order, identical on all members).
 * abort raises a flag every host wait and call of this process's ranks
 * polls and aborts (ncclCommAbort) the communicators of each rank whose
 * thread is not inside an NCCL call, which releases a rank waiting on
 * the device; a rank inside one aborts its own when the call returns
 * (abort_gate.h: NCCL lets one thread operate a communicator at a time). */
#define ZB_NCCL_ID_BYTES 128     /* sizeof(ncclUniqueId) */
#define ZB_NCCL_MAX_GROUPS 8
/* A new unique id (ncclGetUniqueId), made by one rank and given to all. */
zb_status zb_nccl_unique_id(unsigned char id[ZB_NCCL_ID_BYTES], zb_err *err);
/* The staging rings: up (to a higher rank) or down, send or receive
 * (common/zb_staging.h: their sizes, shared with the planner's memory
 * prediction). */
#define ZB_NCCL_RINGS ZB_STAGING_RINGS
static inline int zb_nccl_ring(int up, int send) { return zb_staging_ring(up, send); }

/* One rank of a multi-process world (every rank calls it at the same
 * time, on its own device); groups: this rank's ng groups. pipe_stride:
 * the distance between pipeline neighbours' ranks (dp * tp, zb_plan_rank):
 * before returning, every lane's connection with the ranks pipe_stride
 * below and above is made (one grouped 1-float exchange per lane, then a
 * wait), so that no send or receive of a step waits for NCCL to connect. */
zb_status zb_nccl_new(int rank, int world, int device,
                      const unsigned char id[ZB_NCCL_ID_BYTES], int ng,
                      const zb_group *groups,
                      const int ring_slots[ZB_NCCL_RINGS],
                      size_t max_msg_floats, int pipe_stride,
                      zb_transport **out, zb_err *err);
/* All ranks of a world as threads of this process: rank r on devices[r],
 * groups[r * ng + k] its k-th group; ends[r] its endpoint; pipe_stride as
 * above. */
zb_status zb_nccl_threads_new(int world, const int *devices, int ng,
                              const zb_group *groups,
                              const int ring_slots[ZB_NCCL_RINGS],
                              size_t max_msg_floats, int pipe_stride,
                              zb_transport **ends, zb_err *err);
/* Frees the endpoint of zb_nccl_new, or given ends[0] every endpoint of
 * a zb_nccl_threads_new world (other ends: no-op; call after all use). */
void zb_nccl_free(zb_transport *t);

#endif
