/* cost.c - the cost model of cost/cost.h. docs/cost-model.md derives every
 * formula below and gives its source; the constants are estimates to be
 * calibrated against zbrun measurements.
 *
 * Notation (as doubles): b micro_batch, s seq_len, h hidden, f ffn_hidden,
 * a heads, V vocab, t TP degree, e bytes per activation element.
 * All results are per microbatch and per device (one TP rank).
 */
#include "planner/cost/cost.h"
#include "planner/cost/regions.h"

#include <sched.h>
#include <strings.h>
#include <unistd.h>

/* GEMM efficiency (zb_gemm_efficiency). */
#define GEMM_EFF_MAX 0.80      /* large cuBLAS GEMMs reach ~75-85% of peak */
#define GEMM_TILE_MN 128.0     /* output tile edge of a typical kernel */
#define GEMM_TILE_K 32.0       /* k-step of the same kernel */
#define GEMM_OVERHEAD_S 3e-6   /* launch + wave tail per GEMM, in seconds */

/* Fixed fractions of peak for the attention core. */
#define ATTN_EFF 0.40  /* unfused: QK^T and PV as small batched GEMMs of head
                          dimension h/a, of the GEMM peak */
#define FLASH_EFF 0.50 /* fused (flash) attention forward and backward, of
                          the GEMM peak (Dao 2023: 50-73% forward, 35-63%
                          backward on A100) */
/* Elementwise work is bound by memory bandwidth: bytes moved at BW_EFF of
 * the device's bandwidth (streaming kernels reach 80-90% of the datasheet
 * number; STREAM-like copies on A100 about 1.7 of 2.0 TB/s). */
#define BW_EFF 0.80
/* A TP all-reduce reaches this fraction of the link bandwidth as ring bus
 * bandwidth (nccl-tests all_reduce_perf on DGX A100: about 230 of the
 * 300 GB/s NVLink per direction at large sizes). */
#define COLL_BW_EFF 0.78
/* cpu: one OpenMP parallel region of a rank with more than one thread
 * (waking the team, the closing barrier), when the device has no measured
 * omp_region_us: zbplan calibrate measured 16-33 us on a shared 2-core
 * machine (docs/cost-model.md 2.5). */
#define OMP_REGION_S 15e-6

#define GIB (1024.0 * 1024.0 * 1024.0)
#define MIB (1024.0 * 1024.0)

typedef struct {
    double b, s, h, f, a, V, t, e;
    double kv;         /* K (and V) width, kv_heads * h / a (= h: MHA) */
    double nup;        /* the MLP's up projections: 1 (gelu), 2 (swiglu:
                          gate and up, one fused h x 2f GEMM) */
    bool swiglu, rms, rope, bias; /* the block's kinds (zb_arch) */
    bool qkv_bias;     /* without biases, Q, K, V still have theirs */
    bool sp;
    bool cpu;          /* device "cpu": zbrun's CPU backend, whose own
                          activation layout the memory model follows */
    zb_recompute rc;
    double peak;       /* FLOP/s of GEMMs at the training precision */
    double gemm_scale; /* device GEMM efficiency / GEMM_EFF_MAX (1: default) */
    double tile;       /* output tile edge of the device's GEMM kernels */
    double sms;        /* the device's SMs (0: no partial-wave loss) */
    double attn_eff;   /* the device's measured attention efficiency, 0 */
    double bw;         /* bytes/s of elementwise work: bandwidth * BW_EFF */
    bool fused;        /* fused (flash) attention */
    double tp_exposed; /* fraction of TP collective time on the critical
                          path: 1, or 1 - efficiency under tp_overlap */
    double ar_s;       /* one TP all-reduce of b*s*h*e bytes (0 at t = 1) */
    double Vl;         /* vocabulary rows per TP rank, ceil(V / t) */
    double ce_ar_s;    /* the cross-entropy's all-reduces over TP: row max
                          [t, bs] then sum(exp) and target logit [2, bs],
                          doubles (0 at t = 1) */
} shape;

/* ---- building blocks ------------------------------------------------ */

double zb_gemm_efficiency(double M, double N, double K, double peak_flops) {
    return zb_gemm_efficiency_tile(M, N, K, peak_flops, GEMM_TILE_MN);
}

