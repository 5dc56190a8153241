/* abort_gate.h - who may abort a rank's NCCL communicators, and when.
 *
 * NCCL's rules (user guide, "Thread Safety" and "Fault Tolerance"): a
 * communicator is operated by one thread at a time, so ncclCommAbort must
 * not run while another thread is inside an NCCL call on it (a send, a
 * group end, ncclCommGetAsyncError); and every rank of a node must abort,
 * or one rank may free memory the others still use. In threads mode the
 * rank that fails is not the thread that owns the other ranks'
 * communicators, and an owner may sit in a host wait for the device that
 * only an abort ends (a kernel waiting for the failed rank). The gate
 * decides, per rank, which thread aborts:
 *
 *   FREE    the owner is outside NCCL: an aborting thread claims the rank
 *           (FREE -> DEAD) and aborts its communicators itself, which also
 *           ends the owner's device waits;
 *   BUSY    the owner is inside an NCCL call: the aborting thread only
 *           marks it (BUSY -> PENDING), the owner aborts on leaving;
 *   PENDING marked: the owner's next leave turns it DEAD and aborts;
 *   DEAD    aborted: every later enter fails.
 *
 * Exactly one thread sees "you abort now" per rank, and never while
 * another thread is inside an NCCL call on that rank's communicators
 * (tests/unit/test_abort_gate.c). Lock-free (the compiler's __atomic
 * builtins on a plain int, so that the header also serves the CUDA
 * sources): an abort may come from any thread's failure path.
 */
#ifndef ZB_ABORT_GATE_H
#define ZB_ABORT_GATE_H

#include <stdbool.h>

enum { ZB_GATE_FREE = 0, ZB_GATE_BUSY, ZB_GATE_PENDING, ZB_GATE_DEAD };

typedef struct {
    int state;          /* ZB_GATE_*, atomic; zeroed memory is FREE */
} zb_abort_gate;

/* The owner, before an NCCL call: true (now BUSY) when it may make it,
 * false when the rank is being or has been aborted (make no call). */
bool zb_gate_enter(zb_abort_gate *g);

/* The owner, after that call: true when it must now abort its own
 * communicators (an abort was asked while it was inside; now DEAD). */
bool zb_gate_leave(zb_abort_gate *g);

/* Any thread, to abort the rank: true when the caller must abort its
 * communicators now (it was FREE; now DEAD); false when the owner will
 * (BUSY, now PENDING) or it is already done (PENDING, DEAD). */
bool zb_gate_claim(zb_abort_gate *g);

/* The state, for tests and messages. */
int zb_gate_state(zb_abort_gate *g);

#endif
