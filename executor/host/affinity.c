/* affinity.c - see affinity.h. */
#include "executor/host/affinity.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

bool zb_pin_rank(int rank, int world, int threads) {
    const char *env = getenv("ZB_PIN");
    if (env && !strcmp(env, "0")) return false;
    cpu_set_t allowed, mine;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return false;
    int n = CPU_COUNT(&allowed);
    if (threads < 1 || world < 1 || (long)world * threads > n) return false;
    if (world == 1) return false;   /* nothing to keep apart */
    CPU_ZERO(&mine);
    int first = rank * threads, seen = 0;
    for (int c = 0; c < CPU_SETSIZE && seen < first + threads; c++) {
        if (!CPU_ISSET(c, &allowed)) continue;
        if (seen >= first) CPU_SET(c, &mine);
        seen++;
    }
    return pthread_setaffinity_np(pthread_self(), sizeof mine, &mine) == 0;
}
