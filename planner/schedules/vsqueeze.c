/* vsqueeze.c - zb_vsqueeze (vsqueeze.h): pull passes of a split
 * V schedule into idle unit slots.
 *
 * Unit model: every pass one slot, transfers free. The input order is first
 * timed in it (zb_vunit_times: each pass at the first slot its rank and
 * its dependency allow). Then, in order of slot, each pass moves to the
 * first idle slot of its rank after its dependency (the previous
 * virtual stage's F, the next one's B, its own B for W) and after the
 * previous microbatch of its kind on its chunk (microbatch order is kept),
 * if earlier than its slot; an F moves only where the rank's unit memory
 * (F +1, W -1) stays within the peak it had before, so the peak never
 * grows. Each rank's new order is its passes by slot. With b_first the W
 * are then taken out, each B pulled into the first idle slot after its
 * dependency, and the W put back into the slots left idle (oldest B
 * first), so W only fill what F and B leave, as the paper's second
 * squeeze does.
 */
#include "planner/schedules/vsqueeze.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "planner/schedules/build.h"

typedef struct {
    int p, m, T;
    int *slot;     /* [(vstage * m + mb) * 3 + pass] */
    int *occ;      /* [p * T] action index + 1, 0 idle */
    int *mem;      /* [p * T] unit memory after the slot */
    int *peak;     /* [p] */
} grid;

static int *cell(grid *G, int s, int mb, int pass) {
    return &G->slot[((size_t)s * G->m + mb) * 3 + pass];
}

/* First slot the pass may take: after its dependency and its kind's
 * previous microbatch. */
static int earliest(grid *G, int s, int mb, int pass) {
    int n = 2 * G->p, e = 0, d = -1;
    if (pass == ZB_F && s > 0) d = *cell(G, s - 1, mb, ZB_F);
    if (pass == ZB_B) d = s == n - 1 ? *cell(G, s, mb, ZB_F) : *cell(G, s + 1, mb, ZB_B);
    if (pass == ZB_W) d = *cell(G, s, mb, ZB_B);
    if (d + 1 > e) e = d + 1;
    if (mb > 0 && *cell(G, s, mb - 1, pass) + 1 > e) e = *cell(G, s, mb - 1, pass) + 1;
    return e;
}

static void move(grid *G, int r, int from, int to, int delta) {
    int *occ = G->occ + (size_t)r * G->T, *mem = G->mem + (size_t)r * G->T;
    occ[to] = occ[from], occ[from] = 0;
    if (delta) /* B moves no memory */
        for (int t = to; t < from; t++) mem[t] += delta;
}

/* Lowest slot at or above `floor` an F at slot from may move to on rank
 * r: the unit memory of every slot it passes (to .. from-1) rises by one
 * and must stay within the rank's peak, so it cannot pass the last slot
 * already at the peak; floor if no slot in floor .. from-1 is. */
static int lowest_f(const grid *G, int r, int from, int floor) {
    const int *mem = G->mem + (size_t)r * G->T;
    int t = from - 1;
    while (t >= floor && mem[t] + 1 <= G->peak[r]) t--;
    return t + 1;
}

/* First idle slot of rank r in to .. from-1, or from. */
static int idle_from(const grid *G, int r, int to, int from) {
    const int *occ = G->occ + (size_t)r * G->T;
    while (to < from && occ[to]) to++;
    return to;
}

/* b_first: take the W out and pull each B into the first idle slot after
 * its dependency (slot order, so dependencies are final first). */
static void pull_b(grid *G, const zb_schedule *in) {
    for (int r = 0; r < G->p; r++) {
        int *occ = G->occ + (size_t)r * G->T;
        for (int t = 0; t < G->T; t++)
            if (occ[t] && in->acts[r][occ[t] - 1].pass == ZB_W) occ[t] = 0;
    }
    for (int t = 0; t < G->T; t++)
        for (int r = 0; r < G->p; r++) {
            int *occ = G->occ + (size_t)r * G->T;
            int i = occ[t] - 1;
            if (i < 0 || in->acts[r][i].pass != ZB_B) continue;
            const zb_action *a = &in->acts[r][i];
            int s = zb_vstage(in, r, a->chunk);
            for (int to = earliest(G, s, a->mb, ZB_B); to < t; to++)
                if (!occ[to]) {
                    occ[to] = occ[t], occ[t] = 0;
                    *cell(G, s, a->mb, ZB_B) = to;
                    break;
                }
        }
}

