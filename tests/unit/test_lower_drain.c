/* test_lower_drain.c - every lowered program (common/zb_lower.h) of every
 * schedule completes on the CUDA/NCCL path, where sends are rendezvous and
 * the host sometimes waits for the device.
 *
 * The model of one rank (executor/comm/transport_nccl.cu, executor/stage/
 * ops_cuda.cu): the host walks its program and only enqueues. The compute
 * stream runs the program's compute, each send's copy into its staging
 * slot and each receive's copy out, in program order; a receive's copy
 * out waits for the receive. Sends and receives run on the stream of their
 * lane (executor/comm/p2p_channel.h), in posting order per lane; a send
 * starts after its copy in. Every send is a rendezvous (a message above
 * NCCL's per-peer buffer): it and its receive (the k-th send and the k-th
 * receive of one (sender, receiver, lane)) finish together, once both have
 * reached the head of their lanes.
 *
 * Host waits, by mode:
 *  - ZB_DRAIN_STEADY, the CUDA lowering at tp 1 once module loading is
 *    eager, every pass kind ran once before the first transfer and every
 *    lane is connected at transport creation (docs/gpu.md): a token or
 *    target upload waits for the upload 16 before it (ops_cuda.cu's ring
 *    of pinned buffers);
 *  - ZB_DRAIN_STEADY_TP, tp > 1: those, and each F of the head drains the
 *    compute stream (the vocabulary-parallel cross-entropy's host round
 *    trips);
 *  - ZB_DRAIN_SYNC, ZB_CUDA_SYNC=1 (ops_cuda.cu): every pass waits for the
 *    compute stream (a wait for the compute stream never waits for a
 *    send, so with the lanes of p2p_channel.h no schedule deadlocks);
 *  - ZB_DRAIN_LAZY, the lowering before those fixes: the first pass of
 *    each kind (F, B, W, BW; with the embedding, the head or neither)
 *    loads its kernels and drains the whole device, and the first send or
 *    receive on each (lane, peer) is a host rendezvous (NCCL's lazy
 *    connection): zb-v deadlocks at pp 2 and 4, the step-1 hang;
 *  - ZB_DRAIN_ALL, every pass drains the device (a synchronous host).
 * With 4 lanes (direction x kind) instead of p2p_channel.h's 8, zb-2p at
 * pp 8 deadlocks even in ZB_DRAIN_STEADY: a rank's send to r+1 waiting in
 * a lane held back its receive from r-1 on the same lane.
 *
 * Pipeline ranks stand for global ranks (as in test_lower_order.c).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/zb_lower.h"
#include "common/zb_schedule_vocab.h"
#include "executor/comm/p2p_channel.h"
#include "planner/registry/registry.h"
#include "planner/schedules/handmade.h"
#include "tests/unit/sched_fixture.h"

typedef enum {
    ZB_DRAIN_STEADY,    /* tp 1: the upload ring's waits */
    ZB_DRAIN_STEADY_TP, /* tp > 1: those and the head's host round trips */
    ZB_DRAIN_SYNC,      /* ZB_CUDA_SYNC=1: every pass waits for the stream */
    ZB_DRAIN_LAZY,
    ZB_DRAIN_ALL
} drain_mode;

/* Small host-to-device copies (tokens, targets) go through a ring of this
 * many pinned buffers (executor/stage/ops_cuda.cu ZB_UPLOAD_RING); the
 * host reuses one after the copy that last used it ran. */
#define UPLOAD_RING 16

/* What a host wait waits for: the compute stream (cudaStreamSynchronize,
 * an event on it: sends' copies in and receives' copies out included,
 * the sends themselves not), or the whole device (every stream: module
 * loading, cudaMalloc, a synchronous cudaMemcpy from pageable memory). */
enum { DRAIN_STREAM = 1, DRAIN_DEVICE = 2 };

/* One op's state. */
typedef struct {
    int lane;        /* p2p: its lane; compute: -1 */
    int prev_lane;   /* p2p: the previous op of this rank on that lane */
    int ord;         /* p2p: its place on (sender, receiver, lane) */
    int prank, pk;   /* p2p: its partner (rank, op index) */
    bool first_conn; /* p2p: the first op of this rank on (lane, peer) */
    int group;       /* p2p: first op of its run of transfers (one NCCL
                        group when grouped), else itself */
    int drain;       /* compute: before enqueuing it the host waits for
                        DRAIN_STREAM or DRAIN_DEVICE, or not (0) */
    int wait_cs;     /* compute: before enqueuing it the host waits for
                        this op's compute-stream part (an upload slot), or
                        -1 */
    int coll;        /* a collective (VOCAB STATS, an all-reduce over the
                        pipeline group on the compute stream): its ordinal
                        among the rank's collectives, else -1 */
    bool cs_done;    /* its compute-stream part finished */
    bool ready;      /* p2p: at the head of its lane, its inputs there */
    bool done;       /* p2p: matched and finished */
} sim_op;

