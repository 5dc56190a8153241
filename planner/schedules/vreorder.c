/* vreorder.c - zb_vreorder (vreorder.h): a building block's order
 * reordered in the unit-time model in three steps, after the squeeze and
 * reorder of Qi et al., "Pipeline Parallelism with Controllable Memory"
 * (2024), sec. 4 (our own code).
 *
 * Unit model: a pass takes one slot, transfers are free. A rank's slots
 * hold its F and B passes (kinds F0, F1, B1, B0: microbatch j of kind k at
 * t[r][k] + 6j) and W passes in the free slots (put_w). The memory of a
 * rank is its running count (F +1, W -1), or, when the W are not placed,
 * the count with one owed W released in every free slot. One reorder
 * visits every pass in order of slot (then rank) and moves it to the first
 * free slot after its dependency (previous virtual stage's F, next one's B,
 * the rank's previous pass of the microbatch, its kind's previous
 * microbatch; a W after the rank's j-th B) where the rank's memory stays
 * within the largest peak any rank had before the reorder. The steady
 * state, from rank 0's first chunk-0 B to the first forward of the last
 * microbatch, never moves; the warm-up moves only with the W placed.
 *   1. W put into the free slots, reorder with W, compact (every pass at
 *      its earliest slot in the slot order);
 *   2. W taken out, reorder without them (the cool-down only), W put back,
 *      compact;
 *   3. W put back per chunk (chunk 1's first, then chunk 0's) and the order
 *      read off by slot.
 * Memory per rank: O(p m) ints; time O(p m T) at worst, T the slots, in
 * practice a few moves per pass.
 */
#include "planner/schedules/vreorder.h"

#include <stdlib.h>
#include <string.h>

#include "planner/schedules/build.h"

enum { K_F0, K_F1, K_B1, K_B0, K_W }; /* K_W: W of either chunk */

typedef struct {
    int p, m, T;
    int *slot;  /* [r][6m]: kinds 0..3 at k*m + j, W from 4m (2m of them) */
    int *occ;   /* [r][T]: item index + 1 (within the rank), 0 free */
    int *nw;    /* [r]: W placed */
    int *tmp;   /* [p] */
    int *mem;   /* [r][T] running count after each slot, with W placed */
} vgrid;

static int *rs(vgrid *G, int r) { return G->slot + (size_t)r * 6 * G->m; }
static int *ro(vgrid *G, int r) { return G->occ + (size_t)r * G->T; }
static int n_items(const vgrid *G, int r, int with_w) {
    return 4 * G->m + (with_w ? G->nw[r] : 0);
}

static void fill_occ(vgrid *G, int r, int with_w) {
    int *occ = ro(G, r), *s = rs(G, r);
    memset(occ, 0, (size_t)G->T * sizeof *occ);
    for (int i = 0; i < n_items(G, r, with_w); i++) occ[s[i]] = i + 1;
}

/* Rank r's W into its free slots after the B they follow, the rest after
 * the last pass. split: chunk 1's W (from B1) first, at 4m + j, then chunk
 * 0's at 5m + j; else one queue in B order at 4m + j. */
static void put_w(vgrid *G, int r, int split) {
    int m = G->m, *occ = ro(G, r), *s = rs(G, r), owed[2] = {0, 0}, nw[2] = {0, 0};
    fill_occ(G, r, 0);
    int t = 0, last = -1;
    for (int i = 0; i < 4 * m; i++) if (s[i] > last) last = s[i];
    for (; t <= last; t++) {
        int i = occ[t] - 1;
        if (i >= 0) {
            if (i / m == K_B1 || i / m == K_B0) owed[split && i / m == K_B0]++;
            continue;
        }
        for (int q = 0; q < 2; q++)
            if (owed[q]) {
                s[4 * m + q * m + nw[q]++] = t, owed[q]--;
                break;
            }
    }
    for (int q = 0; q < 2; q++)
        while (owed[q]) s[4 * m + q * m + nw[q]++] = t++, owed[q]--;
    G->nw[r] = 2 * m;
}

