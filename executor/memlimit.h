/* memlimit.h - running under an address-space limit (ulimit -v).
 *
 * OpenBLAS allocates a 128 MiB work buffer the first time a thread calls
 * it, and when that allocation fails it retries forever (100% CPU, and its
 * shutdown then waits on the stuck thread). zbrun therefore, when
 * RLIMIT_AS is finite: caps glibc's malloc arenas, runs OpenBLAS with one
 * thread per caller, checks up front that the address space for every
 * rank's OpenBLAS buffer, arena and thread stacks is free (a PROT_NONE
 * reservation, released at once), and has every rank thread take its
 * OpenBLAS buffer before it allocates anything else. What is left for the
 * model is checked by the ordinary allocations, which fail cleanly.
 */
#ifndef ZB_MEMLIMIT_H
#define ZB_MEMLIMIT_H

#include <stdbool.h>
#include <stddef.h>

#include "common/zb_error.h"

/* The address-space limit in bytes, 0 when unlimited. */
size_t zb_memlimit_bytes(void);

/* Under a limit: set up malloc and check that `world` ranks of `threads`
 * OpenMP threads each can start. ZB_ENOMEM "memory limit (ulimit -v) of N
 * MiB is too small: ... needs at least M MiB" otherwise. */
zb_status zb_memlimit_prepare(int world, int threads, zb_err *err);

/* OpenBLAS threads to use with `threads` OpenMP threads per rank. */
int zb_memlimit_blas_threads(int threads);

/* Rank threads: take this thread's OpenBLAS buffer now (a tiny sgemm). */
void zb_memlimit_warm_blas(void);

#endif