typedef struct {
    const zb_schedule *s;
    const zb_program *prog;
    sim_op **ops;    /* [p][len] */
    int *host;       /* [p] ops enqueued so far */
    int **coll_at;   /* [p][collectives]: op index of each collective */
    bool grouped;    /* consecutive transfers form one NCCL group */
} sim;

/* A send or receive (not a compute, nor a vocabulary step). */
static bool is_p2p(const zb_op *op) {
    return op->kind == ZB_OP_SEND || op->kind == ZB_OP_RECV;
}

static int op_lane(const zb_schedule *s, const zb_op *op, int r) {
    bool send = op->kind == ZB_OP_SEND;
    int from = send ? r : op->peer, to = send ? op->peer : r;
    return zb_p2p_channel(from, to, zb_lower_op_tag(s, op, r));
}

/* Pairs the k-th send with the k-th receive per (sender, receiver, lane). */
static void pair_ops(sim *m) {
    int p = m->s->p, nq = p * p * ZB_P2P_CHANNELS;
    int *ns = calloc((size_t)nq, sizeof(int)), *nr = calloc((size_t)nq, sizeof(int));
    ck_assert(ns && nr);
    for (int r = 0; r < p; r++)
        for (int k = 0; k < m->prog->len[r]; k++) {
            const zb_op *op = &m->prog->ops[r][k];
            if (!is_p2p(op)) continue;
            bool send = op->kind == ZB_OP_SEND;
            int from = send ? r : op->peer, to = send ? op->peer : r;
            int q = (from * p + to) * ZB_P2P_CHANNELS + m->ops[r][k].lane;
            m->ops[r][k].ord = send ? ns[q]++ : nr[q]++;
        }
    for (int q = 0; q < nq; q++)
        ck_assert_msg(ns[q] == nr[q], "%s: %d sends, %d receives on one lane",
                      m->s->name, ns[q], nr[q]);
    /* partner: the op of the other end with the same ordinal */
    for (int r = 0; r < p; r++)
        for (int k = 0; k < m->prog->len[r]; k++) {
            const zb_op *op = &m->prog->ops[r][k];
            sim_op *o = &m->ops[r][k];
            if (!is_p2p(op) || o->prank >= 0) continue;
            int peer = op->peer;
            for (int j = 0; j < m->prog->len[peer]; j++) {
                const zb_op *po = &m->prog->ops[peer][j];
                sim_op *q = &m->ops[peer][j];
                if (is_p2p(po) && po->kind != op->kind &&
                    po->peer == r && q->lane == o->lane && q->ord == o->ord) {
                    /* NCCL matches by lane and order: the two ends must
                     * mean the same message */
                    ck_assert_msg(zb_lower_op_tag(m->s, op, r) ==
                                      zb_lower_op_tag(m->s, po, peer),
                                  "%s: rank %d op %d and rank %d op %d meet "
                                  "on a lane with different tags",
                                  m->s->name, r, k, peer, j);
                    o->prank = peer;
                    o->pk = j;
                    q->prank = r;
                    q->pk = k;
                    break;
                }
            }
            ck_assert_msg(o->prank >= 0, "%s: rank %d op %d has no partner",
                          m->s->name, r, k);
        }
    free(ns);
    free(nr);
}

/* Kinds of pass for module loading: pass x (embedding, head, neither). */
static int pass_kind(const zb_schedule *s, int r, const zb_action *a) {
    int vs = zb_vstage(s, r, a->chunk), n = s->p * s->v;
    int where = vs == 0 ? 1 : vs == n - 1 ? 2 : 0;
    return (int)a->pass * 3 + where;
}

/* A vocabulary step (zb_lower_vocab) on the device: the embedding
 * lookup uploads its tokens (the upload ring); the statistics are
 * combined on the device (no host round trip), so only the synchronous
 * modes drain before it. */
