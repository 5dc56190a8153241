/* test_profile.c - planner/cost/profile.h: fitting measured vstage times to per
 * layer / embedding / head pass times, the fallback scaling, covering, and
 * reading a profile file (good and bad). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner/cost/profile.h"

static zb_model tiny_model(void) {
    zb_model m;
    zb_err err;
    ck_assert_msg(zb_model_load("models/tiny.yaml", &m, &err) == ZB_OK, "%s", err.msg);
    return m;
}

/* A profile of `n` rows of the tiny model at tp 1, micro-batch 2. */
static void base(zb_profile *p, const zb_model *m) {
    memset(p, 0, sizeof *p);
    p->hidden = m->arch.hidden;
    p->heads = m->arch.heads;
    p->ffn_hidden = m->arch.ffn_hidden;
    p->seq_len = m->arch.seq_len;
    p->vocab = m->arch.vocab;
    p->precision = m->train.precision;
    snprintf(p->device, sizeof p->device, "%s", m->cluster.device.name);
    p->dp = 1;
    p->tp = 1;
    p->pp = 4;
    p->micro_batch = 2;
    p->p2p_s = 1e-4;
}

static void row(zb_profile *p, int layers, bool embed, bool head, const double L[3],
                const double E[3], const double H[3], bool split) {
    zb_profile_row *r = &p->rows[p->n++];
    r->layers = layers;
    r->embed = embed;
    r->head = head;
    for (int k = 0; k < 3; k++) {
        r->t[k] = layers * L[k] + embed * E[k] + head * H[k];
        r->samples[k] = split ? 8 : (k == 0 ? 8 : 0);
    }
    r->t[3] = r->t[1] + r->t[2];
    r->samples[3] = split ? 0 : 8;
    if (!split) r->t[1] = r->t[2] = 0;
}

#define NEAR(a, b) ck_assert_msg(fabs((a) - (b)) <= 1e-9 * fabs(b) + 1e-15, \
                                 "%s = %.12g, want %.12g", #a, (double)(a), (double)(b))

START_TEST(fit_recovers_components) {
    zb_model m = tiny_model();
    zb_profile p;
    base(&p, &m);
    double L[3] = {3e-3, 4e-3, 2e-3}, E[3] = {1e-3, 0, 5e-4}, H[3] = {6e-3, 5e-3, 4e-3};
    row(&p, 2, true, false, L, E, H, true);
    row(&p, 2, false, false, L, E, H, true);
    row(&p, 3, false, false, L, E, H, true);
    row(&p, 1, false, true, L, E, H, true);
    zb_cost_table ct;
    zb_err err;
    ck_assert_int_eq(zb_cost_eval(&m, 1, 2, &ct, &err), ZB_OK);
    ck_assert(zb_profile_apply(&p, &m, 1, 2, &ct));
    NEAR(ct.layer.f_s, L[0]);
    NEAR(ct.layer.b_s, L[1]);
    NEAR(ct.layer.w_s, L[2]);
    NEAR(ct.embed.f_s, E[0]);
    NEAR(ct.embed.w_s, E[2]);
    NEAR(ct.head.f_s, H[0]);
    NEAR(ct.head.b_s, H[1]);
    NEAR(ct.head.w_s, H[2]);
    NEAR(ct.p2p_intra_s, 1e-4);
    NEAR(ct.p2p_inter_s, 1e-4);
}
END_TEST

/* One row (pp = 1) cannot separate the parts: the analytic ones are scaled
 * so that their sum is the measured time; BW splits in the analytic ratio. */
