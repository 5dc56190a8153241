/* test_run_procs.c - zb_run with one rank per "process" (zb_run_proc), the
 * path zbrun takes under mpirun, without MPI: each rank calls zb_run from
 * its own thread with its endpoint of a local transport, as a process would
 * with its MPI endpoint. Against the threaded run of the same plan:
 *  - every caller gets the same losses, bitwise (same fixed-order sums);
 *  - caller r's final parameters are, bitwise, rank r's of the threaded run
 *    (and only rank r's are kept, except on rank 0, which gathers every
 *    rank's, bitwise too);
 *  - the gathered measurements (per-rank spans, busy times, memory, the
 *    timeline of every rank with its transfers and step tails) are
 *    complete and identical on every caller;
 *  - a process count that is not the plan's is refused (ZB_EINPUT);
 *  - zb_run_groups (the groups a per-process NCCL endpoint is made with)
 *    holds, for every rank of a dp 2 x tp 2 x pp 4 layout, the ranks that
 *    share its other coordinates, the tied embedding pair only at the
 *    first and last pipeline rank;
 *  - zb_procs_cuda_device: local rank to device, refusals when no device
 *    is visible or two processes of a host would share one.
 * The plan is plans/tiny.yaml (pp 4) with smaller shapes, 2 steps.
 */
#include <check.h>
#include <pthread.h>
#include <string.h>

#include "common/zb_plan.h"
#include "executor/run/procs.h"
#include "executor/run/runtime.h"

#define STEPS 2

static void load_plan(zb_plan *p) {
    zb_err err;
    ck_assert_msg(zb_plan_read("plans/tiny.yaml", p, &err) == ZB_OK, "%s", err.msg);
    p->model.arch.hidden = 16;
    p->model.arch.ffn_hidden = 64;
    p->model.arch.seq_len = 16;
}

typedef struct {
    const zb_plan *plan;
    zb_transport *tr;
    int rank, world;
    zb_run_result res;
    zb_status st;
    zb_err err;
} proc_arg;

static void *proc_main(void *arg) {
    proc_arg *a = arg;
    zb_run_opts o = {.steps = STEPS, .threads = 1, .keep_params = true,
                     .proc = {.tr = a->tr, .rank = a->rank, .world = a->world,
                              .local_rank = a->rank}};
    a->st = zb_run(a->plan, &o, &a->res, &a->err);
    return NULL;
}

static bool same(const double *x, const double *y, size_t n) {
    return !memcmp(x, y, n * sizeof *x);
}

