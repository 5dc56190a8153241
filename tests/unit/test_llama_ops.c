/* test_llama_ops.c - the Llama entries of the op table (executor/stage/
 * ops.h) on the CPU, and the tensor-parallel split of a Llama block
 * (zb_llama_tp_split).
 * - The cpu ops give the kernels' bits; gqa_bwd writes (=) every element.
 * - The bf16 test hook's ops (zb_ops_cpu_bf16) are wired to widen and
 *   round: on bf16 inputs their results are the fp32 ops' to bf16
 *   rounding (a missing wrapper would read bf16 bytes as floats); the
 *   multi-head attention, routed through the GQA hook, bit for bit.
 * - Bad GQA shapes and a tp that does not divide kv_heads are refused
 *   with a message that names them.
 * - The GQA GEMM descriptors the CUDA op table runs (gqa_gemm.h), run
 *   through the CPU gemm and softmax, give kernels/attention.c's GQA.
 * - TP: every rank's local GQA (its query heads and kv heads, cut from the
 *   global qkv as the column-split Wq, Wk, Wv would leave them) gives the
 *   global output and gradient of those heads; the SwiGLU MLP with W1 and
 *   W3 column-split and W2 row-split gives, summed over the ranks, the
 *   global output, and each rank's dab is the global one's columns.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "executor/stage/gqa_gemm.h"
#include "executor/stage/ops.h"
#include "kernels/attention.h"
#include "kernels/bf16.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/swiglu.h"
#include "tests/unit/test_rand.h"


static void assert_close(const float *got, const float *want, size_t n,
                         double rtol, double atol, const char *what) {
    for (size_t i = 0; i < n; i++)
        if (!(fabs((double)got[i] - want[i]) <= atol + rtol * fabs(want[i])))
            ck_abort_msg("%s[%zu]: got %.9g, want %.9g", what, i, got[i],
                         want[i]);
}

#define OK(call)                                                               \
    do {                                                                       \
        zb_err e_ = {0};                                                       \
        zb_err *err = &e_;                                                     \
        zb_status s_ = (call);                                                 \
        ck_assert_msg(s_ == ZB_OK, "%s: %s", #call, e_.msg);                   \
    } while (0)

/* ------------------------------------------------------------------ */

