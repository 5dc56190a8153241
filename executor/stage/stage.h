/* stage.h - one rank's part of the model (GPT-2 or Llama-shaped blocks,
 * the model's keys): the chunks (virtual stages) its pipeline rank
 * holds, sharded for its TP rank, with flat parameter,
 * gradient and AdamW buffers, and the four passes F, B, W, BW per
 * microbatch. One stage program (gpt.c, gpt_passes.c) runs on the op
 * table (ops.h) of the backend chosen in zb_stage_cfg: ops_cpu.c with
 * kernels/ (OpenBLAS), or ops_cuda.cu with cuBLAS and kernels/cuda/ when
 * zbrun is built with CUDA (ZB_HAVE_CUDA); every layout, schedule and
 * recompute setting runs the same orchestration on both, and the plan
 * interpreter (runtime.c) does not change.
 *
 * Memory: "backend memory" below is host memory for cpu and device memory
 * (of cfg.device) for cuda; passes only enqueue work on the cuda backend,
 * and the calls that return host numbers (loss sum, grad sum of squares,
 * params_to_host, save) wait for it.
 *
 * Shapes: a microbatch is B = plan->micro_batch sequences of T = seq_len
 * tokens; activations between stages are [B, T, C] in the backend's
 * activation type (fp32, or bf16 on CUDA under precision bf16), C = hidden.
 * TP (Megatron): QKV and MLP-up column-parallel, attention projection and
 * MLP-down row-parallel with an all-reduce over the TP group in F (after
 * the row-parallel matmul) and in B (the input gradient of the
 * column-parallel matmuls). The token embedding and the LM head are
 * vocabulary-parallel (rows split over TP, stage_params.h); LayerNorms,
 * the position embedding and biases of row-parallel layers are replicated.
 *
 * Transfers: the runtime receives into act_in/grad_in before a pass and
 * sends act_out/grad_out after it. When the neighbouring virtual stage is on
 * this same rank (V placement's turn), the stage passes the data itself and
 * the runtime moves nothing (zb_lower makes no op for it).
 *
 * Activation memory: the stage keeps per chunk a pool of slots sized from the
 * plan's schedule (the most microbatches in flight on that chunk); a
 * microbatch takes a slot at its first touch (act_in or F) and returns it
 * after W (or BW). No allocation after zb_stage_new.
 */
#ifndef ZB_STAGE_H
#define ZB_STAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "common/zb_plan.h"
#include "executor/comm/transport.h"

typedef struct zb_stage zb_stage;

/* Where a stage computes. */
typedef enum {
    ZB_BACKEND_CPU = 0,  /* host, kernels/ + OpenBLAS (the default) */
    ZB_BACKEND_CUDA      /* one CUDA device, kernels/cuda/ + cuBLAS */
} zb_backend;

typedef struct {
    const zb_plan *plan;
    int pp_rank, dp_rank, tp_rank;
    zb_transport *tr;            /* for TP all-reduces inside passes */
    const zb_group *tp_group;    /* this rank's TP group (n = tp) */
    zb_backend backend;          /* 0 = cpu */
    int device;                  /* cuda: device ordinal (after
                                    CUDA_VISIBLE_DEVICES); cpu: ignored */
} zb_stage_cfg;

/* "cpu" / "cuda". */
const char *zb_backend_name(zb_backend b);
/* Was this build linked with the CUDA backend? */
bool zb_backend_cuda_built(void);
/* CUDA devices visible to this process (0 without CUDA or without a
 * device; never fails). */
int zb_backend_cuda_devices(void);
/* "NAME, X GiB" of CUDA device `device` into buf ("?" when unknown). */
void zb_backend_cuda_device_name(int device, char *buf, size_t n);

/* Build the stage, allocate everything, initialise parameters from
 * plan->model.train.seed so that every parallel layout starts from the same
 * full model (each tensor is drawn whole from a generator seeded by
 * (seed, layer, tensor) and this rank keeps its shard). */
zb_status zb_stage_new(const zb_stage_cfg *cfg, zb_stage **out, zb_err *err);
void zb_stage_free(zb_stage *st);

/* Floats in one inter-stage message: a [B, T, C] activation in the
 * backend's storage type (ops.h act_dtype) seen as raw floats, B*T*C with
 * fp32 activations, B*T*C/2 (rounded up) with bf16. */