START_TEST(test_procs_equal_threads) {
    zb_plan p;
    zb_err err;
    load_plan(&p);
    int world = zb_plan_world(&p);
    ck_assert_int_ge(world, 2);
    zb_run_opts o = {.steps = STEPS, .threads = 1, .keep_params = true};
    zb_run_result ref;
    ck_assert_msg(zb_run(&p, &o, &ref, &err) == ZB_OK, "%s", err.msg);

    int max_msgs;
    size_t msg;
    ck_assert_msg(zb_run_msg_sizes(&p, &max_msgs, &msg, &err) == ZB_OK, "%s", err.msg);
    zb_local_world *lw;
    ck_assert_msg(zb_local_world_new(world, max_msgs, msg, 0, &lw, &err) == ZB_OK, "%s", err.msg);
    proc_arg args[64];
    pthread_t th[64];
    ck_assert_int_le(world, 64);
    for (int r = 0; r < world; r++) {
        args[r] = (proc_arg){.plan = &p, .tr = zb_local_transport(lw, r), .rank = r,
                             .world = world};
        ck_assert_int_eq(pthread_create(&th[r], NULL, proc_main, &args[r]), 0);
    }
    for (int r = 0; r < world; r++) pthread_join(th[r], NULL);

    for (int r = 0; r < world; r++) {
        zb_run_result *res = &args[r].res;
        ck_assert_msg(args[r].st == ZB_OK, "rank %d: %s", r, args[r].err.msg);
        ck_assert_int_eq(res->n_steps, STEPS);
        ck_assert_msg(same(res->loss, ref.loss, STEPS), "rank %d: losses differ", r);
        ck_assert_msg(same(res->grad_norm, ref.grad_norm, STEPS), "rank %d: norms differ", r);
        for (int q = 0; q < world; q++) {
            if (q != r && r != 0) {   /* rank 0 gathers every rank's */
                ck_assert_ptr_null(res->params[q]);
                continue;
            }
            ck_assert_uint_eq(res->n_params[q], ref.n_params[q]);
            ck_assert_msg(!memcmp(res->params[q], ref.params[q],
                                  ref.n_params[q] * sizeof(float)),
                          "rank %d: final parameters differ from the threaded run", r);
        }
        /* gathered: the same complete picture on every caller */
        const zb_run_result *z = &args[0].res;
        ck_assert_int_eq(res->trace_n, ref.trace_n);
        ck_assert(same(res->span_s, z->span_s, (size_t)world));
        ck_assert(same(res->busy_s, z->busy_s, (size_t)world));
        ck_assert(same(res->static_bytes, z->static_bytes, (size_t)world));
        ck_assert(same(res->act_peak_bytes, z->act_peak_bytes, (size_t)world));
        ck_assert(same(res->pp_bubble, z->pp_bubble, (size_t)p.pp));
        ck_assert(res->bubble_rate == z->bubble_rate);
        for (int q = 0; q < world; q++) {
            ck_assert_msg(res->span_s[q] > 0 && res->busy_s[q] > 0 &&
                          res->busy_s[q] <= res->span_s[q] + 1e-9,
                          "rank %d's view of rank %d: span %g busy %g", r, q,
                          res->span_s[q], res->busy_s[q]);
            ck_assert(res->static_bytes[q] == ref.static_bytes[q]);
            ck_assert(res->act_peak_bytes[q] == ref.act_peak_bytes[q]);
            size_t n = (size_t)res->trace_n * (size_t)res->n_acts[q];
            ck_assert(same(res->t_start[q], z->t_start[q], n));
            ck_assert(same(res->t_end[q], z->t_end[q], n));
            for (size_t i = 0; i < n; i++)
                ck_assert(res->t_end[q][i] >= res->t_start[q][i] && res->t_start[q][i] > 0);
            /* transfers and step tails of every rank, gathered too */
            size_t no = (size_t)res->trace_n * (size_t)res->n_ops[q], tn = (size_t)res->trace_n;
            ck_assert(same(res->x_start[q], z->x_start[q], no));
            ck_assert(same(res->x_end[q], z->x_end[q], no));
            ck_assert(same(res->tail_start[q], z->tail_start[q], tn));
            ck_assert(same(res->tail_end[q], z->tail_end[q], tn));
            for (size_t k = 0; k < tn; k++)
                ck_assert_msg(res->tail_start[q][k] > 0 &&
                              res->tail_end[q][k] >= res->tail_start[q][k],
                              "rank %d's view of rank %d's step tail", r, q);
            ck_assert(res->post_s[q] == z->post_s[q] && res->post_s[q] > 0);
            ck_assert(res->recv_s[q] == z->recv_s[q]);
            ck_assert(res->boundary_s[q] == z->boundary_s[q] && res->boundary_s[q] > 0);
            ck_assert(res->boundary_idle_s[q] == z->boundary_idle_s[q]);
            ck_assert(res->boundary_busy_s[q] == z->boundary_busy_s[q]);
            ck_assert(res->verdict_wait_s[q] == z->verdict_wait_s[q]);
        }
        ck_assert_int_eq(res->trace_step[res->trace_n - 1], STEPS);
    }
    for (int r = 0; r < world; r++) zb_run_result_free(&args[r].res);
    zb_local_world_free(lw);
    zb_run_result_free(&ref);
    zb_plan_free(&p);
}
END_TEST

START_TEST(test_wrong_world) {
    zb_plan p;
    zb_err err = {{0}};
    load_plan(&p);
    int world = zb_plan_world(&p);
    zb_local_world *lw;
    ck_assert(zb_local_world_new(world + 1, 4, 16, 0, &lw, &err) == ZB_OK);
    zb_run_opts o = {.steps = 1, .threads = 1,
                     .proc = {.tr = zb_local_transport(lw, 0), .rank = 0, .world = world + 1}};
    zb_run_result res;
    ck_assert_int_eq(zb_run(&p, &o, &res, &err), ZB_EINPUT);
    char want[64];
    snprintf(want, sizeof want, "%d processes", world + 1);
    ck_assert_msg(strstr(err.msg, want), "%s", err.msg);
    zb_run_result_free(&res);
    zb_local_world_free(lw);
    zb_plan_free(&p);
}
END_TEST

/* Members of g: n ranks, each with coordinates equal to r's except the
 * one the group spans (axis 0 tp, 1 dp), all distinct, r among them. */
static void check_group(const zb_plan *p, const zb_group *g, int r, int axis,
                        int n) {
    int pr, dr, tr, has = 0;
    zb_plan_coords(p, r, &pr, &dr, &tr);
    ck_assert_int_eq(g->n, n);
    for (int i = 0; i < g->n; i++) {
        int q = zb_group_rank(g, i), qp, qd, qt;
        zb_plan_coords(p, q, &qp, &qd, &qt);
        ck_assert_int_eq(qp, pr);
        ck_assert_int_eq(axis == 0 ? qd : qt, axis == 0 ? dr : tr);
        ck_assert_int_eq(axis == 0 ? qt : qd, i);
        has += q == r;
    }
    ck_assert_int_eq(has, 1);
}

