/* zb_staging.h - the device memory a CUDA run stages pipeline messages in,
 * one formula for the transports that allocate it (executor/comm:
 * transport_nccl.cu, transport_cuda.cu) and the planner that predicts it
 * (planner/cost/plan_fit.h, counted in a plan's peak_mem_bytes).
 *
 * The NCCL transport keeps four staging rings per rank (up = towards a
 * higher pipeline rank, or down; send or receive end), each of as many
 * slots as that ring carries messages in one step (so no slot is reused
 * inside a step: a reused send slot would make the compute stream wait
 * for a peer), each slot one message of msg_floats raw floats. The ring
 * sizes are the same on every rank (the most over the ranks), so that all
 * ranks of a world are made alike.
 *
 * Pure arithmetic: no allocation, no device.
 */
#ifndef ZB_STAGING_H
#define ZB_STAGING_H

#include <stddef.h>

#include "common/zb_schedule.h"

#define ZB_STAGING_RINGS 4
/* Ring index of (up, send), 0..ZB_STAGING_RINGS-1. */
static inline int zb_staging_ring(int up, int send) { return 2 * !!up + !!send; }

/* Raw floats of one pipeline message: `tokens` (micro-batch x sequence)
 * rows of `hidden` values of elem_bytes each (4 fp32, 2 bf16), rounded up
 * to whole floats: the transports never look inside a message. */
size_t zb_staging_msg_floats(size_t tokens, int hidden, int elem_bytes);

/* Slots of each ring for p pipeline ranks of v chunks placed by pl, m
 * microbatches per step: per rank, m messages for every chunk boundary
 * it shares with another rank in that direction and end (the activation
 * of F one way, the gradient of B or BW back), the most over the ranks.
 * 0 for a ring no rank uses (p = 1: every ring). Equals the count of
 * zb_lower's sends and receives per ring for every schedule
 * (tests/unit/test_staging.c). */
void zb_staging_slots(int p, int v, zb_placement pl, int m,
                      int slots[ZB_STAGING_RINGS]);

/* Bytes of `slots` slots of msg_floats floats (one ring, or a pool). */
size_t zb_staging_ring_bytes(size_t slots, size_t msg_floats);

/* Device bytes one rank's transport allocates for pipeline messages in a
 * world of `world` ranks, one per GPU: world > 1, NCCL's four rings;
 * world 1 (pp 1), the device-local transport's single slot. */
size_t zb_staging_bytes(int world, const int slots[ZB_STAGING_RINGS],
                        size_t msg_floats);

#endif
