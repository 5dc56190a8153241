/* test_blas_env.c - the OpenBLAS kernel choice (executor/host/blas_env.h): the
 * core type each CPU feature set maps to, the vector class of OpenBLAS's
 * core names, when a better core is asked for (a weaker detected one) and
 * when not (as good, or a name not known here), and the describe line. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "executor/host/blas_env.h"

static zb_cpu_features feats(int level) {
    zb_cpu_features f = {0};
    f.sse3 = f.ssse3 = f.sse42 = true;
    if (level >= 1) f.avx = true;
    if (level >= 2) f.avx2 = f.fma = true;
    if (level >= 3) f.avx512 = true;
    if (level >= 4) f.avx512_bf16 = true;
    return f;
}

START_TEST(test_core_for_features) {
    zb_cpu_features none = {0};
    ck_assert_str_eq(zb_blas_core_for(&none), "Prescott");
    zb_cpu_features f = feats(0);
    ck_assert_str_eq(zb_blas_core_for(&f), "Nehalem");
    f = feats(1);
    ck_assert_str_eq(zb_blas_core_for(&f), "Sandybridge");
    f = feats(2);
    ck_assert_str_eq(zb_blas_core_for(&f), "Haswell");
    f = feats(3);
    ck_assert_str_eq(zb_blas_core_for(&f), "SkylakeX");
    /* AVX512-BF16: Cooper Lake runs Cooperlake kernels; Sapphire Rapids
     * (model 0x8F) runs SkylakeX under OpenBLAS 0.3.21 */
    f = feats(4);
    ck_assert_str_eq(zb_blas_core_for(&f), "SkylakeX");
    f.family = 6, f.model = 0x55;
    ck_assert_str_eq(zb_blas_core_for(&f), "Cooperlake");
    f.model = 0x8F;
    ck_assert_str_eq(zb_blas_core_for(&f), "SkylakeX");
    /* AMD with AVX2: Zen kernels (AVX-512 Zen 4: SkylakeX) */
    f = feats(2);
    f.amd = true, f.family = 0x19;
    ck_assert_str_eq(zb_blas_core_for(&f), "Zen");
    f = feats(3);
    f.amd = true;
    ck_assert_str_eq(zb_blas_core_for(&f), "SkylakeX");
    /* AVX2 without FMA is not a Haswell kernel */
    f = feats(2);
    f.fma = false;
    ck_assert_str_eq(zb_blas_core_for(&f), "Sandybridge");
}
END_TEST

START_TEST(test_core_levels) {
    ck_assert_int_eq(zb_blas_core_level("Prescott"), 0);
    ck_assert_int_eq(zb_blas_core_level("PRESCOTT"), 0);
    ck_assert_int_eq(zb_blas_core_level("Sandybridge"), 1);
    ck_assert_int_eq(zb_blas_core_level("Zen"), 2);
    ck_assert_int_eq(zb_blas_core_level("Haswell"), 2);
    ck_assert_int_eq(zb_blas_core_level("SkylakeX"), 3);
    ck_assert_int_eq(zb_blas_core_level("Cooperlake"), 3);
    ck_assert_int_eq(zb_blas_core_level("NeoverseN1"), -1);
    ck_assert_int_eq(zb_blas_core_level(NULL), -1);
}
END_TEST

START_TEST(test_better_core) {
    zb_cpu_features f = feats(4);
    f.family = 6, f.model = 0x55;   /* Cooper Lake */
    /* the case: a virtualised AVX-512 CPU detected as Prescott */
    ck_assert_str_eq(zb_blas_better_core("Prescott", &f), "Cooperlake");
    ck_assert_str_eq(zb_blas_better_core("Haswell", &f), "Cooperlake");
    /* as good already (same vector class): leave it */
    ck_assert_ptr_null(zb_blas_better_core("SkylakeX", &f));
    ck_assert_ptr_null(zb_blas_better_core("Cooperlake", &f));
    /* unknown names are never overridden */
    ck_assert_ptr_null(zb_blas_better_core("NeoverseN1", &f));
    /* a CPU weaker than the detected core: never downgrade */
    f = feats(1);
    ck_assert_ptr_null(zb_blas_better_core("Haswell", &f));
    f = feats(2);
    ck_assert_str_eq(zb_blas_better_core("Nehalem", &f), "Haswell");
    /* an AMD CPU detected as Prescott gets Zen; detected as Zen: kept */
    f.amd = true;
    ck_assert_str_eq(zb_blas_better_core("Prescott", &f), "Zen");
    ck_assert_ptr_null(zb_blas_better_core("Zen", &f));
}
END_TEST

/* This machine: the describe line names OpenBLAS and the kernel in use,
 * and the detected CPU's best core is one of the known names. */
START_TEST(test_describe_this_machine) {
    char buf[256];
    zb_blas_describe(buf, sizeof buf);
    ck_assert_msg(strstr(buf, "OpenBLAS") != NULL, "%s", buf);
    ck_assert_msg(strstr(buf, "kernels") != NULL, "%s", buf);
    zb_cpu_features f;
    zb_cpu_detect(&f);
    ck_assert_int_ge(zb_blas_core_level(zb_blas_core_for(&f)), 0);
    /* AVX-512 implies the lower levels */
    if (f.avx512) ck_assert(f.avx2 && f.avx);
}
END_TEST

int main(void) {
    Suite *su = suite_create("blas_env");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_core_for_features);
    tcase_add_test(tc, test_core_levels);
    tcase_add_test(tc, test_better_core);
    tcase_add_test(tc, test_describe_this_machine);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