static void vocab_points(sim_op *o, const zb_op *op, drain_mode mode,
                         int *up, int *nup, int k) {
    o->coll = -1;
    if (op->what == ZB_V_EMB) {
        if (*nup >= UPLOAD_RING) o->wait_cs = up[*nup % UPLOAD_RING];
        up[(*nup)++ % UPLOAD_RING] = k;
    }
    o->drain = mode == ZB_DRAIN_ALL ? DRAIN_DEVICE
               : mode == ZB_DRAIN_SYNC ? DRAIN_STREAM : 0;
}

static void mark_points(sim *m, drain_mode mode) {
    const zb_schedule *s = m->s;
    int p = s->p, n = p * s->v;
    for (int r = 0; r < p; r++) {
        unsigned loaded = 0;
        bool *conn = calloc((size_t)p * ZB_P2P_CHANNELS, sizeof(bool));
        ck_assert_ptr_nonnull(conn);
        int last[ZB_P2P_CHANNELS];
        for (int c = 0; c < ZB_P2P_CHANNELS; c++) last[c] = -1;
        int up[UPLOAD_RING], nup = 0;
        for (int k = 0; k < m->prog->len[r]; k++) {
            const zb_op *op = &m->prog->ops[r][k];
            sim_op *o = &m->ops[r][k];
            o->prank = -1;
            o->coll = -1;
            if (is_p2p(op)) {
                o->lane = op_lane(s, op, r);
                bool run = m->grouped && k > 0 &&
                           m->prog->ops[r][k - 1].kind != ZB_OP_COMPUTE;
                o->group = run ? m->ops[r][k - 1].group : k;
                o->prev_lane = last[o->lane];
                last[o->lane] = k;
                bool *c = &conn[op->peer * ZB_P2P_CHANNELS + o->lane];
                o->first_conn = mode == ZB_DRAIN_LAZY && !*c;
                *c = true;
                continue;
            }
            o->lane = -1;
            o->group = -1;
            o->wait_cs = -1;
            if (op->kind == ZB_OP_VOCAB) { /* a vocabulary step */
                vocab_points(o, op, mode, up, &nup, k);
                continue;
            }
            const zb_action *a = &s->acts[r][op->action];
            int vs = zb_vstage(s, r, a->chunk);
            bool fwd = a->pass == ZB_F;
            if ((fwd && (vs == 0 || vs == n - 1)) || a->pass == ZB_S) {
                /* tokens or targets */
                if (nup >= UPLOAD_RING) o->wait_cs = up[nup % UPLOAD_RING];
                up[nup++ % UPLOAD_RING] = k;
            }
            if (mode == ZB_DRAIN_ALL) o->drain = DRAIN_DEVICE;
            else if (mode == ZB_DRAIN_SYNC) o->drain = DRAIN_STREAM;
            else if (mode == ZB_DRAIN_STEADY_TP)
                o->drain = fwd && vs == n - 1 ? DRAIN_STREAM : 0;
            else if (mode == ZB_DRAIN_LAZY) {
                unsigned bit = 1u << pass_kind(s, r, a);
                o->drain = loaded & bit ? 0 : DRAIN_DEVICE;
                loaded |= bit;
            }
        }
        free(conn);
    }
}

/* Numbers every rank's collectives in program order; every rank must
 * hold the same sequence (the k-th of each rank is one all-reduce). */
static void number_collectives(sim *m) {
    int p = m->s->p, n0 = -1;
    m->coll_at = calloc((size_t)p, sizeof *m->coll_at);
    ck_assert_ptr_nonnull(m->coll_at);
    for (int r = 0; r < p; r++) {
        m->coll_at[r] = calloc((size_t)m->prog->len[r] + 1, sizeof(int));
        ck_assert_ptr_nonnull(m->coll_at[r]);
        int n = 0;
        for (int k = 0; k < m->prog->len[r]; k++) {
            const zb_op *op = &m->prog->ops[r][k];
            if (op->kind != ZB_OP_VOCAB || op->what != ZB_V_STATS) continue;
            if (r > 0) {
                const zb_op *o0 = &m->prog->ops[0][m->coll_at[0][n]];
                ck_assert_msg(n < n0 && o0->mb == op->mb, "%s: rank %d's "
                              "collective %d is not rank 0's", m->s->name, r, n);
            }
            m->ops[r][k].coll = n;
            m->coll_at[r][n++] = k;
        }
        ck_assert_msg(r == 0 || n == n0, "%s: rank %d has %d collectives, "
                      "rank 0 %d", m->s->name, r, n, n0);
        if (r == 0) n0 = n;
    }
}

