/* zb_staging.c - staging memory of pipeline messages (zb_staging.h). */
#include "common/zb_staging.h"

size_t zb_staging_msg_floats(size_t tokens, int hidden, int elem_bytes) {
    size_t bytes = tokens * (size_t)hidden * (size_t)elem_bytes;
    return (bytes + sizeof(float) - 1) / sizeof(float);
}

/* Messages rank r's rings carry in one step: for each of its chunks, the
 * boundary below (activation in, gradient out) and above (activation out,
 * gradient in) when the neighbouring virtual stage lives elsewhere. */
static void rank_counts(const zb_schedule *shape, int r, int m,
                        int n[ZB_STAGING_RINGS]) {
    /* DUAL: each copy carries its own half of the micro-batches */
    int k = shape->placement == ZB_PLACE_DUAL ? m / 2 : m;
    for (int c = 0; c < shape->v; c++) {
        int s = zb_vstage(shape, r, c), q, chunk;
        int prev = zb_vstage_prev(shape, s), next = zb_vstage_next(shape, s);
        if (prev >= 0) {
            zb_vstage_owner(shape, prev, &q, &chunk);
            if (q != r) { /* activation from q, gradient back to q */
                n[zb_staging_ring(q < r, 0)] += k;
                n[zb_staging_ring(r < q, 1)] += k;
            }
        }
        if (next >= 0) {
            zb_vstage_owner(shape, next, &q, &chunk);
            if (q != r) { /* activation to q, gradient from q */
                n[zb_staging_ring(r < q, 1)] += k;
                n[zb_staging_ring(q < r, 0)] += k;
            }
        }
    }
}

void zb_staging_slots(int p, int v, zb_placement pl, int m,
                      int slots[ZB_STAGING_RINGS]) {
    /* the placement functions read only p, v and placement */
    zb_schedule shape = {.p = p, .v = v, .m = m, .placement = pl};
    for (int k = 0; k < ZB_STAGING_RINGS; k++) slots[k] = 0;
    for (int r = 0; r < p; r++) {
        int n[ZB_STAGING_RINGS] = {0};
        rank_counts(&shape, r, m, n);
        for (int k = 0; k < ZB_STAGING_RINGS; k++)
            if (n[k] > slots[k]) slots[k] = n[k];
    }
}

size_t zb_staging_ring_bytes(size_t slots, size_t msg_floats) {
    return slots * msg_floats * sizeof(float);
}

size_t zb_staging_bytes(int world, const int slots[ZB_STAGING_RINGS],
                        size_t msg_floats) {
    if (world <= 1) return zb_staging_ring_bytes(1, msg_floats);
    size_t total = 0;
    for (int k = 0; k < ZB_STAGING_RINGS; k++)
        total += zb_staging_ring_bytes((size_t)slots[k], msg_floats);
    return total;
}