/* The cpu entries are the kernels; gqa_bwd overwrites garbage. */
START_TEST(test_cpu_ops_are_the_kernels) {
    zb_ops o;
    zb_ops_cpu(&o);
    const int N = 12, C = 16, B = 2, T = 6, NH = 4, KVH = 2, hs = C / NH;
    const int ld = C + 2 * KVH * hs;
    seed(1);
    size_t n = (size_t)N * C, nq = (size_t)B * T * ld;
    float *x = frandbuf(2 * n, 1.0f), *w = frandbuf(C, 1.0f);
    float *dy = frandbuf(n, 1.0f), *y1 = fbuf(n), *y2 = fbuf(n);
    float *r1 = fbuf(N), *r2 = fbuf(N);
    zb_rmsnorm_forward(y1, r1, x, w, N, C);
    OK(o.rms_fwd(o.ctx, (zb_act *)y2, r2, (zb_act *)x, w, N, C, err));
    ck_assert_mem_eq(y1, y2, n * sizeof *y1);
    ck_assert_mem_eq(r1, r2, N * sizeof *r1);
    zb_rmsnorm_backward_input(y1, dy, x, w, r1, N, C);
    OK(o.rms_bwd_input(o.ctx, (zb_act *)y2, (zb_act *)dy, (zb_act *)x, w, r2,
                       N, C, err));
    ck_assert_mem_eq(y1, y2, n * sizeof *y1);
    float *dw1 = fbuf(C), *dw2 = fbuf(C);
    zb_rmsnorm_backward_weight(dw1, dy, x, r2, N, C);
    OK(o.rms_bwd_weight(o.ctx, dw2, (zb_act *)dy, (zb_act *)x, r2, N, C, err));
    ck_assert_mem_eq(dw1, dw2, C * sizeof *dw1);
    zb_swiglu_forward(y1, x, N, C);
    OK(o.swiglu_fwd(o.ctx, (zb_act *)y2, (zb_act *)x, N, C, err));
    ck_assert_mem_eq(y1, y2, n * sizeof *y1);
    float *da1 = fbuf(2 * n), *da2 = fbuf(2 * n);
    zb_swiglu_backward(da1, x, dy, N, C);
    OK(o.swiglu_bwd(o.ctx, (zb_act *)da2, (zb_act *)x, (zb_act *)dy, N, C, err));
    ck_assert_mem_eq(da1, da2, 2 * n * sizeof *da1);
    float *q1 = frandbuf(nq, 1.0f), *q2 = fdup(q1, nq);
    zb_rope_forward(q1, B, T, NH + KVH, hs, ld, 10000.0f);
    OK(o.rope_fwd(o.ctx, (zb_act *)q2, B, T, NH + KVH, hs, ld, 10000.0f, err));
    ck_assert_mem_eq(q1, q2, nq * sizeof *q1);
    zb_rope_backward(q1, B, T, NH + KVH, hs, ld, 10000.0f);
    OK(o.rope_bwd(o.ctx, (zb_act *)q2, B, T, NH + KVH, hs, ld, 10000.0f, err));
    ck_assert_mem_eq(q1, q2, nq * sizeof *q1);
    size_t sb = o.gqa_saved_bytes(o.ctx, B, NH, T);
    ck_assert_uint_eq(sb, (size_t)B * NH * T * T * sizeof(float));
    float *att1 = fbuf(sb / 4), *att2 = fbuf(sb / 4), *scr = fbuf(sb / 4);
    float *o1 = fbuf((size_t)B * T * C), *o2 = fbuf((size_t)B * T * C);
    zb_attention_gqa_forward(o1, att1, q1, B, T, C, NH, KVH);
    OK(o.gqa_fwd(o.ctx, (zb_act *)o2, att2, (zb_act *)q1, B, T, C, NH, KVH, err));
    ck_assert_mem_eq(o1, o2, (size_t)B * T * C * sizeof *o1);
    ck_assert_mem_eq(att1, att2, sb);
    float *g1 = fbuf(nq), *g2 = fbuf(nq);
    memset(g2, 0xff, nq * sizeof *g2); /* NaN: must be overwritten */
    zb_attention_gqa_backward(g1, scr, dy, q1, att1, B, T, C, NH, KVH);
    OK(o.gqa_bwd(o.ctx, (zb_act *)g2, scr, (zb_act *)dy, (zb_act *)q1,
                 (zb_act *)o2, att2, B, T, C, NH, KVH, err));
    ck_assert_mem_eq(g1, g2, nq * sizeof *g1);
    free(x), free(w), free(dy), free(y1), free(y2), free(r1), free(r2);
    free(dw1), free(dw2), free(da1), free(da2), free(q1), free(q2);
    free(att1), free(att2), free(scr), free(o1), free(o2), free(g1), free(g2);
}
END_TEST

/* a zb_act buffer of n bf16 elements from floats, and back */
static void *to_bf16(const float *f, size_t n) {
    void *p = calloc(n ? n : 1, 2);
    ck_assert_ptr_nonnull(p);
    zb_bf16_store(p, f, n);
    return p;
}
static float *from_bf16(const void *p, size_t n) {
    float *f = fbuf(n);
    zb_bf16_load(f, p, n);
    return f;
}
/* bf16 keeps 8 significant bits: one rounding of the result is 2^-9
 * relative; the fp32 op ran on the same (rounded) inputs */
#define BF16_RTOL 4e-3
#define BF16_ATOL 1e-3