/* Can collective c start on the compute streams: every member enqueued it
 * and finished the work before it? */
static bool coll_ready(const sim *m, int c) {
    for (int r = 0; r < m->s->p; r++) {
        int k = m->coll_at[r][c];
        if (k >= m->host[r] || (k > 0 && !m->ops[r][k - 1].cs_done))
            return false;
    }
    return true;
}

/* Has everything rank r enqueued finished: on its compute stream
 * (DRAIN_STREAM) or on every stream (DRAIN_DEVICE)? */
static bool rank_idle(const sim *m, int r, int what) {
    for (int k = 0; k < m->host[r]; k++) {
        const sim_op *o = &m->ops[r][k];
        if (!o->cs_done) return false;
        if (what == DRAIN_DEVICE && o->lane >= 0 && !o->done) return false;
    }
    return true;
}

/* Enqueues what rank r's host can; true if it moved. */
static bool host_advance(sim *m, int r) {
    bool moved = false;
    while (m->host[r] < m->prog->len[r]) {
        int k = m->host[r];
        const sim_op *o = &m->ops[r][k];
        if (o->lane < 0 && o->drain && !rank_idle(m, r, o->drain)) break;
        if (o->lane < 0 && o->wait_cs >= 0 && !m->ops[r][o->wait_cs].cs_done)
            break;
        if (o->lane >= 0 && o->first_conn && m->host[o->prank] < o->pk) break;
        m->host[r]++;
        moved = true;
    }
    return moved;
}

/* Every op of rank r's group g done? */
static bool group_done(const sim *m, int r, int g) {
    for (int j = g; j < m->prog->len[r] && m->ops[r][j].group == g; j++)
        if (!m->ops[r][j].done) return false;
    return true;
}

/* Can group g of rank r start: every member enqueued, each send's copy in
 * done, the earlier work on each member's lane (outside the group) done?
 * A group finishes as a whole, so a later op waits for all of it. */
static bool group_can_start(const sim *m, int r, int g) {
    int j = g;
    for (; j < m->prog->len[r] && m->ops[r][j].group == g; j++) {
        const sim_op *o = &m->ops[r][j];
        if (j >= m->host[r]) return false;
        if (m->prog->ops[r][j].kind == ZB_OP_SEND && !o->cs_done) return false;
        if (o->prev_lane >= 0 && m->ops[r][o->prev_lane].group != g &&
            !group_done(m, r, m->ops[r][o->prev_lane].group))
            return false;
    }
    return true;
}

/* One sweep of the device rules over every enqueued op; true if any
 * state changed. */
static bool device_sweep(sim *m) {
    bool changed = false;
    for (int r = 0; r < m->s->p; r++)
        for (int k = 0; k < m->host[r]; k++) {
            sim_op *o = &m->ops[r][k];
            bool prev_cs = k == 0 || m->ops[r][k - 1].cs_done;
            bool recv = m->prog->ops[r][k].kind == ZB_OP_RECV;
            if (o->lane >= 0 && !o->ready && group_can_start(m, r, o->group)) {
                for (int j = o->group; j < m->host[r] &&
                                       m->ops[r][j].group == o->group; j++)
                    m->ops[r][j].ready = true;
                changed = true;
            }
            if (o->lane >= 0 && o->ready && !o->done) {
                sim_op *q = &m->ops[o->prank][o->pk];
                if (q->ready) o->done = q->done = changed = true;
            }
            if (!o->cs_done && prev_cs && (!recv || o->done) &&
                (o->coll < 0 || coll_ready(m, o->coll)))
                o->cs_done = changed = true;
        }
    return changed;
}

/* Runs the programs; returns true when every op of every rank finished,
 * else describes where each rank stopped in why. */
