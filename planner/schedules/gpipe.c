/* gpipe.c - GPipe (Huang et al. 2019): every rank runs the forward of
 * all m microbatches, then their fused backwards in the same order.
 * v = 1, LOOP placement. Bubble (p-1)(T_F+T_B+T_W), peak m*M_B per rank.
 */
#include "planner/schedules/handmade.h"
#include "planner/schedules/build.h"

static zb_status gpipe_rank(zb_schedule *s, int r, zb_err *err) {
    for (int j = 0; j < s->m; j++) ZB_TRY(zb_schedule_push(s, r, ZB_F, j, 0, err));
    for (int j = 0; j < s->m; j++) ZB_TRY(zb_schedule_push(s, r, ZB_BW, j, 0, err));
    return ZB_OK;
}

zb_status zb_sched_gpipe(int p, int m, zb_schedule *out, zb_err *err) {
    ZB_TRY(zb_sched_begin(out, "gpipe", p, m, 1, ZB_PLACE_LOOP, 2 * m, err));
    zb_status st = ZB_OK;
    for (int r = 0; r < p && st == ZB_OK; r++) st = gpipe_rank(out, r, err);
    return zb_sched_end(out, st);
}
