/* meminfo.h - how much host memory this process may still take: the
 * kernel's MemAvailable (/proc/meminfo), and under an address-space limit
 * (ulimit -v, memlimit.h) the smaller of the two. zbrun compares it with
 * what a plan needs before any rank allocates (planner/cost/plan_fit.h). */
#ifndef ZB_MEMINFO_H
#define ZB_MEMINFO_H

#include <stdbool.h>

/* Bytes available; 0 when neither is known. *limited: the address-space
 * limit is the smaller (may be NULL). */
double zb_host_mem_available(bool *limited);

#endif
