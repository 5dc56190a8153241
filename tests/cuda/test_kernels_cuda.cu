/* test_kernels_cuda.cu - every CUDA kernel (kernels/cuda/) against its CPU
 * twin (the C files in kernels/) on the same random inputs, including the += / =
 * contract (accumulating buffers start nonzero; written buffers start as
 * NaN garbage), the fused cross-entropy against zb_ce_fused, the CUDA op table's attention as GEMMs around the softmax
 * kernels (fp32) against the CPU attention, and its gemm (the row-major descriptor
 * through cuBLAS) against a reference on odd shapes, in fp32 and with fp32
 * operands rounded to bf16 (CUBLAS_COMPUTE_32F_FAST_16BF); bf16 storage is
 * test_bf16_cuda.cu's.
 * Exit 0: all pass; 1: a mismatch or any CUDA error (a missing or
 * mismatched driver included); 77: no CUDA device, skipped (the Automake
 * convention).
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
#include "executor/stage/ops.h"
}
#include "kernels/cuda/kernels_cuda.h"
#include "tests/cuda/cuda_present.h"
#include "tests/cuda/cuda_test.h"

static std::vector<float> rand_vec(size_t n, float scale) {
    std::vector<float> v(n);
    for (auto &x : v) x = scale * frand();
    return v;
}

template <typename T> static T *to_device(const std::vector<T> &h) {
    T *d = (T *)dev_bytes(h.size() * sizeof(T));
    EXPECT_CUDA(cudaMemcpy(d, h.data(), h.size() * sizeof(T),
                           cudaMemcpyHostToDevice));
    return d;
}

/* Device buffer of n floats filled with NaN: a kernel must overwrite it. */
static float *nan_device(size_t n) {
    return (float *)nan_bytes(n * sizeof(float));
}

