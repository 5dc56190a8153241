/* forced.c - see cli/forced.h. */
#include "planner/cli/forced.h"

zb_status zb_explain_forced(const zb_model *m, const zb_search_opts *o,
                            const char *model_path, zb_err *err) {
    int gb = m->train.global_batch, dp = o->dp;
    if (dp <= 0) return ZB_OK;
    if (gb % dp)
        return zb_fail(err, ZB_EINPUT, "--dp %d does not divide "
                       "training.global_batch %d (%s)", dp, gb, model_path);
    int per = gb / dp, mb = o->micro_batch > 0 ? o->micro_batch : m->train.micro_batch;
    if (mb <= 0 || per % mb == 0) return ZB_OK;
    if (o->micro_batch > 0)
        return zb_fail(err, ZB_EINPUT, "--dp %d leaves %d sequence(s) of "
                       "global_batch %d per data-parallel rank, which --micro-batch "
                       "%d does not divide", dp, per, gb, mb);
    return zb_fail(err, ZB_EINPUT, "--dp %d leaves %d sequence(s) of "
                   "training.global_batch %d per data-parallel rank, which "
                   "training.micro_batch: %d (%s) does not divide; lower --dp or "
                   "pass --micro-batch", dp, per, gb, mb, model_path);
}
