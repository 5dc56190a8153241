/* test_kernels_cuda.cu - every CUDA kernel (kernels/cuda/) against its CPU
 * twin (the C files in kernels/) on the same random inputs, including the += / =
 * contract (accumulating buffers start nonzero; written buffers start as
 * NaN garbage). Exit 0: all pass; 1: a mismatch or CUDA error; 77: no CUDA
 * device, skipped (the Automake convention).
 *
 * Build: `make cuda` (no GPU needed to build); run: `make cuda-test`.
 */
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

extern "C" {
#include "kernels/adamw.h"
#include "kernels/attention.h"
#include "kernels/crossentropy.h"
#include "kernels/embed.h"
#include "kernels/gelu.h"
#include "kernels/layernorm.h"
#include "kernels/matmul.h"
}
#include "kernels/cuda/kernels_cuda.h"

static int failures;
static std::vector<void *> device_allocs; /* freed at exit */

/* main() may stop the program: a CUDA failure ends the test with 1. */
#define EXPECT_CUDA(call)                                                      \
    do {                                                                       \
        cudaError_t e_ = (call);                                               \
        if (e_ != cudaSuccess) {                                               \
            fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #call, \
                    cudaGetErrorString(e_), zb_cuda_error_msg());              \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

static unsigned long long rng = 12345;
static float frand(void) { /* uniform in [-1, 1) */
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((double)(rng >> 40) / (1 << 23) - 1.0);
}

static std::vector<float> rand_vec(size_t n, float scale) {
    std::vector<float> v(n);
    for (auto &x : v) x = scale * frand();
    return v;
}

template <typename T> static T *to_device(const std::vector<T> &h) {
    T *d = nullptr;
    EXPECT_CUDA(cudaMalloc(&d, (h.size() ? h.size() : 1) * sizeof(T)));
    device_allocs.push_back(d);
    EXPECT_CUDA(cudaMemcpy(d, h.data(), h.size() * sizeof(T),
                           cudaMemcpyHostToDevice));
    return d;
}

/* Device buffer of n floats filled with NaN: a kernel must overwrite it. */
static float *nan_device(size_t n) {
    float *d = nullptr;
    EXPECT_CUDA(cudaMalloc(&d, n * sizeof(float)));
    device_allocs.push_back(d);
    EXPECT_CUDA(cudaMemset(d, 0xff, n * sizeof(float)));
    return d;
}

/* Copy n floats back and compare with the CPU result. */
static void compare(const char *what, const std::vector<float> &cpu,
                    const float *dev, double rtol, double atol) {
    std::vector<float> gpu(cpu.size());
    EXPECT_CUDA(cudaDeviceSynchronize());
    EXPECT_CUDA(cudaMemcpy(gpu.data(), dev, gpu.size() * sizeof(float),
                           cudaMemcpyDeviceToHost));
    size_t bad = 0, first = 0;
    double worst = 0.0;
    for (size_t i = 0; i < cpu.size(); i++) {
        double err = std::fabs((double)gpu[i] - cpu[i]);
        if (!(err <= atol + rtol * std::fabs(cpu[i]))) {
            if (!bad++) first = i;
        }
        if (err > worst || std::isnan(err)) worst = err;
    }
    printf("%-28s n=%-8zu max |gpu-cpu| %.3g  %s\n", what, cpu.size(), worst,
           bad ? "FAIL" : "ok");
    if (bad) {
        printf("  %zu mismatches, first [%zu]: gpu %.9g cpu %.9g\n", bad, first,
               gpu[first], cpu[first]);
        failures++;
    }
}

static void test_layernorm(int N, int C) {
    auto x = rand_vec((size_t)N * C, 2.0f), w = rand_vec(C, 1.0f);
    auto b = rand_vec(C, 1.0f), dy = rand_vec((size_t)N * C, 1.0f);
    auto dx = rand_vec((size_t)N * C, 1.0f), dw = rand_vec(C, 1.0f);
    auto db = rand_vec(C, 1.0f);
    float *d_x = to_device(x), *d_w = to_device(w), *d_b = to_device(b);
    float *d_dy = to_device(dy), *d_dx = to_device(dx), *d_dw = to_device(dw);
    float *d_db = to_device(db), *d_y = nan_device((size_t)N * C);
    float *d_mean = nan_device(N), *d_rstd = nan_device(N);
    std::vector<float> y((size_t)N * C), mean(N), rstd(N);
    zb_layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(),
                         b.data(), N, C);
    zb_layernorm_backward_input(dx.data(), dy.data(), x.data(), w.data(),
                                mean.data(), rstd.data(), N, C);
    zb_layernorm_backward_weight(dw.data(), db.data(), dy.data(), x.data(),
                                 mean.data(), rstd.data(), N, C);
    EXPECT_CUDA(zb_cuda_layernorm_forward(d_y, d_mean, d_rstd, d_x, d_w, d_b,
                                          N, C, 0));
    EXPECT_CUDA(zb_cuda_layernorm_backward_input(d_dx, d_dy, d_x, d_w, d_mean,
                                                 d_rstd, N, C, 0));
    EXPECT_CUDA(zb_cuda_layernorm_backward_weight(d_dw, d_db, d_dy, d_x, d_mean,
                                                  d_rstd, N, C, 0));
    compare("layernorm out", y, d_y, 1e-4, 1e-5);
    compare("layernorm mean", mean, d_mean, 1e-5, 1e-6);
    compare("layernorm rstd", rstd, d_rstd, 1e-5, 0);
    compare("layernorm dinp +=", dx, d_dx, 1e-4, 1e-5);
    compare("layernorm dweight +=", dw, d_dw, 1e-4, 1e-4);
    compare("layernorm dbias +=", db, d_db, 1e-4, 1e-4);
}

