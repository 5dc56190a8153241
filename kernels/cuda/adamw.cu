/* adamw.cu - AdamW update on the GPU, twin of kernels/adamw.c.
 *   params, grads, m, v [n]; one thread per element, grid-stride.
 * The bias corrections are computed once on the host, in double, as on
 * the CPU.
 */
#include "kernels/adamw_math.h"
#include "kernels/cuda/kernels_cuda.h"

#include <math.h>

#define ZB_ADAMW_THREADS 256
#define ZB_ADAMW_MAX_BLOCKS 4096

__global__ static void adamw(float *params, const float *grads, float *m,
                             float *v, size_t n, zb_adamw_k k) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        zb_adamw_elem(&params[i], &m[i], &v[i], grads[i], &k);
}

extern "C" cudaError_t zb_cuda_adamw_update(float *params, const float *grads,
                                            float *m, float *v, size_t n,
                                            float lr, float beta1, float beta2,
                                            float eps, float weight_decay,
                                            float grad_scale, int t,
                                            cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    zb_adamw_k k = {lr, beta1, beta2, eps, weight_decay, grad_scale,
                    (float)(1.0 - pow(beta1, t)), (float)(1.0 - pow(beta2, t))};
    size_t b = (n + ZB_ADAMW_THREADS - 1) / ZB_ADAMW_THREADS;
    unsigned blocks = (unsigned)(b < ZB_ADAMW_MAX_BLOCKS ? b : ZB_ADAMW_MAX_BLOCKS);
    adamw<<<blocks, ZB_ADAMW_THREADS, 0, stream>>>(params, grads, m, v, n, k);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}
