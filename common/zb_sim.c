/* zb_sim.c - see zb_sim.h.
 *
 * The schedule is a DAG: each rank's list is a chain, plus the cross-stage
 * dependencies. Every pass starts at max(its rank's previous end, its
 * dependency's end + comm), so any evaluation order that respects the DAG
 * gives the same times. Each rank advances as far as its dependencies
 * allow; a pass that ends wakes the one rank whose next pass may wait for
 * it. Passes left when no rank can advance are a deadlock.
 */
#include "common/zb_sim.h"

#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/zb_lower.h"

zb_status zb_costs_init(zb_costs *c, int n, zb_err *err) {
    memset(c, 0, sizeof *c);
    c->n = n;
    double **arrs[] = {&c->t_f, &c->t_b, &c->t_w, &c->t_comm, &c->m_b, &c->m_w};
    for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++) {
        *arrs[i] = zb_calloc((size_t)n, sizeof(double), err);
        if (!*arrs[i]) {
            zb_costs_free(c);
            return ZB_ENOMEM;
        }
    }
    return ZB_OK;
}

void zb_costs_free(zb_costs *c) {
    if (!c) return;
    free(c->t_f);
    free(c->t_b);
    free(c->t_w);
    free(c->t_comm);
    free(c->m_b);
    free(c->m_w);
    memset(c, 0, sizeof *c);
}

zb_status zb_costs_uniform(zb_costs *c, int n, double tf, double tb, double tw,
                           double tcomm, double mb, double mw, zb_err *err) {
    ZB_TRY(zb_costs_init(c, n, err));
    for (int s = 0; s < n; s++) {
        c->t_f[s] = tf;
        c->t_b[s] = tb;
        c->t_w[s] = tw;
        c->t_comm[s] = tcomm;
        c->m_b[s] = mb;
        c->m_w[s] = mw;
    }
    return ZB_OK;
}

/* Reusable scratch: end times of F, B (or BW) and W per (vstage, mb), a
 * bitmask of passes seen per (vstage, mb), per-rank cursors, and the
 * schedule's tables: the virtual stage of each (rank, chunk), the owner
 * rank of each virtual stage, the transfer time into each virtual stage's
 * F and B, and the ranks that may advance (a stack; on_stack[r] says r is
 * on it). */
struct zb_sim_ws {
    size_t cells, ranks, stages;
    double *end_f, *end_b, *end_w;
    uint8_t *seen;
    int *idx;
    double *free_at, *mem, *first, *busy, *peak;
    int *vs_of;           /* [p * v] virtual stage of (rank, chunk) */
    int *owner;           /* [n] rank of a virtual stage */
    double *in_f, *in_b;  /* [n] transfer before F / B of a virtual stage */
    int *todo;            /* [p] ranks to advance */
    uint8_t *on_stack;    /* [p] */
    double last_end;      /* of the last zb_simulate_fast */
    /* vocabulary passes (zb_schedule.h), per microbatch: how many ranks
     * ran S (T) and the latest end among them */
    size_t vcells;
    int *s_done, *t_done; /* [m] */
    double *s_end, *t_end; /* [m] */
    int vocab, p;         /* of the schedule being simulated */
    double t_bcast, t_c1, t_c2;
};

zb_sim_ws *zb_sim_ws_new(void) { return calloc(1, sizeof(zb_sim_ws)); }

static void free_cells(zb_sim_ws *ws) {
    free(ws->end_f);
    free(ws->end_b);
    free(ws->end_w);
    free(ws->seen);
}

static void free_ranks(zb_sim_ws *ws) {
    free(ws->idx);
    free(ws->free_at);
    free(ws->mem);
    free(ws->first);
    free(ws->busy);
    free(ws->peak);
    free(ws->todo);
    free(ws->on_stack);
}

static void free_vocab(zb_sim_ws *ws) {
    free(ws->s_done);
    free(ws->t_done);
    free(ws->s_end);
    free(ws->t_end);
}

static void free_stages(zb_sim_ws *ws) {
    free(ws->vs_of);
    free(ws->owner);
    free(ws->in_f);
    free(ws->in_b);
}

