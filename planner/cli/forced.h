/* forced.h - forced options that can never give a layout, named by their
 * real cause before the search runs (the search itself can only say that
 * no layout was left). */
#ifndef ZB_FORCED_H
#define ZB_FORCED_H

#include "common/zb_error.h"
#include "common/zb_model.h"
#include "planner/search/search.h"

/* ZB_EINPUT when a forced --dp does not divide training.global_batch, or
 * leaves each data-parallel rank a batch that the fixed micro-batch
 * (--micro-batch, else the model's training.micro_batch) does not divide;
 * the message names the option, the key and model_path. ZB_OK otherwise. */
zb_status zb_explain_forced(const zb_model *m, const zb_search_opts *o,
                            const char *model_path, zb_err *err);

#endif
