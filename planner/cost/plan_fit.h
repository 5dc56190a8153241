/* plan_fit.h - what zbrun asks of the cost model, and the only planner
 * header the executor includes: the memory a written plan needs per
 * pipeline rank on a given device, the cost model (cost/cost.h)
 * re-evaluated for the plan's sizes,
 * stages and schedule with that device's memory layout. zbrun uses it at
 * start-up to refuse a plan that cannot fit where it runs, also one made
 * for another device (a GPU plan run on the cpu backend keeps every
 * activation in fp32: docs/cost-model.md section 3.3).
 *
 * need[r] (bytes, r < plan->pp): static memory of rank r's parameters
 * (weights, gradients, AdamW state; ZeRO-1 only where the device's
 * executor does it), the simulated peak of its activations under the
 * plan's schedule, and the device's workspace margin.
 */
#ifndef ZB_PLAN_FIT_H
#define ZB_PLAN_FIT_H

#include <stdbool.h>
#include <stddef.h>

#include "common/zb_error.h"
#include "common/zb_plan.h"

/* The workspace margin the cost model adds to every device's peak for
 * plan's model (zb_workspace_bytes, cost/cost.h), in bytes. */
double zb_plan_workspace_bytes(const zb_plan *plan);

/* device: a device table name (zb_device_lookup); "cpu" is zbrun's CPU
 * backend. need: caller's array of plan->pp doubles. */
zb_status zb_plan_mem_need(const zb_plan *plan, const char *device,
                           double *need, zb_err *err);

/* zbrun's start-up check, before any rank allocates. On the cpu backend
 * (cpu true) the ranks this process runs (every rank, or only `rank` when
 * launched one process per rank with `here` processes on the host) need
 * the sum of need[pp rank] (the cpu device's layout); avail: the host's
 * available bytes (0: unknown, not checked), `limited` when ulimit -v set
 * it. Does not fit: ZB_EINPUT, one line "PLAN: does not fit this host: N
 * ranks need X GiB ... but Y GiB is available". note (n bytes, "" when
 * nothing to say): the plan was made for another device than this. The
 * cuda backend's device memory is not checked here. */
zb_status zb_plan_fit_host(const zb_plan *plan, const char *plan_path, bool cpu,
                           bool launched, int rank, int here, double avail,
                           bool limited, char *note, size_t n, zb_err *err);

#endif
