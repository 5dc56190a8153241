/* bench_kernels.c - speed of the CPU kernels (numbers, not pass/fail).
 *
 * Matmul F (forward), B (input gradient) and W (weight gradient + bias)
 * in GFLOP/s, 2*N*C*OC flops each, for the tiny model's shapes (N = 2*64
 * tokens, C = 64) and one GPT-2 small MLP shape; attention forward and
 * backward time for the tiny model's layer, and the forward of one whole
 * tiny transformer layer, where OpenMP teams run everything (OpenBLAS is
 * single-threaded: kernels/parallel.h). Each number is the median of
 * ZB_BENCH_REPEATS timings, each timing long enough to read the clock.
 */
#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/attention.h"
#include "kernels/gelu.h"
#include "kernels/layernorm.h"
#include "kernels/matmul.h"

#define ZB_BENCH_REPEATS 11
#define ZB_BENCH_MIN_S 2e-3 /* shortest timing worth reading */

typedef void (*bench_fn)(void *ctx);

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median seconds per call of fn(ctx). */
static double time_median_s(bench_fn fn, void *ctx) {
    fn(ctx); /* warm caches, start thread pools */
    int iters = 1;
    double t0 = now_s();
    fn(ctx);
    double once = now_s() - t0;
    if (once < ZB_BENCH_MIN_S) iters = (int)(ZB_BENCH_MIN_S / (once + 1e-9)) + 1;
    double t[ZB_BENCH_REPEATS];
    for (int r = 0; r < ZB_BENCH_REPEATS; r++) {
        t0 = now_s();
        for (int i = 0; i < iters; i++) fn(ctx);
        t[r] = (now_s() - t0) / iters;
    }
    qsort(t, ZB_BENCH_REPEATS, sizeof t[0], cmp_double);
    return t[ZB_BENCH_REPEATS / 2];
}

static float *alloc_rand(size_t n) {
    float *p = malloc(n * sizeof *p);
    if (!p) {
        fprintf(stderr, "bench_kernels: out of memory (%zu floats)\n", n);
        exit(1);
    }
    for (size_t i = 0; i < n; i++) p[i] = (float)rand() / RAND_MAX - 0.5f;
    return p;
}

/* ---- matmul ---- */

typedef struct {
    int N, C, OC;
    float *inp, *w, *b, *out; /* [N,C] [OC,C] [OC] [N,OC] */
    float *dinp, *dw, *db;    /* [N,C] [OC,C] [OC] */
} mm_ctx;

static void mm_f(void *p) {
    mm_ctx *c = p;
    zb_matmul_forward(c->out, c->inp, c->w, c->b, c->N, c->C, c->OC);
}
static void mm_b(void *p) {
    mm_ctx *c = p;
    zb_matmul_backward_input(c->dinp, c->out, c->w, c->N, c->C, c->OC);
}
static void mm_w(void *p) {
    mm_ctx *c = p;
    zb_matmul_backward_weight(c->dw, c->db, c->out, c->inp, c->N, c->C, c->OC);
}

static void bench_matmul(const char *name, int N, int C, int OC) {
    mm_ctx c = {N, C, OC, alloc_rand((size_t)N * C), alloc_rand((size_t)OC * C),
                alloc_rand(OC), alloc_rand((size_t)N * OC),
                alloc_rand((size_t)N * C), alloc_rand((size_t)OC * C),
                alloc_rand(OC)};
    double flops = 2.0 * N * C * OC;
    double tf = time_median_s(mm_f, &c), tb = time_median_s(mm_b, &c);
    double tw = time_median_s(mm_w, &c);
    printf("matmul %-16s N=%5d C=%4d OC=%4d  F %7.2f  B %7.2f  W %7.2f GFLOP/s"
           "  (F %.1f us)\n",
           name, N, C, OC, flops / tf * 1e-9, flops / tb * 1e-9,
           flops / tw * 1e-9, tf * 1e6);
    free(c.inp), free(c.w), free(c.b), free(c.out);
    free(c.dinp), free(c.dw), free(c.db);
}

/* ---- attention ---- */

typedef struct {
    int B, T, C, NH;
    float *qkv, *att, *out, *dqkv; /* [B,T,3C] [B,NH,T,T] [B,T,C] [B,T,3C] */
    float *datt;                   /* [B,NH,T,T] backward scratch */
} att_ctx;

static void att_f(void *p) {
    att_ctx *c = p;
    zb_attention_forward(c->out, c->att, c->qkv, c->B, c->T, c->C, c->NH);
}
static void att_b(void *p) {
    att_ctx *c = p;
    zb_attention_backward(c->dqkv, c->datt, c->out, c->qkv, c->att, c->B, c->T,
                          c->C, c->NH);
}

