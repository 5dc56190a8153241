/* search.c - see search/search.h. docs/zbplan.md explains the search in prose.
 *
 * The search is a branch and bound over "splits" (dp, tp, pp, micro-batch)
 * and, inside a split, "groups" (one chunk count v: one partition into
 * pp*v virtual stages) and "jobs" (a schedule name and its v):
 *
 *   1. Enumerate the splits; for each, evaluate the cost model once and a
 *      lower bound of the step time that holds for any schedule and any
 *      partition (the busiest rank does at least 1/pp of the work m times).
 *   2. Phase 1: visit the splits by increasing lower bound; partition once
 *      per v, tighten the bound per placement (rank r cannot start before
 *      the forwards of the stages ahead of it), and build + simulate every
 *      hand-made schedule whose bound is below the k-th best step time.
 *   3. Phase 2: the automatic schedules (zb-auto, zb-1p, zb-2p, zb-auto-v)
 *      cost far more to build, so they run on the best few splits of
 *      phase 1 only (opts.auto_splits), with the same bound.
 * The bounds never cut a candidate that would enter the top k, so phases
 * 1 and 2 are exact for the schedules they consider.
 */
#include "planner/search/search.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "planner/cost/cost.h"
#include "planner/cost/dp.h"
#include "planner/cost/partition.h"
#include "planner/cost/plan_fit.h"
#include "planner/cost/profile.h"
#include "planner/cost/vocab.h"
#include "planner/registry/registry.h"

#define MAX_JOBS 64

/* Schedules that solve for the real costs: slow to build. */
static const char *const auto_names[] = {"zb-auto", "zb-1p", "zb-2p",
                                         "zb-auto-v", NULL};

static bool in_list(const char *const *list, const char *name) {
    for (int i = 0; list[i]; i++)
        if (strcmp(list[i], name) == 0) return true;
    return false;
}

/* Placement a schedule uses; its costs (t_comm) depend on it, and the
 * automatic schedules need the costs before they exist. */