double zb_gemm_efficiency_tile(double M, double N, double K, double peak_flops,
                               double tile) {
    /* Tile quantisation in expectation: a dimension d is padded to a whole
     * number of tiles, on average by half a tile, so only d / (d + T/2) of
     * the work is useful. The exact padding is saw-toothed; its mean keeps
     * the function monotone, which the partitioner and the search want. */
    if (!(M >= 1)) M = 1;
    if (!(N >= 1)) N = 1;
    if (!(K >= 1)) K = 1;
    if (!(tile > 0)) tile = GEMM_TILE_MN;
    double tk = tile * (GEMM_TILE_K / GEMM_TILE_MN);
    double q = M / (M + tile / 2) * (N / (N + tile / 2)) * (K / (K + tk / 2));
    /* Saturation: a fixed overhead per GEMM (launch, filling and draining
     * the device) costs as much as w_half = peak * GEMM_OVERHEAD_S FLOPs
     * of useful work; work / (work + w_half) is 1/2 at that size. */
    double work = 2 * M * N * K;
    double w_half = (peak_flops > 0 ? peak_flops : 0) * GEMM_OVERHEAD_S;
    return GEMM_EFF_MAX * q * (work / (work + w_half));
}

double zb_cost_cpu_rank_share(zb_model *m, int world, int cores) {
    zb_device *d = &m->cluster.device;
    if (strcasecmp(d->name, "cpu") != 0) return 1;
    if (world < 1) world = 1;
    if (cores < 1) cores = 1;
    /* whole threads per rank (zbrun: cores / world); more ranks than
     * cores: each gets its time share */
    double share = world <= cores ? (double)(cores / world) : (double)cores / world;
    d->threads = world <= cores ? cores / world : 1;
    d->peak_bf16_flops *= share;
    d->peak_fp32_flops *= share;
    d->mem_bw_Bps *= share;
    return share;
}

int zb_cost_cpu_cores(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

double zb_p2p_s(double bytes, double bw_Bps, double lat_s) {
    return lat_s + bytes / bw_Bps;
}

double zb_allreduce_s(double bytes, int n, double bw_Bps, double lat_s) {
    if (n <= 1) return 0;
    return 2.0 * (n - 1) / n * bytes / bw_Bps + 2.0 * (n - 1) * lat_s;
}

/* Wave quantisation in expectation: a GEMM's (M/T)(N/T) output tiles run
 * in waves of one tile per SM, and the last wave is on average half
 * empty, so W waves take W + 1/2 waves' time (NVIDIA, Matrix
 * Multiplication Background User's Guide, "wave quantization"). The mean,
 * like the tile padding's, keeps the time monotone in the sizes. */
static double wave_eff(const shape *x, double M, double N) {
    if (!(x->sms > 0)) return 1;
    double waves = (M / x->tile) * (N / x->tile) / x->sms;
    return waves / (waves + 0.5);
}

static double gemm_s(const shape *x, double M, double N, double K) {
    double eff = zb_gemm_efficiency_tile(M, N, K, x->peak, x->tile) * x->gemm_scale *
                 wave_eff(x, M, N);
    return 2 * M * N * K / (x->peak * (eff < 1 ? eff : 1));
}

static double attn_s(const shape *x, double flops) {
    double eff = x->attn_eff > 0 ? x->attn_eff : x->fused ? FLASH_EFF : ATTN_EFF;
    return flops / (x->peak * eff);
}

/* Time of elementwise work moving `bytes` through device memory. */
static double elem_s(const shape *x, double bytes) { return bytes / x->bw; }

/* A TP collective of time t as far as it is on the critical path. */
static double tp_s(const shape *x, double t) { return t * x->tp_exposed; }

/* ---- transformer block ---------------------------------------------- */

/* The four weight GEMMs of a block on one TP rank as (M, N, K) of the
 * forward Y[M x N] = X[M x K] W[K x N]: QKV and fc1 column-parallel (N/t),
 * proj and fc2 row-parallel (K/t). B computes dX = dY W^T (M, K, N) and W
 * computes dW = X^T dY (K, N, M): same FLOPs, other shapes. */
static void block_gemms(const shape *x, double g[4][3]) {
    double bs = x->b * x->s, h = x->h, f = x->f, t = x->t;
    double tab[4][3] = {
        {bs, (h + 2 * x->kv) / t, h}, /* QKV (GQA: K, V of width kv) */
        {bs, h, h / t},     /* attention output projection */
        {bs, x->nup * f / t, h}, /* MLP up (fc1; swiglu: gate and up) */
        {bs, h, f / t},     /* MLP down (fc2) */
    };
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++) g[i][j] = tab[i][j];
}

/* Bytes moved by a block's elementwise kernels in F on one TP rank, per
 * token (Megatron's fusions: bias+GELU, bias+dropout+residual add, scaled
 * masked softmax). Replicated over TP (split over t only under sequence
 * parallelism): 2 LayerNorms (read, write: 2e per element) and 2
 * bias-dropout-adds (read x and the residual, write, 1-byte mask: 3e + 1).
 * Sharded: bias+GELU (2e) over f, softmax (2e) and dropout (2e + 1) of the
 * scores, as*s elements; none under fused attention (inside the kernel). */
