/* test_transport.c - the local transport: point-to-point matching by
 * (peer, tag), size checks, all-reduce results against a serial sum in member
 * order (bitwise), determinism, barriers, and abort waking a blocked rank. */
#include <check.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "executor/comm/transport.h"

typedef struct {
    zb_local_world *w;
    int rank, world;
    void *arg;             /* test specific */
    zb_status st;
    zb_err err;
} worker;

typedef void (*worker_fn)(worker *wk);

typedef struct {
    worker wk;
    worker_fn fn;
} thread_arg;

static void *thread_main(void *p) {
    thread_arg *a = p;
    a->fn(&a->wk);
    return NULL;
}

/* Run fn on `world` threads, one per rank, and join them. */
static void run_world(zb_local_world *w, int world, worker_fn fn, void *arg,
                      worker *out) {
    pthread_t th[64];
    thread_arg args[64];
    ck_assert_int_le(world, 64);
    for (int r = 0; r < world; r++) {
        args[r] = (thread_arg){.wk = {.w = w, .rank = r, .world = world,
                                      .arg = arg, .st = ZB_OK},
                               .fn = fn};
        ck_assert_int_eq(pthread_create(&th[r], NULL, thread_main, &args[r]), 0);
    }
    for (int r = 0; r < world; r++) {
        pthread_join(th[r], NULL);
        if (out) out[r] = args[r].wk;
    }
}

static zb_local_world *new_world(int world, int msgs, size_t floats) {
    zb_local_world *w = NULL;
    zb_err err;
    ck_assert_int_eq(zb_local_world_new(world, msgs, floats, 0, &w, &err), ZB_OK);
    return w;
}

static zb_group world_group(int id, int n) {
    zb_group g = {.id = id, .n = n, .first = 0, .stride = 1};
    return g;
}

/* ---- ping-pong ---- */

static void pingpong(worker *wk) {
    zb_transport *t = zb_local_transport(wk->w, wk->rank);
    float buf[8];
    for (int round = 0; round < 100 && wk->st == ZB_OK; round++) {
        if (wk->rank == 0) {
            for (int i = 0; i < 8; i++) buf[i] = (float)(round * 8 + i);
            wk->st = t->send(t, 1, round, buf, 8, &wk->err);
            if (wk->st == ZB_OK) wk->st = t->recv(t, 1, round, buf, 8, &wk->err);
            for (int i = 0; i < 8 && wk->st == ZB_OK; i++)
                if (buf[i] != (float)(round * 8 + i) + 1.0f) wk->st = ZB_ERUNTIME;
        } else {
            wk->st = t->recv(t, 0, round, buf, 8, &wk->err);
            for (int i = 0; i < 8; i++) buf[i] += 1.0f;
            if (wk->st == ZB_OK) wk->st = t->send(t, 0, round, buf, 8, &wk->err);
        }
    }
}

START_TEST(test_pingpong) {
    zb_local_world *w = new_world(2, 2, 8);
    worker out[2];
    run_world(w, 2, pingpong, NULL, out);
    ck_assert_msg(out[0].st == ZB_OK, "%s", out[0].err.msg);
    ck_assert_msg(out[1].st == ZB_OK, "%s", out[1].err.msg);
    zb_local_world_free(w);
}
END_TEST

/* ---- out-of-order tags: rank 0 sends tags 0..N-1, rank 1 receives them in
 * reverse; the send buffer is overwritten right after each send (buffered). */

enum { N_OOO = 6 };

static void out_of_order(worker *wk) {
    zb_transport *t = zb_local_transport(wk->w, wk->rank);
    float buf[4];
    if (wk->rank == 0) {
        for (int tag = 0; tag < N_OOO && wk->st == ZB_OK; tag++) {
            for (int i = 0; i < 4; i++) buf[i] = (float)(100 * tag + i);
            wk->st = t->send(t, 1, tag, buf, 4, &wk->err);
            memset(buf, 0xff, sizeof buf);
        }
    } else {
        for (int tag = N_OOO - 1; tag >= 0 && wk->st == ZB_OK; tag--) {
            wk->st = t->recv(t, 0, tag, buf, 4, &wk->err);
            for (int i = 0; i < 4 && wk->st == ZB_OK; i++)
                if (buf[i] != (float)(100 * tag + i)) wk->st = ZB_ERUNTIME;
        }
    }
}

