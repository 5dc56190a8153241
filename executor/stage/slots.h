/* slots.h - which activation slot of one chunk holds which microbatch: the
 * host-side bookkeeping every stage backend shares (the slots' buffers, and
 * what a slot holds, are the backend's).
 *
 * A chunk has n slots, n = the most microbatches its rank's action list
 * keeps in flight on it (F seen, W or BW not yet). A microbatch takes a
 * free slot at its first touch (act_in or F) and gives it back after W/BW.
 * A released slot keeps its microbatch mapping (and the backend its
 * buffers) until it is taken again, so grad_out stays readable after BW; a
 * stale mapping (state FREE) is not an owner. States move FREE -> TAKEN ->
 * FWD (after F) -> BWD (after B) -> FREE, and passes check them so that a
 * wrong order fails instead of overwriting live activations.
 *
 * Under full recompute a chunk has a second table for the part of a slot
 * that B takes (what B rebuilds for W): n_b = the most microbatches in
 * flight from their B (or BW) until their W (or BW); it uses only the
 * states FREE and TAKEN.
 */
#ifndef ZB_SLOTS_H
#define ZB_SLOTS_H

#include <stdbool.h>

#include "common/zb_error.h"
#include "common/zb_schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { ZB_SLOT_FREE = 0, ZB_SLOT_TAKEN, ZB_SLOT_FWD, ZB_SLOT_BWD };

typedef struct {
    int n, m;               /* slots, microbatches */
    int *slot_of;           /* [m] slot of each microbatch, -1 */
    int *slot_mb;           /* [max(n, 1)] microbatch in each slot, -1 */
    unsigned char *state;   /* [max(n, 1)] ZB_SLOT_* */
} zb_slots;

/* The table of chunk `chunk` of pipeline rank `rank` of schedule s:
 * microbatches held from F (from_b false) or from B (true) until W. */
zb_status zb_slots_init(zb_slots *t, const zb_schedule *s, int rank,
                        int chunk, bool from_b, zb_err *err);
void zb_slots_free(zb_slots *t);

/* Slot of mb, taking a free one on first touch (*taken true then, for the
 * backend's memory count); -1 when none is free. */
int zb_slots_acquire(zb_slots *t, int mb, bool *taken);

/* Slot that mb owns (state not FREE), else -1. */
int zb_slots_owned(const zb_slots *t, int mb);

/* The slot of mb if it is in state `want`; else ZB_ERUNTIME "PASS on
 * chunk C mb MB out of order (needs F|B first)". */
zb_status zb_slots_expect(const zb_slots *t, int chunk, int mb, int want,
                          const char *pass, int *slot, zb_err *err);

#ifdef __cplusplus
}
#endif

#endif