static void test_gelu(size_t n) {
    auto x = rand_vec(n, 5.0f), dy = rand_vec(n, 1.0f), dx = rand_vec(n, 1.0f);
    float *d_x = to_device(x), *d_dy = to_device(dy), *d_dx = to_device(dx);
    float *d_y = nan_device(n);
    std::vector<float> y(n);
    zb_gelu_forward(y.data(), x.data(), n);
    zb_gelu_backward(dx.data(), x.data(), dy.data(), n);
    EXPECT_CUDA(zb_cuda_gelu_forward(d_y, d_x, n, 0));
    EXPECT_CUDA(zb_cuda_gelu_backward(d_dx, d_x, d_dy, n, 0));
    compare("gelu out", y, d_y, 1e-5, 1e-6);
    compare("gelu dinp +=", dx, d_dx, 1e-5, 1e-6);
}

static void test_crossentropy(int N, int V) {
    auto z = rand_vec((size_t)N * V, 8.0f);
    std::vector<int> tgt(N);
    for (int n = 0; n < N; n++) tgt[n] = (int)(((long long)n * 7919 + 3) % V);
    float scale = 1.0f / N;
    float *d_z = to_device(z);
    int *d_t = to_device(tgt);
    float *d_loss = nan_device(N), *d_dz = nan_device((size_t)N * V);
    std::vector<float> loss(N), dz((size_t)N * V);
    zb_crossentropy_forward(loss.data(), z.data(), tgt.data(), N, V);
    zb_crossentropy_backward(dz.data(), z.data(), tgt.data(), scale, N, V);
    EXPECT_CUDA(zb_cuda_crossentropy_forward(d_loss, d_z, d_t, N, V, 0));
    EXPECT_CUDA(zb_cuda_crossentropy_backward(d_dz, d_z, d_t, scale, N, V, 0));
    compare("crossentropy losses", loss, d_loss, 1e-5, 1e-5);
    compare("crossentropy dlogits =", dz, d_dz, 1e-4, 1e-9);
}

