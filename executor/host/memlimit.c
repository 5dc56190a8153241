/* memlimit.c - see memlimit.h. */
#include "executor/host/memlimit.h"

#include <cblas.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/resource.h>

#define MIB ((size_t)1 << 20)
#define BLAS_BUFFER (130 * MIB)    /* OpenBLAS BUFFER_SIZE (128 MiB) + pad */
#define ARENA (64 * MIB)           /* one glibc malloc arena (HEAP_MAX) */
#define ARENAS 2                   /* M_ARENA_MAX under a limit */
#define MARGIN (96 * MIB)          /* stdio, YAML, the plan, data reading */

size_t zb_memlimit_bytes(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return 0;
    return (size_t)rl.rlim_cur;
}

static size_t stack_bytes(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_STACK, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
        rl.rlim_cur > 64 * MIB)
        return 8 * MIB;   /* glibc's default thread stack then */
    return (size_t)rl.rlim_cur;
}

zb_status zb_memlimit_prepare(int world, int threads, zb_err *err) {
    size_t limit = zb_memlimit_bytes();
    if (limit == 0) return ZB_OK;
    mallopt(M_ARENA_MAX, ARENAS);
    size_t need = (size_t)world * BLAS_BUFFER + ARENAS * ARENA + MARGIN +
                  (size_t)world * (size_t)threads * stack_bytes();
    /* ask the kernel for the whole range at once: it fails exactly when
     * the address space left under the limit is too small */
    void *p = mmap(NULL, need, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (p == MAP_FAILED)
        return zb_fail(err, ZB_ENOMEM, "memory limit (ulimit -v) of %zu MiB is "
                       "too small: %d ranks x %d threads need at least %zu MiB "
                       "more before the model (OpenBLAS takes %zu MiB per rank); "
                       "raise the limit or run fewer ranks", limit / MIB, world,
                       threads, need / MIB, BLAS_BUFFER / MIB);
    munmap(p, need);
    return ZB_OK;
}

bool zb_memlimit_room(int world) {
    if (!zb_memlimit_bytes()) return true;
    size_t need = (size_t)world * BLAS_BUFFER + MARGIN;
    void *p = mmap(NULL, need, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (p == MAP_FAILED) return false;
    munmap(p, need);
    return true;
}

size_t zb_memlimit_blas_bytes(int world) {
    return (size_t)world * BLAS_BUFFER + MARGIN;
}

bool zb_memlimit_env(void) {
    if (!zb_memlimit_bytes() || getenv("OPENBLAS_NUM_THREADS")) return false;
    return setenv("OPENBLAS_NUM_THREADS", "1", 0) == 0;
}
