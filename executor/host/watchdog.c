/* watchdog.c - see watchdog.h. One thread, one mutex: the armed call's
 * name and its deadline; the thread sleeps until the deadline (or a
 * change) and exits the process when an armed deadline passes. */
#include "executor/host/watchdog.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static struct {
    bool running, stop;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;     /* on CLOCK_MONOTONIC */
    const char *what;      /* NULL: disarmed */
    struct timespec deadline;
    double timeout_s;
    double armed_s;        /* the armed wait's limit */
    int rank;
} wd = {.mu = PTHREAD_MUTEX_INITIALIZER};

static bool passed(const struct timespec *d) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec > d->tv_sec ||
           (now.tv_sec == d->tv_sec && now.tv_nsec >= d->tv_nsec);
}

static void *watch(void *arg) {
    (void)arg;
    pthread_mutex_lock(&wd.mu);
    while (!wd.stop) {
        if (!wd.what) {
            pthread_cond_wait(&wd.cv, &wd.mu);
            continue;
        }
        if (passed(&wd.deadline)) {
            fprintf(stderr, "zbrun: rank %d: stuck for %g s in %s (a peer "
                    "process failed?); exiting\n", wd.rank, wd.armed_s, wd.what);
            fflush(stderr);
            _exit(1);
        }
        pthread_cond_timedwait(&wd.cv, &wd.mu, &wd.deadline);
    }
    pthread_mutex_unlock(&wd.mu);
    return NULL;
}

zb_status zb_watchdog_start(double timeout_s, int rank, zb_err *err) {
    pthread_condattr_t ca;
    if (wd.running) return ZB_OK;
    wd.timeout_s = timeout_s;
    wd.rank = rank;
    wd.stop = false;
    wd.what = NULL;
    if (pthread_condattr_init(&ca) != 0 ||
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) != 0 ||
        pthread_cond_init(&wd.cv, &ca) != 0)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: cannot set up the watchdog", rank);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&wd.th, NULL, watch, NULL) != 0) {
        pthread_cond_destroy(&wd.cv);
        return zb_fail(err, ZB_ERUNTIME, "rank %d: cannot start the watchdog "
                       "thread", rank);
    }
    wd.running = true;
    return ZB_OK;
}

double zb_watchdog_step_s(double step_s) {
    return step_s > 0 ? 10.0 * step_s : 0.0;
}

double zb_watchdog_setup_s(int world) {
    return 30.0 + 10.0 * (world > 0 ? world : 0);
}

void zb_watchdog_arm(const char *what) { zb_watchdog_arm_s(what, 0.0); }

void zb_watchdog_arm_s(const char *what, double at_least_s) {
    if (!wd.running) return;
    pthread_mutex_lock(&wd.mu);
    clock_gettime(CLOCK_MONOTONIC, &wd.deadline);
    double limit = at_least_s > wd.timeout_s ? at_least_s : wd.timeout_s;
    wd.armed_s = limit;
    long whole = (long)limit;
    wd.deadline.tv_sec += whole;
    wd.deadline.tv_nsec += (long)((limit - (double)whole) * 1e9);
    if (wd.deadline.tv_nsec >= 1000000000L) {
        wd.deadline.tv_sec++;
        wd.deadline.tv_nsec -= 1000000000L;
    }
    wd.what = what;
    pthread_cond_signal(&wd.cv);
    pthread_mutex_unlock(&wd.mu);
}

void zb_watchdog_disarm(void) {
    if (!wd.running) return;
    pthread_mutex_lock(&wd.mu);
    wd.what = NULL;
    pthread_cond_signal(&wd.cv);
    pthread_mutex_unlock(&wd.mu);
}

void zb_watchdog_stop(void) {
    if (!wd.running) return;
    pthread_mutex_lock(&wd.mu);
    wd.stop = true;
    pthread_cond_signal(&wd.cv);
    pthread_mutex_unlock(&wd.mu);
    pthread_join(wd.th, NULL);
    pthread_cond_destroy(&wd.cv);
    wd.running = false;
}