START_TEST(test_out_of_order) {
    zb_local_world *w = new_world(2, N_OOO, 4);
    worker out[2];
    run_world(w, 2, out_of_order, NULL, out);
    ck_assert_msg(out[0].st == ZB_OK, "%s", out[0].err.msg);
    ck_assert_msg(out[1].st == ZB_OK, "%s", out[1].err.msg);
    zb_local_world_free(w);
}
END_TEST

/* Same tag from two different peers must not be confused. */
static void same_tag(worker *wk) {
    zb_transport *t = zb_local_transport(wk->w, wk->rank);
    float x = (float)wk->rank;
    if (wk->rank > 0) {
        wk->st = t->send(t, 0, 7, &x, 1, &wk->err);
        return;
    }
    for (int peer = wk->world - 1; peer >= 1 && wk->st == ZB_OK; peer--) {
        wk->st = t->recv(t, peer, 7, &x, 1, &wk->err);
        if (wk->st == ZB_OK && x != (float)peer) wk->st = ZB_ERUNTIME;
    }
}

START_TEST(test_same_tag_peers) {
    zb_local_world *w = new_world(5, 4, 1);
    worker out[5];
    run_world(w, 5, same_tag, NULL, out);
    for (int r = 0; r < 5; r++) ck_assert_msg(out[r].st == ZB_OK, "%s", out[r].err.msg);
    zb_local_world_free(w);
}
END_TEST

/* ---- size mismatch names both ranks and the tag ---- */

static void mismatch(worker *wk) {
    zb_transport *t = zb_local_transport(wk->w, wk->rank);
    float buf[4] = {0};
    if (wk->rank == 0) wk->st = t->send(t, 1, 42, buf, 3, &wk->err);
    else wk->st = t->recv(t, 0, 42, buf, 4, &wk->err);
}

START_TEST(test_size_mismatch) {
    zb_local_world *w = new_world(2, 1, 4);
    worker out[2];
    run_world(w, 2, mismatch, NULL, out);
    ck_assert_int_eq(out[0].st, ZB_OK);
    ck_assert_int_eq(out[1].st, ZB_ERUNTIME);
    ck_assert_ptr_nonnull(strstr(out[1].err.msg, "from rank 0"));
    ck_assert_ptr_nonnull(strstr(out[1].err.msg, "tag 42"));
    ck_assert_ptr_nonnull(strstr(out[1].err.msg, "rank 1 expected 4"));
    zb_local_world_free(w);
}
END_TEST

START_TEST(test_send_limits) {
    zb_local_world *w = new_world(2, 1, 4);
    zb_transport *t = zb_local_transport(w, 0);
    zb_err err;
    float buf[8] = {0};
    ck_assert_int_eq(t->send(t, 1, 0, buf, 8, &err), ZB_ERUNTIME); /* too big */
    ck_assert_int_eq(t->send(t, 1, 0, buf, 4, &err), ZB_OK);
    ck_assert_int_eq(t->send(t, 1, 1, buf, 4, &err), ZB_ERUNTIME); /* inbox full */
    ck_assert_ptr_nonnull(strstr(err.msg, "inbox full"));
    ck_assert_int_eq(t->send(t, 2, 0, buf, 4, &err), ZB_ERUNTIME); /* no rank 2 */
    ck_assert_ptr_null(zb_local_transport(w, 2));
    zb_local_world_free(w);
}
END_TEST

/* ---- many threads: every rank sends to every other rank, receives in
 * random order ---- */

static void all_to_all(worker *wk) {
    zb_transport *t = zb_local_transport(wk->w, wk->rank);
    int n = wk->world;
    float buf[16];
    for (int peer = 0; peer < n && wk->st == ZB_OK; peer++) {
        for (int i = 0; i < 16; i++) buf[i] = (float)(wk->rank * 1000 + peer * 16 + i);
        wk->st = t->send(t, peer, wk->rank, buf, 16, &wk->err);
    }
    unsigned seed = (unsigned)wk->rank * 2654435761u;
    int order[64];
    for (int i = 0; i < n; i++) order[i] = i;
    for (int i = n - 1; i > 0; i--) {
        seed = seed * 1103515245u + 12345u;
        int j = (int)(seed % (unsigned)(i + 1));
        int tmp = order[i]; order[i] = order[j]; order[j] = tmp;
    }
    for (int k = 0; k < n && wk->st == ZB_OK; k++) {
        int peer = order[k];
        wk->st = t->recv(t, peer, peer, buf, 16, &wk->err);
        for (int i = 0; i < 16 && wk->st == ZB_OK; i++)
            if (buf[i] != (float)(peer * 1000 + wk->rank * 16 + i)) wk->st = ZB_ERUNTIME;
    }
}

