/* matmul.cu - the pieces around a cuBLAS GEMM that the op table's gemm
 * (executor/stage/ops_cuda.cu) and the bias gradient need, twins of
 * kernels/matmul.c: the bias copied into every row before a beta = 1 GEMM,
 * and the column sums of dout (bias gradient) over the full grid: slabs of
 * rows (reduce.cuh), then the slabs in order per column (fixed order,
 * fp32). Also the names of cuBLAS statuses for messages.
 */
#include "kernels/cuda/act.cuh"
#include "kernels/cuda/kernels_cuda.h"
#include "kernels/cuda/reduce.cuh"

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

/* out[n, o] = bias[o] for every row n (row stride ldo) */
template <typename T>
__global__ static void bias_rows(T *out, const float *bias, int N, int OC,
                                 int ldo) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < (size_t)N * OC)
        out[(i / OC) * ldo + i % OC] = zb_to<T>(bias[i % OC]);
}

/* partial[slab, o] = sum of dout[n, o] over the slab's rows (reduce.cuh):
 * thread (x, y) sums rows y, y+ROWS, ... of the slab in order, then the
 * ROWS partial sums are added in y order. */
template <typename T>
__global__ static void bias_backward(float *partial, const T *dout, int N,
                                     int OC) {
    __shared__ float part[ZB_BIAS_ROWS][ZB_BIAS_COLS];
    int o = blockIdx.x * ZB_BIAS_COLS + threadIdx.x, y = threadIdx.y;
    int rows = zb_wgrad_rows(N), n0 = blockIdx.y * rows;
    int n1 = min(N, n0 + rows);
    float s = 0.0f;
    if (o < OC)
        for (int n = n0 + y; n < n1; n += ZB_BIAS_ROWS)
            s += zb_ld(dout[(size_t)n * OC + o]);
    part[y][threadIdx.x] = s;
    __syncthreads();
    if (y != 0 || o >= OC) return;
    float total = 0.0f;
    for (int r = 0; r < ZB_BIAS_ROWS; r++) total += part[r][threadIdx.x];
    partial[(size_t)blockIdx.y * OC + o] = total;
}

/* dbias[o] += the slabs' partials in order */
__global__ static void bias_final(float *dbias, const float *partial,
                                  int slabs, int OC) {
    int o = blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= OC) return;
    float s = 0.0f;
    for (int k = 0; k < slabs; k++) s += partial[(size_t)k * OC + o];
    dbias[o] += s;
}

template <typename T>
static cudaError_t rows(T *out, const float *bias, int N, int OC, int ldo,
                        cudaStream_t stream) {
    size_t n = (size_t)N * OC;
    if (n == 0) return cudaSuccess;
    bias_rows<T><<<(unsigned)((n + 255) / 256), 256, 0, stream>>>(out, bias, N,
                                                                 OC, ldo);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

template <typename T>
static cudaError_t colsum(float *dbias, const T *dout, int N, int OC,
                          float *scratch, cudaStream_t stream) {
    if (OC <= 0 || N <= 0) return cudaSuccess;
    int slabs = zb_wgrad_slabs(N);
    dim3 block(ZB_BIAS_COLS, ZB_BIAS_ROWS);
    dim3 grid((OC + ZB_BIAS_COLS - 1) / ZB_BIAS_COLS, slabs);
    bias_backward<T><<<grid, block, 0, stream>>>(scratch, dout, N, OC);
    CUDA_CHECK(cudaGetLastError());
    bias_final<<<(OC + 255) / 256, 256, 0, stream>>>(dbias, scratch, slabs, OC);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

extern "C" cudaError_t zb_cuda_bias_rows(float *out, const float *bias,
                                        int N, int OC, int ldo,
                                        cudaStream_t stream) {
    return rows(out, bias, N, OC, ldo, stream);
}

extern "C" cudaError_t zb_cuda_colsum_add(float *dbias, const float *dout,
                                          int N, int OC, float *scratch,
                                          cudaStream_t stream) {
    return colsum(dbias, dout, N, OC, scratch, stream);
}

extern "C" cudaError_t zb_cuda_bias_rows_bf16(void *out, const float *bias,
                                             int N, int OC, int ldo,
                                             cudaStream_t stream) {
    return rows((zb_bf16 *)out, bias, N, OC, ldo, stream);
}

extern "C" cudaError_t zb_cuda_colsum_add_bf16(float *dbias, const void *dout,
                                               int N, int OC, float *scratch,
                                               cudaStream_t stream) {
    return colsum(dbias, (const zb_bf16 *)dout, N, OC, scratch, stream);
}
