/* vauto.c - zb_vauto_best (auto/vauto.h): the authors' building-block
 * framework on a unit-time grid, block by block, each order timed with the
 * real costs.
 *
 * Per block (the steps of the paper's framework, in its order):
 *  1. repeat the block's row pattern (period 6) over rm = max(m, 2p)
 *     microbatches and keep, of each kind, the rm copies from microbatch 0
 *     (found by a scan along the V) on;
 *  2. squeeze: every pass as early as its row order and its dependency on
 *     the neighbouring rank allow;
 *  3. warm-up: each rank's passes before its first b laid out again as F
 *     (and f) first, then B W f|F triples (the counts of F and f bounded by
 *     the unit peak), squeezed;
 *  4. with m < rm, the extra microbatches dropped (and, with m <= p and
 *     room for 2m activations, the first W moved to the end of the ranks
 *     that stay under the peak), squeezed;
 *  5. cool-down: the last B and b of each rank moved to fixed slots after
 *     rank 0's last f, its last W and w taken out and put back into the
 *     first free slots after them, squeezed;
 *  6. greedy fill: each free slot takes the first later pass of a kind
 *     not yet seen that can run there without raising the rank's peak;
 *  7. the W relabelled in the order of their B.
 * A block fails (and is skipped) when a step would go outside the grid or
 * break its own assumption, or its unit peak exceeds the limit.
 */
#include "planner/auto/vauto.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "planner/schedules/build.h"

enum { K_F, K_f, K_B, K_b, K_W, K_w, NK = 6, PERIOD = 6 };
static const char KINDS[NK + 1] = "FfBbWw";
static const zb_pass kind_pass[NK] = {ZB_F, ZB_F, ZB_B, ZB_B, ZB_W, ZB_W};
static const int kind_chunk[NK] = {0, 1, 1, 0, 1, 0};

/* p rows of cap cells (row i at c + i * cap); cells at or past len are
 * always empty (' '). */
typedef struct {
    int p, len, cap;
    char *c;
} grid;

typedef struct {
    int p, rm;
    grid g, h;          /* the order, a squeeze's scratch */
    int *at;            /* [rm * p * NK]: column of (microbatch, rank, kind) */
    int *cnt;           /* [p * NK] */
    int *si;            /* [p] next free column per rank */
    int *q;             /* [2 * rm] W queue */
    int *last;          /* [p * NK] last column of each kind per rank */
    int *mem;           /* [p] unit memory per rank */
    char *pad;          /* [2 * p + 1] */
} work;

static int kind_of(char ch) {
    const char *k = ch != ' ' && ch ? strchr(KINDS, ch) : NULL;
    return k ? (int)(k - KINDS) : -1;
}

static char *row(const grid *g, int i) { return g->c + (size_t)i * g->cap; }

static int mem_delta(int k) { return k == K_F || k == K_f ? 1 : k >= K_W ? -1 : 0; }

static int row_peak(const char *r, int len) {
    int mem = 0, peak = 0;
    for (int j = 0; j < len; j++) {
        int k = kind_of(r[j]);
        if (k >= 0) mem += mem_delta(k);
        if (mem > peak) peak = mem;
    }
    return peak;
}

static int grid_peak(const grid *g) {
    int peak = 0;
    for (int i = 0; i < g->p; i++) {
        int pk = row_peak(row(g, i), g->len);
        if (pk > peak) peak = pk;
    }
    return peak;
}

static void blank(grid *g) { memset(g->c, ' ', (size_t)g->p * g->cap); }

/* ---- the blocks --------------------------------------------------------- */

/* W and w each at the first free slot after (mod 6) their B and b. */
static void fill_w(int pat[NK]) {
    int used[PERIOD] = {0};
    for (int k = 0; k < NK; k++)
        if (pat[k] >= 0) used[pat[k]] = 1;
    for (int k = K_B; k <= K_b; k++)
        for (int j = 0; j < PERIOD; j++) {
            int s = (pat[k] + j) % PERIOD;
            if (!used[s]) {
                pat[k + 2] = s, used[s] = 1;
                break;
            }
        }
}

/* Block rows from rank 0's pattern: F and B move by d0 (ranks 1..k0) or
 * d1 (later), f and b by -1. 0 when two kinds meet on a rank. */
