/* test_llama_cuda.cu - the Llama-shaped CUDA kernels (kernels/cuda/
 * rmsnorm.cu, swiglu.cu, rope.cu) against their CPU twins (kernels/
 * rmsnorm.c, swiglu.c, rope.c) on the same random inputs, in fp32 and with
 * bf16 storage (inputs rounded to bf16 on both sides), including the += /
 * = contract (accumulating buffers start nonzero; written ones as NaN);
 * and the CUDA op table's Llama entries (rms_*, swiglu_*, rope_*, gqa_*:
 * GQA as GEMMs around the softmax kernels) against the CPU ops, fp32 and
 * bf16 activations, with kv_heads < heads and = heads.
 * Tolerances: fp32, the CPU sums row statistics in double and the GPU in
 * float (a few ulp of C terms); bf16, one rounding of a stored element is
 * 2^-9 relative, two (an input's and the output's) 2^-8.
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
#include "kernels/attention.h"
#include "kernels/bf16.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/swiglu.h"
}
#include "kernels/cuda/kernels_cuda.h"
#include "kernels/cuda/llama_cuda.h"
#include "tests/cuda/cuda_present.h"
#include "tests/cuda/cuda_test.h"

typedef std::vector<float> vec;

/* n values of scale * U[-1, 1); rounded to bf16 when bf (so that both
 * sides start from the same values) */
static vec rand_vec(size_t n, float scale, bool bf = false) {
    vec v(n);
    for (auto &x : v) {
        x = scale * frand();
        if (bf) x = zb_bf16_to_f32(zb_bf16_from_f32(x));
    }
    return v;
}

/* h on the device as fp32 or bf16 (2-byte) elements */
static void *up(const vec &h, bool bf) {
    size_t es = bf ? 2 : sizeof(float);
    void *d = dev_bytes(h.size() * es);
    if (bf) {
        std::vector<uint16_t> b(h.size());
        zb_bf16_store(b.data(), h.data(), h.size());
        EXPECT_CUDA(cudaMemcpy(d, b.data(), b.size() * 2,
                               cudaMemcpyHostToDevice));
    } else {
        EXPECT_CUDA(cudaMemcpy(d, h.data(), h.size() * sizeof(float),
                               cudaMemcpyHostToDevice));
    }
    return d;
}

/* n elements of NaN (fp32 or bf16) */
static void *nan_dev(size_t n, bool bf) {
    return nan_bytes(n * (bf ? 2 : sizeof(float)));
}

/* n elements back as floats (after the work enqueued so far) */
static vec down(const void *d, size_t n, bool bf) {
    vec h(n);
    EXPECT_CUDA(cudaDeviceSynchronize());
    if (bf) {
        std::vector<uint16_t> b(n);
        EXPECT_CUDA(cudaMemcpy(b.data(), d, n * 2, cudaMemcpyDeviceToHost));
        zb_bf16_load(h.data(), b.data(), n);
    } else {
        EXPECT_CUDA(cudaMemcpy(h.data(), d, n * sizeof(float),
                               cudaMemcpyDeviceToHost));
    }
    return h;
}

#define BF 0.0079 /* two bf16 roundings (2 x 2^-8) relative */

static void label(char *buf, size_t n, const char *what, bool bf) {
    snprintf(buf, n, "%s %s", bf ? "bf16" : "fp32", what);
}

