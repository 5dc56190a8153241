/* procs.h - zbrun's side of a one-process-per-rank launch (launch.h):
 * check the launch against the plan, bring up the job's communication and
 * take it down. The CPU backend runs over MPI (the MPI transport); a
 * torchrun-style launch (no MPI) is refused for it. The CUDA backend runs
 * over NCCL (procs_cuda.c), under any launcher.
 *
 * zb_procs_start, in order, each failure ending the start:
 *  - the launcher's world size must be the plan's dp x tp x pp: ZB_EINPUT
 *    "launched as W processes (VAR) but the plan has dp D x tp T x pp P =
 *    N ranks, one per process" (every process finds the same, before any
 *    communication, so every process can exit 2);
 *  - with resume_dir, the checkpoint index there must belong to the plan's
 *    layout (zb_ckpt_find: ZB_EINPUT naming both layouts, likewise on every
 *    process);
 *  - cpu: MPI must be built in (ZB_EINPUT saying how to get it) and the
 *    launch one MPI serves (ZB_EINPUT for torchrun-style); the watchdog
 *    (watchdog.h, launch->comm_timeout_s) starts and guards MPI_Init and
 *    the transport's communicator set-up;
 *  - cuda: the device (zb_procs_cuda_device, before any communication);
 *    then zb_procs_cuda_up: the watchdog, MPI_Init for MPI launches (MPI
 *    built in, else ZB_EINPUT), rank 0's NCCL unique id to every rank
 *    (zb_bootstrap_bcast: MPI, or TCP at MASTER_ADDR:MASTER_PORT for
 *    torchrun-style), then zb_nccl_new with the rank's TP, DP,
 *    embedding and (DUAL plans) copy-pair groups (zb_run_groups) under
 *    the watchdog;
 *  - out receives the transport, rank, world, local rank and device.
 * Once `started`, failures are ended with zb_mpi_abort (every process of
 * an MPI job goes; without MPI this process only, and the watchdog ends
 * peers blocked on it); after a successful run, zb_procs_finish.
 */
#ifndef ZB_PROCS_H
#define ZB_PROCS_H

#include <stdbool.h>

#include "common/zb_error.h"
#include "common/zb_plan.h"
#include "executor/comm/launch.h"
#include "executor/run/runtime.h"
#include "executor/comm/transport_mpi.h"

/* The start-up agreement: the processes of one launched job (one rank
 * each) check that they run the same thing: under mpirun each
 * process reads its own plan file and options, and two that differ would
 * train different models silently, hang, or crash in a collective.
 *
 * zb_agree runs once the job's transport is up: every rank puts
 * what it was given into its slot of a world all-reduce (the plan's
 * fingerprint, the schedule's name and actions, the optimizer, the seed,
 * the data file, and the options that change the run: steps, --resume,
 * --resume-changed, --checkpoint-every, --max-loss-ratio), or, on a rank
 * that could not read its plan or data (zb_agree_failed), that it failed
 * and on which host. Every rank then knows every other's, so all reach
 * the same verdict and can each print it and exit 2 without waiting for
 * one another:
 *   - a rank that failed: its own error, "rank R (host H): ...";
 *   - the others: "rank R (host H) could not start (its message says
 *     why); nothing was run";
 *   - ranks that differ: "rank R: rank S's plan or options differ from rank
 *     0's: schedule 1f1b vs zb-h1 (every process must be given the same
 *     plan and options)" on every rank.
 * Every rank failing the same way is the common case of a bad plan on a
 * shared file system: then only rank 0 prints, as before the transport.
 */

/* The options that change the run (steps: the run's total). */
typedef struct {
    int steps, checkpoint_every;
    bool resume, resume_changed;
    double max_loss_ratio;
} zb_agree_opts;

/* This rank's plan and options against every other rank's over tr (its
 * rank and world are the job's). ZB_OK when all agree; else ZB_EINPUT
 * with the line this rank prints in err (prefixed "rank R: ") and
 * *all_know = true: every rank failed together. Transport failures are
 * returned as they are, with *all_know = false. */
zb_status zb_agree(zb_transport *tr, const zb_plan *plan, const zb_agree_opts *o,
                   bool *all_know, zb_err *err);

/* The same exchange from a rank whose own start failed with `why`
 * (ZB_EINPUT: a missing plan or data file): err gets this rank's line
 * "rank R (host H): <why>", or nothing to print (err->msg empty) when
 * every rank failed and this is not rank 0. */
zb_status zb_agree_failed(zb_transport *tr, const zb_err *why, zb_err *err);

typedef struct {
    zb_launch launch;
    zb_mpi_world *mpi;     /* cpu: the MPI transport's world */
    zb_transport *nccl;    /* cuda: this rank's NCCL endpoint */
    bool started;          /* MPI (or NCCL) is up: end failures with
                              zb_mpi_abort */
    bool agreed;           /* every process reached the same verdict at
                              start-up (zb_agree): each prints its line and
                              exits 2, no abort */
} zb_procs;

/* A process whose start failed (`why`, its message in err) before the
 * transport: with a cpu backend under an MPI launcher it brings MPI up
 * anyway and tells the others (zb_agree_failed above), so that it prints its
 * line (rank, host, file) and the others name it, all exiting 2
 * (p->agreed); otherwise `why` as it was. */
zb_status zb_procs_fail_start(zb_procs *p, const zb_launch *l, zb_backend backend,
                              zb_status why, zb_err *err);

/* After zb_procs_start: do all processes run the same plan and options
 * (zb_agree, under the watchdog)? */
zb_status zb_procs_check(zb_procs *p, const zb_run_proc *proc, const zb_plan *plan,
                         const zb_agree_opts *o, zb_err *err);

zb_status zb_procs_start(zb_procs *p, const zb_launch *launch,
                         const zb_plan *plan, zb_backend backend,
                         const char *resume_dir, zb_run_proc *out,
                         zb_err *err);

/* The CUDA device of a launched process: local_rank mod ndev. ZB_EINPUT
 * "--backend cuda: no CUDA device visible (CUDA_VISIBLE_DEVICES=...)"
 * when ndev < 1; ZB_EINPUT naming both numbers when more processes run
 * on this host (local_size; unknown (0): at least local_rank + 1) than
 * devices are visible, so that two would share one (NCCL refuses that),
 * unless each process sees exactly one device and CUDA_VISIBLE_DEVICES
 * (`visible`, may be NULL) is set: the launcher gave each its own GPU
 * (NCCL still refuses duplicates when it did not). */
zb_status zb_procs_cuda_device(int local_rank, int local_size, int ndev,
                               const char *visible, int *device, zb_err *err);

/* procs_cuda.c: bring up NCCL for this rank on `device` (see above);
 * without CUDA in the build, ZB_EINPUT. zb_procs_cuda_free frees the
 * endpoint (guarded by the watchdog). */
zb_status zb_procs_cuda_up(zb_procs *p, const zb_plan *plan, int device,
                           zb_err *err);
void zb_procs_cuda_free(zb_procs *p);

/* Processes of the job on this host: local_size, else the world size. */
int zb_procs_here(const zb_launch *l);

/* OpenMP threads of a launched process by default: the host's cores over
 * zb_procs_here, at most the cores this process is bound to (the launcher
 * may bind it), at least 1. */
int zb_procs_threads(const zb_launch *l);

/* Free the transport (MPI or NCCL), MPI_Finalize (guarded by the
 * watchdog), stop the watchdog. Nothing when not started. */
void zb_procs_finish(zb_procs *p);

#endif
