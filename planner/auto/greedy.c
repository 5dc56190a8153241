/* greedy.c - see auto/greedy.h.
 *
 * State: for every virtual stage s, how many F, B, W it has started (they
 * run in microbatch order) and the end time of each F and B; for every rank,
 * when it is free, when it next wants to decide ("wake"), its memory and its
 * in-flight F count. The rank with the earliest wake decides next, so every
 * pass that can have ended by then has already been placed and "ready at
 * time t" is exact. A rank that waits sleeps until the next input it knows
 * of, or until a neighbour places the pass it depends on (which wakes it).
 * The earliest wake comes from a tournament tree over the ranks.
 */
#include "planner/auto/greedy.h"

#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner/par.h"

typedef struct {
    int p, m, v, n;
    zb_placement pl;
    const zb_costs *c;
    double limit, tol;
    int *rank_of, *chunk_of;   /* [n] owner of each virtual stage */
    int *stage_of;             /* [p*v] index r*v + k: stage of rank r chunk k */
    double *comm_dn;           /* [n] transfer time s -> s+1 (0: same rank) */
    double *end_f, *end_b;     /* [n*m] INFINITY until placed */
    int *nf, *nb, *nw;         /* [n] passes started per stage and kind */
    double *free_at, *wake, *mem; /* [p] */
    int *inflight, *cap;       /* [p] */
    int *last;                 /* [p] kind of the rank's last pass, -1 */
    double *grow;              /* [p] most a B can raise memory on the rank
                                  (m_w - m_b > 0 under full recompute) */
    int leaves;                /* power of two >= p */
    int *tour;                 /* [2 leaves] tournament tree on wake */
} greedy;

/* Every array of the state, for allocation and release in one place. */
#define INT_ARRAYS(g) {&(g)->rank_of, &(g)->chunk_of, &(g)->stage_of, &(g)->nf, \
                       &(g)->nb, &(g)->nw, &(g)->inflight, &(g)->cap,        \
                       &(g)->last, &(g)->tour}
#define DBL_ARRAYS(g) {&(g)->comm_dn, &(g)->end_f, &(g)->end_b,              \
                       &(g)->free_at, &(g)->wake, &(g)->mem, &(g)->grow}

static void greedy_free(greedy *g) {
    int **ia[] = INT_ARRAYS(g);
    double **da[] = DBL_ARRAYS(g);
    for (size_t i = 0; i < sizeof ia / sizeof ia[0]; i++) free(*ia[i]);
    for (size_t i = 0; i < sizeof da / sizeof da[0]; i++) free(*da[i]);
}

static zb_status greedy_alloc(greedy *g, int p, int m, int v, zb_placement pl,
                              const zb_costs *c, double limit, zb_err *err) {
    memset(g, 0, sizeof *g);
    int n = p * v;
    g->p = p, g->m = m, g->v = v, g->n = n, g->pl = pl, g->c = c;
    g->limit = limit;
    g->tol = zb_greedy_mem_tol(limit);
    for (g->leaves = 1; g->leaves < p; g->leaves *= 2) {}
    /* sizes in the order of INT_ARRAYS and DBL_ARRAYS */
    size_t cells = (size_t)n * (size_t)m, P = (size_t)p, N = (size_t)n;
    size_t isz[] = {N, N, N, N, N, N, P, P, P, 2 * (size_t)g->leaves};
    size_t dsz[] = {N, cells, cells, P, P, P, P};
    int **ia[] = INT_ARRAYS(g);
    double **da[] = DBL_ARRAYS(g);
    bool ok = true;
    for (size_t i = 0; i < sizeof ia / sizeof ia[0]; i++)
        ok = ok && (*ia[i] = zb_calloc(isz[i], sizeof(int), err));
    for (size_t i = 0; i < sizeof da / sizeof da[0]; i++)
        ok = ok && (*da[i] = zb_calloc(dsz[i], sizeof(double), err));
    if (!ok) {
        greedy_free(g);
        return ZB_ENOMEM;
    }
    for (int r = 0; r < p; r++)
        for (int k = 0; k < v; k++) {
            int s = zb_placement_vstage(pl, p, r, k);
            g->stage_of[r * v + k] = s;
            g->rank_of[s] = r;
            g->chunk_of[s] = k;
        }
    for (int s = 0; s + 1 < n; s++)
        g->comm_dn[s] = g->rank_of[s] != g->rank_of[s + 1] ? c->t_comm[s] : 0.0;
    for (int s = 0; s < n; s++) {
        double up = c->m_w[s] - c->m_b[s];
        if (up > g->grow[g->rank_of[s]]) g->grow[g->rank_of[s]] = up;
    }
    return ZB_OK;
}