START_TEST(test_bf16_hook_ops) {
    zb_ops f, b;
    zb_ops_cpu(&f);
    zb_err e = {0};
    ck_assert_int_eq(zb_ops_cpu_bf16(&b, &e), ZB_OK);
    const int N = 8, C = 16, B = 2, T = 4, NH = 4, KVH = 1, hs = C / NH;
    const int ld = C + 2 * KVH * hs;
    size_t n = (size_t)N * C, nq = (size_t)B * T * ld, no = (size_t)B * T * C;
    seed(2);
    float *x = frandbuf(2 * n, 2.0f), *w = frandbuf(C, 1.0f);
    void *xb = to_bf16(x, 2 * n);
    zb_bf16_load(x, xb, 2 * n); /* both sides from the same inputs */
    float *y = fbuf(n), *r = fbuf(N), *rb = fbuf(N);
    void *yb = to_bf16(y, n);
    OK(f.rms_fwd(f.ctx, (zb_act *)y, r, (zb_act *)x, w, N, C, err));
    OK(b.rms_fwd(b.ctx, yb, rb, xb, w, N, C, err));
    float *got = from_bf16(yb, n);
    assert_close(got, y, n, BF16_RTOL, BF16_ATOL, "bf16 rms_fwd");
    free(got);
    float *dy = frandbuf(n, 1.0f), *dx = fbuf(2 * n), *dw = fbuf(C);
    float *dwb = fbuf(C);
    void *dyb = to_bf16(dy, n), *dxb = to_bf16(dx, 2 * n);
    zb_bf16_load(dy, dyb, n);
    OK(f.rms_bwd_input(f.ctx, (zb_act *)dx, (zb_act *)dy, (zb_act *)x, w, r,
                       N, C, err));
    OK(b.rms_bwd_input(b.ctx, dxb, dyb, xb, w, rb, N, C, err));
    got = from_bf16(dxb, n);
    assert_close(got, dx, n, BF16_RTOL, BF16_ATOL, "bf16 rms_bwd_input");
    free(got);
    OK(f.rms_bwd_weight(f.ctx, dw, (zb_act *)dy, (zb_act *)x, r, N, C, err));
    OK(b.rms_bwd_weight(b.ctx, dwb, dyb, xb, rb, N, C, err));
    assert_close(dwb, dw, C, 1e-5, 1e-6, "bf16 rms_bwd_weight"); /* fp32 out */
    memset(dx, 0, 2 * n * sizeof *dx);
    zb_bf16_store(dxb, dx, 2 * n);
    OK(f.swiglu_bwd(f.ctx, (zb_act *)dx, (zb_act *)x, (zb_act *)dy, N, C, err));
    OK(b.swiglu_bwd(b.ctx, dxb, xb, dyb, N, C, err));
    got = from_bf16(dxb, 2 * n);
    assert_close(got, dx, 2 * n, BF16_RTOL, BF16_ATOL, "bf16 swiglu_bwd");
    free(got);
    OK(f.swiglu_fwd(f.ctx, (zb_act *)y, (zb_act *)x, N, C, err));
    OK(b.swiglu_fwd(b.ctx, yb, xb, N, C, err));
    got = from_bf16(yb, n);
    assert_close(got, y, n, BF16_RTOL, BF16_ATOL, "bf16 swiglu_fwd");
    free(got);
    OK(f.rope_fwd(f.ctx, (zb_act *)x, 1, N, 2, C / 2, 2 * C, 10000.0f, err));
    OK(b.rope_fwd(b.ctx, xb, 1, N, 2, C / 2, 2 * C, 10000.0f, err));
    got = from_bf16(xb, 2 * n);
    assert_close(got, x, 2 * n, BF16_RTOL, BF16_ATOL, "bf16 rope_fwd");
    free(got);
    zb_bf16_load(x, xb, 2 * n); /* both from the same rounded values */
    OK(f.rope_bwd(f.ctx, (zb_act *)x, 1, N, 2, C / 2, 2 * C, 10000.0f, err));
    OK(b.rope_bwd(b.ctx, xb, 1, N, 2, C / 2, 2 * C, 10000.0f, err));
    got = from_bf16(xb, 2 * n);
    assert_close(got, x, 2 * n, BF16_RTOL, BF16_ATOL, "bf16 rope_bwd");
    free(got);
    ck_assert_uint_eq(b.gqa_saved_bytes(b.ctx, B, NH, T),
                      f.gqa_saved_bytes(f.ctx, B, NH, T) / 2);
    free(dy), free(dyb);
    float *q = frandbuf(nq, 1.0f), *o = fbuf(no);
    dy = frandbuf(no, 1.0f);
    void *qb = to_bf16(q, nq), *ob = to_bf16(o, no);
    dyb = to_bf16(dy, no);
    zb_bf16_load(q, qb, nq);
    zb_bf16_load(dy, dyb, no);
    size_t sa = f.gqa_saved_bytes(f.ctx, B, NH, T);
    float *att = fbuf(sa / 4), *scr = fbuf(sa / 4), *g = fbuf(nq);
    void *attb = calloc(1, sa / 2), *scrb = calloc(1, sa / 2);
    void *gb = to_bf16(g, nq);
    OK(f.gqa_fwd(f.ctx, (zb_act *)o, att, (zb_act *)q, B, T, C, NH, KVH, err));
    OK(b.gqa_fwd(b.ctx, ob, attb, qb, B, T, C, NH, KVH, err));
    got = from_bf16(ob, no);
    assert_close(got, o, no, 1e-2, 4e-3, "bf16 gqa_fwd"); /* P rounded too */
    free(got);
    OK(f.gqa_bwd(f.ctx, (zb_act *)g, scr, (zb_act *)dy, (zb_act *)q,
                 (zb_act *)o, att, B, T, C, NH, KVH, err));
    OK(b.gqa_bwd(b.ctx, gb, scrb, dyb, qb, ob, attb, B, T, C, NH, KVH, err));
    got = from_bf16(gb, nq);
    assert_close(got, g, nq, 3e-2, 1e-2, "bf16 gqa_bwd");
    free(got);
    b.destroy(b.ctx);
    free(x), free(w), free(xb), free(y), free(r), free(rb), free(yb);
    free(dx), free(dw), free(dwb), free(dxb);
    free(q), free(o), free(dy), free(qb), free(ob), free(dyb), free(att);
    free(scr), free(g), free(attb), free(scrb), free(gb);
}
END_TEST

