/* affinity.h - each rank thread on cores of its own.
 *
 * Ranks are threads that hand work to each other; the kernel's wake-up
 * placement likes to put a woken thread on the core of the thread that woke
 * it, and with any other process on the machine two ranks then end up
 * taking turns on one core while the other core serves someone else
 * (measured: pp 2 on 2 cores at load 2, ranks alternating, 1.5-3 ms gaps
 * between passes, bubble 40% for 7.5% planned). So when ranks x threads fit
 * the cores this process may use, rank r binds itself to the cores
 * [r*threads, (r+1)*threads) of that set (its OpenMP workers, started
 * later from it, inherit them). More ranks than cores: no binding (the
 * scheduler has to share them out anyway). ZB_PIN=0 turns it off.
 */
#ifndef ZB_AFFINITY_H
#define ZB_AFFINITY_H

#include <stdbool.h>

/* Called by rank `rank` of `world`, each with `threads` OpenMP threads,
 * on its own thread before its first OpenMP region. Returns true when it
 * bound the thread; failures are not errors (the run goes on unbound). */
bool zb_pin_rank(int rank, int world, int threads);

#endif
