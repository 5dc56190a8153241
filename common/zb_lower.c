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

/* Ops of one action: receive before, compute, send after. Writes up to 3
 * ops into out and returns how many. */
static int lower_action(const zb_schedule *s, int r, int i, zb_op *out) {
    const zb_action *a = &s->acts[r][i];
    int n = s->p * s->v, vs = zb_vstage(s, r, a->chunk), k = 0;
    bool fwd = a->pass == ZB_F, bwd = a->pass == ZB_B || a->pass == ZB_BW;
    /* the neighbour we receive from and the one we send to */
    int from = fwd ? vs - 1 : vs + 1, to = fwd ? vs + 1 : vs - 1;
    zb_msg_kind msg = fwd ? ZB_MSG_ACT : ZB_MSG_GRAD;
    if ((fwd || bwd) && from >= 0 && from < n && owner(s, from) != r)
        out[k++] = (zb_op){ZB_OP_RECV, i, owner(s, from), msg, vs, a->mb};
    out[k++] = (zb_op){ZB_OP_COMPUTE, i, r, msg, vs, a->mb};
    if ((fwd || bwd) && to >= 0 && to < n && owner(s, to) != r)
        out[k++] = (zb_op){ZB_OP_SEND, i, owner(s, to), msg, to, a->mb};
    return k;
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
        for (int i = 0; i < s->len[r]; i++)
            out->len[r] += lower_action(s, r, i, out->ops[r] + out->len[r]);
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