/* The ranks play a tournament on wake (ties: lower rank): tour[1] is the
 * rank that decides next, and a changed wake replays one path to the root.
 * With uneven pass times a linear scan mispredicts nearly every compare;
 * this stays O(log p). Leaves past p hold the bye p, which never wins. */
static int tour_winner(const greedy *g, int a, int b) {
    if (b >= g->p) return a;
    if (a >= g->p) return b;
    return g->wake[b] < g->wake[a] ? b : a;
}

static void set_wake(greedy *g, int r, double t) {
    g->wake[r] = t;
    for (int i = (g->leaves + r) / 2; i >= 1; i /= 2) {
        int w = tour_winner(g, g->tour[2 * i], g->tour[2 * i + 1]);
        if (w == g->tour[i] && w != r) break; /* nothing above changes */
        g->tour[i] = w;
    }
}

static void tour_build(greedy *g) {
    for (int i = 0; i < g->leaves; i++) g->tour[g->leaves + i] = i < g->p ? i : g->p;
    for (int i = g->leaves - 1; i >= 1; i--)
        g->tour[i] = tour_winner(g, g->tour[2 * i], g->tour[2 * i + 1]);
}

static void greedy_reset(greedy *g, const zb_greedy_policy *pol) {
    size_t cells = (size_t)g->n * (size_t)g->m;
    for (size_t i = 0; i < cells; i++) g->end_f[i] = g->end_b[i] = INFINITY;
    memset(g->nf, 0, (size_t)g->n * sizeof(int));
    memset(g->nb, 0, (size_t)g->n * sizeof(int));
    memset(g->nw, 0, (size_t)g->n * sizeof(int));
    for (int r = 0; r < g->p; r++) {
        g->free_at[r] = g->wake[r] = g->mem[r] = 0;
        g->inflight[r] = 0;
        g->last[r] = -1;
        int cap = pol->cap ? pol->cap[r] : INT_MAX;
        g->cap[r] = cap < 1 ? 1 : cap;
    }
    tour_build(g);
}

/* Arrival of F(s,j)'s input; INFINITY while its producer is unplaced. */
static double arr_f(const greedy *g, int s, int j) {
    if (s == 0) return 0.0;
    return g->end_f[(size_t)(s - 1) * g->m + j] + g->comm_dn[s - 1];
}

static double arr_b(const greedy *g, int s, int j) {
    if (s == g->n - 1) return g->end_f[(size_t)s * g->m + j];
    return g->end_b[(size_t)(s + 1) * g->m + j] + g->comm_dn[s];
}

/* Optimistic arrival of an input whose producer (pass of duration d on
 * stage ds) is not placed yet: it starts no earlier than its rank is free. */
static double arr_guess(const greedy *g, int ds, double d, double comm,
                        double t) {
    double f = g->free_at[g->rank_of[ds]];
    return (f > t ? f : t) + d + comm;
}

/* Memory F(s) needs: its activations; room for a B that raises memory
 * (m_w > m_b: without it the rank could hold F's whose B can never run);
 * and on the V placement room for chunk-1 F passes of the chunk-0
 * microbatches in flight: for all of them (reserve_all), or for the next
 * one only, which is enough for the oldest microbatch to move on (it frees
 * its memory, then the next one can). */