/* The bf16 hook's multi-head attention (attn_fwd/attn_bwd, GPT-2 blocks)
 * is its GQA with a kv head per head, and gives bit for bit what it gave
 * as its own wrapper: the fp32 attention on the widened operands (the
 * backward reading the bf16-kept probabilities and output), rounded. */
START_TEST(test_bf16_attn_is_widened_fp32) {
    zb_ops f, b;
    zb_ops_cpu(&f);
    zb_err e = {0};
    ck_assert_int_eq(zb_ops_cpu_bf16(&b, &e), ZB_OK);
    const int B = 2, T = 5, C = 12, NH = 3;
    size_t no = (size_t)B * T * C, nq = 3 * no, np = (size_t)B * NH * T * T;
    seed(5);
    float *q = frandbuf(nq, 1.0f), *dy = frandbuf(no, 1.0f);
    void *qb = to_bf16(q, nq), *dyb = to_bf16(dy, no);
    zb_bf16_load(q, qb, nq);
    zb_bf16_load(dy, dyb, no);
    float *o = fbuf(no), *att = fbuf(np), *scr = fbuf(np), *g = fbuf(nq);
    void *ob = to_bf16(o, no), *attb = to_bf16(att, np), *gb = to_bf16(g, nq);
    void *scrb = calloc(1, b.attn_scratch_bytes(b.ctx, B, NH, T));
    ck_assert_ptr_nonnull(scrb);
    OK(b.attn_fwd(b.ctx, ob, attb, qb, B, T, C, NH, err));
    OK(f.attn_fwd(f.ctx, (zb_act *)o, att, (zb_act *)q, B, T, C, NH, err));
    void *want_o = to_bf16(o, no), *want_att = to_bf16(att, np);
    ck_assert_mem_eq(ob, want_o, no * 2);
    ck_assert_mem_eq(attb, want_att, np * 2);
    OK(b.attn_bwd(b.ctx, gb, scrb, dyb, qb, ob, attb, B, T, C, NH, err));
    zb_bf16_load(o, ob, no);      /* what the backward reads: the kept */
    zb_bf16_load(att, attb, np);  /* output and probabilities, widened */
    OK(f.attn_bwd(f.ctx, (zb_act *)g, scr, (zb_act *)dy, (zb_act *)q,
                  (zb_act *)o, att, B, T, C, NH, err));
    void *want_g = to_bf16(g, nq);
    ck_assert_mem_eq(gb, want_g, nq * 2);
    b.destroy(b.ctx);
    free(q), free(dy), free(qb), free(dyb), free(o), free(att), free(scr);
    free(g), free(ob), free(attb), free(gb), free(scrb), free(want_o);
    free(want_att), free(want_g);
}
END_TEST