static void bench_attention(int B, int T, int C, int NH) {
    size_t nq = (size_t)B * T * 3 * C;
    att_ctx c = {B, T, C, NH, alloc_rand(nq), alloc_rand((size_t)B * NH * T * T),
                 alloc_rand((size_t)B * T * C), alloc_rand(nq),
                 alloc_rand((size_t)B * NH * T * T)};
    for (size_t i = 0; i < nq; i++) c.dqkv[i] = 0.0f;
    double tf = time_median_s(att_f, &c), tb = time_median_s(att_b, &c);
    printf("attention B=%d T=%d C=%d NH=%d  forward %.1f us  backward %.1f us\n",
           B, T, C, NH, tf * 1e6, tb * 1e6);
    free(c.qkv), free(c.att), free(c.out), free(c.dqkv), free(c.datt);
}

/* ---- one transformer layer forward: kernels taking turns ---- */

typedef struct {
    int B, T, C, NH;
    float *x, *ln, *mean, *rstd, *g, *b;   /* [N,C] [N,C] [N] [N] [C] [C] */
    float *wqkv, *bqkv, *qkv, *att, *y;    /* [3C,C] [3C] [N,3C] [B,NH,T,T] [N,C] */
    float *wproj, *bproj, *proj;           /* [C,C] [C] [N,C] */
    float *wfc, *bfc, *fc, *gl;            /* [4C,C] [4C] [N,4C] [N,4C] */
    float *wfp, *bfp, *out;                /* [C,4C] [C] [N,C] */
} layer_ctx;

static void layer_f(void *p) {
    layer_ctx *c = p;
    int N = c->B * c->T, C = c->C;
    zb_layernorm_forward(c->ln, c->mean, c->rstd, c->x, c->g, c->b, N, C);
    zb_matmul_forward(c->qkv, c->ln, c->wqkv, c->bqkv, N, C, 3 * C);
    zb_attention_forward(c->y, c->att, c->qkv, c->B, c->T, C, c->NH);
    zb_matmul_forward(c->proj, c->y, c->wproj, c->bproj, N, C, C);
    zb_layernorm_forward(c->ln, c->mean, c->rstd, c->proj, c->g, c->b, N, C);
    zb_matmul_forward(c->fc, c->ln, c->wfc, c->bfc, N, C, 4 * C);
    zb_gelu_forward(c->gl, c->fc, (size_t)N * 4 * C);
    zb_matmul_forward(c->out, c->gl, c->wfp, c->bfp, N, 4 * C, C);
}

static void bench_layer(int B, int T, int C, int NH) {
    size_t N = (size_t)B * T;
    layer_ctx c = {.B = B, .T = T, .C = C, .NH = NH};
    float **bufs[] = {&c.x, &c.ln, &c.mean, &c.rstd, &c.g, &c.b, &c.wqkv,
                      &c.bqkv, &c.qkv, &c.att, &c.y, &c.wproj, &c.bproj,
                      &c.proj, &c.wfc, &c.bfc, &c.fc, &c.gl, &c.wfp, &c.bfp,
                      &c.out};
    size_t sizes[] = {N * C, N * C, N, N, C, C, 3 * C * C, 3 * C, N * 3 * C,
                      (size_t)B * NH * T * T, N * C, C * C, C, N * C,
                      4 * C * C, 4 * C, N * 4 * C, N * 4 * C, 4 * C * C, C,
                      N * C};
    size_t nb = sizeof sizes / sizeof sizes[0];
    for (size_t i = 0; i < nb; i++) *bufs[i] = alloc_rand(sizes[i]);
    double t = time_median_s(layer_f, &c);
    printf("layer forward B=%d T=%d C=%d NH=%d  %.1f us\n", B, T, C, NH, t * 1e6);
    for (size_t i = 0; i < nb; i++) free(*bufs[i]);
}

int main(void) {
    srand(1);
    printf("threads: OpenMP %d, OpenBLAS %d\n", omp_get_max_threads(),
           openblas_get_num_threads());
    bench_matmul("tiny qkv", 128, 64, 192);
    bench_matmul("tiny mlp fc", 128, 64, 256);
    bench_matmul("tiny mlp proj", 128, 256, 64);
    bench_matmul("gpt2-small fc", 1024, 768, 3072);
    bench_attention(2, 64, 64, 4);
    bench_layer(2, 64, 64, 4);
    return 0;
}
