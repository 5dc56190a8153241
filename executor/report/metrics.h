/* metrics.h - zbrun --metrics: one record per finished step, streamed to a
 * file while training (docs/zbrun.md, "Metrics while training").
 *
 * JSON Lines (one object per line) or CSV (a header, then one row per step):
 * step, steps, timestamp (Unix seconds, UTC), tokens_seen, loss, lr,
 * grad_norm, tokens_per_s, step_ms, elapsed_s, mfu (0..1), mem_bytes (each
 * global rank's peak so far; CSV: a column mem_bytes_rankR per rank) and
 * val_loss (JSON: only when an evaluation was due; CSV: empty otherwise).
 * The validation before the first step is a record of its own with only
 * step (the last step done, 0 on a fresh start), steps, timestamp,
 * tokens_seen and val_loss. Every
 * record is flushed when written, so `tail -f` follows the run. The file is
 * written in place, not atomically: after a failed run it holds the steps
 * that finished. Used by rank 0 only (the callback's thread). */
#ifndef ZB_METRICS_H
#define ZB_METRICS_H

#include <stdbool.h>
#include <stdio.h>

#include "common/zb_error.h"
#include "executor/base.h"

typedef enum { ZB_METRICS_JSONL, ZB_METRICS_CSV } zb_metrics_format;

typedef struct {
    FILE *f;
    const char *path;
    zb_metrics_format fmt;
    int world;        /* CSV: mem_bytes_rankR columns */
    zb_err err;       /* the first write failure; steps after it are dropped */
    bool failed;
} zb_metrics;

/* The format --metrics-format names ("jsonl", "csv"), or, for NULL, the
 * one path's extension implies (".csv": CSV, else JSON Lines). */
zb_status zb_metrics_format_of(const char *name, const char *path,
                               zb_metrics_format *out, zb_err *err);

/* Create (truncate) path, or with append (--resume) add to its end, and
 * write the CSV header (world: the plan's ranks) unless the file already
 * has lines. ZB_EIO naming --metrics and the path when it cannot be
 * opened. */
zb_status zb_metrics_open(zb_metrics *m, const char *path, zb_metrics_format fmt,
                          int world, bool append, zb_err *err);

/* Append one step (or the initial evaluation) and flush. A failure is kept
 * in m->err and ends the writing; zb_metrics_close reports it. */
void zb_metrics_step(zb_metrics *m, const zb_step_info *s);

/* Close; ZB_EIO when any write or the close failed. A NULL or never
 * opened m is ZB_OK. */
zb_status zb_metrics_close(zb_metrics *m, zb_err *err);

#endif