START_TEST(test_refusals) {
    zb_ops o;
    zb_ops_cpu(&o);
    zb_err e = {0};
    float buf[64] = {0};
    ck_assert_int_eq(o.gqa_fwd(o.ctx, (zb_act *)buf, buf, (zb_act *)buf, 1, 1,
                               12, 6, 4, &e), ZB_EINPUT);
    ck_assert_msg(strstr(e.msg, "4 key/value heads") != NULL, "%s", e.msg);
    zb_llama_tp tp;
    ck_assert_int_eq(zb_llama_tp_split(8, 2, 64, 4, 0, &tp, &e), ZB_EINPUT);
    ck_assert_msg(strstr(e.msg, "tp 4 does not divide kv_heads 2") != NULL,
                  "%s", e.msg);
    ck_assert_int_eq(zb_llama_tp_split(8, 3, 64, 1, 0, &tp, &e), ZB_EINPUT);
    ck_assert_msg(strstr(e.msg, "kv_heads 3 must divide heads 8") != NULL,
                  "%s", e.msg);
    ck_assert_int_eq(zb_llama_tp_split(8, 4, 66, 4, 0, &tp, &e), ZB_EINPUT);
    ck_assert_msg(strstr(e.msg, "SwiGLU width 66") != NULL, "%s", e.msg);
    ck_assert_int_eq(zb_llama_tp_split(8, 4, 64, 4, 3, &tp, &e), ZB_OK);
    ck_assert_int_eq(tp.heads, 2);
    ck_assert_int_eq(tp.head0, 6);
    ck_assert_int_eq(tp.kv_heads, 1);
    ck_assert_int_eq(tp.kv_head0, 3);
    ck_assert_int_eq(tp.ffn, 16);
    ck_assert_int_eq(tp.ffn0, 48);
}
END_TEST

/* ------------------------------------------------------------------ */
/* GQA as GEMM descriptors (what ops_cuda.cu enqueues)                */

static void run_gemms(const zb_ops *o, const zb_gqa_geo *q, int which, int B,
                      const zb_gqa_bufs *x) {
    for (int b = 0; b < B; b++)
        for (int g = 0; g < q->G; g++) {
            zb_gemm d = zb_gqa_gemm(q, which, b, g, x);
            OK(o->gemm(o->ctx, &d, err));
        }
}

