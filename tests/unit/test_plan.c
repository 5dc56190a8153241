/* test_plan.c - the plan format: write/read round trip, and a corpus of
 * mutations of a valid plan, each with its expected one-line error at the
 * line of the mutation. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>

#include "common/zb_plan.h"

#define TMPDIR_TEMPLATE "/tmp/zb_test_plan_XXXXXX"
static char dir[64];
static char good_path[128];

/* A small but complete plan: 4 layers on p=2, m=4, 1F1B with split B/W. */
static void make_plan(zb_plan *pl) {
    zb_err err;
    memset(pl, 0, sizeof *pl);
    zb_model *m = &pl->model;
    snprintf(m->name, sizeof m->name, "t");
    m->arch = (zb_arch){.layers = 4, .hidden = 32, .heads = 4, .ffn_hidden = 128,
                        .seq_len = 16, .vocab = 256, .tied_embeddings = true};
    m->train.global_batch = 8;
    m->train.micro_batch = 2;
    m->train.steps = 3;
    m->train.seed = 7;
    m->train.precision = ZB_PREC_FP32;
    snprintf(m->train.data_path, sizeof m->train.data_path, "/data/x.txt");
    m->train.opt = (zb_optim){.lr = 1e-3, .min_lr = 1e-4, .beta1 = 0.9, .beta2 = 0.95,
                              .eps = 1e-8, .weight_decay = 0.1, .grad_clip = 1.0,
                              .warmup_steps = 1, .cosine = true};
    m->cluster.nodes = 1;
    m->cluster.devices_per_node = 8;
    m->cluster.device = *zb_device_lookup("cpu");
    m->cluster.intra_bw_Bps = 1e10;
    m->cluster.intra_lat_s = 1e-6;
    m->cluster.inter_bw_Bps = 1e9;
    m->cluster.inter_lat_s = 1e-5;
    pl->dp = 1;
    pl->tp = 1;
    pl->micro_batch = 2;
    pl->m = 4;
    snprintf(pl->solver, sizeof pl->solver, "generator");
    ck_assert_int_eq(zb_plan_alloc(pl, 2, 1, &err), ZB_OK);
    ck_assert_int_eq(zb_schedule_init(&pl->sched, "1f1b-split", 2, 4, 1,
                                      ZB_PLACE_LOOP, 0, &err), ZB_OK);
    for (int r = 0; r < 2; r++) {
        int warm = 2 - r - 1, f = 0;
        for (; f < warm; f++) zb_schedule_push(&pl->sched, r, ZB_F, f, 0, &err);
        for (int b = 0; b < 4; b++) {
            if (f < 4) zb_schedule_push(&pl->sched, r, ZB_F, f++, 0, &err);
            zb_schedule_push(&pl->sched, r, ZB_B, b, 0, &err);
            zb_schedule_push(&pl->sched, r, ZB_W, b, 0, &err);
        }
        pl->stages[r] = (zb_stage_span){2 * r, 2, r == 0, r == 1};
        pl->costs.t_f[r] = 0.25 * (r + 1);
        pl->costs.t_b[r] = 0.5;
        pl->costs.t_w[r] = 0.125;
        pl->costs.t_comm[r] = 1.0 / 3.0;
        pl->costs.m_b[r] = 1000;
        pl->costs.m_w[r] = 400;
        pl->pred.bubble[r] = 0.1 * r;
        pl->pred.peak_mem_bytes[r] = 1e9 + r;
        pl->pred.act_mem_bytes[r] = 2000;
    }
    pl->pred.step_s = 0.123456789012345678;
    pl->pred.pipeline_s = 0.1;
    pl->pred.tokens_per_s = 1000;
    pl->pred.mfu = 0.3;
    pl->pred.bubble_rate = 0.05;
}

static void setup(void) {
    snprintf(dir, sizeof dir, TMPDIR_TEMPLATE);
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(good_path, sizeof good_path, "%s/good.yaml", dir);
    zb_plan pl;
    zb_err err;
    make_plan(&pl);
    ck_assert_msg(zb_plan_write(good_path, &pl, &err) == ZB_OK, "%s", err.msg);
    zb_plan_free(&pl);
}

