/* test_lower_vocab.c - what zb_lower_vocab (common/zb_lower.h) puts
 * around the computes, checked against the dependencies of vocabulary
 * parallelism (docs/plan-format.md), for every schedule that
 * zb_schedule_place_vocab accepts, variants 1 and 2, pp 2, 3, 4, v 1 and
 * 2. On every rank, in program order:
 *  - the embedding: each mb's lookup first; on vstage 0's rank (E) the
 *    partials of every other rank received and summed before F(mb) of
 *    vstage 0; after its B(mb) E adds the gradient into its rows, and at
 *    the end sends it to every rank, which receives it and adds it;
 *  - S(mb) off the last stage's rank (L) after X(mb) received from L, and
 *    L sends X(mb) to every rank after F(mb) of the last vstage;
 *  - the statistics collective of mb: variant 1 before T(mb), variant 2
 *    right after S(mb), before DX2(mb); the collectives in the same mb
 *    order on every rank;
 *  - the dX part of mb sent to L after T(mb) (variant 1) or DX2(mb)
 *    (variant 2); on L every rank's part received and summed before
 *    B/BW(mb) of the last vstage, and L's own part made before it;
 *  - every send has its receive (same tag, the other end) and the tags
 *    of one step are unique.
 * And zb_lower_vocab of a schedule without vocabulary passes is zb_lower.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/zb_lower.h"
#include "common/zb_schedule_vocab.h"
#include "planner/registry/registry.h"

/* Position of the first op of rank r matching (kind, what, mb, peer; -1:
 * any peer; for COMPUTE `what` is the pass) at or after `from`, or -1. */
static int find(const zb_schedule *s, const zb_program *pr, int r, int kind,
                int what, int mb, int peer, int from) {
    for (int k = from; k < pr->len[r]; k++) {
        const zb_op *o = &pr->ops[r][k];
        if ((int)o->kind != kind || o->mb != mb) continue;
        if (kind == ZB_OP_COMPUTE ? s->acts[r][o->action].pass != what
                                  : o->what != what)
            continue;
        if (peer >= 0 && o->peer != peer) continue;
        return k;
    }
    return -1;
}

/* Position of the compute of (pass, vstage, mb) on rank r, or -1. */
static int find_pass(const zb_schedule *s, const zb_program *pr, int r,
                     int pass, int vs, int mb) {
    for (int k = 0; k < pr->len[r]; k++) {
        const zb_op *o = &pr->ops[r][k];
        if (o->kind != ZB_OP_COMPUTE || o->mb != mb) continue;
        const zb_action *a = &s->acts[r][o->action];
        bool is = a->pass == pass || (pass == ZB_B && a->pass == ZB_BW);
        if (is && zb_vstage(s, r, a->chunk) == vs) return k;
    }
    return -1;
}

#define BEFORE(a, b, what)                                                     \
    ck_assert_msg((a) >= 0 && (b) >= 0 && (a) < (b),                           \
                  "%s p=%d v=%d m=%d variant %d rank %d mb %d: %s (%d, %d)",   \
                  s->name, s->p, s->v, s->m, s->vocab, r, mb, what, a, b)

static void check_embedding(const zb_schedule *s, const zb_program *pr, int r,
                            int mb, int E) {
    int p = s->p;
    BEFORE(find(s, pr, r, ZB_OP_VOCAB, ZB_V_EMB, mb, -1, 0), pr->len[r],
           "embedding lookup");
    if (r == E) {
        int f = find_pass(s, pr, r, ZB_F, 0, mb);
        int sum = find(s, pr, r, ZB_OP_VOCAB, ZB_V_EMB_SUM, mb, -1, 0);
        BEFORE(sum, f, "partials summed before F of vstage 0");
        for (int q = 0; q < p; q++)
            if (q != E)
                BEFORE(find(s, pr, r, ZB_OP_RECV, ZB_V_EMB, mb, q, 0), sum,
                       "partial received before the sum");
        int b = find_pass(s, pr, r, ZB_B, 0, mb);
        BEFORE(b, find(s, pr, r, ZB_OP_VOCAB, ZB_V_EMB_BWD, mb, -1, 0),
               "own rows' gradient after B of vstage 0");
        for (int q = 0; q < p; q++)
            if (q != E)
                BEFORE(b, find(s, pr, r, ZB_OP_SEND, ZB_V_DEMB, mb, q, 0),
                       "gradient sent after B of vstage 0");
    } else {
        BEFORE(find(s, pr, r, ZB_OP_RECV, ZB_V_DEMB, mb, E, 0),
               find(s, pr, r, ZB_OP_VOCAB, ZB_V_EMB_BWD, mb, -1, 0),
               "gradient received, then added");
    }
}

