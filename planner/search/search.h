/* search.h - the plan search: every data/tensor/pipeline split, micro-batch
 * size, chunk count and schedule for a model and cluster, ranked by the
 * predicted step time; and turning the winner into a zb_plan.
 * docs/zbplan.md describes the search space, the pruning and the formulas.
 *
 * Per candidate (units: seconds, bytes):
 *   step_s      = pipeline_s (simulated last end: every rank starts a
 *                 step at time 0, after the previous optimizer step, so
 *                 the wall clock is the latest end, not the longest rank
 *                 span the schedulers minimise; the two differ by at most
 *                 the later ranks' fill delay)
 *               + allreduce_s (exposed part of the ring all-reduces over
 *                 the DP groups: rank r's starts when its last pass ends,
 *                 step reaches max_r(end_r + ar_r))
 *               + optimizer_s (AdamW: ZB_SEARCH_OPT_BYTES per parameter of
 *                 the largest rank, divided by dp under zero1, moved at
 *                 the device's memory bandwidth, see search/search.c)
 *   peak_mem    = max over pipeline ranks of
 *                 zb_static_mem_bytes(rank params) + peak activations
 *               + zb_workspace_bytes
 *   tokens/s    = global_batch * seq_len / step_s
 *   mfu         = zb_model_step_flops / step_s / (world * peak FLOP/s)
 * capacity    = device memory * (1 - mem_margin), the most a plan may use
 * Candidates whose peak memory exceeds the capacity are dropped
 * (kept with fits = false only in exhaustive mode, for --compare).
 *
 * Ownership: a zb_search_result owns its candidates and each candidate's
 * schedule and stage spans; free with zb_search_result_free.
 */
#ifndef ZB_SEARCH_H
#define ZB_SEARCH_H

#include <stdbool.h>

#include "common/zb_model.h"
#include "common/zb_plan.h"
#include "common/zb_schedule.h"
#include "planner/registry/registry.h"

/* Bytes of memory traffic per parameter for one AdamW step (read weight,
 * gradient and two moments, write weight and two moments, ~4 B each). */
#define ZB_SEARCH_OPT_BYTES 16.0
/* A device without a memory bandwidth: the search assumes a machine
 * balance of this many FLOPs (at the precision's peak) per byte, close to
 * A100/H100 class devices. */
#define ZB_SEARCH_FLOPS_PER_BYTE 250.0
/* Fraction of the device's memory bandwidth a streaming kernel reaches (the
 * cost model's BW_EFF, docs/cost-model.md section 2.2). */
#define ZB_SEARCH_BW_EFF 0.80
/* Default safety margin on device memory (zb_search_opts.mem_margin): what
 * the cost model cannot see (allocator growth, fragmentation beyond the
 * workspace, library buffers, other processes) must fit in it. zbplan
 * passes the model's cluster.memory_margin_pct, whose default this is. */
#define ZB_SEARCH_MEM_MARGIN ZB_MEM_MARGIN_DEFAULT

typedef struct {
    int dp, tp, pp;          /* > 0 forces; 0 searches (device "cpu": tp
                                0 = 1, dp * pp up to `cores`) */
    int cores;               /* device "cpu": cores of the machine (0: this
                                one's, zb_cost_cpu_cores); a rank runs on
                                cores / (dp tp pp) threads */
    int v;                   /* > 0 forces the chunks of interleaved; 0 tries
                                2 and 4 */
    char schedule[32];       /* "" = every schedule, else only this one */
    int micro_batch;         /* > 0 forces; 0 = the model's if fixed, else
                                powers of two up to max_micro_batch */
    int max_micro_batch;     /* cap of the micro-batch search */
    zb_solver solver;        /* for the automatic schedules */
    double time_limit_s;     /* ILP time limit per solve */
    double mip_gap;
    double mem_margin;       /* safety margin: a candidate fits when its
                                peak is at most (1 - mem_margin) of the
                                device memory; [0, 1), default
                                ZB_SEARCH_MEM_MARGIN */
    int top_k;               /* candidates kept, best first */
    int auto_splits;         /* best splits that also get the automatic
                                schedules (when no schedule is forced) */
    bool levers;             /* also search the memory levers (search/levers.c):
                                recompute none/selective/full, sequence
                                parallelism, ZeRO-1; false: the model's */
    bool no_staging;         /* leave zbrun's transport staging rings out
                                of the memory (zbplan --no-staging: a
                                layout as another framework runs it) */
    double bound;            /* > 0: prune what cannot beat this step time
                                (s); 0: none */
    bool exhaustive;         /* no pruning, automatic schedules on every
                                split, keep candidates over memory */
    const struct zb_profile *profile; /* measured costs where it covers a
                                candidate (cost/profile.h); NULL: none */
    int vocab;               /* vocabulary parallelism (cost/vocab.h): 0
                                none (the default), 1 or 2 forces it,
                                ZB_SEARCH_VOCAB_AUTO tries none, 1 and 2
                                on every split with pp >= 2 (none wins
                                ties) */
} zb_search_opts;

#define ZB_SEARCH_VOCAB_AUTO (-1)

