/* interleaved.c - interleaved 1F1B (Narayanan et al. 2021, "Efficient
 * large-scale language model training on GPU clusters using Megatron-LM",
 * sec. 2.2): each rank holds v chunks, chunk c of rank r being virtual stage
 * c*p + r (LOOP placement), with fused backwards.
 *
 * Microbatches go through the pipeline in groups of p. A rank's k-th forward
 * (k = 0 .. m*v-1) is, within block k / (p*v), chunk (k / p) % v of
 * microbatch p*(k / (p*v)) + k % p; its k-th backward is the same
 * microbatch on chunk v-1 - (k / p) % v, since backwards run the chunks in
 * reverse. Rank r warms up with 2(p-r-1) + (v-1)p forwards (all m*v when
 * fewer), then alternates one forward and one backward, then drains.
 * Needs m % p == 0 and v >= 2; bubble (p-1)(T_F+T_B+T_W)/v for per-rank
 * totals T_F, T_B, T_W (each chunk costs 1/v of them).
 */
#include "planner/schedules/handmade.h"
#include "planner/schedules/build.h"

/* Microbatch and chunk of a rank's k-th forward (backward: bwd = 1). */
static void kth_pass(int p, int v, int k, int bwd, int *mb, int *chunk) {
    int block = k / (p * v), in_block = k % (p * v);
    *mb = block * p + in_block % p;
    *chunk = bwd ? v - 1 - in_block / p : in_block / p;
}

static zb_status push_kth(zb_schedule *s, int r, int k, int bwd, zb_err *err) {
    int mb, chunk;
    kth_pass(s->p, s->v, k, bwd, &mb, &chunk);
    return zb_schedule_push(s, r, bwd ? ZB_BW : ZB_F, mb, chunk, err);
}

static zb_status interleaved_rank(zb_schedule *s, int r, zb_err *err) {
    int p = s->p, v = s->v, total = s->m * v;
    int warm = 2 * (p - r - 1) + (v - 1) * p;
    if (warm > total) warm = total;
    for (int k = 0; k < warm; k++) ZB_TRY(push_kth(s, r, k, 0, err));
    for (int k = 0; k < total; k++) {
        if (warm + k < total) ZB_TRY(push_kth(s, r, warm + k, 0, err));
        ZB_TRY(push_kth(s, r, k, 1, err));
    }
    return ZB_OK;
}

zb_status zb_sched_interleaved(int p, int m, int v, zb_schedule *out,
                               zb_err *err) {
    if (v < 2 || v > 255) {
        memset(out, 0, sizeof *out);
        return zb_fail(err, ZB_EINPUT, "interleaved needs chunks per rank v in "
                       "2..255 (got v=%d)", v);
    }
    ZB_TRY(zb_sched_begin(out, "interleaved", p, m, v, ZB_PLACE_LOOP,
                          2 * m * v, err));
    if (m % p != 0)
        return zb_sched_end(out, zb_fail(err, ZB_EINPUT, "interleaved needs "
                            "microbatches (m=%d) divisible by stages (p=%d)",
                            m, p));
    zb_status st = ZB_OK;
    for (int r = 0; r < p && st == ZB_OK; r++) st = interleaved_rank(out, r, err);
    return zb_sched_end(out, st);
}