void zb_sim_ws_free(zb_sim_ws *ws) {
    if (!ws) return;
    free_cells(ws);
    free_ranks(ws);
    free_stages(ws);
    free_vocab(ws);
    free(ws);
}

/* Room for cells (vstage, mb) pairs, ranks ranks, stages virtual
 * stages (also the (rank, chunk) pairs: as many) and vcells microbatches'
 * vocabulary counters. */
static zb_status ws_reserve(zb_sim_ws *ws, size_t cells, size_t ranks,
                            size_t stages, size_t vcells, zb_err *err) {
    if (cells > ws->cells) {
        free_cells(ws);
        ws->end_f = malloc(cells * sizeof(double));
        ws->end_b = malloc(cells * sizeof(double));
        ws->end_w = malloc(cells * sizeof(double));
        ws->seen = malloc(cells);
        ws->cells = cells;
        if (!ws->end_f || !ws->end_b || !ws->end_w || !ws->seen) goto oom;
    }
    if (ranks > ws->ranks) {
        free_ranks(ws);
        ws->idx = malloc(ranks * sizeof(int));
        ws->free_at = malloc(ranks * sizeof(double));
        ws->mem = malloc(ranks * sizeof(double));
        ws->first = malloc(ranks * sizeof(double));
        ws->busy = malloc(ranks * sizeof(double));
        ws->peak = malloc(ranks * sizeof(double));
        ws->todo = malloc(ranks * sizeof(int));
        ws->on_stack = malloc(ranks);
        ws->ranks = ranks;
        if (!ws->idx || !ws->free_at || !ws->mem || !ws->first || !ws->busy ||
            !ws->peak || !ws->todo || !ws->on_stack) goto oom;
    }
    if (stages > ws->stages) {
        free_stages(ws);
        ws->vs_of = malloc(stages * sizeof(int));
        ws->owner = malloc(stages * sizeof(int));
        ws->in_f = malloc(stages * sizeof(double));
        ws->in_b = malloc(stages * sizeof(double));
        ws->stages = stages;
        if (!ws->vs_of || !ws->owner || !ws->in_f || !ws->in_b) goto oom;
    }
    if (vcells > ws->vcells) {
        free_vocab(ws);
        ws->s_done = malloc(vcells * sizeof(int));
        ws->t_done = malloc(vcells * sizeof(int));
        ws->s_end = malloc(vcells * sizeof(double));
        ws->t_end = malloc(vcells * sizeof(double));
        ws->vcells = vcells;
        if (!ws->s_done || !ws->t_done || !ws->s_end || !ws->t_end) goto oom;
    }
    return ZB_OK;
oom:
    ws->cells = ws->ranks = ws->stages = ws->vcells = 0; /* a fresh allocation next time */
    return zb_fail(err, ZB_ENOMEM, "out of memory in the simulator");
}

/* The schedule's tables (see zb_sim_ws): the placement's virtual stages
 * and owners, and the transfer into each stage (zb_lower_cross). */
static void fill_tables(const zb_schedule *s, const zb_costs *c, zb_sim_ws *ws) {
    int p = s->p, n = p * s->v;
    for (int r = 0; r < p; r++)
        for (int ch = 0; ch < s->v; ch++)
            ws->vs_of[r * s->v + ch] = zb_vstage(s, r, ch);
    for (int vs = 0; vs < n; vs++) {
        int ch;
        zb_vstage_owner(s, vs, &ws->owner[vs], &ch);
        ws->in_f[vs] = vs > 0 && zb_lower_cross(s, vs - 1, vs) ? c->t_comm[vs - 1] : 0.0;
        ws->in_b[vs] = vs < n - 1 && zb_lower_cross(s, vs, vs + 1) ? c->t_comm[vs] : 0.0;
    }
}

double zb_costs_fb_time(const zb_costs *c, int vs_f, int vs_b, int b_pass) {
    double a = c->t_f[vs_f];
    double b = b_pass == ZB_BW ? c->t_b[vs_b] + c->t_w[vs_b] : c->t_b[vs_b];
    double ov = c->fb_overlap > 0 ? (c->fb_overlap < 1 ? c->fb_overlap : 1) : 0;
    return a < b ? b + (1.0 - ov) * a : a + (1.0 - ov) * b;
}