static void gqa_desc_case(int B, int T, int NH, int KVH, int hs) {
    int C = NH * hs;
    zb_ops o;
    zb_ops_cpu(&o);
    zb_gqa_geo q;
    ck_assert_ptr_null(zb_gqa_geo_init(&q, T, C, NH, KVH, ZB_DT_F32));
    size_t nq = (size_t)B * T * q.ld, no = (size_t)B * T * C;
    size_t na = (size_t)B * NH * T * T;
    float *qkv = frandbuf(nq, 1.0f), *dy = frandbuf(no, 1.0f);
    float *out = fbuf(no), *att = fbuf(na), *scr = fbuf(na), *dq = fbuf(nq);
    zb_attention_gqa_forward(out, att, qkv, B, T, C, NH, KVH);
    zb_attention_gqa_backward(dq, scr, dy, qkv, att, B, T, C, NH, KVH);
    float *out2 = fbuf(no), *P = fbuf(na), *dS = fbuf(na), *dq2 = fbuf(nq);
    memset(out2, 0xff, no * sizeof *out2); /* NaN: must be overwritten */
    memset(dq2, 0xff, nq * sizeof *dq2);
    zb_gqa_bufs x = {.qkv = qkv, .dout = dy, .P = P, .S = P, .out = out2,
                     .dqkv = dq2};
    run_gemms(&o, &q, ZB_GQA_SCORES, B, &x);
    zb_attn_softmax_causal(P, T, (size_t)B * NH);
    run_gemms(&o, &q, ZB_GQA_OUT, B, &x);
    x.S = dS;
    run_gemms(&o, &q, ZB_GQA_DP, B, &x);
    zb_attn_softmax_causal_backward(dS, P, T, (size_t)B * NH);
    run_gemms(&o, &q, ZB_GQA_DQ, B, &x);
    run_gemms(&o, &q, ZB_GQA_DK, B, &x);
    run_gemms(&o, &q, ZB_GQA_DV, B, &x);
    /* the same products, batched and summed over a group another way */
    assert_close(P, att, na, 1e-6, 1e-7, "gqa descriptors P");
    assert_close(out2, out, no, 1e-5, 1e-6, "gqa descriptors out");
    assert_close(dq2, dq, nq, 1e-5, 1e-6, "gqa descriptors dqkv");
    free(qkv), free(dy), free(out), free(att), free(scr), free(dq);
    free(out2), free(P), free(dS), free(dq2);
}

START_TEST(test_gqa_gemm_descriptors) {
    seed(5);
    gqa_desc_case(2, 9, 8, 2, 4); /* groups of 4 */
    gqa_desc_case(2, 9, 4, 4, 8); /* kv_heads = heads */
    gqa_desc_case(1, 16, 6, 1, 4); /* multi-query */
    zb_gqa_geo q;
    ck_assert_ptr_nonnull(zb_gqa_geo_init(&q, 4, 24, 6, 4, ZB_DT_F32));
}
END_TEST

/* ------------------------------------------------------------------ */
/* tensor parallelism                                                 */

/* Global GQA against each rank's local one. The local qkv rows are [q of
 * heads head0.. | k of kv heads kv_head0.. | v of those], the columns
 * the split Wq, Wk, Wv produce; out and dq/dk/dv are the global ones'. */
