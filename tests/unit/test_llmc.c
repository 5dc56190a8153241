/* test_llmc.c - llm.c checkpoints in and out, validation loss, sequential
 * data order.
 *
 * A small GPT-2 (4 layers, C 16, 2 heads, V 50 padded to Vp 64, maxT 12,
 * seq_len 8) is written as an llm.c checkpoint with random values in every
 * tensor (padding rows and wpe rows past seq_len too), with a token shard.
 *  - Round trip: every layout (pp 1, 2, 4, a V schedule, tp 2, dp 2, and
 *    dp 2 x tp 2 x pp 2) loads each rank's slices and exports them back; the
 *    file must equal the original byte for byte, in fp32 (v3) and bf16 (v5).
 *  - First step: zb_run from the checkpoint at every layout; the first
 *    step's training loss and the initial validation loss must equal a
 *    direct computation here (a plain double-precision GPT-2 forward over
 *    the checkpoint's tensors in llm.c's layout, on the sequential batches)
 *    within 1e-5 relative; with recompute selective and full the second
 *    step's loss and the final validation loss equal recompute none's bit
 *    for bit.
 *  - A checkpoint whose shapes differ from the model file's: one line
 *    naming both values (ZB_EINPUT); shapes left out come from it.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/zb_llmc.h"
#include "common/zb_model.h"
#include "common/zb_plan.h"
#include "executor/state/llmc.h"
#include "executor/run/runtime.h"
#include "executor/stage/stage_params.h"
#include "planner/cost/partition.h"
#include "planner/registry/registry.h"

#define NL 4
#define NC 16
#define NHD 2
#define NV 50
#define NVP 64
#define MAXT 12
#define NT 8
#define GB 8
#define NTOK 2000

static char dir[64], ck32[96], ck16[96], shard[96], valshard[96];
static float *ckv;          /* the checkpoint's parameters, llm.c layout */
static zb_llmc_hdr H;

static uint64_t lcg_state;
static double urand(void) { /* uniform [0, 1) */
    lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(lcg_state >> 11) / 9007199254740992.0;
}

static void write_ckpt(const char *path, int version) {
    zb_llmc_hdr h = H;
    h.version = version;
    unsigned char hb[ZB_LLMC_HEADER_BYTES];
    zb_llmc_header_bytes(&h, hb);
    FILE *f = fopen(path, "wb");
    ck_assert(f);
    ck_assert_uint_eq(fwrite(hb, 1, sizeof hb, f), sizeof hb);
    size_t n = zb_llmc_total(&h);
    for (size_t i = 0; i < n; i++) {
        if (version == ZB_LLMC_V_FP32) {
            ck_assert_uint_eq(fwrite(&ckv[i], 4, 1, f), 1);
        } else {
            uint16_t b = zb_f32_to_bf16(ckv[i]);
            ck_assert_uint_eq(fwrite(&b, 2, 1, f), 1);
        }
    }
    ck_assert_int_eq(fclose(f), 0);
}

static void write_shard(const char *path, uint64_t seed) {
    int32_t hdr[256] = {20240520, 1, NTOK};
    uint16_t tok[NTOK];
    lcg_state = seed;
    for (int i = 0; i < NTOK; i++) /* a learnable-ish sequence */
        tok[i] = (uint16_t)((i % 7 == 0) ? (int)(urand() * NV) : (tok[i - 1] * 3 + 1) % NV);
    FILE *f = fopen(path, "wb");
    ck_assert(f);
    ck_assert_uint_eq(fwrite(hdr, 4, 256, f), 256);
    ck_assert_uint_eq(fwrite(tok, 2, NTOK, f), NTOK);
    ck_assert_int_eq(fclose(f), 0);
}

