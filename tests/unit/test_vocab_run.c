/* test_vocab_run.c - zbrun and plans with vocabulary parallelism (issue
 * 32):
 * - a plan with parallel.vocab_parallel passes zbrun's check at tp 1
 *   and tp 2 without a validation set; with training.val it is refused
 *   before any rank starts (exit 2, one line naming the plan, the key and
 *   the reason), and a plan without it passes;
 * - on the cuda backend such a plan runs in fp32 over the device-local
 *   transport only: precision bf16 and the NCCL transport are refused in
 *   one line naming the plan (the check zbrun makes with --backend cuda);
 * - the parameter table (executor/stage/stage_params.h): over pp x tp
 *   ranks the vocabulary shards of the token table (and the untied LM
 *   head) tile its V rows as docs/plan-format.md splits them, start from
 *   the unsharded tensors' values bit for bit, leave the chunks no token
 *   table or head and nothing to sync, and each rank counts its shard in
 *   the gradient norm. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "common/zb_plan.h"
#include "executor/run/run_checks.h"
#include "executor/stage/stage_params.h"

START_TEST(test_vocab_plan_refused) {
    zb_plan plan;
    zb_err err = {0};
    ck_assert_int_eq(zb_plan_read("plans/tiny-vocab.yaml", &plan, &err), ZB_OK);
    ck_assert_int_eq(zb_run_check_vocab("p.yaml", &plan, &err), ZB_OK);
    for (int variant = 1; variant <= 2; variant++) {
        plan.vocab_parallel = variant;
        plan.model.train.val_path[0] = '\0';
        for (int tp = 1; tp <= 2; tp++) { /* the vocabulary over pp x tp */
            plan.tp = tp;
            ck_assert_int_eq(zb_run_check_vocab("p.yaml", &plan, &err), ZB_OK);
        }
        strcpy(plan.model.train.val_path, "val.txt");
        memset(&err, 0, sizeof err);
        ck_assert_int_eq(zb_run_check_vocab("p.yaml", &plan, &err), ZB_EINPUT);
        ck_assert_int_eq(zb_exit_code(ZB_EINPUT), 2);
        ck_assert_msg(strstr(err.msg, "p.yaml: parallel.vocab_parallel ") &&
                          strstr(err.msg, "training.val") &&
                          !strchr(err.msg, '\n'),
                      "%s", err.msg);
    }
    zb_plan_free(&plan);
}
END_TEST

START_TEST(test_vocab_cuda_refused) {
    zb_plan plan;
    zb_err err = {0};
    ck_assert_int_eq(zb_plan_read("plans/tiny-vocab.yaml", &plan, &err), ZB_OK);
    plan.model.train.precision = ZB_PREC_BF16;
    plan.vocab_parallel = 0; /* without the key: nothing to refuse */
    ck_assert_int_eq(zb_run_check_vocab_cuda("p.yaml", &plan, false, &err),
                     ZB_OK);
    for (int variant = 1; variant <= 2; variant++) {
        plan.vocab_parallel = variant;
        plan.model.train.precision = ZB_PREC_FP32;
        ck_assert_int_eq(zb_run_check_vocab_cuda("p.yaml", &plan, true, &err),
                         ZB_OK);
        for (int k = 0; k < 2; k++) { /* bf16, then over NCCL */
            plan.model.train.precision = k == 0 ? ZB_PREC_BF16 : ZB_PREC_FP32;
            memset(&err, 0, sizeof err);
            ck_assert_int_eq(zb_run_check_vocab_cuda("p.yaml", &plan, k == 0,
                                                     &err), ZB_EINPUT);
            ck_assert_msg(strstr(err.msg, "p.yaml: parallel.vocab_parallel ") &&
                              strstr(err.msg, k == 0 ? "bf16" : "ZB_CUDA_SHARE=1") &&
                              !strchr(err.msg, '\n'),
                          "%s", err.msg);
        }
    }
    zb_plan_free(&plan);
}
END_TEST

/* The full tensor (layer -1, id) of an unsharded rank's table (pp 1 view:
 * the rank of the embedding for wte, of the head for lm_head). */