static int make_block(int p, const int pat0[NK], int d0, int d1, int k0,
                      int (*blk)[NK]) {
    memcpy(blk[0], pat0, sizeof blk[0]);
    for (int r = 1; r < p; r++) {
        int d = r <= k0 ? d0 : d1, used[PERIOD] = {0};
        const int off[4] = {d, -1, d, -1};
        for (int k = 0; k < 4; k++) {
            int s = (blk[r - 1][k] + off[k] + PERIOD) % PERIOD;
            if (used[s]) return 0;
            used[s] = 1, blk[r][k] = s;
        }
        blk[r][K_W] = blk[r][K_w] = -1;
        fill_w(blk[r]);
    }
    return 1;
}

/* ---- step 1: repeat and keep rm copies ------------------------------------ */

static void clear_from(char *r, int len, int pos, int step) {
    for (; pos >= 0 && pos < len; pos += step) r[pos] = ' ';
}

static void repeat(grid *g, const int (*blk)[NK], int rm) {
    blank(g);
    g->len = PERIOD * (4 * g->p + rm + 1);
    for (int i = 0; i < g->p; i++) {
        char pat[PERIOD];
        memset(pat, ' ', sizeof pat);
        for (int k = 0; k < NK; k++)
            if (blk[i][k] >= 0) pat[blk[i][k]] = KINDS[k];
        for (int j = 0; j < g->len; j++) row(g, i)[j] = pat[j % PERIOD];
    }
}

/* Clear the copies of the cell at `at` before it and from rm periods on. */
static void keep_rm(char *r, int len, int at, int rm) {
    clear_from(r, len, at - PERIOD, -PERIOD);
    clear_from(r, len, at + PERIOD * rm, PERIOD);
}

/* Microbatch 0 of F (down the ranks), f (up), B (down), b (up), each at
 * the first of its cells at or after the previous one's, with the W of a
 * B in the next 6 cells. */
static int keep_window(grid *g, int rm) {
    int at = PERIOD, p = g->p;
    for (int k = K_F; k <= K_b; k++)
        for (int n = 0; n < p; n++) {
            char *r = row(g, k == K_F || k == K_B ? n : p - 1 - n);
            int j = 0;
            for (; j < PERIOD && at < g->len && r[at] != KINDS[k]; j++) at++;
            if (j == PERIOD) continue;
            if (at >= g->len) return 0;
            keep_rm(r, g->len, at++, rm);
            if (k < K_B) continue;
            for (int e = 0; e < PERIOD; e++) {
                if (at + e >= g->len) return 0;
                if (r[at + e] == KINDS[k + 2]) {
                    keep_rm(r, g->len, at + e, rm);
                    break;
                }
            }
        }
    return 1;
}

/* ---- squeeze ------------------------------------------------------------ */

static int *at_of(work *w, int mb, int i, int k) {
    return &w->at[((size_t)mb * w->p + i) * NK + k];
}

/* The column where the c-th pass of kind k on rank i can go in g's
 * squeeze: after its row's last and its neighbour's pass; -1 if that
 * neighbour (or, at the turns, the pass before it) has not been placed. */
static int squeeze_col(work *w, int i, int k, int c) {
    int p = w->p, edge = (i == 0 && (k == K_F || k == K_B)) ||
                         (i == p - 1 && (k == K_f || k == K_b));
    if (k >= K_W || edge) {
        if (i == 0 && k == K_B && *at_of(w, c, i, K_f) < 0) return -1;
        if (i == p - 1 && k == K_f && *at_of(w, c, i, K_F) < 0) return -1;
        if (i == p - 1 && k == K_b && *at_of(w, c, i, K_B) < 0) return -1;
        return w->si[i];
    }
    int d = *at_of(w, c, k % 2 == 0 ? i - 1 : i + 1, k);
    if (d < 0) return -1;
    return d + 1 > w->si[i] ? d + 1 : w->si[i];
}

static void reset_counts(work *w, int m) {
    memset(w->cnt, 0, (size_t)w->p * NK * sizeof *w->cnt);
    for (size_t x = 0; x < (size_t)m * w->p * NK; x++) w->at[x] = -1;
}