static void setup(void) {
    snprintf(dir, sizeof dir, "/tmp/zb_llmc_test.%ld", (long)getpid());
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    snprintf(ck32, sizeof ck32, "%s/ck32.bin", dir);
    snprintf(ck16, sizeof ck16, "%s/ck16.bin", dir);
    snprintf(shard, sizeof shard, "%s/train.bin", dir);
    snprintf(valshard, sizeof valshard, "%s/val.bin", dir);
    H = (zb_llmc_hdr){.version = 3, .maxT = MAXT, .V = NV, .L = NL, .NH = NHD, .C = NC, .Vp = NVP};
    size_t n = zb_llmc_total(&H);
    ckv = malloc(n * sizeof *ckv);
    ck_assert(ckv);
    lcg_state = 42;
    for (int k = 0; k < ZB_LLMC_N; k++) {
        bool ln_w = k == ZB_LLMC_LN1W || k == ZB_LLMC_LN2W || k == ZB_LLMC_LNFW;
        size_t off = zb_llmc_offset(&H, k), m = zb_llmc_numel(&H, k);
        for (size_t i = 0; i < m; i++)
            ckv[off + i] = (float)((ln_w ? 1.0 : 0.0) + 0.3 * (urand() - 0.5));
    }
    write_ckpt(ck32, ZB_LLMC_V_FP32);
    write_ckpt(ck16, ZB_LLMC_V_BF16);
    write_shard(shard, 7);
    write_shard(valshard, 8);
}

static void teardown(void) {
    unlink(ck32);
    unlink(ck16);
    unlink(shard);
    unlink(valshard);
    rmdir(dir);
    free(ckv);
    ckv = NULL;
}

/* The model: tiny.yaml with this file's shapes, llm.c's optimizer. */
static void model(zb_model *m, const char *init) {
    zb_err err;
    ck_assert_msg(zb_model_load("models/tiny.yaml", m, &err) == ZB_OK, "%s", err.msg);
    m->arch = (zb_arch){.layers = NL, .hidden = NC, .heads = NHD, .ffn_hidden = 4 * NC,
                        .seq_len = NT, .vocab = NV, .tied_embeddings = true,
                        .init_maxT = MAXT, .init_Vp = NVP};
    snprintf(m->arch.init, sizeof m->arch.init, "%s", init);
    m->train.global_batch = GB;
    m->train.data_kind = ZB_DATA_SHARDS;
    snprintf(m->train.data_path, sizeof m->train.data_path, "%s", shard);
    m->train.data_sequential = true;
    m->train.val_kind = ZB_DATA_SHARDS;
    snprintf(m->train.val_path, sizeof m->train.val_path, "%s", valshard);
    m->train.val_every = 0;
    m->train.val_batches = 2;
    m->train.precision = ZB_PREC_FP32;
    m->train.opt = (zb_optim){.lr = 1e-4, .min_lr = 1e-4, .beta1 = 0.9, .beta2 = 0.999,
                              .eps = 1e-8, .weight_decay = 0, .grad_clip = 0,
                              .warmup_steps = 0, .cosine = false};
}

static zb_status build_plan(zb_plan *p, const char *init, const char *sched, int dp,
                            int tp, int pp, int v, int mb, zb_err *err) {
    memset(p, 0, sizeof *p);
    model(&p->model, init);
    p->model.train.micro_batch = mb;
    v = zb_schedule_chunks(sched, v);
    ZB_TRY(zb_plan_alloc(p, pp, v, err));
    p->dp = dp;
    p->tp = tp;
    p->micro_batch = mb;
    p->m = GB / (dp * mb);
    snprintf(p->solver, sizeof p->solver, "generator");
    zb_partition_even(NL, pp * v, p->stages);
    for (int s = 0; s < pp * v; s++) {
        p->costs.t_f[s] = p->costs.t_b[s] = p->costs.t_w[s] = p->costs.m_b[s] = 1;
        p->costs.m_w[s] = 0.5;
    }
    zb_sched_params prm = {.p = pp, .m = p->m, .v = v, .costs = &p->costs,
                           .mem_limit = 2.0 * pp, .solver = ZB_SOLVER_HEURISTIC,
                           .time_limit_s = 5, .mip_gap = 1e-4};
    zb_status s = zb_schedule_make(sched, &prm, &p->sched, NULL, err);
    if (s != ZB_OK) zb_plan_free(p);
    return s;
}

typedef struct { const char *sched; int dp, tp, pp, v, mb; } layout;
static const layout k_layouts[] = {
    {"1f1b", 1, 1, 1, 1, 2}, {"1f1b", 1, 1, 2, 1, 1}, {"zb-h1", 1, 1, 4, 1, 1},
    {"zb-v", 1, 1, 2, 2, 1}, {"1f1b", 1, 2, 1, 1, 2}, {"1f1b", 2, 1, 1, 1, 2},
    {"1f1b", 2, 2, 2, 1, 1}};
