/* preflight.h - zbrun's checks before the first step, so that a run never
 * trains for hours and then finds it cannot write what was asked for:
 * every output file can be created (its folder exists and is writable; it
 * is not a folder; its name is not empty), no two outputs name the same
 * file (after following links and resolving the folder: "a" and "./a"),
 * no output is one of the run's inputs, and the checkpoint
 * folder is usable and held by this run only (checkpoint.h's lock). */
#ifndef ZB_PREFLIGHT_H
#define ZB_PREFLIGHT_H

#include <stdbool.h>

#include "common/zb_error.h"

/* names[i] is the option ("--report") of paths[i]; NULL paths are skipped.
 * ZB_EINPUT "--report nodir/r.yaml: cannot create: No such file or
 * directory", "--report: the file name is empty" or "--report a and
 * --trace ./a name the same file" on the first that fails. Creates and removes a temporary file
 * next to each regular output; writes nothing else. */
zb_status zb_preflight_outputs(const char *const *names, const char *const *paths,
                               int n, zb_err *err);

/* No output may be an input of the run: names[i]/paths[i] as above,
 * in_names[k]/inputs[k] the inputs ("the plan", "the data file"; NULL or
 * empty: none). Compared by device and inode after following links, so a
 * link or a hard link to an input is caught too. ZB_EINPUT "--report
 * plan.yaml would overwrite the plan plan.yaml". */
zb_status zb_preflight_inputs(const char *const *names, const char *const *paths,
                              int n, const char *const *in_names,
                              const char *const *inputs, int n_in, zb_err *err);

/* A run that writes checkpoints (writes): make the folder, lock it
 * exclusively (*lock_fd, release with zb_ckpt_unlock), with fresh (no
 * --resume, no --overwrite-checkpoints) refuse a folder that holds a
 * checkpoint (zb_ckpt_check_fresh), and check a file can be created in
 * it. A run that only resumes: a shared lock on an existing folder, so no
 * other run rotates it while this one reads (none when it is missing). */
zb_status zb_preflight_checkpoints(const char *dir, bool writes, bool fresh,
                                   int *lock_fd, zb_err *err);

#endif
