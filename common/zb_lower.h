/* zb_lower.h - lowering a schedule into per-rank programs: the compute
 * actions plus the transfers they imply. The simulator uses zb_lower_cross
 * to decide where T_comm applies; the executor runs the programs.
 *
 * For every action on rank r, in list order:
 *   F(s,j), s > 0, owner(s-1) != r   -> RECV act  from owner(s-1) before it
 *   F(s,j), s < n-1, owner(s+1) != r -> SEND act  to   owner(s+1) after it
 *   B/BW(s,j), s < n-1, owner(s+1) != r -> RECV grad from owner(s+1) before
 *   B/BW(s,j), s > 0, owner(s-1) != r   -> SEND grad to   owner(s-1) after
 * with s-1 and s+1 the neighbours in s's chain (zb_vstage_prev/next; under
 * DUAL each copy is its own chain, so nothing crosses between them).
 * W moves nothing. An overlapped F&B step (zb_schedule.h) lowers as one
 * step: both passes' receives, both computes (F first), both sends. Tags identify (kind, virtual stage of the receiver, mb),
 * so a transport can match messages whatever order they arrive in (the
 * local transport does). A transport that matches in posting order (NCCL)
 * keeps one ordered lane per direction and message kind; per lane both
 * ends post in the same order (tests/unit/test_lower_order.c).
 */
#ifndef ZB_LOWER_H
#define ZB_LOWER_H

#include <stdbool.h>

#include "common/zb_error.h"
#include "common/zb_schedule.h"

typedef enum { ZB_OP_COMPUTE = 0, ZB_OP_SEND = 1, ZB_OP_RECV = 2 } zb_op_kind;
typedef enum { ZB_MSG_ACT = 0, ZB_MSG_GRAD = 1 } zb_msg_kind;

typedef struct {
    zb_op_kind kind;
    int action;      /* COMPUTE: index into the rank's action list;
                        SEND/RECV: the action it belongs to */
    int peer;        /* SEND/RECV: the other pipeline rank */
    zb_msg_kind msg; /* SEND/RECV */
    int vstage;      /* SEND/RECV: receiving virtual stage */
    int mb;
} zb_op;

typedef struct {
    int p;
    int *len;        /* [p] */
    zb_op **ops;     /* [p][len[r]] */
} zb_program;

/* True when virtual stages a and b live on different ranks. */
bool zb_lower_cross(const zb_schedule *s, int vstage_a, int vstage_b);

/* Message tag for (msg, receiving vstage, mb): unique per step, in
 * 0..2*p*v*m-1; the lowest bit is msg (ZB_MSG_ACT 0, ZB_MSG_GRAD 1). */
int zb_lower_tag(const zb_schedule *s, zb_msg_kind msg, int vstage, int mb);

zb_status zb_lower(const zb_schedule *s, zb_program *out, zb_err *err);
void zb_program_free(zb_program *prog);

#endif
