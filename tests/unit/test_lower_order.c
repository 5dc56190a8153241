/* test_lower_order.c - the lowered programs of every schedule post their
 * pipeline messages so that each transport can match them.
 *
 * NCCL matches sends to receives in posting order per communicator (no
 * tags): per (sender, receiver, channel) of zb_p2p_channel, the order in
 * which the sender's program posts its sends must equal the order in which
 * the receiver's program posts its receives, message by message (kind,
 * receiving virtual stage, microbatch). The device-local and local
 * transports match by (sender, tag) in an inbox of max_msgs slots: per
 * (sender, receiver, tag) one step has exactly one send and one receive,
 * and the tags hold the message kind where zb_p2p_channel reads it.
 *
 * Every generator (incl. interleaved with 2 and 3 chunks, zb-v, zb-auto,
 * zb-1p/zb-2p by the heuristic, zb-auto-v; dualpipe) at pp 2, 4, 8 and several
 * microbatch counts, with uneven per-stage costs so that the automatic
 * schedules reorder. Pipeline ranks stand for global ranks: with fixed dp
 * and tp ranks, zb_plan_rank maps pipeline ranks to global ranks in the
 * same order, so the channels split the messages the same way.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/zb_lower.h"
#include "executor/comm/p2p_channel.h"
#include "planner/registry/registry.h"
#include "planner/schedules/handmade.h"
#include "tests/unit/sched_fixture.h"

typedef struct { int msg, vstage, mb; } msg_id;

typedef struct {
    msg_id *ids;
    int n, cap;
} seq;

static void seq_push(seq *q, msg_id id) {
    if (q->n == q->cap) {
        q->cap = q->cap ? 2 * q->cap : 16;
        q->ids = realloc(q->ids, (size_t)q->cap * sizeof *q->ids);
        ck_assert_ptr_nonnull(q->ids);
    }
    q->ids[q->n++] = id;
}

/* Sends and receives per (sender, receiver, channel), for channel scheme
 * zb_p2p_channel. Returns the number of mismatching channels and
 * describes the first one in why. */
static int order_mismatches(const zb_schedule *s, const zb_program *prog,
                            char *why, size_t why_len) {
    int p = s->p, nch = ZB_P2P_CHANNELS, bad = 0;
    size_t nq = (size_t)p * p * nch;
    seq *snd = calloc(nq, sizeof *snd), *rcv = calloc(nq, sizeof *rcv);
    ck_assert(snd && rcv);
    for (int r = 0; r < p; r++)
        for (int i = 0; i < prog->len[r]; i++) {
            const zb_op *op = &prog->ops[r][i];
            if (op->kind == ZB_OP_COMPUTE) continue;
            bool send = op->kind == ZB_OP_SEND;
            int from = send ? r : op->peer, to = send ? op->peer : r;
            int tag = zb_lower_tag(s, op->msg, op->vstage, op->mb);
            int ch = zb_p2p_channel(from, to, tag);
            ck_assert(ch >= 0 && ch < nch);
            size_t k = ((size_t)from * p + to) * nch + ch;
            seq_push(send ? &snd[k] : &rcv[k], (msg_id){op->msg, op->vstage, op->mb});
        }
    for (size_t k = 0; k < nq; k++) {
        int n = snd[k].n < rcv[k].n ? snd[k].n : rcv[k].n, at = -1;
        for (int i = 0; i < n && at < 0; i++)
            if (memcmp(&snd[k].ids[i], &rcv[k].ids[i], sizeof(msg_id))) at = i;
        if (at < 0 && snd[k].n != rcv[k].n) at = n;
        if (at >= 0 && bad++ == 0)
            snprintf(why, why_len, "%s p=%d m=%d: rank %d -> %d channel %d: "
                     "%d sends, %d receives, first difference at message %d",
                     s->name, p, s->m, (int)(k / nch) / p, (int)(k / nch) % p,
                     (int)(k % nch), snd[k].n, rcv[k].n, at);
        free(snd[k].ids);
        free(rcv[k].ids);
    }
    free(snd);
    free(rcv);
    return bad;
}

/* Inbox matching (local and device-local transports): every tag once per
 * (sender, receiver) on both sides, the kind in the tag where
 * zb_p2p_channel reads it. */