enum { SEEN_F = 1, SEEN_B = 2, SEEN_W = 4, SEEN_BW = 8 };

/* Why the flags of action i of rank r are wrong (an overlap must be an F
 * followed by a B or BW), or NULL. */
static const char *overlap_fault(const zb_schedule *s, int r, int i) {
    const zb_action *a = &s->acts[r][i];
    if (a->flags == 0) return NULL;
    if (a->flags != ZB_ACT_OVERLAP) return "unknown action flags";
    if (a->pass != ZB_F) return "an overlapped F&B step must start with an F";
    if (i + 1 >= s->len[r] ||
        (a[1].pass != ZB_B && a[1].pass != ZB_BW))
        return "an overlapped F&B step needs a B or BW right after its F";
    return NULL;
}

static zb_status bad_action(zb_err *err, int r, int i, const zb_action *a,
                            const char *what) {
    return zb_fail(err, ZB_EINFEASIBLE, "rank %d: action %d (%s mb %d chunk %d): %s",
                   r, i, zb_pass_name((zb_pass)a->pass), (int)a->mb, (int)a->chunk,
                   what);
}

/* Why action a of rank r cannot be taken, given its cell's passes seen so
 * far (the checks in this order), or NULL. */
static const char *action_fault(const zb_schedule *s, const zb_action *a,
                                uint8_t seen) {
    if (a->pass > ZB_BW) return "unknown pass";
    if (a->chunk >= s->v) return "chunk out of range";
    if (a->mb < 0 || a->mb >= s->m) return "microbatch out of range";
    uint8_t bit = (uint8_t)(1u << a->pass);
    if (seen & bit) return "repeated pass";
    if ((bit == SEEN_BW && (seen & (SEEN_B | SEEN_W))) ||
        (bit != SEEN_F && bit != SEEN_BW && (seen & SEEN_BW)))
        return "mixes fused BW with split B/W";
    return NULL;
}

/* Every pass exactly once, indices in range. The loop tests each action
 * with one range test and one mask of the passes it clashes with (itself;
 * BW with B and W, B and W with BW); action_fault names the fault. */
static zb_status check_passes(const zb_schedule *s, zb_sim_ws *ws, zb_err *err) {
    static const uint8_t clash[4] = {SEEN_F, SEEN_B | SEEN_BW, SEEN_W | SEEN_BW,
                                     SEEN_BW | SEEN_B | SEEN_W};
    int n = s->p * s->v, m = s->m, v = s->v;
    memset(ws->seen, 0, (size_t)n * (size_t)m);
    for (int r = 0; r < s->p; r++) {
        const int *vs_of = ws->vs_of + (size_t)r * v;
        for (int i = 0; i < s->len[r]; i++) {
            const zb_action *a = &s->acts[r][i];
            if (a->pass == ZB_S || a->pass == ZB_T)
                continue; /* zb_schedule_check_vocab's */
            if (a->pass > ZB_BW || a->chunk >= v || (unsigned)a->mb >= (unsigned)m)
                return bad_action(err, r, i, a, action_fault(s, a, 0));
            if (a->flags && overlap_fault(s, r, i))
                return bad_action(err, r, i, a, overlap_fault(s, r, i));
            uint8_t *cell = &ws->seen[(size_t)vs_of[a->chunk] * m + a->mb];
            if (*cell & clash[a->pass])
                return bad_action(err, r, i, a, action_fault(s, a, *cell));
            *cell |= (uint8_t)(1u << a->pass);
        }
    }
    for (int v = 0; v < n; v++) {
        for (int j = 0; j < m; j++) {
            uint8_t c = ws->seen[(size_t)v * m + j];
            const char *missing = !(c & SEEN_F) ? "F"
                                  : (c & SEEN_BW) ? NULL
                                  : !(c & SEEN_B) ? "B (or BW)"
                                  : !(c & SEEN_W) ? "W" : NULL;
            if (missing) {
                int r, ch;
                zb_vstage_owner(s, v, &r, &ch);
                return zb_fail(err, ZB_EINFEASIBLE,
                               "rank %d: missing %s of mb %d chunk %d "
                               "(virtual stage %d)", r, missing, j, ch, v);
            }
        }
    }
    return ZB_OK;
}