/* Rank r's order: its passes by slot; with b_first the W (taken out by
 * pull_b) go into the idle slots, oldest B first, the rest at the end. */
static zb_status emit(const grid *G, const zb_schedule *in, int r, bool b_first,
                      int *wq, zb_schedule *out, zb_err *err) {
    const int *occ = G->occ + (size_t)r * G->T;
    int qh = 0, qt = 0, nw[2] = {0, 0}, started = 0;
    for (int t = 0; t < G->T; t++) {
        int i = occ[t] - 1;
        if (i >= 0) {
            const zb_action *a = &in->acts[r][i];
            ZB_TRY(zb_sched_put(out, r, (zb_pass)a->pass, a->mb, a->chunk, err));
            if (b_first && a->pass == ZB_B) wq[qt++] = a->chunk;
            started = 1;
        } else if (started && qh < qt) {
            int ch = wq[qh++];
            ZB_TRY(zb_sched_put(out, r, ZB_W, nw[ch]++, ch, err));
        }
    }
    while (qh < qt) {
        int ch = wq[qh++];
        ZB_TRY(zb_sched_put(out, r, ZB_W, nw[ch]++, ch, err));
    }
    return ZB_OK;
}

int zb_vunit_times(const zb_schedule *in, const int *off, int *start) {
    int p = in->p, m = in->m, n = 2 * p, top = 0, remaining = 0, last = 0;
    size_t cells = (size_t)n * m;
    int *end_f = malloc((2 * cells + 4 * (size_t)p) * sizeof(int));
    if (!end_f) return -2;
    int *end_b = end_f + cells, *idx = end_b + cells, *free_at = idx + p;
    int *todo = free_at + p, *on = todo + p;
    for (size_t i = 0; i < 2 * cells; i++) end_f[i] = -1;
    for (int r = p - 1; r >= 0; r--) {
        idx[r] = free_at[r] = 0;
        on[r] = 1, todo[top++] = r;
        remaining += in->len[r];
    }
    while (top > 0) {
        int r = todo[--top], i = idx[r];
        on[r] = 0;
        for (; i < in->len[r]; i++) {
            const zb_action *a = &in->acts[r][i];
            int vs = a->chunk == 0 ? r : n - 1 - r, to = -1, ready;
            size_t c = (size_t)vs * m + a->mb;
            if (a->pass == ZB_F) ready = vs == 0 ? 0 : end_f[c - m], to = vs + 1;
            else if (a->pass == ZB_B) ready = vs == n - 1 ? end_f[c] : end_b[c + m], to = vs - 1;
            else ready = end_b[c];
            if (ready < 0) break;
            int t0 = ready > free_at[r] ? ready : free_at[r];
            start[off[r] + i] = t0;
            free_at[r] = t0 + 1;
            if (a->pass == ZB_F) end_f[c] = t0 + 1;
            if (a->pass == ZB_B) end_b[c] = t0 + 1;
            int q = to >= 0 && to < n ? (to < p ? to : n - 1 - to) : r;
            if (q != r && !on[q]) on[q] = 1, todo[top++] = q;
        }
        remaining -= i - idx[r];
        idx[r] = i;
    }
    for (int r = 0; r < p; r++)
        if (free_at[r] > last) last = free_at[r];
    free(end_f);
    return remaining > 0 ? -1 : last;
}

/* The grid of the input's unit-model timing res: each pass at its slot,
 * each rank's unit memory and peak. G's arrays are allocated and zeroed. */
