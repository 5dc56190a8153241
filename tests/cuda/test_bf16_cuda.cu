/* test_bf16_cuda.cu - bf16 activation storage on the GPU: every kernel's
 * bf16 instantiation (kernels/cuda/act.cuh) against its CPU twin run on
 * the same bf16-rounded inputs (kernels/bf16.h), the CUDA op table's GEMM
 * with bf16 operands into a bf16 or an fp32 C (bias and GELU epilogues,
 * a batch), and its attention with bf16 activations against the CPU
 * attention. Tolerances: an element stored in bf16 is within 2^-8 of its
 * value (one rounding), plus what fp32 sums give; a kernel reading bf16 as
 * fp32 (or the reverse), or a GEMM given the wrong cuBLAS type, fails them
 * by orders of magnitude. "+=" outputs start nonzero, "=" outputs as NaN
 * garbage.
 * Exit 0: all pass; 1: a mismatch or any CUDA error; 77: no CUDA device,
 * skipped. Build: `make cuda` (no GPU needed); run: `make cuda-test`.
 * First run on a GPU (H200) on 2026-12-04 (docs/gpu-results.md).
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
#include "kernels/crossentropy.h"
#include "kernels/embed.h"
#include "kernels/gelu.h"
#include "kernels/layernorm.h"
#include "kernels/matmul.h"
}
#include "kernels/cuda/kernels_cuda.h"
#include "tests/cuda/cuda_present.h"
#include "tests/cuda/cuda_test.h"

typedef std::vector<float> vec;

#define EXPECT_OK(call)                                                        \
    do {                                                                       \
        zb_err err_ = {};                                                      \
        if ((call) != ZB_OK) {                                                 \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,      \
                    err_.msg);                                                 \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

/* n values of scale * U[-1, 1), already rounded to bf16 */
static vec rand_bf(size_t n, float scale) {
    vec v(n);
    for (auto &x : v) x = zb_bf16_to_f32(zb_bf16_from_f32(scale * frand()));
    return v;
}

/* h as bf16 / as fp32 on the device */
static void *up_bf(const vec &h) {
    std::vector<uint16_t> b(h.size());
    zb_bf16_store(b.data(), h.data(), h.size());
    void *d = dev_bytes(b.size() * 2);
    EXPECT_CUDA(cudaMemcpy(d, b.data(), b.size() * 2, cudaMemcpyHostToDevice));
    return d;
}
static float *up_f(const vec &h) {
    float *d = (float *)dev_bytes(h.size() * sizeof(float));
    EXPECT_CUDA(cudaMemcpy(d, h.data(), h.size() * sizeof(float),
                           cudaMemcpyHostToDevice));
    return d;
}
/* n bf16 / fp32 elements of NaN */
static void *nan_bf(size_t n) { return nan_bytes(n * 2); }
static float *nan_f(size_t n) { return (float *)nan_bytes(n * sizeof(float)); }

static vec down_bf(const void *d, size_t n) {
    std::vector<uint16_t> b(n);
    EXPECT_CUDA(cudaDeviceSynchronize());
    EXPECT_CUDA(cudaMemcpy(b.data(), d, n * 2, cudaMemcpyDeviceToHost));
    vec v(n);
    zb_bf16_load(v.data(), b.data(), n);
    return v;
}
static vec down_f(const float *d, size_t n) {
    vec v(n);
    EXPECT_CUDA(cudaDeviceSynchronize());
    EXPECT_CUDA(cudaMemcpy(v.data(), d, n * sizeof(float),
                           cudaMemcpyDeviceToHost));
    return v;
}

#define BF 0.0079 /* two bf16 roundings (2 x 2^-8) relative */

