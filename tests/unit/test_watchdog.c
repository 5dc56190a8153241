/* test_watchdog.c - the watchdog (watchdog.h) ends a process stuck in an
 * armed call after its timeout with status 1, and leaves alone a process
 * whose armed calls finish in time. Each case runs in a forked child. */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "executor/host/watchdog.h"

static void sleep_s(double s) {
    struct timespec ts = {(time_t)s, (long)((s - (time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* Run body in a child with stderr into a pipe; return its exit status and
 * what it wrote. */
static int in_child(void (*body)(void), char *out, size_t cap, double *took) {
    int fds[2];
    ck_assert(pipe(fds) == 0);
    double t0 = now_s();
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        body();
        _exit(0);
    }
    close(fds[1]);
    size_t n = 0;
    ssize_t k;
    while (n + 1 < cap && (k = read(fds[0], out + n, cap - 1 - n)) > 0) n += (size_t)k;
    out[n] = '\0';
    close(fds[0]);
    int st;
    ck_assert(waitpid(pid, &st, 0) == pid);
    *took = now_s() - t0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void stuck(void) {
    zb_err err;
    if (zb_watchdog_start(0.3, 5, &err) != ZB_OK) _exit(3);
    zb_watchdog_arm("a test call");
    sleep_s(10);   /* the watchdog must end this long before */
    _exit(0);
}

static void in_time(void) {
    zb_err err;
    if (zb_watchdog_start(0.5, 2, &err) != ZB_OK) _exit(3);
    for (int i = 0; i < 5; i++) {
        zb_watchdog_arm("a quick call");
        sleep_s(0.1);
        zb_watchdog_disarm();
        sleep_s(0.2);   /* disarmed: no deadline */
    }
    zb_watchdog_stop();
    _exit(0);
}

START_TEST(test_stuck_exits) {
    char out[512];
    double took;
    ck_assert_int_eq(in_child(stuck, out, sizeof out, &took), 1);
    ck_assert_msg(strstr(out, "zbrun: rank 5: stuck for 0.3 s in a test call"), "%s", out);
    ck_assert_msg(took < 5, "took %.1f s", took);
}
END_TEST

START_TEST(test_in_time_survives) {
    char out[512];
    double took;
    ck_assert_int_eq(in_child(in_time, out, sizeof out, &took), 0);
    ck_assert_str_eq(out, "");
}
END_TEST

/* A wait armed with a longer limit than the start timeout survives past
 * that timeout, and when stuck the line names its own limit. */
static void long_wait(void) {
    zb_err err;
    if (zb_watchdog_start(0.2, 4, &err) != ZB_OK) _exit(3);
    zb_watchdog_arm_s("a long step", 3.0);
    sleep_s(0.6);   /* three start timeouts: healthy for this wait */
    zb_watchdog_disarm();
    zb_watchdog_arm_s("a stuck step", 0.4);
    sleep_s(10);
    _exit(0);
}

START_TEST(test_scaled_limit) {
    char out[512];
    double took;
    ck_assert_int_eq(in_child(long_wait, out, sizeof out, &took), 1);
    ck_assert_msg(strstr(out, "zbrun: rank 4: stuck for 0.4 s in a stuck step"),
                  "%s", out);
    ck_assert_msg(!strstr(out, "a long step"), "%s", out);
    /* the limits: 10 predicted steps; 30 s + 10 s a rank */
    ck_assert(zb_watchdog_step_s(30.0) == 300.0);
    ck_assert(zb_watchdog_step_s(0.0) == 0.0);
    ck_assert(zb_watchdog_setup_s(8) == 110.0);
}
END_TEST

static Suite *watchdog_suite(void) {
    Suite *s = suite_create("watchdog");
    TCase *tc = tcase_create("watchdog");
    tcase_add_test(tc, test_stuck_exits);
    tcase_add_test(tc, test_in_time_survives);
    tcase_add_test(tc, test_scaled_limit);
    tcase_set_timeout(tc, 30);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(watchdog_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