static float *full_tensor(const zb_plan *plan, int pp_rank, int id,
                          size_t *n) {
    zb_plan q = *plan;
    q.vocab_parallel = 0;
    q.tp = 1;
    zb_ptable pt;
    zb_err err;
    ck_assert_int_eq(zb_ptable_build(&pt, &q, pp_rank, 0, &err), ZB_OK);
    int j = zb_ptable_find(&pt, -1, id, false);
    ck_assert_int_ge(j, 0);
    float *p = calloc(pt.floats, sizeof *p);
    ck_assert_ptr_nonnull(p);
    zb_ptable_init(&pt, p, 1234);
    *n = (size_t)pt.t[j].rows * pt.t[j].cols;
    float *out = malloc(*n * sizeof *out);
    ck_assert_ptr_nonnull(out);
    memcpy(out, p + pt.t[j].off, *n * sizeof *out);
    free(p);
    zb_ptable_free(&pt);
    return out;
}

/* Every shard of (pp x tp) gathered into [V, C]: each row exactly once,
 * the values the unsharded table starts from. */
static void check_shards(zb_plan *plan, int tp, bool tied) {
    plan->tp = tp;
    plan->model.arch.tied_embeddings = tied;
    plan->vocab_parallel = 1;
    int V = plan->model.arch.vocab, C = plan->model.arch.hidden;
    size_t nw, nh;
    float *wte = full_tensor(plan, 0, ZB_T_WTE, &nw);
    float *head = tied ? NULL : full_tensor(plan, plan->pp - 1, ZB_T_LMHEAD, &nh);
    char *seen = calloc((size_t)V, 1);
    ck_assert_ptr_nonnull(seen);
    for (int r = 0; r < plan->pp; r++)
        for (int t = 0; t < tp; t++) {
            zb_ptable pt;
            zb_err err;
            ck_assert_int_eq(zb_ptable_build(&pt, plan, r, t, &err), ZB_OK);
            ck_assert_int_ge(pt.vocab_wte, 0);
            ck_assert(tied == (pt.vocab_head == pt.vocab_wte));
            ck_assert_int_eq(pt.tied, -1);
            for (int c = 0; c < pt.v; c++)
                ck_assert(pt.chunk[c].wte < 0 && pt.chunk[c].head < 0);
            const zb_ptensor *w = &pt.t[pt.vocab_wte];
            int row0, rows, k = r * tp + t, n = plan->pp * tp;
            zb_vocab_split(V, k, n, &row0, &rows);
            ck_assert_int_eq(pt.vocab_row0, row0);
            ck_assert_int_eq(w->rows, rows);
            ck_assert_int_eq(row0, k * V / n);
            ck_assert(w->norm);
            float *p = calloc(pt.floats, sizeof *p);
            ck_assert_ptr_nonnull(p);
            zb_ptable_init(&pt, p, 1234);
            ck_assert_mem_eq(p + w->off, wte + (size_t)row0 * C,
                             (size_t)rows * C * sizeof *p);
            if (!tied)
                ck_assert_mem_eq(p + pt.t[pt.vocab_head].off,
                                 head + (size_t)row0 * C,
                                 (size_t)rows * C * sizeof *p);
            for (int i = 0; i < rows; i++) ck_assert_int_eq(seen[row0 + i]++, 0);
            free(p);
            zb_ptable_free(&pt);
        }
    for (int v = 0; v < V; v++) ck_assert_int_eq(seen[v], 1);
    free(seen);
    free(wte);
    free(head);
}

START_TEST(test_param_shards) {
    zb_plan plan;
    zb_err err = {0};
    ck_assert_int_eq(zb_plan_read("plans/tiny-vocab.yaml", &plan, &err), ZB_OK);
    plan.model.arch.vocab = 1001; /* not a multiple of 4 or 8 */
    check_shards(&plan, 1, true);
    check_shards(&plan, 1, false);
    check_shards(&plan, 2, true);
    check_shards(&plan, 2, false);
    zb_plan_free(&plan);
}
END_TEST

int main(void) {
    Suite *s = suite_create("vocab_run");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_vocab_plan_refused);
    tcase_add_test(tc, test_vocab_cuda_refused);
    tcase_add_test(tc, test_param_shards);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