static void test_layernorm(int N, int C) {
    size_t n = (size_t)N * C;
    vec x = rand_bf(n, 2.0f), w = rand_bf(C, 1.0f), b = rand_bf(C, 1.0f);
    vec dy = rand_bf(n, 1.0f), dx = rand_bf(n, 1.0f), dw(C, 0.5f), db(C, -0.5f);
    vec y(n), mean(N), rstd(N);
    void *d_x = up_bf(x), *d_dy = up_bf(dy), *d_dx = up_bf(dx), *d_y = nan_bf(n);
    float *d_w = up_f(w), *d_b = up_f(b), *d_dw = up_f(dw), *d_db = up_f(db);
    float *d_mean = nan_f(N), *d_rstd = nan_f(N);
    float *d_scr = nan_f(zb_cuda_wgrad_scratch_floats(N, C));
    zb_layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(),
                         b.data(), N, C);
    zb_layernorm_backward_input(dx.data(), dy.data(), x.data(), w.data(),
                                mean.data(), rstd.data(), N, C);
    zb_layernorm_backward_weight(dw.data(), db.data(), dy.data(), x.data(),
                                 mean.data(), rstd.data(), N, C);
    EXPECT_CUDA(zb_cuda_layernorm_forward_bf16(d_y, d_mean, d_rstd, d_x, d_w,
                                               d_b, N, C, 0));
    EXPECT_CUDA(zb_cuda_layernorm_backward_input_bf16(d_dx, d_dy, d_x, d_w,
                                                      d_mean, d_rstd, N, C, 0));
    EXPECT_CUDA(zb_cuda_layernorm_backward_weight_bf16(
        d_dw, d_db, d_dy, d_x, d_mean, d_rstd, N, C, d_scr, 0));
    compare_vec("bf16 layernorm out", y, down_bf(d_y, n), BF, 1e-3);
    compare_vec("bf16 layernorm mean (fp32)", mean, down_f(d_mean, N), 1e-5, 1e-6);
    compare_vec("bf16 layernorm rstd (fp32)", rstd, down_f(d_rstd, N), 1e-5, 0);
    compare_vec("bf16 layernorm dinp +=", dx, down_bf(d_dx, n), BF, 1e-3);
    compare_vec("bf16 layernorm dweight += (fp32)", dw, down_f(d_dw, C), 1e-4, 1e-3);
    compare_vec("bf16 layernorm dbias += (fp32)", db, down_f(d_db, C), 1e-4, 1e-3);
}

static void test_elementwise(int N, int C) {
    size_t n = (size_t)N * C;
    vec x = rand_bf(n, 4.0f), dy = rand_bf(n, 1.0f), dx = rand_bf(n, 1.0f);
    vec part = rand_bf(n, 1.0f), bias = rand_bf(C, 1.0f);
    vec part32(n);
    for (auto &p : part32) p = frand(); /* fp32, not on the bf16 grid */
    vec g(n), r(n), cast(part32);
    /* upload before the CPU twins run: dx is "+=" and changes in place */
    void *d_x = up_bf(x), *d_dy = up_bf(dy), *d_dx = up_bf(dx);
    void *d_g = nan_bf(n), *d_r = nan_bf(n), *d_c = nan_bf(n);
    float *d_p = up_f(part32), *d_b = up_f(bias);
    zb_gelu_forward(g.data(), x.data(), n);
    zb_gelu_backward(dx.data(), x.data(), dy.data(), n);
    for (int i = 0; i < N; i++)
        for (int c = 0; c < C; c++) {
            size_t k = (size_t)i * C + c;
            r[k] = x[k] + (part32[k] + bias[c]);
        }
    EXPECT_CUDA(zb_cuda_gelu_forward_bf16(d_g, d_x, n, 0));
    EXPECT_CUDA(zb_cuda_gelu_backward_bf16(d_dx, d_x, d_dy, n, 0));
    EXPECT_CUDA(zb_cuda_residual_add_bf16(d_r, d_x, d_p, d_b, N, C, 0));
    EXPECT_CUDA(zb_cuda_cast_bf16(d_c, d_p, n, 0));
    compare_vec("bf16 gelu out", g, down_bf(d_g, n), BF, 1e-6);
    compare_vec("bf16 gelu dinp +=", dx, down_bf(d_dx, n), BF, 1e-6);
    compare_vec("bf16 residual add", r, down_bf(d_r, n), BF / 2, 0);
    /* the cast is exactly the host's round to nearest even */
    vec want(n);
    for (size_t i = 0; i < n; i++)
        want[i] = zb_bf16_to_f32(zb_bf16_from_f32(cast[i]));
    compare_vec("bf16 cast = host rounding", want, down_bf(d_c, n), 0, 0);
    /* bias column sums (fp32 out) */
    vec dbias(C, 0.25f);
    float *d_db = up_f(dbias), *d_scr = nan_f(zb_cuda_wgrad_scratch_floats(N, C));
    zb_colsum_add(dbias.data(), dy.data(), N, C);
    EXPECT_CUDA(zb_cuda_colsum_add_bf16(d_db, d_dy, N, C, d_scr, 0));
    compare_vec("bf16 colsum_add += (fp32)", dbias, down_f(d_db, C), 1e-4, 1e-4);
}

