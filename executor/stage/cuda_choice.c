/* cuda_choice.c - see cuda_choice.h. */
#include "executor/stage/cuda_choice.h"

#include <stdio.h>

bool zb_cuda_fused_head_ok(int hs) {
    return hs == 16 || hs == 32 || hs == 64 || hs == 128;
}

bool zb_cuda_attn_gemm(bool bf16) { return bf16; }

const char *zb_cuda_attention_refusal(bool bf16, int hidden, int heads,
                                      int tp, char *buf, size_t n) {
    if (hidden <= 0 || heads <= 0 || tp <= 0 || hidden % heads ||
        heads % tp) {
        snprintf(buf, n, "cuda stage: hidden %d, heads %d, tp %d do not "
                 "split into whole heads per rank", hidden, heads, tp);
        return buf;
    }
    if (zb_cuda_attn_gemm(bf16)) return NULL; /* GEMMs: any head size */
    int hs = hidden / heads;
    if (zb_cuda_fused_head_ok(hs)) return NULL;
    snprintf(buf, n, "cuda stage: head size %d (hidden %d / heads %d) is not "
             "one the fused fp32 attention kernel supports (16, 32, 64, 128); "
             "precision bf16 runs attention as GEMMs and takes any head size",
             hs, hidden, heads);
    return buf;
}

const char *zb_cuda_ops_cfg_refusal(bool bf16, bool attn_gemm) {
    if (bf16 && !attn_gemm)
        return "cuda ops: bf16 activations need the GEMM attention "
               "(attn_gemm; the fused kernel is fp32)";
    return NULL;
}
