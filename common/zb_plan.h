/* zb_plan.h - the plan: the contract between zbplan and zbrun.
 *
 * Holds everything zbrun needs and nothing it must recompute: the model,
 * training and cluster sections (same keys as the model file), parallel
 * sizes, the rank layout, the layer-to-virtual-stage map, every pipeline
 * rank's ordered actions, the cost inputs the prediction used, and the
 * predictions. docs/plan-format.md is the reference.
 *
 * Rank layout (Megatron order, tp innermost, then dp, then pp):
 *   global rank g = pp_rank * (dp * tp) + dp_rank * tp + tp_rank
 * so a TP group is tp consecutive ranks (inside one node).
 *
 * Reading validates fully: version, required keys, types, counts that add
 * up (layers over stages, microbatches * micro_batch * dp = global_batch,
 * world size), and the action lists must pass zb_simulate. Any problem is
 * ZB_EINPUT "plan.yaml:line:col: what is wrong".
 */
#ifndef ZB_PLAN_H
#define ZB_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "common/zb_model.h"
#include "common/zb_schedule.h"
#include "common/zb_sim.h"

#define ZB_PLAN_VERSION 1

/* Most ranks (dp*tp*pp) and virtual stages (pp*chunks) a plan may have;
 * the reader also bounds every size product the executor indexes with. */
#define ZB_PLAN_MAX_WORLD (1 << 20)

typedef struct {
    int first_layer;   /* transformer blocks [first_layer, first_layer+n_layers) */
    int n_layers;      /* may be 0 on a stage holding only embedding/head */
    bool embed;        /* holds the token+position embedding (vstage 0 only) */
    bool head;         /* holds final LayerNorm + LM head + loss (last vstage) */
} zb_stage_span;

typedef struct {
    double step_s;           /* predicted time of one optimizer step */
    double pipeline_s;       /* last end of the pipeline part (wall clock) */
    double tokens_per_s;
    double mfu;              /* model FLOPs utilisation, 0..1 */
    double bubble_rate;      /* overall, zb_sim.h definition */
    double *bubble;          /* [pp] per pipeline rank */
    double *peak_mem_bytes;  /* [pp] predicted peak device memory, total */
    double *act_mem_bytes;   /* [pp] of which activations in flight */
} zb_prediction;

typedef struct {
    int version;
    zb_model model;          /* training.micro_batch is resolved (> 0) */
    int dp, tp, pp, v;
    int micro_batch;         /* sequences per microbatch (= model.train.micro_batch) */
    int m;                   /* microbatches per step per DP rank */
    int vocab_parallel;      /* 0 none, 1 or 2: the embedding and the output
                                layer sharded by vocabulary rows over the
                                pipeline ranks (docs/plan-format.md); equals
                                sched.vocab; costs.t_s.. hold its costs */
    char solver[16];         /* how the schedule was made: "generator",
                                "heuristic", "ilp" */
    zb_stage_span *stages;   /* [pp*v] by virtual stage */
    zb_schedule sched;       /* name = schedule name; p = pp */
    zb_costs costs;          /* [pp*v] the simulator inputs used */
    zb_prediction pred;
} zb_plan;

/* Allocate stages/costs/pred arrays for pp*v virtual stages (schedule is
 * filled separately). */
zb_status zb_plan_alloc(zb_plan *plan, int pp, int v, zb_err *err);
void zb_plan_free(zb_plan *plan);

zb_status zb_plan_write(const char *path, const zb_plan *plan, zb_err *err);
zb_status zb_plan_read(const char *path, zb_plan *plan, zb_err *err);

/* The same from a loaded document (zb_override.h edits one first). */
zb_status zb_plan_read_doc(const zb_ydoc *doc, zb_plan *plan, zb_err *err);

/* Fingerprint of what the plan's costs and predictions were computed from
 * (model shapes, batch, precision, cluster and device, parallel sizes,
 * stage split, costs, predictions; not the optimizer, steps or data path).
 * zbplan writes it as 'fingerprint'; the reader refuses a plan whose
 * fingerprint does not match (hand-edited shapes or device): re-run zbplan.
 * A plan without the key is read as before. */
uint64_t zb_plan_fingerprint(const zb_plan *plan);
/* A plan file's content hash: FNV-1a 64 over its bytes, as 16 lower-case
 * hex digits into hex[17] (zb_plan_hash.c). zbrun's report names the plan
 * it ran by it, and zbreport tells when the file on disk is no longer that
 * plan. ZB_EIO "path: cannot read: ..." when the file cannot be read. */
zb_status zb_plan_file_hash(const char *path, char hex[17], zb_err *err);

/* Rank layout helpers (see above). */
/* A layout's products that the executor sizes or indexes with (the kernels
 * index with int): the first that is over its limit, or NULL when every
 * one fits; *val and *max then say by how much. The plan reader refuses
 * such a plan, and the plan search does not choose one. */
typedef struct {
    int dp, tp, pp, v, micro_batch, m;
} zb_layout;
const char *zb_layout_over_limits(const zb_arch *a, const zb_layout *l,
                                  long long *val, long long *max);

int zb_plan_world(const zb_plan *plan);
int zb_plan_rank(const zb_plan *plan, int pp_rank, int dp_rank, int tp_rank);
void zb_plan_coords(const zb_plan *plan, int rank, int *pp_rank, int *dp_rank,
                    int *tp_rank);

#endif
