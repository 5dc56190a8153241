/* profile.h - what a run measured, per virtual stage and per rank, beside the
 * plan's predictions, as a file `zbplan --profile` reads back (zbrun
 * --profile FILE). docs/zbrun.md describes the format; planner/cost/profile.h
 * reads it.
 *
 * Contents (seconds, bytes; means over the steps after the first, and over
 * the dp x tp ranks of a pipeline rank, pass_times.h):
 *   profile: 1
 *   model: the shape the times belong to (name, layers, hidden, heads,
 *     ffn_hidden, seq_len, vocab, precision, fused_attention), device name
 *   layout: dp, tp, pp, v, micro_batch, microbatches, schedule, threads
 *   step: measured_s, predicted_s, pipeline_s (longest pipeline-rank span),
 *     predicted_pipeline_s, overhead_s (measured_s - pipeline_s: data,
 *     gradient sync, norm, optimizer)
 *   vstages: [{vstage, layers, embed, head, t_f, t_b, t_w, t_bw,
 *     predicted_t_f, predicted_t_b, predicted_t_w, samples_f, samples_b,
 *     samples_w, samples_bw}]  (a kind that never ran: time 0, samples 0)
 *   p2p: {bytes, messages_per_step, measured_s (one send, mean over the
 *     ranks that send), predicted_s (the plan's largest t_comm)}
 *   allreduce: {dp_group: dp, dp_s, embedding_s} (means over the ranks
 *     taking part; 0 when none does)
 *   ranks: [{rank, pp_rank, dp_rank, tp_rank, peak_mem_bytes (static +
 *     activation peak), predicted_peak_mem_bytes (its pipeline rank's),
 *     send_s, dp_allreduce_s, embedding_allreduce_s}]
 * Written atomically. */
#ifndef ZB_PROFILE_H
#define ZB_PROFILE_H

#include "common/zb_plan.h"
#include "executor/base.h"

zb_status zb_profile_write(const char *path, const zb_plan *plan,
                           const zb_run_result *res, zb_err *err);

#endif
