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

#endif
