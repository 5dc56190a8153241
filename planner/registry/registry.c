/* registry.c - the schedule registry: names, chunks per rank, and
 * zb_schedule_make, which dispatches to the hand-made generators
 * (schedules/handmade.h) and the automatic schedules (auto/, ilp/): the
 * only file that includes every generator.
 *
 * Memory limits of the automatic schedules, per rank, in costs->m_b units:
 *   zb-auto    prm->mem_limit (required, > 0)
 *   zb-1p      p * max m_b;  zb-2p  2p * max m_b  (max over virtual stages)
 *   zb-auto-v  prm->mem_limit when > 0 (also above the default), else
 *              2p * max m_b, ZB-V's p*M_B with M_B = 2 chunks
 * For zb-1p and zb-2p a positive prm->mem_limit that is tighter wins.
 * Solver (zb-auto, zb-1p, zb-2p, zb-auto-v): the heuristic always runs;
 * the ILP (LOOP: ilp/ilp_loop.h; zb-auto-v: ilp/ilp_v.h) is warm-started
 * from it when prm->solver is ZB_SOLVER_ILP, or ZB_SOLVER_AUTO and its
 * passes (3*v*p*m) are at most ZB_ILP_AUTO_MAX_PASSES.
 * zb_schedule_chunks returns 0 for an unknown name.
 */
#include "planner/registry/registry.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "planner/auto/auto_loop.h"
#include "planner/auto/auto_v.h"
#include "planner/auto/vocab_place.h"
#include "planner/ilp/ilp_loop.h"
#include "planner/ilp/ilp_v.h"
#include "planner/schedules/build.h"
#include "planner/schedules/handmade.h"

enum { S_GPIPE, S_1F1B, S_INTERLEAVED, S_ZBH1, S_ZBH2, S_ZBV,
       S_AUTO, S_1P, S_2P, S_AUTO_V, S_DUALPIPEV, S_COUNT,
       S_VHALF = S_COUNT, S_VMIN, S_DUALPIPE, S_ALL };

/* names[S_COUNT] ends the planner's list; the V building-block schedules
 * and dualpipe follow it (zb_schedule_block_names): the plan search does
 * not try them unless asked by name. */
static const char *const names[S_ALL + 2] = {
    "gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2", "zb-v",
    "zb-auto", "zb-1p", "zb-2p", "zb-auto-v", "dualpipev", NULL, "v-half",
    "v-min", "dualpipe", NULL};

/* The automatic schedules: heuristic, then maybe the ILP. */
static bool is_auto(int k) { return k >= S_AUTO && k <= S_AUTO_V; }

const char *const *zb_schedule_names(void) { return names; }
const char *const *zb_schedule_block_names(void) { return names + S_COUNT + 1; }

static const char *name_of(int k) { return names[k < S_COUNT ? k : k + 1]; }

/* Names users bring from PyTorch (get_schedule_class) that are not ours
 * in another case (GPipe, 1F1B, DualPipeV, DualPipe are), matched in any
 * case, with the registry's name they mean. PyTorch's
 * InterleavedZeroBubble (its docstring: the Zero Bubble paper's ZB-1P on
 * two LOOP chunks per rank, split B/W) has no LOOP twin here; it means
 * zb-v, the zb schedule of the same purpose (two chunks per rank, split
 * B/W, peak p*M_B), which is never longer than PyTorch's order nor holds
 * more (uniform costs, p 2 m 4 and 6: 12 and 18 against 12.5 and 18.5;
 * p 4 m 8: 24 against 25.5, peaks equal; tests/e2e/pytorch_csv.sh). */
static const char *const aliases[][2] = {
    {"Interleaved1F1B", "interleaved"}, {"ZBVZeroBubble", "zb-v"},
    {"InterleavedZeroBubble", "zb-v"}};

static int find(const char *name) {
    for (int k = 0; name && k < S_ALL; k++)
        if (strcasecmp(name, name_of(k)) == 0) return k;
    for (size_t i = 0; name && i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcasecmp(name, aliases[i][0]) == 0) return find(aliases[i][1]);
    return -1;
}

const char *zb_schedule_resolve(const char *name) {
    int k = find(name);
    return k < 0 ? NULL : name_of(k);
}

void zb_schedule_list_text(char *buf, size_t cap) {
    size_t n = 0;
    buf[0] = '\0';
#define ADD(...) (n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, __VA_ARGS__), \
                  n = n < cap ? n : cap)
    ADD("Schedules:");
    for (int k = 0; k < S_ALL; k++) ADD(" %s", name_of(k));
    ADD("\nNames match in any case (GPipe, 1F1B, DualPipeV); aliases:");
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        ADD("%s %s = %s", i ? "," : "", aliases[i][0], aliases[i][1]);
    ADD("\n");
