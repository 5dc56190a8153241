/* zb_lower_vocab.c - lowering with vocabulary parallelism: zb_lower's
 * program with the exchanges of the sharded embedding and output layer
 * around it (zb_lower.h says which, where). Every sum (the embedding
 * partials, the dX parts) is made by its one receiver in pipeline-rank
 * order, and the statistics reach every rank whole through an all-reduce
 * that adds zeros to each slot's one value, so every rank combines the
 * same table; no result depends on the transport's reduction order.
 */
#include "common/zb_lower.h"

#include <stdlib.h>
#include <string.h>

/* A rank's ops under construction. */
typedef struct {
    zb_op *ops;
    int len, cap;
} oplist;

typedef struct {
    const zb_schedule *s;
    int r, E, L, n; /* this rank, vstage 0's rank, the last's, vstages */
    oplist *out;
    zb_err *err;
} ctx;

static zb_status put(ctx *c, zb_op op) {
    oplist *o = c->out;
    if (o->len == o->cap) {
        int cap = o->cap ? 2 * o->cap : 64;
        zb_op *p = realloc(o->ops, (size_t)cap * sizeof *p);
        if (!p) return zb_fail(c->err, ZB_ENOMEM, "out of memory (lowering)");
        o->ops = p;
        o->cap = cap;
    }
    o->ops[o->len++] = op;
    return ZB_OK;
}

static zb_status vop(ctx *c, int action, zb_vocab_what w, int mb) {
    return put(c, (zb_op){ZB_OP_VOCAB, action, c->r, ZB_MSG_ACT, -1, mb, w});
}

static zb_status msg(ctx *c, zb_op_kind k, int action, int peer,
                     zb_vocab_what w, int mb) {
    zb_msg_kind m = w == ZB_V_DX || w == ZB_V_DEMB ? ZB_MSG_GRAD : ZB_MSG_ACT;
    return put(c, (zb_op){k, action, peer, m, -1, mb, w});
}

/* k (SEND or RECV) of w with every other rank, in rank order. */
static zb_status with_all(ctx *c, zb_op_kind k, int action, zb_vocab_what w,
                          int mb) {
    for (int q = 0; q < c->s->p; q++)
        if (q != c->r) ZB_TRY(msg(c, k, action, q, w, mb));
    return ZB_OK;
}

static int vstage_of(const ctx *c, const zb_action *a) {
    return zb_vstage(c->s, c->r, a->chunk);
}

/* What runs right before the compute of action i. */
static zb_status pre(ctx *c, int i) {
    const zb_action *a = &c->s->acts[c->r][i];
    int vs = vstage_of(c, a), mb = a->mb;
    bool bwd = a->pass == ZB_B || a->pass == ZB_BW;
    if (a->pass == ZB_S && c->r != c->L)
        return msg(c, ZB_OP_RECV, i, c->L, ZB_V_X, mb);
    if (a->pass == ZB_T && c->s->vocab == 1)
        return vop(c, i, ZB_V_STATS, mb);
    if (bwd && vs == c->n - 1) {
        ZB_TRY(with_all(c, ZB_OP_RECV, i, ZB_V_DX, mb));
        return vop(c, i, ZB_V_DX_SUM, mb);
    }
    return ZB_OK;
}

/* What runs right after the compute of action i. */
static zb_status post(ctx *c, int i) {
    const zb_action *a = &c->s->acts[c->r][i];
    int vs = vstage_of(c, a), mb = a->mb, v = c->s->vocab;
    bool bwd = a->pass == ZB_B || a->pass == ZB_BW;
    if (a->pass == ZB_F && vs == c->n - 1)
        return with_all(c, ZB_OP_SEND, i, ZB_V_X, mb);
    if (a->pass == ZB_S && v == 2) {
        ZB_TRY(vop(c, i, ZB_V_STATS, mb));
        ZB_TRY(vop(c, i, ZB_V_DX2, mb));
    }
    /* the dX part: after S in variant 2, after T in variant 1 */
    if (c->r != c->L && ((a->pass == ZB_S && v == 2) ||
                         (a->pass == ZB_T && v == 1)))
        return msg(c, ZB_OP_SEND, i, c->L, ZB_V_DX, mb);
    if (bwd && vs == 0) return vop(c, i, ZB_V_EMB_BWD, mb);
    return ZB_OK;
}

static zb_status prologue(ctx *c) {
    for (int mb = 0; mb < c->s->m; mb++) {
        ZB_TRY(vop(c, -1, ZB_V_EMB, mb));
        if (c->r != c->E) ZB_TRY(msg(c, ZB_OP_SEND, -1, c->E, ZB_V_EMB, mb));
    }
    if (c->r != c->E) return ZB_OK;
    for (int mb = 0; mb < c->s->m; mb++) {
        ZB_TRY(with_all(c, ZB_OP_RECV, -1, ZB_V_EMB, mb));
        ZB_TRY(vop(c, -1, ZB_V_EMB_SUM, mb));
    }
    return ZB_OK;
}

static zb_status epilogue(ctx *c) {
    for (int mb = 0; mb < c->s->m; mb++) {
        if (c->r == c->E) {
            ZB_TRY(with_all(c, ZB_OP_SEND, -1, ZB_V_DEMB, mb));
            continue;
        }
        ZB_TRY(msg(c, ZB_OP_RECV, -1, c->E, ZB_V_DEMB, mb));
        ZB_TRY(vop(c, -1, ZB_V_EMB_BWD, mb));
    }
    return ZB_OK;
}

/* Rank c->r's ops: the base program's with the vocabulary ops around its
 * computes. */
static zb_status lower_rank(ctx *c, const zb_op *base, int len) {
    ZB_TRY(prologue(c));
    for (int k = 0; k < len; k++) {
        bool comp = base[k].kind == ZB_OP_COMPUTE;
        if (comp) ZB_TRY(pre(c, base[k].action));
        ZB_TRY(put(c, base[k]));
        if (comp) ZB_TRY(post(c, base[k].action));
    }
    return epilogue(c);
}

zb_status zb_lower_vocab(const zb_schedule *s, zb_program *out, zb_err *err) {
    if (!s->vocab) return zb_lower(s, out, err);
    zb_program base;
    ZB_TRY(zb_lower(s, &base, err));
    int E, L, ch;
    zb_vstage_owner(s, 0, &E, &ch);
    zb_vstage_owner(s, s->p * s->v - 1, &L, &ch);
    zb_status st = ZB_OK;
    for (int r = 0; r < s->p && st == ZB_OK; r++) {
        oplist o = {0};
        ctx c = {s, r, E, L, s->p * s->v, &o, err};
        st = lower_rank(&c, base.ops[r], base.len[r]);
        if (st != ZB_OK) {
            free(o.ops);
            break;
        }
        free(base.ops[r]);
        base.ops[r] = o.ops;
        base.len[r] = o.len;
    }
    if (st != ZB_OK) {
        zb_program_free(&base);
        return st;
    }
    *out = base;
    return ZB_OK;
}

int zb_lower_op_tag(const zb_schedule *s, const zb_op *op, int self) {
    if (op->what == ZB_V_NONE)
        return zb_lower_tag(s, op->msg, op->vstage, op->mb);
    int sender = op->kind == ZB_OP_SEND ? self : op->peer;
    return ZB_TAG_VOCAB | ((sender * s->m + op->mb) << 5) | (op->what << 1) |
           (int)op->msg;
}
