/* test_abort_gate.c - the abort gate (executor/comm/abort_gate.h): which
 * thread aborts a rank's NCCL communicators in threads mode.
 *
 * - each transition by hand: an idle rank is aborted by the claimer, a
 *   rank inside an NCCL call only marked and aborted by its owner on
 *   leaving, nothing enters after, a second claim does nothing;
 * - threads: owners loop "enter, call, leave" on their own gate while
 *   another thread claims every gate; per gate the abort runs exactly
 *   once, never while its owner is inside a call, and no call starts after
 *   it. The claimer starts once every owner has made calls (counters, no
 *   clock), and every owner stops by itself once its gate refuses entry.
 */
#include <check.h>
#include <pthread.h>
#include <stdbool.h>

#include "executor/comm/abort_gate.h"

START_TEST(transitions_by_hand) {
    zb_abort_gate g = {0};
    ck_assert_int_eq(zb_gate_state(&g), ZB_GATE_FREE);
    ck_assert(zb_gate_enter(&g));
    ck_assert(!zb_gate_leave(&g));             /* no abort asked */
    ck_assert(zb_gate_claim(&g));              /* idle: the claimer aborts */
    ck_assert_int_eq(zb_gate_state(&g), ZB_GATE_DEAD);
    ck_assert(!zb_gate_enter(&g));             /* nothing after */
    ck_assert(!zb_gate_claim(&g));             /* once */

    zb_abort_gate h = {0};
    ck_assert(zb_gate_enter(&h));
    ck_assert(!zb_gate_claim(&h));             /* inside a call: only marked */
    ck_assert_int_eq(zb_gate_state(&h), ZB_GATE_PENDING);
    ck_assert(!zb_gate_claim(&h));
    ck_assert(zb_gate_leave(&h));              /* the owner aborts */
    ck_assert_int_eq(zb_gate_state(&h), ZB_GATE_DEAD);
    ck_assert(!zb_gate_enter(&h));
}
END_TEST

#define OWNERS 6
#define ROUNDS 100

typedef struct {
    zb_abort_gate gate;
    int inside;      /* the owner is in a call (atomic) */
    int aborted;     /* times the communicators were aborted (atomic) */
    int bad;         /* a call after the abort, an abort during a call */
    int calls;       /* calls made (atomic) */
} rank_state;

static void do_abort(rank_state *r) {
    if (__atomic_load_n(&r->inside, __ATOMIC_SEQ_CST))
        __atomic_add_fetch(&r->bad, 1, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&r->aborted, 1, __ATOMIC_SEQ_CST);
}

static void *owner(void *arg) {
    rank_state *r = arg;
    volatile unsigned sink = 0;
    while (zb_gate_enter(&r->gate)) {
        __atomic_store_n(&r->inside, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&r->aborted, __ATOMIC_SEQ_CST))
            __atomic_add_fetch(&r->bad, 1, __ATOMIC_SEQ_CST);
        for (int i = 0; i < 50; i++) sink += (unsigned)i; /* the "call" */
        __atomic_store_n(&r->inside, 0, __ATOMIC_SEQ_CST);
        __atomic_add_fetch(&r->calls, 1, __ATOMIC_SEQ_CST);
        if (zb_gate_leave(&r->gate)) do_abort(r);
    }
    return NULL;
}

static void *claimer(void *arg) {
    rank_state *ranks = arg;
    for (int i = 0; i < OWNERS; i++) /* wait until each owner has called */
        while (__atomic_load_n(&ranks[i].calls, __ATOMIC_SEQ_CST) < 3) {}
    for (int i = 0; i < OWNERS; i++)
        if (zb_gate_claim(&ranks[i].gate)) do_abort(&ranks[i]);
    return NULL;
}

START_TEST(owners_and_a_claimer) {
    for (int round = 0; round < ROUNDS; round++) {
        rank_state ranks[OWNERS] = {0};
        pthread_t th[OWNERS + 1];
        for (int i = 0; i < OWNERS; i++)
            ck_assert_int_eq(pthread_create(&th[i], NULL, owner, &ranks[i]), 0);
        ck_assert_int_eq(pthread_create(&th[OWNERS], NULL, claimer, ranks), 0);
        for (int i = 0; i <= OWNERS; i++) ck_assert_int_eq(pthread_join(th[i], NULL), 0);
        for (int i = 0; i < OWNERS; i++) {
            ck_assert_msg(ranks[i].aborted == 1, "round %d rank %d aborted %d "
                          "times", round, i, ranks[i].aborted);
            ck_assert_msg(ranks[i].bad == 0, "round %d rank %d: %d calls or "
                          "aborts overlapped", round, i, ranks[i].bad);
            ck_assert_int_eq(zb_gate_state(&ranks[i].gate), ZB_GATE_DEAD);
        }
    }
}
END_TEST

int main(void) {
    Suite *su = suite_create("abort_gate");
    TCase *tc = tcase_create("abort_gate");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, transitions_by_hand);
    tcase_add_test(tc, owners_and_a_claimer);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
