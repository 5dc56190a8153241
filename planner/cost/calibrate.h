/* calibrate.h - `zbplan calibrate`: measure the local CPU with OpenBLAS and
 * write device constants the cost model reads (docs/zbplan.md).
 *
 * Measured on this machine, with `threads` BLAS threads (a rank of a
 * multi-rank CPU run gets cores / ranks):
 *   peak_flops  SGEMM FLOP/s of a large square GEMM (n x n x n, n = 1024 by
 *               default), the fastest of `reps` runs;
 *               (then raised to the best rate of any measured shape: small
 *               shapes that fit the caches can beat it);
 *   gemm_tile,  the output tile edge (4 .. 128) and the fraction of peak a
 *   gemm_eff    large GEMM reaches (the cost model's E_MAX, docs/
 *               cost-model.md 2.1) that make its times of the model's own
 *               GEMM shapes (the block's F, B and W GEMMs and the LM head at
 *               tp 1 and the model's micro-batch) match the measured ones:
 *               for each tile, gemm_eff is the geometric mean of what each
 *               shape needs (clamped to 1); the tile with the least squared
 *               log error wins;
 *   mem_bw_Bps  the rate at which zb's own elementwise kernels (LayerNorm,
 *               GELU, forward and backward) move the bytes the cost model
 *               counts for them (the backward twice the forward's), on the
 *               model's shapes (without a model: a streaming triad a[i] =
 *               b[i] + s * c[i] over arrays far larger than the caches),
 *               divided by the cost model's streaming efficiency (0.80) so
 *               that its elementwise times equal the measured ones. On a CPU
 *               these kernels are bound by arithmetic (expf), not memory;
 *   attn_eff    FLOPs of the attention core (4 b s^2 h forward, twice that
 *               backward, as the cost model counts them) over the time of
 *               zb_attention_forward + zb_attention_backward on the model's
 *               shape, as a fraction of peak: the model prices F and B at
 *               one rate, so the rate is fitted over both.
 * The library prints nothing; the command (cli/calibrate_cmd.c) does.
 */
#ifndef ZB_CALIBRATE_H
#define ZB_CALIBRATE_H

#include "common/zb_error.h"
#include "common/zb_model.h"

#define ZB_CALIB_MAX_SHAPES 16

typedef struct {
    int threads;        /* BLAS threads, >= 1 */
    int reps;           /* timed runs per measurement, >= 1 */
    int square_n;       /* edge of the peak GEMM */
    size_t stream_floats; /* elements per triad array */
} zb_calib_opts;

typedef struct {
    double M, N, K;     /* forward-convention shape: [M x K] x [K x N] */
    double measured_s;  /* fastest run */
    double predicted_s; /* the cost model's time with the fitted constants */
} zb_calib_shape;

typedef struct {
    double peak_flops, gemm_eff, gemm_tile, mem_bw_Bps, mem_bytes;
    double fit_rms_log;  /* rms of log(model / measured) over the shapes */
    double triad_Bps;   /* measured, before the efficiency division */
    double elem_Bps;    /* elementwise kernels' rate (0 without a model) */
    double attn_eff;
    double attn_bwd_over_fwd; /* measured backward / forward time (the model
                                 charges 2) */
    double elem_bwd_over_fwd; /* the same for LayerNorm + GELU (model: 2) */
    double omp_region_s; /* one OpenMP parallel region of region_threads
                            threads (cost/calibrate_regions.h); 0 on one core */
    int region_threads;  /* threads it was measured with: --threads, at
                            least 2, at most this machine's cores */
    int n_shapes;
    zb_calib_shape shapes[ZB_CALIB_MAX_SHAPES];
    char blas_core[64]; /* openblas_get_corename() */
} zb_calib_result;

void zb_calib_opts_default(zb_calib_opts *o);

/* Measure. m (may be NULL) gives the GEMM shapes; without it only the peak
 * and the bandwidth are measured and gemm_eff stays 0 (the default). */
zb_status zb_calibrate(const zb_calib_opts *o, const zb_model *m,
                       zb_calib_result *out, zb_err *err);

/* The device mapping for a model file's cluster.device, named `name`:
 * {name, peak_bf16_tflops (= fp32: the CPU backend computes in fp32),
 * peak_fp32_tflops, memory_gib, memory_bandwidth_gbps, gemm_efficiency,
 * gemm_tile, attention_efficiency, omp_region_us}. */
zb_device zb_calib_device(const zb_calib_result *r, const char *name);

#endif