/* the fused classifier on bf16 logits (stride ld, padding never read:
 * it holds 1e30) and its dlogits in bf16 (padding left NaN) */
static void test_ce_fused(int N, int V, int ld) {
    vec z((size_t)N * ld, 1e30f);
    for (int r = 0; r < N; r++)
        for (int v = 0; v < V; v++)
            z[(size_t)r * ld + v] = zb_bf16_to_f32(zb_bf16_from_f32(8.0f * frand()));
    std::vector<int> tgt(N);
    for (int r = 0; r < N; r++) tgt[r] = (int)(((long long)r * 7919 + 3) % V);
    float scale = 1.0f / N;
    vec loss(N), dz((size_t)N * ld, NAN);
    double want = zb_ce_fused(loss.data(), dz.data(), z.data(), tgt.data(),
                              scale, N, V, ld);
    void *d_z = up_bf(z), *d_dz = nan_bf((size_t)N * ld);
    int *d_t = (int *)dev_bytes(N * sizeof(int));
    EXPECT_CUDA(cudaMemcpy(d_t, tgt.data(), N * sizeof(int),
                           cudaMemcpyHostToDevice));
    double *d_acc = (double *)dev_bytes(sizeof(double));
    EXPECT_CUDA(cudaMemset(d_acc, 0, sizeof(double)));
    float *d_loss = nan_f(N);
    EXPECT_CUDA(zb_cuda_ce_fused_bf16(d_acc, d_loss, d_dz, d_z, d_t, scale, N,
                                      V, ld, 0));
    compare_vec("bf16 ce fused losses (fp32)", loss, down_f(d_loss, N), 1e-5, 1e-5);
    vec got = down_bf(d_dz, (size_t)N * ld), wantc, gotc;
    size_t touched = 0;
    for (int r = 0; r < N; r++)
        for (int v = 0; v < ld; v++) {
            size_t k = (size_t)r * ld + v;
            if (v < V) {
                wantc.push_back(dz[k]);
                gotc.push_back(got[k]);
            } else touched += !std::isnan(got[k]);
        }
    compare_vec("bf16 ce fused dlogits", wantc, gotc, BF, 1e-9);
    printf("%-34s %zu padded dlogits written  %s\n", "bf16 ce fused padding",
           touched, touched ? "FAIL" : "ok");
    if (touched) failures++;
    double sum;
    EXPECT_CUDA(cudaMemcpy(&sum, d_acc, sizeof sum, cudaMemcpyDeviceToHost));
    bool ok = std::fabs(sum - want) <= 1e-5 * (1.0 + std::fabs(want));
    printf("%-34s %.9g (cpu %.9g)  %s\n", "bf16 ce fused loss sum", sum, want,
           ok ? "ok" : "FAIL");
    if (!ok) failures++;
}

/* the TP pieces on a bf16 shard: max, stats, dlogits */
static void test_ce_pieces(int N, int V, int v0, int Vl, int ld) {
    vec z((size_t)N * ld, 1e30f);
    for (int r = 0; r < N; r++)
        for (int v = 0; v < Vl; v++)
            z[(size_t)r * ld + v] = zb_bf16_to_f32(zb_bf16_from_f32(8.0f * frand()));
    std::vector<int> tgt(N);
    for (int r = 0; r < N; r++) tgt[r] = (r * 131 + 7) % V;
    std::vector<double> M(N), S(N), Zt(N);
    vec dz((size_t)N * ld, NAN);
    for (int r = 0; r < N; r++) {
        zb_ce_shard_max(&M[r], &z[(size_t)r * ld], 1, Vl);
        zb_ce_shard_stats(&S[r], &Zt[r], &z[(size_t)r * ld], &M[r], &tgt[r],
                          v0, 1, Vl);
        zb_ce_shard_backward(&dz[(size_t)r * ld], &z[(size_t)r * ld], &M[r],
                             &S[r], &tgt[r], v0, 0.5f, 1, Vl);
    }
    void *d_z = up_bf(z), *d_dz = nan_bf((size_t)N * ld);
    int *d_t = (int *)dev_bytes(N * sizeof(int));
    EXPECT_CUDA(cudaMemcpy(d_t, tgt.data(), N * sizeof(int),
                           cudaMemcpyHostToDevice));
    double *d_st = (double *)dev_bytes(3 * N * sizeof(double));
    EXPECT_CUDA(zb_cuda_ce_max_bf16(d_st, d_z, N, Vl, ld, 0));
    EXPECT_CUDA(zb_cuda_ce_stats_bf16(d_st + N, d_st + 2 * N, d_z, d_st, d_t,
                                      v0, N, Vl, ld, 0));
    EXPECT_CUDA(zb_cuda_ce_backward_bf16(d_dz, d_z, d_st, d_st + N, d_t, v0,
                                         0.5f, N, Vl, ld, 0));
    std::vector<double> st(3 * N);
    EXPECT_CUDA(cudaDeviceSynchronize());
    EXPECT_CUDA(cudaMemcpy(st.data(), d_st, st.size() * sizeof(double),
                           cudaMemcpyDeviceToHost));
    vec a, b;
    for (int r = 0; r < N; r++) {
        a.push_back((float)M[r]), b.push_back((float)st[r]);
        a.push_back((float)S[r]), b.push_back((float)st[N + r]);
        a.push_back((float)Zt[r]), b.push_back((float)st[2 * N + r]);
    }
    compare_vec("bf16 ce pieces max, sum, target", a, b, 1e-5, 1e-6);
    vec got = down_bf(d_dz, (size_t)N * ld), wc, gc;
    for (int r = 0; r < N; r++)
        for (int v = 0; v < Vl; v++) {
            wc.push_back(dz[(size_t)r * ld + v]);
            gc.push_back(got[(size_t)r * ld + v]);
        }
    compare_vec("bf16 ce pieces dlogits", wc, gc, BF, 1e-9);
}