START_TEST(test_many_threads) {
    int n = 32;
    zb_local_world *w = new_world(n, n, 16);
    worker out[32];
    run_world(w, n, all_to_all, NULL, out);
    for (int r = 0; r < n; r++) ck_assert_msg(out[r].st == ZB_OK, "%s", out[r].err.msg);
    zb_local_world_free(w);
}
END_TEST

/* ---- all-reduce ---- */

enum { AR_N = 1001 };   /* not a multiple of the member count: uneven slices */

/* Deterministic values with very different magnitudes so that the summation
 * order matters in float. */
static float ar_value(int rank, int k) {
    uint32_t h = (uint32_t)(rank * 7919 + k * 104729) * 2654435761u;
    float mag = (float)(1 << (h % 20));
    return ((float)(h >> 8) / 16777216.0f - 0.5f) * mag;
}

typedef struct {
    const zb_group *groups;  /* [world] the group of each rank */
    float *results;          /* [world][AR_N] */
    double *results64;       /* [world][AR_N] */
    int rounds;
} ar_arg;

static void allreduce_worker(worker *wk) {
    ar_arg *a = wk->arg;
    zb_transport *t = zb_local_transport(wk->w, wk->rank);
    float *x = a->results + (size_t)wk->rank * AR_N;
    double *y = a->results64 + (size_t)wk->rank * AR_N;
    for (int round = 0; round < a->rounds && wk->st == ZB_OK; round++) {
        for (int k = 0; k < AR_N; k++) {
            x[k] = ar_value(wk->rank + round, k);
            y[k] = (double)ar_value(wk->rank + round, k) * 1e-3;
        }
        wk->st = t->allreduce(t, &a->groups[wk->rank], x, AR_N, &wk->err);
        if (wk->st == ZB_OK)
            wk->st = t->allreduce_f64(t, &a->groups[wk->rank], y, AR_N, &wk->err);
    }
}

/* Groups of `size` consecutive ranks: member order = rank order. */
static void make_groups(zb_group *g, int world, int size, int id0) {
    for (int r = 0; r < world; r++) {
        int base = r / size * size;
        g[r] = (zb_group){.id = id0 + base / size, .n = size, .first = base,
                          .stride = 1};
    }
}

static void check_allreduce(int world, int size, int rounds) {
    zb_group groups[64];
    make_groups(groups, world, size, 100);
    ar_arg a = {.groups = groups, .rounds = rounds};
    a.results = calloc((size_t)world * AR_N, sizeof(float));
    a.results64 = calloc((size_t)world * AR_N, sizeof(double));
    ck_assert_ptr_nonnull(a.results);
    ck_assert_ptr_nonnull(a.results64);
    zb_local_world *w = new_world(world, 1, 1);
    worker out[64];
    run_world(w, world, allreduce_worker, &a, out);
    for (int r = 0; r < world; r++) ck_assert_msg(out[r].st == ZB_OK, "%s", out[r].err.msg);
    int last = rounds - 1;
    for (int r = 0; r < world; r++) {
        int base = r / size * size;
        for (int k = 0; k < AR_N; k++) {
            /* serial reference: member 0 + member 1 + ... in float */
            float s = ar_value(base + last, k);
            double s64 = (double)ar_value(base + last, k) * 1e-3;
            for (int i = 1; i < size; i++) {
                s += ar_value(base + i + last, k);
                s64 += (double)ar_value(base + i + last, k) * 1e-3;
            }
            float got = a.results[(size_t)r * AR_N + k];
            double got64 = a.results64[(size_t)r * AR_N + k];
            ck_assert_msg(memcmp(&got, &s, sizeof s) == 0,
                          "rank %d elem %d: %.9g vs serial %.9g", r, k, got, s);
            ck_assert_msg(memcmp(&got64, &s64, sizeof s64) == 0,
                          "rank %d elem %d (f64)", r, k);
        }
    }
    zb_local_world_free(w);
    free(a.results);
    free(a.results64);
}

START_TEST(test_allreduce_world) { check_allreduce(7, 7, 3); }
END_TEST

START_TEST(test_allreduce_subgroups) { check_allreduce(12, 4, 5); }
END_TEST

