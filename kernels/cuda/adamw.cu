/* adamw.cu - AdamW update on the GPU, twin of kernels/adamw.c.
 *   params, grads, m, v [n]; one thread per element, grid-stride.
 * The bias corrections are computed once on the host, in double, as on
 * the CPU.
 */
#include "kernels/cuda/kernels_cuda.h"

#include <math.h>

#define ZB_ADAMW_THREADS 256
#define ZB_ADAMW_MAX_BLOCKS 4096

__global__ static void adamw(float *params, const float *grads, float *m,
                             float *v, size_t n, float lr, float beta1,
                             float beta2, float eps, float wd,
                             float grad_scale, float bc1, float bc2) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float g = grads[i] * grad_scale;
        float mi = beta1 * m[i] + (1.0f - beta1) * g;
        float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
        m[i] = mi;
        v[i] = vi;
        float mhat = mi / bc1, vhat = vi / bc2;
        params[i] -= lr * (mhat / (sqrtf(vhat) + eps) + wd * params[i]);
    }
}

extern "C" cudaError_t zb_cuda_adamw_update(float *params, const float *grads,
                                            float *m, float *v, size_t n,
                                            float lr, float beta1, float beta2,
                                            float eps, float weight_decay,
                                            float grad_scale, int t,
                                            cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    float bc1 = (float)(1.0 - pow(beta1, t));
    float bc2 = (float)(1.0 - pow(beta2, t));
    size_t b = (n + ZB_ADAMW_THREADS - 1) / ZB_ADAMW_THREADS;
    unsigned blocks = (unsigned)(b < ZB_ADAMW_MAX_BLOCKS ? b : ZB_ADAMW_MAX_BLOCKS);
    adamw<<<blocks, ZB_ADAMW_THREADS, 0, stream>>>(params, grads, m, v, n, lr,
                                                   beta1, beta2, eps,
                                                   weight_decay, grad_scale,
                                                   bc1, bc2);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}