static void teardown(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}

START_TEST(round_trip) {
    zb_plan a, b;
    zb_err err;
    make_plan(&a);
    ck_assert_msg(zb_plan_read(good_path, &b, &err) == ZB_OK, "%s", err.msg);
    ck_assert_int_eq(b.version, ZB_PLAN_VERSION);
    ck_assert_int_eq(b.pp, 2);
    ck_assert_int_eq(b.m, 4);
    ck_assert_str_eq(b.sched.name, "1f1b-split");
    ck_assert_str_eq(b.solver, "generator");
    for (int r = 0; r < 2; r++) {
        ck_assert_int_eq(b.sched.len[r], a.sched.len[r]);
        ck_assert_mem_eq(b.sched.acts[r], a.sched.acts[r],
                         (size_t)a.sched.len[r] * sizeof(zb_action));
        ck_assert_int_eq(b.stages[r].first_layer, a.stages[r].first_layer);
        ck_assert(b.stages[r].embed == a.stages[r].embed);
        /* doubles round-trip exactly (%.17g) */
        ck_assert(b.costs.t_f[r] == a.costs.t_f[r]);
        ck_assert(b.costs.t_comm[r] == a.costs.t_comm[r]);
        ck_assert(b.pred.peak_mem_bytes[r] == a.pred.peak_mem_bytes[r]);
    }
    ck_assert(b.pred.step_s == a.pred.step_s);
    ck_assert_int_eq(b.model.arch.hidden, 32);
    ck_assert_int_eq(b.model.train.micro_batch, 2);
    ck_assert(b.model.train.opt.lr == a.model.train.opt.lr);
    ck_assert_str_eq(b.model.train.data_path, "/data/x.txt");
    zb_plan_free(&a);
    zb_plan_free(&b);
}
END_TEST

/* Replace the first occurrence of `from` (after `after`, if given) in the
 * good plan by `to`, read it, expect ZB_EINPUT with a message
 * "<path>:<line of the change>:" containing `want`. */