#define N_LAYOUTS ((int)(sizeof k_layouts / sizeof k_layouts[0]))

static unsigned char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*n ? *n : 1);
    ck_assert(b);
    ck_assert_uint_eq(fread(b, 1, *n, f), *n);
    fclose(f);
    return b;
}

static void round_trip(const char *src, zb_precision prec) {
    char out[128];
    snprintf(out, sizeof out, "%s/out.bin", dir);
    size_t n_src;
    unsigned char *want = slurp(src, &n_src);
    for (int li = 0; li < N_LAYOUTS; li++) {
        const layout *l = &k_layouts[li];
        zb_plan p;
        zb_err err;
        ck_assert_msg(build_plan(&p, src, l->sched, l->dp, l->tp, l->pp, l->v, l->mb,
                                 &err) == ZB_OK, "%s", err.msg);
        p.model.train.precision = prec;
        int world = zb_plan_world(&p);
        float **params = calloc((size_t)world, sizeof *params);
        ck_assert(params);
        for (int r = 0; r < world; r++) {
            int pr, dr, tr;
            zb_plan_coords(&p, r, &pr, &dr, &tr);
            zb_ptable pt;
            ck_assert_msg(zb_ptable_build(&pt, &p, pr, tr, &err) == ZB_OK, "%s", err.msg);
            params[r] = malloc(pt.floats * sizeof(float));
            ck_assert(params[r]);
            ck_assert_msg(zb_llmc_load(src, &p, &pt, params[r], &err) == ZB_OK, "%s",
                          err.msg);
            zb_ptable_free(&pt);
        }
        ck_assert_msg(zb_llmc_export(out, &p, params, &err) == ZB_OK, "%s", err.msg);
        size_t n_got;
        unsigned char *got = slurp(out, &n_got);
        ck_assert_msg(n_got == n_src, "%s dp%d tp%d pp%d: %zu bytes, want %zu", l->sched,
                      l->dp, l->tp, l->pp, n_got, n_src);
        size_t at = 0;
        while (at < n_src && got[at] == want[at]) at++;
        ck_assert_msg(at == n_src, "%s dp%d tp%d pp%d v%d: export differs at byte %zu",
                      l->sched, l->dp, l->tp, l->pp, l->v, at);
        free(got);
        unlink(out);
        for (int r = 0; r < world; r++) free(params[r]);
        free(params);
        zb_plan_free(&p);
    }
    free(want);
}

START_TEST(test_round_trip_fp32) { round_trip(ck32, ZB_PREC_FP32); }
END_TEST

START_TEST(test_round_trip_bf16) { round_trip(ck16, ZB_PREC_BF16); }
END_TEST

/* ---- a direct GPT-2 forward in double, over llm.c's layout ---- */

static const float *W(int k, int layer) {
    return ckv + zb_llmc_offset(&H, k) + (size_t)layer * zb_llmc_layer_numel(&H, k);
}

static void layernorm(double *out, const double *x, const float *w, const float *b) {
    double mean = 0, var = 0;
    for (int i = 0; i < NC; i++) mean += x[i];
    mean /= NC;
    for (int i = 0; i < NC; i++) var += (x[i] - mean) * (x[i] - mean);
    var /= NC;
    double rs = 1.0 / sqrt(var + 1e-5);
    for (int i = 0; i < NC; i++) out[i] = (x[i] - mean) * rs * w[i] + b[i];
}

/* out[o] = sum_i w[o, i] x[i] + b[o] */
static void linear(double *out, const double *x, const float *w, const float *b,
                   int in, int outn) {
    for (int o = 0; o < outn; o++) {
        double s = b ? b[o] : 0;
        for (int i = 0; i < in; i++) s += (double)w[(size_t)o * in + i] * x[i];
        out[o] = s;
    }
}

