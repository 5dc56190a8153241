/* guard.h - zbplan's checks of its input and output paths before any work:
 * the model must not be a zb plan (that is zbrun's input), and the plan
 * must not be written over the model it was made from. */
#ifndef ZB_GUARD_H
#define ZB_GUARD_H

#include "common/zb_error.h"

/* ZB_EINPUT when model_path holds a plan ("this is a plan; run it with
 * zbrun") or when out_path is the same file as model_path (symbolic links
 * followed). Unreadable files pass: the model reader reports those. */
zb_status zb_guard_paths(const char *model_path, const char *out_path, zb_err *err);

#endif