START_TEST(test_run_groups) {
    zb_plan p;
    load_plan(&p);
    p.dp = 2;   /* the groups need only the layout and the schedule */
    p.tp = 2;
    int world = zb_plan_world(&p), ids[ZB_RUN_GROUPS * 64], n_ids = 0;
    ck_assert_int_eq(world, 16);
    for (int r = 0; r < world; r++) {
        zb_group g[ZB_RUN_GROUPS];
        int pr, dr, tr;
        zb_run_groups(&p, r, g);
        zb_plan_coords(&p, r, &pr, &dr, &tr);
        check_group(&p, &g[0], r, 0, 2);
        check_group(&p, &g[1], r, 1, 2);
        bool ends = pr == 0 || pr == p.pp - 1;
        ck_assert_int_eq(g[2].n, ends ? 2 : 0);
        if (ends) {
            ck_assert_int_eq(zb_group_rank(&g[2], 0), zb_plan_rank(&p, 0, dr, tr));
            ck_assert_int_eq(zb_group_rank(&g[2], 1), zb_plan_rank(&p, p.pp - 1, dr, tr));
        }
        ck_assert_int_eq(g[3].n, 0); /* no copy pair but under DUAL */
        /* a group id names one member set: equal ids, equal groups */
        for (int k = 0; k < ZB_RUN_GROUPS; k++) {
            if (g[k].n == 0) continue;
            bool seen = false;
            for (int i = 0; i < n_ids; i++) seen |= ids[i] == g[k].id;
            if (!seen) ids[n_ids++] = g[k].id;
        }
    }
    /* 8 TP groups, 8 DP groups, 4 embedding pairs */
    ck_assert_int_eq(n_ids, 8 + 8 + 4);
    zb_plan_free(&p);
}
END_TEST

/* A DUAL plan (dualpipe): pipeline ranks r and pp-1-r form a copy pair per
 * (dp, tp) rank, with one id per pair; the embedding pair is ranks 0 and
 * pp-1 (the down copy's first and last stages). */
START_TEST(test_run_groups_dual) {
    zb_plan p;
    load_plan(&p);
    p.dp = 2;
    p.tp = 2;
    ck_assert_int_eq(p.pp % 2, 0);
    p.sched.placement = ZB_PLACE_DUAL; /* the groups read only pp and it */
    int world = zb_plan_world(&p), ids[64], n_ids = 0;
    for (int r = 0; r < world; r++) {
        zb_group g[ZB_RUN_GROUPS];
        int pr, dr, tr;
        zb_run_groups(&p, r, g);
        zb_plan_coords(&p, r, &pr, &dr, &tr);
        bool ends = pr == 0 || pr == p.pp - 1;
        ck_assert_int_eq(g[2].n, ends ? 2 : 0);
        ck_assert_int_eq(g[3].n, 2);
        int lo = pr < p.pp - 1 - pr ? pr : p.pp - 1 - pr;
        ck_assert_int_eq(zb_group_rank(&g[3], 0), zb_plan_rank(&p, lo, dr, tr));
        ck_assert_int_eq(zb_group_rank(&g[3], 1), zb_plan_rank(&p, p.pp - 1 - lo, dr, tr));
        bool seen = false;
        for (int i = 0; i < n_ids; i++) seen |= ids[i] == g[3].id;
        for (int k = 0; k < 3; k++) ck_assert_int_ne(g[k].id, g[3].id);
        if (!seen) ids[n_ids++] = g[3].id;
    }
    ck_assert_int_eq(n_ids, p.pp / 2 * p.dp * p.tp);
    zb_plan_free(&p);
}
END_TEST

START_TEST(test_cuda_device) {
    zb_err err = {{0}};
    int d;
    ck_assert_int_eq(zb_procs_cuda_device(0, 2, 0, NULL, &d, &err), ZB_EINPUT);
    ck_assert_msg(strstr(err.msg, "no CUDA device visible"), "%s", err.msg);
    ck_assert_int_eq(zb_procs_cuda_device(3, 4, 4, NULL, &d, &err), ZB_OK);
    ck_assert_int_eq(d, 3);
    ck_assert_int_eq(zb_procs_cuda_device(1, 2, 8, NULL, &d, &err), ZB_OK);
    ck_assert_int_eq(d, 1);
    /* 4 processes, 2 devices: two would share */
    ck_assert_int_eq(zb_procs_cuda_device(1, 4, 2, "0,1", &d, &err), ZB_EINPUT);
    ck_assert_msg(strstr(err.msg, "4 processes") && strstr(err.msg, "2 CUDA devices"),
                  "%s", err.msg);
    /* local size unknown: local rank 2 of 2 devices is a third process */
    ck_assert_int_eq(zb_procs_cuda_device(2, 0, 2, NULL, &d, &err), ZB_EINPUT);
    /* one device, no binding: shared */
    ck_assert_int_eq(zb_procs_cuda_device(1, 2, 1, NULL, &d, &err), ZB_EINPUT);
    /* one device each, bound by the launcher (CUDA_VISIBLE_DEVICES) */
    ck_assert_int_eq(zb_procs_cuda_device(1, 2, 1, "1", &d, &err), ZB_OK);
    ck_assert_int_eq(d, 0);
}
END_TEST

static Suite *procs_suite(void) {
    Suite *s = suite_create("run_procs");
    TCase *tc = tcase_create("procs");
    tcase_add_test(tc, test_procs_equal_threads);
    tcase_add_test(tc, test_wrong_world);
    tcase_add_test(tc, test_run_groups);
    tcase_add_test(tc, test_run_groups_dual);
    tcase_add_test(tc, test_cuda_device);
    tcase_set_timeout(tc, 600);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(procs_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
