/* watchdog.h - a thread that ends this process when a blocking call it
 * cannot interrupt has lasted too long: one process per rank, a peer
 * process that died leaves the others stuck in MPI calls that have no
 * timeout of their own (MPI_Init, MPI_Comm_dup, MPI_Finalize, a blocking
 * NCCL call). The transports' own waits time out by themselves
 * (transport_mpi.h); the watchdog covers the rest.
 *
 * Arm it before such a call with what the process is doing, disarm it
 * after. If it stays armed for timeout_s, the thread writes one line
 * "zbrun: rank R: stuck for T s in WHAT (a peer process failed?); exiting"
 * to stderr and ends the process with _exit(1) (the launcher then ends the
 * others). Without zb_watchdog_start, arm and disarm do nothing.
 */
#ifndef ZB_WATCHDOG_H
#define ZB_WATCHDOG_H

#include "common/zb_error.h"

zb_status zb_watchdog_start(double timeout_s, int rank, zb_err *err);
/* `what` must stay valid until disarmed (a string literal). */
void zb_watchdog_arm(const char *what);
/* The same with a deadline of at least at_least_s (a wait whose healthy
 * length is known to exceed the start-up timeout: a step's device work,
 * NCCL's set-up of a large world); the line then names that limit. */
void zb_watchdog_arm_s(const char *what, double at_least_s);
/* What to pass as at_least_s for the wait for a step's device work: 10
 * times the predicted step (step_s; 0 when unknown); and for NCCL's
 * set-up of `world` ranks (contexts, communicators, the lanes' first
 * exchange): 30 s + 10 s per rank. Pure; tests/unit/test_watchdog.c. */
double zb_watchdog_step_s(double step_s);
double zb_watchdog_setup_s(int world);
void zb_watchdog_disarm(void);
/* Stop and join the thread (idempotent). */
void zb_watchdog_stop(void);

#endif
