/* test_bootstrap.c - the TCP bootstrap exchange (bootstrap.h) on loopback
 * with several processes (fork): every rank gets rank 0's blob, through
 * zb_bootstrap_bcast for a torchrun-style launch too; a rank started before
 * rank 0 listens still gets it; a missing rank 0, a missing rank and a
 * world mismatch each fail with a clear message within the timeout. */
#include <check.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "executor/comm/bootstrap.h"

#define BLOB 128   /* an ncclUniqueId */

/* A port that was free a moment ago. */
static int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr = {htonl(INADDR_LOOPBACK)}};
    socklen_t len = sizeof a;
    ck_assert(fd >= 0);
    ck_assert(bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
    ck_assert(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
    close(fd);
    return ntohs(a.sin_port);
}

static void fill(unsigned char *b, unsigned seed) {
    for (int i = 0; i < BLOB; i++) b[i] = (unsigned char)(seed * 31 + i * 7);
}

/* Fork a rank that runs the exchange and exits 0 iff it got the blob of
 * seed `seed` (or, with expect_fail, iff it failed naming `word`). */
static pid_t spawn(int port, int rank, int world, unsigned seed, bool expect_fail,
                   const char *word, double delay_s) {
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid > 0) return pid;
    struct timespec ts = {(time_t)delay_s, (long)((delay_s - (time_t)delay_s) * 1e9)};
    nanosleep(&ts, NULL);
    unsigned char got[BLOB], want[BLOB];
    zb_err err = {{0}};
    memset(got, 0, sizeof got);
    fill(want, seed);
    zb_status s = zb_tcp_bcast("localhost", port, rank, world, got, BLOB, 3.0, &err);
    if (expect_fail) _exit(s != ZB_OK && strstr(err.msg, word) ? 0 : 1);
    _exit(s == ZB_OK && !memcmp(got, want, BLOB) ? 0 : 1);
}

static int wait_rc(pid_t pid) {
    int st;
    ck_assert(waitpid(pid, &st, 0) == pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

START_TEST(test_four_ranks) {
    int port = free_port();
    unsigned char blob[BLOB];
    pid_t kids[3];
    /* rank 3 starts before rank 0 listens: it must retry */
    kids[2] = spawn(port, 3, 4, 42, false, NULL, 0);
    struct timespec ts = {0, 300000000};
    nanosleep(&ts, NULL);
    kids[0] = spawn(port, 1, 4, 42, false, NULL, 0);
    kids[1] = spawn(port, 2, 4, 42, false, NULL, 0.2);
    fill(blob, 42);
    zb_launch l = {.kind = ZB_LAUNCH_TORCHRUN, .rank = 0, .world = 4,
                   .master_port = port, .bootstrap_timeout_s = 5};
    strcpy(l.master_addr, "127.0.0.1");
    zb_err err = {{0}};
    ck_assert_msg(zb_bootstrap_bcast(&l, blob, BLOB, &err) == ZB_OK, "%s", err.msg);
    for (int i = 0; i < 3; i++) ck_assert_int_eq(wait_rc(kids[i]), 0);
}
END_TEST

START_TEST(test_no_launcher) {
    zb_launch l = {.kind = ZB_LAUNCH_NONE, .world = 1};
    unsigned char blob[BLOB] = {1};
    zb_err err;
    ck_assert_int_eq(zb_bootstrap_bcast(&l, blob, BLOB, &err), ZB_OK);
    ck_assert_int_eq(blob[0], 1);
}
END_TEST

START_TEST(test_no_rank0) {
    unsigned char blob[BLOB];
    zb_err err = {{0}};
    time_t t0 = time(NULL);
    zb_status s = zb_tcp_bcast("127.0.0.1", free_port(), 1, 2, blob, BLOB, 0.5, &err);
    ck_assert_int_eq(s, ZB_ERUNTIME);
    ck_assert_msg(strstr(err.msg, "rank 1: bootstrap: rank 0 did not listen at 127.0.0.1:"),
                  "%s", err.msg);
    ck_assert(time(NULL) - t0 < 10);
}
END_TEST

START_TEST(test_missing_rank) {
    int port = free_port();
    unsigned char blob[BLOB];
    pid_t kid = spawn(port, 1, 3, 7, false, NULL, 0);
    fill(blob, 7);
    zb_err err = {{0}};
    zb_status s = zb_tcp_bcast("127.0.0.1", port, 0, 3, blob, BLOB, 1.0, &err);
    ck_assert_int_eq(s, ZB_ERUNTIME);
    ck_assert_msg(strstr(err.msg, "only 2 of 3 ranks connected"), "%s", err.msg);
    ck_assert_int_eq(wait_rc(kid), 0);   /* rank 1 itself got the blob */
}
END_TEST

START_TEST(test_world_mismatch) {
    int port = free_port();
    unsigned char blob[BLOB];
    pid_t kid = spawn(port, 1, 3, 7, true, "refused rank 1 of 3", 0);
    fill(blob, 7);
    zb_err err = {{0}};
    zb_status s = zb_tcp_bcast("127.0.0.1", port, 0, 2, blob, BLOB, 3.0, &err);
    ck_assert_int_eq(s, ZB_ERUNTIME);
    ck_assert_msg(strstr(err.msg, "rank 1 of 3") && strstr(err.msg, "world 2"),
                  "%s", err.msg);
    ck_assert_int_eq(wait_rc(kid), 0);
}
END_TEST

static Suite *bootstrap_suite(void) {
    Suite *s = suite_create("bootstrap");
    TCase *tc = tcase_create("tcp");
    tcase_add_test(tc, test_four_ranks);
    tcase_add_test(tc, test_no_launcher);
    tcase_add_test(tc, test_no_rank0);
    tcase_add_test(tc, test_missing_rank);
    tcase_add_test(tc, test_world_mismatch);
    tcase_set_timeout(tc, 30);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(bootstrap_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
