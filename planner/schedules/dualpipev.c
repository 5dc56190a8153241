/* dualpipev.c - DualPipeV (DeepSeek-V3 technical report 2024, the
 * "cut-in-half" V form of DualPipe; deepseek-ai/DualPipe, PyTorch's
 * ScheduleDualPipeV): V placement on p ranks, rank r holds stages r (chunk
 * 0) and 2p-1-r (chunk 1) of PP = 2p stages. In the steady state every
 * step is an overlapped F&B (zb_schedule.h): the F of one chunk beside the
 * fused backward (BW) of the other. Needs m >= 2p.
 *
 * Rank r's list, passes written kind+chunk, "F0&BW1" an overlapped step,
 * B a backward for the input only whose W waits in a queue (oldest first):
 *   1  2(p-r-1) x F0
 *   2  (r+1) x (F0 F1)
 *   3  (p-r-1) x (B1 W F1)            zero bubble: W right after its B
 *   4  (m-2p+r+1) x (F0&BW1 F1&BW0)   the last rank's first F0, BW1 apart
 *   5  (p-r-1) x (BW1 F1&BW0)
 *   6  (r+1) x (B1 B0)                 fused BW in the first half, split
 *                                      from the middle on (odd r: before
 *                                      its B1, even r: between B1 and B0)
 *   7  (p-r-1) x (W B0)
 *   8  (r+1) x W
 * Microbatches are taken in order within each (pass, chunk). With T_comm =
 * 0 and uniform passes the longest span is 2m(T_F+T_B+T_W) minus what the
 * overlapped steps save plus the bubble (PP/2-1)(T_F&B + T_BW - 3 T_W)
 * (DeepSeek's table, PP = 2p stages; tests/unit/test_dualpipe.c), and the
 * peak is 2p+1 = PP+1 chunk activations.
 */
#include <stdbool.h>
#include <stdlib.h>

#include "planner/schedules/handmade.h"
#include "planner/schedules/build.h"

typedef struct {
    zb_schedule *s;
    int r;
    int f[2], b[2];      /* next microbatch of F and of B/BW per chunk */
    int *wq;             /* pending W as chunk * m + mb, oldest first */
    int wq_head, wq_tail;
} dpv_rank;

static zb_status fwd(dpv_rank *k, int chunk, zb_err *err) {
    return zb_schedule_push(k->s, k->r, ZB_F, k->f[chunk]++, chunk, err);
}

/* A backward of chunk: fused (BW) or split (B, its W queued). */
static zb_status bwd(dpv_rank *k, int chunk, bool split, zb_err *err) {
    int mb = k->b[chunk]++;
    if (split) k->wq[k->wq_tail++] = chunk * k->s->m + mb;
    return zb_schedule_push(k->s, k->r, split ? ZB_B : ZB_BW, mb, chunk, err);
}

/* The oldest pending W, if any. */
static zb_status weight(dpv_rank *k, zb_err *err) {
    if (k->wq_head == k->wq_tail) return ZB_OK;
    int c = k->wq[k->wq_head++], m = k->s->m;
    return zb_schedule_push(k->s, k->r, ZB_W, c % m, c / m, err);
}

/* F of chunk fc overlapped with the fused backward of the other chunk. */
static zb_status overlap(dpv_rank *k, int fc, zb_err *err) {
    int bc = 1 - fc;
    return zb_schedule_push_overlap(k->s, k->r, k->f[fc]++, fc, ZB_BW,
                                    k->b[bc]++, bc, err);
}

/* Steps 1-5: warm-up and the overlapped steady state. */
static zb_status dpv_head(dpv_rank *k, zb_err *err) {
    int p = k->s->p, r = k->r, m = k->s->m;
    for (int i = 0; i < 2 * (p - r - 1); i++) ZB_TRY(fwd(k, 0, err));
    for (int i = 0; i <= r; i++) {
        ZB_TRY(fwd(k, 0, err));
        ZB_TRY(fwd(k, 1, err));
    }
    for (int i = 0; i < p - r - 1; i++) {
        ZB_TRY(bwd(k, 1, true, err));
        ZB_TRY(weight(k, err));
        ZB_TRY(fwd(k, 1, err));
    }
    for (int i = 0; i < m - 2 * p + r + 1; i++) {
        if (i == 0 && r == p - 1) { /* apart: the turn has nothing to hide */
            ZB_TRY(fwd(k, 0, err));
            ZB_TRY(bwd(k, 1, false, err));
        } else {
            ZB_TRY(overlap(k, 0, err));
        }
        ZB_TRY(overlap(k, 1, err));
    }
    for (int i = 0; i < p - r - 1; i++) {
        ZB_TRY(bwd(k, 1, false, err));
        ZB_TRY(overlap(k, 1, err));
    }
    return ZB_OK;
}

/* Steps 6-8: the cool-down, its second half split so W fills the tail. */
static zb_status dpv_tail(dpv_rank *k, zb_err *err) {
    int p = k->s->p, r = k->r;
    bool split = false;
    for (int i = 0; i <= r; i++) {
        if (i == (r + 1) / 2 && r % 2 == 1) split = true;
        ZB_TRY(bwd(k, 1, split, err));
        if (i == (r + 1) / 2 && r % 2 == 0) split = true;
        ZB_TRY(bwd(k, 0, split, err));
    }
    for (int i = 0; i < p - r - 1; i++) {
        ZB_TRY(weight(k, err));
        ZB_TRY(bwd(k, 0, true, err));
    }
    for (int i = 0; i <= r; i++) ZB_TRY(weight(k, err));
    return ZB_OK;
}

zb_status zb_sched_dualpipev(int p, int m, zb_schedule *out, zb_err *err) {
    ZB_TRY(zb_sched_begin(out, "dualpipev", p, m, 2, ZB_PLACE_V, 6 * m, err));
    if (m < 2 * p)
        return zb_sched_end(out, zb_fail(err, ZB_EINPUT, "dualpipev needs at "
                                         "least 2p microbatches (m=%d < 2p=%d)",
                                         m, 2 * p));
    int *wq = zb_calloc((size_t)2 * (size_t)m, sizeof *wq, err);
    zb_status st = wq ? ZB_OK : ZB_ENOMEM;
    for (int r = 0; r < p && st == ZB_OK; r++) {
        dpv_rank k = {out, r, {0, 0}, {0, 0}, wq, 0, 0};
        st = dpv_head(&k, err);
        if (st == ZB_OK) st = dpv_tail(&k, err);
    }
    free(wq);
    return zb_sched_end(out, st);
}
