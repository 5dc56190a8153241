/* run_ctx.h - private to the runtime (runtime.c, rank.c): the state shared
 * by all rank threads of one zb_run, and each rank's own state.
 *
 * Ownership: runtime.c allocates everything here before the threads start
 * and frees it after they are joined; a rank thread writes only its own
 * zb_rank, its own entries of the per-rank arrays, and (rank 0) the per-step
 * arrays of the result.
 */
#ifndef ZB_RUN_CTX_H
#define ZB_RUN_CTX_H

#include <pthread.h>
#include <stdbool.h>

#include "common/zb_lower.h"
#include "common/zb_plan.h"
#include "executor/state/data.h"
#include "executor/run/run_opts.h"
#include "executor/stage/stage.h"
#include "executor/comm/transport.h"

typedef struct zb_run_ctx zb_run_ctx;

typedef struct {
    zb_run_ctx *ctx;
    int rank, pp_rank, dp_rank, tp_rank;
    zb_transport *tr;
    zb_stage *st;
    zb_stage_undo *undo;         /* post-validation's copy (rank.c), or NULL */
    double spec_idle_s;          /* post-validation (rank.c): the last step's */
    double spec_cost_s;          /* wait for the verdict, the last measured */
    bool spec_clipped;           /* cost of stepping early, whether it clipped */
    int spec_mode;               /* ZB_POSTVAL: 0 never, 1 always, 2 auto */
    zb_backend backend;          /* where the stage computes ... */
    int device;                  /* ... and on which CUDA device */
    zb_group tp_g, dp_g, emb_g, world_g;
    zb_group pp_g;               /* vocabulary parallelism: the pipeline
                                    ranks of this (dp, tp) rank */
    bool in_emb_group;           /* first or last pipeline rank, pp > 1 */
    zb_group copy_g;             /* DUAL plans: pipeline ranks r and
                                    pp-1-r (n = 0 otherwise) */
    const zb_op *ops;            /* the pipeline rank's program */
    int n_ops;
    const zb_action *acts;       /* its compute actions */
    int n_acts;
    size_t msg_floats;           /* one activation/gradient message */
    int *tokens, *targets;       /* [m][micro_batch*seq_len], NULL if unused */
    double *red;                 /* [2 + 3*world] world all-reduce of the
                                    norm, loss, non-finite flags and each
                                    rank's memory high-water mark */
    double *t_start, *t_end;     /* this step's slot of the result's ring */
    double loss0;                /* the divergence baseline: the first loss
                                    of the training (0: none yet) */
    int last_good;               /* newest step whose loss passed */
    double *x_start, *x_end;     /* the same for the transfers (by op) */
    double stall;                /* this step: wall - thread CPU in actions */
    /* communication timing, summed over the counted steps (rank.c) */
    bool count_comm;             /* this step counts (not the warm-up) */
    int comm_steps, sends;
    double send_s, dp_ar_s, emb_ar_s, post_s;
    /* this step's boundary (zb_run_result's boundary_*, verdict_wait_s):
     * wall, idle, busy and verdict-wait seconds so far (rank.c) */
    double bnd_wall, bnd_idle, bnd_busy, bnd_verdict;
    bool eval_stopped;   /* a stop signal ended a validation pass (eval.c) */
} zb_rank;

struct zb_run_ctx {
    const zb_plan *plan;
    const zb_run_opts *opts;
    zb_run_result *res;
    const char *ckpt_dir;
    int world, total_steps, first_step;
    double baseline;             /* resumed: the checkpoint's baseline loss
                                    (0: none, the first loss here is) */
    int last_good;               /* resumed: its last good step */
    double loss_scale;           /* 1 / (global_batch * seq_len) */
    double t0;                   /* run start, CLOCK_MONOTONIC seconds */
    zb_program prog;
    zb_local_world *lw;          /* threads, cpu backend */
    zb_cuda_world *cw;           /* threads, cuda, ranks sharing one device */
    zb_transport *nccl0;         /* threads, cuda, one rank per device: ends[0] */
    int lead;                    /* rank whose thread fills the per-step
                                    result: 0, or the process's own rank */
    zb_data *data;
    zb_data *val;                /* validation source, NULL: none */
    zb_rank *ranks;              /* [world]; one process per rank: only
                                    ranks[lead] is set up */
    double *step_span, *step_busy;  /* [n_steps * world] per step, per rank */
    double *step_recv;           /* [n_steps * world] seconds in RECVs */
    double *step_stall;          /* [n_steps * world] see zb_run_result */
    double *step_bnd[4];         /* [n_steps * world] the step boundary's
                                    wall, idle, busy and verdict-wait
                                    seconds (rank.c) */

    pthread_mutex_t err_mu;      /* guards the first error */
    zb_status status;
    zb_err err;
};

/* Thread body of one rank (rank.c): build the stage, maybe load the
 * checkpoint, run the steps. */
void *zb_rank_main(void *arg);

/* One process per rank: after a successful run, fill every rank's entries
 * of the result (times, memory, timelines) and c->step_span/step_busy from
 * all processes (run_gather.c). */
zb_status zb_run_gather(zb_run_ctx *c, zb_err *err);

#endif
