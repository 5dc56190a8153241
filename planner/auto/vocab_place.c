/* vocab_place.c - see auto/vocab_place.h. */
#include "planner/auto/vocab_place.h"

#include "common/zb_schedule_vocab.h"

zb_status zb_vocab_place(const char *name, const zb_sched_params *prm,
                         zb_schedule *s, zb_err *err) {
    (void)name;
    return zb_schedule_place_vocab(s, prm->vocab, err);
}