static void check_mutation(const char *name, const char *after, const char *from,
                           const char *to, const char *want, int line_delta) {
    FILE *f = fopen(good_path, "r");
    ck_assert_ptr_nonnull(f);
    static char text[1 << 16], out[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    fclose(f);
    char *base = after ? strstr(text, after) : text;
    ck_assert_msg(base != NULL, "%s: anchor '%s' not in plan", name, after);
    char *at = strstr(base, from);
    ck_assert_msg(at != NULL, "%s: '%s' not in plan", name, from);
    int line = 1;
    for (char *c = text; c < at; c++) line += *c == '\n';
    snprintf(out, sizeof out, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    char path[160];
    snprintf(path, sizeof path, "%s/%s.yaml", dir, name);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(out, f);
    fclose(f);
    zb_plan pl;
    zb_err err;
    ck_assert_int_eq(zb_plan_read(path, &pl, &err), ZB_EINPUT);
    char prefix[200];
    snprintf(prefix, sizeof prefix, "%s:%d:", path, line + line_delta);
    ck_assert_msg(strncmp(err.msg, prefix, strlen(prefix)) == 0,
                  "%s: message '%s' does not start with '%s'", name, err.msg, prefix);
    ck_assert_msg(strstr(err.msg, want) != NULL, "%s: message '%s' lacks '%s'", name,
                  err.msg, want);
    ck_assert_ptr_null(strchr(err.msg, '\n'));
}

START_TEST(bad_plans) {
    check_mutation("version", NULL, "version: 1", "version: 2",
                   "unsupported plan version 2", 0);
    check_mutation("unknown_key", NULL, "  chunks:", "  chunkz:",
                   "unknown key 'chunkz'", 0);
    check_mutation("dp_type", NULL, "  dp: 1", "  dp: one", "'dp'", 0);
    check_mutation("batch", NULL, "  microbatches: 4", "  microbatches: 3",
                   "must equal global_batch (8)", -5);
    check_mutation("bad_action", "ranks:", "F0", "X0", "bad action 'X0'", 0);
    check_mutation("range_action", "ranks:", "F0", "F9", "action 'F9' out of range", 0);
    check_mutation("missing_pass", "ranks:", ", W3]", "]",
                   "schedule rejected: rank 0: missing W of mb 3", 0);
    check_mutation("repeat_pass", "ranks:", "F1,", "F0,",
                   "schedule rejected: rank 0: action 1 (F mb 0 chunk 0): repeated pass", 0);
    check_mutation("layers", "stages:", "layers: 2", "layers: 3",
                   "stage 1: layers are not contiguous", 1);
    check_mutation("head", "stages:", "head: false", "head: true",
                   "the head must be on the last virtual stage only", 0);
    check_mutation("pred_ranks", "prediction:", "  - {rank: 1", "  - {rank: 5",
                   "'rank'", 0);
    check_mutation("layout", NULL, "layout: pp-dp-tp", "layout: tp-dp-pp",
                   "unsupported rank layout 'tp-dp-pp'", 0);
}
END_TEST

START_TEST(truncated_plan) {
    FILE *f = fopen(good_path, "r");
    ck_assert_ptr_nonnull(f);
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text, f);
    fclose(f);
    char *cut = strstr(text, "stages:");
    ck_assert_ptr_nonnull(cut);
    char path[160];
    snprintf(path, sizeof path, "%s/truncated.yaml", dir);
    f = fopen(path, "w");
    fwrite(text, 1, (size_t)(cut - text), f);
    fclose(f);
    (void)n;
    zb_plan pl;
    zb_err err;
    ck_assert_int_eq(zb_plan_read(path, &pl, &err), ZB_EINPUT);
    ck_assert_msg(strstr(err.msg, "missing key 'stages'") != NULL, "%s", err.msg);
}
END_TEST

START_TEST(missing_file_is_bad_input) {
    char path[160];
    snprintf(path, sizeof path, "%s/none.yaml", dir);
    zb_plan pl;
    zb_err err;
    ck_assert_int_eq(zb_plan_read(path, &pl, &err), ZB_EINPUT);
    char want[220];
    snprintf(want, sizeof want, "%s: cannot open: No such file or directory", path);
    ck_assert_str_eq(err.msg, want);
}
END_TEST

/* Every plan in plans/ (made by `make plans`) passes the full reader,
 * simulator check included, and holds the model of the same name. */
START_TEST(shipped_plans_read) {
    DIR *d = opendir("plans");
    ck_assert_msg(d != NULL, "run from the repository root");
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".yaml") != 0) continue;
        char path[512];
        snprintf(path, sizeof path, "plans/%s", e->d_name);
        zb_plan pl;
        zb_err err;
        ck_assert_msg(zb_plan_read(path, &pl, &err) == ZB_OK, "%s", err.msg);
        ck_assert_int_eq(strncmp(pl.model.name, e->d_name, len - 5), 0);
        ck_assert_int_eq(pl.dp * pl.m * pl.micro_batch, pl.model.train.global_batch);
        zb_plan_free(&pl);
        n++;
    }
    closedir(d);
    ck_assert_int_ge(n, 9);
}
END_TEST

START_TEST(layout_helpers) {
    zb_plan pl = {.dp = 3, .tp = 2, .pp = 4};
    ck_assert_int_eq(zb_plan_world(&pl), 24);
    for (int g = 0; g < 24; g++) {
        int p, d, t;
        zb_plan_coords(&pl, g, &p, &d, &t);
        ck_assert_int_eq(zb_plan_rank(&pl, p, d, t), g);
    }
    /* tp innermost: ranks 0 and 1 are one TP group */
    int p, d, t;
    zb_plan_coords(&pl, 1, &p, &d, &t);
    ck_assert(p == 0 && d == 0 && t == 1);
    zb_plan_coords(&pl, 6, &p, &d, &t);
    ck_assert(p == 1 && d == 0 && t == 0);
}
END_TEST

int main(void) {
    Suite *su = suite_create("plan");
    TCase *tc = tcase_create("format");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, round_trip);
    tcase_add_test(tc, bad_plans);
    tcase_add_test(tc, truncated_plan);
    tcase_add_test(tc, missing_file_is_bad_input);
    tcase_add_test(tc, shipped_plans_read);
    tcase_add_test(tc, layout_helpers);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
