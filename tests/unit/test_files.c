/* test_files.c - one way to write a file (common/zb_files.h, zb_afile.h):
 * outputs checked against the inputs a tool registered (by device and
 * inode), against each other however spelled, against checkpoint folders,
 * and written never through a link planted at the temporary name. Files
 * go to a fresh folder under /tmp. */
#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/zb_afile.h"
#include "common/zb_files.h"

static char dir[64];

static void make_dir(void) {
    snprintf(dir, sizeof dir, "/tmp/zb_files_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void remove_dir(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static void put(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

static void in_dir(char *out, size_t cap, const char *name) {
    snprintf(out, cap, "%s/%s", dir, name);
}

START_TEST(test_outputs_same_file) {
    make_dir();
    char a[128], dot[128], up[128], b[128];
    in_dir(a, sizeof a, "a");
    in_dir(dot, sizeof dot, "./a");
    snprintf(up, sizeof up, "%s/../%s/a", dir, strrchr(dir, '/') + 1);
    in_dir(b, sizeof b, "b");
    zb_files fs;
    zb_err err;
    zb_files_init(&fs);
    ck_assert_int_eq(zb_files_output(&fs, "--report", a, &err), ZB_OK);
    ck_assert_int_eq(zb_files_output(&fs, "--trace", dot, &err), ZB_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "name the same file"));
    ck_assert_int_eq(zb_files_output(&fs, "--svg", up, &err), ZB_EINPUT);
    ck_assert_int_eq(zb_files_output(&fs, "--svg", "", &err), ZB_EINPUT);
    ck_assert_str_eq(err.msg, "--svg: the file name is empty");
    ck_assert_int_eq(zb_files_output(&fs, "--svg", b, &err), ZB_OK);
    ck_assert_int_eq(zb_files_output(&fs, "--svg", NULL, &err), ZB_OK);
    ck_assert_int_eq(zb_files_output(&fs, "--profile", dir, &err), ZB_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "is a folder"));
    remove_dir();
}
END_TEST

/* A hard link, a symbolic link and another spelling of an input are all
 * caught; a missing input is no input. */
START_TEST(test_outputs_over_inputs) {
    make_dir();
    char plan[128], hard[128], soft[128], other[128], spelled[160];
    in_dir(plan, sizeof plan, "plan.yaml");
    in_dir(hard, sizeof hard, "hard.yaml");
    in_dir(soft, sizeof soft, "soft.yaml");
    in_dir(other, sizeof other, "other.yaml");
    snprintf(spelled, sizeof spelled, "%s/.//plan.yaml", dir);
    put(plan, "x\n");
    ck_assert_int_eq(link(plan, hard), 0);
    ck_assert_int_eq(symlink("plan.yaml", soft), 0);
    const char *outs[] = {hard, soft, spelled};
    for (int i = 0; i < 3; i++) {
        zb_files fs;
        zb_err err;
        zb_files_init(&fs);
        ck_assert_int_eq(zb_files_input(&fs, "the plan", plan, &err), ZB_OK);
        ck_assert_int_eq(zb_files_input(&fs, "the data", "/nonexistent/zb", &err), ZB_OK);
        ck_assert_int_eq(zb_files_output(&fs, "--svg", outs[i], &err), ZB_EINPUT);
        ck_assert_ptr_nonnull(strstr(err.msg, "would overwrite the plan"));
        ck_assert_int_eq(zb_files_output(&fs, "--svg", other, &err), ZB_OK);
    }
    remove_dir();
}
END_TEST

/* An output in the registered checkpoint folder, in another run's (it
 * holds a .lock, or latest.yaml beside step folders) or in a step folder
 * of one is refused; a folder that merely holds a latest.yaml is not. */
START_TEST(test_outputs_in_checkpoints) {
    make_dir();
    char ck[128], step[160], rank[200], plain[128], p[200];
    in_dir(ck, sizeof ck, "ck");
    snprintf(step, sizeof step, "%s/step-00000002", ck);
    snprintf(rank, sizeof rank, "%s/rank-00000.bin", step);
    in_dir(plain, sizeof plain, "plain");
    ck_assert_int_eq(mkdir(ck, 0777), 0);
    ck_assert_int_eq(mkdir(step, 0777), 0);
    ck_assert_int_eq(mkdir(plain, 0777), 0);
    put(rank, "weights\n");
    snprintf(p, sizeof p, "%s/latest.yaml", plain);
    put(p, "step: 1\n");
    zb_files fs;
    zb_err err;
    zb_files_init(&fs);
    snprintf(p, sizeof p, "%s/report.yaml", plain);
    ck_assert_int_eq(zb_files_output(&fs, "--report", p, &err), ZB_OK);
    snprintf(p, sizeof p, "%s/latest.yaml", ck);
    put(p, "step: 2\n");
    ck_assert_int_eq(zb_files_output(&fs, "--trace", rank, &err), ZB_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "inside a checkpoint folder"));
    snprintf(p, sizeof p, "%s/x.svg", ck);
    ck_assert_int_eq(zb_files_output(&fs, "--svg", p, &err), ZB_EINPUT);
    snprintf(p, sizeof p, "%s/latest.yaml", ck);
    ck_assert_int_eq(unlink(p), 0);
    snprintf(p, sizeof p, "%s/.lock", ck);
    put(p, "");   /* another run's lock alone marks the folder */
    ck_assert_int_eq(zb_files_output(&fs, "--trace", rank, &err), ZB_EINPUT);
    remove_dir();
    /* this run's own folder, registered before it holds anything */
    make_dir();
    in_dir(ck, sizeof ck, "mine");
    ck_assert_int_eq(mkdir(ck, 0777), 0);
    zb_files_init(&fs);
    zb_files_ckpt(&fs, ck);
    snprintf(p, sizeof p, "%s/r.yaml", ck);
    ck_assert_int_eq(zb_files_output(&fs, "--report", p, &err), ZB_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "inside the checkpoint folder"));
    remove_dir();
}
END_TEST

