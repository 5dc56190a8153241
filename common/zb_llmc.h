/* zb_llmc.h - the header of an llm.c GPT-2 checkpoint (gpt2_124M.bin and
 * the files llm.c's trainers write), and where each tensor lies in the file.
 *
 * File: 256 little-endian int32, then the parameters, no gaps:
 *   header[0] magic 20240326, [1] version 3 (fp32) or 5 (bf16),
 *   [2] maxT, [3] V, [4] L, [5] NH, [6] C, [7] Vp (padded vocab, >= V);
 *   every other header word is 0 when written here.
 *   Tensors in this order (llm.c's), each row-major, layers stacked:
 *     wte [Vp, C], wpe [maxT, C], ln1w [L, C], ln1b [L, C],
 *     qkvw [L, 3C, C], qkvb [L, 3C], attprojw [L, C, C], attprojb [L, C],
 *     ln2w [L, C], ln2b [L, C], fcw [L, 4C, C], fcb [L, 4C],
 *     fcprojw [L, C, 4C], fcprojb [L, C], lnfw [C], lnfb [C].
 * Element size 4 (version 3, float) or 2 (version 5, bfloat16).
 *
 * Used by the model loader (shapes of `model.init`) and by the executor
 * (executor/state/llmc.h: per-rank loading and export).
 */
#ifndef ZB_LLMC_H
#define ZB_LLMC_H

#include <stddef.h>
#include <stdint.h>

#include "common/zb_error.h"

#define ZB_LLMC_MAGIC 20240326
#define ZB_LLMC_V_FP32 3
#define ZB_LLMC_V_BF16 5
#define ZB_LLMC_HEADER_INTS 256
#define ZB_LLMC_HEADER_BYTES (ZB_LLMC_HEADER_INTS * 4)

/* The 16 tensors, in file order. */
enum {
    ZB_LLMC_WTE, ZB_LLMC_WPE, ZB_LLMC_LN1W, ZB_LLMC_LN1B, ZB_LLMC_QKVW,
    ZB_LLMC_QKVB, ZB_LLMC_ATTPROJW, ZB_LLMC_ATTPROJB, ZB_LLMC_LN2W,
    ZB_LLMC_LN2B, ZB_LLMC_FCW, ZB_LLMC_FCB, ZB_LLMC_FCPROJW, ZB_LLMC_FCPROJB,
    ZB_LLMC_LNFW, ZB_LLMC_LNFB, ZB_LLMC_N
};

typedef struct {
    int version;            /* 3 or 5 */
    int maxT, V, L, NH, C, Vp;
} zb_llmc_hdr;

/* Read and check the header of `path`: magic, version, positive shapes,
 * Vp >= V, NH dividing C, and the file size equal to header + parameters.
 * Problems with the content are ZB_EINPUT "path: what is wrong"; a file
 * that cannot be opened is ZB_EINPUT too (a name the user gave). */
zb_status zb_llmc_read_header(const char *path, zb_llmc_hdr *h, zb_err *err);

/* The 1024 header bytes of h (little-endian) into out. */
void zb_llmc_header_bytes(const zb_llmc_hdr *h, unsigned char *out);

/* Elements of tensor k (all layers), and of one layer's slice of it. */
size_t zb_llmc_numel(const zb_llmc_hdr *h, int k);
size_t zb_llmc_layer_numel(const zb_llmc_hdr *h, int k);
/* First element of tensor k in the parameter part (elements, not bytes). */
size_t zb_llmc_offset(const zb_llmc_hdr *h, int k);
/* All parameters; bytes per element (4 or 2). */
size_t zb_llmc_total(const zb_llmc_hdr *h);
int zb_llmc_elem_bytes(const zb_llmc_hdr *h);

/* bfloat16 <-> float: widening is exact; narrowing rounds to nearest even
 * (NaN stays NaN), as llm.c's own export does. */
float zb_bf16_to_f32(uint16_t b);
uint16_t zb_f32_to_bf16(float f);

#endif
