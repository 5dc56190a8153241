/* test_transport_mpi.c - the MPI transport (transport_mpi.h) under
 * `mpirun -np 3` (tests/e2e/zbrun_mpi.sh runs it; it is no Check test:
 * Check's forks and MPI do not mix). Each process checks, and exits 1 on
 * the first failure with a line naming it:
 *  - all-reduce (f32 and f64) over the world, over pairs and over a
 *    one-member group equals, bitwise, the sum of every member's data in
 *    member order (each process regenerates all members' data from seeds),
 *    the local transport's order; with more elements than one staging
 *    chunk too; every member gets the same bits;
 *  - messages: more than the staging slots, received in another order
 *    than sent, matched by tag;
 *  - a receive of the wrong size fails naming both ranks;
 *  - barrier.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "executor/comm/transport_mpi.h"

static int me = -1;
static int failures;

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "rank %d: FAIL %s:%d: ", me, __FILE__, __LINE__);  \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
            failures++;                                                        \
        }                                                                      \
    } while (0)

/* Deterministic values of member `who` for test `seed`, of mixed scale so
 * that the summation order shows in the low bits. */
static double value(unsigned seed, int who, size_t k) {
    uint64_t x = (seed * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)who << 40) ^ k;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    double u = (double)(x >> 11) / 9007199254740992.0 - 0.5;
    return u * ((k % 7 == 0) ? 1e4 : (k % 3 == 0) ? 1e-3 : 1.0);
}

static void test_allreduce(zb_transport *t, const zb_group *g, size_t n,
                           unsigned seed) {
    int idx = -1;
    for (int i = 0; i < g->n; i++) if (zb_group_rank(g, i) == t->rank) idx = i;
    if (idx < 0) return;
    float *f = malloc(n * sizeof *f), *fw = malloc(n * sizeof *fw);
    double *d = malloc(n * sizeof *d), *dw = malloc(n * sizeof *dw);
    if (!f || !fw || !d || !dw) { fprintf(stderr, "out of memory\n"); exit(1); }
    for (size_t k = 0; k < n; k++) {
        f[k] = (float)value(seed, zb_group_rank(g, idx), k);
        d[k] = value(seed + 1, zb_group_rank(g, idx), k);
        fw[k] = (float)value(seed, zb_group_rank(g, 0), k);
        dw[k] = value(seed + 1, zb_group_rank(g, 0), k);
        for (int i = 1; i < g->n; i++) {   /* member order, as documented */
            fw[k] += (float)value(seed, zb_group_rank(g, i), k);
            dw[k] += value(seed + 1, zb_group_rank(g, i), k);
        }
    }
    zb_err err = {{0}};
    zb_status s = t->allreduce(t, g, f, n, &err);
    CHECK(s == ZB_OK, "allreduce group %d n %zu: %s", g->id, n, err.msg);
    s = t->allreduce_f64(t, g, d, n, &err);
    CHECK(s == ZB_OK, "allreduce_f64 group %d n %zu: %s", g->id, n, err.msg);
    CHECK(!memcmp(f, fw, n * sizeof *f), "f32 sums of group %d (n %zu) are not "
          "bitwise the member-order sums", g->id, n);
    CHECK(!memcmp(d, dw, n * sizeof *d), "f64 sums of group %d (n %zu) are not "
          "bitwise the member-order sums", g->id, n);
    free(f); free(fw); free(d); free(dw);
}

/* Rank 0 sends 12 small tagged messages to rank 1 (more than the 4
 * staging slots: finished sends give theirs back); rank 1 receives them in
 * reverse tag order. */
static void test_messages(zb_transport *t) {
    float buf[64];
    zb_err err = {{0}};
    if (t->rank == 0) {
        for (int tag = 0; tag < 12; tag++) {
            for (int k = 0; k < 64; k++) buf[k] = (float)(tag * 100 + k);
            zb_status s = t->send(t, 1, tag, buf, 64, &err);
            CHECK(s == ZB_OK, "send tag %d: %s", tag, err.msg);
        }
    } else if (t->rank == 1) {
        for (int tag = 11; tag >= 0; tag--) {
            zb_status s = t->recv(t, 0, tag, buf, 64, &err);
            CHECK(s == ZB_OK, "recv tag %d: %s", tag, err.msg);
            CHECK(buf[0] == (float)(tag * 100) && buf[63] == (float)(tag * 100 + 63),
                  "message tag %d holds %g..%g", tag, buf[0], buf[63]);
        }
    }
}

static void test_size_mismatch(zb_transport *t) {
    float buf[32] = {0};
    zb_err err = {{0}};
    if (t->rank == 2) {
        zb_status s = t->send(t, 0, 77, buf, 16, &err);
        CHECK(s == ZB_OK, "send: %s", err.msg);
    } else if (t->rank == 0) {
        zb_status s = t->recv(t, 2, 77, buf, 32, &err);
        CHECK(s == ZB_ERUNTIME && strstr(err.msg, "from rank 2") &&
              strstr(err.msg, "16 floats, rank 0 expected 32"),
              "size mismatch gave %d: %s", s, err.msg);
    }
}

int main(void) {
    zb_err err = {{0}};
    const char *r = getenv("OMPI_COMM_WORLD_RANK"), *w = getenv("OMPI_COMM_WORLD_SIZE");
    if (!r || !w) { fprintf(stderr, "run me under mpirun -np 3\n"); return 2; }
    me = atoi(r);
    if (atoi(w) != 3) { fprintf(stderr, "run me under mpirun -np 3\n"); return 2; }
    if (zb_mpi_init(me, 3, &err) != ZB_OK) { fprintf(stderr, "%s\n", err.msg); return 1; }
    zb_mpi_world *mw;
    if (zb_mpi_world_new(4, 64, 20.0, &mw, &err) != ZB_OK) {
        fprintf(stderr, "%s\n", err.msg);
        zb_mpi_abort(1);
    }
    zb_transport *t = zb_mpi_transport(mw);
    zb_group world = {.id = 1, .n = 3, .first = 0, .stride = 1};
    zb_group pair = {.id = 2, .n = 2, .first = 2, .stride = -2}; /* member 0 is rank 2 */
    zb_group lone = {.id = 3, .n = 1, .first = me, .stride = 1};
    lone.id = 10 + me;
    test_allreduce(t, &world, 1000, 1);
    test_allreduce(t, &pair, 777, 3);
    test_allreduce(t, &lone, 10, 5);
    test_allreduce(t, &world, 600000, 7);   /* > one 4 MiB staging chunk */
    test_messages(t);
    test_size_mismatch(t);
    CHECK(t->barrier(t, &world, &err) == ZB_OK, "barrier: %s", err.msg);
    int bad = failures;
    double total = bad;
    if (t->allreduce_f64(t, &world, &total, 1, &err) != ZB_OK) zb_mpi_abort(1);
    zb_mpi_world_free(mw);
    zb_mpi_finalize();
    if (me == 0) printf("test_transport_mpi: %s\n", total == 0 ? "ok" : "FAILED");
    return total == 0 ? 0 : 1;
}