START_TEST(fallback_scales_analytic) {
    zb_model m = tiny_model();
    zb_profile p;
    base(&p, &m);
    p.pp = 1;
    zb_cost_table a;
    zb_err err;
    ck_assert_int_eq(zb_cost_eval(&m, 1, 2, &a, &err), ZB_OK);
    double sum_f = 8 * a.layer.f_s + a.embed.f_s + a.head.f_s;
    double sum_bw = 8 * (a.layer.b_s + a.layer.w_s) + a.embed.b_s + a.embed.w_s +
                    a.head.b_s + a.head.w_s;
    zb_profile_row *r = &p.rows[p.n++];
    *r = (zb_profile_row){.layers = 8, .embed = true, .head = true,
                          .t = {3 * sum_f, 0, 0, 2 * sum_bw},
                          .samples = {8, 0, 0, 8}};
    zb_cost_table ct = a;
    ck_assert(zb_profile_apply(&p, &m, 1, 2, &ct));
    NEAR(ct.layer.f_s, 3 * a.layer.f_s);
    NEAR(ct.head.f_s, 3 * a.head.f_s);
    NEAR(ct.layer.b_s + ct.layer.w_s, 2 * (a.layer.b_s + a.layer.w_s));
    NEAR(ct.layer.b_s / ct.layer.w_s, a.layer.b_s / a.layer.w_s);
}
END_TEST

/* pp 2: rows (4 layers + embedding) and (4 layers + head), three parts:
 * each row is reproduced, the layer time is the scaled analytic one. */
START_TEST(two_rows_reproduced) {
    zb_model m = tiny_model();
    zb_profile p;
    base(&p, &m);
    p.pp = 2;
    double L[3] = {3e-3, 4e-3, 2e-3}, E[3] = {1e-3, 0, 5e-4}, H[3] = {6e-3, 5e-3, 4e-3};
    row(&p, 4, true, false, L, E, H, true);
    row(&p, 4, false, true, L, E, H, true);
    zb_cost_table ct;
    zb_err err;
    ck_assert_int_eq(zb_cost_eval(&m, 1, 2, &ct, &err), ZB_OK);
    ck_assert(zb_profile_apply(&p, &m, 1, 2, &ct));
    NEAR(4 * ct.layer.f_s + ct.embed.f_s, p.rows[0].t[0]);
    NEAR(4 * ct.layer.f_s + ct.head.f_s, p.rows[1].t[0]);
    NEAR(4 * ct.layer.w_s + ct.head.w_s, p.rows[1].t[2]);
    ck_assert(ct.embed.f_s >= 0 && ct.head.f_s >= 0);
}
END_TEST

START_TEST(covering) {
    zb_model m = tiny_model();
    zb_profile p;
    base(&p, &m);
    double L[3] = {1, 1, 1}, Z[3] = {0};
    row(&p, 2, false, false, L, Z, Z, true);
    zb_cost_table ct, orig;
    zb_err err;
    ck_assert_int_eq(zb_cost_eval(&m, 1, 4, &ct, &err), ZB_OK);
    orig = ct;
    ck_assert(!zb_profile_apply(&p, &m, 1, 4, &ct));  /* other micro-batch */
    ck_assert(memcmp(&ct, &orig, sizeof ct) == 0);
    ck_assert(!zb_profile_apply(NULL, &m, 1, 2, &ct));
    zb_model other = m;
    other.arch.hidden = 128;
    ck_assert(!zb_profile_covers(&p, &other, 1, 2));
    ck_assert(zb_profile_covers(&p, &m, 1, 2));
    /* on the CPU, passes timed with 1 thread per rank do not cover a rank
     * model with 2; a profile that does not say (0) covers any */
    zb_model two = m;
    two.cluster.device.threads = 2;
    p.threads = 1;
    ck_assert(strcmp(m.cluster.device.name, "cpu") == 0);
    ck_assert(!zb_profile_covers(&p, &two, 1, 2));
    p.threads = 2;
    ck_assert(zb_profile_covers(&p, &two, 1, 2));
    p.threads = 0;
    ck_assert(zb_profile_covers(&p, &two, 1, 2));
    ck_assert(zb_profile_covers_layout(&p, 1, 1, 4));
    ck_assert(!zb_profile_covers_layout(&p, 1, 1, 2));
}
END_TEST

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static const char good[] =
    "profile: 1\n"
    "model: {name: tiny, layers: 8, hidden: 64, heads: 4, ffn_hidden: 256, seq_len: 64,"
    " vocab: 256, precision: fp32, fused_attention: false}\n"
    "device: cpu\n"
    "layout: {dp: 1, tp: 1, pp: 2, v: 1, micro_batch: 2, microbatches: 8, schedule: zb-h1, threads: 1}\n"
    "step: {measured_s: 0.2, predicted_s: 0.1, pipeline_s: 0.19, predicted_pipeline_s: 0.1, overhead_s: 0.01}\n"
    "vstages:\n"
    "- {vstage: 0, layers: 4, embed: true, head: false, t_f: 0.004, t_b: 0.003, t_w: 0.002, t_bw: 0,"
    " predicted_t_f: 0, predicted_t_b: 0, predicted_t_w: 0, samples_f: 8, samples_b: 8, samples_w: 8, samples_bw: 0}\n"
    "- {vstage: 1, layers: 4, embed: false, head: true, t_f: 0.005, t_b: 0.004, t_w: 0.003, t_bw: 0,"
    " predicted_t_f: 0, predicted_t_b: 0, predicted_t_w: 0, samples_f: 8, samples_b: 8, samples_w: 8, samples_bw: 0}\n"
    "p2p: {bytes: 32768, measured_s: 0.0001, predicted_s: 0.00002}\n";

