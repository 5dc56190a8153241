/* preflight.h - zbrun's checks before the first step, so that a run never
 * trains for hours and then finds it cannot write what was asked for:
 * every output file can be created (its folder exists and is writable; it
 * is not a folder), no two outputs name the same file, and the checkpoint
 * folder is usable and held by this run only (checkpoint.h's lock). */
#ifndef ZB_PREFLIGHT_H
#define ZB_PREFLIGHT_H

#include "common/zb_error.h"

/* names[i] is the option ("--report") of paths[i]; NULL paths are skipped.
 * ZB_EINPUT "--report nodir/r.yaml: cannot create: No such file or
 * directory" on the first that fails. Creates and removes a temporary file
 * next to each regular output; writes nothing else. */
zb_status zb_preflight_outputs(const char *const *names, const char *const *paths,
                               int n, zb_err *err);

/* Make the checkpoint folder, lock it (*lock_fd, release with
 * zb_ckpt_unlock) and check a file can be created in it. */
zb_status zb_preflight_checkpoints(const char *dir, int *lock_fd, zb_err *err);

#endif
