/* gpt_layout.c - what a slot of the stage program holds and where (the
 * carving of a chunk's activation slots, gpt.h) and the slot bookkeeping
 * with its memory count (slots.h), shared by the set-up (gpt.c) and the
 * passes (gpt_passes.c). Backend independent: only pointer arithmetic on
 * backend memory, never a dereference. Carved in bytes: activations of
 * st->es bytes an element, statistics fp32, every buffer starting at a
 * multiple of ops.act_align (gpt.h has the table of types). */
#include "executor/stage/gpt.h"

size_t zb_gpt_aligned(const zb_stage *st, size_t n, size_t es) {
    size_t al = st->ops.act_align > 0 ? st->ops.act_align : 1;
    return (n * es + al - 1) / al * al;
}

void *zb_gpt_take(const zb_stage *st, char *base, size_t *off, size_t n,
                  size_t es) {
    void *p = base ? base + *off : NULL;
    *off += zb_gpt_aligned(st, n, es);
    return p;
}

/* an activation buffer of n elements / an fp32 one */
#define ACT(n) zb_gpt_take(st, base, &off, (n), st->es)
#define F32(n) zb_gpt_take(st, base, &off, (n), sizeof(float))

size_t zb_gpt_layer_carve_fwd(const zb_stage *st, char *base,
                              zb_layer_acts *a) {
    size_t N = (size_t)st->N, C = (size_t)st->C, Cl = (size_t)st->Cl,
           Fl = (size_t)st->Fl, off = 0;
    a->ln1 = ACT(N * C);
    a->ln1_mean = F32(N);
    a->ln1_rstd = F32(N);
    a->qkv = ACT(N * (size_t)st->QKVl);
    /* kept only without recompute; else rebuilt into st->rc_att */
    a->att = st->rc == ZB_RECOMPUTE_NONE
                 ? zb_gpt_take(st, base, &off, st->att_bytes, 1)
                 : st->rc_att;
    a->atty = ACT(N * Cl);
    a->res2 = ACT(N * C);
    a->ln2 = ACT(N * C);
    a->ln2_mean = F32(N);
    a->ln2_rstd = F32(N);
    a->fch = ACT(N * (size_t)st->FCl);
    a->fch_gelu = ACT(N * Fl);
    a->dres2 = a->dln2 = a->dfch = a->dqkv = a->dln1 = NULL;
    return off;
}

size_t zb_gpt_layer_carve(const zb_stage *st, char *base, zb_layer_acts *a) {
    size_t N = (size_t)st->N, C = (size_t)st->C,
           off = zb_gpt_layer_carve_fwd(st, base, a);
    a->dres2 = ACT(N * C);
    a->dln2 = ACT(N * C);
    a->dfch = ACT(N * (size_t)st->FCl);
    a->dqkv = ACT(N * (size_t)st->QKVl);
    a->dln1 = ACT(N * C);
    return off;
}

size_t zb_gpt_slot_carve(const zb_stage *st, const zb_gpt_chunk *ck,
                         char *fbase, char *bbase, zb_slot_view *sv,
                         size_t *b_bytes) {
    size_t N = (size_t)st->N, C = (size_t)st->C, L = (size_t)ck->n_layers,
           off = 0, boff = 0;
    size_t hn = ck->head ? 1 : 0; /* head buffers only on the head chunk */
    bool full = st->rc == ZB_RECOMPUTE_FULL;
    /* what B writes (full: the B part) */
    char *bb = full ? bbase : fbase;
    size_t *bo = full ? &boff : &off;
    size_t es = st->es;
    sv->resid = zb_gpt_take(st, fbase, &off, (L + 1) * st->nc_bytes, 1);
    sv->dresid = zb_gpt_take(st, bb, bo, L * st->nc_bytes, 1);
    sv->grad_in = zb_gpt_take(st, fbase, &off, N * C, es);
    sv->lnf = zb_gpt_take(st, fbase, &off, hn * N * C, es);
    sv->lnf_mean = zb_gpt_take(st, fbase, &off, hn * N, sizeof(float));
    sv->lnf_rstd = zb_gpt_take(st, fbase, &off, hn * N, sizeof(float));
    sv->dlnf = zb_gpt_take(st, fbase, &off, hn * N * C, es);
    sv->dlogits = zb_gpt_take(st, fbase, &off, hn * N * (size_t)st->Vp, es);
    sv->layers = zb_gpt_take(st, bb, bo, L * ck->layer_bytes, 1);
    sv->tokens = NULL;
    *b_bytes = boff;
    return off;
}

void zb_gpt_slot_get(const zb_stage *st, const zb_gpt_chunk *ck, int slot,
                     int bslot, zb_slot_view *sv) {
    size_t bb;
    char *bbase = bslot >= 0 && ck->bslot_bytes > 0
                      ? ck->bslots + (size_t)bslot * ck->bslot_bytes
                      : NULL;
    zb_gpt_slot_carve(st, ck, ck->slots + (size_t)slot * ck->slot_bytes,
                      bbase, sv, &bb);
    sv->tokens = ck->tokens + (size_t)slot * st->N;
}

zb_act *zb_gpt_act_at(const zb_stage *st, const zb_act *p, size_t n) {
    return (zb_act *)((const char *)p + n * st->es);
}

zb_act *zb_gpt_resid(const zb_stage *st, const zb_slot_view *sv, int l) {
    return (zb_act *)((char *)sv->resid + (size_t)l * st->nc_bytes);
}

zb_act *zb_gpt_dresid(const zb_stage *st, const zb_gpt_chunk *ck,
                      const zb_slot_view *sv, int l) {
    if (l == ck->n_layers) return sv->grad_in;
    return sv->dresid ? (zb_act *)((char *)sv->dresid +
                                   (size_t)l * st->nc_bytes)
                      : NULL;
}

bool zb_gpt_bad_index(const zb_stage *st, int c, int mb) {
    return c < 0 || c >= st->v || mb < 0 || mb >= st->m;
}

static double slot_bytes(const zb_stage *st, const zb_gpt_chunk *ck) {
    return (double)ck->slot_bytes + (double)st->N * sizeof(int);
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
    if (taken) count(st, (double)ck->bslot_bytes);
    return s;
}

/* Back to the pool with its B part; mapping and buffers stay until reuse
 * (slots.h). */
void zb_gpt_slot_release(zb_stage *st, int c, int s) {
    zb_gpt_chunk *ck = &st->chunks[c];
    int bs = zb_slots_owned(&ck->bsl, ck->sl.slot_mb[s]);
    if (bs >= 0) {
        ck->bsl.state[bs] = ZB_SLOT_FREE;
        st->act_bytes -= (double)ck->bslot_bytes;
    }
    ck->sl.state[s] = ZB_SLOT_FREE;
    st->act_bytes -= slot_bytes(st, ck);
}