START_TEST(test_allreduce_single) { check_allreduce(3, 1, 2); }
END_TEST

/* Two runs give bitwise identical results (on top of the serial check). */
START_TEST(test_allreduce_deterministic) {
    int world = 8;
    zb_group groups[8];
    make_groups(groups, world, world, 1);
    float *first = NULL;
    for (int run = 0; run < 3; run++) {
        ar_arg a = {.groups = groups, .rounds = 1};
        a.results = calloc((size_t)world * AR_N, sizeof(float));
        a.results64 = calloc((size_t)world * AR_N, sizeof(double));
        zb_local_world *w = new_world(world, 1, 1);
        run_world(w, world, allreduce_worker, &a, NULL);
        zb_local_world_free(w);
        free(a.results64);
        if (!first) first = a.results;
        else {
            ck_assert(memcmp(first, a.results, (size_t)world * AR_N * sizeof(float)) == 0);
            free(a.results);
        }
    }
    free(first);
}
END_TEST

static void ar_mismatch(worker *wk) {
    zb_transport *t = zb_local_transport(wk->w, wk->rank);
    zb_group g = world_group(3, wk->world);
    float buf[4] = {1, 2, 3, 4};
    wk->st = t->allreduce(t, &g, buf, wk->rank == 1 ? 3 : 4, &wk->err);
}

START_TEST(test_allreduce_len_mismatch) {
    zb_local_world *w = new_world(3, 1, 1);
    worker out[3];
    run_world(w, 3, ar_mismatch, NULL, out);
    for (int r = 0; r < 3; r++) {
        ck_assert_int_eq(out[r].st, ZB_ERUNTIME);
        ck_assert_ptr_nonnull(strstr(out[r].err.msg, "elements"));
    }
    zb_local_world_free(w);
}
END_TEST

START_TEST(test_reduce_bound) {
    zb_local_world *w = NULL;
    zb_err err;
    ck_assert_int_eq(zb_local_world_new(1, 1, 1, 2, &w, &err), ZB_OK);
    zb_transport *t = zb_local_transport(w, 0);
    zb_group g = world_group(0, 1);
    float x[3] = {1, 2, 3};
    ck_assert_int_eq(t->allreduce(t, &g, x, 2, &err), ZB_OK);
    ck_assert_int_eq(t->allreduce(t, &g, x, 3, &err), ZB_ERUNTIME);
    zb_group other = world_group(1, 1);
    zb_group stranger = {.id = 2, .n = 1, .first = 5, .stride = 1};
    ck_assert_int_eq(t->barrier(t, &stranger, &err), ZB_ERUNTIME);
    ck_assert_int_eq(t->barrier(t, &other, &err), ZB_OK);
    zb_local_world_free(w);
    ck_assert_int_eq(zb_local_world_new(0, 1, 1, 0, &w, &err), ZB_ERUNTIME);
    ck_assert_ptr_null(w);
}
END_TEST

/* ---- barrier: nobody passes barrier k before everyone reached it ---- */

typedef struct {
    int counter;             /* atomically incremented */
    int bad;
} barrier_arg;

static void barrier_worker(worker *wk) {
    barrier_arg *a = wk->arg;
    zb_transport *t = zb_local_transport(wk->w, wk->rank);
    zb_group g = world_group(9, wk->world);
    for (int k = 1; k <= 20 && wk->st == ZB_OK; k++) {
        __atomic_add_fetch(&a->counter, 1, __ATOMIC_SEQ_CST);
        wk->st = t->barrier(t, &g, &wk->err);
        if (__atomic_load_n(&a->counter, __ATOMIC_SEQ_CST) < k * wk->world)
            __atomic_store_n(&a->bad, 1, __ATOMIC_SEQ_CST);
        if (wk->st == ZB_OK) wk->st = t->barrier(t, &g, &wk->err);
    }
}

START_TEST(test_barrier) {
    barrier_arg a = {0, 0};
    zb_local_world *w = new_world(9, 1, 1);
    worker out[9];
    run_world(w, 9, barrier_worker, &a, out);
    for (int r = 0; r < 9; r++) ck_assert_msg(out[r].st == ZB_OK, "%s", out[r].err.msg);
    ck_assert_int_eq(a.bad, 0);
    ck_assert_int_eq(a.counter, 9 * 20);
    zb_local_world_free(w);
}
END_TEST

