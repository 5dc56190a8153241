/* vlocal.c - see auto/vlocal.h. */
#include "planner/auto/vlocal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* Sweeps without a strict improvement before the search stops. */
#define PATIENCE 4

/* Farthest a shift move carries a pass (deep search). */
#define SHIFT_MAX 8

/* Most random moves in one kick of the iterated search. */
#define KICK_MOVES 4

typedef struct {
    const zb_costs *c;
    zb_sim_ws *ws;
    double limit, span, end, sum;
    long used, budget;
    int deep;                /* also the shift moves */
    int block;               /* longest block a shift move or a kick carries */
    int patience;            /* sweeps without a strict gain before a stop */
} vl_state;

/* 2 if s scores better than the best so far (which it then becomes), 1 if
 * equal, 0 if worse or invalid, -1 when out of memory. */
static int better(vl_state *V, const zb_schedule *s) {
    double span, peak;
    zb_err e2;
    zb_status st = zb_simulate_fast(s, V->c, V->ws, &span, &peak, &e2);
    V->used += (long)s->p * 6 * s->m;
    if (st == ZB_ENOMEM) return -1;
    if (st != ZB_OK || peak > V->limit + 1e-9 * fmax(1, fabs(V->limit))) return 0;
    double end = zb_sim_ws_last_end(V->ws), sum = 0;
    const double *re = zb_sim_ws_rank_end(V->ws);
    for (int r = 0; r < s->p; r++) sum += re[r];
    int eq = span == V->span && end == V->end && sum == V->sum;
    if (eq || span < V->span || (span == V->span && (end < V->end ||
                                                     (end == V->end && sum < V->sum)))) {
        V->span = span, V->end = end, V->sum = sum;
        return eq ? 1 : 2;
    }
    return 0;
}

/* May a and b (adjacent, a first) trade places? Not two passes of one kind
 * and chunk (microbatch order), not a pass and the next of its microbatch
 * on the same chunk. */
static int swappable(const zb_action *a, const zb_action *b) {
    if (a->pass == b->pass && a->chunk == b->chunk) return 0;
    return !(a->mb == b->mb && a->chunk == b->chunk);
}

/* Same kinds and chunks as the pair (x, x + 1), the same microbatch
 * distance between them? */
static int same_pair(const zb_action *x, const zb_action *y) {
    return x[0].pass == y[0].pass && x[0].chunk == y[0].chunk &&
           x[1].pass == y[1].pass && x[1].chunk == y[1].chunk &&
           x[1].mb - x[0].mb == y[1].mb - y[0].mb;
}

static void swap_at(zb_action *a) {
    zb_action t = a[0];
    a[0] = a[1], a[1] = t;
}

/* The periodic move of the pair at i on rank r: every pair of the rank
 * like it (same_pair, left to right, not overlapping) swapped at once, so
 * that a steady state changes its pattern in one step. Kept like a single
 * swap; at[] (len[r] / 2 + 1 ints) records the swaps to undo. Returns
 * better()'s value, or 0 without simulating when fewer than two pairs
 * match. */
static int periodic(vl_state *V, zb_schedule *s, int r, int i, int *at) {
    zb_action key[2] = {s->acts[r][i], s->acts[r][i + 1]};
    int n = 0;
    for (int j = 0; j + 1 < s->len[r]; j++) {
        zb_action *a = &s->acts[r][j];
        if (!same_pair(a, key) || !swappable(&a[0], &a[1])) continue;
        swap_at(a);
        at[n++] = j++;
    }
    int r0 = n > 1 ? better(V, s) : 0;
    if (r0 == 0)
        while (n > 0) swap_at(&s->acts[r][at[--n]]);
    return r0;
}

/* Reverse a[lo..hi). */
static void reverse(zb_action *a, int lo, int hi) {
    for (hi--; lo < hi; lo++, hi--) {
        zb_action t = a[lo];
        a[lo] = a[hi], a[hi] = t;
    }
}

/* Rotate a[lo..hi) left by k: a[lo + k] comes first. */
static void rotate(zb_action *a, int lo, int hi, int k) {
    reverse(a, lo, lo + k);
    reverse(a, lo + k, hi);
    reverse(a, lo, hi);
}

/* The block a[i..i+n) moved d places (d > 0 later, d < 0 earlier), the
 * passes it passes shifted the other way; undo is the move by -d from
 * i + d. */