START_TEST(load_good_and_bad) {
    zb_profile *p = calloc(1, sizeof *p);
    zb_err err;
    const char *path = "build/tests/profile_good.yaml";
    write_file(path, good);
    ck_assert_msg(zb_profile_load(path, p, &err) == ZB_OK, "%s", err.msg);
    ck_assert_int_eq(p->n, 2);
    ck_assert_int_eq(p->pp, 2);
    ck_assert_int_eq(p->threads, 1);
    ck_assert(p->rows[1].head && p->rows[1].layers == 4);
    ck_assert(p->overhead_s == 0.01 && p->p2p_s == 0.0001);
    /* a missing key names the file, line and column */
    char bad[sizeof good];
    snprintf(bad, sizeof bad, "%s", good);
    char *at = strstr(bad, " samples_w: 8,");
    memcpy(at, "           ,", 12);  /* removes samples_w of the first row */
    memmove(at + 1, at + 12, strlen(at + 12) + 1);
    write_file("build/tests/profile_bad.yaml", bad);
    ck_assert_int_eq(zb_profile_load("build/tests/profile_bad.yaml", p, &err), ZB_EINPUT);
    ck_assert_msg(strstr(err.msg, "profile_bad.yaml:7:") && strstr(err.msg, "samples_w"),
                  "%s", err.msg);
    ck_assert_int_eq(zb_profile_load("build/tests/no_such_profile.yaml", p, &err), ZB_EINPUT);
    /* times that contradict each other (issue 29): a time without
     * samples, no forward pass, passes longer than the spans allow */
    static const char *const contra[][3] = {
        {"t_w: 0.002,", "t_w: 0.000,", "t_w 0 s over samples_w 8"},
        {"samples_f: 8, samples_b: 8, samples_w: 8, samples_bw: 0}",
         "samples_f: 8, samples_b: 8, samples_w: 8, samples_bw: 3}", "t_bw 0 s over samples_bw 3"},
        {"pipeline_s: 0.19", "pipeline_s: 0.01", "contradict each other"}};
    for (int c = 0; c < 3; c++) {
        snprintf(bad, sizeof bad, "%s", good);
        at = strstr(bad, contra[c][0]);
        ck_assert_ptr_nonnull(at);
        ck_assert_int_eq(strlen(contra[c][0]), strlen(contra[c][1]));
        memcpy(at, contra[c][1], strlen(contra[c][1]));
        write_file("build/tests/profile_contra.yaml", bad);
        ck_assert_int_eq(zb_profile_load("build/tests/profile_contra.yaml", p, &err), ZB_EINPUT);
        ck_assert_msg(strstr(err.msg, contra[c][2]), "%s", err.msg);
    }
    write_file("build/tests/profile_v2.yaml", "profile: 2\n");
    ck_assert_int_eq(zb_profile_load("build/tests/profile_v2.yaml", p, &err), ZB_EINPUT);
    free(p);
}
END_TEST

int main(void) {
    Suite *s = suite_create("profile");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, fit_recovers_components);
    tcase_add_test(tc, fallback_scales_analytic);
    tcase_add_test(tc, covering);
    tcase_add_test(tc, two_rows_reproduced);
    tcase_add_test(tc, load_good_and_bad);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
