/* memlimit.h - running under an address-space limit (ulimit -v).
 *
 * OpenBLAS allocates a 128 MiB work buffer the first time a thread calls
 * it, and when that allocation fails it retries forever (100% CPU, and its
 * shutdown then waits on the stuck thread). zbrun therefore, when
 * RLIMIT_AS is finite: caps glibc's malloc arenas, runs OpenBLAS with one
 * thread per caller, checks up front that the address space for every
 * rank's OpenBLAS buffer, arena and thread stacks is free (a PROT_NONE
 * reservation, released at once), and checks again once the stages hold
 * their memory, before the first step. The stages' own allocations fail
 * cleanly (ENOMEM) when the limit is too small for the model.
 */
#ifndef ZB_MEMLIMIT_H
#define ZB_MEMLIMIT_H

#include <stdbool.h>
#include <stddef.h>

#include "common/zb_error.h"

/* The address-space limit in bytes, 0 when unlimited. */
size_t zb_memlimit_bytes(void);

/* Under a limit, before OpenBLAS is loaded (zbrun re-executes itself when
 * this returns true): OPENBLAS_NUM_THREADS=1 unless the user chose, so
 * OpenBLAS starts no pool of its own. true when it changed the environment. */
bool zb_memlimit_env(void);

/* Under a limit: set up malloc and check that `world` ranks of `threads`
 * OpenMP threads each can start. ZB_ENOMEM "memory limit (ulimit -v) of N
 * MiB is too small: ... needs at least M MiB" otherwise. */
zb_status zb_memlimit_prepare(int world, int threads, zb_err *err);

/* Once every rank built its stage (the big allocations, all made before
 * the first step): is there still room for `world` OpenBLAS buffers and a
 * margin, zb_memlimit_blas_bytes(world) in all? true when unlimited. */
bool zb_memlimit_room(int world);
size_t zb_memlimit_blas_bytes(int world);

#endif
