/* vblock.c - see schedules/vblock.h. */
#include "planner/schedules/vblock.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "planner/schedules/build.h"
#include "planner/schedules/handmade.h"
#include "planner/schedules/vreorder.h"

enum { K_F0 = 0, K_F1 = 1, K_B1 = 2, K_B0 = 3, PERIOD = 6 };

/* The pass of kind k (F0, F1, B1, B0) as (pass, chunk). */
static const zb_pass kind_pass[4] = {ZB_F, ZB_F, ZB_B, ZB_B};
static const int kind_chunk[4] = {0, 1, 1, 0};

/* One rank: passes by slot, W into free slots. wq holds 2m chunk ids. */
static zb_status rank_order(zb_schedule *out, int r, int m, const int *t,
                            int *wq, zb_err *err) {
    int lo = INT_MAX, hi = INT_MIN, qh = 0, qt = 0, nw[2] = {0, 0};
    for (int k = 0; k < 4; k++) {
        if (t[k] < lo) lo = t[k];
        if (t[k] + PERIOD * (m - 1) > hi) hi = t[k] + PERIOD * (m - 1);
    }
    for (int s = lo; s <= hi; s++) {
        int placed = 0;
        for (int k = 0; k < 4; k++) {
            int d = s - t[k];
            if (d < 0 || d % PERIOD || d / PERIOD >= m) continue;
            ZB_TRY(zb_sched_put(out, r, kind_pass[k], d / PERIOD, kind_chunk[k], err));
            if (kind_pass[k] == ZB_B) wq[qt++] = kind_chunk[k];
            placed = 1;
        }
        if (!placed && qh < qt) {
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

zb_status zb_vblock_order(int p, int m, const int (*t)[4], const char *name,
                          zb_schedule *out, zb_err *err) {
    ZB_TRY(zb_sched_begin(out, name, p, m, 2, ZB_PLACE_V, 6 * m, err));
    int *wq = zb_calloc(2 * (size_t)m, sizeof(int), err);
    zb_status st = wq ? ZB_OK : ZB_ENOMEM;
    for (int r = 0; r < p && st == ZB_OK; r++) st = rank_order(out, r, m, t[r], wq, err);
    free(wq);
    return zb_sched_end(out, st);
}

void zb_vblock_vmin(int p, int (*t)[4]) {
    int gap = p % 3 == 0 ? 2 : 0;
    for (int r = 0; r < p; r++) {
        t[r][K_F0] = r;
        t[r][K_F1] = 2 * p - r - 1;
        t[r][K_B1] = 2 * p + gap + r;
        t[r][K_B0] = 4 * p + gap - r - 1;
    }
}

void zb_vblock_vhalf(int p, int (*t)[4]) {
    int gap = p % 2 == 0 ? 3 : 0;
    for (int r = 0; r < p; r++) {
        t[r][K_F0] = 2 * r;
        t[r][K_F1] = 3 * p - r - 2;
        t[r][K_B1] = 3 * p + gap + 2 * r - 1;
        t[r][K_B0] = 6 * p + gap - r - 2;
    }
}

/* Slots of a uniform-offset block: rank 0's pattern pat (mod 6), then
 * offsets; microbatch 0 of each kind at the first slot of its residue
 * after the previous pass of microbatch 0 along the V (F0 down the ranks,
 * F1 up, B1 down, B0 up). False if two kinds share a slot on a rank. */
static int block_slots(int p, const int pat[4], int d0, int d1, int k0,
                       int (*t)[4]) {
    static const int delta_sign[4] = {1, -1, 1, -1};
    int res[4];
    memcpy(res, pat, sizeof res);
    for (int r = 0; r < p; r++) {
        if (r > 0)
            for (int k = 0; k < 4; k++) {
                int d = delta_sign[k] > 0 ? (r <= k0 ? d0 : d1) : 1;
                res[k] = ((res[k] + delta_sign[k] * d) % PERIOD + PERIOD) % PERIOD;
            }
        for (int a = 0; a < 4; a++)
            for (int b = a + 1; b < 4; b++)
                if (res[a] == res[b]) return 0;
        for (int k = 0; k < 4; k++) t[r][k] = res[k]; /* residues for now */
    }
    int at = PERIOD; /* the scan over microbatch 0 along the V */
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < p; i++) {
            int r = (k == K_F0 || k == K_B1) ? i : p - 1 - i;
            int s = at + ((t[r][k] - at) % PERIOD + PERIOD) % PERIOD;
            t[r][k] = s;
            at = s + 1;
        }
    return 1;
}

/* Append block t (p ranks) at reorder level `level` to L. */
static zb_status add_block(zb_vblock_list *L, const int (*t)[4], int level,
                           zb_err *err) {
    if (L->n == L->cap) {
        int nc = L->cap ? 2 * L->cap : 64;
        int (*nt)[4] = realloc(L->t, (size_t)nc * L->p * sizeof *nt);
        if (nt) L->t = nt;
        int *nl = nt ? realloc(L->level, (size_t)nc * sizeof *nl) : NULL;
        if (nl) L->level = nl;
        if (!nt || !nl) return zb_fail(err, ZB_ENOMEM, "zb-auto-v: out of memory");
        L->cap = nc;
    }
    memcpy(L->t + (size_t)L->n * L->p, t, (size_t)L->p * sizeof *t);
    L->level[L->n++] = level;
    return ZB_OK;
}

zb_status zb_vblock_list_make(int p, int m, long budget, int reorder,
                              zb_vblock_list *L, zb_err *err) {
    memset(L, 0, sizeof *L);
    L->p = p;
    int (*t)[4] = zb_calloc((size_t)p, sizeof *t, err);
    if (!t) return ZB_ENOMEM;
    long per_block = (reorder >= 2 ? 4 : 3) * 6L * p * m;
    zb_vblock_vmin(p, t);
    zb_status st = add_block(L, (const int (*)[4])t, 1, err);
    zb_vblock_vhalf(p, t);
    if (st == ZB_OK) st = add_block(L, (const int (*)[4])t, 1, err);
    long used = 2 * per_block;
    for (int f1 = 1; f1 < PERIOD && st == ZB_OK && used < budget; f1++)
        for (int b1 = 1; b1 < PERIOD && st == ZB_OK && used < budget; b1++)
            for (int b0 = 1; b0 < PERIOD && st == ZB_OK && used < budget; b0++) {
                if (f1 == b1 || f1 == b0 || b1 == b0) continue;
                int pat[4] = {0, f1, b1, b0};
                for (int d0 = 1; d0 < PERIOD && st == ZB_OK && used < budget; d0++)
                    for (int d1 = 1; d1 <= d0 && st == ZB_OK && used < budget; d1++)
                        for (int k0 = 1; k0 < (p > 1 ? p : 2) && st == ZB_OK && used < budget; k0++) {
                            if (!block_slots(p, pat, d0, d1, k0, t)) continue;
                            st = add_block(L, (const int (*)[4])t, 2, err);
                            used += per_block;
                            if (d0 == d1) break; /* k0 changes nothing */
                        }
            }
    free(t);
    if (st != ZB_OK) zb_vblock_list_free(L);
    return st;
}

void zb_vblock_list_free(zb_vblock_list *L) {
    free(L->t);
    free(L->level);
    memset(L, 0, sizeof *L);
}

/* The named schedules: the block reordered (zb_vreorder). */
static zb_status from_block(const char *name, void (*fill)(int, int (*)[4]),
                            int p, int m, zb_schedule *out, zb_err *err) {
    memset(out, 0, sizeof *out);
    ZB_TRY(zb_sched_check_pm(name, p, m, err));
    int (*t)[4] = zb_calloc((size_t)p, sizeof *t, err);
    if (!t) return ZB_ENOMEM;
    fill(p, t);
    zb_status st = zb_vreorder(p, m, (const int (*)[4])t, name, out, err);
    free(t);
    return st;
}

zb_status zb_sched_vhalf(int p, int m, zb_schedule *out, zb_err *err) {
    return from_block("v-half", zb_vblock_vhalf, p, m, out, err);
}

zb_status zb_sched_vmin(int p, int m, zb_schedule *out, zb_err *err) {
    return from_block("v-min", zb_vblock_vmin, p, m, out, err);
}
