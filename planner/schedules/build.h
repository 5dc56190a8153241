/* build.h - set-up shared by the hand-made schedule generators
 * (the .c files of planner/schedules/); not part of the generator contract (generator.h).
 *
 * zb_sched_check_pm checks p and m. zb_sched_begin zeroes *out first, so
 * zb_schedule_free(out) is safe after any failure, then checks p and m and
 * allocates the per-rank lists. zb_sched_put is zb_schedule_push inline.
 */
#ifndef ZB_SCHED_INTERNAL_H
#define ZB_SCHED_INTERNAL_H

#include <string.h>

#include "common/zb_schedule.h"

/* Upper limits keep p*m*v*3 well inside an int and chunk inside uint8. */
#define ZB_SCHED_MAX_P 1024
#define ZB_SCHED_MAX_M (1 << 20)

static inline zb_status zb_sched_check_pm(const char *name, int p, int m,
                                          zb_err *err) {
    if (p < 1 || p > ZB_SCHED_MAX_P)
        return zb_fail(err, ZB_EINPUT, "%s needs pipeline stages p in 1..%d "
                       "(got p=%d)", name, ZB_SCHED_MAX_P, p);
    if (m < 1 || m > ZB_SCHED_MAX_M)
        return zb_fail(err, ZB_EINPUT, "%s needs microbatches m in 1..%d "
                       "(got m=%d)", name, ZB_SCHED_MAX_M, m);
    return ZB_OK;
}

static inline zb_status zb_sched_begin(zb_schedule *out, const char *name,
                                       int p, int m, int v, zb_placement pl,
                                       int cap_per_rank, zb_err *err) {
    memset(out, 0, sizeof *out);
    ZB_TRY(zb_sched_check_pm(name, p, m, err));
    return zb_schedule_init(out, name, p, m, v, pl, cap_per_rank, err);
}

/* zb_schedule_push, written in place while rank r's list has room (the
 * generators size their lists): for the hot loops. */
static inline zb_status zb_sched_put(zb_schedule *s, int r, zb_pass pass,
                                     int mb, int chunk, zb_err *err) {
    if (s->len[r] == s->cap[r]) return zb_schedule_push(s, r, pass, mb, chunk, err);
    s->acts[r][s->len[r]++] = (zb_action){(uint8_t)pass, (uint8_t)chunk, 0, mb};
    return ZB_OK;
}

/* Finish a generator: on failure release what was built. */
static inline zb_status zb_sched_end(zb_schedule *out, zb_status st) {
    if (st != ZB_OK) zb_schedule_free(out);
    return st;
}

#endif
