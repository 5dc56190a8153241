/* tensorboard.h - zbrun --tensorboard DIR: the step records as TensorBoard
 * event files, written directly (no TensorFlow, no protobuf library), so a
 * zb run plots beside PyTorch's and Megatron-LM's runs.
 *
 * A file DIR/events.out.tfevents.<unix seconds>.<host>.<pid>.zbrun (each
 * run a new file; TensorBoard reads every file of a folder) holds TFRecords:
 *   uint64 length, uint32 masked_crc(length), byte data[length],
 *   uint32 masked_crc(data), little-endian; masked_crc(x) = ((c >> 15) |
 *   (c << 17)) + 0xa282ead8 with c = CRC32C(x).
 * Each record's data is a tensorflow.Event protobuf (event.proto): the first
 * has wall_time and file_version "brain.Event:2"; then one per step with
 * wall_time (Unix seconds), step and a Summary of simple_value scalars:
 * train/loss, train/lr, train/grad_norm, train/tokens_per_s, train/step_ms,
 * train/mfu, train/tokens_seen, train/mem_bytes_max (the fullest rank's
 * peak), and val/loss when an evaluation was due (the evaluation before
 * the first step: val/loss alone). Every record is flushed. The CRC32C is
 * the caller's (executor/state/crc32c.h: report/ does not include state/).
 * Used by rank 0 only; single-threaded. */
#ifndef ZB_TENSORBOARD_H
#define ZB_TENSORBOARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/zb_error.h"
#include "executor/base.h"

/* crc(crc of nothing = 0, data, n) continues a CRC32C (Castagnoli). */
typedef uint32_t (*zb_tb_crc_fn)(uint32_t crc, const void *data, size_t n);

typedef struct {
    FILE *f;
    char path[1024];
    zb_tb_crc_fn crc;
    zb_err err;       /* the first write failure; records after it are dropped */
    bool failed;
} zb_tb;

/* Create DIR when missing (its parent must exist), then the event file,
 * and write its first record. ZB_EINPUT "--tensorboard DIR: cannot create
 * ..." when either cannot be made (a bad path: nothing was trained), ZB_EIO
 * when the first record cannot be written. */
zb_status zb_tb_open(zb_tb *t, const char *dir, zb_tb_crc_fn crc, zb_err *err);

/* Append one step's record (or the initial evaluation's) and flush; a
 * failure is kept in t->err and ends the writing (zb_tb_close says it). */
void zb_tb_step(zb_tb *t, const zb_step_info *s);

/* Close; ZB_EIO when a write or the close failed. NULL or unopened: ZB_OK. */
zb_status zb_tb_close(zb_tb *t, zb_err *err);

/* The protobuf encoder, for tests: an Event with wall_time and step, then
 * file_version when non-NULL, else a Summary of n (tags[i], values[i])
 * simple values, into buf[cap]. Returns the bytes written, or 0 when cap
 * is too small. */
size_t zb_tb_event(uint8_t *buf, size_t cap, double wall_time, long long step,
                   const char *file_version, const char *const *tags,
                   const float *values, int n);

#endif