static double block_bytes_fwd(const shape *x) {
    double h = x->h, f = x->f, e = x->e, as = x->a * x->s;
    double repl = 2 * 2 * e * h + 2 * (3 * e + 1) * h;
    /* RMSNorm moves what LayerNorm does (read, write). SwiGLU reads gate
     * and up and writes their product: 3e over f, GELU 2e. RoPE reads and
     * writes Q and K (Su et al. 2021). */
    double act = x->swiglu ? 3 * e * f : 2 * e * f;
    double rope = x->rope ? 2 * e * (h + x->kv) : 0;
    double shard = act + (x->fused ? 0 : (4 * e + 1) * as) + rope;
    return x->b * x->s * (repl / (x->sp ? x->t : 1) + shard / x->t);
}

/* Bytes of W's elementwise work: bias gradients (read dY once: 3h + f
 * sharded, 2h replicated) and the LayerNorm gamma/beta gradients (read dy
 * and x: 2e per element over 2h). */
static double block_bytes_w(const shape *x) {
    double h = x->h, f = x->f, e = x->e;
    /* without biases only the norms' gains (RMSNorm: read dy and x too) */
    double repl = (x->bias ? e * 2 * h : 0) + 2 * 2 * e * h;
    double shard = x->bias ? e * (h + 2 * x->kv + x->nup * f)
                           : x->qkv_bias ? e * (h + 2 * x->kv) : 0;
    return x->b * x->s * (repl / (x->sp ? x->t : 1) + shard / x->t);
}

static void block_time(const shape *x, zb_pass_cost *c) {
    double g[4][3], tf = 0, tb = 0, tw = 0, gflops = 0;
    block_gemms(x, g);
    for (int i = 0; i < 4; i++) {
        double M = g[i][0], N = g[i][1], K = g[i][2];
        gflops += 2 * M * N * K;
        tf += gemm_s(x, M, N, K);
        tb += gemm_s(x, M, K, N);
        tw += gemm_s(x, K, N, M);
    }
    /* Attention core: QK^T and PV, 2*b*s^2*h FLOPs each, heads split by
     * TP; the backward needs two GEMMs for each. */
    double attn = 4 * x->b * x->s * x->s * x->h / x->t;
    double el = block_bytes_fwd(x);
    c->f_flops = gflops + attn;
    c->b_flops = gflops + 2 * attn;
    c->w_flops = gflops;
    /* Two all-reduces (or RS + AG under SP, the same ring bytes) in F,
     * after the row-parallel GEMMs, and two in B, for the input gradients
     * of the column-parallel ones (Megatron's f/g operators). */
    c->f_s = tf + attn_s(x, attn) + elem_s(x, el) + tp_s(x, 2 * x->ar_s);
    c->b_s = tb + attn_s(x, 2 * attn) + elem_s(x, 2 * el) + tp_s(x, 2 * x->ar_s);
    /* Under SP the weight-gradient GEMMs need the sequence-gathered LN
     * outputs and output gradients, which M_W keeps sharded (see
     * block_mem): four all-gathers of b*s*h, two all-reduces' worth. */
    c->w_s = tw + elem_s(x, block_bytes_w(x)) + (x->sp ? tp_s(x, 2 * x->ar_s) : 0);
    c->f_tp_s = c->b_tp_s = tp_s(x, 2 * x->ar_s);
    c->w_tp_s = x->sp ? tp_s(x, 2 * x->ar_s) : 0;
    if (x->rc == ZB_RECOMPUTE_FULL) {
        c->b_flops += c->f_flops;
        c->b_s += c->f_s;
        c->b_tp_s += c->f_tp_s;
    } else if (x->rc == ZB_RECOMPUTE_SELECTIVE && !x->fused) {
        /* fused attention keeps no scores: nothing to recompute */
        double sm = x->b * x->s * (4 * x->e + 1) * x->a * x->s / x->t;
        c->b_flops += attn;
        c->b_s += attn_s(x, attn) + elem_s(x, sm);
    }
}

/* Activation bytes (Korthikanti et al. 2022, Table 2), for any f and
 * element size e. Per token, in units of h elements, F keeps:
 *   replicated over TP: 2 LN inputs, QKV input, fc1 input      -> 4
 *   sharded over TP:    Q, K, V, proj input, GELU in, fc2 in  -> 4 + 2f/h
 *   two 1-byte dropout masks (bytes, replicated)               -> 2
 * plus per (head, query, key): softmax out, dropout out (e bytes each) and
 * a 1-byte mask, sharded over TP. With e = 2, f = 4h: 34 + 5as/h. */
