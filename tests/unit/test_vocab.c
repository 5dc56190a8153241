/* test_vocab.c - vocabulary parallelism's skeleton (zb_schedule.h): the S
 * and T passes' names, the contract check, the simulator's dependencies,
 * costs and memory against hand-computed timelines, the simple placement
 * on every registered schedule, and the plan tokens and key. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/zb_plan.h"
#include "common/zb_schedule_vocab.h"
#include "common/zb_sim.h"
#include "planner/cost/cost.h"
#include "planner/cost/vocab.h"
#include "planner/registry/registry.h"
#include "planner/search/search.h"

/* A schedule from one string per rank: "F0 S0 T0 B0 W0" (optional ".c"). */
static void build(zb_schedule *s, int p, int m, int vocab,
                  const char *const *ranks) {
    zb_err err;
    ck_assert_int_eq(zb_schedule_init(s, "test", p, m, 1, ZB_PLACE_LOOP, 2, &err), ZB_OK);
    s->vocab = vocab;
    for (int r = 0; r < p; r++) {
        char *dup = strdup(ranks[r]);
        for (char *tok = strtok(dup, " "); tok; tok = strtok(NULL, " ")) {
            char name[3] = {tok[0], tok[1] == 'W' ? 'W' : 0, 0};
            int pass = zb_pass_parse(name);
            ck_assert_int_ge(pass, 0);
            const char *num = tok + strlen(name);
            const char *dot = strchr(num, '.');
            ck_assert_int_eq(zb_schedule_push(s, r, pass, atoi(num),
                                              dot ? atoi(dot + 1) : 0, &err), ZB_OK);
        }
        free(dup);
    }
}

/* p = 2 costs: F 1, B 2, W 1, comm 0.5; S 1, T 2, bcast 0.25, C1 0.5,
 * C2 0.75; M_B 1, M_W 0.5, M_S 3. */
static void costs2(zb_costs *c) {
    zb_err err;
    ck_assert_int_eq(zb_costs_uniform(c, 2, 1, 2, 1, 0.5, 1, 0.5, &err), ZB_OK);
    c->t_s = 1, c->t_t = 2, c->t_bcast = 0.25, c->t_c1 = 0.5, c->t_c2 = 0.75;
    c->m_s = 3;
}

START_TEST(pass_names) {
    ck_assert_str_eq(zb_pass_name(ZB_S), "S");
    ck_assert_str_eq(zb_pass_name(ZB_T), "T");
    ck_assert_int_eq(zb_pass_parse("S"), ZB_S);
    ck_assert_int_eq(zb_pass_parse("t"), ZB_T);
    ck_assert_str_eq(zb_pass_name((zb_pass)6), "?");
}
END_TEST

static double at(const zb_sim_result *r, int rank, int i, bool end) {
    return (end ? r->end : r->start)[r->off[rank] + i];
}

START_TEST(variant1_timeline) {
    /* r0 F0 [0,1]; r1 F0 [1.5,2.5], S0 [2.5,3.5]; r0 S0 waits for X:
     * 2.5 + 0.25 -> [2.75,3.75]; C1 ends 3.75 + 0.5 = 4.25: both T0
     * [4.25,6.25]; C2 ends 6.25 + 0.75 = 7: r1 B0 [7,9] W0 [9,10];
     * r0 B0 9 + 0.5 -> [9.5,11.5], W0 [11.5,12.5]. */
    const char *ranks[] = {"F0 S0 T0 B0 W0", "F0 S0 T0 B0 W0"};
    zb_schedule s;
    zb_costs c;
    zb_sim_result r;
    zb_err err;
    build(&s, 2, 1, 1, ranks);
    costs2(&c);
    ck_assert_msg(zb_simulate(&s, &c, &r, &err) == ZB_OK, "%s", err.msg);
    ck_assert_double_eq_tol(at(&r, 0, 1, false), 2.75, 1e-12);
    ck_assert_double_eq_tol(at(&r, 1, 1, false), 2.5, 1e-12);
    ck_assert_double_eq_tol(at(&r, 0, 2, false), 4.25, 1e-12);
    ck_assert_double_eq_tol(at(&r, 1, 2, false), 4.25, 1e-12);
    ck_assert_double_eq_tol(at(&r, 1, 3, false), 7, 1e-12);
    ck_assert_double_eq_tol(at(&r, 0, 3, false), 9.5, 1e-12);
    ck_assert_double_eq_tol(r.span[0], 12.5, 1e-12);
    ck_assert_double_eq_tol(r.busy[0], 7, 1e-12); /* F1 S1 T2 B2 W1 */
    ck_assert_double_eq_tol(r.peak_mem[0], 4, 1e-12); /* M_B + M_S */
    double fast;
    ck_assert_int_eq(zb_simulate_fast(&s, &c, NULL, &fast, NULL, &err), ZB_OK);
    ck_assert_double_eq_tol(fast, r.max_span, 1e-12);
    ck_assert_int_eq(zb_sim_check_limit(&s, &c, 4, &err), ZB_OK);
    ck_assert_int_eq(zb_sim_check_limit(&s, &c, 3.5, &err), ZB_EINFEASIBLE);
    ck_assert_msg(strstr(err.msg, "rank 0: action 1 (S mb 0"), "%s", err.msg);
    zb_sim_result_free(&r);
    zb_costs_free(&c);
    zb_schedule_free(&s);
}
END_TEST