static void fill_grid(grid *G, const zb_schedule *in, const int *off,
                      const int *start) {
    for (int r = 0; r < G->p; r++) {
        int *mem = G->mem + (size_t)r * G->T;
        for (int i = 0; i < in->len[r]; i++) {
            const zb_action *a = &in->acts[r][i];
            int t = start[off[r] + i];
            G->occ[(size_t)r * G->T + t] = i + 1;
            *cell(G, zb_vstage(in, r, a->chunk), a->mb, a->pass) = t;
            mem[t] = a->pass == ZB_F ? 1 : a->pass == ZB_W ? -1 : 0;
        }
        for (int t = 0; t < G->T; t++) {
            if (t) mem[t] += mem[t - 1];
            if (mem[t] > G->peak[r]) G->peak[r] = mem[t];
        }
    }
}

/* In order of slot: pull each pass to the first idle slot it may take (an
 * F not past the last slot at its rank's peak, lowest_f, which is only
 * looked for above the first idle slot). */
static void squeeze(grid *G, const zb_schedule *in) {
    for (int t = 0; t < G->T; t++)
        for (int r = 0; r < G->p; r++) {
            int i = G->occ[(size_t)r * G->T + t] - 1;
            if (i < 0) continue;
            const zb_action *a = &in->acts[r][i];
            int s = zb_vstage(in, r, a->chunk);
            int to = idle_from(G, r, earliest(G, s, a->mb, a->pass), t);
            if (a->pass == ZB_F && to < t) {
                int lo = lowest_f(G, r, t, to);
                if (lo > to) to = idle_from(G, r, lo, t);
            }
            if (to < t) {
                move(G, r, t, to, a->pass == ZB_F ? 1 : a->pass == ZB_W ? -1 : 0);
                *cell(G, s, a->mb, a->pass) = to;
            }
        }
}

/* Every rank's order from the grid into out (initialised here). */
static zb_status emit_all(const grid *G, const zb_schedule *in, bool b_first,
                          int *wq, zb_schedule *out, zb_err *err) {
    ZB_TRY(zb_schedule_init(out, in->name, G->p, G->m, 2, ZB_PLACE_V, in->len[0], err));
    zb_status st = ZB_OK;
    for (int r = 0; r < G->p && st == ZB_OK; r++) st = emit(G, in, r, b_first, wq, out, err);
    return st;
}

zb_status zb_vsqueeze(const zb_schedule *in, zb_schedule *out,
                      zb_schedule *out_b, zb_err *err) {
    int p = in->p, m = in->m, n = 2 * p;
    memset(out, 0, sizeof *out);
    if (out_b) memset(out_b, 0, sizeof *out_b);
    int *off = zb_calloc((size_t)p + 1, sizeof(int), err);
    if (!off) return ZB_ENOMEM;
    for (int r = 0; r < p; r++) off[r + 1] = off[r] + in->len[r];
    int *start = zb_calloc((size_t)off[p] + 1, sizeof(int), err);
    int last = start ? zb_vunit_times(in, off, start) : -2;
    zb_status st = ZB_OK;
    if (last == -2) st = zb_fail(err, ZB_ENOMEM, "zb_vsqueeze: out of memory");
    if (last == -1)
        st = zb_fail(err, ZB_EINFEASIBLE, "%s: the order deadlocks", in->name);
    grid G = {p, m, last + 1, NULL, NULL, NULL, NULL};
    int *wq = NULL;
    if (st == ZB_OK) {
        G.slot = zb_calloc((size_t)n * m * 3, sizeof(int), err);
        G.occ = zb_calloc(2 * (size_t)p * G.T + (size_t)p, sizeof(int), err);
        wq = zb_calloc(2 * (size_t)m, sizeof(int), err);
        if (!G.slot || !G.occ || !wq) st = ZB_ENOMEM;
    }
    if (st == ZB_OK) {
        G.mem = G.occ + (size_t)p * G.T, G.peak = G.mem + (size_t)p * G.T;
        fill_grid(&G, in, off, start);
        squeeze(&G, in);
        st = emit_all(&G, in, false, wq, out, err);
        if (st == ZB_OK && out_b) {
            pull_b(&G, in);
            st = emit_all(&G, in, true, wq, out_b, err);
        }
    }
    free(wq);
    free(G.slot);
    free(G.occ);
    free(start);
    free(off);
    if (st != ZB_OK) {
        zb_schedule_free(out);
        if (out_b) zb_schedule_free(out_b);
    }
    return st;
}