/* When action a of rank r may start (its dependency's end plus transfer),
 * or -1 if the dependency has not run yet; dep_pass and dep_vs say what it
 * waits for. */
static double ready_time(const zb_schedule *s, const zb_costs *c,
                         const zb_sim_ws *ws, int vs, const zb_action *a,
                         int *dep_pass, int *dep_vs) {
    int n = s->p * s->v, m = s->m, j = a->mb;
    switch (a->pass) {
    case ZB_F:
        if (vs == 0) return 0.0;
        *dep_pass = ZB_F;
        *dep_vs = vs - 1;
        if (ws->end_f[(size_t)(vs - 1) * m + j] < 0) return -1;
        return ws->end_f[(size_t)(vs - 1) * m + j] +
               (zb_lower_cross(s, vs - 1, vs) ? c->t_comm[vs - 1] : 0.0);
    case ZB_B:
    case ZB_BW:
        if (vs == n - 1) {
            *dep_pass = ZB_F;
            *dep_vs = vs;
            return ws->end_f[(size_t)vs * m + j];
        }
        *dep_pass = ZB_B;
        *dep_vs = vs + 1;
        if (ws->end_b[(size_t)(vs + 1) * m + j] < 0) return -1;
        return ws->end_b[(size_t)(vs + 1) * m + j] +
               (zb_lower_cross(s, vs, vs + 1) ? c->t_comm[vs] : 0.0);
    default: /* W */
        *dep_pass = ZB_B;
        *dep_vs = vs;
        return ws->end_b[(size_t)vs * m + j];
    }
}

/* One rank's running state (the hot loop keeps it in registers). */
typedef struct {
    double free_at, mem, first, busy, peak;
} rank_state;

/* Run action a at time t0 on a rank in state st: record its end and
 * memory. */
static inline double run_action(const zb_costs *c, zb_sim_ws *ws,
                                rank_state *st, int vs, int m,
                                const zb_action *a, double t0) {
    size_t cell = (size_t)vs * m + a->mb;
    double d;
    switch (a->pass) {
    case ZB_F:
        d = c->t_f[vs];
        ws->end_f[cell] = t0 + d;
        st->mem += c->m_b[vs];
        break;
    case ZB_B:
        d = c->t_b[vs];
        ws->end_b[cell] = t0 + d;
        st->mem -= c->m_b[vs] - c->m_w[vs];
        break;
    case ZB_W:
        d = c->t_w[vs];
        ws->end_w[cell] = t0 + d;
        st->mem -= c->m_w[vs];
        break;
    case ZB_S:
    case ZB_T: {
        bool is_s = a->pass == ZB_S;
        d = is_s ? c->t_s : c->t_t;
        int *done = is_s ? ws->s_done : ws->t_done;
        double *last = is_s ? ws->s_end : ws->t_end;
        done[a->mb]++;
        if (t0 + d > last[a->mb]) last[a->mb] = t0 + d;
        st->mem += is_s ? c->m_s : -c->m_s;
        break;
    }
    default: /* BW: its B part holds m_w - m_b more until its W part */
        d = c->t_b[vs] + c->t_w[vs];
        ws->end_b[cell] = ws->end_w[cell] = t0 + d;
        if (c->m_w[vs] > c->m_b[vs] &&
            st->mem + (c->m_w[vs] - c->m_b[vs]) > st->peak)
            st->peak = st->mem + (c->m_w[vs] - c->m_b[vs]);
        st->mem -= c->m_b[vs];
        break;
    }
    /* B can raise memory too (m_w > m_b under full recompute, where B
     * rebuilds what W needs) */
    if (st->mem > st->peak) st->peak = st->mem;
    st->busy += d;
    return t0 + d;
}

/* When the vocabulary collective that a of virtual stage vs waits for is
 * complete (zb_costs: S waits for X(mb), T for C1, the last stage's B for
 * C2 or C1), or -1 while it is not. */
