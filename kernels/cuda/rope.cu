/* rope.cu - rotary position embedding on the GPU, twin of kernels/rope.c.
 *   x, dx [B, T, ld]; the first H heads of hs channels of each row turn,
 *   in place
 * One thread per channel pair (row, head, i), grid-stride; the angle and
 * its cosine and sine in double, rounded once to float, and the turn of
 * kernels/rope_math.h, as on the CPU. (Double trigonometry is slow on
 * consumer GPUs; a [T, hs/2] table would remove it when it shows.)
 */
#include "kernels/cuda/act.cuh"
#include "kernels/cuda/kernels_cuda.h"
#include "kernels/cuda/llama_cuda.h"
#include "kernels/rope_math.h"

#define ZB_ROPE_THREADS 256
#define ZB_ROPE_MAX_BLOCKS 4096

/* dir 1: turn by +angle (forward); -1: by -angle (backward) */
template <typename T>
__global__ static void rope_turn_all(T *x, int B, int T_, int H, int hs,
                                     int ld, double theta, int dir) {
    int half = hs / 2;
    size_t total = (size_t)B * T_ * H * half;
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < total;
         j += (size_t)gridDim.x * blockDim.x) {
        int i = (int)(j % half);
        size_t rh = j / half; /* row * H + head */
        int h = (int)(rh % H);
        size_t row = rh / H;
        int t = (int)(row % T_);
        double ang = zb_rope_angle(t, i, hs, theta);
        float c = (float)cos(ang), s = dir * (float)sin(ang);
        T *p = x + row * ld + (size_t)h * hs + 2 * i;
        float x0 = zb_ld(p[0]), x1 = zb_ld(p[1]);
        zb_rope_turn(&x0, &x1, c, s);
        p[0] = zb_to<T>(x0);
        p[1] = zb_to<T>(x1);
    }
}

template <typename T>
static cudaError_t turn(T *x, int B, int T_, int H, int hs, int ld,
                        float theta, int dir, cudaStream_t stream) {
    size_t total = (size_t)B * T_ * H * (hs / 2);
    if (total == 0) return cudaSuccess;
    size_t b = (total + ZB_ROPE_THREADS - 1) / ZB_ROPE_THREADS;
    unsigned blocks = (unsigned)(b < ZB_ROPE_MAX_BLOCKS ? b : ZB_ROPE_MAX_BLOCKS);
    rope_turn_all<T><<<blocks, ZB_ROPE_THREADS, 0, stream>>>(x, B, T_, H, hs,
                                                             ld, theta, dir);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

extern "C" cudaError_t zb_cuda_rope_forward(float *x, int B, int T, int H,
                                            int hs, int ld, float theta,
                                            cudaStream_t stream) {
    return turn(x, B, T, H, hs, ld, theta, 1, stream);
}

extern "C" cudaError_t zb_cuda_rope_backward(float *dx, int B, int T, int H,
                                             int hs, int ld, float theta,
                                             cudaStream_t stream) {
    return turn(dx, B, T, H, hs, ld, theta, -1, stream);
}

extern "C" cudaError_t zb_cuda_rope_forward_bf16(void *x, int B, int T, int H,
                                                 int hs, int ld, float theta,
                                                 cudaStream_t stream) {
    return turn((zb_bf16 *)x, B, T, H, hs, ld, theta, 1, stream);
}

extern "C" cudaError_t zb_cuda_rope_backward_bf16(void *dx, int B, int T,
                                                  int H, int hs, int ld,
                                                  float theta,
                                                  cudaStream_t stream) {
    return turn((zb_bf16 *)dx, B, T, H, hs, ld, theta, -1, stream);
}