static double f_need(const greedy *g, const zb_greedy_policy *pol, int r,
                     int s) {
    const zb_costs *c = g->c;
    double need = c->m_b[s] + g->grow[r];
    if (g->pl != ZB_PLACE_V || g->chunk_of[s] != 0) return need;
    int s1 = g->stage_of[r * g->v + 1];
    int waiting = pol->reserve_all ? g->nf[s] - g->nf[s1] + 1 : 1;
    return need + (double)waiting * c->m_b[s1];
}

/* On V, chunk 1's F continues a microbatch the rank already holds: the cap
 * must not stop it (its B would never come and the rank would deadlock),
 * and f_need has kept memory for it. */
static bool f_continues(const greedy *g, int s) {
    return g->pl == ZB_PLACE_V && g->chunk_of[s] == 1;
}

/* Is candidate (s, j) preferred over (s0, j0)? */
static bool prefer(int late_first, int s, int j, int s0, int j0) {
    if (s0 < 0) return true;
    if (late_first) return s > s0;
    return j < j0 || (j == j0 && s > s0);
}

typedef struct {
    int kind, s;        /* chosen pass, s < 0 when the rank waits */
    double next;        /* when waiting: next known arrival (or INFINITY) */
} choice;

/* What a rank sees at time t: the B and F it could start (stage, -1 if
 * none), the next input it knows will arrive (next) or expects (soon,
 * counting guesses for unplaced producers), and whether memory holds an F
 * (or a B that raises memory) back. */
typedef struct {
    int b, f;
    double next, soon;
    bool mem_blocked;
} view;

static void note_arrival(view *w, double a, double guess) {
    if (a < w->next) w->next = a;
    double e = isinf(a) ? guess : a;
    if (e < w->soon) w->soon = e;
}

static void look_b(const greedy *g, const zb_greedy_policy *pol, int r,
                   double t, view *w) {
    int bj = -1;
    for (int k = 0; k < g->v; k++) {
        int s = g->stage_of[r * g->v + k], j = g->nb[s];
        if (j >= g->nf[s]) continue;
        double a = arr_b(g, s, j);
        if (a <= t && g->mem[r] + g->c->m_w[s] - g->c->m_b[s] > g->limit + g->tol) {
            w->mem_blocked = true; /* a W must free room first */
        } else if (a <= t) {
            if (prefer(pol->b_late_first, s, j, w->b, bj)) w->b = s, bj = j;
        } else {
            note_arrival(w, a, isinf(a) ? arr_guess(g, s + 1, g->c->t_b[s + 1],
                                                    g->comm_dn[s], t) : a);
        }
    }
}

static void look_f(const greedy *g, const zb_greedy_policy *pol, int r,
                   double t, view *w) {
    int fj = -1;
    for (int k = 0; k < g->v; k++) {
        int s = g->stage_of[r * g->v + k], j = g->nf[s];
        if (j >= g->m || (!f_continues(g, s) && g->inflight[r] >= g->cap[r]))
            continue;
        double a = arr_f(g, s, j);
        if (g->mem[r] + f_need(g, pol, r, s) > g->limit + g->tol) {
            w->mem_blocked = true;
        } else if (a <= t) {
            if (prefer(pol->f_late_first, s, j, w->f, fj)) w->f = s, fj = j;
        } else {
            note_arrival(w, a, isinf(a) ? arr_guess(g, s - 1, g->c->t_f[s - 1],
                                                    g->comm_dn[s - 1], t) : a);
        }
    }
}

/* The oldest pending W of the rank (stage), or -1. */
static int oldest_w(const greedy *g, int r) {
    int ws = -1;
    double oldest = INFINITY;
    for (int k = 0; k < g->v; k++) {
        int s = g->stage_of[r * g->v + k];
        if (g->nw[s] >= g->nb[s]) continue;
        double e = g->end_b[(size_t)s * g->m + g->nw[s]];
        if (ws < 0 || e < oldest) ws = s, oldest = e;
    }
    return ws;
}