/* Column by column, down the ranks for F, B, W and up for f, b, w, each
 * pass as early as allowed (row order kept). */
static int squeeze(work *w, int m) {
    grid *g = &w->g, *h = &w->h;
    blank(h);
    h->len = g->len;
    reset_counts(w, m);
    memset(w->si, 0, (size_t)w->p * sizeof *w->si);
    for (int j = 0; j < g->len; j++)
        for (int dir = 0; dir < 2; dir++)
            for (int n = 0; n < w->p; n++) {
                int i = dir == 0 ? n : w->p - 1 - n, k = kind_of(row(g, i)[j]);
                if (k < 0 || k % 2 != dir) continue;
                int c = w->cnt[i * NK + k]++;
                if (c >= m) return 0;
                int col = squeeze_col(w, i, k, c);
                if (col < 0 || col >= h->len) return 0;
                row(h, i)[col] = KINDS[k];
                *at_of(w, c, i, k) = col;
                w->si[i] = col + 1;
            }
    h->len = 0;
    for (int i = 0; i < w->p; i++)
        if (w->si[i] > h->len) h->len = w->si[i];
    grid t = *g;
    *g = *h, *h = t;
    return 1;
}

/* ---- step 3: warm-up ------------------------------------------------------ */

static int put(grid *g, int i, int j, char ch) {
    if (j >= g->len) return 0;
    row(g, i)[j] = ch;
    return 1;
}

/* Rank i's warm-up (u: F, f, B, W placed; c: how many there were). */
static int warmup_row(grid *g, int i, const int c[4], int cnt_f, int cnt_ff) {
    int p = g->p, j = i, u[4] = {0, 0, 0, 0};
    for (int t = 0; t < 2 * (p - 1 - i); t++, j++)
        if (u[0] < cnt_f && u[0] < c[0]) {
            if (!put(g, i, j, 'F')) return 0;
            u[0]++;
        }
    for (int t = 0; t < i + 1; t++) {
        if (u[0] < cnt_f && u[0] < c[0]) {
            if (!put(g, i, j, 'F')) return 0;
            u[0]++;
        }
        j++;
        if (u[1] < cnt_ff && u[1] < c[1]) {
            if (!put(g, i, j, 'f')) return 0;
            u[1]++;
        }
        j++;
    }
    while (u[0] < c[0] || u[1] < c[1] || u[2] < c[2] || u[3] < c[3]) {
        if (u[2] < c[2] && !put(g, i, j, 'B')) return 0;
        if (u[2] < c[2]) u[2]++;
        j++;
        if (u[3] < c[3] && !put(g, i, j, 'W')) return 0;
        if (u[3] < c[3]) u[3]++;
        j++;
        if (u[1] < c[1]) {
            if (u[1] >= u[0] || !put(g, i, j, 'f')) return 0;
            u[1]++;
        } else if (u[0] < c[0]) {
            if (!put(g, i, j, 'F')) return 0;
            u[0]++;
        }
        j++;
    }
    return 1;
}

/* Each rank's passes before its first b taken out (F, f, B, W counted; a w
 * there breaks the step) and laid out again by warmup_row. */
static int warmup(grid *g, int m) {
    int p = g->p, peak = grid_peak(g);
    if (peak > 2 * p) peak = 2 * p;
    for (int i = 0; i < p; i++) {
        int c[4] = {0, 0, 0, 0};
        char *r = row(g, i);
        for (int j = 0; j < g->len && r[j] != 'b'; j++) {
            int k = kind_of(r[j]);
            if (k == K_w) return 0;
            if (k == K_F || k == K_f || k == K_B) c[k]++;
            if (k == K_W) c[3]++;
            r[j] = ' ';
        }
        int cnt_ff = i + 1 < peak / 2 ? i + 1 : peak / 2;
        if (cnt_ff > m) cnt_ff = m;
        int cnt_f = peak - cnt_ff < m ? peak - cnt_ff : m;
        if (!warmup_row(g, i, c, cnt_f, cnt_ff)) return 0;
    }
    return 1;
}

/* ---- step 4: m of each kind ----------------------------------------------- */