/* Mean cross-entropy of one sequence tok[NT] -> tgt[NT]. */
static double seq_loss(const int *tok, const int *tgt) {
    static double x[NT][NC], h[NT][NC], qkv[NT][3 * NC], att[NT][NC], tmp[NT][4 * NC], o[NC];
    for (int t = 0; t < NT; t++)
        for (int i = 0; i < NC; i++)
            x[t][i] = (double)W(ZB_LLMC_WTE, 0)[tok[t] * NC + i] + W(ZB_LLMC_WPE, 0)[t * NC + i];
    int hs = NC / NHD;
    for (int l = 0; l < NL; l++) {
        for (int t = 0; t < NT; t++) {
            layernorm(h[t], x[t], W(ZB_LLMC_LN1W, l), W(ZB_LLMC_LN1B, l));
            linear(qkv[t], h[t], W(ZB_LLMC_QKVW, l), W(ZB_LLMC_QKVB, l), NC, 3 * NC);
        }
        for (int t = 0; t < NT; t++)
            for (int hh = 0; hh < NHD; hh++) {
                double sc[NT], mx = -1e300, sum = 0;
                for (int u = 0; u <= t; u++) {
                    double d = 0;
                    for (int i = 0; i < hs; i++)
                        d += qkv[t][hh * hs + i] * qkv[u][NC + hh * hs + i];
                    sc[u] = d / sqrt((double)hs);
                    if (sc[u] > mx) mx = sc[u];
                }
                for (int u = 0; u <= t; u++) sum += (sc[u] = exp(sc[u] - mx));
                for (int i = 0; i < hs; i++) {
                    double a = 0;
                    for (int u = 0; u <= t; u++) a += sc[u] / sum * qkv[u][2 * NC + hh * hs + i];
                    att[t][hh * hs + i] = a;
                }
            }
        for (int t = 0; t < NT; t++) {
            linear(o, att[t], W(ZB_LLMC_ATTPROJW, l), W(ZB_LLMC_ATTPROJB, l), NC, NC);
            for (int i = 0; i < NC; i++) x[t][i] += o[i];
            layernorm(h[t], x[t], W(ZB_LLMC_LN2W, l), W(ZB_LLMC_LN2B, l));
            linear(tmp[t], h[t], W(ZB_LLMC_FCW, l), W(ZB_LLMC_FCB, l), NC, 4 * NC);
            for (int i = 0; i < 4 * NC; i++) {
                double z = tmp[t][i];
                tmp[t][i] = 0.5 * z * (1 + tanh(sqrt(2 / M_PI) * (z + 0.044715 * z * z * z)));
            }
            linear(o, tmp[t], W(ZB_LLMC_FCPROJW, l), W(ZB_LLMC_FCPROJB, l), 4 * NC, NC);
            for (int i = 0; i < NC; i++) x[t][i] += o[i];
        }
    }
    double loss = 0, logits[NV];   /* padding rows never receive probability */
    for (int t = 0; t < NT; t++) {
        layernorm(h[t], x[t], W(ZB_LLMC_LNFW, 0), W(ZB_LLMC_LNFB, 0));
        linear(logits, h[t], W(ZB_LLMC_WTE, 0), NULL, NC, NV);
        double mx = -1e300, sum = 0;
        for (int v = 0; v < NV; v++) mx = fmax(mx, logits[v]);
        for (int v = 0; v < NV; v++) sum += exp(logits[v] - mx);
        loss += log(sum) + mx - logits[tgt[t]];
    }
    return loss / NT;
}

/* Mean loss of `batches` sequential global batches of a shard. */
static double direct_loss(const char *path, int batches) {
    size_t n;
    unsigned char *b = slurp(path, &n);
    const uint16_t *tok = (const uint16_t *)(b + 1024);
    double sum = 0;
    for (int k = 0; k < batches; k++)
        for (int s = 0; s < GB; s++) {
            int in[NT], tg[NT];
            size_t at = ((size_t)k * GB + (size_t)s) * NT;
            for (int t = 0; t < NT; t++) {
                in[t] = tok[at + t];
                tg[t] = tok[at + t + 1];
            }
            sum += seq_loss(in, tg);
        }
    free(b);
    return sum / (batches * GB);
}

