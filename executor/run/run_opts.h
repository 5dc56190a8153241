/* run_opts.h - what a run is asked to do (zb_run's options, runtime.h):
 * steps, threads, checkpoints and resume, the stop flag, the backend, the
 * per-step callback, and the process this rank runs in. Apart from
 * runtime.h so that the runtime's private context (run_ctx.h) can hold
 * them without including the runtime's API.
 */
#ifndef ZB_RUN_OPTS_H
#define ZB_RUN_OPTS_H

#include <signal.h>
#include <stdbool.h>

#include "executor/base.h"
#include "executor/comm/transport.h"
#include "executor/stage/stage.h"

typedef void (*zb_step_fn)(const zb_step_info *info, void *ctx);

/* One process per rank (a launcher started this process, launch.h): this
 * process runs only global rank `rank` over the transport `tr` (made by the
 * caller, e.g. the MPI one, sized with zb_run_msg_sizes). All zero (tr
 * NULL): every rank of the plan is a thread of this process over the local
 * transport. The plan interpreter sees only the rank and the transport. */
typedef struct {
    zb_transport *tr;       /* this rank's endpoint; NULL: ranks as threads */
    int rank, world;        /* world must equal the plan's dp*tp*pp */
    int local_rank;         /* rank on this host */
    int device;             /* cuda: this rank's CUDA device (procs.h) */
} zb_run_proc;

typedef struct {
    int steps;              /* total steps of training; 0: training.steps */
    int threads;            /* OpenMP threads per rank; 0: cores / world */
    int checkpoint_every;   /* 0: never */
    const char *checkpoint_dir; /* NULL: "checkpoints" */
    bool resume;            /* continue after the newest checkpoint (if any) */
    bool resume_changed;    /* accept another total_steps or seed on resume */
    const volatile sig_atomic_t *stop; /* polled between steps (NULL: never):
                                          nonzero ends the run after the step
                                          in progress, checkpointed when
                                          checkpoints are on */
    double max_loss_ratio;  /* > 0: stop (ZB_ERUNTIME) when a step's loss
                               exceeds this times the run's first loss */
    int trace_steps;        /* steps kept in the timeline; 0: 2 */
    bool keep_params;       /* copy each rank's final parameters into res */
    zb_backend backend;     /* cpu (0) or cuda: every rank's stage */
    zb_step_fn on_step;     /* may be NULL */
    int hold_after_step;    /* > 0: after this step every rank calls on_hold
                               and waits in it (a test's hold, ZB_TEST_HOLD) */
    void (*on_hold)(int rank, int step, void *ctx);   /* gets on_step_ctx */
    void *on_step_ctx;
    zb_run_proc proc;       /* one process per rank; zero: threads
                               (on_step: only in rank 0's process) */
} zb_run_opts;

#endif
