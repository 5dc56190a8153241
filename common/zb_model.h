/* zb_model.h - the model spec (a file in models/): transformer shape, training
 * settings and cluster. Loaded and fully validated here; the plan embeds the
 * same three sections with the same keys, so zbrun reuses zb_model_parse.
 *
 * File layout (docs/model-format.md is the reference):
 *   name: tiny
 *   model:    {arch (gpt2|llama: a preset of the block keys), layers,
 *              hidden, heads, kv_heads (default heads), ffn_hidden (default
 *              4*hidden; swiglu: 256*ceil(8*hidden/3/256)), seq_len, vocab,
 *              mlp (gelu|swiglu), norm (layernorm|rmsnorm), position
 *              (learned|rope), rope_theta, bias, tied_embeddings (default
 *              true; llama: false), params (optional: checked against the
 *              shapes), init (an llm.c checkpoint to start from; shapes
 *              left out come from it)}
 *   training: {global_batch, micro_batch (int or auto), steps, seed,
 *              precision (fp32|bf16), recompute (none|selective|full),
 *              sequence_parallel, zero1, fused_attention, tp_overlap,
 *              tp_overlap_efficiency, dp_overlap, data: {kind: text|shards, path,
 *              order: random|sequential}, val: {kind, path, every, batches},
 *              optimizer: {lr, min_lr, beta1, beta2, eps, weight_decay,
 *                          grad_clip, warmup_steps, schedule: cosine|constant}}
 *   cluster:  {nodes, devices_per_node, device (name from the table, or a
 *              mapping {name, peak_bf16_tflops, peak_fp32_tflops, memory_gib,
 *              memory_bandwidth_gbps, gemm_efficiency, gemm_tile,
 *              attention_efficiency, omp_region_us, sm_count}),
 *              intra_node: {bandwidth_gbps, latency_us, p2p_overhead_us},
 *              inter_node: {bandwidth_gbps, latency_us, p2p_overhead_us}}
 * Units in the file are human ones (GB/s, us, TFLOP/s, GiB); the struct holds
 * SI units (bytes/s, s, FLOP/s, bytes).
 */
#ifndef ZB_MODEL_H
#define ZB_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/zb_error.h"
#include "common/zb_yaml.h"

typedef enum { ZB_PREC_FP32 = 0, ZB_PREC_BF16 = 1 } zb_precision;
typedef enum {
    ZB_RECOMPUTE_NONE = 0,
    ZB_RECOMPUTE_SELECTIVE = 1,
    ZB_RECOMPUTE_FULL = 2
} zb_recompute;
typedef enum { ZB_DATA_TEXT = 0, ZB_DATA_SHARDS = 1 } zb_data_kind;

/* The block's kinds. The zero values are GPT-2's, so a file that names none
 * of the new keys reads (and writes) as before. */
typedef enum { ZB_MLP_GELU = 0, ZB_MLP_SWIGLU = 1 } zb_mlp;      /* 4h GELU MLP with
                                            biases | W2(silu(W1 x) * W3 x) */
typedef enum { ZB_NORM_LAYERNORM = 0, ZB_NORM_RMSNORM = 1 } zb_norm;
typedef enum { ZB_POS_LEARNED = 0, ZB_POS_ROPE = 1 } zb_position;

typedef struct {
    int layers, hidden, heads, ffn_hidden, seq_len, vocab;
    int kv_heads;           /* K/V heads (GQA), divides heads; = heads: MHA
                               (the parser sets it; 0 in a struct built by
                               hand also means heads: zb_arch_kv_heads) */
    zb_mlp mlp;
    zb_norm norm;
    zb_position position;   /* learned: a seq_len x hidden table; rope: none */
    double rope_theta;      /* RoPE base (position rope only), default 1e4 */
    bool no_bias;           /* linear layers without biases (Llama; key
                               `bias: false`); false: GPT-2's biases, so a
                               zeroed struct is GPT-2's */
    bool qkv_bias;          /* with no_bias: Q, K and V keep their biases
                               (Qwen2; key `qkv_bias: true`) */
    bool tied_embeddings;
    char init[1024];        /* llm.c checkpoint to start from, resolved like
                               data paths; empty = seeded random init */
    int init_maxT, init_Vp; /* its maxT and padded vocab (0 without init) */
} zb_arch;

typedef struct {
    double lr, min_lr, beta1, beta2, eps, weight_decay, grad_clip;
    int warmup_steps;
    bool cosine;            /* false: constant after warmup */
} zb_optim;

typedef struct {
    int global_batch;       /* sequences per optimizer step */
    int micro_batch;        /* sequences per microbatch; 0 = auto (planner) */
    int steps;
    uint64_t seed;
    zb_precision precision;
    zb_recompute recompute;
    bool sequence_parallel;
    bool zero1;             /* shard optimizer state over DP */
    bool fused_attention;   /* one fused (flash-style) attention kernel: no
                               s^2 activations, no softmax/dropout passes */
    bool tp_overlap;        /* TP collectives overlap neighbouring GEMMs */
    double tp_overlap_eff;  /* fraction of TP collective time hidden, [0,1] */
    bool dp_overlap;        /* DP gradient reduction overlaps the last
                               microbatch's backward and, with zero1, the
                               parameter all-gather the next forward
                               (Megatron's --overlap-grad-reduce and
                               --overlap-param-gather): prediction only */
    zb_data_kind data_kind;
    char data_path[1024];   /* resolved relative to the model file's folder;
                               empty = none given */
    bool data_sequential;   /* data.order: sequential windows, not random */
    zb_data_kind val_kind;  /* validation source (val.*); val_path empty = */
    char val_path[1024];    /* no validation loss */
    int val_every;          /* steps between evaluations, 0 = start and end */
    int val_batches;        /* global batches per evaluation */
    zb_optim opt;
} zb_training;