START_TEST(variant2_timeline) {
    /* Variant 2: the last stage's B needs C1 only (4.25): r1 B0 [4.25,6.25]
     * then T0 [6.25,8.25], W0 [8.25,9.25]; r0 T0 [4.25,6.25], B0 waits for
     * r1's B0: 6.25 + 0.5 -> [6.75,8.75], W0 [8.75,9.75]. */
    const char *ranks[] = {"F0 S0 T0 B0 W0", "F0 S0 B0 T0 W0"};
    zb_schedule s;
    zb_costs c;
    zb_sim_result r;
    zb_err err;
    build(&s, 2, 1, 2, ranks);
    costs2(&c);
    ck_assert_msg(zb_simulate(&s, &c, &r, &err) == ZB_OK, "%s", err.msg);
    ck_assert_double_eq_tol(at(&r, 1, 2, false), 4.25, 1e-12);
    ck_assert_double_eq_tol(at(&r, 1, 3, false), 6.25, 1e-12);
    ck_assert_double_eq_tol(at(&r, 0, 3, false), 6.75, 1e-12);
    ck_assert_double_eq_tol(r.span[0], 9.75, 1e-12);
    ck_assert_double_eq_tol(r.last_end, 9.75, 1e-12);
    zb_sim_result_free(&r);
    /* the same order under variant 1 deadlocks: B0 waits for C2 */
    s.vocab = 1;
    ck_assert_int_eq(zb_simulate(&s, &c, &r, &err), ZB_EINFEASIBLE);
    ck_assert_msg(strstr(err.msg, "rank 1: action 2 (B mb 0 chunk 0): deadlock: "
                         "waits for T on every rank (C2) of mb 0"), "%s", err.msg);
    zb_sim_result_free(&r);
    zb_costs_free(&c);
    zb_schedule_free(&s);
}
END_TEST