static void test_adamw(size_t n) {
    auto p = rand_vec(n, 1.0f), g = rand_vec(n, 1.0f);
    std::vector<float> m(n, 0.0f), v(n, 0.0f);
    float *d_p = to_device(p), *d_g = to_device(g), *d_m = to_device(m);
    float *d_v = to_device(v);
    for (int t = 1; t <= 3; t++) {
        zb_adamw_update(p.data(), g.data(), m.data(), v.data(), n, 1e-3f, 0.9f,
                        0.95f, 1e-8f, 0.1f, 0.5f, t);
        EXPECT_CUDA(zb_cuda_adamw_update(d_p, d_g, d_m, d_v, n, 1e-3f, 0.9f,
                                         0.95f, 1e-8f, 0.1f, 0.5f, t, 0));
    }
    compare("adamw params (3 steps)", p, d_p, 1e-6, 1e-7);
    compare("adamw m", m, d_m, 1e-5, 1e-8);
    compare("adamw v", v, d_v, 1e-5, 1e-10);
}

static void test_embed(int B, int T, int C, int V) {
    int maxT = T + 3;
    auto wte = rand_vec((size_t)V * C, 1.0f), wpe = rand_vec((size_t)maxT * C, 1.0f);
    auto dy = rand_vec((size_t)B * T * C, 1.0f);
    auto dwte = rand_vec((size_t)V * C, 1.0f), dwpe = rand_vec((size_t)maxT * C, 1.0f);
    std::vector<int> tok((size_t)B * T);
    for (int i = 0; i < B * T; i++) tok[i] = (i * i + 3) % V; /* repeats */
    float *d_wte = to_device(wte), *d_wpe = to_device(wpe), *d_dy = to_device(dy);
    float *d_dwte = to_device(dwte), *d_dwpe = to_device(dwpe);
    int *d_tok = to_device(tok);
    float *d_y = nan_device((size_t)B * T * C);
    std::vector<float> y((size_t)B * T * C);
    zb_embed_forward(y.data(), tok.data(), wte.data(), wpe.data(), B, T, C);
    zb_embed_backward(dwte.data(), dwpe.data(), dy.data(), tok.data(), B, T, C);
    EXPECT_CUDA(zb_cuda_embed_forward(d_y, d_tok, d_wte, d_wpe, B, T, C, 0));
    EXPECT_CUDA(zb_cuda_embed_backward(d_dwte, d_dwpe, d_dy, d_tok, B, T, C, V, 0));
    compare("embed out", y, d_y, 0, 0);
    compare("embed dwte += (CPU order)", dwte, d_dwte, 0, 0);
    compare("embed dwpe +=", dwpe, d_dwpe, 1e-5, 1e-5);
}

/* Fused attention (online softmax) against the CPU's explicit [T, T]
 * softmax: outputs, and B's dqkv (written whole: poisoned first). */
static void test_attention(int B, int T, int C, int NH) {
    size_t n3 = (size_t)B * T * 3 * C, n1 = (size_t)B * T * C;
    auto qkv = rand_vec(n3, 1.5f), dy = rand_vec(n1, 1.0f);
    std::vector<float> y(n1), att((size_t)B * NH * T * T), datt(att.size());
    std::vector<float> dqkv(n3, 0.0f);
    zb_attention_forward(y.data(), att.data(), qkv.data(), B, T, C, NH);
    zb_attention_backward(dqkv.data(), datt.data(), dy.data(), qkv.data(),
                          att.data(), B, T, C, NH);
    float *d_qkv = to_device(qkv), *d_dy = to_device(dy);
    float *d_y = nan_device(n1), *d_lse = nan_device((size_t)B * NH * T);
    float *d_dsum = nan_device((size_t)B * NH * T), *d_dqkv = nan_device(n3);
    EXPECT_CUDA(zb_cuda_attention_forward(d_y, d_lse, d_qkv, B, T, C, NH, 0));
    EXPECT_CUDA(zb_cuda_attention_backward(d_dqkv, d_dsum, d_dy, d_qkv, d_y,
                                           d_lse, B, T, C, NH, 0));
    char what[64];
    snprintf(what, sizeof what, "attention out T=%d hs=%d", T, C / NH);
    compare(what, y, d_y, 1e-4, 1e-5);
    snprintf(what, sizeof what, "attention dqkv T=%d hs=%d", T, C / NH);
    compare(what, dqkv, d_dqkv, 1e-3, 1e-5);
}

/* cuBLAS linear layer against OpenBLAS: forward (=, with and without
 * bias), B and W (+= onto nonzero buffers). */