/* W passes the rank still owes (B done, W not). */
static int pending_w(const greedy *g, int r) {
    int n = 0;
    for (int k = 0; k < g->v; k++) {
        int s = g->stage_of[r * g->v + k];
        n += g->nb[s] - g->nw[s];
    }
    return n;
}

/* With both a B and an F ready: does the F go first? */
static bool f_goes_first(const greedy *g, const zb_greedy_policy *pol, int r) {
    if (pol->f_first == ZB_FIRST_FILL) return g->inflight[r] < g->cap[r];
    if (pol->f_first == ZB_FIRST_ALTERNATE) return g->last[r] == ZB_B;
    return false;
}

static choice decide(const greedy *g, const zb_greedy_policy *pol, int r,
                     double t) {
    view w = {-1, -1, INFINITY, INFINITY, false};
    look_b(g, pol, r, t, &w);
    look_f(g, pol, r, t, &w);
    if (w.b >= 0 && (w.f < 0 || !f_goes_first(g, pol, r)))
        return (choice){ZB_B, w.b, 0};
    int ws = oldest_w(g, r);
    if (ws >= 0 && pol->w_lag && pending_w(g, r) > pol->w_lag[r])
        return (choice){ZB_W, ws, 0};
    if (w.f >= 0) return (choice){ZB_F, w.f, 0};
    /* W fills a long enough gap, or frees memory an F is waiting for. */
    if (ws >= 0 && (pol->w_gap <= 0 || w.mem_blocked ||
                    w.soon - t >= pol->w_gap * g->c->t_w[ws]))
        return (choice){ZB_W, ws, 0};
    return (choice){ZB_F, -1, w.next};
}

/* A dependency of rank rr lands at time a: make sure rr decides then. */
static void wake_at(greedy *g, int rr, double a) {
    if (a < g->free_at[rr]) a = g->free_at[rr];
    if (a < g->wake[rr]) set_wake(g, rr, a);
}

static zb_status apply(greedy *g, zb_schedule *out, int r, choice ch,
                       double t, zb_err *err) {
    const zb_costs *c = g->c;
    int s = ch.s, j;
    double d;
    size_t base = (size_t)s * g->m;
    if (ch.kind == ZB_F) {
        j = g->nf[s]++;
        d = c->t_f[s];
        g->end_f[base + j] = t + d;
        g->mem[r] += c->m_b[s];
        g->inflight[r]++;
        if (s + 1 < g->n && g->rank_of[s + 1] != r)
            wake_at(g, g->rank_of[s + 1], t + d + g->comm_dn[s]);
    } else if (ch.kind == ZB_B) {
        j = g->nb[s]++;
        d = c->t_b[s];
        g->end_b[base + j] = t + d;
        g->mem[r] -= c->m_b[s] - c->m_w[s];
        g->inflight[r]--;
        if (s > 0 && g->rank_of[s - 1] != r)
            wake_at(g, g->rank_of[s - 1], t + d + g->comm_dn[s - 1]);
    } else {
        j = g->nw[s]++;
        d = c->t_w[s];
        g->mem[r] -= c->m_w[s];
    }
    g->free_at[r] = t + d;
    set_wake(g, r, t + d);
    g->last[r] = ch.kind;
    return zb_schedule_push(out, r, (zb_pass)ch.kind, j, g->chunk_of[s], err);
}

/* No rank expects anything: only a lazy policy can get here (every rank
 * waits for a neighbour). Run the oldest W anywhere to break the wait. */
static choice unstick(const greedy *g, int *rank) {
    zb_greedy_policy eager = {.reserve_all = 1, .f_first = ZB_FIRST_B};
    for (int r = 0; r < g->p; r++) {
        choice ch = decide(g, &eager, r, g->free_at[r]);
        if (ch.s >= 0 && ch.kind == ZB_W) {
            *rank = r;
            return ch;
        }
    }
    return (choice){ZB_F, -1, INFINITY};
}

