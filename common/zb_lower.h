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

typedef enum {
    ZB_OP_COMPUTE = 0, ZB_OP_SEND = 1, ZB_OP_RECV = 2,
    ZB_OP_VOCAB = 3  /* a vocabulary step that is no action (zb_lower_vocab) */
} zb_op_kind;
typedef enum { ZB_MSG_ACT = 0, ZB_MSG_GRAD = 1 } zb_msg_kind;

/* What a vocabulary op or message carries (zb_lower_vocab); ZB_V_NONE for
 * every op of zb_lower. */
typedef enum {
    ZB_V_NONE = 0,
    ZB_V_EMB,     /* VOCAB: look the tokens up in this rank's rows;
                     message: that partial embedding [N, C] to vstage 0's
                     rank (ACT) */
    ZB_V_EMB_SUM, /* VOCAB: vstage 0's rank sums the partials, shard order */
    ZB_V_X,       /* message: X(mb) [N, C] from the last stage's rank (ACT) */
    ZB_V_STATS,   /* VOCAB: C1, the statistics all-reduced (gathered) over
                     the pipeline group, in S/T order */
    ZB_V_DX2,     /* VOCAB (variant 2): combine the statistics, this rank's
                     part of dX */
    ZB_V_DX,      /* message: a rank's part of dX [N, C] to the last
                     stage's rank (GRAD) */
    ZB_V_DX_SUM,  /* VOCAB: the last stage's rank sums the parts, shard
                     order, before B */
    ZB_V_DEMB,    /* message: the embedding output's gradient [N, C] from
                     vstage 0's rank (GRAD) */
    ZB_V_EMB_BWD, /* VOCAB: add it into this rank's rows */
    ZB_V_KINDS
} zb_vocab_what;

typedef struct {
    zb_op_kind kind;
    int action;      /* COMPUTE: index into the rank's action list;
                        SEND/RECV: the action it belongs to (-1: the
                        step's start or end, vocabulary ops only) */
    int peer;        /* SEND/RECV: the other pipeline rank */
    zb_msg_kind msg; /* SEND/RECV */
    int vstage;      /* SEND/RECV: receiving virtual stage */
    int mb;
    int what;        /* zb_vocab_what; ZB_V_NONE unless zb_lower_vocab */
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

/* Vocabulary parallelism (s->vocab 1 or 2; zb_lower_vocab.c): zb_lower's
 * program plus the exchanges of the sharded embedding and output layer.
 * Every sum is made by its one receiver in pipeline-rank order, or is a
 * sum of one value and zeros (exact in any order), so the results are the
 * same bits on every transport. E = the rank of virtual stage 0, L = that
 * of the last one; "to all" / "from all": the other ranks in increasing
 * order.
 *   step start, every rank, each mb: VOCAB EMB; not E: SEND EMB to E;
 *     then on E, each mb: RECV EMB from all; VOCAB EMB_SUM
 *   after F(mb) of the last vstage (L): SEND X to all
 *   before S(mb), not L: RECV X from L
 *   C1, VOCAB STATS: an all-reduce over the pipeline group of the
 *     statistics table [p, 3, N], each rank's own slot filled and the
 *     others zero (an all-gather; exact). Variant 1: before T(mb);
 *     variant 2: after S(mb), then VOCAB DX2 and, not L, SEND DX to L
 *     (one barrier). Variant 1, after T(mb), not L: SEND DX to L (C2).
 *   before B/BW(mb) of the last vstage (L): RECV DX from all; VOCAB DX_SUM
 *   after B/BW(mb) of vstage 0 (E): VOCAB EMB_BWD (its own rows; keeps
 *     the gradient)
 *   step end, each mb: on E, SEND DEMB to all; elsewhere RECV DEMB from
 *     E and VOCAB EMB_BWD
 * The collectives (VOCAB STATS) run in S/T order, the same on every rank.
 * Each message kind travels on a lane of its own (p2p_channel.h) where
 * both ends post it in increasing mb order, sender order for the
 * receiver: X and DX in the order of the last stage's F and B, which is
 * increasing mb in every schedule zb_schedule_place_vocab accepts.
 * Messages carry vstage -1; tags come from zb_lower_op_tag. s->vocab 0:
 * zb_lower. */
zb_status zb_lower_vocab(const zb_schedule *s, zb_program *out, zb_err *err);

/* Vocabulary messages' tags have ZB_TAG_VOCAB set, the message kind
 * (zb_vocab_what) in bits 1..4 and the msg (ZB_MSG_ACT/GRAD) in bit 0;
 * zb_tag_vocab_lane maps such a tag to 0..ZB_VOCAB_LANES-1 (one lane per
 * message kind: EMB, X, DX, DEMB), -1 for any other tag. */
#define ZB_TAG_VOCAB (1 << 30)
#define ZB_VOCAB_LANES 4
static inline int zb_tag_vocab_lane(int tag) {
    if (!(tag & ZB_TAG_VOCAB)) return -1;
    switch ((tag >> 1) & 15) {
    case ZB_V_EMB: return 0;
    case ZB_V_X: return 1;
    case ZB_V_DX: return 2;
    default: return 3; /* ZB_V_DEMB */
    }
}

/* The tag of a SEND or RECV op of rank `self`: zb_lower_tag for pipeline
 * messages; for vocabulary messages ZB_TAG_VOCAB | ((sender * m + mb) <<
 * 5) | (what << 1) | msg, unique per (what, sender, mb). */
int zb_lower_op_tag(const zb_schedule *s, const zb_op *op, int self);

#endif
