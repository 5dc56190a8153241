/* trace.h - the measured timeline as a Chrome trace (JSON "traceEvents"),
 * which Perfetto (ui.perfetto.dev) and chrome://tracing open.
 *
 * One complete event (ph "X") per compute action of the steps the run kept
 * (zb_run_result trace_n): pid = pipeline rank, tid = dp_rank * tp +
 * tp_rank, name "F3" (pass and microbatch) or "B3.c1" for chunk 1 and up,
 * ts/dur in microseconds from the first kept action, args {step, mb, chunk,
 * rank}. Metadata events name the processes "pipeline rank N" and the
 * threads "dp D tp T". Sends and receives of the same steps are complete
 * events on the same rows, cat "send"/"recv", named "recv act3 from 0"
 * (message kind and microbatch, peer pipeline rank), args {step, mb, peer,
 * vstage}: a receive lasts from the request to the arrival, so its length
 * is time the rank waited. One "sync+optimizer" event (cat "step") per
 * rank and kept step covers the gradient all-reduces, norm and AdamW. Written atomically.
 */
#ifndef ZB_TRACE_H
#define ZB_TRACE_H

#include "common/zb_plan.h"
#include "executor/base.h"

zb_status zb_trace_write(const char *path, const zb_plan *plan,
                         const zb_run_result *res, zb_err *err);

/* "F3", "B3.c1": the label of an action (buf of at least 24 bytes). */
void zb_action_label(const zb_action *a, char *buf, size_t cap);

#endif
