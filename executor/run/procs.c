/* procs.c - see procs.h. */
#include "executor/run/procs.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "executor/state/checkpoint.h"
#include "executor/host/watchdog.h"

static zb_status check_world(const zb_launch *l, const zb_plan *plan,
                             zb_err *err) {
    int need = zb_plan_world(plan);
    if (l->world == need) return ZB_OK;
    return zb_fail(err, ZB_EINPUT, "launched as %d processes (%s=%d) but the "
                   "plan has dp %d x tp %d x pp %d = %d ranks, one per process",
                   l->world, zb_launch_world_var(l->kind), l->world, plan->dp,
                   plan->tp, plan->pp, need);
}

static zb_status check_resume(const char *dir, const zb_plan *plan,
                              zb_err *err) {
    zb_ckpt_index idx;
    bool found;
    if (!dir) return ZB_OK;
    return zb_ckpt_find(dir, plan, &idx, &found, err);
}

static zb_status check_mpi(const zb_launch *l, zb_err *err) {
    if (l->kind == ZB_LAUNCH_TORCHRUN)
        return zb_fail(err, ZB_EINPUT, "a torchrun-style launch (RANK, "
                       "WORLD_SIZE) has no MPI, and the cpu backend runs "
                       "across processes over MPI only: launch with mpirun "
                       "or srun");
    if (!zb_mpi_built()) return zb_mpi_init(l->rank, l->world, err);  /* says why */
    return ZB_OK;
}

static zb_status bring_up(zb_procs *p, const zb_plan *plan, zb_err *err) {
    const zb_launch *l = &p->launch;
    int max_msgs;
    size_t msg_floats;
    ZB_TRY(zb_run_msg_sizes(plan, &max_msgs, &msg_floats, err));
    ZB_TRY(zb_watchdog_start(l->comm_timeout_s, l->rank, err));
    zb_watchdog_arm("MPI_Init");
    zb_status s = zb_mpi_init(l->rank, l->world, err);
    zb_watchdog_disarm();
    if (zb_mpi_initialized()) p->started = true;
    if (s != ZB_OK) return s;
    zb_watchdog_arm("the MPI transport's set-up (MPI_Comm_dup)");
    s = zb_mpi_world_new(max_msgs, msg_floats, l->comm_timeout_s, &p->mpi, err);
    zb_watchdog_disarm();
    return s;
}

/* The CUDA backend: a device per process, checked before any
 * communication (every process of a host finds the same), then NCCL. */
static zb_status start_cuda(zb_procs *p, const zb_plan *plan,
                            zb_run_proc *out, zb_err *err) {
    const zb_launch *l = &p->launch;
    int device;
    ZB_TRY(zb_procs_cuda_device(l->local_rank, l->local_size,
                                zb_backend_cuda_devices(),
                                getenv("CUDA_VISIBLE_DEVICES"), &device, err));
    if (zb_launch_is_mpi(l) && !zb_mpi_built())
        return zb_mpi_init(l->rank, l->world, err);   /* says why */
    ZB_TRY(zb_procs_cuda_up(p, plan, device, err));
    *out = (zb_run_proc){.tr = p->nccl, .rank = l->rank, .world = l->world,
                         .local_rank = l->local_rank, .device = device};
    return ZB_OK;
}

/* Can a rank that failed before the transport still reach the others
 * (agree.h)? Over MPI, for the cpu backend; NCCL needs a plan. */
static bool can_join(const zb_launch *l, zb_backend backend) {
    return backend == ZB_BACKEND_CPU && zb_launch_is_mpi(l) && zb_mpi_built();
}

zb_status zb_procs_fail_start(zb_procs *p, const zb_launch *l, zb_backend backend,
                              zb_status why, zb_err *err) {
    if (why != ZB_EINPUT || !can_join(l, backend)) return why;
    p->launch = *l;
    zb_err mine = *err;
    ZB_TRY(zb_watchdog_start(l->comm_timeout_s, l->rank, err));
    zb_watchdog_arm("MPI_Init");
    zb_status s = zb_mpi_init(l->rank, l->world, err);
    zb_watchdog_disarm();
    if (zb_mpi_initialized()) p->started = true;
    if (s != ZB_OK) return s;
    zb_watchdog_arm("the MPI transport's set-up (MPI_Comm_dup)");
    s = zb_mpi_world_new(1, 1, l->comm_timeout_s, &p->mpi, err);
    if (s == ZB_OK) s = zb_agree_failed(zb_mpi_transport(p->mpi), &mine, err);
    zb_watchdog_disarm();
    p->agreed = s == ZB_EINPUT;
    return s;
}

zb_status zb_procs_check(zb_procs *p, const zb_run_proc *proc, const zb_plan *plan,
                         const zb_agree_opts *o, zb_err *err) {
    zb_watchdog_arm("the start-up check that all processes run the same plan");
    zb_status s = zb_agree(proc->tr, plan, o, &p->agreed, err);
    zb_watchdog_disarm();
    return s;
}

zb_status zb_procs_start(zb_procs *p, const zb_launch *launch,
                         const zb_plan *plan, zb_backend backend,
                         const char *resume_dir, zb_run_proc *out,
                         zb_err *err) {
    memset(p, 0, sizeof *p);
    memset(out, 0, sizeof *out);
    p->launch = *launch;
    zb_status s = check_world(launch, plan, err);
    if (s == ZB_OK) s = check_resume(resume_dir, plan, err);
    if (s != ZB_OK) return zb_procs_fail_start(p, launch, backend, s, err);
    if (backend == ZB_BACKEND_CUDA) return start_cuda(p, plan, out, err);
    ZB_TRY(check_mpi(launch, err));
    ZB_TRY(bring_up(p, plan, err));
    *out = (zb_run_proc){.tr = zb_mpi_transport(p->mpi), .rank = launch->rank,
                         .world = launch->world,
                         .local_rank = launch->local_rank};
    return ZB_OK;
}

int zb_procs_here(const zb_launch *l) {
    return l->local_size > 0 ? l->local_size : l->world;
}

int zb_procs_threads(const zb_launch *l) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int share = zb_threads_per_rank(cores > 0 ? (int)cores : 1, zb_procs_here(l));
    int bound = omp_get_num_procs();
    return share < bound ? share : bound > 0 ? bound : 1;
}

void zb_procs_finish(zb_procs *p) {
    if (!p->started) return;
    if (p->nccl) zb_procs_cuda_free(p);
    zb_watchdog_arm("MPI_Finalize");
    zb_mpi_world_free(p->mpi);
    p->mpi = NULL;
    zb_mpi_finalize();
    zb_watchdog_disarm();
    zb_watchdog_stop();
    p->started = false;
}
