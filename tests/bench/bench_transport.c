/* bench_transport.c - latency of the local transport (numbers, not
 * pass/fail): two rank threads play ping-pong, rank 0 sends a message and
 * waits for rank 1's reply of the same size. One-way latency per message =
 * round trip / 2, median over ZB_PINGS round trips, for an empty-ish
 * message (1 float) and the tiny model's activation (micro 2 x 64 tokens x
 * 64 hidden = 8192 floats). The wake-up of a blocked receiver dominates the
 * small case; the copy shows in the large one. `uptime` load is printed:
 * when both threads cannot have a core each, the numbers measure the
 * scheduler, not the transport.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "executor/comm/transport.h"

#define ZB_PINGS 2001

typedef struct {
    zb_local_world *w;
    int rank;
    size_t n;
    float *buf;
    double *rtt;           /* rank 0: [ZB_PINGS] round trips, seconds */
    zb_status st;
} pinger;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static void *ping_main(void *arg) {
    pinger *p = arg;
    zb_transport *t = zb_local_transport(p->w, p->rank);
    zb_err err;
    int other = 1 - p->rank;
    for (int i = 0; i < ZB_PINGS && p->st == ZB_OK; i++) {
        double t0 = now_s();
        if (p->rank == 0) {
            p->st = t->send(t, other, i, p->buf, p->n, &err);
            if (p->st == ZB_OK) p->st = t->recv(t, other, i, p->buf, p->n, &err);
            p->rtt[i] = now_s() - t0;
        } else {
            p->st = t->recv(t, other, i, p->buf, p->n, &err);
            if (p->st == ZB_OK) p->st = t->send(t, other, i, p->buf, p->n, &err);
        }
    }
    if (p->st != ZB_OK) fprintf(stderr, "rank %d: %s\n", p->rank, err.msg);
    return NULL;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int one_size(size_t n) {
    zb_local_world *w;
    zb_err err;
    if (zb_local_world_new(2, 4, n, 0, &w, &err) != ZB_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    double *rtt = calloc(ZB_PINGS, sizeof *rtt);
    float *b0 = calloc(n, sizeof *b0), *b1 = calloc(n, sizeof *b1);
    pinger p[2] = {{w, 0, n, b0, rtt, ZB_OK}, {w, 1, n, b1, NULL, ZB_OK}};
    pthread_t th[2];
    int rc = !rtt || !b0 || !b1;
    for (int r = 0; r < 2 && !rc; r++)
        rc = pthread_create(&th[r], NULL, ping_main, &p[r]) != 0;
    if (!rc) {
        for (int r = 0; r < 2; r++) pthread_join(th[r], NULL);
        rc = p[0].st != ZB_OK || p[1].st != ZB_OK;
    }
    if (!rc) {
        qsort(rtt, ZB_PINGS, sizeof *rtt, cmp_double);
        printf("%8zu floats  one-way median %7.1f us  p90 %7.1f us\n", n,
               rtt[ZB_PINGS / 2] / 2 * 1e6, rtt[ZB_PINGS * 9 / 10] / 2 * 1e6);
    }
    free(rtt);
    free(b0);
    free(b1);
    zb_local_world_free(w);
    return rc;
}

int main(void) {
    double load[1] = {0};
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &load[0]) != 1) load[0] = -1;
        fclose(f);
    }
    printf("local transport ping-pong (2 rank threads; load average %.2f)\n", load[0]);
    return one_size(1) || one_size(8192);
}
