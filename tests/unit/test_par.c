/* test_par.c - zb_par_for (planner/par.h): every item runs exactly once on
 * any thread count, a worker id stays below the thread count, and after a
 * failure the lowest failed item's status comes back with every item below
 * it run. */
#include <check.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "planner/par.h"

#define N 5000

typedef struct {
    atomic_int runs[N];
    int threads;
    int fail_from;           /* items >= fail_from whose index is odd fail */
    atomic_int bad_worker;
} job;

static zb_status item(void *arg, int i, int w) {
    job *j = arg;
    atomic_fetch_add(&j->runs[i], 1);
    if (w < 0 || w >= j->threads) atomic_store(&j->bad_worker, 1);
    if (i >= j->fail_from && i % 2) return i % 4 == 1 ? ZB_EINPUT : ZB_ERUNTIME;
    return ZB_OK;
}

static job *new_job(int threads, int fail_from) {
    job *j = calloc(1, sizeof *j);
    ck_assert_ptr_nonnull(j);
    for (int i = 0; i < N; i++) atomic_init(&j->runs[i], 0);
    atomic_init(&j->bad_worker, 0);
    j->threads = threads;
    j->fail_from = fail_from;
    return j;
}

START_TEST(every_item_once) {
    static const int threads[] = {1, 2, 3, 8};
    for (int k = 0; k < 4; k++) {
        job *j = new_job(threads[k], N);
        ck_assert_int_eq(zb_par_for(N, threads[k], item, j), ZB_OK);
        for (int i = 0; i < N; i++) ck_assert_int_eq(atomic_load(&j->runs[i]), 1);
        ck_assert_int_eq(atomic_load(&j->bad_worker), 0);
        free(j);
    }
}
END_TEST

START_TEST(lowest_failure_reported) {
    static const int threads[] = {1, 2, 4, 8};
    for (int k = 0; k < 4; k++) {
        /* item 1001 is the first to fail (ZB_EINPUT: 1001 % 4 == 1) */
        job *j = new_job(threads[k], 1000);
        ck_assert_int_eq(zb_par_for(N, threads[k], item, j), ZB_EINPUT);
        for (int i = 0; i <= 1001; i++) ck_assert_int_eq(atomic_load(&j->runs[i]), 1);
        int ran = 0;
        for (int i = 0; i < N; i++) ran += atomic_load(&j->runs[i]);
        /* the others stop taking items soon after: not all of them ran */
        ck_assert_int_lt(ran, N);
        free(j);
    }
}
END_TEST

START_TEST(thread_counts) {
    ck_assert_int_eq(zb_par_threads(3, 10), 3);
    ck_assert_int_eq(zb_par_threads(3, 2), 2);
    ck_assert_int_eq(zb_par_threads(100, 1000), ZB_PAR_MAX);
    ck_assert_int_eq(zb_par_threads(4, 0), 1);
    int t = zb_par_threads(0, 1000);
    ck_assert_int_ge(t, 1);
    ck_assert_int_le(t, ZB_PAR_MAX);
}
END_TEST

int main(void) {
    Suite *su = suite_create("par");
    TCase *tc = tcase_create("par");
    tcase_add_test(tc, every_item_once);
    tcase_add_test(tc, lowest_failure_reported);
    tcase_add_test(tc, thread_counts);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
