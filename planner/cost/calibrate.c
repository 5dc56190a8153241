/* calibrate.c - see cost/calibrate.h. */
#include "planner/cost/calibrate.h"

#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kernels/attention.h"
#include "kernels/gelu.h"
#include "kernels/layernorm.h"
#include "planner/cost/calibrate_regions.h"
#include "planner/cost/cost.h"

#define STREAM_EFF 0.80  /* the cost model's BW_EFF (cost/cost.c) */
#define GEMM_EFF_DEFAULT 0.80  /* the cost model's GEMM_EFF_MAX (cost/cost.c) */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void zb_calib_opts_default(zb_calib_opts *o) {
    *o = (zb_calib_opts){.threads = 1, .reps = 20, .square_n = 1024,
                         .stream_floats = (size_t)8 << 20};
}

/* Fastest of reps runs of C[M x N] = A[M x K] B[K x N]^T (one warm-up). */
static double time_gemm(int M, int N, int K, int reps, float *a, float *b,
                        float *c) {
    double best = INFINITY;
    for (int r = -1; r < reps; r++) {
        double t = now_s();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, a,
                    K, b, K, 0.0f, c, N);
        t = now_s() - t;
        if (r >= 0 && t < best) best = t;
    }
    return best;
}

/* Largest M*K, N*K and M*N over the shapes (buffer sizes). */
static void max_sizes(const zb_calib_shape *s, int n, int sq, size_t sz[3]) {
    sz[0] = sz[1] = sz[2] = (size_t)sq * sq;
    for (int i = 0; i < n; i++) {
        size_t mk = (size_t)(s[i].M * s[i].K), nk = (size_t)(s[i].N * s[i].K),
               mn = (size_t)(s[i].M * s[i].N);
        if (mk > sz[0]) sz[0] = mk;
        if (nk > sz[1]) sz[1] = nk;
        if (mn > sz[2]) sz[2] = mn;
    }
}

/* The model's GEMMs at tp 1 (cost.c block_gemms, F/B/W orientations) and
 * the LM head forward. */
static int model_shapes(const zb_model *m, zb_calib_shape *s) {
    double b = m->train.micro_batch > 0 ? m->train.micro_batch : 1;
    double bs = b * m->arch.seq_len, h = m->arch.hidden, f = m->arch.ffn_hidden;
    double g[4][3] = {{bs, 3 * h, h}, {bs, h, h}, {bs, f, h}, {bs, h, f}};
    int n = 0;
    for (int i = 0; i < 4; i++) {
        double M = g[i][0], N = g[i][1], K = g[i][2];
        s[n++] = (zb_calib_shape){.M = M, .N = N, .K = K};   /* F */
        s[n++] = (zb_calib_shape){.M = M, .N = K, .K = N};   /* B */
        s[n++] = (zb_calib_shape){.M = K, .N = N, .K = M};   /* W */
    }
    s[n++] = (zb_calib_shape){.M = bs, .N = m->arch.vocab, .K = h};
    return n;
}

/* Streaming triad, bytes/s of the fastest run. */
static zb_status time_triad(size_t n, int reps, double *Bps, zb_err *err) {
    float *a = zb_calloc(n, sizeof *a, err), *b = zb_calloc(n, sizeof *b, err),
          *c = zb_calloc(n, sizeof *c, err);
    zb_status st = a && b && c ? ZB_OK : ZB_ENOMEM;
    double best = INFINITY;
    for (size_t i = 0; st == ZB_OK && i < n; i++) b[i] = 1.0f, c[i] = 2.0f;
    for (int r = -1; st == ZB_OK && r < reps; r++) {
        double t = now_s();
        for (size_t i = 0; i < n; i++) a[i] = b[i] + 0.5f * c[i];
        t = now_s() - t;
        if (r >= 0 && t < best) best = t;
    }
    if (st == ZB_OK && !(a[n / 2] == 2.0f)) /* keeps the loop, checks it */
        st = zb_fail(err, ZB_ERUNTIME, "calibrate: triad gave %g", a[n / 2]);
    if (st == ZB_OK) *Bps = 3.0 * sizeof(float) * (double)n / best;
    free(a);
    free(b);
    free(c);
    return st;
}

/* The cost model's time of shape s with (tile, g). */
static double model_s(const zb_calib_result *r, const zb_calib_shape *s,
                      double tile, double g) {
    double e = zb_gemm_efficiency_tile(s->M, s->N, s->K, r->peak_flops, tile) *
               g / GEMM_EFF_DEFAULT;
    return 2 * s->M * s->N * s->K / (r->peak_flops * (e < 1 ? e : 1));
}

/* For one tile: g = geometric mean of what each shape needs (<= 1); the
 * rms log error it leaves. */