typedef struct {
    int dp, tp, pp, v, micro_batch, m;
    int cores;               /* device "cpu": the machine's cores searched
                                for (each rank's share: cost/cost.h) */
    char schedule[32];
    zb_sched_report rep;     /* rep.solver: "generator", "heuristic", "ilp" */
    double step_s, pipeline_s, allreduce_s, optimizer_s;
    double tokens_per_s, mfu, bubble_rate;
    double peak_mem_bytes;   /* max over pipeline ranks (static + act +
                                staging + ws) */
    double staging_bytes;    /* per rank: zbrun's transport staging rings
                                on a GPU (zb_staging_need_bytes); 0 on the
                                cpu device and with no_staging */
    double capacity_bytes;   /* device memory less the safety margin */
    zb_recompute recompute;  /* the memory levers it was planned with */
    bool sp, zero1;
    bool fits;               /* peak_mem_bytes <= capacity_bytes */
    long key;                /* enumeration order, breaks ties */
    zb_schedule sched;       /* owned */
    zb_stage_span *spans;    /* owned, [pp*v] */
    const struct zb_profile *profile; /* borrowed: its pass times are the
                                profile's measured ones; NULL: analytic */
    bool measured_overhead;  /* allreduce_s + optimizer_s is the profile's
                                measured time after the pipeline */
    int vocab;               /* vocabulary parallelism: 0 none, 1 or 2 */
    char same[96];           /* other schedules that gave this layout the
                                same step and peak, "zb-1p, zb-2p" (kept
                                once: keep()); "" if none */
} zb_candidate;

/* The candidate closest to fitting among those dropped for memory: its
 * layout and predicted peak per device. exact: the simulated peak
 * (static + activations + workspace, as a kept candidate's); else a lower
 * bound, a split whose weights, gradients and optimizer state alone (an
 * even share, with the workspace) are over, no schedule simulated
 * (schedule ""). mem_bytes 0: nothing was dropped for memory. */
typedef struct {
    int dp, tp, pp, v, micro_batch;
    char schedule[32];
    double mem_bytes;
    bool exact;
    zb_recompute recompute;  /* the memory levers it was searched with */
    bool sp, zero1;
} zb_closest;

typedef struct {
    zb_candidate *cand;      /* [n], by step time (then memory, key) */
    int n, cap;
    int splits;              /* (dp, tp, pp, micro-batch) combinations */
    int simulated;           /* schedules built and simulated */
    int pruned;              /* skipped: lower bound >= the k-th best */
    int over_memory;         /* dropped: did not fit */
    int not_applicable;      /* generator conditions did not hold */
    char why_not_applicable[256]; /* the first such condition, with the
                                     option that changes it; "" if none */
    zb_closest closest;      /* the smallest over-memory one (nofit.h) */
    double elapsed_s;
    int cores;               /* device "cpu": the cores planned for; 0 else */
} zb_search_result;

void zb_search_opts_default(zb_search_opts *o);

/* Run the search. res is initialised by the call (free it also after an
 * error). Forced values that cannot hold (tp not dividing heads, dp*tp*pp
 * not the cluster size, unknown schedule...) are ZB_EINPUT naming the
 * option; no fitting candidate at all is ZB_EINFEASIBLE. */
zb_status zb_search(const zb_model *m, const zb_search_opts *o,
                    zb_search_result *res, zb_err *err);
void zb_search_result_free(zb_search_result *res);

/* m with candidate c's memory levers (recompute, SP, ZeRO-1). */
zb_model zb_candidate_model(const zb_model *m, const zb_candidate *c);

/* Fill a plan from a candidate of a zb_search on the same model: sizes,
 * stages, a copy of the schedule, the simulator costs and the full
 * prediction (per-rank bubble and memory from zb_simulate). plan is
 * initialised by the call (zb_plan_free it also after an error). */
zb_status zb_search_make_plan(const zb_model *m, const zb_candidate *c,
                              zb_plan *plan, zb_err *err);

/* Predicted step-time parts and memory for one candidate's parts, exposed
 * for tests and the docs: bytes of gradients per parameter and the
 * optimizer time of a rank holding `params` parameters. */
double zb_search_optimizer_s(const zb_model *m, double params, int dp,
                             double peak_flops);
double zb_search_grad_bytes(const zb_model *m);
/* True when the DP group (fixed pp rank and tp rank) crosses a node. */
bool zb_search_dp_inter_node(int dp, int tp, int pp, int devices_per_node);

/* Share of --time-limit the whole search may take under --solver ilp (the
 * ILP gets what the heuristic search left of it); the rest is for the plan
 * and its output. */
#define ZB_SEARCH_ILP_SHARE 0.9

/* --solver ilp: re-solve the automatic schedules (zb-auto, zb-auto-v) of
 * the best top_k candidates of r with the ILP, warm-started from the
 * heuristic's, sharing budget_s seconds (each gets what is left over the
 * ones still to do). A candidate takes the ILP's schedule only when it
 * ends the pipeline earlier within the candidate's memory, so none gets
 * worse; its numbers are updated and r re-sorted. Each candidate is
 * priced with its own levers (zb_candidate_model). zb_search and
 * zb_search_levers call it after their heuristic search. */
zb_status zb_search_refine_ilp(const zb_model *mdl, zb_search_result *r,
                               int top_k, double budget_s, double mip_gap,
                               zb_err *err);

#endif
