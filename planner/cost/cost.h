/* cost.h - the cost model: per transformer layer (and the embedding and the
 * head) FLOPs, time and activation memory of F, B and W for one microbatch
 * on one device, for a TP degree, sequence parallelism and recompute; the
 * static memory per device; and alpha-beta communication times.
 * docs/cost-model.md gives every formula with its source.
 *
 * FLOPs per layer per microbatch (b sequences, s tokens, h hidden, MLP f):
 *   F = b*s*h*(8h + 4f + 4s)... written out in cost.c/doc; with f = 4h this is
 *   bsh(24h + 4s), B = bsh(24h + 8s), W = bsh(24h) (DESIGN.md), each / tp.
 * Time = FLOPs / (peak * efficiency(M, N, K)) summed over the layer's GEMMs,
 * plus TP all-reduces (ring, 2(n-1)/n) on the critical path of F and B.
 */
#ifndef ZB_COST_H
#define ZB_COST_H

#include <stdbool.h>

#include "common/zb_error.h"
#include "common/zb_model.h"

typedef struct {
    double f_flops, b_flops, w_flops;  /* per microbatch, per device */
    double f_s, b_s, w_s;              /* seconds, incl. TP collectives */
    double f_tp_s, b_tp_s, w_tp_s;     /* of which TP collectives on the
                                          critical path (zbplan --explain) */
    double m_b_bytes;                  /* activations kept after F */
    double m_w_bytes;                  /* of those, kept after B until W */
    double params;                     /* parameters held per device */
} zb_pass_cost;

typedef struct {
    int tp, micro_batch;
    zb_pass_cost layer;   /* one transformer block */
    zb_pass_cost embed;   /* token + position embedding (first stage) */
    zb_pass_cost head;    /* final LayerNorm + LM head + cross-entropy */
    zb_pass_cost head_norm; /* the final norm alone: the last stage's part
                             of the head under vocabulary parallelism
                             (cost/vocab.h) */
    double vocab_params;  /* ceil(V/tp)*h: one rank's token table shard,
                             held once where embedding and head share it */
    double chunk_act_bytes; /* per microbatch and virtual stage, beyond its
                             layers: the chunk's input, its gradient and the
                             token ids (the cpu device's executor layout;
                             0 on GPU devices) */
    double p2p_bytes;     /* one activation (or gradient) between stages */
    double p2p_intra_s;   /* its time over an intra-node link */
    double p2p_inter_s;   /* ... over an inter-node link */
    double peak_flops;    /* device peak used (precision dependent) */
    double vocab_rank_params; /* vocabulary parallelism (cost/vocab.h): the
                             table shards EVERY pipeline rank holds; 0
                             without it */
} zb_cost_table;

/* Evaluate the cost model for the model's precision/recompute/SP settings. */
zb_status zb_cost_eval(const zb_model *m, int tp, int micro_batch,
                       zb_cost_table *out, zb_err *err);

/* The cpu device's peak FLOP/s and bandwidth are per core: a rank of
 * zbrun's CPU backend runs on cores / world threads (at least 1), and
 * world ranks on fewer cores time-share them. Scales m's device in place
 * to one rank's share of `cores` cores and returns that share (cores per
 * rank, fractional when time-shared); other devices: unchanged, 1. */
double zb_cost_cpu_rank_share(zb_model *m, int world, int cores);
/* This machine's cores available to the process (affinity), >= 1. */
int zb_cost_cpu_cores(void);

/* Fraction of peak a GEMM of (M x K) * (K x N) reaches on a device of
 * peak_flops FLOP/s: rises with size and saturates (a fixed per-GEMM
 * overhead costs more of the peak on a faster device; docs/cost-model.md);
 * in (0, 1]. */
double zb_gemm_efficiency(double M, double N, double K, double peak_flops);
/* The same with another output tile edge (the k-step is tile / 4): a
 * device's gemm_tile (zbplan calibrate fits it; CPUs use small tiles). */
double zb_gemm_efficiency_tile(double M, double N, double K, double peak_flops,
                               double tile);

/* Alpha-beta time of a point-to-point message. */
double zb_p2p_s(double bytes, double bw_Bps, double lat_s);
/* Ring all-reduce over n ranks: 2(n-1)/n * bytes / bw + 2(n-1) * lat. */
double zb_allreduce_s(double bytes, int n, double bw_Bps, double lat_s);

/* Static memory per device in bytes for `params` parameters held:
 * weights + gradients + AdamW state (two fp32 moments, plus an fp32 master
 * copy under bf16), optimizer state divided by dp when zero1. */
double zb_static_mem_bytes(const zb_model *m, double params, int dp);

/* Workspace margin reserved per device (allocator slack, cuBLAS, NCCL). */
double zb_workspace_bytes(const zb_model *m);

/* Total training FLOPs of one step for the whole model (for MFU):
 * 3x forward GEMM FLOPs over global_batch sequences incl. the LM head. */
double zb_model_step_flops(const zb_model *m);

#endif