static void block_mem(const shape *x, zb_pass_cost *c) {
    double sbh = x->s * x->b * x->h, t = x->t, e = x->e;
    /* GQA keeps K and V of width kv; SwiGLU keeps gate, up and their
     * product (fc2's input): 3f where GELU keeps 2f; RoPE keeps the
     * rotated Q and K in place of Q and K (no more) */
    double nact = x->swiglu ? 3 : 2, qkv = 2 + 2 * x->kv / x->h;
    double repl = 4, shard = qkv + nact * x->f / x->h, masks = 2;
    double scores = x->a * x->s * x->s * x->b * (2 * e + 1) / t;
    if (x->rc == ZB_RECOMPUTE_SELECTIVE || x->fused) scores = 0;
    if (x->sp)
        c->m_b_bytes = sbh * (e * (repl + shard) + masks) / t + scores;
    else
        c->m_b_bytes = sbh * (e * repl + masks + e * shard / t) + scores;
    if (x->rc == ZB_RECOMPUTE_FULL)  /* only the block input is kept */
        c->m_b_bytes = e * sbh / (x->sp ? t : 1);
    /* W needs each weight GEMM's input X and output gradient dY:
     *   X:  LN1 out (repl), proj in (shard), LN2 out (repl), fc2 in (f/h)
     *   dY: dQKV (3, shard), dproj out (repl), dfc1 (f/h), dfc2 out (repl)
     * -> 4 replicated + (4 + 2f/h) sharded; 32sbh bytes at e = 2, f = 4h
     * (Qi et al. 2023, Table 1). GQA: dQKV is (h + 2kv)/h; SwiGLU: dfc1
     * is 2f/h. Under SP the replicated ones are kept as sequence shards
     * and re-gathered in W. */
    double wshard = (1 + (x->h + 2 * x->kv) / x->h) + (1 + x->nup) * x->f / x->h;
    c->m_w_bytes = e * sbh * (4 / (x->sp ? t : 1) + wshard / t);
}

/* The cpu device runs zbrun's CPU backend, which computes in fp32 and
 * keeps one slot per microbatch in flight from its F until its W (or BW).
 * Per block and token, in floats: replicated LN1 out, residual 2, LN2
 * out, dres2, dln2, dln1 (6h) and the block output and its gradient (2h);
 * sharded QKV and dQKV (6h/t), attention output (h/t), fc1 out, GELU out
 * and dfc1 (3f/t); four LayerNorm statistics; plus, without recompute,
 * the (a/t)*s^2 softmax per sequence (selective rebuilds it in B, one
 * layer at a time). Without full recompute all of it is taken at F: the
 * simulator holds M_B = M_W from F to W (docs/cost-model.md 3.3). Under
 * full recompute F keeps only the block output (h), and B takes the rest,
 * which it rebuilds for W: M_B = 4bsh, M_W as under selective. */
static void block_mem_cpu(const shape *x, zb_pass_cost *c) {
    double bs = x->b * x->s, h = x->h, t = x->t;
    double per_tok = 8 * h + (7 * h + 3 * x->f) / t + 4;
    double att = x->rc == ZB_RECOMPUTE_NONE ? x->b * (x->a / t) * x->s * x->s : 0;
    c->m_b_bytes = c->m_w_bytes = 4 * (bs * per_tok + att);
    if (x->rc == ZB_RECOMPUTE_FULL) c->m_b_bytes = 4 * bs * h;
}

/* Parameters of one block on one TP rank: Q and O h^2 each, K and V h*kv
 * each, MLP (1 + nup)hf, with biases QKV h + 2kv, proj h, MLP up nup*f,
 * down h; two norms 4h (LayerNorm) or 2h (RMSNorm). Matrices and
 * column-parallel biases (QKV, fc1) are sharded; row-parallel biases and
 * norms replicated. GPT-2: 12h^2 + 13h at f = 4h, t = 1. */
static double block_params(const shape *x) {
    double h = x->h, f = x->f, t = x->t;
    double mats = 2 * h * h + 2 * h * x->kv + (1 + x->nup) * h * f;
    double col_bias = x->bias ? h + 2 * x->kv + x->nup * f
                              : x->qkv_bias ? h + 2 * x->kv : 0;
    return (mats + col_bias) / t + (x->bias ? 2 * h : 0) + (x->rms ? 2 : 4) * h;
}

/* ---- embedding and head (vocabulary-parallel over TP) ---------------- */

