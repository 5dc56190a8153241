/* dualpipe.c - DualPipe, bidirectional (DeepSeek-V3 technical report 2024;
 * deepseek-ai/DualPipe): PP = p pipeline ranks and stages, two copies of
 * the model (DUAL placement, zb_schedule.h): rank r holds the down copy's
 * stage r (chunk 0) and the up copy's stage p-1-r (chunk 1). Microbatches
 * 0..m/2-1 enter at rank 0 and flow down, m/2..m-1 enter at rank p-1 and
 * flow up. Needs p even and m even with m >= 2p.
 *
 * Ranks r and p-1-r mirror each other: both run the order a DualPipeV rank
 * h = min(r, p-1-r) runs on p/2 ranks with m/2 microbatches
 * (schedules/dualpipev.c), its chunk 0 ("the direction entering at my
 * end") being the down copy on the first half (r < p/2) and the up copy on
 * the second, its microbatch i of the down copy being i and of the up copy
 * m/2 + i. A microbatch's path through the p ranks is then DualPipeV's path
 * through the V (down the first half, across the middle, back up the mirror
 * half), so with T_comm = 0 the two schedules have the same timeline:
 * bubble (PP/2-1)(T_F&B + T_BW - 3 T_W), activations PP+1 stages per rank,
 * parameters 2x (tests/unit/test_dualpipe_bidir.c). The middle pair's first
 * turn crosses ranks p/2-1 and p/2 here (DualPipeV keeps it on one rank),
 * which only T_comm sees.
 */
#include "planner/schedules/handmade.h"
#include "planner/schedules/build.h"

/* DualPipeV rank h's list into DualPipe rank r: chunk and microbatch
 * mapped as above. */
static zb_status mirror_rank(const zb_schedule *dpv, int h, int r,
                             zb_schedule *out, zb_err *err) {
    int flip = r >= out->p / 2, half = out->m / 2;
    for (int i = 0; i < dpv->len[h]; i++) {
        zb_action a = dpv->acts[h][i];
        int chunk = a.chunk ^ flip;
        ZB_TRY(zb_sched_put(out, r, (zb_pass)a.pass,
                            chunk == 0 ? a.mb : half + a.mb, chunk, err));
        out->acts[r][out->len[r] - 1].flags = a.flags;
    }
    return ZB_OK;
}

static zb_status check_dualpipe(int p, int m, zb_err *err) {
    if (p % 2 != 0)
        return zb_fail(err, ZB_EINPUT, "dualpipe needs an even number of "
                       "pipeline stages (p=%d); dualpipev runs on any p", p);
    if (m % 2 != 0 || m < 2 * p)
        return zb_fail(err, ZB_EINPUT, "dualpipe needs an even number of "
                       "microbatches, at least 2p (m=%d, 2p=%d)", m, 2 * p);
    return ZB_OK;
}

zb_status zb_sched_dualpipe(int p, int m, zb_schedule *out, zb_err *err) {
    ZB_TRY(zb_sched_begin(out, "dualpipe", p, m, 2, ZB_PLACE_DUAL, 3 * m, err));
    zb_status st = check_dualpipe(p, m, err);
    if (st != ZB_OK) return zb_sched_end(out, st);
    zb_schedule dpv;
    st = zb_sched_dualpipev(p / 2, m / 2, &dpv, err);
    for (int r = 0; r < p && st == ZB_OK; r++) {
        int h = r < p / 2 ? r : p - 1 - r;
        st = mirror_rank(&dpv, h, r, out, err);
    }
    zb_schedule_free(&dpv);
    return zb_sched_end(out, st);
}
