/* slots.c - the activation-slot table of a chunk, see slots.h. */
#include "executor/stage/slots.h"

#include <stdlib.h>

/* Most microbatches in flight on chunk c of rank's action list, from their
 * F (or from their B/BW: from_b) until their W/BW. */
static int max_in_flight(const zb_schedule *s, int rank, int c, bool from_b) {
    int cur = 0, peak = 0;
    for (int i = 0; i < s->len[rank]; i++) {
        const zb_action *a = &s->acts[rank][i];
        if (a->chunk != c) continue;
        bool start = from_b ? a->pass == ZB_B || a->pass == ZB_BW
                            : a->pass == ZB_F;
        if (start && ++cur > peak) peak = cur;
        if (a->pass == ZB_W || a->pass == ZB_BW) cur--;
    }
    return peak;
}

zb_status zb_slots_init(zb_slots *t, const zb_schedule *s, int rank,
                        int chunk, bool from_b, zb_err *err) {
    t->n = max_in_flight(s, rank, chunk, from_b);
    t->m = s->m;
    size_t ns = (size_t)(t->n > 0 ? t->n : 1);
    t->slot_of = (int *)zb_calloc((size_t)t->m, sizeof(int), err);
    t->slot_mb = (int *)zb_calloc(ns, sizeof(int), err);
    t->state = (unsigned char *)zb_calloc(ns, 1, err);
    if (!t->slot_of || !t->slot_mb || !t->state) return ZB_ENOMEM;
    for (int j = 0; j < t->m; j++) t->slot_of[j] = -1;
    for (size_t k = 0; k < ns; k++) t->slot_mb[k] = -1;
    return ZB_OK;
}

void zb_slots_free(zb_slots *t) {
    free(t->slot_of);
    free(t->slot_mb);
    free(t->state);
    t->slot_of = t->slot_mb = NULL;
    t->state = NULL;
}

int zb_slots_acquire(zb_slots *t, int mb, bool *taken) {
    *taken = false;
    int s = zb_slots_owned(t, mb);
    if (s >= 0) return s;
    for (s = 0; s < t->n; s++) {
        if (t->state[s] != ZB_SLOT_FREE) continue;
        if (t->slot_mb[s] >= 0 && t->slot_of[t->slot_mb[s]] == s)
            t->slot_of[t->slot_mb[s]] = -1; /* forget the stale owner */
        t->state[s] = ZB_SLOT_TAKEN;
        t->slot_mb[s] = mb;
        t->slot_of[mb] = s;
        *taken = true;
        return s;
    }
    return -1;
}

int zb_slots_owned(const zb_slots *t, int mb) {
    int s = t->slot_of[mb];
    return s >= 0 && t->state[s] != ZB_SLOT_FREE ? s : -1;
}

zb_status zb_slots_expect(const zb_slots *t, int chunk, int mb, int want,
                          const char *pass, int *slot, zb_err *err) {
    int s = t->slot_of[mb];
    if (s < 0 || t->state[s] != want)
        return zb_fail(err, ZB_ERUNTIME, "%s on chunk %d mb %d out of order "
                       "(needs %s first)", pass, chunk, mb,
                       want == ZB_SLOT_FWD ? "F" : "B");
    *slot = s;
    return ZB_OK;
}