#undef ADD
}

int zb_schedule_chunks(const char *name, int v) {
    int k = find(name);
    if (k < 0) return 0;
    if (k == S_INTERLEAVED) return v;
    return k == S_ZBV || k >= S_AUTO_V ? 2 : 1;
}

zb_placement zb_schedule_placement(const char *name) {
    int k = find(name);
    if (k == S_DUALPIPE) return ZB_PLACE_DUAL;
    return k == S_ZBV || k >= S_AUTO_V ? ZB_PLACE_V : ZB_PLACE_LOOP;
}

bool zb_schedule_splits_bw(const char *name) { return find(name) >= S_ZBH1; }

int zb_schedule_copies(const char *name) {
    return find(name) == S_DUALPIPE ? 2 : 1;
}

static zb_status unknown(const char *name, zb_err *err) {
    char list[256] = "";
    for (int k = 0; k < S_ALL; k++) {
        size_t len = strlen(list);
        snprintf(list + len, sizeof list - len, "%s%s", k ? ", " : "", name_of(k));
    }
    return zb_fail(err, ZB_EINPUT, "unknown schedule '%s'; known: %s",
                   name ? name : "(null)", list);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ZB-V: for m < 2p, with costs, the shorter of the lists laid out for 2p
 * and for 2p-1 microbatches (PyTorch's layout; ties keep 2p's). */
static zb_status make_zbv(const zb_sched_params *prm, zb_schedule *out,
                          zb_err *err) {
    int p = prm->p, m = prm->m;
    ZB_TRY(zb_sched_zbv(p, m, out, err));
    if (!prm->costs || m >= 2 * p || p < 2) return ZB_OK;
    zb_schedule alt;
    double a = 0, b = 0;
    zb_status st = zb_sched_zbv_layout(p, m, 2 * p - 1, &alt, err);
    if (st == ZB_OK) st = zb_simulate_fast(out, prm->costs, NULL, &a, NULL, err);
    if (st == ZB_OK) st = zb_simulate_fast(&alt, prm->costs, NULL, &b, NULL, err);
    if (st == ZB_OK && b < a) {
        zb_schedule_free(out);
        *out = alt;
        return ZB_OK;
    }
    zb_schedule_free(&alt);
    return st;
}

static zb_status make_handmade(int k, const zb_sched_params *prm,
                               zb_schedule *out, zb_err *err) {
    switch (k) {
    case S_GPIPE: return zb_sched_gpipe(prm->p, prm->m, out, err);
    case S_1F1B: return zb_sched_1f1b(prm->p, prm->m, out, err);
    case S_INTERLEAVED:
        return zb_sched_interleaved(prm->p, prm->m, prm->v, out, err);
    case S_ZBH1: return zb_sched_zbh1(prm->p, prm->m, out, err);
    case S_ZBH2: return zb_sched_zbh2(prm->p, prm->m, out, err);
    case S_VHALF: return zb_sched_vhalf(prm->p, prm->m, out, err);
    case S_VMIN: return zb_sched_vmin(prm->p, prm->m, out, err);
    case S_DUALPIPEV: return zb_sched_dualpipev(prm->p, prm->m, out, err);
    case S_DUALPIPE: return zb_sched_dualpipe(prm->p, prm->m, out, err);
    default: return make_zbv(prm, out, err);
    }
}

static double max_m_b(const zb_costs *c) {
    double mx = 0;
    for (int s = 0; s < c->n; s++)
        if (c->m_b[s] > mx) mx = c->m_b[s];
    return mx;
}

/* The per-rank memory limit of automatic schedule k (see the top). */
static zb_status auto_limit(int k, const zb_sched_params *prm, double *lim,
                            zb_err *err) {
    double given = prm->mem_limit, dflt;
    if (k == S_AUTO) {
        if (!(given > 0))
            return zb_fail(err, ZB_EINPUT, "zb-auto needs a memory limit per "
                           "rank (mem_limit > 0, got %g)", given);
        *lim = given;
        return ZB_OK;
    }
    dflt = (k == S_1P ? prm->p : 2.0 * prm->p) * max_m_b(prm->costs);
    *lim = given > 0 && (given < dflt || k == S_AUTO_V) ? given : dflt;
    return ZB_OK;
}

static bool wants_ilp(const zb_sched_params *prm, int v) {
    if (prm->solver == ZB_SOLVER_ILP) return true;
    return prm->solver == ZB_SOLVER_AUTO &&
           3LL * v * prm->p * prm->m <= ZB_ILP_AUTO_MAX_PASSES;
}

/* Heuristic, then (if chosen) the ILP warm-started from it. rep is filled
 * here only for the ILP; make() fills the rest. */
static zb_status make_auto(int k, const zb_sched_params *prm, zb_schedule *out,
                           zb_sched_report *rep, bool *used_ilp, zb_err *err) {
    double lim = 0;
    ZB_TRY(auto_limit(k, prm, &lim, err));
    *used_ilp = false;
    bool v = k == S_AUTO_V;
    if (!wants_ilp(prm, v ? 2 : 1))
        return v ? zb_auto_v(prm->p, prm->m, prm->costs, lim, out, err)
                 : zb_auto_heuristic(prm->p, prm->m, prm->costs, lim, out, err);
    zb_schedule warm;
    ZB_TRY(v ? zb_auto_v(prm->p, prm->m, prm->costs, lim, &warm, err)
             : zb_auto_heuristic(prm->p, prm->m, prm->costs, lim, &warm, err));
    zb_sched_report local;
    zb_status st = (v ? zb_ilp_v_schedule : zb_ilp_schedule)(
        prm->p, prm->m, prm->costs, lim, &warm, prm->time_limit_s,
        prm->mip_gap, out, rep ? rep : &local, err);
    zb_schedule_free(&warm);
    *used_ilp = true;
    return st;
}

/* Parameters every schedule needs; costs, when given, must match. */
static zb_status check_params(int k, const zb_sched_params *prm, zb_err *err) {
    ZB_TRY(zb_sched_check_pm(name_of(k), prm->p, prm->m, err));
    if (k == S_INTERLEAVED && (prm->v < 2 || prm->v > 255))
        return ZB_OK; /* the generator reports the bad v */
    int n = prm->p * zb_schedule_chunks(name_of(k), prm->v);
    if (!prm->costs && is_auto(k))
        return zb_fail(err, ZB_EINPUT, "%s needs per-stage costs for its %d "
                       "virtual stages", name_of(k), n);
    if (prm->costs && prm->costs->n != n)
        return zb_fail(err, ZB_EINPUT, "%s with p=%d has %d virtual stages, "
                       "but the costs cover %d", name_of(k), prm->p, n,
                       prm->costs->n);
    return ZB_OK;
}

zb_status zb_schedule_make(const char *name, const zb_sched_params *prm,
                           zb_schedule *out, zb_sched_report *rep,
                           zb_err *err) {
    memset(out, 0, sizeof *out);
    if (rep) memset(rep, 0, sizeof *rep);
    int k = find(name);
    if (k < 0) return unknown(name, err);
    if (!prm) return zb_fail(err, ZB_EINPUT, "%s: no parameters", name);
    ZB_TRY(check_params(k, prm, err));
    double t0 = now_s();
    bool used_ilp = false;
    bool hand = !is_auto(k);
    zb_status st = hand ? make_handmade(k, prm, out, err)
                              : make_auto(k, prm, out, rep, &used_ilp, err);
    if (st != ZB_OK) {
        zb_schedule_free(out);
        return st;
    }
    snprintf(out->name, sizeof out->name, "%s", name_of(k));
    if (prm->vocab && (st = zb_vocab_place(name_of(k), prm, out, err)) != ZB_OK) {
        zb_schedule_free(out);
        return st;
    }
    if (!rep || used_ilp) {
        if (rep) rep->solve_s = now_s() - t0; /* heuristic + ILP */
        return ZB_OK;
    }
    snprintf(rep->solver, sizeof rep->solver, "%s",
             hand ? "generator" : "heuristic");
    if (prm->costs)
        st = zb_simulate_fast(out, prm->costs, NULL, &rep->max_span, NULL, err);
    rep->solve_s = now_s() - t0;
    if (st != ZB_OK) zb_schedule_free(out);
    return st;
}

zb_status zb_schedule_refine(const char *name, const zb_sched_params *prm,
                             const zb_schedule *warm, zb_schedule *out,
                             zb_sched_report *rep, zb_err *err) {
    int k = find(name);
    if (!is_auto(k))
        return zb_fail(err, ZB_EINPUT, "schedule '%s' has no exact solver",
                       name ? name : "(null)");
    return (k == S_AUTO_V ? zb_ilp_v_schedule : zb_ilp_schedule)(
        prm->p, prm->m, prm->costs, prm->mem_limit, warm, prm->time_limit_s,
        prm->mip_gap, out, rep, err);
}