size_t zb_stage_msg_floats(const zb_stage *st);

/* Transfer buffers of (chunk, mb), zb_stage_msg_floats raw floats each
 * (moved, never summed); see the header comment. */
float *zb_stage_act_in(zb_stage *st, int chunk, int mb);
float *zb_stage_act_out(zb_stage *st, int chunk, int mb);
float *zb_stage_grad_in(zb_stage *st, int chunk, int mb);
float *zb_stage_grad_out(zb_stage *st, int chunk, int mb);

/* Passes. tokens/targets: [B*T] ints of this microbatch, used by the chunk
 * holding the embedding (tokens) and the one holding the head (targets);
 * others may pass NULL. The head's F also computes the loss and the
 * gradient of the logits, scaled by loss_scale (1 / tokens in the global
 * batch), so that summed gradients are those of the mean loss. */
zb_status zb_stage_forward(zb_stage *st, int chunk, int mb, const int *tokens,
                           const int *targets, float loss_scale, zb_err *err);
zb_status zb_stage_backward_b(zb_stage *st, int chunk, int mb, zb_err *err);
zb_status zb_stage_backward_w(zb_stage *st, int chunk, int mb, zb_err *err);
zb_status zb_stage_backward_bw(zb_stage *st, int chunk, int mb, zb_err *err);

/* Vocabulary parallelism over the pipeline (plan->vocab_parallel 1 or 2;
 * fp32 activations; with tp > 1 over pp x tp; docs/zbrun.md): every rank
 * holds a shard of the token table (tied: also the output layer) and runs
 * the steps of
 * zb_lower_vocab (common/zb_lower.h, `what` = zb_vocab_what) on buffers
 * kept per microbatch for the step. The embedding chunk's F reads the
 * summed partial embeddings instead of a lookup, the head chunk's F
 * writes X (the final norm's output) instead of the logits, its B starts
 * from the summed dX parts, and S/T are the shard's output layer
 * (vocab_head.h): T adds the loss on the last stage's rank only.
 *   S: targets [B*T] of mb. T: loss_scale as F's.
 *   op: EMB (tokens [B*T] of mb), EMB_SUM, DX2 (loss_scale), DX_SUM,
 *       EMB_BWD; others fail.
 *   stats: mb's C1 table [p, 3, N] fp64 with this rank's statistics in
 *       its slot and zeros elsewhere, n doubles of host memory (the
 *       transport's allreduce_f64), to be all-reduced over the pipeline
 *       group before T (variant 1) or DX2 (variant 2).
 *   msg: the buffer (backend memory) of a vocabulary message (EMB, X, DX,
 *       DEMB) of mb, sent to or received from pipeline rank peer,
 *       zb_stage_msg_floats
 *       floats; NULL for a bad argument or without the plan key. */
zb_status zb_stage_vocab_s(zb_stage *st, int mb, const int *targets,
                           zb_err *err);
zb_status zb_stage_vocab_t(zb_stage *st, int mb, float loss_scale,
                           zb_err *err);
zb_status zb_stage_vocab_op(zb_stage *st, int what, int mb, const int *tokens,
                            float loss_scale, zb_err *err);
double *zb_stage_vocab_stats(zb_stage *st, int mb, size_t *n);
float *zb_stage_vocab_msg(zb_stage *st, int what, int mb, int peer,
                          bool send);

/* Before the first transfer (the CUDA runs call it at set-up): every pass
 * kind (F, B, W, BW) once on every chunk, with microbatch 0, token 0 as
 * every input and zero activations and gradients from neighbours, then
 * gradients, the loss sum and the pass count back to zero and a wait for
 * the device. What a pass does once (cuBLAS's workspace and plans, the
 * first launch of each kernel) then never waits for the device inside a
 * step, where a wait would hold back queued sends (docs/gpu.md). The
 * parameters and what a step computes afterwards are unchanged. Every TP
 * rank of a stage must call it (the passes' TP all-reduces). */
zb_status zb_stage_warmup(zb_stage *st, zb_err *err);

/* Forward-only evaluation: give back (chunk, mb)'s activation slot after
 * its F (and the send of its output) without B or W. No-op when it holds
 * none. */
void zb_stage_drop(zb_stage *st, int chunk, int mb);

/* Sum of per-token losses computed by this stage's head since the last
 * zb_stage_zero_grads (0 without a head). */