static zb_placement placement_of(const char *name) {
    return zb_schedule_placement(name);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static bool is_cpu(const zb_model *m) {
    return strcasecmp(m->cluster.device.name, "cpu") == 0;
}

void zb_search_opts_default(zb_search_opts *o) {
    memset(o, 0, sizeof *o);
    o->max_micro_batch = 16;
    o->solver = ZB_SOLVER_HEURISTIC;
    o->time_limit_s = 10.0;
    o->mip_gap = 1e-4;
    o->top_k = 5;
    o->auto_splits = 8;
    o->mem_margin = ZB_SEARCH_MEM_MARGIN;
}

/* ---- step-time parts ---- */

double zb_search_grad_bytes(const zb_model *m) {
    return (double)zb_precision_bytes(m->train.precision);
}

double zb_search_optimizer_s(const zb_model *m, double params, int dp,
                             double peak_flops) {
    /* AdamW streams its state through memory: the device's bandwidth at
     * the cost model's streaming efficiency, else a machine balance */
    double mbw = m->cluster.device.mem_bw_Bps;
    double bw = mbw > 0 ? ZB_SEARCH_BW_EFF * mbw
                        : peak_flops / ZB_SEARCH_FLOPS_PER_BYTE;
    double held = m->train.zero1 && dp > 1 ? params / dp : params;
    return bw > 0 ? held * ZB_SEARCH_OPT_BYTES / bw : 0.0;
}

bool zb_search_dp_inter_node(int dp, int tp, int pp, int devices_per_node) {
    if (devices_per_node < 1) devices_per_node = 1;
    for (int r = 0; r < pp; r++) {
        long first = (long)r * dp * tp, last = first + (long)(dp - 1) * tp;
        if (first / devices_per_node != last / devices_per_node) return true;
    }
    return false;
}

/* Gradient all-reduce of a rank holding `params` parameters. */
static double allreduce_s(const zb_model *m, double params, int dp, int tp,
                          int pp) {
    if (dp <= 1) return 0.0;
    const zb_cluster *c = &m->cluster;
    bool inter = zb_search_dp_inter_node(dp, tp, pp, c->devices_per_node);
    return zb_allreduce_s(params * zb_search_grad_bytes(m), dp,
                          inter ? c->inter_bw_Bps : c->intra_bw_Bps,
                          inter ? c->inter_lat_s : c->intra_lat_s);
}

/* DUAL (dualpipe): pipeline ranks r and pp-1-r sum the gradients of
 * their two copies of the same stages, a 2-rank all-reduce of all of
 * rank r's gradients after its last pass (executor/run/rank.c), before the
 * data-parallel one: not hidden under any pass. */
static double copy_sum_s(const zb_model *m, double params, int dp, int tp,
                         int pp, int r) {
    const zb_cluster *c = &m->cluster;
    int dpn = c->devices_per_node > 0 ? c->devices_per_node : 1;
    long na = (long)r * dp * tp / dpn, nb = (long)(pp - 1 - r) * dp * tp / dpn;
    bool inter = na != nb;
    return zb_allreduce_s(params * zb_search_grad_bytes(m), 2,
                          inter ? c->inter_bw_Bps : c->intra_bw_Bps,
                          inter ? c->inter_lat_s : c->intra_lat_s);
}

/* ---- splits ---- */

/* m with the device as one rank of a dp x tp x pp layout sees it. */
static zb_model rank_model(const zb_model *m, int world, int cores) {
    zb_model r = *m;
    zb_cost_cpu_rank_share(&r, world, cores);
    return r;
}

typedef struct {
    int dp, tp, pp, mb, m;
    int idx;             /* enumeration order */
    zb_cost_table ct;
    double lb;           /* step-time lower bound, any schedule */
    double best;         /* best fitting step time found */
    bool measured;       /* pass times from the profile */
    bool measured_post;  /* all-reduce + optimizer: the profile's overhead */
    double post_s;       /* that overhead */
    bool static_over;    /* even an even share of the weights does not fit */
    double static_bytes; /* that share's static memory and the workspace */
    zb_device dev;       /* the device as one rank sees it (cpu: its share
                            of the cores, zb_cost_cpu_rank_share) */
    int vocab;           /* vocabulary parallelism 0, 1, 2: ct is then
                            rewritten by zb_vocab_eval, vc its passes */
    zb_vocab_cost vc;
} split;

typedef struct { const char *name; int v; } job;

/* Placements: LOOP, V, DUAL (zb_placement). */
#define NPL 3

typedef struct {
    const zb_model *mdl;
    const zb_search_opts *o;
    zb_search_result *res;
    double dev_mem, ws_bytes;
    zb_sim_ws *ws;
    int max_n, max_p;
    zb_stage_span *spans;          /* [max_n] the current partition */
    zb_costs cost[NPL];            /* [max_n] by placement */
    double *static_r[NPL];         /* [max_p] static bytes per rank */
    double *ar_r[NPL];             /* [max_p] DP all-reduce time per rank */
    /* the current group (split, v) */
    int g_v;
    bool g_ready[NPL];
    double g_lb[NPL], g_opt[NPL], g_max_static[NPL];
    double g_stage[NPL];           /* staging rings per rank (GPUs) */
    double g_margin[NPL];          /* workspace + g_stage */
    long key_base;
    int cores;                     /* cpu: the machine's cores; 0 else */
    int skipped_splits;            /* the cost model rejected them */
    zb_err skip_err;               /* why, the last time */
} ctx;

static zb_status bad_opt(zb_err *err, const char *fmt, int a, int b) {
    return zb_fail(err, ZB_EINPUT, fmt, a, b);
}

/* Forced values that can never hold. */
static zb_status check_forced(const zb_model *mdl, const zb_search_opts *o,
                              zb_err *err) {
    const zb_arch *a = &mdl->arch;
    int dpn = mdl->cluster.devices_per_node;
    if (!(o->mem_margin >= 0 && o->mem_margin < 1))
        return zb_fail(err, ZB_EINPUT, "--mem-margin %g%% must be at least 0 "
                       "and below 100", 100 * o->mem_margin);
    if (o->tp > 0 && (a->heads % o->tp || a->hidden % o->tp ||
                      a->ffn_hidden % o->tp))
        return zb_fail(err, ZB_EINPUT, "--tp %d must divide heads (%d), "
                       "hidden (%d) and ffn_hidden (%d)", o->tp, a->heads,
                       a->hidden, a->ffn_hidden);
    if (o->tp > 0 && zb_arch_kv_heads(a) % o->tp)   /* GQA: K/V heads shard too */
        return zb_fail(err, ZB_EINPUT, "--tp %d must divide kv_heads (%d)", o->tp,
                       zb_arch_kv_heads(a));
    if (o->tp > 0 && !is_cpu(mdl) &&
        (o->tp > dpn || dpn % o->tp || (o->tp & (o->tp - 1))))
        return bad_opt(err, "--tp %d must be a power of two dividing "
                       "devices_per_node (%d)", o->tp, dpn);
    if (o->pp > a->layers)
        return bad_opt(err, "--pp %d must be at most the number of layers "
                       "(%d)", o->pp, a->layers);
    if ((o->vocab == 1 || o->vocab == 2) && o->pp == 1)
        return bad_opt(err, "--vocab-parallel %d needs --pp >= 2 (the "
                       "vocabulary is sharded over the pipeline ranks), got "
                       "--pp %d", o->vocab, o->pp);
    if (o->dp > 0 && mdl->train.global_batch % o->dp)
        return bad_opt(err, "--dp %d must divide global_batch (%d)", o->dp,
                       mdl->train.global_batch);
    if (!is_cpu(mdl) && o->dp > 0 && o->tp > 0 && o->pp > 0) {
        int world = mdl->cluster.nodes * dpn, used = o->dp * o->tp * o->pp;
        if (used != world)
            return bad_opt(err, "--dp x --tp x --pp = %d devices, but the "
                           "cluster has %d (nodes x devices_per_node)", used,
                           world);
    }
    return ZB_OK;
}

/* The tp degrees to try. */
static int list_tp(const zb_model *mdl, const zb_search_opts *o, int *out) {
    if (o->tp > 0) { out[0] = o->tp; return 1; }
    if (is_cpu(mdl)) { out[0] = 1; return 1; }
    const zb_arch *a = &mdl->arch;
    int dpn = mdl->cluster.devices_per_node, n = 0;
    for (int t = 1; t <= dpn && n < 30; t *= 2)
        if (dpn % t == 0 && a->heads % t == 0 && a->hidden % t == 0 &&
            a->ffn_hidden % t == 0)
            out[n++] = t;
    return n;
}

/* Micro-batch sizes for one DP rank's share of the batch. */
static int list_mb(const zb_model *mdl, const zb_search_opts *o, int per_dp,
                   int *out) {
    int fixed = o->micro_batch > 0 ? o->micro_batch : mdl->train.micro_batch;
    if (fixed > 0) {
        if (per_dp % fixed) return 0;
        out[0] = fixed;
        return 1;
    }
    int n = 0;
    for (int b = 1; b <= per_dp && b <= o->max_micro_batch && n < 30; b *= 2)
        if (per_dp % b == 0) out[n++] = b;
    return n;
}

static double lower_bound_split(const zb_model *mdl, const split *s,
                                double *params_share) {
    const zb_cost_table *ct = &s->ct;
    double work = mdl->arch.layers * (ct->layer.f_s + ct->layer.b_s + ct->layer.w_s) +
                  ct->embed.f_s + ct->embed.b_s + ct->embed.w_s +
                  ct->head.f_s + ct->head.b_s + ct->head.w_s +
                  s->pp * (s->vc.t_s + s->vc.t_t);  /* vocabulary passes */
    /* a rank holding both ends keeps one tied table shard (rank_params) */
    double params = mdl->arch.layers * ct->layer.params + ct->embed.params +
                    ct->head.params -
                    (mdl->arch.tied_embeddings ? ct->vocab_params : 0) +
                    s->pp * ct->vocab_rank_params;
    *params_share = params / s->pp;
    /* the busiest rank ends after the mean work; the rank with the most
     * parameters reduces at least a mean share (after its own last pass,
     * which may come before the others' ends: hence max, not sum) */
    double pipe = s->m * work / s->pp;
    if (s->measured_post) return pipe + s->post_s;
    /* overlapped (cost/dp.h): nothing of it need show */
    double ar = mdl->train.dp_overlap
                    ? 0 : allreduce_s(mdl, *params_share, s->dp, s->tp, s->pp);
    return (pipe > ar ? pipe : ar) +
           zb_search_optimizer_s(mdl, *params_share, s->dp, ct->peak_flops);
}

static zb_status add_split(ctx *x, split **arr, int *n, int *cap, int dp,
                           int tp, int pp, int mb, int vocab, zb_err *err) {
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 64;
        split *na = realloc(*arr, (size_t)nc * sizeof *na);
        if (!na) return zb_fail(err, ZB_ENOMEM, "out of memory listing splits");
        *arr = na;
        *cap = nc;
    }
    split *s = &(*arr)[*n];
    memset(s, 0, sizeof *s);
    s->dp = dp; s->tp = tp; s->pp = pp; s->mb = mb;
    s->m = x->mdl->train.global_batch / (dp * mb);
    s->idx = *n;
    s->best = INFINITY;
    zb_model rm = rank_model(x->mdl, dp * tp * pp, x->cores);
    s->dev = rm.cluster.device;
    zb_status st = zb_cost_eval(&rm, tp, mb, &s->ct, &x->skip_err);
    if (st == ZB_EINFEASIBLE) { x->skipped_splits++; return ZB_OK; }
    if (st != ZB_OK) return zb_fail(err, st, "%s", x->skip_err.msg);
    const zb_profile *prof = x->o->profile;
    s->measured = zb_profile_apply(prof, &rm, tp, mb, &s->ct);
    s->measured_post = s->measured && zb_profile_covers_layout(prof, dp, tp, pp);
    s->post_s = s->measured_post ? prof->overhead_s : 0;
    s->vocab = vocab;
    st = zb_vocab_eval(&rm, dp, tp, pp, mb, vocab, &s->ct, &s->vc, &x->skip_err);
    if (st == ZB_EINFEASIBLE) { x->skipped_splits++; return ZB_OK; }
    if (st != ZB_OK) return zb_fail(err, st, "%s", x->skip_err.msg);
    double share;
    s->lb = lower_bound_split(&rm, s, &share);
    s->static_bytes = zb_static_mem_bytes(x->mdl, share, dp) + x->ws_bytes;
    s->static_over = s->static_bytes > x->dev_mem;
    (*n)++;
    return ZB_OK;
}

/* Whether the search tries vocabulary parallelism vp (0 none) on pp
 * pipeline ranks: auto tries all three where pp >= 2 (none first, so it
 * wins ties), a forced variant only itself. */