static double vocab_ready(const zb_sim_ws *ws, int n, int m, int vs,
                          const zb_action *a) {
    size_t j = (size_t)a->mb;
    if (a->pass == ZB_S) {
        double x = ws->end_f[(size_t)(n - 1) * m + j];
        if (x < 0) return -1;
        return x + (ws->owner[vs] == ws->owner[n - 1] ? 0.0 : ws->t_bcast);
    }
    bool c2 = a->pass != ZB_T && ws->vocab == 1;
    if (c2) return ws->t_done[j] < ws->p ? -1 : ws->t_end[j] + ws->t_c2;
    return ws->s_done[j] < ws->p ? -1 : ws->s_end[j] + ws->t_c1;
}

/* What a blocked vocabulary dependency of a (virtual stage vs) waits
 * for, into what[cap]; false when a waits for no vocabulary collective. */
static bool vocab_wait(const zb_schedule *s, const zb_sim_ws *ws, int vs,
                       const zb_action *a, char *what, size_t cap) {
    int n = s->p * s->v, m = s->m;
    bool last_b = (a->pass == ZB_B || a->pass == ZB_BW) && vs == n - 1;
    if (!s->vocab || (a->pass != ZB_S && a->pass != ZB_T && !last_b)) return false;
    if (a->pass != ZB_S && a->pass != ZB_T && ws->end_f[(size_t)vs * m + a->mb] < 0)
        return false; /* its own F first: the ordinary message */
    if (vocab_ready(ws, n, m, vs, a) >= 0) return false;
    const char *dep = a->pass == ZB_S ? "F of the last virtual stage"
                      : a->pass == ZB_T || s->vocab == 2 ? "S on every rank (C1)"
                      : "T on every rank (C2)";
    snprintf(what, cap, "deadlock: waits for %s of mb %d, which never runs "
             "first", dep, (int)a->mb);
    return true;
}

/* The first rank whose next pass waits for a vocabulary collective that
 * never completes (the likelier root cause than a rank waiting on it). */
static bool vocab_deadlock(const zb_schedule *s, const zb_sim_ws *ws,
                           zb_err *err) {
    for (int r = 0; r < s->p; r++) {
        if (ws->idx[r] >= s->len[r]) continue;
        int i = ws->idx[r];
        const zb_action *a = &s->acts[r][i];
        char what[160];
        if (zb_action_overlaps(a)) a = &s->acts[r][++i]; /* its B may wait */
        if (vocab_wait(s, ws, zb_vstage(s, r, a->chunk), a, what, sizeof what)) {
            bad_action(err, r, i, a, what);
            return true;
        }
    }
    return false;
}

static zb_status deadlock(const zb_schedule *s, const zb_costs *c,
                          const zb_sim_ws *ws, zb_err *err) {
    if (vocab_deadlock(s, ws, err)) return ZB_EINFEASIBLE;
    for (int r = 0; r < s->p; r++) {
        if (ws->idx[r] >= s->len[r]) continue;
        int i = ws->idx[r];
        const zb_action *a = &s->acts[r][i];
        int vs = zb_vstage(s, r, a->chunk), dp = 0, dv = 0;
        char what[160];
        /* an overlapped step whose F could start waits for its B's input */
        if (ready_time(s, c, ws, vs, a, &dp, &dv) >= 0 && zb_action_overlaps(a)) {
            a = &s->acts[r][++i];
            vs = zb_vstage(s, r, a->chunk);
            (void)ready_time(s, c, ws, vs, a, &dp, &dv);
        }
        int dr, dc;
        zb_vstage_owner(s, dv, &dr, &dc);
        snprintf(what, sizeof what, "deadlock: waits for %s of mb %d on "
                 "virtual stage %d (rank %d), which never runs first",
                 zb_pass_name((zb_pass)dp), (int)a->mb, dv, dr);
        return bad_action(err, r, i, a, what);
    }
    return zb_fail(err, ZB_EINFEASIBLE, "deadlock");
}

