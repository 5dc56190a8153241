/* test_run_procs.c - zb_run with one rank per "process" (zb_run_proc), the
 * path zbrun takes under mpirun, without MPI: each rank calls zb_run from
 * its own thread with its endpoint of a local transport, as a process would
 * with its MPI endpoint. Against the threaded run of the same plan:
 *  - every caller gets the same losses, bitwise (same fixed-order sums);
 *  - caller r's final parameters are, bitwise, rank r's of the threaded run
 *    (and only rank r's are kept);
 *  - the gathered measurements (per-rank spans, busy times, memory, the
 *    timeline of every rank) are complete and identical on every caller;
 *  - a process count that is not the plan's is refused (ZB_EINPUT).
 * The plan is plans/tiny.yaml (pp 4) with smaller shapes, 2 steps.
 */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "common/zb_plan.h"
#include "executor/runtime.h"

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
    proc_arg args[ZB_RUN_MAX_WORLD];
    pthread_t th[ZB_RUN_MAX_WORLD];
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
        /* keep_params: own parameters everywhere, every rank's on rank 0
         * (gathered for --export) */
        for (int q = 0; q < world; q++) {
            if (q != r && r != 0) {
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
        ck_assert(same(res->recv_s, z->recv_s, (size_t)world));
        ck_assert(same(res->send_s, z->send_s, (size_t)world));
        for (int q = 0; q < world; q++) {   /* transfer timelines too */
            size_t no = (size_t)res->trace_n * (size_t)res->n_ops[q];
            ck_assert(same(res->x_end[q], z->x_end[q], no));
            double last = 0;
            for (size_t i = 0; i < no; i++) last = fmax(last, res->x_end[q][i]);
            ck_assert_msg(last > 0, "rank %d: no transfer times gathered", q);
        }
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

static Suite *procs_suite(void) {
    Suite *s = suite_create("run_procs");
    TCase *tc = tcase_create("procs");
    tcase_add_test(tc, test_procs_equal_threads);
    tcase_add_test(tc, test_wrong_world);
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
