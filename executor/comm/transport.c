/* transport.c - what every transport shares, see transport.h. */
#include "executor/comm/transport.h"

zb_status zb_group_member(const zb_transport *t, const zb_group *g, int *me,
                          zb_err *err) {
    int step = g->n > 1 ? g->stride : 1;
    if (g->n < 1 || step == 0)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: group %d has %d members "
                       "with stride %d (n >= 1, stride != 0 needed)", t->rank,
                       g->id, g->n, g->stride);
    long last = (long)g->first + (long)(g->n - 1) * step;
    if (g->first < 0 || g->first >= t->world || last < 0 || last >= t->world)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: group %d names ranks %d..%ld "
                       "out of range 0..%d", t->rank, g->id, g->first, last,
                       t->world - 1);
    int d = t->rank - g->first;
    *me = d % step == 0 && d / step >= 0 && d / step < g->n ? d / step : -1;
    if (*me < 0)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: not a member of group %d",
                       t->rank, g->id);
    return ZB_OK;
}