static void move_block(zb_action *a, int i, int n, int d) {
    if (d > 0) rotate(a, i, i + n + d, n);
    else rotate(a, i + d, i + n, -d);
}

/* May the block a[i..i+n) pass every pass its move by d crosses? */
static int can_cross(const zb_action *a, int i, int n, int d) {
    int lo = d > 0 ? i + n : i + d, hi = d > 0 ? i + n + d : i;
    for (int k = lo; k < hi; k++)
        for (int b = i; b < i + n; b++)
            if (!swappable(&a[b], &a[k])) return 0;
    return 1;
}

/* The shift moves at i on rank r: the pass at i, or it and the next
 * V->block - 1 (a pair such as a B and its W, a triple such as an F, its
 * B and its W), moved 2..SHIFT_MAX places later or earlier; one move of
 * what would take several single swaps, each of which may lengthen the
 * order on its own. The first kept ends it. */
static int shifts(vl_state *V, zb_schedule *s, int r, int i, int *gain) {
    zb_action *a = s->acts[r];
    for (int n = 1; n <= V->block; n++)
        for (int d = 2; d <= SHIFT_MAX && V->used < V->budget; d++)
            for (int dir = -1; dir <= 1; dir += 2) {
                int e = i + dir * d;
                if (e < 0 || e + n > s->len[r] || i + n > s->len[r] ||
                    !can_cross(a, i, n, dir * d))
                    continue;
                move_block(a, i, n, dir * d);
                int r0 = better(V, s);
                if (r0 < 0) return r0;
                if (r0 == 2) *gain = 1;
                if (r0 > 0) return r0;
                move_block(a, e, n, -dir * d);
            }
    return 0;
}

/* One sweep over rank r: at each place the periodic move (when at is not
 * NULL), then the single swap, then (deep) the shift moves. Returns
 * better()'s last value (-1: out of memory); *gain is set when a move
 * shortened the schedule strictly. */
static int sweep_rank(vl_state *V, zb_schedule *s, int r, int *at, int *gain) {
    int r0 = 1;
    for (int i = 0; i + 1 < s->len[r] && V->used < V->budget; i++) {
        zb_action *a = &s->acts[r][i];
        if (!swappable(&a[0], &a[1])) continue;
        if (at) {
            r0 = periodic(V, s, r, i, at);
            if (r0 < 0) return r0;
            if (r0 == 2) *gain = 1;
            if (r0 > 0) continue;
        }
        swap_at(a);
        r0 = better(V, s);
        if (r0 < 0) return r0;
        if (r0 == 2) *gain = 1;
        if (r0 == 0) swap_at(a);
        if (r0 == 0 && V->deep) r0 = shifts(V, s, r, i, gain);
        if (r0 < 0) return r0;
    }
    return r0;
}

/* Sweeps until PATIENCE sweeps without a strict gain or V->used reaches
 * the budget; periodic moves when at is not NULL. -1: out of memory. */
static int search(vl_state *V, zb_schedule *s, int *at) {
    int r0 = 1, idle = 0;
    while (r0 >= 0 && idle < V->patience && V->used < V->budget) {
        int gain = 0;
        for (int q = 0; q < s->p && r0 >= 0 && V->used < V->budget; q++)
            r0 = sweep_rank(V, s, s->p - 1 - q, at, &gain);
        idle = gain ? 0 : idle + 1;
    }
    return r0;
}

zb_status zb_vlocal(zb_schedule *s, const zb_costs *c, double mem_limit,
                    long budget, zb_err *err) {
    vl_state V = {c, zb_sim_ws_new(), mem_limit, INFINITY, INFINITY, INFINITY, 0, budget, 0, 2,
                  PATIENCE};
    int maxlen = 0;
    for (int r = 0; r < s->p; r++)
        if (s->len[r] > maxlen) maxlen = s->len[r];
    int *at = malloc(((size_t)maxlen / 2 + 1) * sizeof *at);
    if (!V.ws || !at) {
        zb_sim_ws_free(V.ws);
        free(at);
        return zb_fail(err, ZB_ENOMEM, "zb-auto-v: out of memory");
    }
    /* from the same start, single swaps alone (sa) and with periodic
     * moves (s); the better is kept, so never longer than sa alone */
    zb_schedule sa;
    zb_status st = zb_schedule_copy(&sa, s, err);
    int r0 = st == ZB_OK ? better(&V, &sa) : -1;
    if (r0 >= 0) r0 = search(&V, &sa, NULL);
    double a_span = V.span, a_end = V.end, a_sum = V.sum;
    V.span = V.end = V.sum = INFINITY, V.used = 0;
    if (r0 >= 0) r0 = better(&V, s);
    if (r0 >= 0) r0 = search(&V, s, at);
    int a_better = a_span < V.span ||
                   (a_span == V.span && (a_end < V.end || (a_end == V.end && a_sum < V.sum)));
    if (r0 >= 0 && a_better) {
        zb_schedule t = *s;
        *s = sa, sa = t;
    }
    if (st == ZB_OK) zb_schedule_free(&sa);
    zb_sim_ws_free(V.ws);
    free(at);
    if (st != ZB_OK) return st;
    return r0 < 0 ? zb_fail(err, ZB_ENOMEM, "zb-auto-v: out of memory") : ZB_OK;
}