/* Token + position embedding, the token table split over TP by vocabulary
 * rows (Megatron): F looks the tokens up in the local rows (0 elsewhere),
 * all-reduces the b*s*h output over TP, then adds the position embedding;
 * no input gradient (B is empty); W scatter-adds the output gradient into
 * the local rows and sums it into the (replicated) position table. Keeps
 * the int32 token ids; after B its output gradient waits for W. */
static void embed_cost(const shape *x, zb_pass_cost *c) {
    double bsh = x->b * x->s * x->h, ids = 4 * x->b * x->s;
    c->f_flops = c->b_flops = c->w_flops = 0;  /* no matrix multiplies */
    /* F: gather (read, write) then add the position row (read 2, write 1);
     * W: read the gradient, read-modify-write fp32 rows, for both tables */
    /* RoPE: no position table, only the gather (read, write) */
    c->f_s = elem_s(x, (x->rope ? 2 : 5) * x->e * bsh) + tp_s(x, x->ar_s);
    c->b_s = 0;
    c->w_s = elem_s(x, (x->rope ? 1 : 2) * (x->e + 8) * bsh);
    c->f_tp_s = tp_s(x, x->ar_s);
    c->b_tp_s = c->w_tp_s = 0;
    c->m_b_bytes = ids;
    c->m_w_bytes = ids + x->e * bsh;
    if (x->cpu) c->m_b_bytes = c->m_w_bytes = 0; /* in chunk_act_bytes */
    c->params = x->Vl * x->h + (x->rope ? 0 : x->s * x->h);
}

/* Final LayerNorm, LM head GEMM [b*s x h] x [h x V/t] over the local
 * vocabulary rows and the vocab-parallel cross-entropy (row max, sum of
 * exp and target logit all-reduced over TP; no rank holds b*s*V logits).
 * Logits are kept in fp32 (4 bytes); B turns them into dlogits in place,
 * which W needs with the LN output; B all-reduces the partial input
 * gradient of the head GEMM. The head's weight is the local shard, also a
 * copy with tied embeddings on another device (docs/cost-model.md). */
static void head_cost(const shape *x, zb_pass_cost *c) {
    double bs = x->b * x->s, h = x->h, Vl = x->Vl;
    double bsh = bs * h, logits = 4 * bs * Vl;
    c->f_flops = c->b_flops = c->w_flops = 2 * bs * h * Vl;
    /* F: LN (2e per element of h); cross-entropy reads the fp32 logits for
     * the max and for sum(exp) and writes one fp32 pass (12 bytes/logit).
     * B: dlogits read and written (8), LN backward (4e). W: LN grads (2e). */
    c->f_s = gemm_s(x, bs, Vl, h) + elem_s(x, 2 * x->e * bsh + 12 * bs * Vl) +
             x->ce_ar_s;
    c->b_s = gemm_s(x, bs, h, Vl) + elem_s(x, 4 * x->e * bsh + 8 * bs * Vl) +
             tp_s(x, x->ar_s);
    c->w_s = gemm_s(x, Vl, h, bs) + elem_s(x, 2 * x->e * bsh);
    c->f_tp_s = x->ce_ar_s;
    c->b_tp_s = tp_s(x, x->ar_s);
    c->w_tp_s = 0;
    c->m_b_bytes = logits + 2 * x->e * bsh + 4 * bs; /* + LN in/out, targets */
    c->m_w_bytes = logits + x->e * bsh;
    if (x->cpu) /* CPU backend: LN out, its gradient, 2 statistics, dlogits */
        c->m_b_bytes = c->m_w_bytes = 4 * (2 * bsh + 2 * bs + bs * Vl);
    c->params = Vl * h + (x->rms ? 1 : 2) * h;   /* final norm */
}

/* The head's final norm alone (vocabulary parallelism, cost/vocab.h: the
 * output layer's shards run as separate passes): F reads and writes b*s*h
 * (2e per element), B 4e, W 2e, as in head_cost; keeps its input and
 * output, W its input. */
static void norm_cost(const shape *x, zb_pass_cost *c) {
    double bsh = x->b * x->s * x->h;
    *c = (zb_pass_cost){0};
    c->f_s = elem_s(x, 2 * x->e * bsh);
    c->b_s = elem_s(x, 4 * x->e * bsh);
    c->w_s = elem_s(x, 2 * x->e * bsh);
    c->m_b_bytes = 2 * x->e * bsh;
    c->m_w_bytes = x->e * bsh;
    if (x->cpu) c->m_b_bytes = c->m_w_bytes = 4 * (2 * bsh + 2 * x->b * x->s);
    c->params = (x->rms ? 1 : 2) * x->h;
}

/* ---- cpu: threads per rank -------------------------------------------- */

