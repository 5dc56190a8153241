/* blas_env.h - OpenBLAS's kernel choice and threads, settled before any
 * GEMM runs.
 *
 * Kernels: OpenBLAS picks its GEMM kernels by CPU detection, and on some
 * virtualised processors that falls back to a generic kernel (PRESCOTT,
 * SSE3) although the CPU has AVX2 or AVX-512 - 2-3x slower. zbrun compares
 * openblas_get_corename() with the best kernel the CPU's own cpuid (and the
 * OS's saved register state, xgetbv) allows; when OpenBLAS chose less and
 * was built with DYNAMIC_ARCH, it sets OPENBLAS_CORETYPE and re-executes
 * itself (OpenBLAS reads the variable once, when it is loaded). A value the
 * user set is respected, never replaced; zb_blas_describe then says what
 * the CPU would allow.
 * Results: bitwise reproducible for a given kernel; a different kernel
 * (PRESCOTT vs COOPERLAKE) changes the last bits of sums, like any BLAS
 * upgrade would.
 *
 * Threads: one pool. OpenBLAS runs single-threaded (openblas_set_num_threads
 * (1)); kernels/matmul.c spreads GEMM blocks over the OpenMP team.
 */
#ifndef ZB_BLAS_ENV_H
#define ZB_BLAS_ENV_H

#include <stdbool.h>
#include <stddef.h>

/* What the CPU can run, from cpuid and xgetbv, and who made it. */
typedef struct {
    bool sse3, ssse3, sse42, avx, avx2, fma, avx512;   /* avx512: F+BW+VL+DQ */
    bool avx512_bf16;
    bool amd;               /* AMD or Hygon (OpenBLAS: Zen kernels) */
    int family, model;      /* cpuid's display family and model */
} zb_cpu_features;

void zb_cpu_detect(zb_cpu_features *f);

/* The OpenBLAS core type (OPENBLAS_CORETYPE name) that OpenBLAS 0.3.21
 * (Debian 12's) picks on a correctly detected CPU with these features:
 * AVX-512: "Cooperlake" on Cooper Lake (Intel family 6 model 0x55 with
 * AVX512-BF16), "SkylakeX" on every other (0.3.21 knows no Sapphire Rapids
 * kernel and runs SkylakeX there); AVX2+FMA: "Zen" on AMD/Hygon,
 * "Haswell" otherwise; then "Sandybridge", "Nehalem", "Core2" or
 * "Prescott". Never NULL. */
const char *zb_blas_core_for(const zb_cpu_features *f);

/* Vector width class of an OpenBLAS core name (case-insensitive):
 * 0 SSE-only, 1 AVX, 2 AVX2, 3 AVX-512; -1 for a name not known here. */
int zb_blas_core_level(const char *core);

/* The core to ask for instead of `detected`, or NULL when `detected` is as
 * good as the CPU allows or unknown here. */
const char *zb_blas_better_core(const char *detected, const zb_cpu_features *f);

/* Before anything else in main: when OpenBLAS chose a weaker kernel than
 * the CPU allows, OPENBLAS_CORETYPE is not set and this OpenBLAS can switch
 * (DYNAMIC_ARCH), set it (and ZB_BLAS_DETECTED to what OpenBLAS chose) and
 * return true: the caller re-executes itself. */
bool zb_blas_env_prepare(void);

/* Once, before the ranks start: OpenBLAS single-threaded (see above). */
void zb_blas_settle(void);

/* One line for the run header and the report, e.g.
 *   "OpenBLAS 0.3.21 Cooperlake kernels"
 *   "OpenBLAS 0.3.21 Cooperlake kernels (zbrun chose them: OpenBLAS
 *    detected Prescott on this CPU)"
 *   "OpenBLAS 0.3.21 Prescott kernels (OPENBLAS_CORETYPE=Prescott; this
 *    CPU runs Cooperlake: unset it for speed)" */
void zb_blas_describe(char *buf, size_t cap);

#endif