/* Is the score (span, end, sum) of V better than a's? */
static int beats(const vl_state *V, const double a[3]) {
    return V->span < a[0] ||
           (V->span == a[0] && (V->end < a[1] || (V->end == a[1] && V->sum < a[2])));
}

static uint64_t next_rand(uint64_t *x) {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* A kick: 1..KICK_MOVES random moves of a block of 1..V->block passes by
 * 1..SHIFT_MAX places (each kept only where the order stays valid within
 * the limit); 1 if any moved. */
static int kick(vl_state *V, zb_schedule *s, uint64_t *x) {
    int done = 0, moves = 1 + (int)(next_rand(x) % KICK_MOVES);
    for (int k = 0; k < moves; k++) {
        int r = (int)(next_rand(x) % (uint64_t)s->p), len = s->len[r];
        int n = 1 + (int)(next_rand(x) % (uint64_t)V->block);
        int d = 1 + (int)(next_rand(x) % SHIFT_MAX);
        if (next_rand(x) & 1) d = -d;
        int i = len > n ? (int)(next_rand(x) % (uint64_t)(len - n + 1)) : 0;
        zb_action *a = s->acts[r];
        /* every try counts against the budget, so the search ends even
         * where no move is possible */
        V->used += (long)s->p * 6 * s->m;
        if (i + d < 0 || i + d + n > len || i + n > len || !can_cross(a, i, n, d)) continue;
        move_block(a, i, n, d);
        double span, peak;
        zb_err e2;
        if (zb_simulate_fast(s, V->c, V->ws, &span, &peak, &e2) != ZB_OK ||
            peak > V->limit + 1e-9 * fmax(1, fabs(V->limit)))
            move_block(a, i + d, n, -d); /* deadlock or over the limit: undone */
        else
            done = 1;
    }
    return done;
}

/* Iterated local search: from the best order, a kick then the deep
 * search, the result kept when better, until the budget is spent. The
 * kicks come from a fixed seed, so the result is the same on every run. */
static int iterate(vl_state *V, zb_schedule *best, int *at, zb_err *err) {
    double b[3] = {V->span, V->end, V->sum};
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    zb_schedule cur = {0};
    int r0 = 1;
    V->patience = 1;
    while (r0 >= 0 && V->used < V->budget) {
        zb_schedule_free(&cur);
        if (zb_schedule_copy(&cur, best, err) != ZB_OK) return -1;
        if (!kick(V, &cur, &x)) continue;
        V->span = V->end = V->sum = INFINITY;
        r0 = better(V, &cur);
        if (r0 > 0) r0 = search(V, &cur, at);
        if (r0 >= 0 && (beats(V, b) || V->span == b[0])) {
            zb_schedule t = *best;
            *best = cur, cur = t;
            b[0] = V->span, b[1] = V->end, b[2] = V->sum;
        }
    }
    zb_schedule_free(&cur);
    V->span = b[0], V->end = b[1], V->sum = b[2];
    return r0;
}

zb_status zb_vlocal_deep(zb_schedule *s, const zb_costs *c, double mem_limit,
                         long budget, zb_err *err) {
    return zb_vlocal_deep_blocks(s, c, mem_limit, budget, 2, err);
}

zb_status zb_vlocal_deep_blocks(zb_schedule *s, const zb_costs *c, double mem_limit,
                                long budget, int block, zb_err *err) {
    if (block < 1) block = 1;
    vl_state V = {c, zb_sim_ws_new(), mem_limit, INFINITY, INFINITY, INFINITY, 0, budget, 1,
                  block, PATIENCE};
    int maxlen = 0;
    for (int r = 0; r < s->p; r++)
        if (s->len[r] > maxlen) maxlen = s->len[r];
    int *at = malloc(((size_t)maxlen / 2 + 1) * sizeof *at);
    zb_schedule d = {0};
    zb_status st = V.ws && at ? zb_schedule_copy(&d, s, err)
                              : zb_fail(err, ZB_ENOMEM, "zb-auto-v: out of memory");
    int r0 = st == ZB_OK ? better(&V, &d) : 0;
    double span0 = V.span;
    if (st == ZB_OK && r0 > 0) r0 = search(&V, &d, at);
    if (st == ZB_OK && r0 >= 0) r0 = iterate(&V, &d, at, err);
    if (st == ZB_OK && r0 < 0)
        st = zb_fail(err, ZB_ENOMEM, "zb-auto-v: out of memory");
    if (st == ZB_OK && V.span < span0) { /* strictly shorter only */
        zb_schedule t = *s;
        *s = d, d = t;
    }
    zb_schedule_free(&d);
    zb_sim_ws_free(V.ws);
    free(at);
    return st;
}

/* Every W of s moved to right after its B (tmp: the longest rank's
 * length). Valid whenever s is: no pass of another rank waits on a W, and
 * memory only falls earlier. */
static void w_eager(zb_schedule *s, zb_action *tmp) {
    for (int r = 0; r < s->p; r++) {
        zb_action *a = s->acts[r];
        int n = 0;
        for (int i = 0; i < s->len[r]; i++) {
            if (a[i].pass == ZB_W) continue;
            tmp[n++] = a[i];
            for (int j = i + 1; a[i].pass == ZB_B && j < s->len[r]; j++)
                if (a[j].pass == ZB_W && a[j].mb == a[i].mb && a[j].chunk == a[i].chunk) {
                    tmp[n++] = a[j];
                    break;
                }
        }
        if (n == s->len[r]) /* else a W without its B: left as it was */
            for (int i = 0; i < n; i++) a[i] = tmp[i];
    }
}

/* zb_vlocal_tiny: see auto/vlocal.h. The starts: s, s with every W right
 * after its B, extra; each searched by zb_vlocal_deep_blocks. */
zb_status zb_vlocal_tiny(zb_schedule *s, const zb_schedule *extra, const zb_costs *c,
                         double mem_limit, long budget, int block, zb_err *err) {
    int maxlen = 0;
    for (int r = 0; r < s->p; r++)
        if (s->len[r] > maxlen) maxlen = s->len[r];
    zb_action *tmp = malloc(((size_t)maxlen + 1) * sizeof *tmp);
    zb_sim_ws *ws = zb_sim_ws_new();
    zb_schedule start[3];
    int n = 0;
    zb_status st = tmp && ws ? ZB_OK : zb_fail(err, ZB_ENOMEM, "zb-auto-v: out of memory");
    if (st == ZB_OK && (st = zb_schedule_copy(&start[n], s, err)) == ZB_OK) n++;
    if (st == ZB_OK && (st = zb_schedule_copy(&start[n], s, err)) == ZB_OK) w_eager(&start[n++], tmp);
    if (st == ZB_OK && extra && (st = zb_schedule_copy(&start[n], extra, err)) == ZB_OK) n++;
    double best = INFINITY, span, peak, tol = 1e-9 * fmax(1, fabs(mem_limit));
    zb_err e2;
    if (st == ZB_OK && zb_simulate_fast(s, c, ws, &span, &peak, &e2) == ZB_OK) best = span;
    for (int i = 0; i < n && st == ZB_OK; i++) {
        if (zb_simulate_fast(&start[i], c, ws, &span, &peak, &e2) != ZB_OK ||
            peak > mem_limit + tol)
            continue; /* an extra start that does not hold */
        st = zb_vlocal_deep_blocks(&start[i], c, mem_limit, budget, block, err);
        if (st == ZB_OK && zb_simulate_fast(&start[i], c, ws, &span, &peak, &e2) == ZB_OK &&
            peak <= mem_limit + tol && span < best) {
            zb_schedule t = *s;
            *s = start[i], start[i] = t;
            best = span;
        }
    }
    for (int i = 0; i < n; i++) zb_schedule_free(&start[i]);
    zb_sim_ws_free(ws);
    free(tmp);
    return st;
}
