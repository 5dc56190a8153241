/* guard.h - zbplan's checks of its input and output paths before any work:
 * the model must not be a zb plan (that is zbrun's input), and no output
 * may be written over a file the command reads, a checkpoint, or be
 * unwritable (the rules are common/zb_files.h's; this file only names
 * each command's inputs). */
#ifndef ZB_GUARD_H
#define ZB_GUARD_H

#include "common/zb_error.h"

/* An input of a command: what names it in messages ("the model"). */
typedef struct {
    const char *what, *path;   /* path NULL: not given */
} zb_guard_in;

/* ZB_EINPUT when output out_path of option opt ("-o", "--export") breaks a
 * rule of zb_files.h against the n inputs in[]: "-o m.yaml would
 * overwrite the model m.yaml". Inputs that do not exist are skipped: their
 * readers report them. */
zb_status zb_guard_output(const char *opt, const char *out_path,
                          const zb_guard_in *in, int n, zb_err *err);

/* The plan command: ZB_EINPUT when model_path holds a plan ("this is a
 * plan; run it with zbrun"), else zb_guard_output of -o out_path against
 * the model and the --profile file (NULL: none). */
zb_status zb_guard_paths(const char *model_path, const char *profile_path,
                         const char *out_path, zb_err *err);

#endif
