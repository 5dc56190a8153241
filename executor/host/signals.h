/* signals.h - Ctrl-C and kill for zbrun: the first SIGINT or SIGTERM only
 * sets a flag that the runtime polls between steps (zb_run_opts.stop); the
 * run then ends after the step in progress, saves a checkpoint when they
 * are on, and zbrun writes its outputs and exits 128 + the signal. A
 * second signal has its default effect (the handler resets itself). A
 * signal that was ignored when zbrun started (SIGINT in a shell's
 * background job) stays ignored. */
#ifndef ZB_SIGNALS_H
#define ZB_SIGNALS_H

#include <signal.h>

/* The flag: 0, or the number of the first signal caught. */
extern volatile sig_atomic_t zb_stop_signal;

/* Install the handlers for SIGINT and SIGTERM; 0 on success. */
int zb_signals_install(void);

#endif