/* One run of the list scheduler; out's lists are overwritten. */
static zb_status greedy_run(greedy *g, const zb_greedy_policy *pol,
                            zb_schedule *out, zb_err *err) {
    greedy_reset(g, pol);
    for (int r = 0; r < g->p; r++) out->len[r] = 0;
    long total = 3L * g->n * g->m, placed = 0;
    double now = 0;
    while (placed < total) {
        int r = g->tour[1];
        choice ch;
        if (isinf(g->wake[r])) {
            ch = unstick(g, &r);
            if (ch.s < 0)
                return zb_fail(err, ZB_EINFEASIBLE, "%s: internal error: the "
                               "list scheduler stalled with %ld of %ld passes "
                               "placed", out->name, placed, total);
            set_wake(g, r, g->free_at[r] > now ? g->free_at[r] : now);
        } else {
            ch = decide(g, pol, r, g->wake[r]);
        }
        now = g->wake[r];
        if (ch.s < 0) {
            set_wake(g, r, ch.next);
            continue;
        }
        ZB_TRY(apply(g, out, r, ch, now, err));
        placed++;
    }
    return ZB_OK;
}

static bool finite_nonneg(double x) { return isfinite(x) && x >= 0; }

zb_status zb_greedy_check(int p, int m, int v, zb_placement pl,
                          const zb_costs *c, double mem_limit,
                          const char *what, zb_err *err) {
    if (p < 1 || m < 1)
        return zb_fail(err, ZB_EINPUT, "%s: needs p >= 1 and m >= 1 (got p=%d "
                       "m=%d)", what, p, m);
    if (3.0 * p * m * v > INT_MAX / 2)
        return zb_fail(err, ZB_EINPUT, "%s: p=%d m=%d is too large (%.3g "
                       "passes)", what, p, m, 3.0 * p * m * v);
    if (!c || c->n != p * v)
        return zb_fail(err, ZB_EINPUT, "%s: costs must cover %d virtual "
                       "stages (got %d)", what, p * v, c ? c->n : 0);
    for (int s = 0; s < c->n; s++) {
        if (!finite_nonneg(c->t_f[s]) || !finite_nonneg(c->t_b[s]) ||
            !finite_nonneg(c->t_w[s]) || !finite_nonneg(c->m_b[s]) ||
            !finite_nonneg(c->m_w[s]) ||
            (s + 1 < c->n && !finite_nonneg(c->t_comm[s])))
            return zb_fail(err, ZB_EINPUT, "%s: stage %d: times and memory "
                           "must be finite and >= 0", what, s);
    }
    if (!isfinite(mem_limit) || mem_limit <= 0)
        return zb_fail(err, ZB_EINPUT, "%s: memory limit must be finite and "
                       "> 0 (got %g)", what, mem_limit);
    for (int r = 0; r < p; r++) {
        double need = 0, grow = 0;
        for (int k = 0; k < v; k++) {
            int s = zb_placement_vstage(pl, p, r, k);
            double mb = c->m_b[s];
            if (c->m_w[s] - mb > grow) grow = c->m_w[s] - mb;
            /* V: a microbatch's chunk-0 activations live until its chunk-1
             * backward, so both chunks are held at once. LOOP (v = 1): one. */
            need = pl == ZB_PLACE_V ? need + mb : (mb > need ? mb : need);
        }
        need += grow; /* a B that rebuilds more than it frees */
        if (mem_limit + zb_greedy_mem_tol(mem_limit) < need)
            return zb_fail(err, ZB_EINFEASIBLE, "%s: memory limit %g is below "
                           "%g, what rank %d must hold for one microbatch",
                           what, mem_limit, need, r);
    }
    return ZB_OK;
}

typedef struct {
    zb_schedule *best;
    double span, last;   /* longest rank span (objective), last end */
} best_so_far;

/* Keep cur if its longest rank span (span) beats the best; equal spans go
 * to the earlier last end (the wall clock of one isolated step). Swaps the
 * two schedules' storage. */
