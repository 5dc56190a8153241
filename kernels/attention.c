/* attention.c - causal multi-head self-attention core, see attention.h.
 *   qkv, dqkv [B, T, 3C]  (q at channel 0, k at C, v at 2C; head h uses
 *                          channels h*hs .. h*hs+hs-1 of each, hs = C/NH)
 *   att [B, NH, T, T]     softmax rows; entries t2 > t are written as 0
 *   out, dout [B, T, C]
 * Each (b, h) pair touches its own slice of every buffer, so the pairs run
 * in parallel without races and with a fixed summation order.
 */
#include "kernels/attention.h"

#include <math.h>
#include <stddef.h>

#include "kernels/parallel.h"

static float dot(const float *a, const float *b, int n) {
    float s = 0.0f;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

/* y[n] += alpha * x[n] */
static void axpy(float *y, float alpha, const float *x, int n) {
    for (int i = 0; i < n; i++) y[i] += alpha * x[i];
}

/* One softmax row: scores[0..t] -> probabilities, scores[t+1..T-1] = 0. */
static void causal_softmax_row(float *row, int t, int T) {
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

void zb_attention_forward(float *out, float *att, const float *qkv, int B,
                          int T, int C, int NH) {
    int hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
    size_t work = (size_t)B * T * T * C / 2; /* multiply-adds per pass */
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH(work))
    for (int bh = 0; bh < B * NH; bh++) {
        int b = bh / NH, h = bh % NH;
        const float *qkv_b = qkv + (size_t)b * T * 3 * C; /* [T, 3C] */
        for (int t = 0; t < T; t++) {
            const float *q = qkv_b + (size_t)t * 3 * C + h * hs; /* [hs] */
            float *row = att + ((size_t)bh * T + t) * T;          /* [T] */
            for (int t2 = 0; t2 <= t; t2++) {
                const float *k = qkv_b + (size_t)t2 * 3 * C + C + h * hs;
                row[t2] = dot(q, k, hs) * scale;
            }
            causal_softmax_row(row, t, T);
            float *o = out + ((size_t)b * T + t) * C + h * hs; /* [hs] */
            for (int i = 0; i < hs; i++) o[i] = 0.0f;
            for (int t2 = 0; t2 <= t; t2++) {
                const float *v = qkv_b + (size_t)t2 * 3 * C + 2 * C + h * hs;
                axpy(o, row[t2], v, hs);
            }
        }
    }
}

/* For row t with p = att[t, :] and da[t2] = dout_t . v_t2:
 *   dv_t2 += p[t2] * dout_t
 *   ds[t2] = p[t2] * (da[t2] - sum_j p[j] da[j])      (softmax backward)
 *   dq_t  += ds[t2] * scale * k_t2;  dk_t2 += ds[t2] * scale * q_t
 * da is recomputed in a second pass instead of stored: the kernel needs
 * no scratch memory and costs one extra dot product per (t, t2). */
void zb_attention_backward(float *dqkv, const float *dout, const float *qkv,
                           const float *att, int B, int T, int C, int NH) {
    int hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
    size_t work = (size_t)B * T * T * C / 2; /* multiply-adds per pass */
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH(work))
    for (int bh = 0; bh < B * NH; bh++) {
        int b = bh / NH, h = bh % NH;
        const float *qkv_b = qkv + (size_t)b * T * 3 * C; /* [T, 3C] */
        float *dqkv_b = dqkv + (size_t)b * T * 3 * C;     /* [T, 3C] */
        for (int t = 0; t < T; t++) {
            const float *p = att + ((size_t)bh * T + t) * T;           /* [T] */
            const float *dy = dout + ((size_t)b * T + t) * C + h * hs; /* [hs] */
            const float *q = qkv_b + (size_t)t * 3 * C + h * hs;       /* [hs] */
            float *dq = dqkv_b + (size_t)t * 3 * C + h * hs;           /* [hs] */
            float pda = 0.0f; /* sum_j p[j] * da[j] */
            for (int t2 = 0; t2 <= t; t2++) {
                const float *v = qkv_b + (size_t)t2 * 3 * C + 2 * C + h * hs;
                pda += p[t2] * dot(dy, v, hs);
            }
            for (int t2 = 0; t2 <= t; t2++) {
                size_t off = (size_t)t2 * 3 * C + h * hs;
                const float *k = qkv_b + off + C, *v = qkv_b + off + 2 * C;
                float *dk = dqkv_b + off + C, *dv = dqkv_b + off + 2 * C;
                float ds = p[t2] * (dot(dy, v, hs) - pda) * scale;
                axpy(dv, p[t2], dy, hs);
                axpy(dq, ds, k, hs);
                axpy(dk, ds, q, hs);
            }
        }
    }
}