static void keep_first(grid *g, int m) {
    for (int i = 0; i < g->p; i++) {
        int cnt[NK] = {0};
        char *r = row(g, i);
        for (int j = 0; j < g->len; j++) {
            int k = kind_of(r[j]);
            if (k >= 0 && cnt[k]++ >= m) r[j] = ' ';
        }
    }
}

/* Ranks below the peak move their first W and w (up to the gap) to the
 * end: more activations in flight early, where few microbatches leave
 * room. Every row grows by the largest gap. */
static int release_w(work *w, int peak_mem) {
    grid *g = &w->g;
    int minp = -1, p = g->p;
    for (int i = 0; i < p; i++) {
        int pk = row_peak(row(g, i), g->len);
        w->si[i] = pk;
        if (minp < 0 || pk < minp) minp = pk;
    }
    int npad = peak_mem - minp > 0 ? peak_mem - minp : 0;
    if (g->len + npad > g->cap) return 0;
    for (int i = 0; i < p; i++) {
        char *r = row(g, i);
        int cnt = 0;
        memset(w->pad, ' ', (size_t)npad);
        for (int j = 0; j < g->len && w->si[i] + cnt < peak_mem; j++)
            if (r[j] == 'W' || r[j] == 'w') {
                if (cnt >= npad) return 0;
                w->pad[cnt++] = r[j], r[j] = ' ';
            }
        memcpy(r + g->len, w->pad, (size_t)npad);
    }
    g->len += npad;
    return 1;
}

/* ---- step 5: cool-down ---------------------------------------------------- */

/* Rank i's last B (up to i + 1 and max_b) and b (up to max_bb) taken out,
 * then its last W and w until as many as those and the peak; counts in
 * n[B, b, W, w]; *last_f: its last f. */
static void cool_take(grid *g, int i, int max_b, int max_bb, int peak, int n[4],
                      int *last_f) {
    char *r = row(g, i);
    *last_f = -1;
    for (int j = g->len - 1; j >= 0; j--) {
        if (r[j] == 'f' && *last_f < 0) *last_f = j;
        if (r[j] == 'B' && n[0] < i + 1 && n[0] < max_b) r[j] = ' ', n[0]++;
        if (r[j] == 'b' && n[1] < max_bb) r[j] = ' ', n[1]++;
    }
    for (int j = g->len - 1; j >= 0; j--) {
        if (n[2] >= n[0] && n[3] >= n[1] && n[2] + n[3] >= peak) break;
        if (r[j] == 'W') r[j] = ' ', n[2]++;
        if (r[j] == 'w') r[j] = ' ', n[3]++;
    }
}

/* W (then w) into the free cells after the row's last W or w, as many as
 * B (b) are ahead of them, the rest appended. */
static int cool_put_w(grid *g, int i, int *len) {
    char *r = row(g, i);
    int last = -1, cw = 0, cww = 0;
    for (int j = 0; j < g->len; j++)
        if (r[j] == 'W' || r[j] == 'w') last = j;
    for (int j = 0; j < g->len; j++) {
        char ch = r[j];
        cw += (ch == 'B') - (ch == 'W');
        cww += (ch == 'b') - (ch == 'w');
        if (ch != ' ' || j <= last) continue;
        if (cw > 0) r[j] = 'W', cw--;
        else if (cww > 0) r[j] = 'w', cww--;
    }
    int n = g->len;
    for (; cw > 0; cw--) if (n < g->cap) r[n++] = 'W'; else return 0;
    for (; cww > 0; cww--) if (n < g->cap) r[n++] = 'w'; else return 0;
    *len = n;
    return 1;
}

static int cooldown(work *w, int m) {
    grid *g = &w->g;
    int p = g->p, peak = grid_peak(g), start = -1, new_len = 0;
    if (peak > 2 * p) return 0;
    int max_bb = (peak + 1) / 2 < m ? (peak + 1) / 2 : m;
    int max_b = peak - max_bb < m ? peak - max_bb : m;
    for (int i = 0; i < p; i++) {
        int n[4] = {0, 0, 0, 0}, last_f;
        cool_take(g, i, max_b, max_bb, peak, n, &last_f);
        if (i == 0) start = last_f;
        char *r = row(g, i);
        for (int k = 0; k < n[1]; k++) {
            int x = start - i + 2 * p - 2 * k;
            if (x < 0 || x >= g->len || r[x] != ' ') return 0;
            r[x] = 'b';
        }
        for (int k = 0; k < n[0]; k++) {
            int x = start + 1 + i - 2 * k;
            if (x < 0 || x >= g->len) return 0;
            r[x] = 'B';
        }
    }
    for (int i = 0; i < p; i++) {
        int len;
        if (!cool_put_w(g, i, &len)) return 0;
        if (len > new_len) new_len = len;
    }
    g->len = new_len;
    return squeeze(w, m);
}

