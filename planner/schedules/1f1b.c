/* 1f1b.c - 1F1B (PipeDream-Flush, Narayanan et al. 2021): rank r warms
 * up with p-r-1 forwards, then alternates one forward and one fused
 * backward, and drains the remaining backwards. v = 1, LOOP placement.
 * At most p-r microbatches are in flight on rank r, so the peak is
 * min(p, m)*M_B on rank 0; bubble (p-1)(T_F+T_B+T_W).
 */
#include "planner/schedules/handmade.h"
#include "planner/schedules/build.h"

static zb_status one_f_one_b_rank(zb_schedule *s, int r, zb_err *err) {
    int p = s->p, m = s->m;
    int warm = p - r - 1 < m ? p - r - 1 : m;
    for (int j = 0; j < warm; j++) ZB_TRY(zb_schedule_push(s, r, ZB_F, j, 0, err));
    for (int i = 0; i < m; i++) {
        if (warm + i < m) ZB_TRY(zb_schedule_push(s, r, ZB_F, warm + i, 0, err));
        ZB_TRY(zb_schedule_push(s, r, ZB_BW, i, 0, err));
    }
    return ZB_OK;
}

zb_status zb_sched_1f1b(int p, int m, zb_schedule *out, zb_err *err) {
    ZB_TRY(zb_sched_begin(out, "1f1b", p, m, 1, ZB_PLACE_LOOP, 2 * m, err));
    zb_status st = ZB_OK;
    for (int r = 0; r < p && st == ZB_OK; r++) st = one_f_one_b_rank(out, r, err);
    return zb_sched_end(out, st);
}
