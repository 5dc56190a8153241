/* procs_cuda.c - the CUDA backend's part of a one-process-per-rank launch
 * (procs.h): which device this process takes, and this rank's NCCL
 * endpoint, made from a unique id that rank 0 draws and the bootstrap
 * (bootstrap.h: MPI broadcast, or TCP for torchrun-style launches) hands
 * to every rank. */
#include "executor/run/procs.h"

#include <string.h>

#include "executor/comm/bootstrap.h"
#include "executor/host/watchdog.h"

zb_status zb_procs_cuda_device(int local_rank, int local_size, int ndev,
                               const char *visible, int *device, zb_err *err) {
    *device = -1;
    if (ndev < 1)
        return zb_fail(err, ZB_EINPUT, "--backend cuda: no CUDA device "
                       "visible (CUDA_VISIBLE_DEVICES=%s)",
                       visible ? visible : "unset");
    int here = local_size > local_rank ? local_size : local_rank + 1;
    bool own_gpu = ndev == 1 && visible && visible[0];
    if (here > ndev && !own_gpu)
        return zb_fail(err, ZB_EINPUT, "--backend cuda: %d processes on "
                       "this host but %d CUDA device%s visible: two would "
                       "share a GPU, which NCCL refuses in one communicator; "
                       "start at most %d per host, or give each its own GPU "
                       "(CUDA_VISIBLE_DEVICES)", here, ndev,
                       ndev == 1 ? "" : "s", ndev);
    *device = local_rank % ndev;
    return ZB_OK;
}

#ifdef ZB_HAVE_CUDA
/* MPI launches: MPI is the bootstrap and ends the job on failures. */
static zb_status mpi_up(zb_procs *p, zb_err *err) {
    const zb_launch *l = &p->launch;
    if (!zb_launch_is_mpi(l)) return ZB_OK;
    zb_watchdog_arm("MPI_Init");
    zb_status s = zb_mpi_init(l->rank, l->world, err);
    zb_watchdog_disarm();
    if (zb_mpi_initialized()) p->started = true;
    return s;
}

zb_status zb_procs_cuda_up(zb_procs *p, const zb_plan *plan, int device,
                           zb_err *err) {
    const zb_launch *l = &p->launch;
    unsigned char id[ZB_NCCL_ID_BYTES];
    memset(id, 0, sizeof id);
    ZB_TRY(zb_watchdog_start(l->comm_timeout_s, l->rank, err));
    ZB_TRY(mpi_up(p, err));
    if (l->rank == 0) ZB_TRY(zb_nccl_unique_id(id, err));
    ZB_TRY(zb_bootstrap_bcast(l, id, sizeof id, err));
    zb_group g[ZB_RUN_GROUPS];
    zb_run_groups(plan, l->rank, g);
    int max_msgs;
    size_t msg_floats;
    ZB_TRY(zb_run_msg_sizes(plan, &max_msgs, &msg_floats, err));
    msg_floats = zb_run_cuda_msg_floats(plan); /* bf16: two per float */
    zb_watchdog_arm_s("NCCL's communicator set-up (ncclCommInitRank, "
                      "ncclCommSplit, the lanes' first exchange)",
                      zb_watchdog_setup_s(l->world));
    int slots[ZB_NCCL_RINGS];
    zb_run_ring_slots(plan, slots);
    (void)max_msgs; /* the staging rings are sized per direction */
    zb_status s = zb_nccl_new(l->rank, l->world, device, id, ZB_RUN_GROUPS, g, slots,
                              msg_floats, plan->dp * plan->tp, &p->nccl, err);
    zb_watchdog_disarm();
    if (s != ZB_OK) return s;
    p->started = true;   /* torchrun-style: failures now end this process */
    return ZB_OK;
}

void zb_procs_cuda_free(zb_procs *p) {
    zb_watchdog_arm("NCCL's communicator tear-down (ncclCommDestroy)");
    zb_nccl_free(p->nccl);
    zb_watchdog_disarm();
    p->nccl = NULL;
}
#else
zb_status zb_procs_cuda_up(zb_procs *p, const zb_plan *plan, int device,
                           zb_err *err) {
    (void)p, (void)plan, (void)device;
    return zb_fail(err, ZB_EINPUT, "--backend cuda: zbrun was built without "
                   "CUDA");
}

void zb_procs_cuda_free(zb_procs *p) {
    p->nccl = NULL;
}
#endif