START_TEST(test_first_step_loss) {
    double want_train = direct_loss(shard, 1), want_val = direct_loss(valshard, 2);
    for (int li = 0; li < N_LAYOUTS; li++) {
        const layout *l = &k_layouts[li];
        zb_plan p;
        zb_err err;
        ck_assert_msg(build_plan(&p, ck32, l->sched, l->dp, l->tp, l->pp, l->v, l->mb,
                                 &err) == ZB_OK, "%s", err.msg);
        zb_run_opts o = {.steps = 2, .threads = 1};
        zb_run_result res;
        ck_assert_msg(zb_run(&p, &o, &res, &err) == ZB_OK, "%s", err.msg);
        ck_assert_int_eq(res.n_val, 2);   /* before training and after the end */
        ck_assert_int_eq(res.val_step[0], 0);
        ck_assert_int_eq(res.val_step[1], 2);
        ck_assert_msg(fabs(res.loss[0] - want_train) <= 1e-5 * want_train,
                      "%s dp%d tp%d pp%d: first loss %.9g, direct %.9g", l->sched, l->dp,
                      l->tp, l->pp, res.loss[0], want_train);
        ck_assert_msg(fabs(res.val_loss[0] - want_val) <= 1e-5 * want_val,
                      "%s dp%d tp%d pp%d: val loss %.9g, direct %.9g", l->sched, l->dp,
                      l->tp, l->pp, res.val_loss[0], want_val);
        ck_assert(res.val_loss[1] < res.val_loss[0]);
        /* recompute selective and full: the same bits after a step */
        for (int rc = ZB_RECOMPUTE_SELECTIVE; rc <= ZB_RECOMPUTE_FULL; rc++) {
            p.model.train.recompute = (zb_recompute)rc;
            zb_run_result r2;
            ck_assert_msg(zb_run(&p, &o, &r2, &err) == ZB_OK, "%s", err.msg);
            ck_assert_msg(r2.loss[1] == res.loss[1] && r2.val_loss[1] == res.val_loss[1],
                          "%s dp%d tp%d pp%d recompute %d: loss %.9g val %.9g, "
                          "none %.9g %.9g", l->sched, l->dp, l->tp, l->pp, rc,
                          r2.loss[1], r2.val_loss[1], res.loss[1], res.val_loss[1]);
            zb_run_result_free(&r2);
        }
        zb_run_result_free(&res);
        zb_plan_free(&p);
    }
}
END_TEST

/* ---- the model file's init key ---- */

static zb_status load_model_text(const char *text, zb_model *m, zb_err *err) {
    char path[128];
    snprintf(path, sizeof path, "%s/m.yaml", dir);
    FILE *f = fopen(path, "w");
    ck_assert(f);
    fputs(text, f);
    fclose(f);
    zb_status s = zb_model_load(path, m, err);
    unlink(path);
    return s;
}

START_TEST(test_model_init_shapes) {
    zb_model m;
    zb_err err;
    const char *base = "model:\n  init: ck32.bin\n%s"
                       "training: {global_batch: 8}\ncluster: {device: cpu}\n";
    char text[512];
    snprintf(text, sizeof text, base, "  seq_len: 8\n");
    ck_assert_msg(load_model_text(text, &m, &err) == ZB_OK, "%s", err.msg);
    ck_assert_int_eq(m.arch.layers, NL);
    ck_assert_int_eq(m.arch.hidden, NC);
    ck_assert_int_eq(m.arch.heads, NHD);
    ck_assert_int_eq(m.arch.vocab, NV);
    ck_assert_int_eq(m.arch.ffn_hidden, 4 * NC);
    ck_assert_int_eq(m.arch.seq_len, NT);
    ck_assert_int_eq(m.arch.init_Vp, NVP);
    ck_assert_str_eq(m.arch.init, ck32);   /* resolved against the file's folder */
    snprintf(text, sizeof text, base, "");
    ck_assert_msg(load_model_text(text, &m, &err) == ZB_OK, "%s", err.msg);
    ck_assert_int_eq(m.arch.seq_len, MAXT);

    snprintf(text, sizeof text, base, "  layers: 6\n");
    ck_assert_int_eq(load_model_text(text, &m, &err), ZB_EINPUT);
    ck_assert_msg(strstr(err.msg, "m.yaml:3:11: 'layers' is 6 but the checkpoint") &&
                  strstr(err.msg, "has L = 4") && !strchr(err.msg, '\n'), "%s", err.msg);
    snprintf(text, sizeof text, base, "  seq_len: 13\n");
    ck_assert_int_eq(load_model_text(text, &m, &err), ZB_EINPUT);
    ck_assert_msg(strstr(err.msg, "'seq_len' is 13") && strstr(err.msg, "maxT = 12"), "%s",
                  err.msg);
    snprintf(text, sizeof text, base, "  vocab: 64\n");
    ck_assert_int_eq(load_model_text(text, &m, &err), ZB_EINPUT);
    ck_assert_msg(strstr(err.msg, "'vocab' is 64") && strstr(err.msg, "V = 50"), "%s", err.msg);
    snprintf(text, sizeof text,
             "model:\n  init: missing.bin\ntraining: {global_batch: 8}\ncluster: {device: cpu}\n");
    ck_assert_int_eq(load_model_text(text, &m, &err), ZB_EINPUT);
    ck_assert_msg(strstr(err.msg, "m.yaml:2:9: ") && strstr(err.msg, "missing.bin"), "%s",
                  err.msg);
}
END_TEST

