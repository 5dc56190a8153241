/* calibrate_cmd.c - see cli/calibrate_cmd.h. */
#include "planner/cli/calibrate_cmd.h"

#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "common/zb_yaml.h"
#include "planner/cost/calibrate.h"
#include "common/zb_suggest.h"
#include "planner/cli/cli.h"
#include "planner/cli/guard.h"

static const char usage[] =
    "usage: zbplan calibrate [--model MODEL.yaml] [-o FILE] [--device NAME]\n"
    "                        [--threads N] [--reps N] [--n N] [-q]\n"
    "Measures this CPU and writes the cost model's device constants to FILE:\n"
    "a large square SGEMM (OpenBLAS) and, with --model, every GEMM shape of\n"
    "the model (fitting gemm_efficiency and gemm_tile), zb's LayerNorm and\n"
    "GELU kernels (memory_bandwidth_gbps) and its attention kernel\n"
    "(attention_efficiency) on the model's shapes; without --model, a\n"
    "streaming triad gives memory_bandwidth_gbps instead. The cost of one\n"
    "OpenMP parallel region (omp_region_us) on --threads threads, at least 2,\n"
    "at most the cores, with OMP_WAIT_POLICY as zbrun runs it (passive\n"
    "unless set).\n"
    "  --model MODEL.yaml  write a copy of the model whose cluster.device is\n"
    "                      the measured one (plan it with zbplan; default:\n"
    "                      write the device mapping alone)\n"
    "  -o FILE             where it goes (default: calibration.yaml)\n"
    "  --device NAME       the device's name (default: cpu)\n"
    "  --threads N         BLAS and OpenMP threads (default: 1, what a rank\n"
    "                      gets when ranks fill the cores)\n"
    "  --reps N            timed runs of each measurement, fastest kept\n"
    "                      (default: 20, after a warm-up)\n"
    "  --n N               edge of the square GEMM (default: 1024)\n"
    "  -q, --quiet         print nothing but errors (default: off)\n"
    "  -h, --help          this text;  --version  zbplan's version\n"
    "Exit status: 0 done; 2 bad input (model file or arguments); 1 I/O.\n"
    "Docs: docs/zbplan.md (\"Calibrating a device\").\n";

/* every option, for "did you mean" */
static const char *const option_names[] = {
    "--model", "--device", "--threads", "--reps", "--n", "--quiet", "--help",
    "--version", NULL};

typedef struct {
    const char *model, *out, *device;
    zb_calib_opts o;
    bool quiet, help;
} cal_args;

static zb_status parse(int argc, char **argv, cal_args *a, zb_err *err) {
    memset(a, 0, sizeof *a);
    zb_calib_opts_default(&a->o);
    a->out = "calibration.yaml";
    a->device = "cpu";
    for (int i = 1; i < argc;) {
        zb_status st = ZB_OK;
        const char *v;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            a->help = true;
            return ZB_OK;
        }
        if (!strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet")) { a->quiet = true; i++; continue; }
        if (zb_cli_opt(argc, argv, &i, "--model", &v, &st, err)) { if (v) a->model = v; }
        else if (zb_cli_opt(argc, argv, &i, "-o", &v, &st, err)) { if (v) a->out = v; }
        else if (zb_cli_opt(argc, argv, &i, "--device", &v, &st, err)) {
            if (v && (strlen(v) == 0 || strlen(v) >= sizeof(((zb_device *)0)->name)))
                st = zb_fail(err, ZB_EINPUT, "--device must be 1 to 31 characters");
            else if (v) a->device = v;
        } else if (zb_cli_opt(argc, argv, &i, "--threads", &v, &st, err)) {
            if (v) st = zb_cli_int("--threads", v, 1, &a->o.threads, err);
        } else if (zb_cli_opt(argc, argv, &i, "--reps", &v, &st, err)) {
            if (v) st = zb_cli_int("--reps", v, 1, &a->o.reps, err);
        } else if (zb_cli_opt(argc, argv, &i, "--n", &v, &st, err)) {
            if (v) st = zb_cli_int("--n", v, 16, &a->o.square_n, err);
        } else
            return zb_fail_unknown_option(err, argv[i], option_names,
                                          "zbplan calibrate --help");
        ZB_TRY(st);
    }
    return ZB_OK;
}