/* r scaled by each_s, added to c's pass times. */
static void add_passes(zb_pass_cost *c, zb_regions r, double each_s) {
    c->f_s += r.f * each_s;
    c->b_s += r.b * each_s;
    c->w_s += r.w * each_s;
}

/* Time of a block's kernels that run on one thread (cost/regions.h says
 * which), as priced at the rank's whole share. The W GEMMs' output rows
 * are the executor's dW rows, the layer's output features. */
static zb_regions block_serial_s(const shape *x) {
    double g[4][3], bs = x->b * x->s, h = x->h, e = x->e, Fl = x->f / x->t;
    zb_regions r = {0, 0, 0};
    block_gemms(x, g);
    for (int i = 0; i < 4; i++) {
        double M = g[i][0], N = g[i][1], K = g[i][2];
        if (!zb_cpu_gemm_region(M, N, K)) r.f += gemm_s(x, M, N, K);
        if (!zb_cpu_gemm_region(M, K, N)) r.b += gemm_s(x, M, K, N);
        if (!zb_cpu_gemm_region(N, K, M)) r.w += gemm_s(x, K, N, M);
        if (!zb_cpu_colsum_region(bs, N)) r.w += elem_s(x, e * bs * N);
    }
    double attn = 4 * x->b * x->s * x->s * h / x->t;
    if (!zb_cpu_loop_region(attn / 4)) { /* with its softmax over the scores */
        double sm = x->fused ? 0 : bs * (4 * e + 1) * x->a * x->s / x->t;
        r.f += attn_s(x, attn) + elem_s(x, sm);
        r.b += attn_s(x, 2 * attn) + elem_s(x, 2 * sm);
    }
    /* LayerNorms, residual adds, GELU: B moves twice F's bytes */
    double ln = 2 * 2 * e * h * bs, res = 2 * (3 * e + 1) * h * bs, gelu = 2 * e * Fl * bs;
    double fwd = (zb_cpu_loop_region(bs * h) ? 0 : ln) +
                 (zb_cpu_residual_region(bs * h) ? 0 : res) +
                 (zb_cpu_loop_region(bs * Fl) ? 0 : gelu);
    r.f += elem_s(x, fwd);
    r.b += elem_s(x, 2 * fwd);
    if (!zb_cpu_loop_region(bs * h)) r.w += elem_s(x, ln);
    return r;
}

/* The same for the LM head (LN, logits GEMM, cross-entropy) and the
 * embedding (gather, position add; their gradients). */
static zb_regions head_serial_s(const shape *x) {
    double bs = x->b * x->s, h = x->h, e = x->e, Vl = x->Vl;
    bool nc = zb_cpu_loop_region(bs * h), nv = zb_cpu_loop_region(bs * Vl);
    zb_regions r = {0, 0, 0};
    if (!zb_cpu_gemm_region(bs, Vl, h)) r.f += gemm_s(x, bs, Vl, h);
    if (!zb_cpu_gemm_region(bs, h, Vl)) r.b += gemm_s(x, bs, h, Vl);
    if (!zb_cpu_gemm_region(Vl, h, bs)) r.w += gemm_s(x, Vl, h, bs);
    r.f += elem_s(x, (nc ? 0 : 2 * e * bs * h) + (nv ? 0 : 12 * bs * Vl));
    r.b += elem_s(x, (nc ? 0 : 4 * e * bs * h) + (nv ? 0 : 8 * bs * Vl));
    r.w += elem_s(x, nc ? 0 : 2 * e * bs * h);
    return r;
}

static zb_regions embed_serial_s(const shape *x) {
    double bsh = x->b * x->s * x->h;
    if (zb_cpu_loop_region(bsh)) return (zb_regions){0, 0, 0};
    return (zb_regions){elem_s(x, 5 * x->e * bsh), 0, elem_s(x, 2 * (x->e + 8) * bsh)};
}

static zb_regions diff(zb_regions a, zb_regions b) {
    return (zb_regions){a.f - b.f, a.b - b.b, a.w - b.w};
}

/* A rank of zbrun's CPU backend with T > 1 threads: its peak and
 * bandwidth are T cores' (zb_cost_cpu_rank_share), but the kernels that
 * run on one thread take one core's time instead, and every OpenMP
 * parallel region costs omp_region_s on top of the work
 * (docs/cost-model.md 2.5). One thread: nothing to add. */
