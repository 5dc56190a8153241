/* stage_undo.c - a copy of the stage's optimizer state (parameters and
 * both AdamW moments, pt.floats each) to take a speculative optimizer step
 * from and to roll it back to (post-validation, the run's rank.c).
 *
 * The copy is one backend allocation of 3 x pt.floats floats, owned by the
 * caller: zb_stage_undo_new makes it (cpu only: NULL and ZB_OK for other
 * backends, which keep the synchronous step), zb_stage_undo_free releases
 * it and must run before zb_stage_free. keep copies the state aside,
 * restore copies it back; both leave the gradients alone. Copies are
 * byte-for-byte, so a restored stage is the stage that was kept.
 */
#include <stdlib.h>

#include "executor/stage/gpt.h"

struct zb_stage_undo {
    float *copy;   /* [3, pt.floats]: params, mom1, mom2 */
};

zb_status zb_stage_undo_new(zb_stage *st, zb_stage_undo **out, zb_err *err) {
    *out = NULL;
    if (st->cfg.backend != ZB_BACKEND_CPU || st->pt.floats == 0) return ZB_OK;
    zb_stage_undo *u = calloc(1, sizeof *u);
    if (!u) return zb_fail(err, ZB_ENOMEM, "out of memory (undo copy)");
    zb_status s = st->ops.alloc(st->ops.ctx, 3 * st->pt.floats * sizeof(float),
                                (void **)&u->copy, err);
    if (s != ZB_OK) {
        free(u);
        return s;
    }
    *out = u;
    return ZB_OK;
}

void zb_stage_undo_free(zb_stage *st, zb_stage_undo *u) {
    if (!u) return;
    if (st && u->copy) st->ops.release(st->ops.ctx, u->copy);
    free(u);
}

/* Copies the three arrays from the stage into u (keep) or back (restore). */
static zb_status copy3(zb_stage *st, zb_stage_undo *u, bool back,
                       zb_err *err) {
    float *arrays[3] = {st->params, st->mom1, st->mom2};
    size_t n = st->pt.floats, bytes = n * sizeof(float);
    for (int i = 0; i < 3; i++) {
        float *saved = u->copy + (size_t)i * n;
        ZB_TRY(st->ops.copy(st->ops.ctx, back ? arrays[i] : saved,
                            back ? saved : arrays[i], bytes, err));
    }
    return ZB_OK;
}

zb_status zb_stage_undo_keep(zb_stage *st, zb_stage_undo *u, zb_err *err) {
    return copy3(st, u, false, err);
}

zb_status zb_stage_undo_restore(zb_stage *st, zb_stage_undo *u, zb_err *err) {
    ZB_TRY(copy3(st, u, true, err));
    return zb_gpt_weights_changed(st, err);
}
