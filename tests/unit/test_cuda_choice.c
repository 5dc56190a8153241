/* test_cuda_choice.c - what the CUDA backend decides without a device
 * (executor/stage/cuda_choice.h): the fused fp32 attention kernel's head
 * sizes apply to fp32 stages only; bf16 stages run attention as GEMMs and
 * take any head size, so the shipped models/zb-1.5b.yaml (head 96, bf16)
 * is accepted; the op-table combinations zb_ops_cuda refuses. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "common/zb_model.h"
#include "executor/stage/cuda_choice.h"

START_TEST(fused_head_sizes) {
    int ok = 0;
    for (int hs = 0; hs <= 512; hs++) ok += zb_cuda_fused_head_ok(hs);
    ck_assert_int_eq(ok, 4);
    ck_assert(zb_cuda_fused_head_ok(16) && zb_cuda_fused_head_ok(32) &&
              zb_cuda_fused_head_ok(64) && zb_cuda_fused_head_ok(128));
    ck_assert(!zb_cuda_fused_head_ok(96) && !zb_cuda_fused_head_ok(-64));
}
END_TEST

START_TEST(attention_limit_only_for_fp32) {
    char buf[256];
    /* bf16: GEMM attention, any head size (96, 80, odd ones) */
    ck_assert(zb_cuda_attn_gemm(true) && !zb_cuda_attn_gemm(false));
    ck_assert_ptr_null(zb_cuda_attention_refusal(true, 2304, 24, 1, buf, sizeof buf));
    ck_assert_ptr_null(zb_cuda_attention_refusal(true, 2560, 32, 2, buf, sizeof buf));
    ck_assert_ptr_null(zb_cuda_attention_refusal(true, 21, 3, 1, buf, sizeof buf));
    /* fp32: the fused kernel's list */
    ck_assert_ptr_null(zb_cuda_attention_refusal(false, 768, 12, 1, buf, sizeof buf));
    ck_assert_ptr_null(zb_cuda_attention_refusal(false, 4096, 32, 4, buf, sizeof buf));
    const char *why = zb_cuda_attention_refusal(false, 2304, 24, 1, buf, sizeof buf);
    ck_assert_ptr_eq(why, buf);
    ck_assert_msg(strstr(why, "head size 96") && strstr(why, "bf16"), "%s", why);
    ck_assert_ptr_null(strchr(why, '\n'));
    /* whole heads per TP rank, whatever the precision */
    ck_assert_ptr_nonnull(zb_cuda_attention_refusal(true, 2304, 24, 5, buf, sizeof buf));
    ck_assert_ptr_nonnull(zb_cuda_attention_refusal(true, 100, 3, 1, buf, sizeof buf));
    ck_assert_ptr_nonnull(zb_cuda_attention_refusal(false, 64, 0, 1, buf, sizeof buf));
}
END_TEST

/* Every shipped model with precision bf16 is accepted whatever its head
 * size; zb-1.5b (head 96) among them. */
START_TEST(shipped_bf16_model_accepted) {
    zb_model m;
    zb_err err;
    ck_assert_int_eq(zb_model_load("models/zb-1.5b.yaml", &m, &err), ZB_OK);
    ck_assert_int_eq(m.train.precision, ZB_PREC_BF16);
    ck_assert_int_eq(m.arch.hidden / m.arch.heads, 96);
    char buf[256];
    ck_assert_ptr_null(zb_cuda_attention_refusal(true, m.arch.hidden,
                                                 m.arch.heads, 1, buf, sizeof buf));
    ck_assert_ptr_nonnull(zb_cuda_attention_refusal(false, m.arch.hidden,
                                                    m.arch.heads, 1, buf, sizeof buf));
}
END_TEST

START_TEST(ops_cfg_rule) {
    ck_assert_ptr_null(zb_cuda_ops_cfg_refusal(false, false));
    ck_assert_ptr_null(zb_cuda_ops_cfg_refusal(false, true));
    ck_assert_ptr_null(zb_cuda_ops_cfg_refusal(true, true));
    ck_assert_ptr_nonnull(zb_cuda_ops_cfg_refusal(true, false));
    /* the stage's own choice is always accepted */
    for (int b = 0; b < 2; b++)
        ck_assert_ptr_null(zb_cuda_ops_cfg_refusal(b, zb_cuda_attn_gemm(b)));
}
END_TEST

int main(void) {
    Suite *su = suite_create("cuda_choice");
    TCase *tc = tcase_create("cuda_choice");
    tcase_add_test(tc, fused_head_sizes);
    tcase_add_test(tc, attention_limit_only_for_fp32);
    tcase_add_test(tc, shipped_bf16_model_accepted);
    tcase_add_test(tc, ops_cfg_rule);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
