/* test_vocab_run.c - zbrun and plans with vocabulary parallelism (issue
 * 32): until the rank loop runs the S and T passes, a plan with
 * parallel.vocab_parallel is refused before any rank starts (exit 2, one
 * line naming the plan and the key), and a plan without it passes. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "common/zb_plan.h"
#include "executor/run/run_checks.h"

START_TEST(test_vocab_plan_refused) {
    zb_plan plan;
    zb_err err = {0};
    ck_assert_int_eq(zb_plan_read("plans/tiny-vocab.yaml", &plan, &err), ZB_OK);
    ck_assert_int_eq(zb_run_check_vocab("p.yaml", &plan, &err), ZB_OK);
    for (int variant = 1; variant <= 2; variant++) {
        plan.vocab_parallel = variant;
        memset(&err, 0, sizeof err);
        ck_assert_int_eq(zb_run_check_vocab("p.yaml", &plan, &err), ZB_EINPUT);
        ck_assert_int_eq(zb_exit_code(ZB_EINPUT), 2);
        ck_assert_msg(strstr(err.msg, "p.yaml: parallel.vocab_parallel ") &&
                          !strchr(err.msg, '\n'),
                      "%s", err.msg);
    }
    zb_plan_free(&plan);
}
END_TEST

int main(void) {
    Suite *s = suite_create("vocab_run");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_vocab_plan_refused);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