static bool sim_run(const zb_schedule *s, const zb_program *prog,
                    drain_mode mode, bool grouped, char *why, size_t why_len) {
    int p = s->p;
    sim m = {.s = s, .prog = prog, .grouped = grouped};
    m.ops = calloc((size_t)p, sizeof *m.ops);
    m.host = calloc((size_t)p, sizeof *m.host);
    ck_assert(m.ops && m.host);
    for (int r = 0; r < p; r++) {
        m.ops[r] = calloc((size_t)prog->len[r] + 1, sizeof(sim_op));
        ck_assert_ptr_nonnull(m.ops[r]);
    }
    mark_points(&m, mode);
    number_collectives(&m);
    pair_ops(&m);
    for (bool moved = true; moved;) {
        moved = false;
        for (int r = 0; r < p; r++) moved |= host_advance(&m, r);
        while (device_sweep(&m)) moved = true;
    }
    bool all = true;
    for (int r = 0; r < p; r++)
        all &= m.host[r] == prog->len[r] && rank_idle(&m, r, DRAIN_DEVICE);
    if (!all) {
        int at = snprintf(why, why_len, "%s p=%d v=%d m=%d stuck:", s->name,
                          p, s->v, s->m);
        for (int r = 0; r < p && at > 0 && (size_t)at < why_len; r++)
            at += snprintf(why + at, why_len - (size_t)at, " rank %d at op "
                           "%d/%d", r, m.host[r], prog->len[r]);
    }
    for (int r = 0; r < p; r++) {
        free(m.ops[r]);
        free(m.coll_at[r]);
    }
    free(m.ops);
    free(m.coll_at);
    free(m.host);
    return all;
}

typedef struct { int bad, total, split, fused; char first[512]; } tally;

static void check_one(const char *name, int p, int m, int v, drain_mode mode,
                      bool grouped, tally *t) {
    zb_schedule s;
    if (!make_sched(name, p, m, v, &s)) return;
    zb_program prog;
    zb_err err;
    ck_assert_int_eq(zb_lower(&s, &prog, &err), ZB_OK);
    char why[512] = "";
    t->total++;
    if (zb_schedule_splits_bw(name)) t->split++;
    else t->fused++;
    bool ok = sim_run(&s, &prog, mode, grouped, why, sizeof why);
    if (!ok && t->bad++ == 0)
        snprintf(t->first, sizeof t->first, "%s", why);
    zb_program_free(&prog);
    zb_schedule_free(&s);
}

/* Schedule `name` with the vocabulary passes placed (variant 1 or 2) and
 * lowered by zb_lower_vocab; false when it cannot be made or placed. */
static void check_vocab(const char *name, int p, int m, int v, int variant,
                        drain_mode mode, tally *t) {
    zb_schedule s;
    if (!make_sched(name, p, m, v, &s)) return;
    zb_err err;
    if (zb_schedule_place_vocab(&s, variant, &err) != ZB_OK) {
        zb_schedule_free(&s);
        return;
    }
    zb_program prog;
    ck_assert_int_eq(zb_lower_vocab(&s, &prog, &err), ZB_OK);
    char why[512] = "";
    t->total++;
    if (!sim_run(&s, &prog, mode, false, why, sizeof why) && t->bad++ == 0)
        snprintf(t->first, sizeof t->first, "variant %d: %s", variant, why);
    zb_program_free(&prog);
    zb_schedule_free(&s);
}

/* Every schedule with the vocabulary passes placed (zb_schedule_vocab.h),
 * variants 1 and 2, pp 2, 4, 8: the exchanges zb_lower_vocab adds (the
 * embedding partials, X, the statistics, the dX parts, the embedding's
 * gradient) pair up lane by lane with the same tags at both ends
 * (pair_ops) and never deadlock, steady or synchronous. */
START_TEST(vocab_schedules_complete) {
    static const int pps[] = {2, 4, 8};
    tally t = {0};
    for (const char *const *nm = zb_schedule_names(); *nm; nm++)
        for (int k = 0; k < 3; k++) {
            int p = pps[k];
            const int ms[] = {1, p, 2 * p + 1};
            for (int v = 1; v <= 2; v++)
                for (int j = 0; j < 3; j++)
                    for (int variant = 1; variant <= 2; variant++)
                        for (int g = 0; g < 2; g++)
                            check_vocab(*nm, p, ms[j], v, variant,
                                        g ? ZB_DRAIN_SYNC : ZB_DRAIN_STEADY,
                                        &t);
        }
    ck_assert_int_gt(t.total, 200);
    ck_assert_msg(t.bad == 0, "%d of %d lowered vocabulary programs "
                  "deadlock; first: %s", t.bad, t.total, t.first);
}
END_TEST

/* Every schedule, pp 2, 4, 8, v 1 and 2, several microbatch counts, with
 * and without the W split: the steady lowering never deadlocks. */