static bool vocab_tried(const zb_search_opts *o, int pp, int vp) {
    if (o->vocab == ZB_SEARCH_VOCAB_AUTO) return vp == 0 || pp >= 2;
    return vp == o->vocab;
}

/* Every (dp, tp, pp, micro-batch) the rules allow, and with
 * --vocab-parallel each variant tried. */
static zb_status list_splits(ctx *x, split **out, int *count, zb_err *err) {
    const zb_model *mdl = x->mdl;
    const zb_search_opts *o = x->o;
    bool cpu = is_cpu(mdl);
    int world = mdl->cluster.nodes * mdl->cluster.devices_per_node;
    int tps[32], mbs[32], ntp = list_tp(mdl, o, tps), n = 0, cap = 0;
    *out = NULL;
    for (int i = 0; i < ntp; i++) {
        int tp = tps[i];
        int pp_lo = o->pp > 0 ? o->pp : 1;
        /* cpu: every dp x tp x pp up to the cores (a rank per core at
         * least); forced sizes may exceed them (time-shared) */
        int pp_hi = o->pp > 0 ? o->pp : cpu ? x->cores / tp : mdl->arch.layers;
        if (pp_hi > mdl->arch.layers) pp_hi = mdl->arch.layers;
        if (pp_hi < pp_lo) pp_hi = pp_lo;
        for (int pp = pp_lo; pp <= pp_hi; pp++) {
            int dp_lo = o->dp > 0 ? o->dp : 1;
            int dp_hi = o->dp > 0 ? o->dp : cpu ? x->cores / (tp * pp) : 1;
            if (dp_hi < dp_lo) dp_hi = dp_lo;
            for (int dp = dp_lo; dp <= dp_hi; dp++) {
                int d = dp;
                if (!cpu) {
                    if (world % (tp * pp)) continue;
                    if (o->dp > 0 && o->dp != world / (tp * pp)) continue;
                    d = world / (tp * pp);
                }
                if (mdl->train.global_batch % d) continue;
                int nmb = list_mb(mdl, o, mdl->train.global_batch / d, mbs);
                for (int k = 0; k < nmb; k++)
                    for (int vp = 0; vp <= 2; vp++) {
                        if (!vocab_tried(o, pp, vp)) continue;
                        zb_status st = add_split(x, out, &n, &cap, d, tp, pp,
                                                 mbs[k], vp, err);
                        if (st != ZB_OK) { free(*out); *out = NULL; return st; }
                    }
            }
        }
    }
    *count = n;
    return ZB_OK;
}

static zb_status no_split(const ctx *x, zb_err *err) {
    const zb_model *mdl = x->mdl;
    const zb_search_opts *o = x->o;
    if (x->skipped_splits > 0)
        return zb_fail(err, o->tp > 0 ? ZB_EINPUT : ZB_EINFEASIBLE,
                       "no layout left: %s", x->skip_err.msg);
    if (o->micro_batch > 0)
        return zb_fail(err, ZB_EINPUT, "--micro-batch %d does not divide "
                       "global_batch / dp (global_batch %d) for any allowed "
                       "layout", o->micro_batch, mdl->train.global_batch);
    if (o->dp > 0 || o->tp > 0 || o->pp > 0)
        return zb_fail(err, ZB_EINPUT, "no layout satisfies --dp/--tp/--pp "
                       "with %d devices and global_batch %d",
                       mdl->cluster.nodes * mdl->cluster.devices_per_node,
                       mdl->train.global_batch);
    return zb_fail(err, ZB_EINFEASIBLE, "no (dp, tp, pp, micro-batch) layout "
                   "divides global_batch %d over %d devices",
                   mdl->train.global_batch,
                   mdl->cluster.nodes * mdl->cluster.devices_per_node);
}

/* ---- jobs ---- */

/* The searched schedules, and the building-block ones (v-half, v-min) that
 * only --schedule asks for (zb-auto-v already tries their orders). */
static zb_status check_schedule_name(const char *name, zb_err *err) {
    const char *const *names = zb_schedule_names();
    const char *const *blocks = zb_schedule_block_names();
    if (in_list(names, name) || in_list(blocks, name)) return ZB_OK;
    char list[256] = "";
    for (int i = 0; names[i]; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
                 i ? ", " : "", names[i]);
    for (int i = 0; blocks[i]; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), ", %s",
                 blocks[i]);
    return zb_fail(err, ZB_EINPUT, "unknown schedule '%s' (one of: %s)", name,
                   list);
}

/* Append (name, v) for each chunk count the name takes. */
static void add_jobs(const zb_search_opts *o, const char *name, job *jobs,
                     int *n) {
    int tries[2] = {2, 4}, ntries = 2;
    if (o->v > 0) { tries[0] = o->v; ntries = 1; }
    for (int i = 0; i < ntries; i++) {
        int v = zb_schedule_chunks(name, tries[i]);
        bool dup = false;
        for (int k = 0; k < *n; k++)
            if (jobs[k].name == name && jobs[k].v == v) dup = true;
        if (!dup && *n < MAX_JOBS) jobs[(*n)++] = (job){name, v};
    }
}

/* Phase 1 and phase 2 job lists. */
static zb_status list_jobs(const zb_search_opts *o, job *j1, int *n1, job *j2,
                           int *n2, zb_err *err) {
    const char *const *names = zb_schedule_names();
    *n1 = *n2 = 0;
    if (o->schedule[0]) {
        /* the registry's name (any case, or an alias such as DualPipeV) */
        const char *name = zb_schedule_resolve(o->schedule);
        ZB_TRY(check_schedule_name(name ? name : o->schedule, err));
        const char *const *blocks = zb_schedule_block_names();
        for (int i = 0; names[i]; i++)
            if (strcmp(names[i], name) == 0) add_jobs(o, names[i], j1, n1);
        for (int i = 0; blocks[i]; i++)
            if (strcmp(blocks[i], name) == 0) add_jobs(o, blocks[i], j1, n1);
        int want = o->v > 0 ? o->v : 0;
        if (want && zb_schedule_chunks(name, want) != want)
            return zb_fail(err, ZB_EINPUT, "--chunks %d does not apply to "
                           "schedule %s (it uses %d)", want, name,
                           zb_schedule_chunks(name, want));
        return ZB_OK;
    }
    for (int i = 0; names[i]; i++) {
        bool slow = in_list(auto_names, names[i]) && !o->exhaustive;
        if (slow) add_jobs(o, names[i], j2, n2);
        else add_jobs(o, names[i], j1, n1);
    }
    return ZB_OK;
}

/* ---- candidates ---- */

static void cand_free(zb_candidate *c) {
    zb_schedule_free(&c->sched);
    free(c->spans);
    c->spans = NULL;
}

static bool better(const zb_candidate *a, const zb_candidate *b) {
    if (a->step_s != b->step_s) return a->step_s < b->step_s;
    if (a->peak_mem_bytes != b->peak_mem_bytes)
        return a->peak_mem_bytes < b->peak_mem_bytes;
    return a->key < b->key;
}

/* k-th best step time: anything with a lower bound above it is useless. */
static double threshold(const ctx *x) {
    if (x->o->exhaustive) return INFINITY;
    double b = x->o->bound > 0 ? x->o->bound : INFINITY;
    if (x->res->n < x->o->top_k) return b;
    double k = x->res->cand[x->o->top_k - 1].step_s;
    return k < b ? k : b;
}

/* Same layout, levers and prediction (step and peak exactly), another
 * schedule's name: a table row would repeat every number. */