static double fit_tile(const zb_calib_result *r, double tile, double *g_out) {
    double lg = 0;
    for (int i = 0; i < r->n_shapes; i++) {
        const zb_calib_shape *s = &r->shapes[i];
        double e = zb_gemm_efficiency_tile(s->M, s->N, s->K, r->peak_flops, tile);
        double need = 2 * s->M * s->N * s->K / (r->peak_flops * s->measured_s);
        lg += log(GEMM_EFF_DEFAULT * need / e);
    }
    double g = exp(lg / r->n_shapes), sq = 0;
    if (g > 1) g = 1;
    for (int i = 0; i < r->n_shapes; i++) {
        double d = log(model_s(r, &r->shapes[i], tile, g) / r->shapes[i].measured_s);
        sq += d * d;
    }
    *g_out = g;
    return sqrt(sq / r->n_shapes);
}

/* Best (tile, gemm_eff) over tiles 4 .. 128; fills predicted_s. */
static void fit_gemm(zb_calib_result *r) {
    double best = INFINITY;
    for (double tile = 4; tile <= 128; tile *= 2) {
        double g, e = fit_tile(r, tile, &g);
        if (e < best) {
            best = e;
            r->gemm_tile = tile;
            r->gemm_eff = g;
        }
    }
    r->fit_rms_log = best;
    for (int i = 0; i < r->n_shapes; i++)
        r->shapes[i].predicted_s = model_s(r, &r->shapes[i], r->gemm_tile, r->gemm_eff);
}

/* zb's LayerNorm and GELU, forward and backward, on the model's shapes,
 * against the bytes the cost model charges them (2e per element forward,
 * e = 4 on the CPU, and twice that backward); and its attention core,
 * forward and backward, against the FLOPs it charges (4 b s^2 h forward,
 * twice that backward). One rate each over forward and backward together:
 * the backward kernels run at other rates than the forward (on the CPU
 * attention's backward has no exponentials), and timing the forward alone
 * mispriced every B (docs/cost-model.md). */
typedef struct { double ln, gelu, attn; } kernel_times;

static void time_fwd_bwd(const zb_model *m, int B, float *x, float *y,
                         float *st, float *att, float *dq, float *datt,
                         kernel_times *f, kernel_times *b) {
    int T = m->arch.seq_len, C = m->arch.hidden, F = m->arch.ffn_hidden,
        NH = m->arch.heads;
    size_t N = (size_t)B * T;
    float *w = st + 2 * N, *bias = w + C;
    double t[7];
    t[0] = now_s();
    zb_layernorm_forward(y, st, st + N, x, w, bias, (int)N, C);
    t[1] = now_s();
    zb_gelu_forward(y, x, N * (size_t)F);
    t[2] = now_s();
    zb_attention_forward(y, att, x, B, T, C, NH);
    t[3] = now_s();
    zb_layernorm_backward_input(dq, x, x, w, st, st + N, (int)N, C);
    t[4] = now_s();
    zb_gelu_backward(dq, x, x, N * (size_t)F);
    t[5] = now_s();
    memset(dq, 0, N * 3 * (size_t)C * sizeof *dq); /* backward adds into it */
    zb_attention_backward(dq, datt, y, x, att, B, T, C, NH);
    t[6] = now_s();
    *f = (kernel_times){t[1] - t[0], t[2] - t[1], t[3] - t[2]};
    *b = (kernel_times){t[4] - t[3], t[5] - t[4], t[6] - t[5]};
}

static void keep_min(kernel_times *best, const kernel_times *t) {
    if (t->ln < best->ln) best->ln = t->ln;
    if (t->gelu < best->gelu) best->gelu = t->gelu;
    if (t->attn < best->attn) best->attn = t->attn;
}

