/* zbh.c - the handcrafted zero-bubble schedules ZB-H1 and ZB-H2 of
 * Qi et al., "Zero Bubble Pipeline Parallelism" (2023), sec. 2 and fig. 3.
 * Both split the backward into B (input gradient) and W (weight gradient),
 * v = 1, LOOP placement.
 *
 * Rank r runs `warm` forwards, then for each microbatch i: the next forward
 * (while any remain), B(i), and W(i - defer) once i >= defer; the deferred
 * W's close the list. Deferring W lets B reach the upstream ranks sooner,
 * and the held-back W's fill the cool-down, where rank r otherwise waits
 * for B's coming back from the ranks after it.
 *
 * ZB-H1: warm = p-1-r (as 1F1B), defer = r. In flight on rank r: p-r
 *   activations plus r awaiting W, so peak <= p*M_B (= p*M_B on rank 0).
 *   Bubble (p-1)(T_F+T_B-T_W) when m >= p and T_W <= T_F.
 * ZB-H2: warm = 2(p-1-r), defer = 2r: the extra forwards fill the wait for
 *   the first B and the layout becomes a parallelogram. Peak (2p-1)*M_B on
 *   rank 0; bubble (p-1)(T_F+T_B-2T_W) when T_W <= T_F and 2T_W <= T_F+T_B
 *   (zero at T_F = T_B = T_W). Needs m >= 2p.
 * (Conditions on the costs found by simulation; the paper assumes equal
 * pass times.)
 */
#include "planner/schedules/handmade.h"
#include "planner/schedules/build.h"

static zb_status zbh_rank(zb_schedule *s, int r, int warm, int defer,
                          zb_err *err) {
    int m = s->m, next_w = 0;
    if (warm > m) warm = m;
    for (int j = 0; j < warm; j++) ZB_TRY(zb_schedule_push(s, r, ZB_F, j, 0, err));
    for (int i = 0; i < m; i++) {
        if (warm + i < m) ZB_TRY(zb_schedule_push(s, r, ZB_F, warm + i, 0, err));
        ZB_TRY(zb_schedule_push(s, r, ZB_B, i, 0, err));
        if (i >= defer) ZB_TRY(zb_schedule_push(s, r, ZB_W, next_w++, 0, err));
    }
    while (next_w < m) ZB_TRY(zb_schedule_push(s, r, ZB_W, next_w++, 0, err));
    return ZB_OK;
}

zb_status zb_sched_zbh1(int p, int m, zb_schedule *out, zb_err *err) {
    ZB_TRY(zb_sched_begin(out, "zb-h1", p, m, 1, ZB_PLACE_LOOP, 3 * m, err));
    zb_status st = ZB_OK;
    for (int r = 0; r < p && st == ZB_OK; r++)
        st = zbh_rank(out, r, p - 1 - r, r, err);
    return zb_sched_end(out, st);
}

zb_status zb_sched_zbh2(int p, int m, zb_schedule *out, zb_err *err) {
    ZB_TRY(zb_sched_begin(out, "zb-h2", p, m, 1, ZB_PLACE_LOOP, 3 * m, err));
    if (m < 2 * p)
        return zb_sched_end(out, zb_fail(err, ZB_EINPUT, "zb-h2 needs at least "
                            "2p microbatches (m=%d < 2p=%d)", m, 2 * p));
    zb_status st = ZB_OK;
    for (int r = 0; r < p && st == ZB_OK; r++)
        st = zbh_rank(out, r, 2 * (p - 1 - r), 2 * r, err);
    return zb_sched_end(out, st);
}