/* ---- step 6: greedy fill -------------------------------------------------- */

/* May the c-th pass of kind k on rank i run at column j (dependencies
 * placed before j)? */
static int can_move(work *w, int i, int k, int c, int j) {
    int p = w->p;
    const int *cnt = w->cnt + i * NK;
    if (k >= K_W) return cnt[k - 2] > c;
    int up = k % 2 == 0; /* F, B: from rank i - 1 */
    if (up ? i > 0 : i + 1 < p) {
        int d = *at_of(w, c, up ? i - 1 : i + 1, k);
        return d > -1 && d < j;
    }
    if (k == K_B) return cnt[K_f] > c;
    if (k == K_f) return cnt[K_F] > c;
    if (k == K_b) return cnt[K_B] > c;
    return 1; /* F on rank 0 */
}

/* Fill the free cell (i, j) from later in the row: the first pass of each
 * kind after j is a candidate; the first that may move (an F or f only if
 * the rank stays within the peak) does. */
static void fill_cell(work *w, int i, int j, int m, int peak, int *mem,
                      const int *last) {
    grid *g = &w->g;
    char *r = row(g, i);
    int avail = 0, md = 0, pk = 0;
    for (int k = 0; k < NK; k++)
        if (last[k] > j) avail |= 1 << k;
    for (int x = j + 1; x < g->len && avail; x++) {
        int k = kind_of(r[x]);
        int prev = pk;
        if (k >= 0) md += mem_delta(k);
        if (md > pk) pk = md;
        if (k < 0 || !(avail & 1 << k)) continue;
        avail &= ~(1 << k);
        if (mem_delta(k) > 0 && *mem + prev >= peak) continue;
        int c = w->cnt[i * NK + k];
        if (c >= m || !can_move(w, i, k, c, j)) continue;
        r[j] = r[x], r[x] = ' ';
        w->cnt[i * NK + k]++;
        *at_of(w, c, i, k) = j;
        *mem += mem_delta(k);
        return;
    }
}

static int reorder(work *w, int m) {
    grid *g = &w->g;
    int p = g->p, peak = grid_peak(g), *last = w->last, *mem = w->mem;
    for (int i = 0; i < p; i++) {
        mem[i] = 0;
        for (int k = 0; k < NK; k++) last[i * NK + k] = -1;
        for (int j = 0; j < g->len; j++)
            if (kind_of(row(g, i)[j]) >= 0) last[i * NK + kind_of(row(g, i)[j])] = j;
    }
    reset_counts(w, m);
    for (int j = 0; j < g->len; j++)
        for (int i = 0; i < p; i++) {
            int k = kind_of(row(g, i)[j]);
            if (k < 0) {
                fill_cell(w, i, j, m, peak, &mem[i], last + i * NK);
                continue;
            }
            int c = w->cnt[i * NK + k]++;
            if (c >= m) return 0;
            *at_of(w, c, i, k) = j;
            mem[i] += mem_delta(k);
        }
    return 1;
}

/* ---- step 7: W in B order ------------------------------------------------- */

static int relabel_w(work *w, int m) {
    grid *g = &w->g;
    for (int i = 0; i < g->p; i++) {
        char *r = row(g, i);
        int cnt[NK] = {0}, head = 0, tail = 0;
        for (int j = 0; j < g->len; j++)
            if (kind_of(r[j]) >= 0) cnt[kind_of(r[j])]++;
        for (int k = 0; k < NK; k++)
            if (cnt[k] != m) return 0;
        for (int j = 0; j < g->len; j++) {
            if (r[j] == 'B' || r[j] == 'b') w->q[tail++] = r[j] == 'B' ? 'W' : 'w';
            else if (r[j] == 'W' || r[j] == 'w') {
                if (head == tail) return 0;
                r[j] = (char)w->q[head++];
            }
        }
    }
    return 1;
}

