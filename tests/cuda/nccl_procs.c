/* nccl_procs.c - NCCL across processes, bootstrapped by zbrun's bootstrap
 * (executor/comm/bootstrap.h): run one process per GPU under mpirun (the unique
 * id travels over MPI) or with torchrun-style variables (over TCP at
 * MASTER_ADDR:MASTER_PORT). Rank 0 makes the NCCL unique id, every rank
 * creates its communicator on device local_rank % devices, sums
 * (rank + 1) * (k + 1) over the ranks with ncclAllReduce and checks the
 * result exactly (small integers in floats). Blocking NCCL calls run under
 * the watchdog (executor/host/watchdog.h) so a dead peer cannot hang us.
 * Exit 0 ok, 77 skipped (no device: cudaErrorNoDevice, a count of 0, or no
 * driver at all, i.e. libcuda.so.1 cannot be loaded, which the runtime
 * reports as cudaErrorInsufficientDriver; or ranks sharing a GPU, which
 * NCCL up to 2.29 refuses), 1 failure; one line per rank says which. Any
 * other CUDA error (a driver older than the runtime, a broken
 * installation) is a failure with its message, never a skip.
 * `make cuda` builds it (compile and link check, no GPU needed);
 * tests/cuda/nccl_procs.sh runs it on a GPU machine.
 */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "executor/comm/bootstrap.h"
#include "executor/comm/launch.h"
#include "executor/comm/transport_mpi.h"
#include "executor/host/watchdog.h"

#define N 4096

static int finish(int code) {
    zb_mpi_finalize();
    zb_watchdog_stop();
    return code;
}

static int check_cuda(cudaError_t e, const char *call, int rank) {
    if (e == cudaSuccess) return 0;
    printf("nccl_procs: rank %d: %s failed: %s\n", rank, call, cudaGetErrorString(e));
    return 1;
}

static int check_nccl(ncclResult_t r, const char *call, int rank) {
    if (r == ncclSuccess) return 0;
    printf("nccl_procs: rank %d: %s failed: %s\n", rank, call, ncclGetErrorString(r));
    return 1;
}

/* No device here (skip) rather than a failing CUDA installation? */
static int no_device(cudaError_t e, int ndev) {
    if (e == cudaErrorNoDevice || (e == cudaSuccess && ndev == 0)) return 1;
    if (e != cudaErrorInsufficientDriver) return 0;
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (h) dlclose(h);
    return h == NULL;   /* no driver installed: no device */
}

/* The all-reduce on device dev; 0 ok, 1 failure. */
static int run(const zb_launch *l, int dev) {
    int r = l->rank;
    ncclUniqueId id;
    zb_err err = {{0}};
    float *d = NULL, *h = malloc(N * sizeof *h);
    ncclComm_t comm;
    cudaStream_t s;
    if (!h) return 1;
    if (r == 0 && check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId", r)) return 1;
    if (zb_bootstrap_bcast(l, &id, sizeof id, &err) != ZB_OK) {
        printf("nccl_procs: %s\n", err.msg);
        return 1;
    }
    if (check_cuda(cudaSetDevice(dev), "cudaSetDevice", r) ||
        check_cuda(cudaStreamCreate(&s), "cudaStreamCreate", r) ||
        check_cuda(cudaMalloc((void **)&d, N * sizeof *d), "cudaMalloc", r))
        return 1;
    for (int k = 0; k < N; k++) h[k] = (float)((r + 1) * (k % 100 + 1));
    zb_watchdog_arm("ncclCommInitRank");
    int bad = check_nccl(ncclCommInitRank(&comm, l->world, id, r), "ncclCommInitRank", r);
    zb_watchdog_disarm();
    if (bad) return 1;
    zb_watchdog_arm("ncclAllReduce");
    bad = check_cuda(cudaMemcpy(d, h, N * sizeof *h, cudaMemcpyHostToDevice), "cudaMemcpy", r) ||
          check_nccl(ncclAllReduce(d, d, N, ncclFloat, ncclSum, comm, s), "ncclAllReduce", r) ||
          check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize", r) ||
          check_cuda(cudaMemcpy(h, d, N * sizeof *h, cudaMemcpyDeviceToHost), "cudaMemcpy", r);
    zb_watchdog_disarm();
    long tri = (long)l->world * (l->world + 1) / 2;
    for (int k = 0; k < N && !bad; k++)
        if (h[k] != (float)(tri * (k % 100 + 1))) {
            printf("nccl_procs: rank %d: element %d is %g, want %ld\n", r, k, h[k],
                   tri * (k % 100 + 1));
            bad = 1;
        }
    ncclCommDestroy(comm);
    cudaFree(d);
    cudaStreamDestroy(s);
    free(h);
    return bad;
}

int main(void) {
    zb_launch l;
    zb_err err = {{0}};
    int ndev = 0, ver = 0;
    if (zb_launch_from_env(&l, &err) != ZB_OK) {
        printf("nccl_procs: %s\n", err.msg);
        return 2;
    }
    if (l.kind == ZB_LAUNCH_NONE || l.world < 2) {
        printf("nccl_procs: start 2 or more processes (mpirun -np 2, or "
               "RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT)\n");
        return 2;
    }
    cudaError_t ce = cudaGetDeviceCount(&ndev);
    if (no_device(ce, ndev)) {
        printf("nccl_procs: rank %d: skipped: no CUDA device\n", l.rank);
        return 77;
    }
    if (ce != cudaSuccess) {
        printf("nccl_procs: rank %d: FAILED: cudaGetDeviceCount: %s (%s)\n",
               l.rank, cudaGetErrorName(ce), cudaGetErrorString(ce));
        return 1;
    }
    ncclGetVersion(&ver);
    int per_host = l.local_size ? l.local_size : l.world;
    if (per_host > ndev && ver < 22900) {
        printf("nccl_procs: rank %d: skipped: %d processes share %d GPU(s) on "
               "this host and NCCL %d refuses two ranks on one GPU\n", l.rank,
               per_host, ndev, ver);
        return 77;
    }
    if (zb_watchdog_start(l.comm_timeout_s, l.rank, &err) != ZB_OK) {
        printf("nccl_procs: %s\n", err.msg);
        return 1;
    }
    int dev = l.local_rank % ndev;
    int bad = run(&l, dev);
    printf("nccl_procs: rank %d of %d on GPU %d of %d (%s launch, id over %s, "
           "NCCL %d): all-reduce %s\n", l.rank, l.world, dev, ndev,
           zb_launcher_name(l.kind), zb_launch_is_mpi(&l) ? "MPI" : "TCP", ver,
           bad ? "FAILED" : "ok");
    if (bad && zb_mpi_initialized()) zb_mpi_abort(1);
    return finish(bad);
}
