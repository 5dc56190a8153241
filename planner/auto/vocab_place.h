/* vocab_place.h - the vocabulary passes S and T (common/zb_schedule.h)
 * placed into a schedule that a generator made without them
 * (docs/schedules.md, "Vocabulary passes"). The registry calls it when
 * zb_sched_params.vocab is 1 or 2.
 */
#ifndef ZB_AUTO_VOCAB_PLACE_H
#define ZB_AUTO_VOCAB_PLACE_H

#include "common/zb_schedule.h"
#include "planner/schedules/generator.h"

/* Adds S and T of every microbatch to every rank of s, the schedule
 * `name` built for prm (prm->vocab: the variant). On success s->vocab is
 * the variant and s simulates; ZB_EINPUT for p < 2. */
zb_status zb_vocab_place(const char *name, const zb_sched_params *prm,
                         zb_schedule *s, zb_err *err);

#endif