static void test_embed(int B, int T, int C) {
    size_t n = (size_t)B * T * C;
    vec tok = rand_bf(n, 1.0f), wpe = rand_bf((size_t)T * C, 1.0f);
    vec dout = rand_bf(n, 1.0f), dwpe((size_t)T * C, 0.125f), out(tok);
    /* upload before the CPU twins run: dwpe is "+=" and changes in place */
    float *d_tok = up_f(tok), *d_wpe = up_f(wpe), *d_dwpe = up_f(dwpe);
    void *d_out = nan_bf(n), *d_dout = up_bf(dout);
    zb_embed_add_pos(out.data(), wpe.data(), B, T, C);
    zb_embed_pos_backward(dwpe.data(), dout.data(), B, T, C);
    EXPECT_CUDA(zb_cuda_embed_add_pos_bf16(d_out, d_tok, d_wpe, B, T, C, 0));
    EXPECT_CUDA(zb_cuda_embed_pos_backward_bf16(d_dwpe, d_dout, B, T, C, 0));
    compare_vec("bf16 embed tok + wpe", out, down_bf(d_out, n), BF / 2, 0);
    compare_vec("bf16 embed dwpe += (fp32)", dwpe, down_f(d_dwpe, (size_t)T * C),
          1e-5, 1e-6);
    /* token rows [2, 9) of a vocabulary of 11 */
    int N = B * T, v0 = 2, nv = 7;
    std::vector<int> ids(N);
    for (int i = 0; i < N; i++) ids[i] = (i * 5 + 1) % 11;
    vec dw((size_t)nv * C, 0.5f);
    zb_embed_tokens_shard_backward(dw.data(), dout.data(), ids.data(), v0, nv,
                                   N, C);
    int *d_ids = (int *)dev_bytes(N * sizeof(int));
    EXPECT_CUDA(cudaMemcpy(d_ids, ids.data(), N * sizeof(int),
                           cudaMemcpyHostToDevice));
    vec dw0((size_t)nv * C, 0.5f);
    float *d_dw = up_f(dw0);
    size_t sb;
    EXPECT_CUDA(zb_cuda_embed_scratch_bytes(N, &sb));
    EXPECT_CUDA(zb_cuda_embed_tokens_backward_bf16(d_dw, d_dout, d_ids, v0, nv,
                                                   N, C, dev_bytes(sb), sb, 0));
    compare_vec("bf16 embed dwte += (fp32)", dw, down_f(d_dw, dw.size()), 1e-5, 1e-6);
}

static void test_softmax(int nmat, int T) {
    size_t n = (size_t)nmat * T * T;
    vec a = rand_bf(n, 3.0f), dp = rand_bf(n, 1.0f);
    void *d_a = up_bf(a), *d_dp = up_bf(dp);
    EXPECT_CUDA(zb_cuda_attn_softmax_causal_bf16(d_a, T, nmat, 0));
    vec p = down_bf(d_a, n); /* the kernel's bf16 probabilities */
    vec want(a);
    zb_attn_softmax_causal(want.data(), T, (int)nmat);
    compare_vec("bf16 attn softmax", want, p, BF, 1e-6);
    vec ds(dp);
    zb_attn_softmax_causal_backward(ds.data(), p.data(), T, (int)nmat);
    EXPECT_CUDA(zb_cuda_attn_softmax_causal_backward_bf16(d_dp, d_a, T, nmat, 0));
    compare_vec("bf16 attn softmax backward", ds, down_bf(d_dp, n), BF, 1e-4);
}

