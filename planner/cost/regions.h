/* regions.h - OpenMP parallel regions per pass of zbrun's CPU
 * backend, for the cost model of the `cpu` device (docs/cost-model.md 2.5).
 *
 * A rank with more than one thread pays a fixed cost for every parallel
 * region it enters (waking the team, the closing barrier), whatever the
 * region computes. The kernels run a loop as a region only when it is
 * worth it (kernels/parallel.h: at least ZB_OMP_MIN_WORK inner operations;
 * the GEMMs also need more than one block of rows); these functions count
 * the regions that one microbatch's F, B and W run on one TP rank, with the
 * same thresholds as the kernels.
 *
 * Sizes: b micro-batch, s sequence, h hidden, f MLP hidden, a heads, t TP
 * degree (h, f and a divisible by t), V vocabulary (the head's local rows
 * are ceil(V / t)). Counts are >= 0, per microbatch.
 */
#ifndef ZB_COST_REGIONS_H
#define ZB_COST_REGIONS_H

#include <stdbool.h>

typedef struct {
    double f, b, w; /* parallel regions of the pass F, B, W */
} zb_regions;

/* Whether a kernel runs as a region (the kernels' own thresholds):
 * zb_sgemm_blocked's C[M x N] with inner dimension K; a loop of `work`
 * inner operations; a bias sum over [rows x cols]; the residual add of
 * `elems` elements. */
bool zb_cpu_gemm_region(double M, double N, double K);
bool zb_cpu_loop_region(double work);
bool zb_cpu_colsum_region(double rows, double cols);
bool zb_cpu_residual_region(double elems);

/* One transformer block. */
zb_regions zb_cpu_regions_block(int b, int s, int h, int f, int a, int t);
/* The token + position embedding (vocabulary rows split over t). */
zb_regions zb_cpu_regions_embed(int b, int s, int h);
/* The final LayerNorm, LM head GEMM and vocabulary-parallel loss. */
zb_regions zb_cpu_regions_head(int b, int s, int h, int V, int t);

#endif
