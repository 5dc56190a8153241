/* zbv.c - ZB-V (Qi et al., "Pipeline Parallelism with Controllable
 * Memory", 2024; the V schedule of the Zero Bubble authors): v = 2 chunks
 * per rank in the V placement, chunk 0 of rank r is virtual stage r and
 * chunk 1 is stage 2p-1-r, so a microbatch goes down the ranks and back up,
 * and rank 0 holds both the first and the last stage. B and W are split.
 *
 * Rank r's list, with passes written kind+chunk (F1 = forward of chunk 1):
 *   warm-up   (2(p-r)-1) x F0      forwards until the first F1 comes back
 *             r x (F1 F0)          F1's arrive every other slot
 *             (p-r) x (F1 B1 W1)   B1's start at rank 0 (the last stage)
 *   steady    (F0) B0 W0 F1 B1 W1  until all forwards are done
 *   cool-down r x (B0 B1)          W's held back ...
 *             (p-r) x (B0 W0)
 *             remaining W1's, then W0's   ... fill the tail
 * Microbatches are taken in order within each (kind, chunk). At most 2p
 * chunk activations are alive (F done, W not yet) on any rank, i.e. the
 * peak is at most p*M_B for M_B a whole rank's activations of one
 * microbatch, as in 1F1B. With T_F = T_B = T_W, T_comm = 0 and m >= 2p
 * every rank is busy from its first pass to its last (zero bubble).
 * For m < 2p the same lists are built for n = 2p microbatches and the
 * passes of microbatches >= m are dropped: still valid and within memory,
 * but no longer bubble-free. zb_sched_zbv_layout takes n: n = 2p-1 (what
 * PyTorch's ScheduleZBVZeroBubble lays out) is one unit shorter at p 4,
 * m 5-7 and T_F = T_B = T_W, longer where T_W is large; the registry
 * simulates both when it has costs and keeps the shorter.
 */
#include "planner/schedules/handmade.h"
#include "planner/schedules/build.h"

typedef struct {
    zb_schedule *s;
    int r;
    int n;          /* microbatches the pattern is laid out for: max(m, 2p) */
    int next[3][2]; /* next microbatch per pass kind (F, B, W) and chunk */
} zbv_rank;

/* Append pattern `pat` (pairs of kind letter and chunk digit, "F1B1W1")
 * `times` times; passes of padding microbatches (>= m) are skipped. */
static zb_status repeat(zbv_rank *k, int times, const char *pat, zb_err *err) {
    for (int t = 0; t < times; t++) {
        for (const char *c = pat; c[0] && c[1]; c += 2) {
            zb_pass pass = c[0] == 'F' ? ZB_F : c[0] == 'B' ? ZB_B : ZB_W;
            int chunk = c[1] - '0';
            int mb = k->next[pass][chunk]++;
            if (mb < k->s->m)
                ZB_TRY(zb_schedule_push(k->s, k->r, pass, mb, chunk, err));
        }
    }
    return ZB_OK;
}

static zb_status zbv_rank_list(zb_schedule *s, int r, int n, zb_err *err) {
    zbv_rank k = {s, r, n, {{0}}};
    int p = s->p;
    int *f0 = &k.next[ZB_F][0], *f1 = &k.next[ZB_F][1];
    ZB_TRY(repeat(&k, 2 * (p - r) - 1, "F0", err));
    ZB_TRY(repeat(&k, r, "F1F0", err));
    ZB_TRY(repeat(&k, p - r, "F1B1W1", err));
    while (*f0 < k.n || *f1 < *f0) {
        if (*f0 < k.n) ZB_TRY(repeat(&k, 1, "F0", err));
        ZB_TRY(repeat(&k, 1, "B0W0F1B1W1", err));
    }
    ZB_TRY(repeat(&k, r, "B0B1", err));
    ZB_TRY(repeat(&k, p - r, "B0W0", err));
    ZB_TRY(repeat(&k, k.n - k.next[ZB_W][1], "W1", err));
    return repeat(&k, k.n - k.next[ZB_W][0], "W0", err);
}

zb_status zb_sched_zbv_layout(int p, int m, int n, zb_schedule *out,
                              zb_err *err) {
    ZB_TRY(zb_sched_begin(out, "zb-v", p, m, 2, ZB_PLACE_V, 6 * m, err));
    if (n < m || n < 2 * p - 1)
        return zb_sched_end(out, zb_fail(err, ZB_EINPUT, "zb-v laid out for %d "
                                         "microbatches: needs at least m=%d and "
                                         "2p-1=%d", n, m, 2 * p - 1));
    zb_status st = ZB_OK;
    for (int r = 0; r < p && st == ZB_OK; r++) st = zbv_rank_list(out, r, n, err);
    return zb_sched_end(out, st);
}

zb_status zb_sched_zbv(int p, int m, zb_schedule *out, zb_err *err) {
    return zb_sched_zbv_layout(p, m, m > 2 * p ? m : 2 * p, out, err);
}
