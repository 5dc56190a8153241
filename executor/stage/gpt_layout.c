/* gpt_layout.c - what a slot of the stage program holds and where (the
 * carving of a chunk's activation slots, gpt.h) and the slot bookkeeping
 * with its memory count (slots.h), shared by the set-up (gpt.c) and the
 * passes (gpt_passes.c). Backend independent: only pointer arithmetic on
 * backend memory, never a dereference. */
#include "executor/stage/gpt.h"

float *zb_gpt_take(float *base, size_t *off, size_t n) {
    float *p = base ? base + *off : NULL;
    *off += n;
    return p;
}

size_t zb_gpt_layer_carve_fwd(const zb_stage *st, float *base,
                              zb_layer_acts *a) {
    size_t N = (size_t)st->N, C = (size_t)st->C, Cl = (size_t)st->Cl,
           Fl = (size_t)st->Fl, off = 0;
    a->ln1 = zb_gpt_take(base, &off, N * C);
    a->ln1_mean = zb_gpt_take(base, &off, N);
    a->ln1_rstd = zb_gpt_take(base, &off, N);
    a->qkv = zb_gpt_take(base, &off, N * 3 * Cl);
    /* kept only without recompute; else rebuilt into st->rc_att */
    a->att = st->rc == ZB_RECOMPUTE_NONE ? zb_gpt_take(base, &off, st->att_floats)
                                         : st->rc_att;
    a->atty = zb_gpt_take(base, &off, N * Cl);
    a->res2 = zb_gpt_take(base, &off, N * C);
    a->ln2 = zb_gpt_take(base, &off, N * C);
    a->ln2_mean = zb_gpt_take(base, &off, N);
    a->ln2_rstd = zb_gpt_take(base, &off, N);
    a->fch = zb_gpt_take(base, &off, N * Fl);
    a->fch_gelu = zb_gpt_take(base, &off, N * Fl);
    a->dres2 = a->dln2 = a->dfch = a->dqkv = a->dln1 = NULL;
    return off;
}

size_t zb_gpt_layer_carve(const zb_stage *st, float *base, zb_layer_acts *a) {
    size_t N = (size_t)st->N, C = (size_t)st->C, Cl = (size_t)st->Cl,
           Fl = (size_t)st->Fl, off = zb_gpt_layer_carve_fwd(st, base, a);
    a->dres2 = zb_gpt_take(base, &off, N * C);
    a->dln2 = zb_gpt_take(base, &off, N * C);
    a->dfch = zb_gpt_take(base, &off, N * Fl);
    a->dqkv = zb_gpt_take(base, &off, N * 3 * Cl);
    a->dln1 = zb_gpt_take(base, &off, N * C);
    return off;
}

size_t zb_gpt_slot_carve(const zb_stage *st, const zb_gpt_chunk *ck,
                         float *fbase, float *bbase, zb_slot_view *sv,
                         size_t *b_floats) {
    size_t N = (size_t)st->N, C = (size_t)st->C, L = (size_t)ck->n_layers,
           off = 0, boff = 0;
    size_t hn = ck->head ? 1 : 0; /* head buffers only on the head chunk */
    bool full = st->rc == ZB_RECOMPUTE_FULL;
    /* what B writes (full: the B part) */
    float *bb = full ? bbase : fbase;
    size_t *bo = full ? &boff : &off;
    sv->resid = zb_gpt_take(fbase, &off, (L + 1) * N * C);
    sv->dresid = zb_gpt_take(bb, bo, L * N * C);
    sv->grad_in = zb_gpt_take(fbase, &off, N * C);
    sv->lnf = zb_gpt_take(fbase, &off, hn * N * C);
    sv->lnf_mean = zb_gpt_take(fbase, &off, hn * N);
    sv->lnf_rstd = zb_gpt_take(fbase, &off, hn * N);
    sv->dlnf = zb_gpt_take(fbase, &off, hn * N * C);
    sv->dlogits = zb_gpt_take(fbase, &off, hn * N * (size_t)st->Vp);
    sv->layers = zb_gpt_take(bb, bo, L * ck->layer_floats);
    sv->tokens = NULL;
    *b_floats = boff;
    return off;
}

void zb_gpt_slot_get(const zb_stage *st, const zb_gpt_chunk *ck, int slot,
                     int bslot, zb_slot_view *sv) {
    size_t bf;
    float *bbase = bslot >= 0 && ck->bslot_floats > 0
                       ? ck->bslots + (size_t)bslot * ck->bslot_floats
                       : NULL;
    zb_gpt_slot_carve(st, ck, ck->slots + (size_t)slot * ck->slot_floats,
                      bbase, sv, &bf);
    sv->tokens = ck->tokens + (size_t)slot * st->N;
}

float *zb_gpt_dresid(const zb_stage *st, const zb_gpt_chunk *ck,
                     const zb_slot_view *sv, int l) {
    if (l == ck->n_layers) return sv->grad_in;
    return sv->dresid ? sv->dresid + (size_t)l * st->N * st->C : NULL;
}

bool zb_gpt_bad_index(const zb_stage *st, int c, int mb) {
    return c < 0 || c >= st->v || mb < 0 || mb >= st->m;
}

static double slot_bytes(const zb_stage *st, const zb_gpt_chunk *ck) {
    return (double)ck->slot_floats * sizeof(float) + (double)st->N * sizeof(int);
}

static void count(zb_stage *st, double bytes) {
    st->act_bytes += bytes;
    if (st->act_bytes > st->act_peak_bytes) st->act_peak_bytes = st->act_bytes;
}

/* Slot of (chunk c, mb), taking a free one on first touch (slots.h); -1
 * if none. Counts the activation memory a newly taken slot holds. */
int zb_gpt_slot_acquire(zb_stage *st, int c, int mb) {
    zb_gpt_chunk *ck = &st->chunks[c];
    bool taken;
    int s = zb_slots_acquire(&ck->sl, mb, &taken);
    if (taken) count(st, slot_bytes(st, ck));
    return s;
}

int zb_gpt_bslot_acquire(zb_stage *st, int c, int mb) {
    zb_gpt_chunk *ck = &st->chunks[c];
    bool taken;
    int s = zb_slots_acquire(&ck->bsl, mb, &taken);
    if (taken) count(st, (double)ck->bslot_floats * sizeof(float));
    return s;
}

/* Back to the pool with its B part; mapping and buffers stay until reuse
 * (slots.h). */
void zb_gpt_slot_release(zb_stage *st, int c, int s) {
    zb_gpt_chunk *ck = &st->chunks[c];
    int bs = zb_slots_owned(&ck->bsl, ck->sl.slot_mb[s]);
    if (bs >= 0) {
        ck->bsl.state[bs] = ZB_SLOT_FREE;
        st->act_bytes -= (double)ck->bslot_floats * sizeof(float);
    }
    ck->sl.state[s] = ZB_SLOT_FREE;
    st->act_bytes -= slot_bytes(st, ck);
}