/* Rank r's unit memory peak (see the header comment). */
static int peak(vgrid *G, int r, int with_w) {
    const int *occ = ro(G, r);
    int m = G->m, cur = 0, top = 0, owed = 0;
    for (int t = 0; t < G->T; t++) {
        int i = occ[t] - 1;
        if (i >= 0) {
            int k = i < 4 * m ? i / m : K_W;
            cur += k == K_F0 || k == K_F1 ? 1 : k == K_W ? -1 : 0;
            if (k == K_B1 || k == K_B0) owed++;
        } else if (!with_w && owed) {
            cur--, owed--;
        }
        if (cur > top) top = cur;
    }
    return top;
}

/* The first slot item i of rank r may take. */
static int earliest(vgrid *G, int r, int i) {
    int m = G->m, p = G->p, *s = rs(G, r), d = -1;
#define DEP(x) do { if ((x) > d) d = (x); } while (0)
    if (i >= 4 * m) { /* W j: after the rank's j-th B and W j-1 */
        int j = i - 4 * m, seen = 0;
        const int *occ = ro(G, r);
        for (int t = 0; t < G->T; t++) {
            int q = occ[t] - 1;
            if (q >= 0 && q < 4 * m && (q / m == K_B1 || q / m == K_B0) && seen++ == j) {
                DEP(t);
                break;
            }
        }
        if (j > 0) DEP(s[i - 1]);
        return d + 1;
    }
    int k = i / m, j = i % m;
    if ((k == K_F0 || k == K_B1) && r > 0) DEP(rs(G, r - 1)[k * m + j]);
    if ((k == K_F1 || k == K_B0) && r < p - 1) DEP(rs(G, r + 1)[k * m + j]);
    if (k > K_F0) DEP(s[(k - 1) * m + j]);
    if (j > 0) DEP(s[i - 1]);
#undef DEP
    return d + 1;
}

/* With W placed the running count changes only on [to, t): the pass goes
 * to the first free slot from `to` on where an F keeps it within cap (the
 * slots that do form a suffix of [to, t)); B and W never raise it. */
static void move_counted(vgrid *G, int r, int i, int k, int t, int to, int cap) {
    int *occ = ro(G, r), *mem = G->mem + (size_t)r * G->T;
    int d = k == K_W ? -1 : k <= K_F1 ? 1 : 0;
    if (d > 0) {
        int x = t;
        while (x > to && mem[x - 1] + 1 <= cap) x--;
        to = x;
    }
    while (to < t && occ[to]) to++;
    if (to < t) {
        occ[to] = i + 1, occ[t] = 0;
        rs(G, r)[i] = to;
        for (int u = to; u < t; u++) mem[u] += d;
    }
}

/* Rank r's running count after each slot, W placed (for move_counted). */
static void count(vgrid *G, int r) {
    const int *occ = ro(G, r);
    int *mem = G->mem + (size_t)r * G->T, cur = 0;
    for (int u = 0; u < G->T; u++) {
        int q = occ[u] - 1;
        if (q >= 0) cur += q >= 4 * G->m ? -1 : q / G->m <= K_F1 ? 1 : 0;
        mem[u] = cur;
    }
}

/* One reorder (see the header comment). */
static void reorder(vgrid *G, int with_w) {
    int p = G->p, m = G->m, cap = 0, phase = 0;
    for (int r = 0; r < p; r++) {
        fill_occ(G, r, with_w);
        if (with_w) count(G, r);
        int pk = peak(G, r, with_w);
        if (pk > cap) cap = pk;
    }
    for (int t = 0; t < G->T; t++)
        for (int r = 0; r < p; r++) {
            int *occ = ro(G, r), i = occ[t] - 1;
            if (i < 0) continue;
            int k = i < 4 * m ? i / m : K_W;
            if (phase == 0 && r == 0 && k == K_B0) phase = 1;
            if (phase == 1) {
                if (k == K_F0 && i % m == m - 1) phase = 2;
                continue;
            }
            if (phase == 0 && !with_w) continue;
            int to = earliest(G, r, i);
            if (with_w) {
                move_counted(G, r, i, k, t, to, cap);
                continue;
            }
            for (; to < t; to++) {
                if (occ[to]) continue;
                occ[to] = i + 1, occ[t] = 0;
                if (peak(G, r, 0) <= cap) {
                    rs(G, r)[i] = to;
                    break;
                }
                occ[t] = i + 1, occ[to] = 0;
            }
        }
}

