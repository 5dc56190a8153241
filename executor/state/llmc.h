/* llmc.h - GPT-2 weights in and out in llm.c's checkpoint format
 * (common/zb_llmc.h describes the file).
 *
 * The model's tensors and the file's: a rank's parameter table
 * (stage_params.h) gives, for every tensor it holds, its global layer, its
 * id, its full shape and, per local element, the index in the full tensor
 * (zb_ptable_full_index, whatever the shard kind). Block tensor id k of
 * layer l is llm.c tensor 2 + k, layer slice l; wte (and the head's tied
 * copy), wpe, lnf.w, lnf.b map to wte, wpe, lnfw, lnfb. The full tensor's
 * columns must equal the file's; its rows may be fewer: the model's vocab
 * V of the file's padded Vp rows of wte, its seq_len of maxT rows of wpe.
 * A full index past the file's tensor (a shard padded beyond Vp) reads as
 * 0 and is not written back.
 *
 * Load: each rank reads only its own elements (pread of runs of contiguous
 * elements), never the whole file. Export: from every rank's flat
 * parameter buffer (dp rank 0 of each (pp, tp) coordinate; tied copies
 * skipped), one llm.c tensor at a time; rows the model does not hold (wte
 * padding rows, wpe rows past seq_len) are copied from the model's init
 * checkpoint when it has one and have the same header shapes, else 0. The
 * file is written atomically (zb_afile). Load then export of the same
 * model gives the same bytes.
 */
#ifndef ZB_EXEC_LLMC_H
#define ZB_EXEC_LLMC_H

#include "common/zb_llmc.h"
#include "common/zb_plan.h"
#include "executor/stage/stage.h"
#include "executor/stage/stage_params.h"

/* Fill params [pt->floats] (host memory; pt built for this rank) from the
 * checkpoint at path, whose header must match the plan's model (ZB_EINPUT
 * naming both values otherwise). */
zb_status zb_llmc_load(const char *path, const zb_plan *plan,
                       const zb_ptable *pt, float *params, zb_err *err);

/* The same for the stage of (pp_rank, tp_rank): its parameter buffer. */
zb_status zb_llmc_load_stage(const char *path, const zb_plan *plan,
                             int pp_rank, int tp_rank, zb_stage *st,
                             zb_err *err);

/* The header an export of the plan's model writes: the init checkpoint's
 * maxT and Vp when there is one, else maxT = seq_len and Vp = V rounded up
 * to a multiple of 128 (llm.c's padding); version 5 (bf16) when the
 * training precision is bf16, else 3 (fp32). */
void zb_llmc_export_header(const zb_plan *plan, zb_llmc_hdr *h);

/* Write the model held in params[world] (global rank r's flat buffer, as
 * zb_run_result.params) to path as an llm.c checkpoint. */
zb_status zb_llmc_export(const char *path, const zb_plan *plan,
                         float *const *params, zb_err *err);

#endif
