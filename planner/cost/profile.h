/* profile.h - measured pass times from `zbrun --profile FILE` (the format is
 * executor/report/profile.h's, described in docs/zbrun.md) turned into cost-table
 * entries for the plan search (`zbplan --profile FILE`).
 *
 * A profile covers a candidate when the model's shape (hidden, heads,
 * ffn_hidden, seq_len, vocab), precision, fused_attention and device name
 * and the candidate's tp and micro-batch equal the profile's (and, on the
 * CPU, the threads per rank the candidate's rank model gives, when the
 * profile says how many it ran with): the per-layer,
 * embedding and head pass times are then measured ones, and the p2p time of
 * one message is the measured send. Per pass kind, the vstage rows
 * (layers, embed, head -> measured time) are fitted by least squares to a
 * time per layer, for the embedding and for the head; when the rows cannot
 * separate them (too few, singular or a negative solution), the time per
 * layer comes from rows of layers only (else the analytic one scaled by
 * measured/analytic over all rows) and each row's remainder goes to its
 * embedding or head (cost/profile.c, fit_rows). A profile
 * from a fused-backward schedule (BW only) splits BW into B and W in the
 * analytic proportion. When also dp and pp equal the profile's, the
 * measured time after the pipeline (gradient sync, norm, optimizer) replaces
 * the analytic all-reduce and optimizer terms.
 */
#ifndef ZB_PLANNER_PROFILE_H
#define ZB_PLANNER_PROFILE_H

#include <stdbool.h>

#include "common/zb_error.h"
#include "common/zb_model.h"
#include "planner/cost/cost.h"

#define ZB_PROFILE_MAX_STAGES 512

typedef struct {
    int layers;
    bool embed, head;
    double t[4];           /* measured F, B, W, BW (s) */
    int samples[4];
} zb_profile_row;

typedef struct zb_profile {
    char path[512];
    int hidden, heads, ffn_hidden, seq_len, vocab;
    zb_precision precision;
    bool fused_attention;
    char device[32];
    int dp, tp, pp, micro_batch;
    int threads;           /* threads per rank it ran with (0: not given) */
    double step_s, overhead_s, p2p_s;
    int n;                 /* rows */
    zb_profile_row rows[ZB_PROFILE_MAX_STAGES];
} zb_profile;

/* Read and check a profile; errors are ZB_EINPUT "file:line:col: ...". */
zb_status zb_profile_load(const char *path, zb_profile *out, zb_err *err);

/* Does p cover (model, tp, micro_batch)? m is the rank model
 * (zb_cost_cpu_rank_share set its device's threads). */
bool zb_profile_covers(const zb_profile *p, const zb_model *m, int tp,
                       int micro_batch);

/* When p covers (m, tp, micro_batch): replace ct's layer, embedding and
 * head pass times and its p2p times by measured ones (ct holds the
 * analytic table of the same (m, tp, micro_batch)) and return true;
 * otherwise leave ct alone and return false. p may be NULL. */
bool zb_profile_apply(const zb_profile *p, const zb_model *m, int tp,
                      int micro_batch, zb_cost_table *ct);

/* Does p also cover the layout, so that its measured overhead_s stands for
 * the all-reduce and optimizer terms? */
bool zb_profile_covers_layout(const zb_profile *p, int dp, int tp, int pp);

#endif
