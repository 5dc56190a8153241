/* signals.h - Ctrl-C and kill for zbrun: the first SIGINT or SIGTERM only
 * sets a flag that the runtime polls between steps (zb_run_opts.stop); the
 * run then ends after the step in progress, saves a checkpoint when they
 * are on, and zbrun writes its outputs and exits 128 + the signal. A
 * second signal has its default effect (the handler resets itself). A
 * signal that was ignored when zbrun started (SIGINT in a shell's
 * background job) stays ignored.
 *
 * SIGPIPE (stdout is a pipe whose reader went away: `zbrun ... | head -1`)
 * is ignored, so a write there fails with EPIPE instead of killing zbrun;
 * zb_signals_flush turns that into a stop like SIGTERM's, with the flag set
 * to SIGPIPE: the run ends after the step, keeps its checkpoint and writes
 * its outputs, and zbrun exits 141 (128 + SIGPIPE). */
#ifndef ZB_SIGNALS_H
#define ZB_SIGNALS_H

#include <signal.h>
#include <stdio.h>

/* The flag: 0, or the number of the first signal caught. */
extern volatile sig_atomic_t zb_stop_signal;

/* Install the handlers for SIGINT and SIGTERM and ignore SIGPIPE; 0 on
 * success. */
int zb_signals_install(void);

/* Ignore SIGPIPE only (before anything is printed). */
void zb_signals_ignore_pipe(void);

/* A test's hold (ZB_TEST_HOLD, docs/zbrun.md): zb_signals_install_go makes
 * SIGUSR1 set the go flag (call it only when a hold is asked for: SIGUSR1
 * otherwise keeps its default, ending the process); zb_signals_wait_go
 * returns once SIGUSR1 or a stop signal (the flag above) has arrived,
 * looking every 10 ms. */
void zb_signals_install_go(void);
void zb_signals_wait_go(void);

/* fflush(f); when that fails with EPIPE, set the flag to SIGPIPE (if no
 * signal set it before). */
void zb_signals_flush(FILE *f);

#endif