/* Copy n floats back and compare with the CPU result. */
static void compare(const char *what, const std::vector<float> &cpu,
                    const float *dev, double rtol, double atol) {
    std::vector<float> gpu(cpu.size());
    EXPECT_CUDA(cudaDeviceSynchronize());
    EXPECT_CUDA(cudaMemcpy(gpu.data(), dev, gpu.size() * sizeof(float),
                           cudaMemcpyDeviceToHost));
    compare_vec(what, cpu, gpu, rtol, atol);
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
    float *d_scr = nan_device(zb_cuda_wgrad_scratch_floats(N, C));
    EXPECT_CUDA(zb_cuda_layernorm_backward_weight(d_dw, d_db, d_dy, d_x, d_mean,
                                                  d_rstd, N, C, d_scr, 0));
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

/* The vocabulary-parallel pieces on the shard of rows [v0, v0 + Vl) of a
 * vocabulary of V (M from a two-rank table, as the TP reduce leaves it),
 * the device rows with stride ld >= Vl: the padding holds 1e30, which
 * would win every maximum and softmax if it were read, and dlogits' padding
 * must stay as it was (NaN). */
static void test_crossentropy(int N, int V, int v0, int Vl, int ld) {
    auto z = rand_vec((size_t)N * Vl, 8.0f);
    std::vector<int> tgt(N);
    for (int n = 0; n < N; n++) tgt[n] = (int)(((long long)n * 7919 + 3) % V);
    float scale = 1.0f / N;
    /* the other rank's maxima in row 1 of the table */
    std::vector<double> tab(2 * (size_t)N), S(N), Zt(N);
    for (int n = 0; n < N; n++) tab[(size_t)N + n] = 8.0 * frand();
    std::vector<double> d_tab_init(tab);
    for (int n = 0; n < N; n++) d_tab_init[n] = -1e30; /* overwritten */
    std::vector<float> loss(N), dz((size_t)N * Vl);
    zb_ce_shard_max(tab.data(), z.data(), N, Vl);
    for (int n = 0; n < N; n++) tab[n] = std::fmax(tab[n], tab[(size_t)N + n]);
    zb_ce_shard_stats(S.data(), Zt.data(), z.data(), tab.data(), tgt.data(), v0,
                      N, Vl);
    double want = 0.25 + zb_ce_shard_loss(loss.data(), tab.data(), S.data(),
                                          Zt.data(), N);
    zb_ce_shard_backward(dz.data(), z.data(), tab.data(), S.data(), tgt.data(),
                         v0, scale, N, Vl);
    std::vector<float> zp((size_t)N * ld, 1e30f);
    for (int n = 0; n < N; n++)
        memcpy(&zp[(size_t)n * ld], &z[(size_t)n * Vl], Vl * sizeof(float));
    float *d_z = to_device(zp);
    int *d_t = to_device(tgt);
    double *d_tab = to_device(d_tab_init), *d_S = to_device(S),
           *d_Zt = to_device(Zt);
    std::vector<double> acc0(1, 0.25);
    double *d_acc = to_device(acc0);
    float *d_loss = nan_device(N), *d_dz = nan_device((size_t)N * ld);
    EXPECT_CUDA(zb_cuda_ce_max(d_tab, d_z, N, Vl, ld, 0));
    EXPECT_CUDA(zb_cuda_ce_max_combine(d_tab, 2, N, 0));
    EXPECT_CUDA(zb_cuda_ce_stats(d_S, d_Zt, d_z, d_tab, d_t, v0, N, Vl, ld, 0));
    EXPECT_CUDA(zb_cuda_ce_loss(d_acc, d_loss, d_tab, d_S, d_Zt, N, 0));
    EXPECT_CUDA(zb_cuda_ce_backward(d_dz, d_z, d_tab, d_S, d_t, v0, scale, N,
                                    Vl, ld, 0));
    compare("ce shard losses", loss, d_loss, 1e-5, 1e-5);
    std::vector<float> dzp((size_t)N * ld), dzc((size_t)N * Vl);
    EXPECT_CUDA(cudaMemcpy(dzp.data(), d_dz, dzp.size() * sizeof(float),
                           cudaMemcpyDeviceToHost));
    size_t touched = 0;
    for (int n = 0; n < N; n++) {
        memcpy(&dzc[(size_t)n * Vl], &dzp[(size_t)n * ld], Vl * sizeof(float));
        for (int v = Vl; v < ld; v++) touched += !std::isnan(dzp[(size_t)n * ld + v]);
    }
    compare_vec("ce shard dlogits =", dz, dzc, 1e-4, 1e-9);
    printf("%-28s %zu padded dlogits written  %s\n", "ce shard padding", touched,
           touched ? "FAIL" : "ok");
    if (touched) failures++;
    double got;
    EXPECT_CUDA(cudaMemcpy(&got, d_acc, sizeof got, cudaMemcpyDeviceToHost));
    bool ok = std::fabs(got - want) <= 1e-5 * (1.0 + std::fabs(want));
    printf("%-28s loss sum += %.9g (cpu %.9g)  %s\n", "ce shard loss sum", got,
           want, ok ? "ok" : "FAIL");
    if (!ok) failures++;
}

/* The fused cross-entropy (tp 1) against its CPU twin zb_ce_fused (which
 * test_kernels proves equal to the pieces bit for bit): rows of stride
 * ld >= V whose padding holds 1e30 (wins every max and softmax if read)
 * and whose dlogits padding must stay NaN; N past the SM count makes the
 * blocks loop over rows; the last row's target is the last column. */
static void test_ce_fused(int N, int V, int ld) {
    std::vector<float> zp((size_t)N * ld, 1e30f);
    for (int n = 0; n < N; n++)
        for (int v = 0; v < V; v++) zp[(size_t)n * ld + v] = 8.0f * frand();
    std::vector<int> tgt(N);
    for (int n = 0; n < N; n++) tgt[n] = (int)(((long long)n * 7919 + 3) % V);
    tgt[N - 1] = V - 1;
    float scale = 1.0f / N;
    std::vector<float> loss(N), dzp((size_t)N * ld, NAN);
    double want = 0.25 + zb_ce_fused(loss.data(), dzp.data(), zp.data(),
                                     tgt.data(), scale, N, V, ld);
    float *d_z = to_device(zp);
    int *d_t = to_device(tgt);
    std::vector<double> acc0(1, 0.25);
    double *d_acc = to_device(acc0);
    float *d_loss = nan_device(N), *d_dz = nan_device((size_t)N * ld);
    EXPECT_CUDA(zb_cuda_ce_fused(d_acc, d_loss, d_dz, d_z, d_t, scale, N, V, ld,
                                 0));
    char what[64];
    snprintf(what, sizeof what, "ce fused losses N=%d V=%d", N, V);
    compare(what, loss, d_loss, 1e-5, 1e-5);
    std::vector<float> got((size_t)N * ld), dzc((size_t)N * V), gotc((size_t)N * V);
    EXPECT_CUDA(cudaMemcpy(got.data(), d_dz, got.size() * sizeof(float),
                           cudaMemcpyDeviceToHost));
    size_t touched = 0;
    for (int n = 0; n < N; n++) {
        memcpy(&dzc[(size_t)n * V], &dzp[(size_t)n * ld], V * sizeof(float));
        memcpy(&gotc[(size_t)n * V], &got[(size_t)n * ld], V * sizeof(float));
        for (int v = V; v < ld; v++) touched += !std::isnan(got[(size_t)n * ld + v]);
    }
    snprintf(what, sizeof what, "ce fused dlogits = ld=%d", ld);
    compare_vec(what, dzc, gotc, 1e-4, 1e-9);
    printf("%-28s %zu padded dlogits written  %s\n", "ce fused padding", touched,
           touched ? "FAIL" : "ok");
    if (touched) failures++;
    double sum;
    EXPECT_CUDA(cudaMemcpy(&sum, d_acc, sizeof sum, cudaMemcpyDeviceToHost));
    bool ok = std::fabs(sum - want) <= 1e-5 * (1.0 + std::fabs(want));
    printf("%-28s loss sum += %.9g (cpu %.9g)  %s\n", "ce fused loss sum", sum,
           want, ok ? "ok" : "FAIL");
    if (!ok) failures++;
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

/* The shard of rows [v0, v0 + nv) of a vocabulary of V. */
static void test_embed(int B, int T, int C, int V, int v0, int nv) {
    int maxT = T + 3, N = B * T;
    auto wtel = rand_vec((size_t)nv * C, 1.0f), wpe = rand_vec((size_t)maxT * C, 1.0f);
    auto dy = rand_vec((size_t)N * C, 1.0f);
    auto dwtel = rand_vec((size_t)nv * C, 1.0f), dwpe = rand_vec((size_t)maxT * C, 1.0f);
    std::vector<int> tok(N);
    for (int i = 0; i < N; i++) tok[i] = (i * i + 3) % V; /* repeats */
    for (int i = 0; i < N; i += 3) tok[i] = V / 2;        /* one hot row */
    size_t sb;
    EXPECT_CUDA(zb_cuda_embed_scratch_bytes(N, &sb));
    void *d_scratch = dev_bytes(sb);
    float *d_wtel = to_device(wtel), *d_wpe = to_device(wpe), *d_dy = to_device(dy);
    float *d_dwtel = to_device(dwtel), *d_dwpe = to_device(dwpe);
    int *d_tok = to_device(tok);
    float *d_y = nan_device((size_t)N * C);
    std::vector<float> y((size_t)N * C);
    zb_embed_tokens_shard(y.data(), tok.data(), wtel.data(), v0, nv, N, C);
    zb_embed_add_pos(y.data(), wpe.data(), B, T, C);
    zb_embed_tokens_shard_backward(dwtel.data(), dy.data(), tok.data(), v0, nv,
                                   N, C);
    zb_embed_pos_backward(dwpe.data(), dy.data(), B, T, C);
    EXPECT_CUDA(zb_cuda_embed_tokens(d_y, d_tok, d_wtel, v0, nv, N, C, 0));
    EXPECT_CUDA(zb_cuda_embed_add_pos(d_y, d_wpe, B, T, C, 0));
    EXPECT_CUDA(zb_cuda_embed_tokens_backward(d_dwtel, d_dy, d_tok, v0, nv, N,
                                              C, d_scratch, sb, 0));
    /* a scratch one byte short is refused, and nothing is written */
    if (zb_cuda_embed_tokens_backward(d_dwtel, d_dy, d_tok, v0, nv, N, C,
                                      d_scratch, sb - 1, 0) !=
        cudaErrorInvalidValue) {
        fprintf(stderr, "embed backward accepted a short scratch\n");
        failures++;
    }
    EXPECT_CUDA(zb_cuda_embed_pos_backward(d_dwpe, d_dy, B, T, C, 0));
    compare("embed shard out", y, d_y, 0, 0);
    compare("embed dwtel += (CPU order)", dwtel, d_dwtel, 0, 0);
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

/* The softmax pieces between the attention GEMMs against their CPU twins
 * (upper triangles poisoned: they must come back 0). */
static void test_attn_softmax(int nmat, int T) {
    size_t n = (size_t)nmat * T * T;
    auto s = rand_vec(n, 4.0f), dp = rand_vec(n, 1.0f);
    std::vector<float> p = s, ds = dp;
    for (size_t i = 0; i < n; i++) {
        int t = (int)(i / T % T), j = (int)(i % T);
        if (j > t) s[i] = 1e30f; /* masked: must never be read */
    }
    float *d_p = to_device(s);
    zb_attn_softmax_causal(p.data(), T, nmat); /* the CPU never reads j > t */
    EXPECT_CUDA(zb_cuda_attn_softmax_causal(d_p, T, nmat, 0));
    compare("attn softmax (causal)", p, d_p, 1e-5, 1e-7);
    float *d_ds = to_device(dp);
    zb_attn_softmax_causal_backward(ds.data(), p.data(), T, nmat);
    EXPECT_CUDA(zb_cuda_attn_softmax_causal_backward(d_ds, d_p, T, nmat, 0));
    compare("attn softmax backward", ds, d_ds, 1e-4, 1e-6);
}

/* The CUDA op table's attention with attn_gemm (batched GEMMs around the
 * softmax kernels) against the CPU attention: fp32 GEMMs to fp32
 * tolerance; bf16 GEMMs within bf16 rounding. With bf16 (precision bf16)
 * the ops store activations in bf16: test_bf16_cuda.cu tests that. */
static void test_ops_attention(bool bf16, int B, int T, int C, int NH) {
    zb_ops ops;
    open_ops(bf16, true, 1, 1, &ops);
    zb_err err = {};
    size_t n3 = (size_t)B * T * 3 * C, n1 = (size_t)B * T * C;
    size_t na = ops.attn_saved_bytes(ops.ctx, B, NH, T) / sizeof(float);
    if (na != (size_t)B * NH * T * T) {
        printf("attn_gemm saves %zu floats, not B*NH*T*T  FAIL\n", na);
        failures++;
    }
    auto qkv = rand_vec(n3, 1.5f), dy = rand_vec(n1, 1.0f);
    std::vector<float> y(n1), att((size_t)B * NH * T * T), datt(att.size());
    std::vector<float> dqkv(n3, 0.0f);
    zb_attention_forward(y.data(), att.data(), qkv.data(), B, T, C, NH);
    zb_attention_backward(dqkv.data(), datt.data(), dy.data(), qkv.data(),
                          att.data(), B, T, C, NH);
    float *d_qkv = to_device(qkv), *d_dy = to_device(dy);
    float *d_y = nan_device(n1), *d_att = nan_device(na);
    float *d_ds = nan_device(na), *d_dqkv = nan_device(n3);
    /* the ops' activations are fp32 (act_dtype) */
    zb_act *a_y = (zb_act *)d_y, *a_qkv = (zb_act *)d_qkv;
    zb_act *a_dy = (zb_act *)d_dy, *a_dqkv = (zb_act *)d_dqkv;
    if (ops.act_dtype != ZB_DT_F32) {
        printf("ops attention: act_dtype %d, the test feeds fp32  FAIL\n",
               (int)ops.act_dtype);
        failures++;
        return;
    }
    if (ops.attn_fwd(ops.ctx, a_y, d_att, a_qkv, B, T, C, NH, &err) != ZB_OK ||
        ops.attn_bwd(ops.ctx, a_dqkv, d_ds, a_dy, a_qkv, a_y, d_att, B, T, C,
                     NH, &err) != ZB_OK) {
        fprintf(stderr, "ops attention: %s\n", err.msg);
        exit(1);
    }
    char what[64];
    double hs = (double)C / NH;
    double tol = bf16 ? 4.0 * std::sqrt(hs + T) / 256 : 1e-5;
    snprintf(what, sizeof what, "attn gemm %s out T=%d", bf16 ? "bf16" : "fp32", T);
    compare(what, y, d_y, bf16 ? 0 : 1e-4, tol);
    snprintf(what, sizeof what, "attn gemm %s probs T=%d", bf16 ? "bf16" : "fp32", T);
    compare(what, att, d_att, bf16 ? 0 : 1e-4, bf16 ? tol : 1e-6);
    snprintf(what, sizeof what, "attn gemm %s dqkv T=%d", bf16 ? "bf16" : "fp32", T);
    compare(what, dqkv, d_dqkv, bf16 ? 0 : 1e-3, bf16 ? 4 * tol : 1e-5);
    EXPECT_CUDA(cudaDeviceSynchronize());
    ops.destroy(ops.ctx);
}

/* Row-major reference of a descriptor (gemm_desc.h), in double. */
static void ref_gemm(const zb_gemm &g, const float *A, const float *B,
                     float *C) {
    for (int b = 0; b < g.batch; b++)
        for (int i = 0; i < g.M; i++)
            for (int j = 0; j < g.N; j++) {
                double s = 0.0;
                for (int k = 0; k < g.K; k++) {
                    float a = g.ta ? A[b * g.sa + (size_t)k * g.lda + i]
                                   : A[b * g.sa + (size_t)i * g.lda + k];
                    float x = g.tb ? B[b * g.sb + (size_t)j * g.ldb + k]
                                   : B[b * g.sb + (size_t)k * g.ldb + j];
                    s += (double)a * x;
                }
                float *c = &C[b * g.sc + (size_t)i * g.ldc + j];
                double bias = g.bias ? g.bias[j] : 0.0;
                *c = (float)(g.alpha * s + bias + g.beta * (double)*c);
            }
}

/* The CUDA op table's gemm (descriptor -> cuBLAS) against the reference:
 * a transpose combination, padded leading dimensions, a batch; fp32
 * tolerance in fp32; in bf16 the error must exceed what fp32 GEMMs give
 * (so the tensor cores really took bf16 operands) and stay within bf16
 * rounding. */
static void test_ops_gemm(const zb_ops &ops, bool bf16, int M, int N, int K,
                          bool ta, bool tb, int batch, bool bias, float beta) {
    zb_gemm g = {};
    g.M = M; g.N = N; g.K = K; g.ta = ta; g.tb = tb;
    g.lda = (ta ? M : K) + 3;
    g.ldb = (tb ? K : N) + 1;
    g.ldc = N + 2;
    g.batch = batch;
    g.sa = (long long)(ta ? K : M) * g.lda + 5;
    g.sb = (long long)(tb ? N : K) * g.ldb + 7;
    g.sc = (long long)M * g.ldc + 1;
    g.alpha = 0.75f;
    g.beta = bias ? 0.0f : beta;
    auto A = rand_vec((size_t)g.sa * batch, 1.0f), B = rand_vec((size_t)g.sb * batch, 1.0f);
    auto C = rand_vec((size_t)g.sc * batch, 1.0f), bv = rand_vec(N, 1.0f);
    float *d_A = to_device(A), *d_B = to_device(B), *d_C = to_device(C);
    float *d_bias = to_device(bv);
    g.bias = bias ? bv.data() : nullptr;
    ref_gemm(g, A.data(), B.data(), C.data());
    zb_gemm d = g;
    d.A = d_A; d.B = d_B; d.C = d_C; d.bias = bias ? d_bias : nullptr;
    zb_err err = {};
    if (ops.gemm(ops.ctx, &d, &err) != ZB_OK) {
        fprintf(stderr, "ops gemm: %s\n", err.msg);
        exit(1);
    }
    char what[96];
    snprintf(what, sizeof what, "gemm %s %dx%dx%d %c%c b%d%s", bf16 ? "bf16" : "fp32",
             M, N, K, ta ? 'T' : 'N', tb ? 'T' : 'N', batch, bias ? " bias" : "");
    if (!bf16) {
        compare(what, C, d_C, 1e-4, 1e-4 * std::sqrt((double)K + 1));
        return;
    }
    /* |error| ~ 2^-8 |a||b| sqrt(K) with bf16 operands; fp32 gives ~1e-6 */
    double tol = 4.0 * std::sqrt((double)K) / 256;
    compare(what, C, d_C, 0, tol);
    std::vector<float> got(C.size());
    EXPECT_CUDA(cudaMemcpy(got.data(), d_C, got.size() * sizeof(float),
                           cudaMemcpyDeviceToHost));
    double worst = 0.0;
    for (size_t i = 0; i < got.size(); i++)
        worst = std::fmax(worst, std::fabs((double)got[i] - C[i]));
    bool rounded = worst > 1e-4 * std::sqrt((double)K);
    printf("%-28s max error %.3g %s fp32's 1e-4*sqrt(K): %s\n", "  bf16 really bf16",
           worst, rounded ? ">" : "<=", rounded ? "ok" : "FAIL (fp32 GEMM?)");
    if (!rounded) failures++;
}

/* A linear layer with bias and GELU (the stage's fc: out = inp @ w^T +
 * bias, gelu_out = GELU(out), ldc = N) through the op table: with N a
 * multiple of 8 the cuBLASLt GELU_AUX_BIAS epilogue (zb_gemm_lt_plan),
 * else the fallback (bias rows, GEMM, GELU kernel). Both outputs against
 * the CPU reference and zb_gelu_forward: in fp32 within 2e-5 + 1e-5 |x|, which
 * cuBLASLt's GELU must meet (the tanh form; the erf form differs by up to
 * 4e-4 and would fail). ZB_CUDA_GEMM_LOG=1 (set in main) prints which
 * path each shape took when the ops end. */
static void test_ops_gemm_gelu(const zb_ops &ops, bool bf16, int M, int N,
                               int K) {
    zb_gemm g = {};
    g.M = M; g.N = N; g.K = K; g.tb = true;
    g.lda = K; g.ldb = K; g.ldc = N; g.batch = 1;
    g.alpha = 1.0f; g.beta = 0.0f;
    auto A = rand_vec((size_t)M * K, 1.0f), B = rand_vec((size_t)N * K, 1.0f);
    auto bv = rand_vec(N, 1.0f);
    std::vector<float> C((size_t)M * N), Gl((size_t)M * N);
    g.bias = bv.data();
    ref_gemm(g, A.data(), B.data(), C.data());
    zb_gelu_forward(Gl.data(), C.data(), C.size());
    zb_gemm d = g;
    d.A = to_device(A); d.B = to_device(B); d.bias = to_device(bv);
    d.C = nan_device(C.size());
    d.gelu_out = nan_device(C.size());
    zb_err err = {};
    if (ops.gemm(ops.ctx, &d, &err) != ZB_OK) {
        fprintf(stderr, "ops gemm (bias, GELU): %s\n", err.msg);
        exit(1);
    }
    double tol = bf16 ? 4.0 * std::sqrt((double)K) / 256 : 2e-5;
    char what[96];
    snprintf(what, sizeof what, "gemm %s %dx%dx%d bias pre-GELU",
             bf16 ? "bf16" : "fp32", M, N, K);
    double rtol = bf16 ? 0 : 1e-5;
    compare(what, C, (const float *)d.C, rtol, tol);
    snprintf(what, sizeof what, "gemm %s %dx%dx%d GELU out", bf16 ? "bf16" : "fp32",
             M, N, K);
    compare(what, Gl, (const float *)d.gelu_out, rtol, tol);
}

static void test_ops_gemms(bool bf16) {
    zb_ops ops;
    /* the stage's attention choice for this precision: bf16 activations
     * are only accepted with the GEMM attention */
    open_ops(bf16, zb_cuda_attn_gemm(bf16), 8192, 96, &ops);
    zb_err err = {};
    if (!bf16) {
        const int sz[][3] = {{1, 1, 1}, {3, 17, 33}, {33, 65, 17}, {65, 3, 1}};
        for (auto &s : sz)
            for (int t = 0; t < 4; t++)
                test_ops_gemm(ops, false, s[0], s[1], s[2], t & 1, t & 2, 1,
                              false, 0.5f);
        test_ops_gemm(ops, false, 17, 33, 65, true, false, 3, false, 1.0f);
        test_ops_gemm(ops, false, 33, 17, 3, false, true, 1, true, 0.0f);
        test_ops_gemm(ops, false, 64, 96, 48, false, true, 1, true, 0.0f);
        test_ops_gemm_gelu(ops, false, 64, 96, 16);  /* epilogue */
        test_ops_gemm_gelu(ops, false, 37, 200, 33); /* epilogue, odd M, K */
        test_ops_gemm_gelu(ops, false, 37, 13, 33);  /* fallback: ld 13 */
        /* 8192 rows: 32 slabs of the full-grid sum (reduce.cuh) */
        auto dy = rand_vec(8192 * 96, 1.0f), db = rand_vec(96, 1.0f);
        float *d_dy = to_device(dy), *d_db = to_device(db);
        zb_colsum_add(db.data(), dy.data(), 8192, 96);
        if (ops.colsum_add(ops.ctx, d_db, (zb_act *)d_dy, 8192, 96, &err) !=
            ZB_OK) {
            fprintf(stderr, "colsum_add: %s\n", err.msg);
            exit(1);
        }
        compare("colsum_add += (8192 rows)", db, d_db, 1e-4, 1e-3);
        /* a shape the scratch was not sized for is refused */
        bool refused =
            ops.colsum_add(ops.ctx, d_db, (zb_act *)d_dy, 37, 29, &err) != ZB_OK;
        printf("%-28s %s\n", "colsum_add other N refused", refused ? "ok" : "FAIL");
        if (!refused) failures++;
    } else {
        test_ops_gemm(ops, true, 64, 96, 256, false, true, 1, false, 0.0f);
        test_ops_gemm(ops, true, 64, 256, 96, false, false, 1, false, 1.0f);
        test_ops_gemm(ops, true, 96, 256, 64, true, false, 2, false, 1.0f);
        test_ops_gemm_gelu(ops, true, 64, 256, 96);
    }
    EXPECT_CUDA(cudaDeviceSynchronize());
    ops.destroy(ops.ctx);
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
    double acc[2] = {0.5, -0.25};
    double *d_acc = (double *)dev_bytes(sizeof acc);
    double *d_scr = (double *)dev_bytes(zb_cuda_sum_scratch_doubles() * sizeof(double));
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

/* The fused kernel's own head-size list (attention.cu, what it launches)
 * equals the one the stage checks on the CPU (cuda_choice.h). */
static void test_fused_head_list(void) {
    int bad = 0;
    for (int hs = 1; hs <= 512; hs++)
        bad += zb_ops_cuda_attention_supported(2 * hs, 2) !=
               zb_cuda_fused_head_ok(hs);
    printf("%-34s %s\n", "fused head sizes = cuda_choice's", bad ? "FAIL" : "ok");
    if (bad) failures++;
}

int main(void) {
    int present = zb_test_cuda_present();
    if (present != 0) return present;
    setenv("ZB_CUDA_GEMM_LOG", "1", 0); /* the GEMM paths, printed at the end */
    test_layernorm(37, 200);
    test_layernorm(256, 768);
    test_layernorm(8192, 96); /* 32 slabs in W */
    test_gelu(100003);
    test_crossentropy(33, 300, 0, 300, 300);
    test_crossentropy(33, 301, 151, 150, 256); /* last TP rank of 2, padded */
    test_crossentropy(5, 50257, 0, 50257, 50304); /* GPT-2, rows of 128k */
    test_crossentropy(5, 50257, 25129, 25128, 25216);
    test_ce_fused(1, 5, 5);
    test_ce_fused(37, 301, 384);       /* odd V, padded stride */
    test_ce_fused(300, 1027, 1029);    /* more rows than SMs: blocks loop */
    test_ce_fused(9, 50257, 50304);    /* GPT-2 rows */
    test_ce_fused(8192, 67, 128);      /* the loss sum over 8192 rows */
    test_crossentropy(8192, 67, 0, 67, 128);
    test_adamw(100003);
    test_embed(3, 16, 96, 11, 0, 11);
    test_embed(3, 16, 96, 11, 6, 5);       /* second TP shard */
    test_embed(4, 700, 40, 1000, 0, 1000); /* past a token tile, V > ranges */
    test_embed(4, 700, 40, 1000, 500, 500);
    test_embed(4, 700, 200, 3, 0, 3);      /* segments ~N/3 long, 4 column tiles */
    /* odd T (partial tiles), every supported head size, T past a tile */
    test_fused_head_list();
    test_attention(2, 7, 32, 2);
    test_attention(1, 131, 64, 2);
    test_attention(2, 65, 128, 2);
    test_attention(1, 200, 256, 2);
    test_attention(1, 300, 768, 12);
    test_ops_gemms(false);
    test_ops_gemms(true);
    test_attn_softmax(3, 7);
    test_attn_softmax(2, 200);
    test_ops_attention(false, 2, 7, 32, 2);
    test_ops_attention(false, 2, 65, 96, 3);
    test_stage_ops(37, 53);
    test_stage_ops(1024, 768);
    test_stage_ops(3, 5);          /* fewer elements than threads */
    test_stage_ops(4099, 1537);    /* the grid's four-load loop and its tail */
    return zb_test_finish();
}