static void add_cpu_threads(const shape *x, const zb_device *d, zb_cost_table *out) {
    if (d->threads <= 1) return;
    int b = (int)x->b, s = (int)x->s, h = (int)x->h, t = (int)x->t;
    double each = d->omp_region_s > 0 ? d->omp_region_s : OMP_REGION_S;
    shape one = *x;  /* one core of the rank's share */
    one.peak /= d->threads;
    one.bw /= d->threads;
    add_passes(&out->layer, diff(block_serial_s(&one), block_serial_s(x)), 1);
    add_passes(&out->head, diff(head_serial_s(&one), head_serial_s(x)), 1);
    add_passes(&out->embed, diff(embed_serial_s(&one), embed_serial_s(x)), 1);
    add_passes(&out->layer, zb_cpu_regions_block(b, s, h, (int)x->f, (int)x->a, t), each);
    add_passes(&out->head, zb_cpu_regions_head(b, s, h, (int)x->V, t), each);
    add_passes(&out->embed, zb_cpu_regions_embed(b, s, h), each);
}

/* ---- public ---------------------------------------------------------- */

static zb_status check_args(const zb_model *m, int tp, int b, zb_err *err) {
    const zb_arch *A = &m->arch;
    if (tp < 1 || b < 1)
        return zb_fail(err, ZB_EINFEASIBLE, "cost model: tp %d, micro_batch %d "
                       "must be >= 1", tp, b);
    if (A->layers < 1 || A->hidden < 1 || A->heads < 1 || A->ffn_hidden < 1 ||
        A->seq_len < 1 || A->vocab < 1)
        return zb_fail(err, ZB_EINFEASIBLE, "cost model: model sizes must be "
                       ">= 1");
    if (A->heads % tp || A->hidden % tp || A->ffn_hidden % tp)
        return zb_fail(err, ZB_EINFEASIBLE, "cost model: tp %d does not divide "
                       "heads %d, hidden %d and ffn_hidden %d", tp, A->heads,
                       A->hidden, A->ffn_hidden);
    if (zb_arch_kv_heads(A) % tp)   /* Megatron shards K/V heads over TP */
        return zb_fail(err, ZB_EINFEASIBLE, "cost model: tp %d does not divide "
                       "kv_heads %d", tp, zb_arch_kv_heads(A));
    if (m->train.sequence_parallel && A->seq_len % tp)
        return zb_fail(err, ZB_EINFEASIBLE, "cost model: sequence parallelism "
                       "needs tp %d to divide seq_len %d", tp, A->seq_len);
    const zb_cluster *C = &m->cluster;
    if (!(C->intra_bw_Bps > 0) || !(C->inter_bw_Bps > 0))
        return zb_fail(err, ZB_EINFEASIBLE, "cost model: link bandwidths must "
                       "be > 0");
    return ZB_OK;
}

