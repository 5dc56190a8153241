/* p2p_channel.h - the channel a pipeline message travels on, for
 * transports that match messages in posting order (NCCL has no tags).
 *
 * A channel is an ordered lane between two ranks: messages on one channel
 * from rank a to rank b are matched first-posted to first-posted, so both
 * ends must post them in the same order. zb_p2p_channel(sender, receiver,
 * tag) says which of ZB_P2P_CHANNELS lanes a message from `sender` to
 * `receiver` uses; it depends only on the direction (towards a higher or a
 * lower rank) and on the message kind carried in the tag (zb_lower_tag:
 * activation or gradient), so both ends compute the same channel. One
 * lane per direction only is not enough: in the V schedules rank r sends
 * activations (chunk 0) and gradients (chunk 1) to r+1 in another order
 * than r+1 posts their receives.
 *
 * sender, receiver: global ranks of the two ends (the same numbers on both).
 * Returns 0..ZB_P2P_CHANNELS-1. tests/unit/test_lower_order.c proves, for
 * every schedule, that per (sender, receiver, channel) the lowered send
 * order equals the receive order.
 */
#ifndef ZB_P2P_CHANNEL_H
#define ZB_P2P_CHANNEL_H

#include "common/zb_lower.h"

/* 8 lanes of pipeline messages, then one per vocabulary message kind
 * (common/zb_lower.h, zb_tag_vocab_lane: the embedding partials, X, the
 * dX parts, the embedding's gradient), each posted in microbatch order at
 * both ends; vocabulary messages go between any two pipeline ranks. */
#define ZB_P2P_PIPE_CHANNELS 8
#define ZB_P2P_CHANNELS (ZB_P2P_PIPE_CHANNELS + ZB_VOCAB_LANES)

/* The message kind of a pipeline tag: its lowest bit (zb_lower_tag puts
 * ZB_MSG_ACT = 0 or ZB_MSG_GRAD = 1 there). */
static inline int zb_p2p_tag_kind(int tag) { return tag & 1; }

/* 0: activations up (to a higher rank), 1: gradients up, 2: activations
 * down, 3: gradients down; plus 4 when the lower end's pipeline position
 * is odd. Pipeline neighbours sit a constant stride d = dp * tp apart
 * (zb_plan_rank), so lower / d is the lower end's pipeline rank: a rank's
 * messages with the neighbour above and with the one below travel on
 * different lanes, and a send to r+1 that waits for r+1 (a rendezvous)
 * never holds back, in one lane's posting order, a receive from r-1
 * (tests/unit/test_lower_drain.c). */
static inline int zb_p2p_channel(int sender, int receiver, int tag) {
    if (zb_tag_vocab_lane(tag) >= 0)
        return ZB_P2P_PIPE_CHANNELS + zb_tag_vocab_lane(tag);
    int lo = sender < receiver ? sender : receiver;
    int d = sender < receiver ? receiver - sender : sender - receiver;
    int odd = d > 0 ? (lo / d) & 1 : 0;
    return (sender < receiver ? 0 : 2) + zb_p2p_tag_kind(tag) + 4 * odd;
}

#endif
