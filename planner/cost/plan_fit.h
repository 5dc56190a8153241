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
 * plan's schedule, the device's workspace margin and, on a GPU, the
 * transport's staging rings (zb_staging_need_bytes).
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

/* Device bytes per rank that zbrun's transport stages pipeline messages in
 * (common/zb_staging.h, the formula the transports allocate by), for a
 * dp x tp x pp layout of v chunks placed by pl, m microbatches of
 * micro_batch sequences per step. The planner knows a plan targets the
 * CUDA backend by its device: any device but "cpu" is a GPU run with one
 * rank per GPU (NCCL between ranks, the device-local transport alone);
 * on "cpu" zbrun's CPU backend keeps its messages in host memory, 0 here.
 * Counted in every GPU candidate's and plan's peak memory. */
double zb_staging_need_bytes(const zb_model *m, int dp, int tp, int pp, int v,
                             zb_placement pl, int n_micro, int micro_batch);
/* The same for a written plan on its own device. */
double zb_plan_staging_bytes(const zb_plan *plan);

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