START_TEST(test_bad_checkpoints) {
    zb_llmc_hdr h;
    zb_err err;
    char path[128];
    snprintf(path, sizeof path, "%s/bad.bin", dir);
    size_t n;
    unsigned char *b = slurp(ck32, &n);
    FILE *f = fopen(path, "wb");   /* truncated */
    fwrite(b, 1, n - 4, f);
    fclose(f);
    ck_assert_int_eq(zb_llmc_read_header(path, &h, &err), ZB_EINPUT);
    ck_assert_msg(strstr(err.msg, "bytes but its header needs"), "%s", err.msg);
    b[0] ^= 1;                     /* bad magic */
    f = fopen(path, "wb");
    fwrite(b, 1, n, f);
    fclose(f);
    ck_assert_int_eq(zb_llmc_read_header(path, &h, &err), ZB_EINPUT);
    ck_assert_msg(strstr(err.msg, "magic"), "%s", err.msg);
    b[0] ^= 1;
    b[28] = 40;                    /* Vp < NV */
    f = fopen(path, "wb");
    fwrite(b, 1, n, f);
    fclose(f);
    ck_assert_int_eq(zb_llmc_read_header(path, &h, &err), ZB_EINPUT);
    ck_assert_msg(strstr(err.msg, "Vp = 40 is smaller than V = 50"), "%s", err.msg);
    free(b);
    unlink(path);
    /* a plan whose model disagrees with the checkpoint: both values named */
    zb_plan p;
    ck_assert_msg(build_plan(&p, ck32, "1f1b", 1, 1, 1, 1, 2, &err) == ZB_OK, "%s", err.msg);
    p.model.arch.hidden = 32;
    p.model.arch.ffn_hidden = 128;
    zb_ptable pt;
    ck_assert_msg(zb_ptable_build(&pt, &p, 0, 0, &err) == ZB_OK, "%s", err.msg);
    float *buf = malloc(pt.floats * sizeof *buf);
    ck_assert_int_eq(zb_llmc_load(ck32, &p, &pt, buf, &err), ZB_EINPUT);
    ck_assert_msg(strstr(err.msg, "hidden is 32 but the checkpoint has C = 16"), "%s", err.msg);
    free(buf);
    zb_ptable_free(&pt);
    zb_plan_free(&p);
}
END_TEST

START_TEST(test_bf16_rounding) {
    ck_assert_uint_eq(zb_f32_to_bf16(1.0f), 0x3f80);
    ck_assert(zb_bf16_to_f32(zb_f32_to_bf16(1.00390625f)) == 1.0f);      /* tie: even */
    ck_assert(zb_bf16_to_f32(zb_f32_to_bf16(1.01171875f)) == 1.015625f); /* tie: up to even */
    ck_assert(isnan(zb_bf16_to_f32(zb_f32_to_bf16(NAN))));
    for (int i = 0; i < 1000; i++) {   /* bf16 -> f32 -> bf16 is exact */
        uint16_t b = (uint16_t)(i * 61 + 7);
        ck_assert_uint_eq(zb_f32_to_bf16(zb_bf16_to_f32(b)), b);
    }
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("llmc");
    TCase *tc = tcase_create("llmc");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_round_trip_fp32);
    tcase_add_test(tc, test_round_trip_bf16);
    tcase_add_test(tc, test_first_step_loss);
    tcase_add_test(tc, test_model_init_shapes);
    tcase_add_test(tc, test_bad_checkpoints);
    tcase_add_test(tc, test_bf16_rounding);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