static void check_head(const zb_schedule *s, const zb_program *pr, int r,
                       int mb, int L) {
    int p = s->p, n = p * s->v;
    int S = find(s, pr, r, ZB_OP_COMPUTE, ZB_S, mb, -1, 0);
    int T = find(s, pr, r, ZB_OP_COMPUTE, ZB_T, mb, -1, 0);
    int C1 = find(s, pr, r, ZB_OP_VOCAB, ZB_V_STATS, mb, -1, 0);
    if (r != L) BEFORE(find(s, pr, r, ZB_OP_RECV, ZB_V_X, mb, L, 0), S, "X before S");
    else
        for (int q = 0; q < p; q++)
            if (q != L)
                BEFORE(find_pass(s, pr, r, ZB_F, n - 1, mb),
                       find(s, pr, r, ZB_OP_SEND, ZB_V_X, mb, q, 0),
                       "X sent after F of the last vstage");
    int part;
    if (s->vocab == 1) {
        BEFORE(S, C1, "S before C1");
        BEFORE(C1, T, "C1 before T");
        part = T;
    } else {
        ck_assert_msg(C1 == S + 1, "variant 2: C1 right after S");
        part = find(s, pr, r, ZB_OP_VOCAB, ZB_V_DX2, mb, -1, 0);
        BEFORE(C1, part, "C1 before DX2");
    }
    if (r != L) {
        BEFORE(part, find(s, pr, r, ZB_OP_SEND, ZB_V_DX, mb, L, 0),
               "dX part sent after it is made");
        return;
    }
    int b = find_pass(s, pr, r, ZB_B, n - 1, mb);
    int sum = find(s, pr, r, ZB_OP_VOCAB, ZB_V_DX_SUM, mb, -1, 0);
    BEFORE(sum, b, "dX summed before B of the last vstage");
    BEFORE(part, sum, "own dX part before the sum");
    for (int q = 0; q < p; q++)
        if (q != L)
            BEFORE(find(s, pr, r, ZB_OP_RECV, ZB_V_DX, mb, q, 0), sum,
                   "dX part received before the sum");
}

/* Every send has one receive with its tag at its peer; tags unique. */
static void check_pairs(const zb_schedule *s, const zb_program *pr) {
    int nsend = 0, nrecv = 0;
    for (int r = 0; r < s->p; r++)
        for (int k = 0; k < pr->len[r]; k++) {
            const zb_op *o = &pr->ops[r][k];
            if (o->kind == ZB_OP_RECV) nrecv++;
            if (o->kind != ZB_OP_SEND) continue;
            nsend++;
            int tag = zb_lower_op_tag(s, o, r), hits = 0;
            for (int j = 0; j < pr->len[o->peer]; j++) {
                const zb_op *q = &pr->ops[o->peer][j];
                if (q->kind == ZB_OP_RECV && q->peer == r &&
                    zb_lower_op_tag(s, q, o->peer) == tag)
                    hits++;
            }
            ck_assert_msg(hits == 1, "%s: rank %d op %d: %d receives", s->name,
                          r, k, hits);
        }
    ck_assert_int_eq(nsend, nrecv);
}

