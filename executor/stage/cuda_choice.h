/* cuda_choice.h - what the CUDA backend decides from the plan alone, with
 * no device: which attention a stage runs, which head sizes that attention
 * takes, and which op-table configurations zb_ops_cuda accepts. Pure
 * functions (no CUDA calls), built in every build, so the CPU unit tests
 * (tests/unit/test_cuda_choice.c) pin the decisions the GPU path makes.
 *
 * Attention: with precision bf16 the CUDA stage runs attention as cuBLAS
 * batched GEMMs around the softmax kernels (tensor cores; any head size);
 * with fp32 it runs the fused online-softmax kernel, compiled for head
 * sizes 16, 32, 64 and 128 only (kernels/cuda/attention.cu; the CUDA tests
 * check that kernel's own list equals zb_cuda_fused_head_ok).
 */
#ifndef ZB_CUDA_CHOICE_H
#define ZB_CUDA_CHOICE_H

#include <stdbool.h>
#include <stddef.h>

/* True when the fused fp32 attention kernel takes head size hs. */
bool zb_cuda_fused_head_ok(int hs);

/* True when a CUDA stage of this precision runs the GEMM attention
 * (zb_ops_cuda_cfg.attn_gemm): bf16 does, fp32 runs the fused kernel. */
bool zb_cuda_attn_gemm(bool bf16);

/* NULL when a CUDA stage can run attention for `heads` heads over `hidden`
 * under tensor parallelism tp (hidden/tp columns, heads/tp heads per
 * rank), else why not, written into buf[n] (one line, no newline) and
 * returned. */
const char *zb_cuda_attention_refusal(bool bf16, int hidden, int heads,
                                      int tp, char *buf, size_t n);

/* NULL when zb_ops_cuda accepts bf16 activations with this attention,
 * else the reason (a static string): bf16 activations need attn_gemm. */
const char *zb_cuda_ops_cfg_refusal(bool bf16, bool attn_gemm);

#endif
