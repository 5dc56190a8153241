/* calibrate_regions.c - the cost of one OpenMP parallel region (see
 * cost/calibrate_regions.h, zb_calib_omp_region_s).
 *
 * A pass of zbrun's CPU backend alternates parallel regions (GEMM blocks,
 * LayerNorm rows, ...) with short serial stretches (memsets, copies, small
 * loops). The benchmark does the same: rounds of REGIONS regions, each
 * splitting a small loop over the team, with as much serial work between
 * two regions. The same rounds on one thread give the work's time w per
 * region and as much again for the serial stretch (the fastest round: the
 * work's own time, as the cost model's other rates); with `threads`
 * threads a region ideally takes w / threads, so the cost per region is
 * round / REGIONS - w - w / threads, of the median round: on a shared
 * machine the cost is what waking a sleeping thread takes at the load of
 * the moment, and the median is what a training step meets. zbrun runs
 * its OpenMP teams with OMP_WAIT_POLICY=passive unless the user chose a
 * policy (idle workers sleep at once instead of spinning), so `zbplan
 * calibrate` does the same (zb_calib_openmp_as_zbrun): a sleeping worker
 * is what makes a region cost microseconds.
 */
#include "planner/cost/calibrate_regions.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define REGIONS 400    /* regions per round */
#define CHUNKS 64      /* loop iterations per region, shared over the team */
#define CHUNK 512      /* floats per iteration */

void zb_calib_openmp_as_zbrun(char **argv) {
    if (getenv("OMP_WAIT_POLICY") || setenv("OMP_WAIT_POLICY", "passive", 0) != 0)
        return;
    execv("/proc/self/exe", argv);   /* on failure: measure as we are */
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void work(float *x, int c) {
    float *p = x + (size_t)c * CHUNK;
    for (int i = 0; i < CHUNK; i++) p[i] = sqrtf(p[i] * 0.5f + 1.0f);
}

/* One round on `threads` threads (1: no team, the regions' loops inline). */
static double round_s(float *x, int threads) {
    double t = now_s();
    for (int r = 0; r < REGIONS; r++) {
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
        for (int c = 0; c < CHUNKS; c++) work(x, c);
        for (int c = 0; c < CHUNKS; c++) work(x + CHUNKS * CHUNK, c);
    }
    return now_s() - t;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The rounds' times, sorted (after one warm-up round that starts the team). */
static void rounds(float *x, int threads, int reps, double *t) {
    round_s(x, threads);
    for (int k = 0; k < reps; k++) t[k] = round_s(x, threads);
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
}

zb_status zb_calib_omp_region_s(int threads, int reps, double *out,
                                zb_err *err) {
    *out = 0;
    if (threads < 2) return ZB_OK;
    float *x = zb_calloc(2 * CHUNKS * CHUNK, sizeof *x, err);
    double *t = zb_calloc((size_t)reps, sizeof *t, err);
    if (!x || !t) {
        free(x);
        free(t);
        return ZB_ENOMEM;
    }
    rounds(x, 1, reps, t);
    double w = t[0] / (2.0 * REGIONS);          /* the work: fastest round */
    rounds(x, threads, reps, t);
    double par = t[reps / 2] / REGIONS;         /* a region: median round */
    double o = par - w - w / threads;
    *out = o > 0 ? o : 0;
    free(x);
    free(t);
    return ZB_OK;
}