static void print_result(const zb_calib_result *r, int threads) {
    printf("OpenBLAS %s, %d thread(s)\n", r->blas_core, threads);
    printf("square SGEMM: %.1f GFLOP/s (peak_fp32_tflops %.4f)\n",
           r->peak_flops / 1e9, r->peak_flops / 1e12);
    if (r->n_shapes) {
        printf("%8s %8s %8s %12s %12s %7s\n", "M", "N", "K", "measured ms",
               "model ms", "ratio");
        for (int i = 0; i < r->n_shapes; i++) {
            const zb_calib_shape *s = &r->shapes[i];
            printf("%8.0f %8.0f %8.0f %12.4f %12.4f %7.2f\n", s->M, s->N, s->K,
                   1e3 * s->measured_s, 1e3 * s->predicted_s,
                   s->predicted_s / s->measured_s);
        }
        printf("gemm_efficiency %.3f, gemm_tile %.0f (defaults 0.80, 128): "
               "rms log error %.3f\n", r->gemm_eff, r->gemm_tile, r->fit_rms_log);
    }
    if (r->elem_Bps > 0)
        printf("LayerNorm + GELU kernels, forward and backward: %.2f GB/s "
               "of the bytes the cost model counts (backward / forward time "
               "%.2f, the model's 2); attention core: %.1f%% of peak "
               "(backward / forward %.2f, the model's 2)",
               r->elem_Bps / 1e9, r->elem_bwd_over_fwd, 100 * r->attn_eff,
               r->attn_bwd_over_fwd);
    else
        printf("triad: %.2f GB/s", r->triad_Bps / 1e9);
    printf("\nmemory_bandwidth_gbps %.2f (the rate over the model's 80%% "
           "streaming efficiency)\n", r->mem_bw_Bps / 1e9);
    if (r->omp_region_s > 0)
        printf("omp_region_us %.1f: one OpenMP parallel region on %d threads "
               "(median; it grows with the machine's load)\n",
               r->omp_region_s * 1e6, r->region_threads);
}

static void write_device(zb_yw *w, const zb_device *d) {
    zb_yw_str(w, "device");
    zb_yw_map_begin(w, true);
    zb_yw_kstr(w, "name", d->name);
    zb_yw_kdouble(w, "peak_bf16_tflops", d->peak_bf16_flops / 1e12);
    zb_yw_kdouble(w, "peak_fp32_tflops", d->peak_fp32_flops / 1e12);
    zb_yw_kdouble(w, "memory_gib", d->mem_bytes / 1073741824.0);
    zb_yw_kdouble(w, "memory_bandwidth_gbps", d->mem_bw_Bps / 1e9);
    if (d->gemm_eff > 0) zb_yw_kdouble(w, "gemm_efficiency", d->gemm_eff);
    if (d->gemm_tile > 0) zb_yw_kdouble(w, "gemm_tile", d->gemm_tile);
    if (d->attn_eff > 0) zb_yw_kdouble(w, "attention_efficiency", d->attn_eff);
    if (d->omp_region_s > 0) zb_yw_kdouble(w, "omp_region_us", d->omp_region_s * 1e6);
    zb_yw_map_end(w);
}

static zb_status run(const cal_args *a, zb_err *err) {
    zb_model m;
    const zb_guard_in in[] = {{"the model", a->model}};
    ZB_TRY(zb_guard_output("-o", a->out, in, 1, err));
    if (a->model) ZB_TRY(zb_model_load(a->model, &m, err));
    zb_calib_result r;
    ZB_TRY(zb_calibrate(&a->o, a->model ? &m : NULL, &r, err));
    if (!a->quiet) print_result(&r, a->o.threads);
    zb_device d = zb_calib_device(&r, a->device);
    zb_yw *w;
    ZB_TRY(zb_yw_open(a->out, &w, err));
    zb_yw_map_begin(w, false);
    if (a->model) {
        m.cluster.device = d;
        /* the copy may live in another folder: keep its data file found */
        char abs[PATH_MAX];
        if (m.train.data_path[0] && realpath(m.train.data_path, abs) &&
            strlen(abs) < sizeof m.train.data_path)
            snprintf(m.train.data_path, sizeof m.train.data_path, "%s", abs);
        zb_model_write(w, &m);
    } else {
        write_device(w, &d);
    }
    zb_yw_map_end(w);
    ZB_TRY(zb_yw_close(w, true, err));
    if (!a->quiet) printf("wrote %s\n", a->out);
    return ZB_OK;
}

int zb_calibrate_cmd(int argc, char **argv) {
    cal_args a;
    zb_err err = {{0}};
    zb_status st = parse(argc, argv, &a, &err);
    if (st == ZB_OK && a.help) {
        fputs(usage, stdout);
        return 0;
    }
    if (st == ZB_OK) st = run(&a, &err);
    if (st != ZB_OK) {
        bool located = a.model && !strncmp(err.msg, a.model, strlen(a.model));
        fprintf(stderr, "%s%s\n", located ? "" : "zbplan: ", err.msg);
    }
    return zb_exit_code(st);
}
