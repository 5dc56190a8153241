/* parallel.h - when a kernel loop is worth an OpenMP team (internal to
 * kernels/).
 * Starting and joining a team costs microseconds, and much more when the
 * cores are shared with other work (a barrier then waits for a scheduler
 * time slice). Loops over fewer than ZB_OMP_MIN_WORK elements, counted in
 * inner-loop operations, run on the calling thread:
 *   #pragma omp parallel for if (ZB_OMP_WORTH(work))
 * Results never depend on this choice: every parallel loop in kernels/
 * gives each output element to exactly one iteration.
 */
#ifndef ZB_KERNELS_PARALLEL_H
#define ZB_KERNELS_PARALLEL_H

#define ZB_OMP_MIN_WORK 16384
#define ZB_OMP_WORTH(work) ((size_t)(work) >= (size_t)ZB_OMP_MIN_WORK)

/* Elementwise loops that vectorise (`omp simd`) live in functions marked
 * ZB_SIMD_CLONES: GCC builds them for AVX-512, AVX2 and the baseline, and
 * the loader picks the widest the CPU runs. Lanes do the same IEEE
 * operations as scalar code (C11 mode: no FMA contraction), so results do
 * not depend on the clone. OpenMP shares out blocks of ZB_SIMD_BLOCK
 * elements, each one clone call. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_ADDRESS__)
#define ZB_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ZB_SIMD_CLONES
#endif
#define ZB_SIMD_BLOCK 4096

/* OpenBLAS kept single-threaded, once per process (matmul.c): the GEMMs
 * of matmul.c and attention.c run inside OpenMP teams, and OpenBLAS's own
 * pthread pool beside OpenMP's only spins. Every kernel that calls
 * cblas_sgemm calls this first (cheap after the first time). */
void zb_blas_single_threaded(void);

#endif