static void test_rmsnorm(int N, int C, bool bf) {
    vec x = rand_vec((size_t)N * C, 2.0f, bf), w = rand_vec(C, 1.0f);
    vec dy = rand_vec((size_t)N * C, 1.0f, bf), dx = rand_vec((size_t)N * C, 1.0f, bf);
    vec dw = rand_vec(C, 1.0f), y((size_t)N * C), r(N);
    void *d_x = up(x, bf), *d_dy = up(dy, bf), *d_dx = up(dx, bf);
    float *d_w = (float *)up(w, false), *d_dw = (float *)up(dw, false);
    void *d_y = nan_dev((size_t)N * C, bf);
    float *d_r = (float *)nan_dev(N, false);
    float *d_scr = (float *)nan_dev(zb_cuda_wgrad_scratch_floats(N, C), false);
    zb_rmsnorm_forward(y.data(), r.data(), x.data(), w.data(), N, C);
    zb_rmsnorm_backward_input(dx.data(), dy.data(), x.data(), w.data(),
                              r.data(), N, C);
    zb_rmsnorm_backward_weight(dw.data(), dy.data(), x.data(), r.data(), N, C);
    if (bf) {
        EXPECT_CUDA(zb_cuda_rmsnorm_forward_bf16(d_y, d_r, d_x, d_w, N, C, 0));
        EXPECT_CUDA(zb_cuda_rmsnorm_backward_input_bf16(d_dx, d_dy, d_x, d_w,
                                                        d_r, N, C, 0));
        EXPECT_CUDA(zb_cuda_rmsnorm_backward_weight_bf16(d_dw, d_dy, d_x, d_r,
                                                         N, C, d_scr, 0));
    } else {
        EXPECT_CUDA(zb_cuda_rmsnorm_forward((float *)d_y, d_r, (float *)d_x,
                                            d_w, N, C, 0));
        EXPECT_CUDA(zb_cuda_rmsnorm_backward_input(
            (float *)d_dx, (float *)d_dy, (float *)d_x, d_w, d_r, N, C, 0));
        EXPECT_CUDA(zb_cuda_rmsnorm_backward_weight(
            d_dw, (float *)d_dy, (float *)d_x, d_r, N, C, d_scr, 0));
    }
    char what[64];
    label(what, sizeof what, "rmsnorm out", bf);
    compare_vec(what, y, down(d_y, y.size(), bf), bf ? BF : 1e-5, 1e-5);
    label(what, sizeof what, "rmsnorm rstd (fp32)", bf);
    compare_vec(what, r, down(d_r, N, false), 1e-5, 0);
    label(what, sizeof what, "rmsnorm dinp +=", bf);
    compare_vec(what, dx, down(d_dx, dx.size(), bf), bf ? BF : 1e-4,
                bf ? 1e-2 : 1e-5);
    /* fp32 sums of N products each side, another order */
    label(what, sizeof what, "rmsnorm dweight += (fp32)", bf);
    compare_vec(what, dw, down(d_dw, C, false), 1e-4, 1e-4 * std::sqrt((double)N));
}

static void test_swiglu(int N, int F, bool bf) {
    size_t nab = (size_t)N * 2 * F, ny = (size_t)N * F;
    vec ab = rand_vec(nab, 6.0f, bf), dy = rand_vec(ny, 1.0f, bf);
    vec dab = rand_vec(nab, 1.0f, bf), y(ny);
    void *d_ab = up(ab, bf), *d_dy = up(dy, bf), *d_dab = up(dab, bf);
    void *d_y = nan_dev(ny, bf);
    zb_swiglu_forward(y.data(), ab.data(), N, F);
    zb_swiglu_backward(dab.data(), ab.data(), dy.data(), N, F);
    if (bf) {
        EXPECT_CUDA(zb_cuda_swiglu_forward_bf16(d_y, d_ab, N, F, 0));
        EXPECT_CUDA(zb_cuda_swiglu_backward_bf16(d_dab, d_ab, d_dy, N, F, 0));
    } else {
        EXPECT_CUDA(zb_cuda_swiglu_forward((float *)d_y, (float *)d_ab, N, F, 0));
        EXPECT_CUDA(zb_cuda_swiglu_backward((float *)d_dab, (float *)d_ab,
                                            (float *)d_dy, N, F, 0));
    }
    char what[64];
    /* the same zb_fast_expf arithmetic: fp32 to a few ulp */
    label(what, sizeof what, "swiglu out", bf);
    compare_vec(what, y, down(d_y, ny, bf), bf ? BF : 1e-5, 1e-6);
    label(what, sizeof what, "swiglu dab +=", bf);
    compare_vec(what, dab, down(d_dab, nab, bf), bf ? BF : 1e-5, bf ? 1e-2 : 1e-6);
}