/* The contract's faults, each with its message. */
START_TEST(contract_faults) {
    static const struct { int vocab; const char *r0, *r1, *msg; } cases[] = {
        {0, "F0 S0 T0 B0", "F0 B0", "rank 0: action 1 (S mb 0 chunk 0): S and T "
                                    "need vocabulary parallelism"},
        {1, "F0 S0 T0 B0", "F0 S0 B0", "rank 1: missing T of mb 0"},
        {1, "F0 T0 S0 B0", "F0 S0 T0 B0", "rank 0: action 1 (T mb 0 chunk 0): T before its S"},
        {1, "F0 F1 S0 S1 T0 T1 B0 B1", "F0 S0 T0 B0 F1 S1 T1 B1",
         "rank 1: action 2 (T mb 0 chunk 0): S/T order differs from rank 0's, "
         "which runs S mb 1 here"},
        {1, "F0 F1 S1 S0 T0 T1 B0 B1", "F0 S0 T0 B0 F1 S1 T1 B1",
         "rank 0: action 2 (S mb 1 chunk 0): out of microbatch order"},
        {1, "F0 F1 S0 S0 T0 T1 B0 B1", "F0 S0 T0 B0 F1 S1 T1 B1",
         "rank 0: action 3 (S mb 0 chunk 0): repeated pass"},
        {3, "F0 S0 T0 B0", "F0 S0 T0 B0", "vocabulary parallelism 3: expected none, 1 or 2"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const char *ranks[] = {cases[k].r0, cases[k].r1};
        int m = strstr(cases[k].r0, "1") ? 2 : 1;
        zb_schedule s;
        zb_err err;
        build(&s, 2, m, cases[k].vocab, ranks);
        ck_assert_int_ne(zb_schedule_check_vocab(&s, &err), ZB_OK);
        ck_assert_msg(strstr(err.msg, cases[k].msg), "case %zu: %s", k, err.msg);
        zb_schedule_free(&s);
    }
    /* chunk 1 and p = 1 */
    zb_schedule s;
    zb_err err;
    ck_assert_int_eq(zb_schedule_init(&s, "t", 1, 1, 1, ZB_PLACE_LOOP, 0, &err), ZB_OK);
    s.vocab = 2;
    ck_assert_int_eq(zb_schedule_check_vocab(&s, &err), ZB_EINPUT);
    ck_assert_msg(strstr(err.msg, "at least 2 pipeline ranks"), "%s", err.msg);
    zb_schedule_free(&s);
    const char *ranks[] = {"F0 S0.1 T0 B0", "F0 S0 T0 B0"};
    build(&s, 2, 1, 1, ranks);
    ck_assert_int_eq(zb_schedule_check_vocab(&s, &err), ZB_EINFEASIBLE);
    ck_assert_msg(strstr(err.msg, "S and T belong to chunk 0"), "%s", err.msg);
    zb_schedule_free(&s);
}
END_TEST

/* The simple placement keeps every registered schedule valid under both
 * variants, with the contract's S/T order, and holds as many actions as
 * before plus 2m per rank; stripping gives the schedule back. */
START_TEST(placement_every_schedule) {
    zb_costs c;
    zb_err err;
    int p = 4, m = 8, placed = 0;
    for (int l = 0; l < 2; l++) {
        const char *const *names = l ? zb_schedule_block_names() : zb_schedule_names();
        for (int i = 0; names[i]; i++) {
            int v = zb_schedule_chunks(names[i], 2);
            ck_assert_int_eq(zb_costs_uniform(&c, p * v, 1.0 / v, 1.0 / v, 1.0 / v,
                                              0.1, 1, 0.5, &err), ZB_OK);
            zb_sched_params prm = {.p = p, .m = m, .v = v, .costs = &c,
                                   .time_limit_s = 2, .mip_gap = 1e-4};
            zb_schedule s, orig;
            if (zb_schedule_make(names[i], &prm, &s, NULL, &err) != ZB_OK) {
                zb_costs_free(&c);
                continue; /* conditions (ilp without GLPK time, ...) */
            }
            if (s.placement == ZB_PLACE_DUAL) { /* two heads: refused */
                ck_assert_int_eq(zb_schedule_place_vocab(&s, 1, &err), ZB_EINPUT);
                ck_assert_ptr_nonnull(strstr(err.msg, "dual placement"));
                zb_schedule_free(&s);
                zb_costs_free(&c);
                continue;
            }
            ck_assert_int_eq(zb_schedule_copy(&orig, &s, &err), ZB_OK);
            for (int variant = 1; variant <= 2; variant++) {
                zb_schedule t;
                ck_assert_int_eq(zb_schedule_copy(&t, &orig, &err), ZB_OK);
                ck_assert_msg(zb_schedule_place_vocab(&t, variant, &err) == ZB_OK,
                              "%s: %s", names[i], err.msg);
                ck_assert_int_eq(t.vocab, variant);
                c.t_s = 0.3, c.t_t = 0.6, c.t_bcast = c.t_c1 = c.t_c2 = 0.05;
                double span;
                ck_assert_msg(zb_simulate_fast(&t, &c, NULL, &span, NULL, &err) == ZB_OK,
                              "%s variant %d: %s", names[i], variant, err.msg);
                for (int r = 0; r < p; r++)
                    ck_assert_int_eq(t.len[r], orig.len[r] + 2 * m);
                zb_schedule_strip_vocab(&t);
                for (int r = 0; r < p; r++) {
                    ck_assert_int_eq(t.len[r], orig.len[r]);
                    ck_assert(memcmp(t.acts[r], orig.acts[r],
                                     (size_t)t.len[r] * sizeof(zb_action)) == 0);
                }
                zb_schedule_free(&t);
            }
            /* twice is refused and leaves the schedule alone */
            ck_assert_int_eq(zb_schedule_place_vocab(&s, 1, &err), ZB_OK);
            ck_assert_int_eq(zb_schedule_place_vocab(&s, 1, &err), ZB_EINPUT);
            ck_assert_int_eq(s.len[0], orig.len[0] + 2 * m);
            placed++;
            zb_schedule_free(&s);
            zb_schedule_free(&orig);
            zb_costs_free(&c);
        }
    }
    ck_assert_int_ge(placed, 8);
}
END_TEST

START_TEST(placement_1f1b_rule) {
    /* 1F1B p = 2, m = 2 (unit costs): rank 1 F0 ends at 2; rank 0 runs
     * F0 [0,1] F1 [1,2] and waits for B0 (starts 4): S0 T0 go before
     * rank 0's B0 and right after rank 1's F0; F1 on rank 1 ends at 5
     * (after B0 [3,4]... F1 [4,5]) so S1 T1 go before rank 1's B1. */
    const char *ranks[] = {"F0 F1 B0 W0 B1 W1", "F0 B0 W0 F1 B1 W1"};
    zb_schedule s;
    zb_err err;
    build(&s, 2, 2, 0, ranks);
    ck_assert_msg(zb_schedule_place_vocab(&s, 1, &err) == ZB_OK, "%s", err.msg);
    const char *want[2] = {"F0 F1 S0 T0 B0 W0 S1 T1 B1 W1",
                           "F0 S0 T0 B0 W0 F1 S1 T1 B1 W1"};
    for (int r = 0; r < 2; r++) {
        char got[128] = "";
        for (int i = 0; i < s.len[r]; i++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s%d",
                     i ? " " : "", zb_pass_name((zb_pass)s.acts[r][i].pass),
                     (int)s.acts[r][i].mb);
        ck_assert_str_eq(got, want[r]);
    }
    zb_schedule_free(&s);
    build(&s, 1, 2, 0, (const char *[]){"F0 B0 F1 B1"});
    ck_assert_int_eq(zb_schedule_place_vocab(&s, 1, &err), ZB_EINPUT);
    zb_schedule_free(&s);
}
END_TEST


/* A small plan (4 layers, p = 2, m = 2, 1F1B split) with vocab_parallel
 * 1 and the simple placement. */
static void make_plan(zb_plan *pl) {
    zb_err err;
    memset(pl, 0, sizeof *pl);
    zb_model *m = &pl->model;
    snprintf(m->name, sizeof m->name, "t");
    m->arch = (zb_arch){.layers = 4, .hidden = 32, .heads = 4, .ffn_hidden = 128,
                        .seq_len = 16, .vocab = 256, .tied_embeddings = true};
    m->train = (zb_training){.global_batch = 4, .micro_batch = 2, .steps = 3,
                             .seed = 7, .precision = ZB_PREC_FP32};
    m->train.opt = (zb_optim){.lr = 1e-3, .min_lr = 1e-4, .beta1 = 0.9, .beta2 = 0.95,
                              .eps = 1e-8, .weight_decay = 0.1, .grad_clip = 1.0,
                              .warmup_steps = 1, .cosine = true};
    snprintf(m->train.data_path, sizeof m->train.data_path, "/data/x.txt");
    m->cluster.nodes = 1;
    m->cluster.devices_per_node = 8;
    m->cluster.device = *zb_device_lookup("cpu");
    m->cluster.intra_bw_Bps = 1e10;
    m->cluster.intra_lat_s = 1e-6;
    m->cluster.inter_bw_Bps = 1e9;
    m->cluster.inter_lat_s = 1e-5;
    pl->dp = pl->tp = 1;
    pl->micro_batch = 2;
    pl->m = 2;
    pl->vocab_parallel = 1;
    snprintf(pl->solver, sizeof pl->solver, "generator");
    ck_assert_int_eq(zb_plan_alloc(pl, 2, 1, &err), ZB_OK);
    build(&pl->sched, 2, 2, 0, (const char *[]){"F0 F1 B0 W0 B1 W1",
                                                "F0 B0 W0 F1 B1 W1"});
    ck_assert_int_eq(zb_schedule_place_vocab(&pl->sched, 1, &err), ZB_OK);
    for (int r = 0; r < 2; r++) {
        pl->stages[r] = (zb_stage_span){2 * r, 2, r == 0, r == 1};
        pl->costs.t_f[r] = 0.25, pl->costs.t_b[r] = 0.5, pl->costs.t_w[r] = 0.125;
        pl->costs.t_comm[r] = 0.01, pl->costs.m_b[r] = 1000, pl->costs.m_w[r] = 400;
        pl->pred.bubble[r] = 0.1;
        pl->pred.peak_mem_bytes[r] = 1e9;
        pl->pred.act_mem_bytes[r] = 2000;
    }
    pl->costs.t_s = 0.125, pl->costs.t_t = 0.25, pl->costs.t_bcast = 0.02;
    pl->costs.t_c1 = 0.03, pl->costs.t_c2 = 0.04, pl->costs.m_s = 500;
    pl->pred.step_s = pl->pred.pipeline_s = 2;
    pl->pred.tokens_per_s = 32;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return strdup(buf);
}

static void spit(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* text with the first `from` replaced by `to`, read back: the error. */
static void check_mutation(const char *text, const char *from, const char *to,
                           const char *msg) {
    const char *at = strstr(text, from);
    ck_assert_msg(at, "'%s' not in the plan", from);
    size_t n = strlen(text) + strlen(to) + 1;
    char *mut = malloc(n);
    snprintf(mut, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    char path[] = "/tmp/zb_test_vocab_mut_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    spit(path, mut);
    zb_plan pl;
    zb_err err;
    ck_assert_int_eq(zb_plan_read(path, &pl, &err), ZB_EINPUT);
    ck_assert_msg(strstr(err.msg, msg), "%s -> %s: %s", from, to, err.msg);
    ck_assert_msg(strncmp(err.msg, path, strlen(path)) == 0, "%s", err.msg);
    unlink(path);
    free(mut);
}

START_TEST(plan_round_trip) {
    zb_plan a, b;
    zb_err err;
    make_plan(&a);
    char path[] = "/tmp/zb_test_vocab_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_msg(zb_plan_write(path, &a, &err) == ZB_OK, "%s", err.msg);
    ck_assert_msg(zb_plan_read(path, &b, &err) == ZB_OK, "%s", err.msg);
    ck_assert_int_eq(b.vocab_parallel, 1);
    ck_assert_int_eq(b.sched.vocab, 1);
    for (int r = 0; r < 2; r++) {
        ck_assert_int_eq(b.sched.len[r], a.sched.len[r]);
        ck_assert(memcmp(b.sched.acts[r], a.sched.acts[r],
                         (size_t)a.sched.len[r] * sizeof(zb_action)) == 0);
    }
    ck_assert_double_eq(b.costs.t_s, 0.125);
    ck_assert_double_eq(b.costs.m_s, 500);
    ck_assert_double_eq(b.costs.t_c2, 0.04);
    char *text = slurp(path);
    ck_assert_msg(strstr(text, "  vocab_parallel: 1\n"), "%s", text);
    ck_assert_msg(strstr(text, "[F0, S0, T0, B0, W0, F1, S1, T1, B1, W1]"), "%s", text);
    check_mutation(text, "  vocab_parallel: 1\n", "  vocab_parallel: 3\n",
                   "'vocab_parallel' must be one of none, 1, 2; got '3'");
    check_mutation(text, "[F0, S0, T0,", "[F0, S0.0, T0,", "bad action 'S0.0'");
    check_mutation(text, "[F0, S0, T0,", "[F0, T0, S0,", "T before its S");
    check_mutation(text, "[F0, S0, T0, B0, W0, F1, S1, T1, B1, W1]",
                   "[F0, S0, T0, B0, W0, F1, B1, W1]", "missing S of mb 1");
    check_mutation(text, "vocab:\n", "vocabx:\n", "unknown key 'vocabx'");
    check_mutation(text, "  vocab_parallel: 1\n", "", "'vocab' costs without "
                   "parallel.vocab_parallel");
    free(text);
    unlink(path);
    zb_plan_free(&a);
    zb_plan_free(&b);
}
END_TEST


/* The paper's kind of model (zb-6.2b resized: 32 layers, hidden 4096,
 * seq 2048, micro-batch 1, 64 sequences) with vocabulary V. */
static void big_model(zb_model *m, int vocab) {
    zb_err err;
    ck_assert_msg(zb_model_load("models/zb-6.2b.yaml", m, &err) == ZB_OK, "%s", err.msg);
    m->arch.layers = 32;
    m->arch.vocab = vocab;
    m->arch.seq_len = 2048;
    m->train.global_batch = 64;
    m->train.micro_batch = 1;
}

START_TEST(vocab_cost_table) {
    zb_model m;
    zb_err err;
    big_model(&m, 262144);
    zb_cost_table base, ct1, ct2;
    ck_assert_int_eq(zb_cost_eval(&m, 1, 1, &base, &err), ZB_OK);
    ct1 = ct2 = base;
    zb_vocab_cost v0, v1, v2;
    ck_assert_int_eq(zb_vocab_eval(&m, 1, 1, 8, 1, 0, &ct1, &v0, &err), ZB_OK);
    ck_assert(memcmp(&ct1, &base, sizeof base) == 0);  /* none: untouched */
    ck_assert_double_eq(v0.t_s + v0.t_t + v0.m_s, 0);
    ck_assert_int_eq(zb_vocab_eval(&m, 1, 1, 8, 1, 1, &ct1, &v1, &err), ZB_OK);
    ck_assert_int_eq(zb_vocab_eval(&m, 1, 1, 8, 1, 2, &ct2, &v2, &err), ZB_OK);
    double h = 4096, rows = 262144 / 8;
    ck_assert_double_eq(v1.shard_rows, rows);
    ck_assert_double_eq(ct1.vocab_rank_params, rows * h * (m.arch.tied_embeddings ? 1 : 2));
    ck_assert_double_eq(ct1.vocab_params, 0);
    /* the last stage keeps the norm only; the first no table */
    ck_assert_double_lt(ct1.head.f_s, base.head.f_s / 50);
    ck_assert_double_eq(ct1.head.params, base.head_norm.params);
    ck_assert_double_eq(ct1.embed.params, base.embed.params - base.vocab_params);
    ck_assert_double_gt(ct1.embed.f_s, base.embed.f_s); /* + the pp reduce */
    /* the same work, split differently: v2 moves the dX GEMM into S */
    ck_assert_double_eq_tol(v1.t_s + v1.t_t, v2.t_s + v2.t_t, 1e-12 * (v1.t_s + v1.t_t));
    ck_assert_double_gt(v2.t_s, v1.t_s);
    /* one shard's work is about an eighth of the unsharded head's */
    double head = base.head.f_s + base.head.b_s + base.head.w_s;
    ck_assert_double_gt(8 * (v1.t_s + v1.t_t), 0.8 * head);
    ck_assert_double_lt(8 * (v1.t_s + v1.t_t), 1.5 * head);
    /* one barrier: no C2, a larger C1 */
    ck_assert_double_eq(v2.t_c2, 0);
    ck_assert_double_gt(v1.t_c2, 0);
    ck_assert_double_gt(v2.t_c1, v1.t_c1);
    ck_assert_double_gt(v1.m_s, 4 * 2048 * rows); /* fp32 logits at least */
    ck_assert_int_eq(zb_vocab_eval(&m, 1, 1, 1, 1, 1, &ct1, &v1, &err), ZB_EINPUT);
    ck_assert_msg(strstr(err.msg, "needs pp >= 2"), "%s", err.msg);
}
END_TEST

/* Forced variants reach the plan; auto searches all three and puts a
 * variant first only where it is strictly faster. */
START_TEST(vocab_search) {
    zb_model m;
    zb_err err;
    ck_assert_msg(zb_model_load("models/tiny.yaml", &m, &err) == ZB_OK, "%s", err.msg);
    for (int variant = 1; variant <= 2; variant++) {
        zb_search_opts o;
        zb_search_opts_default(&o);
        o.pp = 4;
        o.cores = 4;
        snprintf(o.schedule, sizeof o.schedule, "1f1b");
        o.vocab = variant;
        zb_search_result r;
        ck_assert_msg(zb_search(&m, &o, &r, &err) == ZB_OK, "%s", err.msg);
        ck_assert_int_ge(r.n, 1);
        ck_assert_int_eq(r.cand[0].vocab, variant);
        ck_assert_int_eq(r.cand[0].sched.vocab, variant);
        zb_plan plan;
        ck_assert_msg(zb_search_make_plan(&m, &r.cand[0], &plan, &err) == ZB_OK, "%s", err.msg);
        ck_assert_int_eq(plan.vocab_parallel, variant);
        ck_assert_double_gt(plan.costs.t_s, 0);
        ck_assert_double_gt(plan.costs.t_t, 0);
        ck_assert_int_eq(zb_schedule_check_vocab(&plan.sched, &err), ZB_OK);
        zb_plan_free(&plan);
        zb_search_result_free(&r);
    }
    zb_search_opts o;
    zb_search_opts_default(&o);
    o.pp = 1;
    o.vocab = 1;
    zb_search_result r;
    ck_assert_int_eq(zb_search(&m, &o, &r, &err), ZB_EINPUT);
    ck_assert_msg(strstr(err.msg, "--vocab-parallel 1 needs --pp >= 2"), "%s", err.msg);
    o.pp = 4;
    o.cores = 4;
    o.vocab = ZB_SEARCH_VOCAB_AUTO;
    o.top_k = 100;
    ck_assert_msg(zb_search(&m, &o, &r, &err) == ZB_OK, "%s", err.msg);
    /* a variant comes first only when strictly faster than every none */
    double best_none = INFINITY;
    int seen[3] = {0, 0, 0};
    for (int i = 0; i < r.n; i++) {
        seen[r.cand[i].vocab]++;
        if (!r.cand[i].vocab && r.cand[i].step_s < best_none) best_none = r.cand[i].step_s;
    }
    ck_assert(seen[0] && seen[1] && seen[2]);
    ck_assert_double_le(r.cand[0].step_s, best_none);
    if (r.cand[0].vocab) ck_assert_double_lt(r.cand[0].step_s, best_none);
    zb_search_result_free(&r);
}
END_TEST


/* The paper's 1F1B numbers (Yeung et al. 2024, Table/README: the same
 * bubble as 1F1B, activation memory p + 2 microbatches for variant 1 and
 * p + 1 for variant 2): uniform F = B = W = 1, M_B = 1, M_S = 0. */
START_TEST(paper_1f1b_numbers) {
    int p = 4, m = 16;
    zb_costs c;
    zb_err err;
    ck_assert_int_eq(zb_costs_uniform(&c, p, 1, 1, 1, 0, 1, 0.5, &err), ZB_OK);
    c.t_s = 0.5, c.t_t = 1;
    for (int variant = 0; variant <= 2; variant++) {
        zb_sched_params prm = {.p = p, .m = m, .v = 1, .costs = &c, .vocab = variant};
        zb_schedule s;
        zb_sim_result r;
        ck_assert_msg(zb_schedule_make("1f1b", &prm, &s, NULL, &err) == ZB_OK, "%s", err.msg);
        ck_assert_int_eq(s.vocab, variant);
        ck_assert_msg(zb_simulate(&s, &c, &r, &err) == ZB_OK, "%s", err.msg);
        /* bubble (p-1)(F+B+W) on the first rank, as 1F1B's */
        ck_assert_double_eq_tol(r.max_span - r.busy[0], (p - 1) * 3.0, 1e-9);
        ck_assert_double_eq_tol(r.busy[0], m * (3.0 + (variant ? 1.5 : 0)), 1e-9);
        ck_assert_double_eq_tol(r.peak_mem[0], variant ? p + 3 - variant : p, 1e-9);
        zb_sim_result_free(&r);
        zb_schedule_free(&s);
    }
    zb_costs_free(&c);
}
END_TEST

/* Every registered schedule built with vocab set places S and T validly
 * under non-uniform costs (the first and last stages heavier). */
START_TEST(registry_places_every_schedule) {
    int p = 4, m = 8, placed = 0;
    zb_err err;
    for (int l = 0; l < 2; l++) {
        const char *const *names = l ? zb_schedule_block_names() : zb_schedule_names();
        for (int i = 0; names[i]; i++) {
            int v = zb_schedule_chunks(names[i], 2);
            zb_costs c;
            ck_assert_int_eq(zb_costs_uniform(&c, p * v, 1.0 / v, 1.5 / v, 0.7 / v,
                                              0.05, 1, 0.5, &err), ZB_OK);
            c.t_f[0] *= 1.5, c.t_b[p * v - 1] *= 2;
            c.t_s = 0.2, c.t_t = 0.4, c.t_bcast = c.t_c1 = c.t_c2 = 0.03, c.m_s = 0.3;
            for (int variant = 1; variant <= 2; variant++) {
                zb_sched_params prm = {.p = p, .m = m, .v = v, .costs = &c,
                                       .mem_limit = 3 * p, .time_limit_s = 2,
                                       .mip_gap = 1e-4, .vocab = variant};
                zb_schedule s;
                if (zb_schedule_make(names[i], &prm, &s, NULL, &err) != ZB_OK) continue;
                ck_assert_int_eq(zb_schedule_check_vocab(&s, &err), ZB_OK);
                ck_assert_msg(zb_simulate_fast(&s, &c, NULL, NULL, NULL, &err) == ZB_OK,
                              "%s variant %d: %s", names[i], variant, err.msg);
                placed++;
                zb_schedule_free(&s);
            }
            zb_costs_free(&c);
        }
    }
    ck_assert_int_ge(placed, 16);
}
END_TEST

/* The done-when: 256k vocabulary on 8 stages under V-Half predicts
 * a step at least as short as the best plan without vocabulary
 * parallelism (any schedule), with every rank's peak memory within 10% of
 * every other's. */
START_TEST(vhalf_256k_done_when) {
    zb_model m;
    zb_err err;
    big_model(&m, 262144);
    zb_search_opts o;
    zb_search_opts_default(&o);
    o.dp = 1, o.tp = 1, o.pp = 8;
    zb_search_result none, vp;
    ck_assert_msg(zb_search(&m, &o, &none, &err) == ZB_OK, "%s", err.msg);
    ck_assert_int_eq(none.cand[0].vocab, 0);
    snprintf(o.schedule, sizeof o.schedule, "v-half");
    o.vocab = ZB_SEARCH_VOCAB_AUTO;
    ck_assert_msg(zb_search(&m, &o, &vp, &err) == ZB_OK, "%s", err.msg);
    ck_assert_int_ne(vp.cand[0].vocab, 0);
    ck_assert_double_le(vp.cand[0].step_s, none.cand[0].step_s);
    zb_plan plan;
    ck_assert_msg(zb_search_make_plan(&m, &vp.cand[0], &plan, &err) == ZB_OK, "%s", err.msg);
    double lo = INFINITY, hi = 0;
    for (int r = 0; r < 8; r++) {
        if (plan.pred.peak_mem_bytes[r] < lo) lo = plan.pred.peak_mem_bytes[r];
        if (plan.pred.peak_mem_bytes[r] > hi) hi = plan.pred.peak_mem_bytes[r];
    }
    ck_assert_msg(hi <= 1.10 * lo, "peak memory %g .. %g", lo, hi);
    ck_assert_double_le(plan.pred.step_s, none.cand[0].step_s);
    zb_plan_free(&plan);
    zb_search_result_free(&none);
    zb_search_result_free(&vp);
}
END_TEST

Suite *vocab_suite(void) {
    Suite *s = suite_create("vocab");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, pass_names);
    tcase_add_test(tc, variant1_timeline);
    tcase_add_test(tc, variant2_timeline);
    tcase_add_test(tc, contract_faults);
    tcase_add_test(tc, placement_every_schedule);
    tcase_add_test(tc, placement_1f1b_rule);
    tcase_add_test(tc, plan_round_trip);
    tcase_add_test(tc, vocab_cost_table);
    tcase_add_test(tc, vocab_search);
    tcase_add_test(tc, paper_1f1b_numbers);
    tcase_add_test(tc, registry_places_every_schedule);
    tcase_add_test(tc, vhalf_256k_done_when);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(vocab_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