zb_status zb_cost_eval(const zb_model *m, int tp, int micro_batch,
                       zb_cost_table *out, zb_err *err) {
    ZB_TRY(check_args(m, tp, micro_batch, err));
    const zb_arch *A = &m->arch;
    const zb_cluster *C = &m->cluster;
    shape x = {
        .b = micro_batch, .s = A->seq_len, .h = A->hidden, .f = A->ffn_hidden,
        .a = A->heads, .V = A->vocab, .t = tp,
        .e = zb_precision_bytes(m->train.precision),
        .sp = m->train.sequence_parallel && tp > 1,
        .cpu = strcasecmp(C->device.name, "cpu") == 0,
        .rc = m->train.recompute,
        .kv = (double)zb_arch_kv_heads(A) * (A->hidden / A->heads),
        .nup = A->mlp == ZB_MLP_SWIGLU ? 2 : 1,
        .swiglu = A->mlp == ZB_MLP_SWIGLU, .rms = A->norm == ZB_NORM_RMSNORM,
        .rope = A->position == ZB_POS_ROPE, .bias = !A->no_bias,
        .qkv_bias = A->no_bias && A->qkv_bias,
    };
    bool bf16 = m->train.precision == ZB_PREC_BF16;
    x.peak = bf16 ? C->device.peak_bf16_flops : C->device.peak_fp32_flops;
    x.gemm_scale = C->device.gemm_eff > 0 ? C->device.gemm_eff / GEMM_EFF_MAX : 1;
    x.tile = C->device.gemm_tile > 0 ? C->device.gemm_tile : GEMM_TILE_MN;
    x.attn_eff = C->device.attn_eff;
    x.sms = C->device.sm_count;
    /* a device without a bandwidth: 200 FLOP/byte at its peak */
    x.bw = BW_EFF * (C->device.mem_bw_Bps > 0 ? C->device.mem_bw_Bps
                                               : x.peak / 200);
    x.fused = m->train.fused_attention;
    x.tp_exposed = m->train.tp_overlap ? 1 - m->train.tp_overlap_eff : 1;
    if (!(x.peak > 0))
        return zb_fail(err, ZB_EINFEASIBLE, "cost model: device %s has no "
                       "%s peak", C->device.name, bf16 ? "bf16" : "fp32");
    /* A TP group is tp consecutive ranks: inside a node when it fits. */
    bool intra = tp <= C->devices_per_node;
    double bw = intra ? C->intra_bw_Bps : C->inter_bw_Bps;
    double lat = intra ? C->intra_lat_s : C->inter_lat_s;
    x.ar_s = zb_allreduce_s(x.b * x.s * x.h * x.e, tp, COLL_BW_EFF * bw, lat);
    x.Vl = (A->vocab + tp - 1) / tp;
    x.ce_ar_s = zb_allreduce_s(8.0 * x.b * x.s * tp, tp, bw, lat) +
                zb_allreduce_s(8.0 * x.b * x.s * 2, tp, bw, lat);

    *out = (zb_cost_table){.tp = tp, .micro_batch = micro_batch,
                           .peak_flops = x.peak};
    block_time(&x, &out->layer);
    if (x.cpu) block_mem_cpu(&x, &out->layer);
    else block_mem(&x, &out->layer);
    /* CPU backend: each chunk's slot also holds its input, the input's
     * gradient (floats) and the token ids (int32) */
    out->chunk_act_bytes = x.cpu ? 8 * x.b * x.s * x.h + 4 * x.b * x.s : 0;
    out->layer.params = block_params(&x);
    embed_cost(&x, &out->embed);
    head_cost(&x, &out->head);
    norm_cost(&x, &out->head_norm);
    if (x.cpu) add_cpu_threads(&x, &C->device, out);
    out->vocab_params = x.Vl * x.h;
    out->p2p_bytes = x.b * x.s * x.h * x.e / (x.sp ? x.t : 1);
    out->p2p_intra_s = zb_p2p_s(out->p2p_bytes, C->intra_bw_Bps, C->intra_lat_s) +
                       C->intra_p2p_s;
    out->p2p_inter_s = zb_p2p_s(out->p2p_bytes, C->inter_bw_Bps, C->inter_lat_s) +
                       C->inter_p2p_s;
    return ZB_OK;
}

double zb_static_mem_bytes(const zb_model *m, double params, int dp) {
    /* Rajbhandari et al. 2020 (ZeRO) section 3.1: weights and gradients at
     * the training precision, AdamW's two fp32 moments and, under bf16, an
     * fp32 master copy: 2+2+12 = 16 bytes/param mixed, 4+4+8 = 16 fp32.
     * ZeRO-1 shards the optimizer part over the DP group. */
    double e = zb_precision_bytes(m->train.precision);
    double opt = 8 + (m->train.precision == ZB_PREC_BF16 ? 4 : 0);
    if (m->train.zero1 && dp > 1) opt /= dp;
    return params * (2 * e + opt);
}

double zb_workspace_bytes(const zb_model *m) {
    /* GPUs: allocator fragmentation, cuBLAS workspaces, NCCL buffers and
     * the CUDA context take about 1 GiB, more on large devices. The CPU
     * backend allocates everything up front; keep a small margin. */
    const zb_device *d = &m->cluster.device;
    if (strcasecmp(d->name, "cpu") == 0) return 64 * MIB;
    double pct = 0.05 * d->mem_bytes;
    return pct > GIB ? pct : GIB;
}

double zb_model_step_flops(const zb_model *m) {
    /* Narayanan et al. 2021 (appendix, FLOPs per iteration, less its
     * recomputation): 3x the forward matmul FLOPs (F, B, W). Per layer
     * and sequence the forward is 8sh^2 + 4shf + 4s^2h, the LM head 2shV
     * (counted once also with tied embeddings). With f = 4h this is
     * 72 B s l h^2 (1 + s/(6h) + V/(12 l h)). GQA and SwiGLU as
     * Megatron-LM's num_floating_point_operations counts them: Q and O
     * 4sh^2, K and V 4sh*kv, the MLP 2sh*f per matrix (3 for SwiGLU);
     * the attention core unmasked (4s^2h, causal or not). */
    const zb_arch *A = &m->arch;
    double B = m->train.global_batch, s = A->seq_len, h = A->hidden;
    double f = A->ffn_hidden, l = A->layers, V = A->vocab;
    double kv = (double)zb_arch_kv_heads(A) * (A->hidden / A->heads);
    double nmat = A->mlp == ZB_MLP_SWIGLU ? 3 : 2;
    double layer = (4 * s * h * h + 4 * s * h * kv) + 2 * nmat * s * h * f + 4 * s * s * h;
    return 3 * B * (l * layer + 2 * s * h * V);
}