START_TEST(every_schedule_completes) {
    static const int pps[] = {2, 4, 8};
    tally t = {0};
    for (const char *const *nm = zb_schedule_names(); *nm; nm++)
        for (int k = 0; k < 3; k++) {
            int p = pps[k];
            const int ms[] = {1, p, p + 1, 2 * p, 4 * p + 3};
            for (int v = 1; v <= 2; v++)
                for (int j = 0; j < 5; j++)
                    for (int g = 0; g < 3; g++)
                        check_one(*nm, p, ms[j], v, g == 0 ? ZB_DRAIN_STEADY
                                  : g == 1 ? ZB_DRAIN_STEADY_TP : ZB_DRAIN_SYNC,
                                  false, &t);
        }
    ck_assert_int_gt(t.total, 600);
    ck_assert_int_gt(t.split, 150);
    ck_assert_int_gt(t.fused, 90);
    ck_assert_msg(t.bad == 0, "%d of %d lowered programs deadlock; first: %s",
                  t.bad, t.total, t.first);
}
END_TEST

/* The simulation finds deadlocks: zb-v at pp 2 and 4 with lazy loading
 * and lazy connections (the step-1 hang), and a fully synchronous host. */
START_TEST(deadlocks_found) {
    static const int pps[] = {2, 4};
    for (int k = 0; k < 2; k++) {
        tally t = {0};
        check_one("zb-v", pps[k], 4 * pps[k], 2, ZB_DRAIN_LAZY, true, &t);
        ck_assert_int_eq(t.total, 1);
        ck_assert_msg(t.bad == 1, "zb-v p=%d: lazy loading does not deadlock",
                      pps[k]);
        tally u = {0};
        check_one("zb-v", pps[k], 4 * pps[k], 2, ZB_DRAIN_ALL, true, &u);
        ck_assert_int_eq(u.bad, 1);
    }
    /* and not everything deadlocks: 1f1b survives a synchronous host */
    tally w = {0};
    check_one("1f1b", 4, 8, 1, ZB_DRAIN_ALL, true, &w);
    ck_assert_int_eq(w.total, 1);
    ck_assert_int_eq(w.bad, 0);
}
END_TEST

/* Why the NCCL transport does not put a run of consecutive transfers
 * into one NCCL group: a group finishes as a whole, which ties a
 * receive to an unrelated send; zb-1p at pp 4 then deadlocks. */
START_TEST(grouping_runs_deadlocks) {
    tally t = {0};
    check_one("zb-1p", 4, 4, 1, ZB_DRAIN_STEADY, true, &t);
    ck_assert_int_eq(t.total, 1);
    ck_assert_int_eq(t.bad, 1);
    tally u = {0};
    check_one("zb-1p", 4, 4, 1, ZB_DRAIN_STEADY, false, &u);
    ck_assert_int_eq(u.bad, 0);
}
END_TEST

/* A receive moved before the compute that its sender waits on: rank 1 of
 * 1f1b p=2 receives the activation of mb 1 before sending the gradient
 * of mb 0 while rank 0 waits (a drain before its B) for that gradient. */
START_TEST(bad_order_found) {
    zb_schedule s;
    zb_err err;
    ck_assert_int_eq(zb_sched_1f1b(2, 4, &s, &err), ZB_OK);
    zb_program prog;
    ck_assert_int_eq(zb_lower(&s, &prog, &err), ZB_OK);
    char why[512];
    ck_assert(sim_run(&s, &prog, ZB_DRAIN_ALL, true, why, sizeof why));
    /* rank 0: move its first gradient receive to the very front */
    zb_op *ops = prog.ops[0];
    int g = -1;
    for (int i = 0; i < prog.len[0] && g < 0; i++)
        if (ops[i].kind == ZB_OP_RECV && ops[i].msg == ZB_MSG_GRAD) g = i;
    ck_assert_int_ge(g, 1);
    zb_op moved = ops[g];
    memmove(&ops[1], &ops[0], (size_t)g * sizeof *ops);
    ops[0] = moved;
    ck_assert(!sim_run(&s, &prog, ZB_DRAIN_ALL, true, why, sizeof why));
    ck_assert_ptr_nonnull(strstr(why, "stuck"));
    zb_program_free(&prog);
    zb_schedule_free(&s);
}
END_TEST

int main(void) {
    Suite *su = suite_create("lower_drain");
    TCase *tc = tcase_create("lower_drain");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, every_schedule_completes);
    tcase_add_test(tc, deadlocks_found);
    tcase_add_test(tc, grouping_runs_deadlocks);
    tcase_add_test(tc, bad_order_found);
    tcase_add_test(tc, vocab_schedules_complete);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