static void test_matmul(int N, int C, int OC, cublasHandle_t h) {
    auto x = rand_vec((size_t)N * C, 1.0f), w = rand_vec((size_t)OC * C, 0.5f);
    auto b = rand_vec(OC, 1.0f), dy = rand_vec((size_t)N * OC, 1.0f);
    auto dx = rand_vec((size_t)N * C, 1.0f), dw = rand_vec((size_t)OC * C, 1.0f);
    auto db = rand_vec(OC, 1.0f);
    std::vector<float> y((size_t)N * OC), y0((size_t)N * OC);
    float *d_x = to_device(x), *d_w = to_device(w), *d_b = to_device(b);
    float *d_dy = to_device(dy), *d_dx = to_device(dx), *d_dw = to_device(dw);
    float *d_db = to_device(db);
    float *d_y = nan_device(y.size()), *d_y0 = nan_device(y.size());
    zb_matmul_forward(y.data(), x.data(), w.data(), b.data(), N, C, OC);
    zb_matmul_forward(y0.data(), x.data(), w.data(), NULL, N, C, OC);
    zb_matmul_backward_input(dx.data(), dy.data(), w.data(), N, C, OC);
    zb_matmul_backward_weight(dw.data(), db.data(), dy.data(), x.data(), N, C, OC);
    EXPECT_CUDA(zb_cuda_matmul_forward(h, d_y, d_x, d_w, d_b, N, C, OC, false, 0));
    EXPECT_CUDA(zb_cuda_matmul_forward(h, d_y0, d_x, d_w, NULL, N, C, OC, false, 0));
    EXPECT_CUDA(zb_cuda_matmul_backward_input(h, d_dx, d_dy, d_w, N, C, OC, false, 0));
    EXPECT_CUDA(zb_cuda_matmul_backward_weight(h, d_dw, d_db, d_dy, d_x, N, C,
                                               OC, false, 0));
    compare("matmul out (bias)", y, d_y, 1e-4, 1e-4);
    compare("matmul out (no bias)", y0, d_y0, 1e-4, 1e-4);
    compare("matmul dinp +=", dx, d_dx, 1e-4, 1e-4);
    compare("matmul dweight +=", dw, d_dw, 1e-4, 1e-4);
    compare("matmul dbias +=", db, d_db, 1e-4, 1e-4);
}

/* bf16 tensor-core GEMMs (fp32 buffers): the CPU fp32 result within bf16
 * rounding (operands rounded to 8 bits of mantissa, fp32 sums). */
static void test_matmul_bf16(int N, int C, int OC, cublasHandle_t h) {
    auto x = rand_vec((size_t)N * C, 1.0f), w = rand_vec((size_t)OC * C, 0.5f);
    auto dy = rand_vec((size_t)N * OC, 1.0f);
    std::vector<float> y((size_t)N * OC), dx((size_t)N * C, 0.0f),
        dw((size_t)OC * C, 0.0f);
    float *d_x = to_device(x), *d_w = to_device(w), *d_dy = to_device(dy);
    float *d_dx = to_device(dx), *d_dw = to_device(dw), *d_y = nan_device(y.size());
    zb_matmul_forward(y.data(), x.data(), w.data(), NULL, N, C, OC);
    zb_matmul_backward_input(dx.data(), dy.data(), w.data(), N, C, OC);
    zb_matmul_backward_weight(dw.data(), NULL, dy.data(), x.data(), N, C, OC);
    EXPECT_CUDA(zb_cuda_matmul_forward(h, d_y, d_x, d_w, NULL, N, C, OC, true, 0));
    EXPECT_CUDA(zb_cuda_matmul_backward_input(h, d_dx, d_dy, d_w, N, C, OC, true, 0));
    EXPECT_CUDA(zb_cuda_matmul_backward_weight(h, d_dw, NULL, d_dy, d_x, N, C,
                                               OC, true, 0));
    /* |error| ~ 2^-8 |a||b| sqrt(K): allow 4x that */
    compare("matmul bf16 out", y, d_y, 0, 4.0 * 0.5 * std::sqrt((double)C) / 256);
    compare("matmul bf16 dinp", dx, d_dx, 0, 4.0 * 0.5 * std::sqrt((double)OC) / 256);
    compare("matmul bf16 dweight", dw, d_dw, 0, 4.0 * std::sqrt((double)N) / 256);
}