static bool same_prediction(const zb_candidate *a, const zb_candidate *b) {
    return a->dp == b->dp && a->tp == b->tp && a->pp == b->pp && a->v == b->v &&
           a->micro_batch == b->micro_batch && a->m == b->m &&
           a->recompute == b->recompute && a->sp == b->sp &&
           a->zero1 == b->zero1 && a->vocab == b->vocab &&
           a->step_s == b->step_s && a->peak_mem_bytes == b->peak_mem_bytes;
}

/* Add name to a "same" list (dropped when it does not fit: a name list,
 * not data). */
static void add_same(char *list, size_t cap, const char *name) {
    size_t n = strlen(list);
    snprintf(list + n, cap - n, "%s%s", n ? ", " : "", name);
}

/* c equals a kept candidate but for its schedule: keep the better of the
 * two by the ranking's own order (so the chosen plan is the one it was)
 * and name the other on it. True when c was merged (and is freed). */
static bool merge_same(ctx *x, zb_candidate *c) {
    zb_search_result *r = x->res;
    for (int i = 0; i < r->n; i++) {
        zb_candidate *k = &r->cand[i];
        if (!same_prediction(k, c)) continue;
        if (better(c, k)) { /* c takes k's place; k's names go with it */
            char names[sizeof k->same];
            snprintf(names, sizeof names, "%s", k->schedule);
            if (k->same[0]) add_same(names, sizeof names, k->same);
            zb_candidate old = *k;
            *k = *c;
            k->spans = old.spans; /* same pp x v: c's partition into it */
            memcpy(k->spans, x->spans, (size_t)c->pp * c->v * sizeof *k->spans);
            snprintf(k->same, sizeof k->same, "%s", names);
            zb_schedule_free(&old.sched);
        } else {
            add_same(k->same, sizeof k->same, c->schedule);
            zb_schedule_free(&c->sched);
        }
        return true;
    }
    return false;
}

/* Insert c (taking ownership of its schedule; spans are copied from the
 * current partition). */
static zb_status keep(ctx *x, zb_candidate *c, zb_err *err) {
    zb_search_result *r = x->res;
    int k = x->o->top_k;
    if (merge_same(x, c)) return ZB_OK;
    if (!x->o->exhaustive && r->n == k) {
        if (!better(c, &r->cand[k - 1])) { cand_free(c); return ZB_OK; }
        cand_free(&r->cand[--r->n]);
    }
    if (r->n == r->cap) {
        int nc = r->cap ? r->cap * 2 : 16;
        zb_candidate *na = realloc(r->cand, (size_t)nc * sizeof *na);
        if (!na) { cand_free(c); return zb_fail(err, ZB_ENOMEM, "out of memory"); }
        r->cand = na;
        r->cap = nc;
    }
    size_t n = (size_t)c->pp * c->v;
    c->spans = malloc(n * sizeof *c->spans);
    if (!c->spans) { cand_free(c); return zb_fail(err, ZB_ENOMEM, "out of memory"); }
    memcpy(c->spans, x->spans, n * sizeof *c->spans);
    int at = r->n;
    while (at > 0 && better(c, &r->cand[at - 1])) at--;
    memmove(&r->cand[at + 1], &r->cand[at], (size_t)(r->n - at) * sizeof *c);
    r->cand[at] = *c;
    r->n++;
    return ZB_OK;
}

/* ---- groups: one split, one v, one partition ---- */

/* Parameters held by pipeline rank r (all its chunks). */
static double rank_params(const zb_model *mdl, const zb_cost_table *ct,
                          const zb_stage_span *sp, int pp, int v,
                          zb_placement pl, int r) {
    double params = 0, vocab_h = ct->vocab_params;
    bool embed = false, head = false, tied = mdl->arch.tied_embeddings;
    for (int c = 0; c < v; c++) {
        const zb_stage_span *s = &sp[zb_placement_vstage(pl, pp, r, c)];
        params += s->n_layers * ct->layer.params;
        if (s->embed) params += ct->embed.params;
        if (s->head) params += ct->head.params;
        embed |= s->embed;
        head |= s->head;
    }
    /* tied embeddings: a rank holding both keeps one table shard, as in
     * zb_partition (pp = 1, or the V placement's rank 0) */
    if (embed && head && tied) params -= vocab_h;
    return params + ct->vocab_rank_params; /* vocabulary shards: every rank */
}

/* Costs, static memory and bounds of the current partition for one
 * placement. */
static void prepare_placement(ctx *x, const split *s, zb_placement pl) {
    int pp = s->pp, v = x->g_v, n = pp * v;
    zb_costs *c = &x->cost[pl];
    c->n = n;
    zb_stage_costs(&s->ct, x->spans, pp, v, pl, s->dp, s->tp,
                   x->mdl->cluster.devices_per_node, c);
    zb_vocab_apply(&s->vc, c);
    double max_params = 0, max_static = 0, lb = 0, head = 0;
    for (int r = 0; r < pp; r++) {
        double prm = rank_params(x->mdl, &s->ct, x->spans, pp, v, pl, r);
        x->static_r[pl][r] = zb_static_mem_bytes(x->mdl, prm, s->dp);
        if (prm > max_params) max_params = prm;
        if (x->static_r[pl][r] > max_static) max_static = x->static_r[pl][r];
        double fwd = 0, bwd = 0;
        int buckets = 0;
        for (int ch = 0; ch < v; ch++) {
            int vs = zb_placement_vstage(pl, pp, r, ch);
            const zb_stage_span *sp = &x->spans[vs];
            fwd += c->t_f[vs];
            bwd += c->t_b[vs] + c->t_w[vs];
            buckets += sp->n_layers + sp->embed + sp->head;
        }
        double busy = fwd + bwd;
        x->ar_r[pl][r] = s->measured_post ? 0
            : zb_dp_exposed_s(x->mdl, allreduce_s(x->mdl, prm, s->dp, s->tp, pp),
                              bwd, fwd, buckets);
        if (pl == ZB_PLACE_DUAL && !s->measured_post)
            x->ar_r[pl][r] += copy_sum_s(x->mdl, prm, s->dp, s->tp, pp, r);
        /* rank r's first pass waits for the forwards of vstages 0..r-1;
         * its all-reduce follows its last pass */
        double lb_r = head + s->m * busy + x->ar_r[pl][r];
        if (lb_r > lb) lb = lb_r;
        head += c->t_f[r] + (r < n - 1 ? c->t_comm[r] : 0);
    }
    zb_model rm = *x->mdl;
    rm.cluster.device = s->dev;
    x->g_opt[pl] = s->measured_post ? s->post_s
                                    : zb_search_optimizer_s(&rm, max_params, s->dp,
                                                            s->ct.peak_flops);
    x->g_lb[pl] = lb + x->g_opt[pl];
    x->g_max_static[pl] = max_static;
    x->g_stage[pl] = x->o->no_staging ? 0
                     : zb_staging_need_bytes(x->mdl, s->dp, s->tp, pp, v, pl,
                                             s->m, s->mb);
    x->g_margin[pl] = x->ws_bytes + x->g_stage[pl];
    x->g_ready[pl] = true;
}

/* Partition for (split, v). zb_partition's memory filter counts static
 * memory without ZeRO-1 sharding (an upper bound), so when nothing passes
 * it we partition for time alone and let the exact check per candidate
 * decide. */