static void check_tag_matching(const zb_schedule *s, const zb_program *prog) {
    int p = s->p, tags = 2 * p * s->v * s->m;
    int *cnt = calloc((size_t)p * p * tags * 2, sizeof(int));
    ck_assert_ptr_nonnull(cnt);
    for (int r = 0; r < p; r++)
        for (int i = 0; i < prog->len[r]; i++) {
            const zb_op *op = &prog->ops[r][i];
            if (op->kind == ZB_OP_COMPUTE) continue;
            bool send = op->kind == ZB_OP_SEND;
            int from = send ? r : op->peer, to = send ? op->peer : r;
            int tag = zb_lower_tag(s, op->msg, op->vstage, op->mb);
            ck_assert_msg(tag >= 0 && tag < tags, "%s: tag %d out of 0..%d",
                          s->name, tag, tags - 1);
            ck_assert_int_eq(tag & 1, (int)op->msg);
            cnt[(((size_t)from * p + to) * tags + tag) * 2 + send]++;
        }
    int bad = 0;
    for (size_t k = 0; k < (size_t)p * p * tags; k++)
        bad += cnt[2 * k] != cnt[2 * k + 1] || cnt[2 * k] > 1;
    free(cnt);
    ck_assert_msg(bad == 0, "%s p=%d m=%d: %d (sender, receiver, tag) without "
                  "exactly one send and one receive", s->name, p, s->m, bad);
}

typedef struct { int bad, total; char first[256]; } tally;

static void check_one(const char *name, int p, int m, int v, tally *t) {
    zb_schedule s;
    zb_err err;
    if (!make_sched(name, p, m, v, &s)) return; /* condition unmet: no schedule */
    zb_program prog;
    ck_assert_int_eq(zb_lower(&s, &prog, &err), ZB_OK);
    check_tag_matching(&s, &prog);
    char why[256] = "";
    int bad = order_mismatches(&s, &prog, why, sizeof why);
    t->total++;
    if (bad && t->bad++ == 0) snprintf(t->first, sizeof t->first, "%s", why);
    zb_program_free(&prog);
    zb_schedule_free(&s);
}

START_TEST(posting_orders_match) {
    static const int pps[] = {2, 4, 8};
    tally t = {0};
    for (const char *const *nm = zb_schedule_names(); *nm; nm++)
        for (int k = 0; k < 3; k++) {
            int p = pps[k];
            const int ms[] = {1, p - 1, p, p + 1, 2 * p, 3 * p, 4 * p + 3};
            for (int j = 0; j < 7; j++) {
                if (ms[j] < 1) continue;
                check_one(*nm, p, ms[j], 2, &t);
                if (!strcmp(*nm, "interleaved")) check_one(*nm, p, ms[j], 3, &t);
            }
        }
    /* dualpipe (bidirectional, a block name: the search does not try it) */
    for (int p = 2; p <= 8; p *= 2)
        for (int m = 2 * p; m <= 4 * p + 2; m += 2) check_one("dualpipe", p, m, 2, &t);
    ck_assert_int_gt(t.total, 150);
    ck_assert_msg(t.bad == 0, "%d of %d schedules post messages in different "
                  "orders on the two ends of a channel; first: %s", t.bad,
                  t.total, t.first);
}
END_TEST

/* The check itself can fail: a channel whose receiver posts two messages
 * in the other order is found. */
START_TEST(swapped_receives_found) {
    zb_schedule s;
    zb_err err;
    ck_assert_int_eq(zb_sched_1f1b(2, 4, &s, &err), ZB_OK);
    zb_program prog;
    ck_assert_int_eq(zb_lower(&s, &prog, &err), ZB_OK);
    int first = -1, second = -1;
    for (int i = 0; i < prog.len[1]; i++)
        if (prog.ops[1][i].kind == ZB_OP_RECV) {
            if (first < 0) first = i;
            else if (second < 0) second = i;
        }
    ck_assert(first >= 0 && second >= 0);
    zb_op tmp = prog.ops[1][first];
    prog.ops[1][first] = prog.ops[1][second];
    prog.ops[1][second] = tmp;
    char why[256];
    ck_assert_int_eq(order_mismatches(&s, &prog, why, sizeof why), 1);
    zb_program_free(&prog);
    zb_schedule_free(&s);
}
END_TEST

int main(void) {
    Suite *su = suite_create("lower_order");
    TCase *tc = tcase_create("lower_order");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, posting_orders_match);
    tcase_add_test(tc, swapped_receives_found);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
