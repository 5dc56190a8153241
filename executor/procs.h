/* procs.h - zbrun's side of a one-process-per-rank launch (launch.h):
 * check the launch against the plan, bring up MPI and the MPI transport,
 * and take them down. Only the CPU backend over MPI is built here; a
 * torchrun-style launch (no MPI) is refused for it.
 *
 * zb_procs_start, in order, each failure ending the start:
 *  - the launcher's world size must be the plan's dp x tp x pp: ZB_EINPUT
 *    "launched as W processes (VAR) but the plan has dp D x tp T x pp P =
 *    N ranks, one per process" (every process finds the same, before any
 *    communication, so every process can exit 2);
 *  - with resume_dir, the checkpoint index there must belong to the plan's
 *    layout (zb_ckpt_find: ZB_EINPUT naming both layouts, likewise on every
 *    process);
 *  - MPI must be built in (ZB_EINPUT saying how to get it) and the launch
 *    one MPI serves (ZB_EINPUT for torchrun-style);
 *  - the watchdog (watchdog.h, launch->comm_timeout_s) starts and guards
 *    MPI_Init and the transport's communicator set-up;
 *  - out receives the transport, rank, world and local rank for zb_run.
 * After a successful start, failures are ended with zb_mpi_abort (every
 * process of the job goes); after a successful run, zb_procs_finish.
 */
#ifndef ZB_PROCS_H
#define ZB_PROCS_H

#include <stdbool.h>

#include "common/zb_error.h"
#include "common/zb_plan.h"
#include "executor/launch.h"
#include "executor/runtime.h"
#include "executor/transport_mpi.h"

typedef struct {
    zb_launch launch;
    zb_mpi_world *mpi;
    bool started;          /* MPI is up: end failures with zb_mpi_abort */
} zb_procs;

zb_status zb_procs_start(zb_procs *p, const zb_launch *launch,
                         const zb_plan *plan, const char *resume_dir,
                         zb_run_proc *out, zb_err *err);

/* Processes of the job on this host: local_size, else the world size. */
int zb_procs_here(const zb_launch *l);

/* OpenMP threads of a launched process by default: the host's cores over
 * zb_procs_here, at most the cores this process is bound to (the launcher
 * may bind it), at least 1. */
int zb_procs_threads(const zb_launch *l);

/* Free the transport, MPI_Finalize (guarded by the watchdog), stop the
 * watchdog. Nothing when not started. */
void zb_procs_finish(zb_procs *p);

#endif
