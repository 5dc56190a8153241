/* attention.c - causal multi-head self-attention core, see attention.h.
 *   qkv, dqkv [B, T, 3C]  (q at channel 0, k at C, v at 2C; head h uses
 *                          channels h*hs .. h*hs+hs-1 of each, hs = C/NH)
 *   att [B, NH, T, T]     softmax rows; entries t2 > t are written as 0
 *   out, dout [B, T, C]
 *   datt [B, NH, T, T]    backward scratch
 * Per (b, h) the products are GEMMs on strided views of qkv (leading
 * dimension 3C), through OpenBLAS: Q K^T and the gradients are computed as
 * full T x T products, twice the causal work, but at BLAS speed that is
 * several times faster than the scalar dot products they replace (hs is
 * small, and float sums do not vectorise without reassociation). The zero
 * upper triangle of att keeps the masked entries out of every result.
 * Each (b, h) pair owns its slices, so pairs run in parallel without races
 * and with a fixed summation order; under GQA (KVH < NH, [B, T, C + 2 KVC]
 * rows, leading dimension C + 2 KVC) the backward's unit is a (b, kv head)
 * pair and its group of query heads, which share dk and dv.
 */
#include "kernels/attention.h"

#include <cblas.h>
#include <math.h>
#include <stddef.h>

#include "kernels/parallel.h"

/* One softmax row: scores[0..t] -> probabilities, scores[t+1..T-1] = 0. */
static inline void causal_softmax_row(float *row, int t, int T) {
    float maxv = -INFINITY;
    for (int t2 = 0; t2 <= t; t2++) maxv = row[t2] > maxv ? row[t2] : maxv;
    float sum = 0.0f;
    for (int t2 = 0; t2 <= t; t2++) {
        row[t2] = expf(row[t2] - maxv);
        sum += row[t2];
    }
    float inv = 1.0f / sum; /* sum >= 1: the max term is exp(0) */
    for (int t2 = 0; t2 <= t; t2++) row[t2] *= inv;
    for (int t2 = t + 1; t2 < T; t2++) row[t2] = 0.0f;
}

/* One row of the softmax backward, in place: dr = p (dr - sum p dr) over
 * [0..t], 0 after. */
static inline void causal_softmax_backward_row(float *dr, const float *pr,
                                               int t, int T) {
    float pda = 0.0f;
    for (int t2 = 0; t2 <= t; t2++) pda += pr[t2] * dr[t2];
    for (int t2 = 0; t2 <= t; t2++) dr[t2] = pr[t2] * (dr[t2] - pda);
    for (int t2 = t + 1; t2 < T; t2++) dr[t2] = 0.0f;
}

void zb_attn_softmax_causal(float *att, int T, size_t nmat) {
    for (size_t m = 0; m < nmat; m++)
        for (int t = 0; t < T; t++)
            causal_softmax_row(att + (m * T + t) * T, t, T);
}

void zb_attn_softmax_causal_backward(float *ds, const float *att, int T,
                                     size_t nmat) {
    for (size_t m = 0; m < nmat; m++)
        for (int t = 0; t < T; t++)
            causal_softmax_backward_row(ds + (m * T + t) * T,
                                        att + (m * T + t) * T, t, T);
}

void zb_attention_forward(float *out, float *att, const float *qkv, int B,
                          int T, int C, int NH) {
    zb_attention_gqa_forward(out, att, qkv, B, T, C, NH, NH);
}

void zb_attention_backward(float *dqkv, float *datt, const float *dout,
                           const float *qkv, const float *att, int B, int T,
                           int C, int NH) {
    zb_attention_gqa_backward(dqkv, datt, dout, qkv, att, B, T, C, NH, NH);
}

/* Query head h of batch row b reads kv head h / G: its k and v are KVC
 * and 2 KVC past the row's start; with KVH = NH (G = 1) these are the
 * offsets C + h hs and 2C + h hs of the [B, T, 3C] layout. */
void zb_attention_gqa_forward(float *out, float *att, const float *qkv, int B,
                              int T, int C, int NH, int KVH) {
    zb_blas_single_threaded();
    int hs = C / NH, kvc = KVH * hs, ld = C + 2 * kvc, G = NH / KVH;
    float scale = 1.0f / sqrtf((float)hs);
    size_t work = (size_t)B * T * T * C; /* multiply-adds */
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH(work))
    for (int bh = 0; bh < B * NH; bh++) {
        int b = bh / NH, h = bh % NH;
        const float *row = qkv + (size_t)b * T * ld;         /* [T, ld] */
        const float *q = row + h * hs;                       /* [T, hs] ld */
        const float *k = row + C + (h / G) * hs, *v = k + kvc;
        float *a = att + (size_t)bh * T * T;                 /* [T, T] */
        float *o = out + (size_t)b * T * C + h * hs;         /* [T, hs] ld C */
        /* a = scale * q k^T, then causal softmax row by row */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, scale,
                    q, ld, k, ld, 0.0f, a, T);
        zb_attn_softmax_causal(a, T, 1);
        /* o = a v */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, 1.0f,
                    a, T, v, ld, 0.0f, o, C);
    }
}

/* For p = att (per b, h), dy = dout, s = scale:
 *   da = dy v^T                        [T, T]
 *   ds[t, t2] = p (da - sum_j p da)    (softmax backward, per row t)
 *   dv += p^T dy;  dq += s ds k;  dk += s ds^T q
 * ds is 0 wherever p is, so the masked entries stay out. One iteration
 * owns a (b, kv head) pair and runs its G query heads in order: dk and dv
 * are shared by the group, so they are summed without races and in a
 * fixed order. */
void zb_attention_gqa_backward(float *dqkv, float *datt, const float *dout,
                               const float *qkv, const float *att, int B,
                               int T, int C, int NH, int KVH) {
    zb_blas_single_threaded();
    int hs = C / NH, kvc = KVH * hs, ld = C + 2 * kvc, G = NH / KVH;
    float scale = 1.0f / sqrtf((float)hs);
    size_t work = (size_t)B * T * T * C; /* multiply-adds */
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH(work))
    for (int bk = 0; bk < B * KVH; bk++) {
        int b = bk / KVH, kh = bk % KVH;
        size_t koff = (size_t)b * T * ld + C + kh * hs;
        const float *k = qkv + koff, *v = k + kvc;
        float *dk = dqkv + koff, *dv = dk + kvc;
        for (int h = kh * G; h < kh * G + G; h++) {
            size_t qoff = (size_t)b * T * ld + h * hs;
            const float *q = qkv + qoff;
            float *dq = dqkv + qoff;
            size_t bh = (size_t)b * NH + h;
            const float *p = att + bh * T * T;                   /* [T, T] */
            float *ds = datt + bh * T * T;                       /* [T, T] */
            const float *dy = dout + (size_t)b * T * C + h * hs; /* [T, hs] ld C */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs,
                        1.0f, dy, C, v, ld, 0.0f, ds, T);
            zb_attn_softmax_causal_backward(ds, p, T, 1);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T,
                        1.0f, p, T, dy, C, 1.0f, dv, ld);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T,
                        scale, ds, T, k, ld, 1.0f, dq, ld);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T,
                        scale, ds, T, q, ld, 1.0f, dk, ld);
        }
    }
}
