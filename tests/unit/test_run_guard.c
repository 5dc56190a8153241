/* test_run_guard.c - zbrun's guards of issue 20 below the command line:
 * the shell quoting of the resume hint (run_checks.h) (outputs naming one
 * file or an input: test_files.c), the checkpoint folder's fresh-run check
 * and shared lock (checkpoint.h), and the reserved standard descriptors
 * (stdfds.h). Files go to a fresh folder under /tmp. */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "executor/host/stdfds.h"
#include "executor/run/preflight.h"
#include "executor/run/run_checks.h"
#include "executor/state/checkpoint.h"

static char dir[64];

static void make_dir(void) {
    snprintf(dir, sizeof dir, "/tmp/zb_guard_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void remove_dir(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_shell_quote) {
    char out[64];
    zb_shell_quote("ck/run-1_a.yaml", out, sizeof out);
    ck_assert_str_eq(out, "ck/run-1_a.yaml");
    zb_shell_quote("my ck", out, sizeof out);
    ck_assert_str_eq(out, "'my ck'");
    zb_shell_quote("it's", out, sizeof out);
    ck_assert_str_eq(out, "'it'\\''s'");
    zb_shell_quote("", out, sizeof out);
    ck_assert_str_eq(out, "''");
    zb_shell_quote("$(rm -rf x)", out, sizeof out);
    ck_assert_str_eq(out, "'$(rm -rf x)'");
}
END_TEST

START_TEST(test_fresh_and_shared_lock) {
    make_dir();
    zb_err err;
    ck_assert_int_eq(zb_ckpt_check_fresh(dir, &err), ZB_OK);   /* empty */
    char idx[128];
    snprintf(idx, sizeof idx, "%s/latest.yaml", dir);
    FILE *f = fopen(idx, "w");
    ck_assert_ptr_nonnull(f);
    fputs("checkpoint: 2\nstep: 7\n", f);
    fclose(f);
    ck_assert_int_eq(zb_ckpt_check_fresh(dir, &err), ZB_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "holds the checkpoint of step 7"));
    int r1, r2, w;
    ck_assert_int_eq(zb_ckpt_lock(dir, true, &r1, &err), ZB_OK);
    ck_assert_int_eq(zb_ckpt_lock(dir, true, &r2, &err), ZB_OK);   /* readers share */
    ck_assert_int_eq(zb_ckpt_lock(dir, false, &w, &err), ZB_EINPUT);
    zb_ckpt_unlock(r1);
    zb_ckpt_unlock(r2);
    ck_assert_int_eq(zb_ckpt_lock(dir, false, &w, &err), ZB_OK);
    ck_assert_int_eq(zb_ckpt_lock(dir, true, &r1, &err), ZB_EINPUT);
    char want[64];
    snprintf(want, sizeof want, "(pid %ld)", (long)getpid());
    ck_assert_ptr_nonnull(strstr(err.msg, want));
    zb_ckpt_unlock(w);
    remove_dir();
}
END_TEST

START_TEST(test_stdfds_reserved) {
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {   /* stdout closed: the next open must not get fd 1 */
        close(1);
        if (zb_stdfds_reserve() != 0) _exit(2);
        int fd = open("/dev/null", O_RDONLY);
        _exit(fd > 2 && fcntl(1, F_GETFD) != -1 ? 0 : 1);
    }
    int st;
    ck_assert(waitpid(pid, &st, 0) == pid);
    ck_assert(WIFEXITED(st));
    ck_assert_int_eq(WEXITSTATUS(st), 0);
}
END_TEST

static Suite *guard_suite(void) {
    Suite *s = suite_create("run_guard");
    TCase *tc = tcase_create("run_guard");
    tcase_add_test(tc, test_shell_quote);
    tcase_add_test(tc, test_fresh_and_shared_lock);
    tcase_add_test(tc, test_stdfds_reserved);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(guard_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