typedef struct {
    char name[32];
    double peak_bf16_flops; /* FLOP/s, dense */
    double peak_fp32_flops; /* FLOP/s, dense (non-tensor-core fp32) */
    double mem_bytes;
    double mem_bw_Bps;      /* memory bandwidth, bytes/s (elementwise work) */
    double gemm_eff;        /* fraction of peak a large GEMM reaches, (0,1];
                               0 = the cost model's default */
    double gemm_tile;       /* output tile edge of its GEMM kernels; 0 = the
                               cost model's default (128, GPU tensor cores) */
    double attn_eff;        /* fraction of peak of the attention core; 0 =
                               the cost model's default */
    double omp_region_s;    /* cpu: cost of one OpenMP parallel region of a
                               rank with more than one thread, seconds; 0 =
                               the cost model's default */
    int threads;            /* cpu: threads per rank the plan runs with
                               (zb_cost_cpu_rank_share sets it; not in the
                               model file); 0 = 1 */
    int sm_count;           /* GPU: streaming multiprocessors (a GEMM's
                               partial last wave); 0 = not modelled */
} zb_device;

/* Share of device memory a plan leaves free by default (cluster.
 * memory_margin_pct; docs/cost-model.md section 6 says why 10%). */
#define ZB_MEM_MARGIN_DEFAULT 0.10

typedef struct {
    int nodes, devices_per_node;
    zb_device device;
    double mem_margin;   /* fraction of device memory no plan may use, on
                            top of the workspace: [0, 0.99] */
    double intra_bw_Bps, intra_lat_s;  /* link inside a node */
    double inter_bw_Bps, inter_lat_s;  /* link between nodes */
    double intra_p2p_s, inter_p2p_s;   /* per-message overhead of a pipeline
                                          send/recv beyond latency, s */
} zb_cluster;

typedef struct {
    char name[64];
    zb_arch arch;
    zb_training train;
    zb_cluster cluster;
} zb_model;

/* Load and validate a model file. Every problem is ZB_EINPUT with
 * "file:line:col: what is wrong". */
zb_status zb_model_load(const char *path, zb_model *out, zb_err *err);

/* Parse the name/model/training/cluster keys of an already loaded mapping
 * (a model file's root, or a plan's root: extra_keys lists the other keys the
 * caller allows there, NULL-terminated, may be NULL). base_dir resolves a
 * relative data path. */
zb_status zb_model_parse(const zb_ydoc *doc, const zb_ynode *root,
                         const char *const *extra_keys, const char *base_dir,
                         zb_model *out, zb_err *err);

/* Write name/model/training/cluster as keys of the currently open block
 * mapping (used by the plan writer); round-trips through zb_model_parse. */
void zb_model_write(zb_yw *w, const zb_model *m);
/* The same; with_params false leaves model.params out (a model file meant
 * to be edited: its shapes may change, and a stale count would refuse). */
void zb_model_write_keys(zb_yw *w, const zb_model *m, bool with_params);

/* True when the block is GPT-2's (MHA, GELU MLP, LayerNorm, learned
 * positions, biases): the shape zbrun trains and llm.c checkpoints hold. */
bool zb_arch_is_gpt2(const zb_arch *a);
/* K/V heads: kv_heads, or heads where it is 0. */
int zb_arch_kv_heads(const zb_arch *a);

/* Exact parameter count of the whole model (docs/cost-model.md): per block
 * Q and O h*h each, K and V h*kv_heads*(h/heads) each, MLP 2hf (gelu) or
 * 3hf (swiglu), biases unless no_bias, two norms (2h LayerNorm, h RMSNorm);
 * token table V*h, again for an untied head; a learned position table
 * seq_len*h (the checkpoint's maxT with init); the final norm. */
uint64_t zb_model_params(const zb_arch *a);

/* Built-in device table: a100-40gb, a100-80gb, h100-sxm, h200, b200,
 * mi300x, cpu, and the aliases a100 (a100-80gb) and h100 (h100-sxm).
 * Returns the table entry (its name the table's, not the alias), or NULL
 * for an unknown name; case-insensitive. */
const zb_device *zb_device_lookup(const char *name);
/* NULL-terminated list of table names (no aliases), for docs and tests. */
const char *const *zb_device_names(void);
/* "a100-40gb, a100-80gb (or a100), ...": every name a model may give, for
 * the unknown-device message; truncated to cap bytes (256 holds it). */
void zb_device_known_text(char *buf, size_t cap);

/* Bytes per activation/parameter element for a precision (4 or 2). */
int zb_precision_bytes(zb_precision p);

#endif
