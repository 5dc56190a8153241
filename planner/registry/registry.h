/* registry.h - the schedule registry: the one place a schedule is
 * named. zb_schedule_make builds schedule `name` for p ranks, m
 * microbatches by calling its generator: the hand-made ones
 * (schedules/handmade.h: gpipe, 1f1b, interleaved, zb-h1, zb-h2, zb-v,
 * dualpipev, v-half, v-min, dualpipe) and the automatic ones (auto/auto_loop.h, auto/auto_v.h,
 * ilp/ilp_loop.h, ilp/ilp_v.h: zb-auto, zb-1p, zb-2p, zb-auto-v). An unmet
 * condition is ZB_EINPUT with a message naming it, never a wrong schedule.
 * The parameter and report types are schedules/generator.h's.
 */
#ifndef ZB_REGISTRY_H
#define ZB_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>

#include "common/zb_schedule.h"
#include "planner/schedules/generator.h"

/* Build schedule `name` (see list above). rep may be NULL. */
zb_status zb_schedule_make(const char *name, const zb_sched_params *prm,
                           zb_schedule *out, zb_sched_report *rep,
                           zb_err *err);

/* Re-solve automatic schedule `name` (zb-auto, zb-1p, zb-2p: the LOOP
 * ILP; zb-auto-v: the V ILP) exactly, warm-started from `warm`, a valid
 * schedule of that name for prm's p and m, with prm->costs, mem_limit,
 * time_limit_s and mip_gap (prm->solver is not read). rep is filled. Any
 * other name is ZB_EINPUT. */
zb_status zb_schedule_refine(const char *name, const zb_sched_params *prm,
                             const zb_schedule *warm, zb_schedule *out,
                             zb_sched_report *rep, zb_err *err);

/* NULL-terminated list of the planner's schedule names, in display order. */
const char *const *zb_schedule_names(void);
/* NULL-terminated list of the V building-block schedules, "v-half" and
 * "v-min" (schedules/vblock.h), and "dualpipe" (bidirectional, two model
 * copies): zb_schedule_make and `zbplan sim` take them, the plan search
 * does not list them (zb-auto-v tries the blocks' orders). */
const char *const *zb_schedule_block_names(void);
/* Chunks per rank the named schedule needs given prm->v (1, v or 2). */
int zb_schedule_chunks(const char *name, int v);
/* The registry's name for `name`: the name itself in any case (GPipe,
 * 1F1B, DualPipeV, ZB-H1), or an alias users bring from PyTorch
 * (Interleaved1F1B, ZBVZeroBubble); NULL when unknown. Every function
 * here that takes a name accepts the same. */
const char *zb_schedule_resolve(const char *name);
/* "Schedules: gpipe ... v-min\nNames match in any case ...; aliases:
 * Interleaved1F1B = interleaved, ...\n" into buf[cap] (cut to fit), for
 * help texts. */
void zb_schedule_list_text(char *buf, size_t cap);
/* Placement of the named schedule: ZB_PLACE_V for zb-v, zb-auto-v,
 * dualpipev, v-half, v-min; ZB_PLACE_DUAL for dualpipe; ZB_PLACE_LOOP
 * otherwise (also unknown names). */
zb_placement zb_schedule_placement(const char *name);
/* Copies of the model the named schedule holds: 2 for dualpipe (its two
 * chunks per rank are whole stages of two copies: a chunk's pass costs a
 * stage's, the model is split into p stages, not p*v), else 1. */
int zb_schedule_copies(const char *name);
/* True if the schedule splits B and W. */
bool zb_schedule_splits_bw(const char *name);

#endif
