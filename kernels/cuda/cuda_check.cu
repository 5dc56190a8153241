/* cuda_check.cu - the per-thread message behind CUDA_CHECK, see
 * kernels_cuda.h. */
#include "kernels/cuda/kernels_cuda.h"

#include <cstdio>

static thread_local char zb_cuda_msg[512];

extern "C" void zb_cuda_note_error(cudaError_t e, const char *call,
                                   const char *file, int line) {
    snprintf(zb_cuda_msg, sizeof zb_cuda_msg, "%s: %s (%s:%d)", call,
             cudaGetErrorString(e), file, line);
}

extern "C" const char *zb_cuda_error_msg(void) { return zb_cuda_msg; }

extern "C" void zb_cuda_note_text(const char *call, const char *status,
                                  const char *file, int line) {
    snprintf(zb_cuda_msg, sizeof zb_cuda_msg, "%s: %s (%s:%d)", call, status,
             file, line);
}