/* The op table opened as the stage opens it under precision bf16. */
static void open_bf16_ops(zb_ops *ops, int wrows, int wcols) {
    open_ops(true, true, wrows, wcols, ops);
    if (ops->act_dtype != ZB_DT_BF16) {
        printf("precision bf16 ops store act_dtype %d, not bf16  FAIL\n",
               (int)ops->act_dtype);
        failures++;
    }
}

/* C = alpha op(A) op(B) (+ bias) (+ beta C) with A, B bf16 and C bf16 or
 * fp32, padded leading dimensions, a batch; GELU when asked (ldc = N). */
static void test_gemm(const zb_ops &ops, int M, int N, int K, bool ta,
                      bool tb, int batch, bool c_bf16, bool bias, bool gelu,
                      float beta) {
    zb_gemm g = {};
    g.M = M; g.N = N; g.K = K; g.ta = ta; g.tb = tb; g.batch = batch;
    g.lda = (ta ? M : K) + (gelu ? 0 : 8);
    g.ldb = (tb ? K : N) + (gelu ? 0 : 8);
    g.ldc = gelu ? N : N + 8;
    g.sa = (long long)(ta ? K : M) * g.lda;
    g.sb = (long long)(tb ? N : K) * g.ldb;
    g.sc = (long long)M * g.ldc;
    g.alpha = 0.75f;
    g.beta = bias ? 0.0f : beta;
    g.ab_type = ZB_DT_BF16;
    g.c_type = c_bf16 ? ZB_DT_BF16 : ZB_DT_F32;
    vec A = rand_bf((size_t)g.sa * batch, 1.0f), B = rand_bf((size_t)g.sb * batch, 1.0f);
    vec C = rand_bf((size_t)g.sc * batch, 1.0f), bv = rand_bf(N, 1.0f);
    vec want(C);
    double ab_max = 0; /* the largest |alpha op(A) op(B)| */
    for (int b = 0; b < batch; b++)
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double s = 0;
                for (int k = 0; k < K; k++) {
                    double a = ta ? A[b * g.sa + (size_t)k * g.lda + i]
                                  : A[b * g.sa + (size_t)i * g.lda + k];
                    double x = tb ? B[b * g.sb + (size_t)j * g.ldb + k]
                                  : B[b * g.sb + (size_t)k * g.ldb + j];
                    s += a * x;
                }
                float &c = want[b * g.sc + (size_t)i * g.ldc + j];
                c = (float)(g.alpha * s + (bias ? bv[j] : 0.0) + g.beta * c);
                if (std::fabs(g.alpha * s) > ab_max) ab_max = std::fabs(g.alpha * s);
            }
    vec wgelu(want.size());
    zb_gelu_forward(wgelu.data(), want.data(), want.size());
    size_t nc = C.size();
    g.A = up_bf(A);
    g.B = up_bf(B);
    g.C = c_bf16 ? up_bf(C) : (void *)up_f(C);
    g.bias = bias ? up_f(bv) : nullptr;
    g.gelu_out = gelu ? (c_bf16 ? nan_bf(nc) : (void *)nan_f(nc)) : nullptr;
    EXPECT_OK(ops.gemm(ops.ctx, &g, &err_));
    char what[96];
    snprintf(what, sizeof what, "gemm bf16 %dx%dx%d %c%c b%d C %s%s%s", M, N, K,
             ta ? 'T' : 'N', tb ? 'T' : 'N', batch, c_bf16 ? "bf16" : "fp32",
             bias ? " bias" : "", gelu ? " gelu" : "");
    /* products of bf16 are exact in fp32: fp32 sums, then C's rounding */
    double atol = 1e-5 * std::sqrt((double)K) * (K + 1);
    double rtol = c_bf16 ? BF / 2 : 1e-5;
    /* A bf16 C that is added to (beta != 0, or a bias the cublasGemmEx
     * path writes into C first) was measured on the first H200 run
     * (cuBLAS 13.0, 2026-12-04) up to 1.4 ulp off, not 0.5: alpha op(A)
     * op(B) is rounded to bf16 before the sum is, so its rounding (half
     * an ulp of |alpha op(A) op(B)|, which cancellation can make larger
     * than the result) counts too. */
    if (c_bf16 && (g.beta != 0.0f || bias)) atol += ab_max / 512;
    vec got = c_bf16 ? down_bf(g.C, nc) : down_f((float *)g.C, nc);
    compare_vec(what, want, got, rtol, atol);
    if (gelu) {
        vec gg = c_bf16 ? down_bf(g.gelu_out, nc) : down_f((float *)g.gelu_out, nc);
        compare_vec("  its GELU output", wgelu, gg, c_bf16 ? BF : 1e-4, atol);
    }
}