/* Every pass at the earliest slot its rank's order and its dependencies
 * allow, passes taken in order of slot (a topological order). */
static void compact(vgrid *G, int with_w) {
    int p = G->p, m = G->m;
    int *free_at = G->tmp; /* [p] next free slot per rank */
    for (int r = 0; r < p; r++) {
        fill_occ(G, r, with_w);
        free_at[r] = 0;
    }
    for (int t = 0; t < G->T; t++)
        for (int r = 0; r < p; r++) {
            int i = ro(G, r)[t] - 1;
            if (i < 0) continue;
            int e = free_at[r], *s = rs(G, r);
            if (i < 4 * m) {
                int k = i / m, j = i % m, d = -1;
                if ((k == K_F0 || k == K_B1) && r > 0) d = rs(G, r - 1)[k * m + j];
                if ((k == K_F1 || k == K_B0) && r < p - 1) d = rs(G, r + 1)[k * m + j];
                if (k > K_F0 && s[(k - 1) * m + j] > d) d = s[(k - 1) * m + j];
                if (j > 0 && s[i - 1] > d) d = s[i - 1];
                if (d + 1 > e) e = d + 1;
            } else if (i > 4 * m && s[i - 1] + 1 > e) {
                e = s[i - 1] + 1;
            }
            s[i] = e;  /* e <= t: the slots only move earlier */
            free_at[r] = e + 1;
        }
}

static zb_status emit(vgrid *G, int r, zb_schedule *out, zb_err *err) {
    static const zb_pass pass[6] = {ZB_F, ZB_F, ZB_B, ZB_B, ZB_W, ZB_W};
    static const int chunk[6] = {0, 1, 1, 0, 1, 0};
    int m = G->m, *occ = ro(G, r), *s = rs(G, r);
    memset(occ, 0, (size_t)G->T * sizeof *occ);
    for (int i = 0; i < 6 * m; i++) occ[s[i]] = i + 1;
    for (int t = 0; t < G->T; t++) {
        int i = occ[t] - 1;
        if (i >= 0)
            ZB_TRY(zb_schedule_push(out, r, pass[i / m], i % m, chunk[i / m], err));
    }
    return ZB_OK;
}

zb_status zb_vreorder(int p, int m, const int (*t)[4], const char *name,
                      zb_schedule *out, zb_err *err) {
    ZB_TRY(zb_sched_begin(out, name, p, m, 2, ZB_PLACE_V, 6 * m, err));
    int lo = 0, hi = 0;
    for (int r = 0; r < p; r++)
        for (int k = 0; k < 4; k++) {
            if (t[r][k] < lo) lo = t[r][k];
            if (t[r][k] > hi) hi = t[r][k];
        }
    vgrid G = {p, m, hi - lo + 6 * m + 2 * m + 2, NULL, NULL, NULL, NULL, NULL};
    G.slot = zb_calloc((size_t)p * 6 * m, sizeof(int), err);
    G.occ = zb_calloc((size_t)p * G.T, sizeof(int), err);
    G.nw = zb_calloc((size_t)p, sizeof(int), err);
    G.tmp = zb_calloc((size_t)p, sizeof(int), err);
    G.mem = zb_calloc((size_t)p * G.T, sizeof(int), err);
    zb_status st = G.slot && G.occ && G.nw && G.tmp && G.mem ? ZB_OK : ZB_ENOMEM;
    if (st == ZB_OK) {
        for (int r = 0; r < p; r++) {
            for (int k = 0; k < 4; k++)
                for (int j = 0; j < m; j++) rs(&G, r)[k * m + j] = t[r][k] - lo + 6 * j;
            put_w(&G, r, 0);
        }
        reorder(&G, 1);
        compact(&G, 1);
        reorder(&G, 0);
        for (int r = 0; r < p; r++) put_w(&G, r, 0);
        compact(&G, 1);
        for (int r = 0; r < p && st == ZB_OK; r++) {
            put_w(&G, r, 1);
            st = emit(&G, r, out, err);
        }
    }
    free(G.slot);
    free(G.occ);
    free(G.nw);
    free(G.tmp);
    free(G.mem);
    return zb_sched_end(out, st);
}