/* ready_time from the tables, for the hot loop: the same sums. */
static inline double ready_at(const zb_sim_ws *ws, int n, int m, int vs,
                              const zb_action *a) {
    size_t j = (size_t)a->mb;
    switch (a->pass) {
    case ZB_F:
        if (vs == 0) return 0.0;
        if (ws->end_f[(size_t)(vs - 1) * m + j] < 0) return -1;
        return ws->end_f[(size_t)(vs - 1) * m + j] + ws->in_f[vs];
    case ZB_S:
    case ZB_T:
        return vocab_ready(ws, n, m, vs, a);
    case ZB_B:
    case ZB_BW:
        if (vs == n - 1 && ws->vocab) {
            double v = vocab_ready(ws, n, m, vs, a), f = ws->end_f[(size_t)vs * m + j];
            return v < 0 || f < 0 ? -1 : v > f ? v : f;
        }
        if (vs == n - 1) return ws->end_f[(size_t)vs * m + j];
        if (ws->end_b[(size_t)(vs + 1) * m + j] < 0) return -1;
        return ws->end_b[(size_t)(vs + 1) * m + j] + ws->in_b[vs];
    default: /* W */
        return ws->end_b[(size_t)vs * m + j];
    }
}

/* After a pass of virtual stage vs ended on rank r: the rank whose next
 * pass may have waited for it (the next stage's F, the previous stage's
 * B) goes back on the stack if it was blocked. */
static void push_rank(zb_sim_ws *ws, const zb_schedule *s, int q, int *top) {
    if (!ws->on_stack[q] && ws->idx[q] < s->len[q]) {
        ws->on_stack[q] = 1;
        ws->todo[(*top)++] = q;
    }
}

/* After a pass that completes a vocabulary dependency (F(mb) of the last
 * stage, or the last rank's S(mb) or T(mb)): every rank may wait for it. */
static void wake_vocab(zb_sim_ws *ws, const zb_schedule *s, int n, int vs,
                       const zb_action *a, int *top) {
    int j = a->mb;
    bool all = (a->pass == ZB_F && vs == n - 1) ||
               (a->pass == ZB_S && ws->s_done[j] == ws->p) ||
               (a->pass == ZB_T && ws->t_done[j] == ws->p);
    if (all)
        for (int q = 0; q < s->p; q++) push_rank(ws, s, q, top);
}

static inline void wake(zb_sim_ws *ws, const zb_schedule *s, int n, int r,
                        int vs, int pass, int *top) {
    if (pass == ZB_S || pass == ZB_T) return; /* wake_vocab's */
    int to = pass == ZB_F ? vs + 1 : pass == ZB_W ? -1 : vs - 1;
    if (to < 0 || to >= n) return;
    int q = ws->owner[to];
    if (q != r && !ws->on_stack[q] && ws->idx[q] < s->len[q]) {
        ws->on_stack[q] = 1;
        ws->todo[(*top)++] = q;
    }
}

/* The overlapped F&B step acts[i], acts[i + 1] of rank r, whose F may
 * start at ready_f: false when its B's input is not there yet. Memory
 * moves as F then B (run_action); both passes end when the step does and
 * busy counts the step once. */
static bool run_overlap(const zb_schedule *s, const zb_costs *c,
                        zb_sim_ws *ws, rank_state *st, int r, int i,
                        double ready_f, const int *off, double *start,
                        double *end, int *top) {
    int n = s->p * s->v, m = s->m;
    const zb_action *a = &s->acts[r][i], *b = a + 1;
    int vs_f = ws->vs_of[(size_t)r * s->v + a->chunk];
    int vs_b = ws->vs_of[(size_t)r * s->v + b->chunk];
    double ready_b = ready_at(ws, n, m, vs_b, b);
    if (ready_b < 0) return false;
    double t0 = ready_f > ready_b ? ready_f : ready_b;
    if (st->free_at > t0) t0 = st->free_at;
    if (st->first < 0) st->first = t0;
    double busy = st->busy, d = zb_costs_fb_time(c, vs_f, vs_b, b->pass);
    run_action(c, ws, st, vs_f, m, a, t0);
    run_action(c, ws, st, vs_b, m, b, t0);
    double t1 = t0 + d;
    size_t cb = (size_t)vs_b * m + b->mb;
    ws->end_f[(size_t)vs_f * m + a->mb] = ws->end_b[cb] = t1;
    if (b->pass == ZB_BW) ws->end_w[cb] = t1;
    st->busy = busy + d;
    st->free_at = t1;
    if (start) {
        start[off[r] + i] = start[off[r] + i + 1] = t0;
        end[off[r] + i] = end[off[r] + i + 1] = t1;
    }
    wake(ws, s, n, r, vs_f, ZB_F, top);
    wake(ws, s, n, r, vs_b, b->pass, top);
    if (ws->vocab) wake_vocab(ws, s, n, vs_f, a, top);
    return true;
}