static void gqa_tp_case(int tpn, int NH, int KVH) {
    const int B = 2, T = 7, hs = 4, C = NH * hs, ld = C + 2 * KVH * hs;
    zb_ops o;
    zb_ops_cpu(&o);
    seed(3);
    size_t nq = (size_t)B * T * ld, no = (size_t)B * T * C;
    size_t sa = o.gqa_saved_bytes(o.ctx, B, NH, T);
    float *qkv = frandbuf(nq, 1.0f), *dy = frandbuf(no, 1.0f);
    float *out = fbuf(no), *att = fbuf(sa / 4), *scr = fbuf(sa / 4);
    float *dq = fbuf(nq);
    OK(o.gqa_fwd(o.ctx, (zb_act *)out, att, (zb_act *)qkv, B, T, C, NH, KVH, err));
    OK(o.gqa_bwd(o.ctx, (zb_act *)dq, scr, (zb_act *)dy, (zb_act *)qkv,
                 (zb_act *)out, att, B, T, C, NH, KVH, err));
    for (int r = 0; r < tpn; r++) {
        zb_llama_tp s;
        OK(zb_llama_tp_split(NH, KVH, 8, tpn, r, &s, err));
        int Cl = s.heads * hs, kvl = s.kv_heads * hs, ldl = Cl + 2 * kvl;
        size_t nql = (size_t)B * T * ldl, nol = (size_t)B * T * Cl;
        float *ql = fbuf(nql), *dyl = fbuf(nol), *ol = fbuf(nol);
        float *dql = fbuf(nql), *want = fbuf(nql), *wout = fbuf(nol);
        size_t sal = o.gqa_saved_bytes(o.ctx, B, s.heads, T);
        float *al = fbuf(sal / 4), *sl = fbuf(sal / 4);
        for (int row = 0; row < B * T; row++) { /* cut the columns */
            const float *g = qkv + (size_t)row * ld, *gd = dq + (size_t)row * ld;
            int src[3] = {s.head0 * hs, C + s.kv_head0 * hs,
                          C + KVH * hs + s.kv_head0 * hs};
            int dst[3] = {0, Cl, Cl + kvl}, len[3] = {Cl, kvl, kvl};
            for (int k = 0; k < 3; k++) {
                memcpy(ql + (size_t)row * ldl + dst[k], g + src[k], len[k] * 4);
                memcpy(want + (size_t)row * ldl + dst[k], gd + src[k], len[k] * 4);
            }
            memcpy(dyl + (size_t)row * Cl, dy + (size_t)row * C + s.head0 * hs, Cl * 4);
            memcpy(wout + (size_t)row * Cl, out + (size_t)row * C + s.head0 * hs, Cl * 4);
        }
        OK(o.gqa_fwd(o.ctx, (zb_act *)ol, al, (zb_act *)ql, B, T, Cl, s.heads,
                     s.kv_heads, err));
        OK(o.gqa_bwd(o.ctx, (zb_act *)dql, sl, (zb_act *)dyl, (zb_act *)ql,
                     (zb_act *)ol, al, B, T, Cl, s.heads, s.kv_heads, err));
        /* the same products per head, other leading dimensions */
        assert_close(ol, wout, nol, 1e-6, 1e-7, "tp gqa out");
        assert_close(dql, want, nql, 1e-6, 1e-7, "tp gqa dqkv");
        free(ql), free(dyl), free(ol), free(dql), free(want), free(wout);
        free(al), free(sl);
    }
    free(qkv), free(dy), free(out), free(att), free(scr), free(dq);
}

START_TEST(test_tp_gqa) {
    gqa_tp_case(2, 8, 2); /* two kv heads, one per rank, groups of 4 */
    gqa_tp_case(2, 4, 4); /* plain multi-head */
    gqa_tp_case(4, 8, 4);
}
END_TEST

/* y[N, O] (+)= x[N, I] W[O, I]^T restricted to W's rows [o0, o0 + On) and
 * columns [i0, i0 + In), x read from its columns [xc0, xc0 + In) of ldx */
static void mm(float *y, int ldy, const float *x, int ldx, int xc0,
               const float *W, int ldw, int o0, int On, int i0, int In,
               int N) {
    for (int n = 0; n < N; n++)
        for (int o = 0; o < On; o++) {
            double s = 0.0;
            for (int i = 0; i < In; i++)
                s += (double)x[(size_t)n * ldx + xc0 + i] *
                     W[(size_t)(o0 + o) * ldw + i0 + i];
            y[(size_t)n * ldy + o] += (float)s;
        }
}

/* The SwiGLU MLP y = W2 (silu(W1 x) * (W3 x)) with W1, W3 column-split and
 * W2 row-split: the ranks' partial y add up to the global y, and each
 * rank's dab (from the global dh's columns) is the global dab's columns. */