static void consider(best_so_far *b, zb_schedule *cur, double span,
                     double last) {
    double eps = 1e-9 * (span > 1 ? span : 1);
    bool better = span < b->span - eps ||
                  (span <= b->span + eps && last < b->last - eps);
    if (!better) return;
    zb_schedule tmp = *b->best;
    *b->best = *cur;
    *cur = tmp;
    b->span = span;
    b->last = last;
}

/* Load seed into cur if it is a split schedule of this shape; the
 * simulator judges the rest. */
static zb_status load_seed(zb_schedule *cur, const zb_schedule *seed,
                           const char *name, bool *usable, zb_err *err) {
    const zb_schedule *t = cur;
    *usable = seed->p == t->p && seed->m == t->m && seed->v == t->v &&
              seed->placement == t->placement;
    for (int r = 0; r < seed->p && *usable; r++)
        for (int i = 0; i < seed->len[r]; i++)
            if (seed->acts[r][i].pass == ZB_BW) *usable = false;
    if (!*usable) return ZB_OK;
    zb_schedule_free(cur);
    ZB_TRY(zb_schedule_copy(cur, seed, err));
    snprintf(cur->name, sizeof cur->name, "%s", name);
    return ZB_OK;
}

/* The policies' runs, one item each (zb_par_fn), on the scheduler state
 * and simulator workspace of the worker that runs it. */
typedef struct {
    greedy *g;                 /* [threads] */
    zb_sim_ws **ws;            /* [threads] */
    const zb_greedy_policy *pol;
    zb_schedule *out;          /* [npol] each policy's order */
    zb_status *run_st, *sim_st; /* [npol] of greedy_run, of the simulation */
    zb_err *err;               /* [npol] */
    double *span, *peak, *last; /* [npol] */
} runs;

static zb_status run_policy(void *arg, int i, int w) {
    runs *R = arg;
    R->run_st[i] = greedy_run(&R->g[w], &R->pol[i], &R->out[i], &R->err[i]);
    R->sim_st[i] = R->run_st[i];
    if (R->run_st[i] == ZB_OK) {
        R->sim_st[i] = zb_simulate_fast(&R->out[i], R->g[w].c, R->ws[w],
                                        &R->span[i], &R->peak[i], &R->err[i]);
        if (R->sim_st[i] == ZB_OK) R->last[i] = zb_sim_ws_last_end(R->ws[w]);
    }
    /* a policy that stalls is no error of the loop */
    return R->run_st[i] == ZB_EINFEASIBLE ? ZB_OK : R->sim_st[i];
}

static void runs_free(runs *R, int nt, int npol) {
    for (int w = 0; w < nt; w++) {
        if (R->g) greedy_free(&R->g[w]);
        if (R->ws) zb_sim_ws_free(R->ws[w]);
    }
    for (int i = 0; i < npol && R->out; i++) zb_schedule_free(&R->out[i]);
    free(R->g);
    free(R->ws);
    free(R->out);
    free(R->run_st);
    free(R->sim_st);
    free(R->err);
    free(R->span);
    free(R->peak);
    free(R->last);
}

/* Room for nt workers and npol runs. */
static zb_status runs_alloc(runs *R, int nt, int npol, const char *name, int p,
                            int m, int v, zb_placement pl, const zb_costs *c,
                            double mem_limit, zb_err *err) {
    size_t P = (size_t)npol;
    R->g = zb_calloc((size_t)nt, sizeof *R->g, err);
    R->ws = zb_calloc((size_t)nt, sizeof *R->ws, err);
    R->out = zb_calloc(P, sizeof *R->out, err);
    R->run_st = zb_calloc(P, sizeof *R->run_st, err);
    R->sim_st = zb_calloc(P, sizeof *R->sim_st, err);
    R->err = zb_calloc(P, sizeof *R->err, err);
    R->span = zb_calloc(P, sizeof(double), err);
    R->peak = zb_calloc(P, sizeof(double), err);
    R->last = zb_calloc(P, sizeof(double), err);
    if (!R->g || !R->ws || !R->out || !R->run_st || !R->sim_st || !R->err ||
        !R->span || !R->peak || !R->last)
        return ZB_ENOMEM;
    for (int w = 0; w < nt; w++) {
        ZB_TRY(greedy_alloc(&R->g[w], p, m, v, pl, c, mem_limit, err));
        if (!(R->ws[w] = zb_sim_ws_new()))
            return zb_fail(err, ZB_ENOMEM, "out of memory");
    }
    for (int i = 0; i < npol; i++)
        ZB_TRY(zb_schedule_init(&R->out[i], name, p, m, v, pl, 0, err));
    return ZB_OK;
}

