/* preflight.h - zbrun's check of its checkpoint folder before the first
 * step, so that a run never trains for hours and then finds it cannot
 * save: the folder is usable and held by this run only (checkpoint.h's
 * lock). The output files are checked by common/zb_files.h
 * (run_checks.h's zb_run_check_outputs). */
#ifndef ZB_PREFLIGHT_H
#define ZB_PREFLIGHT_H

#include <stdbool.h>

#include "common/zb_error.h"

/* A run that writes checkpoints (writes): make the folder, lock it
 * exclusively (*lock_fd, release with zb_ckpt_unlock), with fresh (no
 * --resume, no --overwrite-checkpoints) refuse a folder that holds a
 * checkpoint (zb_ckpt_check_fresh), and check a file can be created in
 * it. A run that only resumes: a shared lock on an existing folder, so no
 * other run rotates it while this one reads (none when it is missing). */
zb_status zb_preflight_checkpoints(const char *dir, bool writes, bool fresh,
                                   int *lock_fd, zb_err *err);

#endif