static zb_status prepare_group(ctx *x, const split *s, int v, int copies,
                               zb_err *err) {
    x->g_v = v;
    for (int k = 0; k < NPL; k++) x->g_ready[k] = false;
    int parts = s->pp * v / copies;
    zb_status st = zb_partition(x->mdl, &s->ct, parts,
                                x->dev_mem - x->ws_bytes, x->spans, err);
    if (st == ZB_EINFEASIBLE)
        st = zb_partition(x->mdl, &s->ct, parts, 0, x->spans, err);
    /* dualpipe: the up copy is split as the down copy (zb_schedule.h) */
    for (int k = parts; st == ZB_OK && k < s->pp * v; k++)
        x->spans[k] = x->spans[k - parts];
    return st;
}

/* Exact peak per device: needs per-rank activation peaks (full sim). */
static zb_status exact_peak(ctx *x, const zb_schedule *sc, zb_placement pl,
                            double *peak, zb_err *err) {
    zb_sim_result sr;
    zb_status st = zb_simulate(sc, &x->cost[pl], &sr, err);
    if (st == ZB_OK) {
        double pk = 0;
        for (int r = 0; r < sc->p; r++)
            if (x->static_r[pl][r] + sr.peak_mem[r] > pk)
                pk = x->static_r[pl][r] + sr.peak_mem[r];
        *peak = pk + x->g_margin[pl];
    }
    zb_sim_result_free(&sr);
    return st;
}

/* Does the schedule take a fixed number of chunks (--chunks cannot help)? */
static bool fixed_chunks(const char *name) {
    return zb_schedule_chunks(name, 2) == zb_schedule_chunks(name, 4);
}

/* Count a candidate whose conditions do not hold; keep the first reason
 * (which condition failed and which option changes it) for the error. */
static void not_applicable(zb_search_result *res, int count, const char *fmt,
                           ...) __attribute__((format(printf, 3, 4)));