START_TEST(test_tp_swiglu) {
    const int N = 5, C = 6, Fw = 12, tpn = 3;
    zb_ops o;
    zb_ops_cpu(&o);
    seed(4);
    float *x = frandbuf((size_t)N * C, 1.0f), *W1 = frandbuf((size_t)Fw * C, 1.0f);
    float *W3 = frandbuf((size_t)Fw * C, 1.0f), *W2 = frandbuf((size_t)C * Fw, 1.0f);
    float *dh = frandbuf((size_t)N * Fw, 1.0f);
    float *ab = fbuf((size_t)N * 2 * Fw), *h = fbuf((size_t)N * Fw);
    float *y = fbuf((size_t)N * C), *dab = fbuf((size_t)N * 2 * Fw);
    mm(ab, 2 * Fw, x, C, 0, W1, C, 0, Fw, 0, C, N);
    mm(ab + Fw, 2 * Fw, x, C, 0, W3, C, 0, Fw, 0, C, N);
    OK(o.swiglu_fwd(o.ctx, (zb_act *)h, (zb_act *)ab, N, Fw, err));
    mm(y, C, h, Fw, 0, W2, Fw, 0, C, 0, Fw, N);
    OK(o.swiglu_bwd(o.ctx, (zb_act *)dab, (zb_act *)ab, (zb_act *)dh, N, Fw, err));
    float *ysum = fbuf((size_t)N * C);
    for (int r = 0; r < tpn; r++) {
        zb_llama_tp s;
        OK(zb_llama_tp_split(3, 3, Fw, tpn, r, &s, err));
        int Fl = s.ffn, f0 = s.ffn0;
        float *abl = fbuf((size_t)N * 2 * Fl), *hl = fbuf((size_t)N * Fl);
        float *dhl = fbuf((size_t)N * Fl), *dabl = fbuf((size_t)N * 2 * Fl);
        mm(abl, 2 * Fl, x, C, 0, W1, C, f0, Fl, 0, C, N);      /* W1 rows */
        mm(abl + Fl, 2 * Fl, x, C, 0, W3, C, f0, Fl, 0, C, N); /* W3 rows */
        OK(o.swiglu_fwd(o.ctx, (zb_act *)hl, (zb_act *)abl, N, Fl, err));
        mm(ysum, C, hl, Fl, 0, W2, Fw, 0, C, f0, Fl, N); /* W2 columns */
        for (int n = 0; n < N; n++) {
            memcpy(dhl + (size_t)n * Fl, dh + (size_t)n * Fw + f0, Fl * 4);
            /* the gate is elementwise: local values are the global ones */
            assert_close(hl + (size_t)n * Fl, h + (size_t)n * Fw + f0, Fl, 0,
                         0, "tp swiglu h");
        }
        OK(o.swiglu_bwd(o.ctx, (zb_act *)dabl, (zb_act *)abl, (zb_act *)dhl,
                        N, Fl, err));
        for (int n = 0; n < N; n++) {
            assert_close(dabl + (size_t)n * 2 * Fl,
                         dab + (size_t)n * 2 * Fw + f0, Fl, 0, 0, "tp da");
            assert_close(dabl + (size_t)n * 2 * Fl + Fl,
                         dab + (size_t)n * 2 * Fw + Fw + f0, Fl, 0, 0, "tp db");
        }
        free(abl), free(hl), free(dhl), free(dabl);
    }
    /* the partials sum Fw products in tpn runs: float rounding of those */
    assert_close(ysum, y, (size_t)N * C, 1e-5, 1e-5, "tp swiglu y");
    free(x), free(W1), free(W3), free(W2), free(dh), free(ab), free(h);
    free(y), free(dab), free(ysum);
}
END_TEST

static Suite *ops_suite(void) {
    Suite *s = suite_create("llama_ops");
    TCase *tc = tcase_create("cpu");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_cpu_ops_are_the_kernels);
    tcase_add_test(tc, test_bf16_hook_ops);
    tcase_add_test(tc, test_bf16_attn_is_widened_fp32);
    tcase_add_test(tc, test_refusals);
    tcase_add_test(tc, test_gqa_gemm_descriptors);
    tcase_add_test(tc, test_tp_gqa);
    tcase_add_test(tc, test_tp_swiglu);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(ops_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