static zb_status time_kernels(const zb_calib_opts *o, const zb_model *m,
                              zb_calib_result *r, zb_err *err) {
    int B = m->train.micro_batch > 0 ? m->train.micro_batch : 1;
    int T = m->arch.seq_len, C = m->arch.hidden, F = m->arch.ffn_hidden,
        NH = m->arch.heads;
    size_t N = (size_t)B * T;
    size_t big = N * (size_t)(F > 3 * C ? F : 3 * C);
    size_t natt = (size_t)B * NH * T * T;
    float *x = zb_calloc(big, sizeof *x, err), *y = zb_calloc(big, sizeof *y, err),
          *dq = zb_calloc(big, sizeof *dq, err),
          *st = zb_calloc(2 * N + 2 * (size_t)C, sizeof *st, err),
          *att = zb_calloc(natt, sizeof *att, err),
          *datt = zb_calloc(natt, sizeof *datt, err);
    zb_status s = x && y && dq && st && att && datt ? ZB_OK : ZB_ENOMEM;
    for (size_t i = 0; s == ZB_OK && i < big; i++) x[i] = (float)(i % 13) * 0.05f - 0.3f;
    for (size_t i = 0; s == ZB_OK && i < (size_t)C; i++) st[2 * N + i] = 1.0f;
    kernel_times bf = {INFINITY, INFINITY, INFINITY}, bb = bf, tf, tb;
    for (int k = -1; s == ZB_OK && k < o->reps; k++) {
        time_fwd_bwd(m, B, x, y, st, att, dq, datt, &tf, &tb);
        if (k < 0) continue;
        keep_min(&bf, &tf);
        keep_min(&bb, &tb);
    }
    if (s == ZB_OK) {
        double bytes = 2.0 * 4 * N * C + 2.0 * 4 * N * F;
        r->elem_Bps = 3 * bytes / (bf.ln + bf.gelu + bb.ln + bb.gelu);
        double flops = 4.0 * B * (double)T * T * C;
        r->attn_eff = 3 * flops / (bf.attn + bb.attn) / r->peak_flops;
        if (r->attn_eff > 1) r->attn_eff = 1;
        r->attn_bwd_over_fwd = bb.attn / bf.attn;
        r->elem_bwd_over_fwd = (bb.ln + bb.gelu) / (bf.ln + bf.gelu);
    }
    free(x);
    free(y);
    free(dq);
    free(st);
    free(att);
    free(datt);
    return s;
}

zb_status zb_calibrate(const zb_calib_opts *o, const zb_model *m,
                       zb_calib_result *out, zb_err *err) {
    memset(out, 0, sizeof *out);
    if (o->threads < 1 || o->reps < 1 || o->square_n < 16 || o->stream_floats < 1024)
        return zb_fail(err, ZB_EINPUT, "calibrate: threads, reps >= 1, n >= 16");
    openblas_set_num_threads(o->threads);
    omp_set_num_threads(o->threads);   /* zb's kernels, as a rank runs them */
    snprintf(out->blas_core, sizeof out->blas_core, "%s", openblas_get_corename());
    if (m) out->n_shapes = model_shapes(m, out->shapes);
    size_t sz[3];
    max_sizes(out->shapes, out->n_shapes, o->square_n, sz);
    float *a = zb_calloc(sz[0], sizeof *a, err), *b = zb_calloc(sz[1], sizeof *b, err),
          *c = zb_calloc(sz[2], sizeof *c, err);
    zb_status st = a && b && c ? ZB_OK : ZB_ENOMEM;
    for (size_t i = 0; st == ZB_OK && i < sz[0]; i++) a[i] = (float)(i % 7) * 0.1f;
    for (size_t i = 0; st == ZB_OK && i < sz[1]; i++) b[i] = (float)(i % 5) * 0.1f;
    if (st == ZB_OK) {
        int n = o->square_n;
        double t = time_gemm(n, n, n, o->reps, a, b, c);
        out->peak_flops = 2.0 * n * n * n / t;
        for (int i = 0; i < out->n_shapes; i++) {
            zb_calib_shape *s = &out->shapes[i];
            s->measured_s = time_gemm((int)s->M, (int)s->N, (int)s->K, o->reps, a, b, c);
            double rate = 2 * s->M * s->N * s->K / s->measured_s;
            if (rate > out->peak_flops) out->peak_flops = rate;
        }
        if (out->n_shapes) fit_gemm(out);
        /* the model's own kernels give the bandwidth; the triad only
         * stands in for them without a model */
        st = m ? time_kernels(o, m, out, err)
               : time_triad(o->stream_floats, o->reps, &out->triad_Bps, err);
    }
    free(a);
    free(b);
    free(c);
    if (st != ZB_OK) return st;
    int cores = zb_cost_cpu_cores();
    out->region_threads = o->threads > 2 ? o->threads : 2;
    if (out->region_threads > cores) out->region_threads = cores;
    ZB_TRY(zb_calib_omp_region_s(out->region_threads, o->reps, &out->omp_region_s, err));
    out->mem_bw_Bps = (out->elem_Bps > 0 ? out->elem_Bps : out->triad_Bps) / STREAM_EFF;
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    out->mem_bytes = pages > 0 && psz > 0 ? (double)pages * (double)psz : 16.0 * (1 << 30);
    return ZB_OK;
}

zb_device zb_calib_device(const zb_calib_result *r, const char *name) {
    zb_device d;
    memset(&d, 0, sizeof d);
    snprintf(d.name, sizeof d.name, "%s", name);
    d.peak_bf16_flops = d.peak_fp32_flops = r->peak_flops;
    d.mem_bytes = r->mem_bytes;
    d.mem_bw_Bps = r->mem_bw_Bps;
    d.gemm_eff = r->gemm_eff;
    d.gemm_tile = r->gemm_tile;
    d.attn_eff = r->attn_eff;
    d.omp_region_s = r->omp_region_s;
    return d;
}