double zb_stage_loss_sum(const zb_stage *st);

/* The first failure a call that cannot return one kept (zb_stage_loss_sum,
 * zb_stage_grad_sumsq, zb_stage_zero_grads: an asynchronous CUDA fault
 * first shows there), copied into err; ZB_OK when none. */
zb_status zb_stage_failure(const zb_stage *st, zb_err *err);

/* Start of a step: gradients and the loss sum to zero. */
void zb_stage_zero_grads(zb_stage *st);

/* Flat parameter and gradient buffers (backend memory), n floats. */
float *zb_stage_params(zb_stage *st, size_t *n);
float *zb_stage_grads(zb_stage *st, size_t *n);

/* Copy the n parameters (n = what zb_stage_params reports) to host memory
 * dst, after all work enqueued so far. */
zb_status zb_stage_params_to_host(zb_stage *st, float *dst, size_t n,
                                  zb_err *err);

/* Replace the n parameters with host memory src (llm.c initial weights). */
zb_status zb_stage_params_from_host(zb_stage *st, const float *src, size_t n,
                                    zb_err *err);

/* Gradient of the tied token embedding held here (first or last pipeline
 * stage when they are on different pipeline ranks), to be summed over the
 * embedding group; NULL when there is none to sync. */
float *zb_stage_tied_grad(zb_stage *st, size_t *n);
/* Gradients of chunk `chunk` but the tied table (contiguous, n floats):
 * under a DUAL plan (dualpipe), what this rank sums with the other copy of
 * the same stage (chunk 1 - chunk of pipeline rank pp-1-rank) before the
 * optimizer, so the copies stay equal. NULL, n 0 for a bad chunk. */
float *zb_stage_copy_grads(zb_stage *st, int chunk, size_t *n);

/* Sum of squared gradients over the parameters this rank "owns" for the
 * global norm: TP-replicated tensors only on tp_rank 0, the tied embedding
 * copy only on the first stage, so that the world sum counts each model
 * parameter exactly once (after DP averaging, DP ranks are equal: only
 * dp_rank 0 contributes). */
double zb_stage_grad_sumsq(const zb_stage *st);

/* AdamW on every parameter: gradients multiplied by grad_scale (global-norm
 * clipping), weight decay on 2-D weights only (matrices and embedding
 * tables; not biases or LayerNorm), bias-corrected moments, step t >= 1. */
zb_status zb_stage_adamw(zb_stage *st, float lr, float grad_scale, int t,
                         zb_err *err);

/* Undo copy of the optimizer state (stage_undo.c): parameters and AdamW
 * moments kept aside before a speculative zb_stage_adamw and restored when
 * the step must not stand (post-validation). new gives NULL (and ZB_OK) on
 * backends other than cpu; free (NULL allowed) before zb_stage_free. */
typedef struct zb_stage_undo zb_stage_undo;
zb_status zb_stage_undo_new(zb_stage *st, zb_stage_undo **out, zb_err *err);
void zb_stage_undo_free(zb_stage *st, zb_stage_undo *u);
zb_status zb_stage_undo_keep(zb_stage *st, zb_stage_undo *u, zb_err *err);
zb_status zb_stage_undo_restore(zb_stage *st, zb_stage_undo *u, zb_err *err);

/* Bytes held: parameters+grads+optimizer state, and activation peak so far
 * (slots in use high-water mark times slot size). */
double zb_stage_static_bytes(const zb_stage *st);
double zb_stage_act_peak_bytes(const zb_stage *st);

/* Device-measured pass times of this step, for backends whose passes run
 * asynchronously: the i-th pass (F, B, W or BW call) since the last
 * zb_stage_zero_grads started at t_start[i] and ended at t_end[i], seconds
 * on CLOCK_MONOTONIC minus t0. Call after zb_stage_grad_sumsq or
 * zb_stage_loss_sum of the step (they wait for the device). Returns false
 * and writes nothing when the backend has no such times (cpu: the caller's
 * own clock is right) or n differs from the passes run. */
bool zb_stage_pass_times(zb_stage *st, double *t_start, double *t_end, int n,
                         double t0);

/* Checkpoint: params and AdamW moments, binary, to/from an open stream. */
zb_status zb_stage_save(const zb_stage *st, FILE *f, zb_err *err);
zb_status zb_stage_load(zb_stage *st, FILE *f, zb_err *err);

#endif