/* The runs in policy order, as one loop over them would take them: a
 * stalled run is skipped (its message kept), the first error ends it. */
static zb_status replay(const runs *R, int npol, const char *name,
                        double mem_limit, double tol, best_so_far *b,
                        zb_err *stall, zb_err *err) {
    for (int i = 0; i < npol; i++) {
        if (R->run_st[i] == ZB_EINFEASIBLE) { /* this policy stalled */
            *stall = R->err[i];
            continue;
        }
        if (R->sim_st[i] != ZB_OK) {
            *err = R->err[i];
            return R->sim_st[i];
        }
        if (R->peak[i] > mem_limit + tol)
            return zb_fail(err, ZB_ERUNTIME, "%s: internal error: policy %d "
                           "peaks at %g over the limit %g", name, i,
                           R->peak[i], mem_limit);
        consider(b, &R->out[i], R->span[i], R->last[i]);
    }
    return ZB_OK;
}

zb_status zb_greedy_search(const char *name, int p, int m, int v,
                           zb_placement pl, const zb_costs *c,
                           double mem_limit, const zb_greedy_policy *pol,
                           int npol, const zb_schedule *seeds, int nseeds,
                           zb_schedule *out, zb_err *err) {
    memset(out, 0, sizeof *out);
    ZB_TRY(zb_greedy_check(p, m, v, pl, c, mem_limit, name, err));
    /* the policies run in parallel (par.h), each into its own order */
    int nt = zb_par_threads(0, npol);
    runs R;
    memset(&R, 0, sizeof R);
    R.pol = pol;
    zb_schedule cur;
    memset(&cur, 0, sizeof cur);
    zb_sim_ws *ws = zb_sim_ws_new();
    zb_status st = ws ? ZB_OK : zb_fail(err, ZB_ENOMEM, "out of memory");
    if (st == ZB_OK)
        st = runs_alloc(&R, nt, npol, name, p, m, v, pl, c, mem_limit, err);
    if (st == ZB_OK) st = zb_schedule_init(&cur, name, p, m, v, pl, 0, err);
    if (st == ZB_OK) st = zb_schedule_init(out, name, p, m, v, pl, 0, err);
    best_so_far b = {out, INFINITY, INFINITY};
    zb_err stall = {""};
    double tol = zb_greedy_mem_tol(mem_limit);
    if (st == ZB_OK) {
        /* every run below the first that failed has run: replay reports
         * that failure in its place */
        (void)zb_par_for(npol, nt, run_policy, &R);
        st = replay(&R, npol, name, mem_limit, tol, &b, &stall, err);
    }
    for (int i = 0; i < nseeds && st == ZB_OK; i++) {
        double mk, peak;
        bool usable;
        st = load_seed(&cur, &seeds[i], name, &usable, err);
        if (st != ZB_OK || !usable) continue;
        zb_err ignored; /* an invalid seed is simply not a candidate */
        if (zb_simulate_fast(&cur, c, ws, &mk, &peak, &ignored) != ZB_OK ||
            peak > mem_limit + tol)
            continue;
        consider(&b, &cur, mk, zb_sim_ws_last_end(ws));
    }
    if (st == ZB_OK && isinf(b.span))
        st = zb_fail(err, ZB_ERUNTIME, "%s", stall.msg);

    zb_schedule_free(&cur);
    zb_sim_ws_free(ws);
    runs_free(&R, nt, npol);
    if (st != ZB_OK) zb_schedule_free(out);
    return st;
}
