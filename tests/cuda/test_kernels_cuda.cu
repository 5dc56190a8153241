/* test_kernels_cuda.cu - every CUDA kernel (kernels/cuda/) against its CPU
 * twin (the C files in kernels/) on the same random inputs, including the += / =
 * contract (accumulating buffers start nonzero; written buffers start as
 * NaN garbage). Exit 0: all pass; 1: a mismatch or CUDA error; 77: no CUDA
 * device, skipped (the Automake convention).
 *
 * Build from the repository root (no GPU needed to build):
 *   mkdir -p /tmp/zbcu && for k in layernorm gelu crossentropy adamw embed; do
 *     gcc -std=c11 -O2 -fopenmp -I. -c kernels/$k.c -o /tmp/zbcu/$k.o; done
 *   nvcc -std=c++17 -O2 -I. tests/cuda/test_kernels_cuda.cu \
 *     $(find kernels/cuda -name "*.cu") /tmp/zbcu/[a-z]*.o \
 *     -o /tmp/zbcu/test_kernels_cuda -lgomp
 */
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

extern "C" {
#include "kernels/adamw.h"
#include "kernels/crossentropy.h"
#include "kernels/embed.h"
#include "kernels/gelu.h"
#include "kernels/layernorm.h"
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
    EXPECT_CUDA(zb_cuda_embed_backward(d_dwte, d_dwpe, d_dy, d_tok, B, T, C, 0));
    compare("embed out", y, d_y, 0, 0);
    compare("embed dwte +=", dwte, d_dwte, 1e-5, 1e-5);
    compare("embed dwpe +=", dwpe, d_dwpe, 1e-5, 1e-5);
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
    for (void *p : device_allocs) cudaFree(p);
    printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