/* Rank r runs as far as its dependencies allow; returns the passes run.
 * start/end may be NULL. */
static int advance(const zb_schedule *s, const zb_costs *c, zb_sim_ws *ws,
                   int r, const int *off, double *start, double *end,
                   int *top) {
    int n = s->p * s->v, m = s->m, i = ws->idx[r], i0 = i, len = s->len[r];
    const zb_action *acts = s->acts[r];
    const int *vs_of = ws->vs_of + (size_t)r * s->v;
    rank_state st = {ws->free_at[r], ws->mem[r], ws->first[r], ws->busy[r],
                     ws->peak[r]};
    for (; i < len; i++) {
        const zb_action *a = &acts[i];
        int vs = vs_of[a->chunk];
        double ready = ready_at(ws, n, m, vs, a);
        if (ready < 0) break;
        if (a->flags) { /* an overlapped F&B step: this F and the next */
            if (!run_overlap(s, c, ws, &st, r, i, ready, off, start, end, top))
                break;
            i++;
            continue;
        }
        double t0 = ready > st.free_at ? ready : st.free_at;
        if (st.first < 0) st.first = t0;
        double t1 = run_action(c, ws, &st, vs, m, a, t0);
        st.free_at = t1;
        if (start) {
            start[off[r] + i] = t0;
            end[off[r] + i] = t1;
        }
        wake(ws, s, n, r, vs, a->pass, top);
        if (ws->vocab) wake_vocab(ws, s, n, vs, a, top);
    }
    ws->idx[r] = i;
    ws->free_at[r] = st.free_at, ws->mem[r] = st.mem, ws->first[r] = st.first;
    ws->busy[r] = st.busy, ws->peak[r] = st.peak;
    return i - i0;
}

/* The simulation proper. start/end may be NULL (fast path). Each rank
 * advances until its next pass waits; a pass that ends wakes the rank that
 * may wait for it. Times depend only on the DAG, not on this order. */
static zb_status sim_core(const zb_schedule *s, const zb_costs *c,
                          zb_sim_ws *ws, const int *off, double *start,
                          double *end, zb_err *err) {
    int p = s->p, n = p * s->v, m = s->m, top = 0;
    if (c->n != n)
        return zb_fail(err, ZB_EINPUT, "costs cover %d virtual stages, the "
                       "schedule has %d", c->n, n);
    size_t cells = (size_t)n * (size_t)m;
    ZB_TRY(ws_reserve(ws, cells, (size_t)p, (size_t)n, (size_t)m, err));
    fill_tables(s, c, ws);
    ZB_TRY(zb_schedule_check_vocab(s, err));
    ws->vocab = s->vocab, ws->p = p;
    ws->t_bcast = c->t_bcast, ws->t_c1 = c->t_c1, ws->t_c2 = c->t_c2;
    for (int j = 0; j < m; j++) {
        ws->s_done[j] = ws->t_done[j] = 0;
        ws->s_end[j] = ws->t_end[j] = 0;
    }
    ZB_TRY(check_passes(s, ws, err));
    for (size_t i = 0; i < cells; i++) ws->end_f[i] = ws->end_b[i] = ws->end_w[i] = -1;
    for (int r = p - 1; r >= 0; r--) {
        ws->idx[r] = 0;
        ws->free_at[r] = ws->mem[r] = ws->busy[r] = ws->peak[r] = 0;
        ws->first[r] = -1;
        ws->on_stack[r] = 1;
        ws->todo[top++] = r;
    }
    int remaining = 0;
    for (int r = 0; r < p; r++) remaining += s->len[r];
    while (top > 0) {
        int r = ws->todo[--top];
        ws->on_stack[r] = 0;
        remaining -= advance(s, c, ws, r, off, start, end, &top);
    }
    return remaining > 0 ? deadlock(s, c, ws, err) : ZB_OK;
}