/* The collectives: the same mb sequence on every rank. */
static void check_collectives(const zb_schedule *s, const zb_program *pr) {
    int *seq0 = calloc((size_t)s->m + 1, sizeof(int)), n0 = 0;
    ck_assert_ptr_nonnull(seq0);
    for (int r = 0; r < s->p; r++) {
        int n = 0;
        for (int k = 0; k < pr->len[r]; k++) {
            const zb_op *o = &pr->ops[r][k];
            if (o->kind != ZB_OP_VOCAB || o->what != ZB_V_STATS) continue;
            if (r == 0) seq0[n0++] = o->mb;
            else ck_assert_int_eq(o->mb, seq0[n++]);
        }
        ck_assert(r == 0 || n == n0);
    }
    ck_assert_int_eq(n0, s->m);
    free(seq0);
}

static bool make_placed(const char *name, int p, int m, int v, int variant,
                        zb_schedule *s) {
    zb_costs c;
    zb_err err;
    int n = p * zb_schedule_chunks(name, v);
    ck_assert_int_eq(zb_costs_init(&c, n, &err), ZB_OK);
    for (int k = 0; k < n; k++) {
        c.t_f[k] = 1.0 + 0.1 * (k % 3);
        c.t_b[k] = 2.0;
        c.t_w[k] = 1.0;
        c.t_comm[k] = 0.05;
        c.m_b[k] = 1.0;
        c.m_w[k] = 0.5;
    }
    zb_sched_params prm = {.p = p, .m = m, .v = v, .costs = &c,
                           .solver = ZB_SOLVER_HEURISTIC, .time_limit_s = 1,
                           .mip_gap = 1e-4};
    zb_status st = zb_schedule_make(name, &prm, s, NULL, &err);
    zb_costs_free(&c);
    if (st != ZB_OK) return false;
    if (zb_schedule_place_vocab(s, variant, &err) == ZB_OK) return true;
    zb_schedule_free(s);
    return false;
}

START_TEST(every_placed_schedule) {
    int total = 0;
    for (const char *const *nm = zb_schedule_names(); *nm; nm++)
        for (int p = 2; p <= 4; p++)
            for (int v = 1; v <= 2; v++)
                for (int m = 1; m <= 2 * p + 1; m += p)
                    for (int variant = 1; variant <= 2; variant++) {
                        zb_schedule s;
                        if (!make_placed(*nm, p, m, v, variant, &s)) continue;
                        zb_program pr;
                        zb_err err;
                        ck_assert_int_eq(zb_lower_vocab(&s, &pr, &err), ZB_OK);
                        int E, L, ch;
                        zb_vstage_owner(&s, 0, &E, &ch);
                        zb_vstage_owner(&s, p * s.v - 1, &L, &ch);
                        for (int r = 0; r < p; r++)
                            for (int mb = 0; mb < m; mb++) {
                                check_embedding(&s, &pr, r, mb, E);
                                check_head(&s, &pr, r, mb, L);
                            }
                        check_pairs(&s, &pr);
                        check_collectives(&s, &pr);
                        total++;
                        zb_program_free(&pr);
                        zb_schedule_free(&s);
                    }
    ck_assert_int_gt(total, 100);
}
END_TEST

/* Without vocabulary passes zb_lower_vocab is zb_lower, op for op. */
START_TEST(no_vocab_is_zb_lower) {
    zb_schedule s;
    zb_err err;
    ck_assert(make_placed("1f1b", 4, 8, 1, 1, &s));
    zb_schedule_strip_vocab(&s);
    s.vocab = 0;
    zb_program a, b;
    ck_assert_int_eq(zb_lower(&s, &a, &err), ZB_OK);
    ck_assert_int_eq(zb_lower_vocab(&s, &b, &err), ZB_OK);
    for (int r = 0; r < s.p; r++) {
        ck_assert_int_eq(a.len[r], b.len[r]);
        ck_assert_mem_eq(a.ops[r], b.ops[r], (size_t)a.len[r] * sizeof(zb_op));
    }
    zb_program_free(&a);
    zb_program_free(&b);
    zb_schedule_free(&s);
}
END_TEST

int main(void) {
    Suite *su = suite_create("lower_vocab");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, every_placed_schedule);
    tcase_add_test(tc, no_vocab_is_zb_lower);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
