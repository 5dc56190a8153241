/* data.h - training data: a token file read once at open, and the
 * deterministic choice of which tokens each sequence of each step sees.
 *
 * Kinds (model.training.data.kind):
 *   text    every byte of the file is a token (vocab must be >= 256)
 *   shards  one llm.c token shard: a header of 256 little-endian int32
 *           (magic 20240520, version 1, token count), then the tokens as
 *           little-endian uint16; file size must be exactly 1024 + 2*count;
 *           every token must be < vocab. (Several shards: concatenate the
 *           token parts into one shard first.)
 * The path is model.training.data_path, already resolved by the model
 * loader relative to the model file. An empty path with kind text means the
 * built-in corpus (models/data/corpus.txt compiled into the program,
 * corpus.S; messages name it ZB_DATA_BUILTIN); empty with shards is an
 * error. The data must hold at least seq_len + 1 tokens.
 *
 * Batches: sequence `seq` (0 .. global_batch-1) of step `step` is seq_len
 * tokens; its targets are the same tokens shifted by one. Its first token:
 *   random (data.order, the default): an offset drawn uniformly from
 *     [0, count - seq_len - 1] by a counter-based hash of (seed, step, seq);
 *   sequential: (b * global_batch + seq) * seq_len with b = step mod nb,
 *     nb = (count - 1) / (global_batch * seq_len): consecutive windows of
 *     global_batch*seq_len + 1 tokens from the start of the file, wrapping
 *     around, which is what llm.c's loader does without shuffling (a DP
 *     rank's sequences are consecutive, so it reads its own slice). The
 *     file must hold global_batch * seq_len + 1 tokens.
 * The validation source (training.val) is always sequential.
 * A batch therefore depends only on (file, seed, step, seq), never on the
 * parallel layout: DP rank d,
 * microbatch j of m covers global sequences (d*m + j)*micro_batch + i,
 * i = 0 .. micro_batch-1 (zb_data_microbatch).
 *
 * Errors: ZB_EINPUT "path: what is wrong" for bad content, ZB_EIO when the
 * file cannot be opened or read.
 */
#ifndef ZB_DATA_H
#define ZB_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "common/zb_model.h"

typedef struct zb_data zb_data;

#define ZB_DATA_BUILTIN "(built-in corpus)"

/* For a model read from the plan at plan_path, before zb_data_open: a
 * relative path that does not exist as written (from the working
 * directory, where zbplan wrote it from) but does from the plan's folder
 * becomes that; a path found nowhere, or an empty one with kind shards, is
 * ZB_EINPUT "plan:line:col: training.data.path 'x' not found (...)". */
zb_status zb_data_locate(const char *plan_path, zb_model *m, zb_err *err);

/* The training source (training.data) ... */
zb_status zb_data_open(const zb_model *m, zb_data **out, zb_err *err);
/* ... and the validation source (training.val; sequential order). */
zb_status zb_data_open_val(const zb_model *m, zb_data **out, zb_err *err);
void zb_data_free(zb_data *d);

/* Tokens in the file. */
size_t zb_data_tokens(const zb_data *d);

/* One sequence: tokens, targets [seq_len]. seq >= 0, step >= 0. */
zb_status zb_data_batch(const zb_data *d, int step, int seq, int *tokens,
                        int *targets, zb_err *err);

/* A microbatch: tokens, targets [micro_batch, seq_len] for DP rank dp_rank
 * and microbatch j of m per DP rank (see above). */
zb_status zb_data_microbatch(const zb_data *d, int step, int dp_rank, int j,
                             int m, int micro_batch, int *tokens, int *targets,
                             zb_err *err);

#endif