zb_status zb_simulate_fast(const zb_schedule *s, const zb_costs *c,
                           zb_sim_ws *ws, double *max_span, double *max_peak,
                           zb_err *err) {
    zb_sim_ws *own = NULL;
    if (!ws && !(ws = own = zb_sim_ws_new()))
        return zb_fail(err, ZB_ENOMEM, "out of memory in the simulator");
    zb_status st = sim_core(s, c, ws, NULL, NULL, NULL, err);
    if (st == ZB_OK) {
        double span = 0, pk = 0;
        ws->last_end = 0;
        for (int r = 0; r < s->p; r++) {
            double first = ws->first[r] < 0 ? ws->free_at[r] : ws->first[r];
            if (ws->free_at[r] - first > span) span = ws->free_at[r] - first;
            if (ws->free_at[r] > ws->last_end) ws->last_end = ws->free_at[r];
            if (ws->peak[r] > pk) pk = ws->peak[r];
        }
        if (max_span) *max_span = span;
        if (max_peak) *max_peak = pk;
    }
    zb_sim_ws_free(own);
    return st;
}

const double *zb_sim_ws_rank_end(const zb_sim_ws *ws) { return ws->free_at; }

double zb_sim_ws_last_end(const zb_sim_ws *ws) { return ws->last_end; }

static zb_status result_alloc(zb_sim_result *res, const zb_schedule *s,
                              zb_err *err) {
    int p = s->p;
    res->p = p;
    res->off = zb_calloc((size_t)p + 1, sizeof(int), err);
    if (!res->off) return ZB_ENOMEM;
    for (int r = 0; r < p; r++) res->off[r + 1] = res->off[r] + s->len[r];
    size_t total = (size_t)res->off[p];
    double **arrs[] = {&res->span, &res->busy, &res->bubble, &res->peak_mem};
    res->start = zb_calloc(total, sizeof(double), err);
    res->end = zb_calloc(total, sizeof(double), err);
    if (!res->start || !res->end) return ZB_ENOMEM;
    for (size_t i = 0; i < 4; i++)
        if (!(*arrs[i] = zb_calloc((size_t)p, sizeof(double), err))) return ZB_ENOMEM;
    return ZB_OK;
}

/* (span - busy) / span, never negative: busy is a sum of the same pass
 * times that make up the span, and rounding may leave busy a few ulps
 * above it. */
static double bubble_of(double span, double busy) {
    if (span <= 0 || busy >= span) return 0;
    return (span - busy) / span;
}

zb_status zb_simulate(const zb_schedule *s, const zb_costs *c,
                      zb_sim_result *res, zb_err *err) {
    memset(res, 0, sizeof *res);
    zb_status st = result_alloc(res, s, err);
    zb_sim_ws *ws = st == ZB_OK ? zb_sim_ws_new() : NULL;
    if (st == ZB_OK && !ws) st = zb_fail(err, ZB_ENOMEM, "out of memory in the simulator");
    if (st == ZB_OK) st = sim_core(s, c, ws, res->off, res->start, res->end, err);
    if (st == ZB_OK) {
        double sum_busy = 0;
        for (int r = 0; r < s->p; r++) {
            double first = ws->first[r] < 0 ? 0 : ws->first[r];
            res->span[r] = ws->free_at[r] - first;
            res->busy[r] = ws->busy[r];
            res->bubble[r] = bubble_of(res->span[r], res->busy[r]);
            res->peak_mem[r] = ws->peak[r];
            if (ws->free_at[r] > res->last_end) res->last_end = ws->free_at[r];
            if (res->span[r] > res->max_span) res->max_span = res->span[r];
            sum_busy += ws->busy[r];
        }
        double mean_busy = sum_busy / s->p;
        res->bubble_rate = bubble_of(res->max_span, mean_busy);
    }
    zb_sim_ws_free(ws);
    return st;
}

void zb_sim_result_free(zb_sim_result *res) {
    if (!res) return;
    free(res->start);
    free(res->end);
    free(res->off);
    free(res->span);
    free(res->busy);
    free(res->bubble);
    free(res->peak_mem);
    memset(res, 0, sizeof *res);
}
