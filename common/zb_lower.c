/* zb_lower.c - see zb_lower.h. */
#include "common/zb_lower.h"

#include <stdlib.h>
#include <string.h>

bool zb_lower_cross(const zb_schedule *s, int vstage_a, int vstage_b) {
    int ra, rb, ca, cb;
    zb_vstage_owner(s, vstage_a, &ra, &ca);
    zb_vstage_owner(s, vstage_b, &rb, &cb);
    return ra != rb;
}

int zb_lower_tag(const zb_schedule *s, zb_msg_kind msg, int vstage, int mb) {
    /* the kind in the lowest bit: executor/comm/p2p_channel.h reads it */
    return (vstage * s->m + mb) * 2 + (int)msg;
}

static int owner(const zb_schedule *s, int vstage) {
    int r, c;
    zb_vstage_owner(s, vstage, &r, &c);
    return r;
}

/* The receive before action i of rank r (before) or the send after it
 * (!before), if its pass moves something across ranks: 1 op into out, or
 * 0. */
static int lower_edge(const zb_schedule *s, int r, int i, bool before,
                      zb_op *out) {
    const zb_action *a = &s->acts[r][i];
    int vs = zb_vstage(s, r, a->chunk);
    bool fwd = a->pass == ZB_F, bwd = a->pass == ZB_B || a->pass == ZB_BW;
    if (!fwd && !bwd) return 0;
    /* the neighbour we receive from and the one we send to, in vs's chain
     * (DUAL: its own copy's; -1 past the chain's ends) */
    int prev = zb_vstage_prev(s, vs), next = zb_vstage_next(s, vs);
    int from = fwd ? prev : next, to = fwd ? next : prev;
    zb_msg_kind msg = fwd ? ZB_MSG_ACT : ZB_MSG_GRAD;
    int peer = before ? from : to;
    if (peer < 0 || owner(s, peer) == r) return 0;
    *out = (zb_op){before ? ZB_OP_RECV : ZB_OP_SEND, i, owner(s, peer), msg,
                   before ? vs : to, a->mb, ZB_V_NONE};
    return 1;
}

static zb_op compute_op(const zb_schedule *s, int r, int i) {
    const zb_action *a = &s->acts[r][i];
    zb_msg_kind msg = a->pass == ZB_F ? ZB_MSG_ACT : ZB_MSG_GRAD;
    return (zb_op){ZB_OP_COMPUTE, i, r, msg, zb_vstage(s, r, a->chunk), a->mb,
                   ZB_V_NONE};
}

/* Ops of one step, actions i .. i+k-1 (k = 2 for an overlapped F&B step):
 * every receive, the computes, every send. Writes up to 3k ops into out
 * and returns how many. */
static int lower_step(const zb_schedule *s, int r, int i, int k, zb_op *out) {
    int n = 0;
    for (int j = i; j < i + k; j++) n += lower_edge(s, r, j, true, out + n);
    for (int j = i; j < i + k; j++) out[n++] = compute_op(s, r, j);
    for (int j = i; j < i + k; j++) n += lower_edge(s, r, j, false, out + n);
    return n;
}

zb_status zb_lower(const zb_schedule *s, zb_program *out, zb_err *err) {
    memset(out, 0, sizeof *out);
    out->p = s->p;
    out->len = zb_calloc((size_t)s->p, sizeof(int), err);
    out->ops = zb_calloc((size_t)s->p, sizeof(zb_op *), err);
    if (!out->len || !out->ops) goto oom;
    for (int r = 0; r < s->p; r++) {
        out->ops[r] = zb_calloc((size_t)s->len[r] * 3 + 1, sizeof(zb_op), err);
        if (!out->ops[r]) goto oom;
        for (int i = 0; i < s->len[r]; i++) {
            int k = zb_action_overlaps(&s->acts[r][i]) && i + 1 < s->len[r] ? 2 : 1;
            out->len[r] += lower_step(s, r, i, k, out->ops[r] + out->len[r]);
            i += k - 1;
        }
    }
    return ZB_OK;
oom:
    zb_program_free(out);
    return ZB_ENOMEM;
}

void zb_program_free(zb_program *prog) {
    if (!prog) return;
    if (prog->ops)
        for (int r = 0; r < prog->p; r++) free(prog->ops[r]);
    free(prog->ops);
    free(prog->len);
    memset(prog, 0, sizeof *prog);
}
