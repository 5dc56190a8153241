/* zb_schedule_vocab.h - placing the vocabulary passes S and T
 * (zb_schedule.h) into a schedule that has none.
 *
 * The simple valid placement (docs/schedules.md, "Vocabulary passes"):
 * simulate s with unit pass costs (F = B = W = 1, BW = 2, no transfer
 * time); on every rank, S(mb) then T(mb) go right before the first
 * action that starts at or after the end of F(mb) on the last virtual
 * stage (at the list's end when none does), mb in increasing order. Every
 * dependency, old and new, then runs forward in that unit-cost time, so a
 * schedule that simulated still does, and every rank gets the same S/T
 * order (S0 T0 S1 T1 ...). It is valid, not tuned: the generators place
 * S and T better where they know how (planner/schedules/).
 */
#ifndef ZB_SCHEDULE_VOCAB_H
#define ZB_SCHEDULE_VOCAB_H

#include "common/zb_error.h"
#include "common/zb_schedule.h"

/* Sets s->vocab = variant (1 or 2) and inserts the S/T actions as above.
 * s must hold no S or T (else ZB_EINPUT), have p >= 2 (ZB_EINPUT),
 * simulate (its ZB_EINFEASIBLE), and run F of the last virtual stage in
 * increasing mb order (ZB_EINPUT). On failure s is unchanged. */
zb_status zb_schedule_place_vocab(zb_schedule *s, int variant, zb_err *err);

#endif
