/* launch.h - who launched this process: one process per rank under a
 * launcher (Open MPI's mpirun, Slurm's srun, a PMI launcher such as
 * MPICH's hydra, or a torchrun-style environment), or none at all (then
 * zbrun runs every rank as a thread of this one process).
 *
 * Detection reads environment variables only, through a lookup function, so
 * it is a pure function of the environment and testable without a
 * launcher. Launchers are tried in this order; the first whose variables
 * are present wins (mpirun inside a Slurm allocation is Open MPI):
 *   Open MPI     OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE
 *   Slurm        SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID,
 *                SLURM_NTASKS_PER_NODE; only inside a job step (srun sets
 *                SLURM_STEP_ID), so a batch script's own shell is no rank
 *   PMI          PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS
 *   torchrun     RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
 *                MASTER_ADDR, MASTER_PORT (both required)
 * Missing local rank: 0; missing local size: 0 (unknown). A launcher whose
 * variables are present but malformed (not an integer, rank outside
 * 0..world-1) is ZB_EINPUT naming the variable and its value.
 *
 * ZB_BOOTSTRAP_TIMEOUT_S (seconds, default 60) bounds the bootstrap
 * exchange (bootstrap.h); ZB_COMM_TIMEOUT_S (default 20) bounds any single
 * wait for a peer in the MPI transport (transport_mpi.h).
 */
#ifndef ZB_LAUNCH_H
#define ZB_LAUNCH_H

#include <stdbool.h>

#include "common/zb_error.h"

typedef enum {
    ZB_LAUNCH_NONE = 0,   /* no launcher: all ranks are threads of this process */
    ZB_LAUNCH_OMPI,
    ZB_LAUNCH_SLURM,
    ZB_LAUNCH_PMI,
    ZB_LAUNCH_TORCHRUN
} zb_launcher;

#define ZB_BOOTSTRAP_TIMEOUT_DEFAULT_S 60.0
#define ZB_COMM_TIMEOUT_DEFAULT_S 20.0

typedef struct {
    zb_launcher kind;
    int rank, world;            /* this process's rank of world (0, 1: none) */
    int local_rank, local_size; /* on this host; local_size 0: unknown */
    char master_addr[256];      /* torchrun-style only, else "" */
    int master_port;            /* torchrun-style only, else 0 */
    double bootstrap_timeout_s; /* ZB_BOOTSTRAP_TIMEOUT_S */
    double comm_timeout_s;      /* ZB_COMM_TIMEOUT_S */
} zb_launch;

/* Value of environment variable `name`, or NULL when unset. */
typedef const char *(*zb_env_fn)(const char *name, void *ctx);

/* Fill *out from the variables `get` returns. */
zb_status zb_launch_detect(zb_env_fn get, void *ctx, zb_launch *out,
                           zb_err *err);

/* zb_launch_detect over getenv(3). */
zb_status zb_launch_from_env(zb_launch *out, zb_err *err);

/* "Open MPI", "Slurm", "PMI", "torchrun-style", "none". */
const char *zb_launcher_name(zb_launcher k);

/* The variable that gave the world size ("OMPI_COMM_WORLD_SIZE", ...). */
const char *zb_launch_world_var(zb_launcher k);

/* Launches whose processes talk through MPI (all but torchrun-style). */
bool zb_launch_is_mpi(const zb_launch *l);

#endif