/* The ops' attention (GEMMs around the softmax, bf16 everywhere) against
 * the CPU attention on the same bf16 inputs. */
static void test_attention(const zb_ops &ops, int B, int T, int C, int NH) {
    size_t n1 = (size_t)B * T * C, n3 = 3 * n1;
    size_t na = ops.attn_saved_bytes(ops.ctx, B, NH, T);
    size_t want_na = (size_t)B * NH * T * T * 2;
    printf("%-34s %zu bytes (B*NH*T*T bf16 %zu)  %s\n", "bf16 attention saves",
           na, want_na, na == want_na ? "ok" : "FAIL");
    if (na != want_na) failures++;
    vec qkv = rand_bf(n3, 1.5f), dy = rand_bf(n1, 1.0f);
    vec y(n1), att((size_t)B * NH * T * T), datt(att.size()), dqkv(n3, 0.0f);
    zb_attention_forward(y.data(), att.data(), qkv.data(), B, T, C, NH);
    zb_attention_backward(dqkv.data(), datt.data(), dy.data(), qkv.data(),
                          att.data(), B, T, C, NH);
    void *d_qkv = up_bf(qkv), *d_dy = up_bf(dy), *d_y = nan_bf(n1);
    void *d_att = nan_bf(att.size()), *d_ds = nan_bf(att.size());
    void *d_dqkv = nan_bf(n3);
    EXPECT_OK(ops.attn_fwd(ops.ctx, (zb_act *)d_y, d_att, (zb_act *)d_qkv, B, T,
                           C, NH, &err_));
    EXPECT_OK(ops.attn_bwd(ops.ctx, (zb_act *)d_dqkv, d_ds, (zb_act *)d_dy,
                           (zb_act *)d_qkv, (zb_act *)d_y, d_att, B, T, C, NH,
                           &err_));
    double tol = 4.0 * std::sqrt((double)C / NH + T) / 256;
    compare_vec("bf16 attention out", y, down_bf(d_y, n1), 0, tol);
    compare_vec("bf16 attention probabilities", att, down_bf(d_att, att.size()), BF,
          1e-3);
    compare_vec("bf16 attention dqkv", dqkv, down_bf(d_dqkv, n3), 0, 4 * tol);
}

static void test_ops(void) {
    zb_ops ops;
    open_bf16_ops(&ops, 64, 256);
    test_gemm(ops, 64, 96, 256, false, true, 1, true, false, false, 0.0f);
    test_gemm(ops, 64, 256, 96, false, false, 1, true, false, false, 1.0f);
    test_gemm(ops, 96, 256, 64, true, false, 1, false, false, false, 1.0f);
    test_gemm(ops, 33, 64, 48, false, true, 3, true, false, false, 0.5f);
    test_gemm(ops, 64, 256, 96, false, true, 1, true, true, false, 0.0f);
    test_gemm(ops, 64, 256, 96, false, true, 1, true, true, true, 0.0f);
    test_gemm(ops, 37, 13, 33, false, true, 1, true, true, true, 0.0f);
    test_attention(ops, 2, 128, 128, 2);
    test_attention(ops, 1, 67, 96, 3);
    EXPECT_CUDA(cudaDeviceSynchronize());
    ops.destroy(ops.ctx);
}

int main(void) {
    int present = zb_test_cuda_present();
    if (present != 0) return present;
    rng = 4242;
    setenv("ZB_CUDA_GEMM_LOG", "1", 0);
    test_layernorm(37, 200);
    test_layernorm(256, 768);
    test_elementwise(37, 200);
    test_ce_fused(37, 301, 384);
    test_ce_fused(9, 50257, 50304);
    test_ce_pieces(33, 301, 151, 150, 256);
    test_embed(3, 16, 96);
    test_softmax(3, 7);
    test_softmax(2, 200);
    test_ops();
    return zb_test_finish();
}
