/* transport_mpi.h - the MPI transport (transport.h) for CPU ranks that are
 * separate processes, one rank per process, launched by mpirun or srun
 * (launch.h); and the few process-wide MPI calls zbrun needs.
 *
 * Built only when MPI was found at build time (ZB_HAVE_MPI); otherwise
 * every function here fails with ZB_EINPUT "zbrun was built without MPI
 * ..." (zb_mpi_built() says which), so a launch that needs MPI says so.
 *
 * Contract (the local transport's, across processes):
 *  - send copies buf into one of max_sends staging slots and starts a
 *    non-blocking send from there; it returns at once. A slot is reused
 *    once its send completed; when all are in flight, send waits for the
 *    oldest. max_sends = the most sends of one rank in one step suffices
 *    (every step ends with a world all-reduce).
 *  - recv waits for the message with (peer, tag); a size mismatch is
 *    ZB_ERUNTIME naming both ranks.
 *  - allreduce sums in a fixed order, never MPI_Allreduce's: member 0 of
 *    the group receives every member's buffer (in chunks of a staging area
 *    allocated up front, at most 64 members at a time, so the stage does
 *    not grow with the group), adds them into its own in member order 1, 2, ...
 *    (element k: ((b0 + b1) + b2) + ...: the local transport's order, so
 *    results are bitwise those of the threaded run), then sends the sum
 *    back to every member. barrier is an all-reduce of one value.
 *  - every wait polls (MPI_Test, yielding then sleeping up to 1 ms, so
 *    oversubscribed ranks leave the cores to those that compute) and gives
 *    up after timeout_s with ZB_ERUNTIME "rank R: no message from rank P for
 *    T s ...": a peer that died cannot hang this one.
 *  - abort only marks this endpoint failed (later calls fail at once); the
 *    caller ends the job with zb_mpi_abort after reporting its error.
 * P2P and collectives use two duplicates of MPI_COMM_WORLD (MPI errors
 * return codes there, turned into messages); tags are zb_lower_tag values
 * and group ids, checked against MPI_TAG_UB.
 */
#ifndef ZB_TRANSPORT_MPI_H
#define ZB_TRANSPORT_MPI_H

#include <stdbool.h>
#include <stddef.h>

#include "common/zb_error.h"
#include "executor/comm/transport.h"

/* Was zbrun built with MPI? */
bool zb_mpi_built(void);

/* MPI_Init_thread (funneled: only the thread that called this calls MPI)
 * and a check that MPI sees the launcher's rank and world size (an MPI
 * library without the launcher's support sees a world of 1). */
zb_status zb_mpi_init(int expect_rank, int expect_world, zb_err *err);
bool zb_mpi_initialized(void);
/* MPI_Finalize, if zb_mpi_init succeeded. */
void zb_mpi_finalize(void);
/* End every process of the job with `code` (MPI_Abort); without MPI
 * initialised, this process only (_exit). Does not return. */
void zb_mpi_abort(int code) __attribute__((noreturn));

/* Broadcast n bytes from world rank 0 to every rank, giving up after
 * timeout_s (bootstrap.h uses it). */
zb_status zb_mpi_bcast(void *blob, size_t n, double timeout_s, zb_err *err);

typedef struct zb_mpi_world zb_mpi_world;

/* The endpoint of this process (rank = MPI world rank), with max_sends
 * staging slots of max_msg_floats floats. */
zb_status zb_mpi_world_new(int max_sends, size_t max_msg_floats,
                           double timeout_s, zb_mpi_world **out, zb_err *err);
void zb_mpi_world_free(zb_mpi_world *w);
zb_transport *zb_mpi_transport(zb_mpi_world *w);

#endif
