/* matmul.cu - the linear layer on the GPU through cuBLAS, twin of
 * kernels/matmul.c: forward, B (input gradient) and W (weight gradient) are
 * separate calls, exactly as on the CPU.
 *   inp [N, C], weight [OC, C], bias [OC] (may be NULL), out/dout [N, OC]
 * Row-major matrices are column-major transposes for cuBLAS, so
 *   out^T[OC, N]   = W^T' (op T) x inp^T       (forward)
 *   dinp^T[C, N]  += W^T x dout^T              (B)
 *   dW^T[C, OC]   += inp^T x dout (op T)       (W)
 * bf16 = false: plain fp32 GEMMs (cublasGemmEx with CUBLAS_COMPUTE_32F:
 * no TF32, for comparison with the CPU). bf16 = true: the same fp32
 * buffers, multiplied on the tensor cores with operands rounded to bf16
 * and fp32 accumulation (CUBLAS_COMPUTE_32F_FAST_16BF). The bias gradient
 * is a column sum with one owner per column (fixed order), in fp32.
 */
#include "kernels/cuda/kernels_cuda.h"

#define ZB_BIAS_COLS 32   /* columns per block in the bias gradient */
#define ZB_BIAS_ROWS 32   /* row groups per block in the bias gradient */

extern "C" const char *zb_cublas_status_name(cublasStatus_t s) {
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "CUBLAS_STATUS_(other)";
    }
}

/* A failed cuBLAS call is noted like a CUDA one and returned as
 * cudaErrorUnknown (the note keeps the cuBLAS status name). */
#define CUBLAS_CHECK(call)                                                     \
    do {                                                                       \
        cublasStatus_t zb_cublas_s_ = (call);                                  \
        if (zb_cublas_s_ != CUBLAS_STATUS_SUCCESS) {                           \
            zb_cuda_note_text(#call, zb_cublas_status_name(zb_cublas_s_),      \
                              __FILE__, __LINE__);                             \
            return cudaErrorUnknown;                                           \
        }                                                                      \
    } while (0)

/* C[m, n] (column-major, ldc) = alpha op(A) op(B) + beta C, fp32 buffers */
static cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta,
                           cublasOperation_t tb, int m, int n, int k,
                           const float *alpha, const float *A, int lda,
                           const float *B, int ldb, const float *beta,
                           float *C, int ldc, bool bf16) {
    return cublasGemmEx(h, ta, tb, m, n, k, alpha, A, CUDA_R_32F, lda, B,
                        CUDA_R_32F, ldb, beta, C, CUDA_R_32F, ldc,
                        bf16 ? CUBLAS_COMPUTE_32F_FAST_16BF : CUBLAS_COMPUTE_32F,
                        CUBLAS_GEMM_DEFAULT);
}

/* out[n, :] = bias for every row n */
__global__ static void bias_rows(float *out, const float *bias, int N, int OC) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < (size_t)N * OC) out[i] = bias[i % OC];
}

/* dbias[o] += sum_n dout[n, o]: thread (x, y) sums rows y, y+ROWS, ... of
 * column o in order, then the ROWS partial sums are added in y order. */
__global__ static void bias_backward(float *dbias, const float *dout, int N,
                                     int OC) {
    __shared__ float part[ZB_BIAS_ROWS][ZB_BIAS_COLS];
    int o = blockIdx.x * ZB_BIAS_COLS + threadIdx.x, y = threadIdx.y;
    float s = 0.0f;
    if (o < OC)
        for (int n = y; n < N; n += ZB_BIAS_ROWS) s += dout[(size_t)n * OC + o];
    part[y][threadIdx.x] = s;
    __syncthreads();
    if (y != 0 || o >= OC) return;
    float total = 0.0f;
    for (int r = 0; r < ZB_BIAS_ROWS; r++) total += part[r][threadIdx.x];
    dbias[o] += total;
}

extern "C" cudaError_t zb_cuda_matmul_forward(cublasHandle_t h, float *out,
                                              const float *inp,
                                              const float *weight,
                                              const float *bias, int N, int C,
                                              int OC, bool bf16,
                                              cudaStream_t stream) {
    if ((size_t)N * OC == 0) return cudaSuccess;
    float one = 1.0f, beta = 0.0f;
    if (bias) {
        size_t n = (size_t)N * OC;
        bias_rows<<<(unsigned)((n + 255) / 256), 256, 0, stream>>>(out, bias, N, OC);
        CUDA_CHECK(cudaGetLastError());
        beta = 1.0f;
    }
    CUBLAS_CHECK(cublasSetStream(h, stream));
    CUBLAS_CHECK(gemm(h, CUBLAS_OP_T, CUBLAS_OP_N, OC, N, C, &one, weight, C,
                      inp, C, &beta, out, OC, bf16));
    return cudaSuccess;
}

extern "C" cudaError_t zb_cuda_matmul_backward_input(cublasHandle_t h,
                                                     float *dinp,
                                                     const float *dout,
                                                     const float *weight,
                                                     int N, int C, int OC,
                                                     bool bf16,
                                                     cudaStream_t stream) {
    if ((size_t)N * C == 0) return cudaSuccess;
    float one = 1.0f;
    CUBLAS_CHECK(cublasSetStream(h, stream));
    CUBLAS_CHECK(gemm(h, CUBLAS_OP_N, CUBLAS_OP_N, C, N, OC, &one, weight, C,
                      dout, OC, &one, dinp, C, bf16));
    return cudaSuccess;
}

extern "C" cudaError_t zb_cuda_matmul_backward_weight(
    cublasHandle_t h, float *dweight, float *dbias, const float *dout,
    const float *inp, int N, int C, int OC, bool bf16, cudaStream_t stream) {
    if ((size_t)OC * C == 0) return cudaSuccess;
    float one = 1.0f;
    CUBLAS_CHECK(cublasSetStream(h, stream));
    CUBLAS_CHECK(gemm(h, CUBLAS_OP_N, CUBLAS_OP_T, C, OC, N, &one, inp, C,
                      dout, OC, &one, dweight, C, bf16));
    if (!dbias) return cudaSuccess;
    dim3 block(ZB_BIAS_COLS, ZB_BIAS_ROWS);
    bias_backward<<<(OC + ZB_BIAS_COLS - 1) / ZB_BIAS_COLS, block, 0, stream>>>(
        dbias, dout, N, OC);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}