static void test_rope(int B, int T, int H, int hs, int ld, float theta,
                      bool bf) {
    size_t n = (size_t)B * T * ld;
    vec x = rand_vec(n, 1.0f, bf), y = x;
    void *d_x = up(x, bf);
    zb_rope_forward(y.data(), B, T, H, hs, ld, theta);
    if (bf)
        EXPECT_CUDA(zb_cuda_rope_forward_bf16(d_x, B, T, H, hs, ld, theta, 0));
    else
        EXPECT_CUDA(zb_cuda_rope_forward((float *)d_x, B, T, H, hs, ld, theta, 0));
    char what[64];
    /* cos and sin in double on both sides, rounded to float: an ulp */
    label(what, sizeof what, "rope forward", bf);
    vec got = down(d_x, n, bf);
    compare_vec(what, y, got, bf ? BF / 2 : 1e-6, 1e-6);
    /* backward from the GPU's forward result on both sides */
    vec back = got;
    zb_rope_backward(back.data(), B, T, H, hs, ld, theta);
    if (bf)
        EXPECT_CUDA(zb_cuda_rope_backward_bf16(d_x, B, T, H, hs, ld, theta, 0));
    else
        EXPECT_CUDA(zb_cuda_rope_backward((float *)d_x, B, T, H, hs, ld, theta, 0));
    label(what, sizeof what, "rope backward", bf);
    compare_vec(what, back, down(d_x, n, bf), bf ? BF / 2 : 1e-6, 1e-6);
}

/* The op table's Llama entries on one batch: RMSNorm, SwiGLU, RoPE on the
 * q and k heads of a GQA qkv, then GQA forward and backward, against the
 * CPU ops on the same (bf16-rounded when bf) inputs. */