/* ---- one block ------------------------------------------------------------ */

/* Block blk's order in w->g; 1 when it holds one. *peak: the unit peak
 * that decides whether the blocks after it (more ranks on d0) are tried,
 * 0 when a step failed. */
static int block_order(work *w, const int (*blk)[NK], int m, int max_mem,
                       int *peak) {
    int p = w->p, rm = w->rm;
    *peak = 0;
    repeat(&w->g, blk, rm);
    if (!keep_window(&w->g, rm)) return 0;
    int init = grid_peak(&w->g);
    if ((m == rm && init > max_mem) || init > 2 * p) return *peak = init, 0;
    if (!squeeze(w, rm) || !warmup(&w->g, rm) || !squeeze(w, rm)) return 0;
    if (grid_peak(&w->g) > init) return *peak = init, 0;
    if (m < rm) {
        int pk = grid_peak(&w->g);
        keep_first(&w->g, m);
        if (m <= p && 2 * m <= max_mem && !release_w(w, pk < 2 * p ? pk : 2 * p))
            return 0;
        if (!squeeze(w, m)) return 0;
        init = grid_peak(&w->g);
        if (init > max_mem) return *peak = init, 0;
    }
    if (!cooldown(w, m) || !reorder(w, m) || !relabel_w(w, m)) return 0;
    *peak = grid_peak(&w->g);
    if (*peak > init) return *peak = init, 0;
    return 1;
}

/* ---- the search ----------------------------------------------------------- */

static void work_free(work *w) {
    free(w->g.c), free(w->h.c), free(w->at), free(w->cnt), free(w->si);
    free(w->q), free(w->last), free(w->mem), free(w->pad);
    memset(w, 0, sizeof *w);
}

/* Room for the repeated rows, the W moved to the end (2p) and appended in
 * the cool-down (2m). */
static zb_status work_new(work *w, int p, int m, zb_err *err) {
    memset(w, 0, sizeof *w);
    w->p = p, w->rm = m > 2 * p ? m : 2 * p;
    int cap = PERIOD * (4 * p + w->rm + 1) + 2 * p + 2 * m + 16;
    w->g = w->h = (grid){p, 0, cap, NULL};
    w->g.c = malloc((size_t)p * cap);
    w->h.c = malloc((size_t)p * cap);
    w->at = malloc((size_t)w->rm * p * NK * sizeof *w->at);
    w->cnt = malloc((size_t)p * NK * sizeof *w->cnt);
    w->si = malloc((size_t)p * sizeof *w->si);
    w->q = malloc(2 * (size_t)w->rm * sizeof *w->q);
    w->last = malloc((size_t)p * NK * sizeof *w->last);
    w->mem = malloc((size_t)p * sizeof *w->mem);
    w->pad = malloc(2 * (size_t)p + 1);
    if (w->g.c && w->h.c && w->at && w->cnt && w->si && w->q && w->last &&
        w->mem && w->pad)
        return ZB_OK;
    work_free(w);
    return zb_fail(err, ZB_ENOMEM, "zb-auto-v: out of memory");
}

/* The grid's order as a schedule: a kind's k-th cell is microbatch k. */
static zb_status to_schedule(const grid *g, int m, zb_schedule *out, zb_err *err) {
    ZB_TRY(zb_sched_begin(out, "zb-auto-v", g->p, m, 2, ZB_PLACE_V, 6 * m, err));
    zb_status st = ZB_OK;
    for (int i = 0; i < g->p && st == ZB_OK; i++) {
        int cnt[NK] = {0};
        for (int j = 0; j < g->len && st == ZB_OK; j++) {
            int k = kind_of(row(g, i)[j]);
            if (k >= 0)
                st = zb_sched_put(out, i, kind_pass[k], cnt[k]++, kind_chunk[k], err);
        }
    }
    return zb_sched_end(out, st);
}

typedef struct {
    const zb_costs *c;
    double limit, tol, span, end;
    zb_sim_ws *ws;
    zb_schedule best;
    int found;
} keeper;

