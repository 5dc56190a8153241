/* transport.c - what every transport shares, see transport.h. */
#include "executor/comm/transport.h"

zb_status zb_group_member(const zb_transport *t, const zb_group *g, int *me,
                          zb_err *err) {
    if (g->n < 1 || g->n > ZB_MAX_GROUP)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: group %d has %d members "
                       "(1..%d allowed)", t->rank, g->id, g->n, ZB_MAX_GROUP);
    *me = -1;
    for (int i = 0; i < g->n; i++) {
        if (g->ranks[i] < 0 || g->ranks[i] >= t->world)
            return zb_fail(err, ZB_ERUNTIME, "rank %d: group %d names rank "
                           "%d out of range", t->rank, g->id, g->ranks[i]);
        if (g->ranks[i] == t->rank) *me = i;
    }
    if (*me < 0)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: not a member of group %d",
                       t->rank, g->id);
    return ZB_OK;
}
