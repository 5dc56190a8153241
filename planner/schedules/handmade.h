/* schedules/handmade.h - the hand-made generators: each fills an
 * initialised-by-the-call zb_schedule for p ranks, m microbatches from a
 * closed form (no costs needed). gpipe, 1f1b, interleaved (v chunks, LOOP
 * placement; needs m % p == 0), zb-h1, zb-h2 (needs m >= 2p), zb-v (v = 2,
 * V placement), dualpipev (v = 2, V placement, needs m >= 2p); v-half and v-min (v = 2, V placement, building blocks,
 * schedules/vblock.c). An unmet condition is ZB_EINPUT with a message
 * naming it, never a wrong schedule. The registry (registry/registry.h)
 * reaches them by name.
 */
#ifndef ZB_SCHED_HANDMADE_H
#define ZB_SCHED_HANDMADE_H

#include "common/zb_schedule.h"

zb_status zb_sched_gpipe(int p, int m, zb_schedule *out, zb_err *err);
zb_status zb_sched_1f1b(int p, int m, zb_schedule *out, zb_err *err);
zb_status zb_sched_interleaved(int p, int m, int v, zb_schedule *out,
                               zb_err *err);
zb_status zb_sched_zbh1(int p, int m, zb_schedule *out, zb_err *err);
zb_status zb_sched_zbh2(int p, int m, zb_schedule *out, zb_err *err);
zb_status zb_sched_zbv(int p, int m, zb_schedule *out, zb_err *err);
/* ZB-V's lists laid out for n >= max(m, 2p-1) microbatches, the passes of
 * those >= m dropped (zb_sched_zbv: n = max(m, 2p)). */
zb_status zb_sched_zbv_layout(int p, int m, int n, zb_schedule *out,
                              zb_err *err);
/* DualPipeV (DeepSeek-V3 2024, schedules/dualpipev.c): V placement, v = 2,
 * overlapped F&B steps in the steady state; needs m >= 2p. */
zb_status zb_sched_dualpipev(int p, int m, zb_schedule *out, zb_err *err);
/* DualPipe (DeepSeek-V3 2024, schedules/dualpipe.c): bidirectional, DUAL
 * placement (two model copies), v = 2; needs p even, m even, m >= 2p. */
zb_status zb_sched_dualpipe(int p, int m, zb_schedule *out, zb_err *err);
/* V-Half and V-Min (Qi et al. 2024, building blocks, schedules/vblock.h): V
 * placement, split B/W, about 1/2 and 1/3 of 1F1B's activation memory. */
zb_status zb_sched_vhalf(int p, int m, zb_schedule *out, zb_err *err);
zb_status zb_sched_vmin(int p, int m, zb_schedule *out, zb_err *err);

#endif
