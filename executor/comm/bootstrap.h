/* bootstrap.h - hand a small opaque blob from rank 0 to every rank of a
 * one-process-per-rank launch (launch.h) before any communicator exists:
 * the NCCL unique id (128 bytes) the CUDA backend's processes need to
 * create their communicator, or anything else of that kind.
 *
 *   zb_status zb_bootstrap_bcast(const zb_launch *l, void *blob, size_t n,
 *                                zb_err *err);
 * On rank 0 blob holds the n bytes to send; on every other rank it
 * receives them. All ranks must call it with the same n. How:
 *  - no launcher (or a world of 1): nothing to do;
 *  - Open MPI, Slurm, PMI: an MPI broadcast over MPI_COMM_WORLD; MPI is
 *    initialised here if it is not yet (zb_mpi_init, transport_mpi.h; the
 *    caller finalises it with zb_mpi_finalize before exiting);
 *  - torchrun-style: the TCP exchange below at MASTER_ADDR:MASTER_PORT.
 * Gives up after l->bootstrap_timeout_s (ZB_BOOTSTRAP_TIMEOUT_S, default
 * 60 s) with ZB_ERUNTIME naming the rank, the address and the timeout.
 *
 *   zb_status zb_tcp_bcast(const char *addr, int port, int rank, int world,
 *                          void *blob, size_t n, double timeout_s,
 *                          zb_err *err);
 * Rank 0 listens on `port` (all addresses, IPv6 and IPv4) and waits for
 * the world-1 others; each connects to addr:port (retrying while rank 0 is
 * not listening yet), says hello (magic, version, its rank, world, n), and
 * rank 0 answers with the blob, or with a refusal when world or n differ
 * from its own (both sides then fail naming both values). Rank 0 returns
 * once every rank got the blob; a rank that connects twice, or a missing
 * rank at the deadline, is an error ("only K of W ranks connected").
 */
#ifndef ZB_BOOTSTRAP_H
#define ZB_BOOTSTRAP_H

#include <stddef.h>

#include "common/zb_error.h"
#include "executor/comm/launch.h"

zb_status zb_bootstrap_bcast(const zb_launch *l, void *blob, size_t n,
                             zb_err *err);

zb_status zb_tcp_bcast(const char *addr, int port, int rank, int world,
                       void *blob, size_t n, double timeout_s, zb_err *err);

#endif