/* Time the grid's order; keep it when within the limit and better. */
static zb_status consider(keeper *k, const grid *g, int m, zb_err *err) {
    zb_schedule s;
    ZB_TRY(to_schedule(g, m, &s, err));
    double span, peak;
    zb_err e2;
    zb_status st = zb_simulate_fast(&s, k->c, k->ws, &span, &peak, &e2);
    if (st == ZB_ENOMEM) {
        zb_schedule_free(&s);
        return zb_fail(err, st, "%s", e2.msg);
    }
    double end = st == ZB_OK ? zb_sim_ws_last_end(k->ws) : 0;
    if (st == ZB_OK && peak <= k->limit + k->tol &&
        (!k->found || span < k->span || (span == k->span && end < k->end))) {
        if (k->found) zb_schedule_free(&k->best);
        k->best = s, k->span = span, k->end = end, k->found = 1;
        return ZB_OK;
    }
    zb_schedule_free(&s);
    return ZB_OK;
}

/* The unit memory: how many of the largest chunk activation fit, at most
 * 2p (where the authors' framework stops). */
static int unit_limit(int p, const zb_costs *c, double mem_limit) {
    double mb = 0;
    for (int s = 0; s < 2 * p; s++)
        if (c->m_b[s] > mb) mb = c->m_b[s];
    double u = mb > 0 ? floor(mem_limit / mb + 1e-9) : 2 * p;
    return u < 2 * p ? (int)u : 2 * p;
}

/* Rank 0's patterns in the paper's order, each with its offsets d1 <= d0
 * and the ranks k0 on d0 (one k0 when d0 == d1: all give one block); the
 * blocks after one whose unit peak exceeds the limit (more ranks on the
 * larger offset) are skipped, as the authors do. */
static zb_status search(work *w, int m, int max_mem, long budget, keeper *kp,
                        zb_err *err) {
    int p = w->p, (*blk)[NK] = malloc((size_t)p * sizeof *blk);
    if (!blk) return zb_fail(err, ZB_ENOMEM, "zb-auto-v: out of memory");
    long per_block = (long)p * PERIOD * (4 * p + w->rm + 1), used = 0;
    zb_status st = ZB_OK;
    for (int x = 0; x < 125 && st == ZB_OK && used < budget; x++) {
        int pat[NK] = {0, 1 + x / 25, 1 + x / 5 % 5, 1 + x % 5, -1, -1};
        if (pat[1] == pat[2] || pat[1] == pat[3] || pat[2] == pat[3]) continue;
        fill_w(pat);
        for (int d0 = 1; d0 < PERIOD && st == ZB_OK; d0++)
            for (int d1 = 1; d1 <= d0 && st == ZB_OK; d1++)
                for (int k0 = 1; k0 < p && st == ZB_OK && used < budget; k0++) {
                    if (!make_block(p, pat, d0, d1, k0, blk)) continue;
                    int peak, ok = block_order(w, (const int (*)[NK])blk, m, max_mem, &peak);
                    used += per_block;
                    if (peak > max_mem) break;
                    if (ok) st = consider(kp, &w->g, m, err);
                    if (d0 == d1) break;
                }
    }
    free(blk);
    return st;
}

zb_status zb_vauto_best(int p, int m, const zb_costs *c, double mem_limit,
                        long budget, zb_schedule *out, int *found, zb_err *err) {
    *found = 0;
    if (p < 2 || m < 1) return ZB_OK;
    keeper kp = {.c = c, .limit = mem_limit, .tol = 1e-9 * fmax(1, fabs(mem_limit))};
    work w;
    ZB_TRY(work_new(&w, p, m, err));
    zb_status st = (kp.ws = zb_sim_ws_new()) ? ZB_OK
                   : zb_fail(err, ZB_ENOMEM, "zb-auto-v: out of memory");
    if (st == ZB_OK) st = search(&w, m, unit_limit(p, c, mem_limit), budget, &kp, err);
    if (st == ZB_OK && kp.found) *out = kp.best, *found = 1;
    else if (kp.found) zb_schedule_free(&kp.best);
    zb_sim_ws_free(kp.ws);
    work_free(&w);
    return st;
}
