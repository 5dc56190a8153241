/* test_vocab_cuda.cu - the output layer's vocabulary shards (executor/
 * stage/vocab_head.h: S, the combine, variant 2's input gradient, T) run
 * through the CUDA op table against the same calls through the CPU op table
 * (kernels/vocab_out.c's twins in kernels/cuda/vocab_out.cu, with the
 * GEMMs and cross-entropy pieces around them), for 3 shards of an uneven
 * vocabulary (V 301) with padded logits rows, variants 1 and 2, fp32
 * activations; and vocab_exp with bf16 storage.
 * Tolerances: the statistics are summed in double on both sides, but
 * over logits that each side's fp32 GEMM rounds its own way (cuBLAS and
 * OpenBLAS order the C = 64 products differently): 1e-5 relative to
 * 1 + |value| (the first H200 run, 2026-12-04, failed the 1e-9 this
 * file first asked for; it prints the worst); GEMM outputs fp32 to 1e-4
 * relative + 1e-5.
 * Exit 0: all pass; 1: a mismatch or any CUDA error; 77: no CUDA device,
 * skipped. Build: `make cuda` (no GPU needed); run: `make cuda-test`.
 */
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

extern "C" {
#include "executor/stage/ops.h"
#include "executor/stage/vocab_head.h"
#include "kernels/bf16.h"
#include "kernels/vocab_out.h"
}
#include "tests/cuda/cuda_present.h"
#include "tests/cuda/cuda_test.h"

typedef std::vector<float> vec;
typedef std::vector<double> dvec;

enum { N = 24, C = 64, V = 301, P = 3, PAD = 5 };

static vec rand_vec(size_t n, float scale) {
    vec v(n);
    for (auto &x : v) x = scale * frand();
    return v;
}

template <typename T> static T *up(const std::vector<T> &h) {
    T *d = (T *)dev_bytes(h.size() * sizeof(T));
    EXPECT_CUDA(cudaMemcpy(d, h.data(), h.size() * sizeof(T),
                           cudaMemcpyHostToDevice));
    return d;
}