static void test_ops_llama(bool bf, bool attn_gemm, int B, int T, int NH,
                           int KVH, int hs) {
    int C = NH * hs, ld = C + 2 * KVH * hs, N = B * T;
    zb_ops g, c;
    open_ops(bf, attn_gemm, N, C, &g);
    zb_ops_cpu(&c);
    zb_err err = {};
    size_t nq = (size_t)N * ld, no = (size_t)N * C;
    vec x = rand_vec(no, 2.0f, bf), w = rand_vec(C, 1.0f);
    vec qkv = rand_vec(nq, 1.0f, bf), dy = rand_vec(no, 1.0f, bf);
    vec y(no), r(N), out(no), dq(nq), dx(no, 0.0f), dw(C, 0.0f);
    size_t sb = c.gqa_saved_bytes(c.ctx, B, NH, T);
    vec att(sb / sizeof(float)), scr(att.size());
    void *d_x = up(x, bf), *d_qkv = up(qkv, bf), *d_dy = up(dy, bf);
    float *d_w = (float *)up(w, false), *d_r = (float *)nan_dev(N, false);
    void *d_y = nan_dev(no, bf), *d_out = nan_dev(no, bf);
    void *d_dq = nan_dev(nq, bf), *d_dx = up(dx, bf);
    float *d_dw = (float *)up(dw, false);
    size_t gsb = g.gqa_saved_bytes(g.ctx, B, NH, T);
    if (gsb != sb / (bf ? 2 : 1)) {
        printf("gqa_saved_bytes %zu, want %zu  FAIL\n", gsb, sb / (bf ? 2 : 1));
        failures++;
    }
    void *d_att = nan_bytes(gsb), *d_ds = nan_bytes(gsb);
    bool ok =
        c.rms_fwd(c.ctx, (zb_act *)y.data(), r.data(), (zb_act *)x.data(),
                  w.data(), N, C, &err) == ZB_OK &&
        c.rope_fwd(c.ctx, (zb_act *)qkv.data(), B, T, NH + KVH, hs, ld,
                   10000.0f, &err) == ZB_OK &&
        c.gqa_fwd(c.ctx, (zb_act *)out.data(), att.data(),
                  (zb_act *)qkv.data(), B, T, C, NH, KVH, &err) == ZB_OK &&
        c.gqa_bwd(c.ctx, (zb_act *)dq.data(), scr.data(), (zb_act *)dy.data(),
                  (zb_act *)qkv.data(), (zb_act *)out.data(), att.data(), B,
                  T, C, NH, KVH, &err) == ZB_OK &&
        g.rms_fwd(g.ctx, (zb_act *)d_y, d_r, (zb_act *)d_x, d_w, N, C,
                  &err) == ZB_OK &&
        g.rope_fwd(g.ctx, (zb_act *)d_qkv, B, T, NH + KVH, hs, ld, 10000.0f,
                   &err) == ZB_OK &&
        g.gqa_fwd(g.ctx, (zb_act *)d_out, d_att, (zb_act *)d_qkv, B, T, C,
                  NH, KVH, &err) == ZB_OK &&
        g.gqa_bwd(g.ctx, (zb_act *)d_dq, d_ds, (zb_act *)d_dy,
                  (zb_act *)d_qkv, (zb_act *)d_out, d_att, B, T, C, NH, KVH,
                  &err) == ZB_OK &&
        c.rms_bwd_input(c.ctx, (zb_act *)dx.data(), (zb_act *)dy.data(),
                        (zb_act *)x.data(), w.data(), r.data(), N, C,
                        &err) == ZB_OK &&
        c.rms_bwd_weight(c.ctx, dw.data(), (zb_act *)dy.data(),
                         (zb_act *)x.data(), r.data(), N, C, &err) == ZB_OK &&
        g.rms_bwd_input(g.ctx, (zb_act *)d_dx, (zb_act *)d_dy,
                        (zb_act *)d_x, d_w, d_r, N, C, &err) == ZB_OK &&
        g.rms_bwd_weight(g.ctx, d_dw, (zb_act *)d_dy, (zb_act *)d_x, d_r, N,
                         C, &err) == ZB_OK;
    if (!ok) {
        fprintf(stderr, "ops llama: %s\n", err.msg);
        exit(1);
    }
    char what[80];
    double tol = bf ? 4.0 * std::sqrt((double)hs + T) / 256 : 1e-5;
    snprintf(what, sizeof what, "ops %s rms out", bf ? "bf16" : "fp32");
    compare_vec(what, y, down(d_y, no, bf), bf ? BF : 1e-5, 1e-5);
    snprintf(what, sizeof what, "ops %s rope qkv", bf ? "bf16" : "fp32");
    compare_vec(what, qkv, down(d_qkv, nq, bf), bf ? BF : 1e-6, 1e-6);
    snprintf(what, sizeof what, "ops %s gqa out kv=%d/%d", bf ? "bf16" : "fp32",
             KVH, NH);
    compare_vec(what, out, down(d_out, no, bf), bf ? 0 : 1e-4, tol);
    snprintf(what, sizeof what, "ops %s gqa dqkv kv=%d/%d", bf ? "bf16" : "fp32",
             KVH, NH);
    compare_vec(what, dq, down(d_dq, nq, bf), bf ? 0 : 1e-3,
                bf ? 4 * tol * (NH / KVH) : 1e-5);
    snprintf(what, sizeof what, "ops %s rms dinp", bf ? "bf16" : "fp32");
    compare_vec(what, dx, down(d_dx, no, bf), bf ? BF : 1e-4, bf ? 1e-2 : 1e-5);
    snprintf(what, sizeof what, "ops %s rms dweight (fp32)", bf ? "bf16" : "fp32");
    compare_vec(what, dw, down(d_dw, C, false), 1e-4, 1e-3);
    EXPECT_CUDA(cudaDeviceSynchronize());
    g.destroy(g.ctx);
}

int main(void) {
    int present = zb_test_cuda_present();
    if (present != 0) return present;
    for (int bf = 0; bf <= 1; bf++) {
        test_rmsnorm(37, 200, bf);
        test_rmsnorm(8192, 96, bf); /* 32 slabs in W */
        test_swiglu(37, 301, bf);
        test_swiglu(1024, 2048, bf);
        test_rope(2, 33, 12, 64, 12 * 64 + 2 * 64, 10000.0f, bf);
        test_rope(1, 2048, 3, 128, 3 * 128 + 5, 500000.0f, bf); /* far positions */
    }
    test_ops_llama(false, false, 2, 33, 8, 2, 16); /* GQA, groups of 4 */
    test_ops_llama(false, true, 2, 33, 8, 8, 16);  /* kv_heads = heads */
    test_ops_llama(false, true, 1, 65, 4, 1, 32);  /* multi-query */
    test_ops_llama(true, true, 2, 33, 8, 2, 16);
    test_ops_llama(true, true, 1, 65, 4, 1, 32);
    return zb_test_finish();
}