/* The stage's residual add and the fixed-order sums. */
static void test_stage_ops(int N, int C) {
    size_t n = (size_t)N * C;
    auto x = rand_vec(n, 1.0f), part = rand_vec(n, 1.0f), b = rand_vec(C, 1.0f);
    std::vector<float> y(n);
    for (int i = 0; i < N; i++)
        for (int c = 0; c < C; c++) {
            size_t k = (size_t)i * C + c;
            y[k] = x[k] + (part[k] + b[c]);
        }
    float *d_x = to_device(x), *d_p = to_device(part), *d_b = to_device(b);
    float *d_y = nan_device(n);
    EXPECT_CUDA(zb_cuda_residual_add(d_y, d_x, d_p, d_b, N, C, 0));
    compare("residual add", y, d_y, 0, 0);
    double *d_acc = nullptr, *d_scr = nullptr, acc[2] = {0.5, -0.25};
    EXPECT_CUDA(cudaMalloc(&d_acc, 2 * sizeof(double)));
    EXPECT_CUDA(cudaMalloc(&d_scr, zb_cuda_sum_scratch_doubles() * sizeof(double)));
    device_allocs.push_back(d_acc);
    device_allocs.push_back(d_scr);
    EXPECT_CUDA(cudaMemcpy(d_acc, acc, sizeof acc, cudaMemcpyHostToDevice));
    EXPECT_CUDA(zb_cuda_sumsq_add(&d_acc[0], d_scr, d_x, n, 0));
    EXPECT_CUDA(zb_cuda_sum_add(&d_acc[1], d_scr, d_x, n, 0));
    EXPECT_CUDA(cudaMemcpy(acc, d_acc, sizeof acc, cudaMemcpyDeviceToHost));
    double want_sq = 0.5 + zb_sumsq(x.data(), n), want_s = -0.25;
    for (size_t i = 0; i < n; i++) want_s += x[i];
    bool ok = std::fabs(acc[0] - want_sq) <= 1e-9 * std::fabs(want_sq) &&
              std::fabs(acc[1] - want_s) <= 1e-9 * (1.0 + std::fabs(want_s));
    printf("%-28s n=%-8zu sumsq %.12g (cpu %.12g) sum %.12g (cpu %.12g)  %s\n",
           "sums (+= onto 0.5, -0.25)", n, acc[0], want_sq, acc[1], want_s,
           ok ? "ok" : "FAIL");
    if (!ok) failures++;
}

int main(void) {
    int ndev = 0;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    if (e != cudaSuccess || ndev == 0) {
        printf("skipped: no CUDA device (%s)\n",
               e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        return 77;
    }
    test_layernorm(37, 200);
    test_layernorm(256, 768);
    test_gelu(100003);
    test_crossentropy(33, 300);
    test_crossentropy(5, 50257);
    test_adamw(100003);
    test_embed(3, 16, 96, 11);
    test_embed(4, 700, 40, 1000); /* positions past a token tile, V > ranges */
    /* odd T (partial tiles), every supported head size, T past a tile */
    test_attention(2, 7, 32, 2);
    test_attention(1, 131, 64, 2);
    test_attention(2, 65, 128, 2);
    test_attention(1, 200, 256, 2);
    test_attention(1, 300, 768, 12);
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "cublasCreate failed\n");
        return 1;
    }
    cublasSetMathMode(h, CUBLAS_DEFAULT_MATH); /* no TF32: fp32 as the CPU */
    test_matmul(37, 45, 29, h);
    test_matmul(128, 768, 2304, h);
    test_matmul(5, 3, 1, h);
    test_matmul_bf16(64, 256, 96, h);
    cublasDestroy(h);
    test_stage_ops(37, 53);
    test_stage_ops(1024, 768);
    for (void *p : device_allocs) cudaFree(p);
    printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