static void not_applicable(zb_search_result *res, int count, const char *fmt,
                           ...) {
    res->not_applicable += count;
    if (res->why_not_applicable[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(res->why_not_applicable, sizeof res->why_not_applicable, fmt, ap);
    va_end(ap);
}

/* Build a job's schedule into c->sched. Unmet conditions (ZB_EINPUT) and
 * an automatic schedule that cannot meet its memory limit (ZB_EINFEASIBLE)
 * are counted and set *skip; they are not errors of the search. */
static zb_status build_job(ctx *x, const split *s, const job *jb,
                           zb_placement pl, zb_candidate *c, bool *skip,
                           zb_err *err) {
    double room = x->dev_mem - x->g_max_static[pl] - x->g_margin[pl];
    bool uses_limit = strcmp(jb->name, "zb-auto") == 0 ||
                      strcmp(jb->name, "zb-auto-v") == 0;
    zb_sched_params prm = {
        .p = s->pp, .m = s->m, .v = jb->v, .costs = &x->cost[pl],
        .mem_limit = uses_limit && room > 0 ? room : 0,
        /* --solver ilp: the heuristic here, the ILP only on the top k
         * afterwards (refine_ilp) */
        .solver = x->o->solver == ZB_SOLVER_ILP ? ZB_SOLVER_HEURISTIC
                                                : x->o->solver,
        .time_limit_s = x->o->time_limit_s,
        .mip_gap = x->o->mip_gap, .vocab = s->vocab};
    zb_err e2;
    snprintf(c->rep.solver, sizeof c->rep.solver, "generator");
    zb_status st = zb_schedule_make(jb->name, &prm, &c->sched, &c->rep, &e2);
    *skip = st == ZB_EINPUT || st == ZB_EINFEASIBLE;
    if (st == ZB_EINPUT)
        not_applicable(x->res, 1, "schedule %s (pp %d, v %d, m %d = "
                       "global_batch / (dp %d x micro-batch %d)): %s; change "
                       "--pp, --micro-batch%s", jb->name, s->pp, jb->v, s->m,
                       s->dp, s->mb, e2.msg,
                       fixed_chunks(jb->name) ? "" : " or --chunks");
    if (st == ZB_EINFEASIBLE) x->res->over_memory++;
    if (st == ZB_OK || *skip) return ZB_OK;
    return zb_fail(err, st, "schedule %s (p=%d m=%d v=%d): %s", jb->name,
                   s->pp, s->m, jb->v, e2.msg);
}

/* Simulate c->sched and fill its times and memory (upper bound, exact
 * only when the bound does not fit). */
static zb_status score(ctx *x, const split *s, zb_placement pl,
                       zb_candidate *c, zb_err *err) {
    double act;
    zb_err e2;
    zb_status st = zb_simulate_fast(&c->sched, &x->cost[pl], x->ws, NULL,
                                    &act, &e2);
    x->res->simulated++;
    if (st != ZB_OK)
        return zb_fail(err, ZB_ERUNTIME, "schedule %s (p=%d m=%d v=%d) is "
                       "invalid: %s", c->schedule, s->pp, s->m, c->v, e2.msg);
    /* each rank's DP all-reduce starts after its own last pass, while
     * other ranks still compute; only what outlasts the pipeline shows */
    const double *end = zb_sim_ws_rank_end(x->ws);
    double mk = zb_sim_ws_last_end(x->ws); /* wall clock, see search/search.h */
    double reduced = mk;
    for (int r = 0; r < s->pp; r++)
        if (end[r] + x->ar_r[pl][r] > reduced) reduced = end[r] + x->ar_r[pl][r];
    c->pipeline_s = mk;
    c->allreduce_s = reduced - mk;
    c->optimizer_s = x->g_opt[pl];
    c->step_s = reduced + c->optimizer_s;
    /* max static + max activations bounds the true per-rank maximum */
    c->staging_bytes = x->g_stage[pl];
    c->peak_mem_bytes = x->g_max_static[pl] + act + x->g_margin[pl];
    if (c->peak_mem_bytes > x->dev_mem)
        ZB_TRY(exact_peak(x, &c->sched, pl, &c->peak_mem_bytes, err));
    c->fits = c->peak_mem_bytes <= x->dev_mem;
    c->capacity_bytes = x->dev_mem;
    return ZB_OK;
}

/* A candidate dropped for memory: remember it when it is the closest to
 * fitting so far (search.h, zb_closest; c NULL: the split's static bound). */
static void note_closest(const ctx *x, const split *s, const zb_candidate *c,
                         double mem) {
    zb_closest *k = &x->res->closest;
    if (k->mem_bytes > 0 && k->mem_bytes <= mem) return;
    const zb_training *t = &x->mdl->train;
    *k = (zb_closest){.dp = s->dp, .tp = s->tp, .pp = s->pp, .v = c ? c->v : 0,
                      .micro_batch = s->mb, .mem_bytes = mem, .exact = c != NULL,
                      .recompute = t->recompute, .sp = t->sequence_parallel,
                      .zero1 = t->zero1};
    if (c) snprintf(k->schedule, sizeof k->schedule, "%s", c->schedule);
}

/* Build, simulate and maybe keep one schedule of the current group. */
/* Jobs the search does not try unless the schedule is forced: with one
 * pipeline stage every schedule is the same F/BW sequence, so only 1F1B is
 * kept; under full recompute B rebuilds the activations W needs (m_w >
 * m_b), which defeats deferring W, so only fused-backward schedules. */
static bool redundant_job(const ctx *x, const split *s, const job *jb) {
    if (x->o->schedule[0]) return false;
    if (s->pp == 1) return strcmp(jb->name, "1f1b") != 0;
    return x->mdl->train.recompute == ZB_RECOMPUTE_FULL &&
           zb_schedule_splits_bw(jb->name);
}

static zb_status run_job(ctx *x, split *s, const job *jb, long key,
                         zb_err *err) {
    if (redundant_job(x, s, jb)) { x->res->not_applicable++; return ZB_OK; }
    zb_placement pl = placement_of(jb->name);
    if (!x->g_ready[pl]) prepare_placement(x, s, pl);
    if (x->g_lb[pl] > threshold(x)) { x->res->pruned++; return ZB_OK; }
    zb_candidate c;
    memset(&c, 0, sizeof c);
    c.dp = s->dp; c.tp = s->tp; c.pp = s->pp; c.v = jb->v;
    c.micro_batch = s->mb; c.m = s->m; c.key = key; c.cores = x->cores;
    c.recompute = x->mdl->train.recompute;
    c.sp = x->mdl->train.sequence_parallel;
    c.zero1 = x->mdl->train.zero1;
    c.profile = s->measured ? x->o->profile : NULL;
    c.measured_overhead = s->measured_post;
    c.vocab = s->vocab;
    snprintf(c.schedule, sizeof c.schedule, "%s", jb->name);
    bool skip;
    zb_status st = build_job(x, s, jb, pl, &c, &skip, err);
    if (st == ZB_OK && !skip && c.sched.placement != pl) {
        pl = c.sched.placement;   /* a generator placed it differently */
        if (!x->g_ready[pl]) prepare_placement(x, s, pl);
    }
    if (st == ZB_OK && !skip) st = score(x, s, pl, &c, err);
    if (st != ZB_OK || skip) { zb_schedule_free(&c.sched); return st; }
    if (!c.fits) {
        x->res->over_memory++;
        note_closest(x, s, &c, c.peak_mem_bytes);
        if (!x->o->exhaustive) { zb_schedule_free(&c.sched); return ZB_OK; }
    }
    if (c.fits && c.step_s < s->best) s->best = c.step_s;
    return keep(x, &c, err);
}

/* A split whose tensors the executor cannot index (zb_layout_over_limits,
 * the plan reader's check) is not applicable: a plan zbrun refuses is no
 * plan. Under --no-staging the layout is planned as another framework
 * runs it, and zbrun's limits do not apply. */
static bool split_over_limits(ctx *x, const split *s, int njobs) {
    if (x->o->no_staging) return false;
    zb_layout l = {s->dp, s->tp, s->pp, 1, s->mb, s->m};
    long long v, max;
    const char *what = zb_layout_over_limits(&x->mdl->arch, &l, &v, &max);
    if (!what) return false;
    not_applicable(x->res, njobs, "dp %d tp %d pp %d micro-batch %d: %s is "
                   "%lld, more than zbrun handles (%lld)", s->dp, s->tp, s->pp,
                   s->mb, what, v, max);
    return true;
}

/* All jobs of one split, grouped by v. */
static zb_status run_split(ctx *x, split *s, const job *jobs, int njobs,
                           zb_err *err) {
    if (split_over_limits(x, s, njobs)) return ZB_OK;
    if (!x->o->exhaustive && (s->lb > threshold(x) || s->static_over)) {
        if (s->static_over) {
            x->res->over_memory += njobs;
            note_closest(x, s, NULL, s->static_bytes);
        } else {
            x->res->pruned += njobs;
        }
        return ZB_OK;
    }
    bool done[MAX_JOBS] = {false};
    for (int i = 0; i < njobs; i++) {
        if (done[i]) continue;
        int v = jobs[i].v, count = 0;
        int copies = zb_schedule_copies(jobs[i].name);
        for (int k = i; k < njobs; k++) count += jobs[k].v == v;
        if (s->pp * v / copies > x->mdl->arch.layers) {
            not_applicable(x->res, count, "%s with %d chunks per rank on pp "
                           "%d needs pp x chunks = %d virtual stages, but the "
                           "model has %d layers (one layer per virtual stage "
                           "at least); lower %s", jobs[i].name,
                           v, s->pp, s->pp * v, x->mdl->arch.layers,
                           fixed_chunks(jobs[i].name) ? "--pp" : "--chunks or --pp");
            for (int k = i; k < njobs; k++) if (jobs[k].v == v) done[k] = true;
            continue;
        }
        zb_err e2;
        zb_status st = prepare_group(x, s, v, copies, &e2);
        if (st == ZB_EINFEASIBLE) x->res->over_memory += count;
        else if (st != ZB_OK) return zb_fail(err, st, "%s", e2.msg);
        for (int k = i; k < njobs; k++) {
            if (jobs[k].v != v) continue;
            done[k] = true;
            if (st != ZB_OK) continue;
            long key = ((long)s->idx * MAX_JOBS + k) * 2 + x->key_base;
            ZB_TRY(run_job(x, s, &jobs[k], key, err));
        }
    }
    return ZB_OK;
}

static int by_lb(const void *a, const void *b) {
    const split *x = a, *y = b;
    if (x->lb != y->lb) return x->lb < y->lb ? -1 : 1;
    return x->idx - y->idx;
}

static int by_best(const void *a, const void *b) {
    const split *x = a, *y = b;
    if (x->best != y->best) return x->best < y->best ? -1 : 1;
    return by_lb(a, b);
}

/* ---- finishing: exact numbers for what is kept ---- */

typedef struct {
    zb_cost_table ct;
    zb_costs costs;
    double *static_r;      /* [pp] */
    double margin;         /* workspace + staging rings, per rank */
    zb_sim_result sim;
} detail;

static void detail_free(detail *d) {
    zb_costs_free(&d->costs);
    free(d->static_r);
    zb_sim_result_free(&d->sim);
}

/* Everything about a candidate, from its spans and schedule. */
static zb_status detail_eval(const zb_model *model, const zb_candidate *c,
                             detail *d, zb_err *err) {
    memset(d, 0, sizeof *d);
    int n = c->pp * c->v;
    zb_model rm = rank_model(model, c->dp * c->tp * c->pp, c->cores);
    const zb_model *mdl = &rm;
    ZB_TRY(zb_cost_eval(mdl, c->tp, c->micro_batch, &d->ct, err));
    zb_profile_apply(c->profile, mdl, c->tp, c->micro_batch, &d->ct);
    zb_vocab_cost vc;
    ZB_TRY(zb_vocab_eval(mdl, c->dp, c->tp, c->pp, c->micro_batch, c->vocab,
                         &d->ct, &vc, err));
    ZB_TRY(zb_costs_init(&d->costs, n, err));
    zb_stage_costs(&d->ct, c->spans, c->pp, c->v, c->sched.placement, c->dp,
                   c->tp, mdl->cluster.devices_per_node, &d->costs);
    zb_vocab_apply(&vc, &d->costs);
    d->static_r = zb_calloc((size_t)c->pp, sizeof(double), err);
    if (!d->static_r) return ZB_ENOMEM;
    for (int r = 0; r < c->pp; r++)
        d->static_r[r] = zb_static_mem_bytes(
            mdl, rank_params(mdl, &d->ct, c->spans, c->pp, c->v, c->sched.placement, r),
            c->dp);
    d->margin = zb_workspace_bytes(mdl) + c->staging_bytes;
    return zb_simulate(&c->sched, &d->costs, &d->sim, err);
}

static double peak_of(const detail *d, int pp) {
    double pk = 0;
    for (int r = 0; r < pp; r++)
        if (d->static_r[r] + d->sim.peak_mem[r] > pk)
            pk = d->static_r[r] + d->sim.peak_mem[r];
    return pk + d->margin;
}

/* ---- --solver ilp: refine the top k ---- */

/* One candidate's automatic schedule re-solved by the ILP, warm-started
 * from the heuristic's, under the memory limit the search gave it and a
 * deadline. Kept only if its simulated pipeline ends earlier and still
 * fits, so the candidate never gets worse; the step moves by the pipeline
 * time saved (the plan's rule, fill_prediction). */
static zb_status refine_one(const zb_model *model, zb_candidate *c,
                            double limit_s, double mip_gap, zb_err *err) {
    zb_model cm = zb_candidate_model(model, c); /* its levers */
    const zb_model *mdl = &cm;
    detail d;
    zb_status st = detail_eval(mdl, c, &d, err);
    double max_static = 0;
    for (int r = 0; st == ZB_OK && r < c->pp; r++)
        if (d.static_r[r] > max_static) max_static = d.static_r[r];
    double room = c->capacity_bytes - max_static - d.margin;
    if (st != ZB_OK || !(room > 0)) { detail_free(&d); return st; }
    zb_sched_params prm = {.p = c->pp, .m = c->m, .costs = &d.costs,
                           .mem_limit = room, .time_limit_s = limit_s,
                           .mip_gap = mip_gap};
    zb_schedule out;
    zb_sched_report rep;
    zb_sim_result sim;
    memset(&rep, 0, sizeof rep);
    memset(&sim, 0, sizeof sim);
    st = zb_schedule_refine(c->schedule, &prm, &c->sched, &out, &rep, err);
    if (st == ZB_OK) st = zb_simulate(&out, &d.costs, &sim, err);
    if (st == ZB_OK && sim.last_end < d.sim.last_end &&
        peak_of(&(detail){.static_r = d.static_r, .margin = d.margin,
                          .sim = sim}, c->pp) <=
            c->capacity_bytes) {
        c->step_s -= d.sim.last_end - sim.last_end;
        c->pipeline_s = sim.last_end;
        /* what finish() fills, for the new schedule */
        c->peak_mem_bytes = peak_of(&(detail){.static_r = d.static_r,
                                              .margin = d.margin, .sim = sim},
                                    c->pp);
        c->bubble_rate = sim.bubble_rate;
        c->tokens_per_s = (double)mdl->train.global_batch * mdl->arch.seq_len /
                          c->step_s;
        c->mfu = zb_model_step_flops(mdl) / c->step_s /
                 ((double)c->dp * c->tp * c->pp * d.ct.peak_flops);
        out.placement = c->sched.placement;
        zb_schedule_free(&c->sched);
        c->sched = out;
        c->rep = rep;
    } else {
        if (st == ZB_OK) zb_schedule_free(&out);
        c->rep.solve_s += rep.solve_s;
    }
    zb_sim_result_free(&sim);
    detail_free(&d);
    return st;
}

/* The schedules built under the search's memory limit (build_job); zb-1p
 * and zb-2p are defined by their own memory budgets and stay as built. */
static bool refinable(const zb_candidate *c) {
    /* the ILP places no vocabulary passes */
    return !c->vocab && (strcmp(c->schedule, "zb-auto") == 0 ||
                         strcmp(c->schedule, "zb-auto-v") == 0);
}

zb_status zb_search_refine_ilp(const zb_model *mdl, zb_search_result *r,
                               int top_k, double budget_s, double mip_gap,
                               zb_err *err) {
    double t0 = now_s();
    int n = r->n < top_k ? r->n : top_k, left = 0;
    for (int i = 0; i < n; i++) left += refinable(&r->cand[i]);
    for (int i = 0; i < n && left > 0; i++) {
        zb_candidate *c = &r->cand[i];
        if (!refinable(c)) continue;
        double rest = budget_s - (now_s() - t0);
        if (rest <= 0) break;
        ZB_TRY(refine_one(mdl, c, rest / left--, mip_gap, err));
    }
    for (int i = 1; i < r->n; i++)   /* faster ones move up */
        for (int k = i; k > 0 && better(&r->cand[k], &r->cand[k - 1]); k--) {
            zb_candidate t = r->cand[k];
            r->cand[k] = r->cand[k - 1];
            r->cand[k - 1] = t;
        }
    return ZB_OK;
}

/* Exact memory, bubble, throughput and MFU for every kept candidate. */
static zb_status finish(const zb_model *mdl, zb_search_result *r,
                        zb_err *err) {
    double flops = zb_model_step_flops(mdl);
    double tokens = (double)mdl->train.global_batch * mdl->arch.seq_len;
    for (int i = 0; i < r->n; i++) {
        zb_candidate *c = &r->cand[i];
        detail d;
        zb_status st = detail_eval(mdl, c, &d, err);
        if (st == ZB_OK) {
            c->peak_mem_bytes = peak_of(&d, c->pp);
            c->fits = c->peak_mem_bytes <= c->capacity_bytes;
            c->bubble_rate = d.sim.bubble_rate;
            c->tokens_per_s = tokens / c->step_s;
            c->mfu = flops / c->step_s /
                     ((double)c->dp * c->tp * c->pp * d.ct.peak_flops);
        }
        detail_free(&d);
        ZB_TRY(st);
    }
    /* exact memory may reorder ties */
    for (int i = 1; i < r->n; i++)
        for (int k = i; k > 0 && better(&r->cand[k], &r->cand[k - 1]); k--) {
            zb_candidate t = r->cand[k];
            r->cand[k] = r->cand[k - 1];
            r->cand[k - 1] = t;
        }
    return ZB_OK;
}

/* ---- the search ---- */

static zb_status ctx_init(ctx *x, const zb_model *mdl,
                          const zb_search_opts *o, zb_search_result *res,
                          zb_err *err) {
    memset(x, 0, sizeof *x);
    x->mdl = mdl;
    x->o = o;
    x->res = res;
    /* the capacity every memory test below uses: device memory less the
     * safety margin */
    x->dev_mem = mdl->cluster.device.mem_bytes * (1 - o->mem_margin);
    x->ws_bytes = zb_workspace_bytes(mdl);
    x->cores = !is_cpu(mdl) ? 0 : o->cores > 0 ? o->cores : zb_cost_cpu_cores();
    res->cores = x->cores;
    x->max_n = 4 * mdl->arch.layers + 8;   /* pp*v <= layers, v <= 4 */
    if (o->v > 4) x->max_n = o->v * mdl->arch.layers + 8;
    x->max_p = mdl->arch.layers + 1;
    x->ws = zb_sim_ws_new();
    x->spans = zb_calloc((size_t)x->max_n, sizeof *x->spans, err);
    if (!x->ws || !x->spans) return zb_fail(err, ZB_ENOMEM, "out of memory");
    for (int k = 0; k < NPL; k++) {
        x->static_r[k] = zb_calloc((size_t)x->max_p, sizeof(double), err);
        x->ar_r[k] = zb_calloc((size_t)x->max_p, sizeof(double), err);
        if (!x->static_r[k] || !x->ar_r[k]) return ZB_ENOMEM;
        ZB_TRY(zb_costs_init(&x->cost[k], x->max_n, err));
    }
    return ZB_OK;
}

static void ctx_free(ctx *x) {
    zb_sim_ws_free(x->ws);
    free(x->spans);
    for (int k = 0; k < NPL; k++) {
        free(x->static_r[k]);
        free(x->ar_r[k]);
        zb_costs_free(&x->cost[k]);
    }
}

/* Nothing kept. When every candidate failed a condition and the user forced
 * an option, that is bad input (exit 2) naming the condition and the option;
 * otherwise the search found nothing that fits. */
static zb_status no_candidate(const zb_model *mdl, const zb_search_opts *o,
                              const zb_search_result *res, zb_err *err) {
    bool forced = o->schedule[0] || o->v > 0 || o->pp > 0 || o->micro_batch > 0;
    if (forced && res->not_applicable > 0 && res->simulated == 0 &&
        res->over_memory == 0)
        return zb_fail(err, ZB_EINPUT, "%s%s", o->schedule[0] ? "--schedule "
                       "cannot apply: " : "the forced options cannot apply: ",
                       res->why_not_applicable);
    return zb_fail(err, ZB_EINFEASIBLE, "no candidate fits: %d splits, %d "
                   "schedules simulated, %d over device memory (%.1f GiB), "
                   "%d not applicable%s%s%s", res->splits, res->simulated,
                   res->over_memory, mdl->cluster.device.mem_bytes / 1073741824.0,
                   res->not_applicable, res->why_not_applicable[0] ? " (first: " : "",
                   res->why_not_applicable[0] ? res->why_not_applicable : "",
                   res->why_not_applicable[0] ? ")" : "");
}

static zb_status validate_opts(const zb_search_opts *o, zb_err *err) {
    if (o->top_k < 1) return zb_fail(err, ZB_EINPUT, "--top must be >= 1");
    if (o->dp < 0 || o->tp < 0 || o->pp < 0 || o->v < 0 || o->micro_batch < 0)
        return zb_fail(err, ZB_EINPUT, "forced sizes must be positive");
    if (o->max_micro_batch < 1)
        return zb_fail(err, ZB_EINPUT, "the micro-batch cap must be >= 1");
    return ZB_OK;
}

static zb_status search_phases(ctx *x, split *sp, int ns, zb_err *err) {
    job j1[MAX_JOBS], j2[MAX_JOBS];
    int n1, n2;
    ZB_TRY(list_jobs(x->o, j1, &n1, j2, &n2, err));
    qsort(sp, (size_t)ns, sizeof *sp, by_lb);
    for (int i = 0; i < ns; i++) ZB_TRY(run_split(x, &sp[i], j1, n1, err));
    if (n2 == 0) return ZB_OK;
    qsort(sp, (size_t)ns, sizeof *sp, by_best);
    x->key_base = 1;
    int take = ns < x->o->auto_splits ? ns : x->o->auto_splits;
    for (int i = 0; i < take; i++) ZB_TRY(run_split(x, &sp[i], j2, n2, err));
    return ZB_OK;
}

zb_status zb_search(const zb_model *mdl, const zb_search_opts *o,
                    zb_search_result *res, zb_err *err) {
    memset(res, 0, sizeof *res);
    double t0 = now_s();
    ZB_TRY(validate_opts(o, err));
    ZB_TRY(check_forced(mdl, o, err));
    ctx x;
    split *sp = NULL;
    int ns = 0;
    zb_status st = ctx_init(&x, mdl, o, res, err);
    if (st == ZB_OK) st = list_splits(&x, &sp, &ns, err);
    if (st == ZB_OK && ns == 0) st = no_split(&x, err);
    res->splits = ns;
    if (st == ZB_OK) st = search_phases(&x, sp, ns, err);
    if (st == ZB_OK) st = finish(mdl, res, err);
    /* the ILP shares what is left of --time-limit over the top k */
    if (st == ZB_OK && o->solver == ZB_SOLVER_ILP)
        st = zb_search_refine_ilp(mdl, res, o->top_k,
                                  ZB_SEARCH_ILP_SHARE * o->time_limit_s -
                                      (now_s() - t0), o->mip_gap,
                                  err);
    if (st == ZB_OK && res->n == 0) st = no_candidate(mdl, o, res, err);
    free(sp);
    ctx_free(&x);
    res->elapsed_s = now_s() - t0;
    return st;
}

void zb_search_result_free(zb_search_result *res) {
    if (!res) return;
    for (int i = 0; i < res->n; i++) cand_free(&res->cand[i]);
    free(res->cand);
    memset(res, 0, sizeof *res);
}

/* ---- the plan ---- */

static void fill_prediction(const zb_model *mdl, const zb_candidate *c,
                            const detail *d, zb_plan *plan) {
    zb_prediction *pr = &plan->pred;
    pr->pipeline_s = d->sim.last_end;
    pr->step_s = c->step_s - c->pipeline_s + d->sim.last_end;
    pr->tokens_per_s = (double)mdl->train.global_batch * mdl->arch.seq_len /
                       pr->step_s;
    pr->mfu = zb_model_step_flops(mdl) / pr->step_s /
              ((double)c->dp * c->tp * c->pp * d->ct.peak_flops);
    pr->bubble_rate = d->sim.bubble_rate;
    for (int r = 0; r < c->pp; r++) {
        pr->bubble[r] = d->sim.bubble[r];
        pr->act_mem_bytes[r] = d->sim.peak_mem[r];
        pr->peak_mem_bytes[r] = d->static_r[r] + d->sim.peak_mem[r] + d->margin;
    }
}

static void copy_costs(zb_costs *dst, const zb_costs *src) {
    size_t b = (size_t)src->n * sizeof(double);
    memcpy(dst->t_f, src->t_f, b);
    memcpy(dst->t_b, src->t_b, b);
    memcpy(dst->t_w, src->t_w, b);
    memcpy(dst->t_comm, src->t_comm, b);
    memcpy(dst->m_b, src->m_b, b);
    memcpy(dst->m_w, src->m_w, b);
    dst->t_s = src->t_s, dst->t_t = src->t_t, dst->t_bcast = src->t_bcast;
    dst->t_c1 = src->t_c1, dst->t_c2 = src->t_c2, dst->m_s = src->m_s;
}

zb_model zb_candidate_model(const zb_model *m, const zb_candidate *c) {
    zb_model r = *m;
    r.train.recompute = c->recompute;
    r.train.sequence_parallel = c->sp;
    r.train.zero1 = c->zero1;
    return r;
}

zb_status zb_search_make_plan(const zb_model *model, const zb_candidate *c,
                              zb_plan *plan, zb_err *err) {
    zb_model lm = zb_candidate_model(model, c);
    const zb_model *mdl = &lm;
    memset(plan, 0, sizeof *plan);
    ZB_TRY(zb_plan_alloc(plan, c->pp, c->v, err));
    plan->version = ZB_PLAN_VERSION;
    plan->model = *mdl;
    plan->model.train.micro_batch = c->micro_batch;
    plan->dp = c->dp; plan->tp = c->tp; plan->pp = c->pp; plan->v = c->v;
    plan->micro_batch = c->micro_batch;
    plan->m = c->m;
    plan->vocab_parallel = c->vocab;
    snprintf(plan->solver, sizeof plan->solver, "%s", c->rep.solver);
    memcpy(plan->stages, c->spans, (size_t)c->pp * c->v * sizeof *c->spans);
    detail d;
    zb_status st = detail_eval(mdl, c, &d, err);
    if (st == ZB_OK) st = zb_schedule_copy(&plan->sched, &c->sched, err);
    if (st == ZB_OK) {
        copy_costs(&plan->costs, &d.costs);
        fill_prediction(mdl, c, &d, plan);
    }
    detail_free(&d);
    return st;
}