/* A link planted at the temporary file's name is never written through:
 * the file it names keeps its bytes, the output gets the new ones. */
START_TEST(test_tmp_link_not_followed) {
    make_dir();
    char out[128], victim[128], tmp[200];
    in_dir(out, sizeof out, "out.yaml");
    in_dir(victim, sizeof victim, "victim");
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", out, (long)getpid());
    put(victim, "precious\n");
    ck_assert_int_eq(symlink(victim, tmp), 0);
    zb_afile a;
    zb_err err;
    ck_assert_int_eq(zb_afile_open(&a, out, &err), ZB_OK);
    fputs("new\n", a.f);
    ck_assert_int_eq(zb_afile_close(&a, true, &err), ZB_OK);
    char buf[32] = {0};
    FILE *f = fopen(victim, "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(fgets(buf, sizeof buf, f));
    fclose(f);
    ck_assert_str_eq(buf, "precious\n");
    f = fopen(out, "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(fgets(buf, sizeof buf, f));
    fclose(f);
    ck_assert_str_eq(buf, "new\n");
    remove_dir();
}
END_TEST

/* follow false (a checkpoint's files): a link at the path is replaced by
 * the file, what it named is untouched. */
START_TEST(test_nofollow_replaces_link) {
    make_dir();
    char out[128], victim[128];
    in_dir(out, sizeof out, "rank.bin");
    in_dir(victim, sizeof victim, "victim");
    put(victim, "precious\n");
    ck_assert_int_eq(symlink(victim, out), 0);
    zb_afile a;
    zb_err err;
    ck_assert_int_eq(zb_afile_open_mode(&a, out, false, &err), ZB_OK);
    fputs("new\n", a.f);
    ck_assert_int_eq(zb_afile_close(&a, true, &err), ZB_OK);
    struct stat sb;
    ck_assert_int_eq(lstat(out, &sb), 0);
    ck_assert(S_ISREG(sb.st_mode));
    ck_assert_int_eq(stat(victim, &sb), 0);
    ck_assert_int_eq((int)sb.st_size, 9);
    remove_dir();
}
END_TEST

/* A FIFO nobody reads: the open does not block for ever, and the stop
 * flag (a signal already caught) ends the wait at once. Devices and FIFOs
 * pass the check without a temporary file; sockets and block devices do
 * not. */
START_TEST(test_fifo_no_reader) {
    make_dir();
    char fifo[128];
    in_dir(fifo, sizeof fifo, "fifo");
    ck_assert_int_eq(mkfifo(fifo, 0666), 0);
    zb_files fs;
    zb_err err;
    zb_files_init(&fs);
    ck_assert_int_eq(zb_files_output(&fs, "--report", fifo, &err), ZB_OK);
    ck_assert_int_eq(zb_files_output(&fs, "--trace", "/dev/null", &err), ZB_OK);
    static volatile sig_atomic_t flag;
    flag = SIGTERM;
    zb_afile_stop_on(&flag);
    zb_afile a;
    ck_assert_int_eq(zb_afile_open(&a, fifo, &err), ZB_EIO);
    ck_assert_ptr_nonnull(strstr(err.msg, "stopped by a signal"));
    zb_afile_stop_on(NULL);
    remove_dir();
}
END_TEST

static Suite *files_suite(void) {
    Suite *s = suite_create("files");
    TCase *tc = tcase_create("files");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_outputs_same_file);
    tcase_add_test(tc, test_outputs_over_inputs);
    tcase_add_test(tc, test_outputs_in_checkpoints);
    tcase_add_test(tc, test_tmp_link_not_followed);
    tcase_add_test(tc, test_nofollow_replaces_link);
    tcase_add_test(tc, test_fifo_no_reader);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(files_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
