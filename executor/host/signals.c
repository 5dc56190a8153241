/* signals.c - see signals.h. */
#include "executor/host/signals.h"

#include <errno.h>
#include <string.h>
#include <time.h>

volatile sig_atomic_t zb_stop_signal = 0;
static volatile sig_atomic_t go_signal = 0;

static void on_go(int sig) {
    (void)sig;
    go_signal = 1;
}

void zb_signals_install_go(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_go;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
}

void zb_signals_wait_go(void) {
    const struct timespec tick = {0, 10 * 1000 * 1000};
    while (!go_signal && !zb_stop_signal) nanosleep(&tick, NULL);
}

static void on_signal(int sig) {
    if (!zb_stop_signal) zb_stop_signal = sig;
}

void zb_signals_ignore_pipe(void) {
    signal(SIGPIPE, SIG_IGN);
}

void zb_signals_flush(FILE *f) {
    if (fflush(f) != 0 && errno == EPIPE && !zb_stop_signal)
        zb_stop_signal = SIGPIPE;
}

int zb_signals_install(void) {
    zb_signals_ignore_pipe();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESETHAND | SA_RESTART;   /* a second signal kills */
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 2; i++) {
        int sig = i == 0 ? SIGINT : SIGTERM;
        struct sigaction old;
        /* a signal ignored by whoever started us (a shell's background
         * job ignores SIGINT) stays ignored */
        if (sigaction(sig, NULL, &old) != 0) return -1;
        if (old.sa_handler == SIG_IGN) continue;
        if (sigaction(sig, &sa, NULL) != 0) return -1;
    }
    return 0;
}
