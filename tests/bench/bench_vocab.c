/* bench_vocab.c - the evidence table of docs/vocab-parallel.md: predicted
 * throughput and peak memory of the naive placement (even layer split,
 * embedding on the first stage, output layer on the last), the best
 * uneven partition (zbplan's own, zb_partition), and vocabulary
 * parallelism 1 and 2 (cost/vocab.h), under 1F1B and V-Half, for the
 * paper's kind of setup: zb-6.2b's blocks (hidden 4096, 32 heads) with
 * 4 layers per stage, seq 2048, micro-batch 1, 128 microbatches, one
 * pipeline of 8 or 16 A100 80GB, vocabulary 32k to 256k.
 * Prints markdown rows; `make bench` runs it (about a second).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/zb_plan.h"
#include "planner/cost/partition.h"
#include "planner/search/search.h"

typedef struct {
    double tokens_s, mem_max, mem_min;
    int ok, fits;
} cell;

static zb_status setup(zb_model *m, int vocab, int pp, zb_err *err) {
    ZB_TRY(zb_model_load("models/zb-6.2b.yaml", m, err));
    m->arch.layers = 4 * pp;
    m->arch.vocab = vocab;
    m->arch.seq_len = 2048;
    m->train.global_batch = 128;
    m->train.micro_batch = 1;
    m->cluster.nodes = pp / 8;
    m->cluster.devices_per_node = 8;
    return ZB_OK;
}

/* The plan of candidate c (with spans replaced when even), summarised. */
static cell summarise(const zb_model *m, const zb_candidate *c, bool even) {
    cell out = {0};
    zb_candidate k = *c;
    zb_stage_span *spans = NULL;
    if (even) {
        spans = calloc((size_t)c->pp * c->v, sizeof *spans);
        if (!spans) return out;
        zb_partition_even(m->arch.layers, c->pp * c->v, spans);
        k.spans = spans;
    }
    zb_plan plan;
    zb_err err;
    if (zb_search_make_plan(m, &k, &plan, &err) == ZB_OK) {
        out.ok = 1;
        out.fits = c->fits;
        out.tokens_s = plan.pred.tokens_per_s;
        out.mem_min = INFINITY;
        for (int r = 0; r < c->pp; r++) {
            double g = plan.pred.peak_mem_bytes[r] / (1024.0 * 1024 * 1024);
            if (g > out.mem_max) out.mem_max = g;
            if (g < out.mem_min) out.mem_min = g;
        }
        zb_plan_free(&plan);
    } else {
        fprintf(stderr, "bench_vocab: %s\n", err.msg);
    }
    free(spans);
    return out;
}

/* Search one forced layout; the best candidate's summary (even: with the
 * naive split instead of its partition). Over memory: ok = 0. */
static cell run(const zb_model *m, int pp, const char *sched, int vocab,
                bool even) {
    zb_search_opts o;
    zb_search_opts_default(&o);
    o.dp = 1, o.tp = 1, o.pp = pp, o.vocab = vocab;
    o.exhaustive = true; /* priced even when over memory (marked) */
    o.no_staging = true; /* the paper's setting: Megatron-LM, no zbrun rings */
    snprintf(o.schedule, sizeof o.schedule, "%s", sched);
    zb_search_result r;
    zb_err err;
    cell out = {0};
    if (zb_search(m, &o, &r, &err) != ZB_OK) return out;
    if (r.n > 0) out = summarise(m, &r.cand[0], even);
    zb_search_result_free(&r);
    return out;
}

/* GiB a plan may use: the device less the model's margin. */
static double usable_gib(const zb_model *m) {
    return m->cluster.device.mem_bytes * (1 - m->cluster.mem_margin) / (1u << 30);
}

static void print_cell(cell c, double limit) {
    if (!c.ok) printf(" - |");
    else printf(" %.0f (%.1f / %.1f)%s |", c.tokens_s, c.mem_max, c.mem_min,
                c.mem_max > limit ? " over" : "");
}

int main(void) {
    static const int vocabs[] = {32768, 65536, 131072, 262144};
    static const int pps[] = {8, 16};
    static const char *const scheds[] = {"1f1b", "v-half"};
    printf("| schedule | pp | V | naive | best uneven | vocab 1 | vocab 2 |\n"
           "|---|---|---|---|---|---|---|\n");
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < 2; i++)
            for (int k = 0; k < 4; k++) {
                zb_model m;
                zb_err err;
                if (setup(&m, vocabs[k], pps[i], &err) != ZB_OK) {
                    fprintf(stderr, "bench_vocab: %s\n", err.msg);
                    return 1;
                }
                printf("| %s | %d | %dk |", scheds[s], pps[i], vocabs[k] / 1024);
                print_cell(run(&m, pps[i], scheds[s], 0, true), usable_gib(&m));
                print_cell(run(&m, pps[i], scheds[s], 0, false), usable_gib(&m));
                print_cell(run(&m, pps[i], scheds[s], 1, false), usable_gib(&m));
                print_cell(run(&m, pps[i], scheds[s], 2, false), usable_gib(&m));
                printf("\n");
            }
    printf("cells: tokens/s (peak GiB of the fullest / the emptiest rank); "
           "over: above what a plan may use (the device less the margin); "
           "no staging rings (--no-staging: the paper's Megatron-LM)\n");
    return 0;
}
