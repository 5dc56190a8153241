/* meminfo.c - host memory available (meminfo.h). */
#include "executor/host/meminfo.h"

#include <stdio.h>

#include "executor/host/memlimit.h"

double zb_host_mem_available(bool *limited) {
    double avail = 0, kib = 0;
    char line[256];
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %lf kB", &kib) == 1) break;
        fclose(f);
        avail = kib * 1024.0;
    }
    double lim = (double)zb_memlimit_bytes();
    bool lower = lim > 0 && (avail <= 0 || lim < avail);
    if (limited) *limited = lower;
    return lower ? lim : avail;
}