/* ---- abort: rank 0 blocks in recv (and ranks 2.. in a barrier) for a
 * message that never comes; rank 1 aborts after a short sleep. ---- */

static void abort_worker(worker *wk) {
    zb_transport *t = zb_local_transport(wk->w, wk->rank);
    float x;
    zb_group g = world_group(5, wk->world);
    if (wk->rank == 0) {
        wk->st = t->recv(t, 1, 3, &x, 1, &wk->err);
    } else if (wk->rank == 1) {
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
        t->abort(t);
        /* everything after the abort fails too */
        if (t->send(t, 0, 3, &x, 1, &wk->err) != ZB_ERUNTIME) wk->st = ZB_EIO;
    } else {
        wk->st = t->barrier(t, &g, &wk->err);
    }
}

START_TEST(test_abort_unblocks) {
    zb_local_world *w = new_world(4, 1, 1);
    worker out[4];
    run_world(w, 4, abort_worker, NULL, out);
    ck_assert_int_eq(out[0].st, ZB_ERUNTIME);
    ck_assert_ptr_nonnull(strstr(out[0].err.msg, "aborted"));
    ck_assert_int_eq(out[1].st, ZB_OK);
    ck_assert_int_eq(out[2].st, ZB_ERUNTIME);
    ck_assert_int_eq(out[3].st, ZB_ERUNTIME);
    zb_local_world_free(w);
}
END_TEST

/* ---- groups as arithmetic progressions: membership and checks ---- */
START_TEST(test_group_member) {
    zb_transport t = {.rank = 70, .world = 300};
    zb_err err;
    int me = -2;
    zb_group dp = {.id = 1, .n = 100, .first = 10, .stride = 3};  /* 10 .. 307 */
    ck_assert_int_eq(zb_group_member(&t, &dp, &me, &err), ZB_ERUNTIME); /* 307 >= 300 */
    dp.n = 90;                                   /* 10 .. 277 */
    ck_assert_int_eq(zb_group_member(&t, &dp, &me, &err), ZB_OK);
    ck_assert_int_eq(me, 20);                    /* 10 + 20 * 3 = 70 */
    ck_assert_int_eq(zb_group_rank(&dp, me), 70);
    dp.first = 11;                               /* 11, 14, ...: 70 not in it */
    ck_assert_int_eq(zb_group_member(&t, &dp, &me, &err), ZB_ERUNTIME);
    zb_group down = {.id = 2, .n = 2, .first = 90, .stride = -20}; /* 90, 70 */
    ck_assert_int_eq(zb_group_member(&t, &down, &me, &err), ZB_OK);
    ck_assert_int_eq(me, 1);
    zb_group flat = {.id = 3, .n = 2, .first = 70, .stride = 0};
    ck_assert_int_eq(zb_group_member(&t, &flat, &me, &err), ZB_ERUNTIME);
    zb_group lone = {.id = 4, .n = 1, .first = 70, .stride = 0};
    ck_assert_int_eq(zb_group_member(&t, &lone, &me, &err), ZB_OK);
    ck_assert_int_eq(me, 0);
    zb_group below = {.id = 5, .n = 3, .first = 10, .stride = -10}; /* 10, 0, -10 */
    ck_assert_int_eq(zb_group_member(&t, &below, &me, &err), ZB_ERUNTIME);
}
END_TEST

static Suite *transport_suite(void) {
    Suite *s = suite_create("transport_local");
    TCase *p2p = tcase_create("p2p");
    tcase_add_test(p2p, test_pingpong);
    tcase_add_test(p2p, test_out_of_order);
    tcase_add_test(p2p, test_same_tag_peers);
    tcase_add_test(p2p, test_size_mismatch);
    tcase_add_test(p2p, test_send_limits);
    tcase_add_test(p2p, test_many_threads);
    suite_add_tcase(s, p2p);
    TCase *coll = tcase_create("collectives");
    tcase_add_test(coll, test_group_member);
    tcase_add_test(coll, test_allreduce_world);
    tcase_add_test(coll, test_allreduce_subgroups);
    tcase_add_test(coll, test_allreduce_single);
    tcase_add_test(coll, test_allreduce_deterministic);
    tcase_add_test(coll, test_allreduce_len_mismatch);
    tcase_add_test(coll, test_reduce_bound);
    tcase_add_test(coll, test_barrier);
    tcase_add_test(coll, test_abort_unblocks);
    tcase_set_timeout(coll, 60);
    suite_add_tcase(s, coll);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(transport_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