template <typename T> static std::vector<T> down(const T *d, size_t n) {
    std::vector<T> h(n);
    EXPECT_CUDA(cudaDeviceSynchronize());
    EXPECT_CUDA(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
}

static void compare_d(const char *what, const dvec &cpu, const dvec &gpu,
                      double rtol) {
    size_t bad = 0;
    double worst = 0.0;
    for (size_t i = 0; i < cpu.size(); i++) {
        double e = std::fabs(gpu[i] - cpu[i]) / (1.0 + std::fabs(cpu[i]));
        if (!(e <= rtol)) bad++;
        if (!(e <= worst)) worst = e;
    }
    printf("%-34s n=%-8zu max rel %.3g  %s\n", what, cpu.size(), worst,
           bad ? "FAIL" : "ok");
    if (bad) failures++;
}

/* One shard's buffers on one side (host for cpu, device for cuda). */
struct side {
    zb_vocab_shard s;
    float *dW, *dx;
};

/* docs/plan-format.md's split: rows [k V / P, (k + 1) V / P) */
static void shard_rows(int k, int *v0, int *Vl) {
    *v0 = k * V / P;
    *Vl = (k + 1) * V / P - *v0;
}

/* shard k of (X, W, targets) on the cpu (host buffers) or the gpu */
static side make_side(bool gpu, int k, const vec &X, const vec &W,
                      const std::vector<int> &tg) {
    int v0, Vl;
    shard_rows(k, &v0, &Vl);
    int ld = Vl + PAD;
    vec w(W.begin() + (size_t)v0 * C, W.begin() + (size_t)(v0 + Vl) * C);
    vec zl((size_t)N * ld, 0.0f), zc((size_t)N * C, 0.0f), zw(w.size(), 0.0f);
    dvec z3(3 * N, 0.0);
    side h;
    auto F = [&](const vec &v) -> float * {
        if (gpu) return up(v);
        float *p = (float *)malloc(v.size() * sizeof(float) + 1);
        memcpy(p, v.data(), v.size() * sizeof(float));
        return p;
    };
    auto D = [&](const dvec &v) -> double * {
        if (gpu) return up(v);
        double *p = (double *)malloc(v.size() * sizeof(double));
        memcpy(p, v.data(), v.size() * sizeof(double));
        return p;
    };
    int *t = gpu ? up(tg) : (int *)tg.data();
    float *wd = F(w);
    h.dW = F(zw);
    h.dx = F(zc);
    h.s = zb_vocab_shard{N, C, v0, Vl, ld, (const zb_act *)F(X),
                         (const zb_act *)wd, wd, h.dW, t,
                         (zb_act *)F(zl), (zb_act *)F(zl), D(z3), D(z3),
                         F(zc), F(zc)};
    return h;
}

#define RUN(call)                                                              \
    do {                                                                       \
        zb_err e_ = {};                                                        \
        zb_err *err = &e_;                                                     \
        if ((call) != ZB_OK) {                                                 \
            fprintf(stderr, "%s: %s\n", #call, e_.msg);                        \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

/* S on every shard, the statistics gathered in shard order, the combine,
 * (variant 2) dx2, T. The gather runs on the host (the transport's part). */
static void run(const zb_ops *o, bool gpu, side *sh, int variant,
                double *acc, float *losses) {
    dvec tab((size_t)P * 3 * N);
    for (int k = 0; k < P; k++) {
        RUN(zb_vocab_s(o, &sh[k].s, variant, err));
        dvec l = gpu ? down(sh[k].s.local, 3 * N)
                     : dvec(sh[k].s.local, sh[k].s.local + 3 * N);
        memcpy(tab.data() + (size_t)k * 3 * N, l.data(), 3 * N * sizeof(double));
    }
    double *t = gpu ? up(tab) : tab.data();
    for (int k = 0; k < P; k++) {
        RUN(zb_vocab_combine(o, &sh[k].s, t, P, err));
        if (variant == 2) RUN(zb_vocab_dx2(o, &sh[k].s, 0.5f, sh[k].dx, err));
        RUN(zb_vocab_t(o, &sh[k].s, variant, 0.5f, k == 0 ? acc : nullptr,
                       losses, variant == 1 ? sh[k].dx : nullptr, err));
    }
}

static void test_shards(int variant) {
    rng = 77 + variant;
    vec X = rand_vec((size_t)N * C, 1.0f), W = rand_vec((size_t)V * C, 0.3f);
    std::vector<int> tg(N);
    for (int n = 0; n < N; n++) tg[n] = (n * 37 + 5) % V;
    zb_ops c, g;
    zb_ops_cpu(&c);
    open_ops(false, false, N, V, &g);
    side hc[P], hg[P];
    for (int k = 0; k < P; k++) {
        hc[k] = make_side(false, k, X, W, tg);
        hg[k] = make_side(true, k, X, W, tg);
    }
    double *dacc = up(dvec(1, 0.0));
    float *dloss = up(vec(N, 0.0f));
    double cacc = 0.0;
    vec closs(N);
    run(&c, false, hc, variant, &cacc, closs.data());
    run(&g, true, hg, variant, dacc, dloss);
    char what[80];
    for (int k = 0; k < P; k++) {
        const zb_vocab_shard &a = hc[k].s, &b = hg[k].s;
        snprintf(what, sizeof what, "v%d shard %d stats", variant, k);
        compare_d(what, dvec(a.local, a.local + 3 * N), down(b.local, 3 * N),
                  1e-5);
        snprintf(what, sizeof what, "v%d shard %d combined", variant, k);
        compare_d(what, dvec(a.global, a.global + 3 * N),
                  down(b.global, 3 * N), 1e-5);
        snprintf(what, sizeof what, "v%d shard %d dx", variant, k);
        compare_vec(what, vec(hc[k].dx, hc[k].dx + (size_t)N * C),
                    down(hg[k].dx, (size_t)N * C), 1e-4, 1e-5);
        snprintf(what, sizeof what, "v%d shard %d dW", variant, k);
        size_t nw = (size_t)a.Vl * C;
        compare_vec(what, vec(hc[k].dW, hc[k].dW + nw), down(hg[k].dW, nw),
                    1e-4, 1e-5);
    }
    snprintf(what, sizeof what, "v%d losses", variant);
    compare_vec(what, closs, down(dloss, N), 1e-6, 1e-6);
    compare_d("loss sum", dvec(1, cacc), down(dacc, 1), 1e-5);
    EXPECT_CUDA(cudaDeviceSynchronize());
    g.destroy(g.ctx);
    /* host buffers of the cpu side are left to the process's end */
}

/* vocab_exp with bf16 storage: the GPU rounds what the CPU kernel gives */
static void test_exp_bf16(void) {
    enum { R = 9, Vl = 130, LD = 136 };
    rng = 5;
    vec z = rand_vec((size_t)R * LD, 3.0f), e((size_t)R * LD, 0.0f);
    std::vector<uint16_t> zb(z.size()), eb(z.size());
    zb_bf16_store(zb.data(), z.data(), z.size());
    zb_bf16_load(z.data(), zb.data(), z.size());
    dvec m(R);
    for (int r = 0; r < R; r++) m[r] = 0.25 * r - 1.0;
    zb_vocab_exp(e.data(), z.data(), m.data(), R, Vl, LD);
    zb_ops g;
    open_ops(true, true, R, LD, &g);
    uint16_t *dz = up(zb), *de = up(std::vector<uint16_t>(z.size(), 0));
    zb_err err = {};
    if (g.vocab_exp(g.ctx, (zb_act *)de, (const zb_act *)dz, up(m), R, Vl, LD,
                    &err) != ZB_OK) {
        fprintf(stderr, "vocab_exp bf16: %s\n", err.msg);
        exit(1);
    }
    std::vector<uint16_t> got = down(de, z.size());
    vec gf(z.size()), cf(z.size());
    zb_bf16_load(gf.data(), got.data(), got.size());
    for (size_t i = 0; i < z.size(); i++)
        cf[i] = (int)(i % LD) < Vl ? zb_bf16_to_f32(zb_bf16_from_f32(e[i])) : 0;
    compare_vec("bf16 vocab_exp", cf, gf, 1.0 / 128, 1e-6);
    g.destroy(g.ctx);
}

int main(void) {
    int present = zb_test_cuda_present();
    if (present != 0) return present;
    test_shards(1);
    test_shards(2);
    test_exp_bf16();
    return zb_test_finish();
}
