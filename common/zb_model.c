/* zb_model.c - model spec: defaults, parsing, validation, writing, and the
 * built-in device table (see zb_model.h; docs/model-format.md is the user
 * reference and cites the sources of every device number).
 *
 * Parsing goes section by section: check the section's keys first (so a typo
 * is reported as a typo, not as a missing key), then read each value with the
 * typed getters, then check the relations between values. Every message is
 * one line "file:line:col: ..." pointing at the offending node.
 */
#include "common/zb_model.h"

#include "common/zb_llmc.h"

#include <float.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define GIB 1073741824.0   /* memory_gib -> bytes */
#define TFLOPS 1e12        /* *_tflops -> FLOP/s */
#define GBPS 1e9           /* bandwidth_gbps (GB/s) -> bytes/s */
#define US_PER_S 1e6       /* latency_us -> s: divide (5 us is exactly 5e-6 s) */

/* Peak dense throughput and memory per device; sources in docs/model-format.md. */
static const zb_device k_devices[] = {
    {"a100-40gb", 312e12, 19.5e12, 40.0 * GIB, 1555e9, 0, 0, 0, 0, 0, 108},
    {"a100-80gb", 312e12, 19.5e12, 80.0 * GIB, 2039e9, 0, 0, 0, 0, 0, 108},
    /* GH100 (H100, H200): large-GEMM and attention-core efficiency
     * calibrated on Megatron-Core's H100 weak-scaling table
     * (docs/cost-model.md 2.6; the cost model's defaults fit A100 runs) */
    {"h100-sxm", 989e12, 67e12, 80.0 * GIB, 3350e9, 0.70, 0, 0.25, 0, 0, 132},
    {"h200", 989e12, 67e12, 141e9, 4800e9, 0.70, 0, 0.25, 0, 0, 132},
    {"b200", 2250e12, 80e12, 180e9, 8000e9, 0, 0, 0, 0, 0, 148},
    /* 304 compute units stand for SMs (a GEMM's partial last wave) */
    {"mi300x", 1307.4e12, 163.4e12, 192e9, 5300e9, 0, 0, 0, 0, 0, 304},
    /* An estimate for one multi-core x86 socket running our C kernels, not a
     * datasheet number: measure it with `zbplan calibrate`. */
    {"cpu", 0.1e12, 0.1e12, 16.0 * GIB, 20e9, 0, 0, 0, 0, 0, 0},
};
#define N_DEVICES ((int)(sizeof k_devices / sizeof k_devices[0]))

static const char *const k_device_names[] = {"a100-40gb", "a100-80gb", "h100-sxm", "h200",
                                             "b200",      "mi300x",    "cpu",      NULL};

/* Short names users type (nvidia-smi and cloud catalogues say "A100",
 * "H100"): each stands for the table entry most clusters run, the 80 GB
 * A100 (the 40 GB one keeps its full name) and the SXM H100. */
static const struct {
    const char *alias, *name;
} k_aliases[] = {
    {"a100", "a100-80gb"},
    {"h100", "h100-sxm"},
};

/* Default links of a node built around the device, one direction per GPU,
 * where they differ from the DGX A100 defaults (300 / 25 GB/s;
 * docs/model-format.md): NVLink 4 (H100, H200) 900 GB/s and NVLink 5
 * (B200) 1.8 TB/s both directions together, and one 400 Gb/s ConnectX-7
 * port per GPU between nodes (DGX H100, H200 and B200 datasheets); an
 * 8-GPU MI300X platform: seven Infinity Fabric links of 64 GB/s each way
 * per GPU (a full mesh, 448 GB/s each way in all) and one 400 Gb/s NIC per
 * GPU (AMD Instinct MI300X platform datasheet). The model file's
 * intra_node / inter_node keys win. */
static const struct {
    const char *name;
    double intra_gbps, inter_gbps;
} k_links[] = {
    {"h100-sxm", 450, 50},
    {"h200", 450, 50},
    {"b200", 900, 50},
    {"mi300x", 448, 50},
};

static void device_links(const zb_device *d, zb_cluster *c) {
    for (size_t i = 0; i < sizeof k_links / sizeof k_links[0]; i++)
        if (strcasecmp(d->name, k_links[i].name) == 0) {
            c->intra_bw_Bps = k_links[i].intra_gbps * GBPS;
            c->inter_bw_Bps = k_links[i].inter_gbps * GBPS;
        }
}

const zb_device *zb_device_lookup(const char *name) {
    for (size_t i = 0; i < sizeof k_aliases / sizeof k_aliases[0]; i++)
        if (strcasecmp(name, k_aliases[i].alias) == 0) name = k_aliases[i].name;
    for (int i = 0; i < N_DEVICES; i++)
        if (strcasecmp(name, k_devices[i].name) == 0) return &k_devices[i];
    return NULL;
}

void zb_device_known_text(char *buf, size_t cap) {
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; k_device_names[i] && n < cap; i++) {
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? ", " : "", k_device_names[i]);
        for (size_t a = 0; a < sizeof k_aliases / sizeof k_aliases[0] && n < cap; a++)
            if (strcmp(k_aliases[a].name, k_device_names[i]) == 0)
                n += (size_t)snprintf(buf + n, cap - n, " (or %s)", k_aliases[a].alias);
    }
}

const char *const *zb_device_names(void) { return k_device_names; }

int zb_precision_bytes(zb_precision p) { return p == ZB_PREC_BF16 ? 2 : 4; }

static const char *const k_precisions[] = {"fp32", "bf16", NULL};
static const char *const k_recomputes[] = {"none", "selective", "full", NULL};
static const char *const k_data_kinds[] = {"text", "shards", NULL};
static const char *const k_schedules[] = {"cosine", "constant", NULL};

static const char *const k_top_keys[] = {"name", "model", "training", "cluster", NULL};
static const char *const k_model_keys[] = {
    "arch", "layers", "hidden", "heads", "kv_heads", "ffn_hidden", "seq_len", "vocab",
    "mlp", "norm", "position", "rope_theta", "bias", "qkv_bias", "tied_embeddings", "params",
    "init",
    NULL};
static const char *const k_archs[] = {"gpt2", "llama", NULL};
static const char *const k_mlps[] = {"gelu", "swiglu", NULL};
static const char *const k_norms[] = {"layernorm", "rmsnorm", NULL};
static const char *const k_positions[] = {"learned", "rope", NULL};
static const char *const k_training_keys[] = {
    "global_batch", "micro_batch",       "steps", "seed", "precision", "recompute",
    "sequence_parallel", "zero1", "fused_attention", "tp_overlap",
    "tp_overlap_efficiency", "dp_overlap", "data", "val", "optimizer", NULL};
static const char *const k_data_keys[] = {"kind", "path", "order", NULL};
static const char *const k_val_keys[] = {"kind", "path", "every", "batches", NULL};
static const char *const k_orders[] = {"random", "sequential", NULL};
static const char *const k_optim_keys[] = {"lr",           "min_lr",    "beta1",
                                           "beta2",        "eps",       "weight_decay",
                                           "grad_clip",    "warmup_steps", "schedule",
                                           NULL};
static const char *const k_cluster_keys[] = {"nodes", "devices_per_node", "device",
                                             "intra_node", "inter_node",
                                             "memory_margin_pct", NULL};
static const char *const k_link_keys[] = {"bandwidth_gbps", "latency_us",
                                          "p2p_overhead_us", NULL};
static const char *const k_device_keys[] = {"name", "peak_bf16_tflops", "peak_fp32_tflops",
                                            "memory_gib", "memory_bandwidth_gbps",
                                            "gemm_efficiency", "gemm_tile",
                                            "attention_efficiency", "omp_region_us",
                                            "sm_count", NULL};

/* Everything optional gets its documented default. */
static void set_defaults(zb_model *m) {
    memset(m, 0, sizeof *m);
    m->arch.tied_embeddings = true;
    m->arch.rope_theta = 10000;   /* Su et al. 2021 (RoFormer) */
    zb_training *t = &m->train;
    t->micro_batch = 0;   /* auto */
    t->steps = 10;
    t->seed = 1234;
    t->precision = ZB_PREC_BF16;
    t->recompute = ZB_RECOMPUTE_NONE;
    t->data_kind = ZB_DATA_TEXT;
    t->val_kind = ZB_DATA_TEXT;
    t->val_batches = 1;
    t->opt = (zb_optim){.lr = 3e-4, .min_lr = 3e-5, .beta1 = 0.9, .beta2 = 0.95,
                        .eps = 1e-8, .weight_decay = 0.1, .grad_clip = 1.0,
                        .warmup_steps = 0, .cosine = true};
    zb_cluster *c = &m->cluster;
    c->nodes = 1;
    c->devices_per_node = 8;
    c->mem_margin = ZB_MEM_MARGIN_DEFAULT;
    c->intra_bw_Bps = 300 * GBPS;
    c->intra_lat_s = 5 / US_PER_S;
    c->inter_bw_Bps = 25 * GBPS;
    c->inter_lat_s = 10 / US_PER_S;
    /* docs/cost-model.md section 6: per-message cost of a pipeline transfer */
    c->intra_p2p_s = 20 / US_PER_S;
    c->inter_p2p_s = 40 / US_PER_S;
    t->tp_overlap_eff = 0.5;
}

/* ---- small helpers over the getters ---- */

/* Find a sub-mapping, check it is one and check its keys. *out = NULL when
 * absent and optional. where names it in messages ("'training.data'"). */
static zb_status section(const zb_ydoc *doc, const zb_ynode *parent, const char *key,
                         const char *parent_where, const char *where, bool required,
                         const char *const *allowed, const zb_ynode **out, zb_err *err) {
    *out = zb_ymap_get(parent, key);
    if (!*out) {
        if (!required) return ZB_OK;
        return zb_fail_at(err, doc->file, parent->line, parent->col,
                          "missing key '%s' in %s", key, parent_where);
    }
    ZB_TRY(zb_ynode_expect(doc, *out, ZB_Y_MAP, where, err));
    return zb_ymap_check_keys(doc, *out, where, allowed, err);
}

static zb_status get_int(const zb_ydoc *doc, const zb_ynode *map, const char *key,
                         bool required, long long min, long long max, int *out,
                         zb_err *err) {
    long long v = *out;
    ZB_TRY(zb_yget_int(doc, map, key, required, min, max, &v, err));
    *out = (int)v;   /* max <= INT_MAX at every call */
    return ZB_OK;
}

/* A number that must be > 0 (strictly), e.g. a bandwidth or a learning rate. */
static zb_status get_positive(const zb_ydoc *doc, const zb_ynode *map, const char *key,
                              bool required, double *out, zb_err *err) {
    double v = *out;
    ZB_TRY(zb_yget_double(doc, map, key, required, -DBL_MAX, DBL_MAX, &v, err));
    const zb_ynode *n = zb_ymap_get(map, key);
    if (n && !(v > 0))
        return zb_fail_at(err, doc->file, n->line, n->col, "'%s' must be > 0, got %g", key, v);
    *out = v;
    return ZB_OK;
}

/* A number in [0, 1): Adam's betas. */
static zb_status get_beta(const zb_ydoc *doc, const zb_ynode *map, const char *key,
                          double *out, zb_err *err) {
    double v = *out;
    ZB_TRY(zb_yget_double(doc, map, key, false, -DBL_MAX, DBL_MAX, &v, err));
    const zb_ynode *n = zb_ymap_get(map, key);
    if (n && !(v >= 0 && v < 1))
        return zb_fail_at(err, doc->file, n->line, n->col, "'%s' must be in [0, 1), got %g",
                          key, v);
    *out = v;
    return ZB_OK;
}

/* ---- sections ---- */

static zb_status resolve_path(const zb_ydoc *doc, const zb_ynode *n, const char *base_dir,
                              char *path, size_t cap, zb_err *err);

/* With model.init: a shape key must equal the checkpoint's value (or is
 * taken from it when absent). */
static zb_status check_init_shape(const zb_ydoc *doc, const zb_ynode *s, const char *key,
                                  int have, const char *ck_name, int ck_val,
                                  const char *path, zb_err *err) {
    if (have == ck_val) return ZB_OK;
    const zb_ynode *n = zb_ymap_get(s, key);
    return zb_fail_at(err, doc->file, n ? n->line : s->line, n ? n->col : s->col,
                      "'%s' is %d but the checkpoint %s has %s = %d", key, have, path,
                      ck_name, ck_val);
}

/* model.init: read the checkpoint's header, take the shapes it gives as the
 * defaults of the keys that follow. */
static zb_status parse_init(const zb_ydoc *doc, const zb_ynode *s, const char *base_dir,
                            zb_arch *a, zb_llmc_hdr *h, zb_err *err) {
    const zb_ynode *n = zb_ymap_get(s, "init");
    if (!n) return ZB_OK;
    ZB_TRY(zb_yget_str(doc, s, "init", false, a->init, sizeof a->init, err));
    if (!a->init[0])
        return zb_fail_at(err, doc->file, n->line, n->col, "'init' must name a checkpoint");
    ZB_TRY(resolve_path(doc, n, base_dir, a->init, sizeof a->init, err));
    zb_err e = {{0}};
    if (zb_llmc_read_header(a->init, h, &e) != ZB_OK)
        return zb_fail_at(err, doc->file, n->line, n->col, "%.400s", e.msg);
    a->layers = h->L;
    a->hidden = h->C;
    a->heads = h->NH;
    a->seq_len = h->maxT;
    a->vocab = h->V;
    a->init_maxT = h->maxT;
    a->init_Vp = h->Vp;
    return ZB_OK;
}

/* The checkpoint's shapes against the keys given. */
static zb_status check_init(const zb_ydoc *doc, const zb_ynode *s, const zb_arch *a,
                            const zb_llmc_hdr *h, zb_err *err) {
    const char *p = a->init;
    if (!zb_arch_is_gpt2(a)) {
        const zb_ynode *n = zb_ymap_get(s, "init");
        return zb_fail_at(err, doc->file, n->line, n->col, "'init' names an llm.c "
                          "checkpoint (%s), which holds GPT-2 blocks: 'arch', 'kv_heads', "
                          "'mlp', 'norm', 'position' and 'bias' must keep GPT-2's values", p);
    }
    ZB_TRY(check_init_shape(doc, s, "layers", a->layers, "L", h->L, p, err));
    ZB_TRY(check_init_shape(doc, s, "hidden", a->hidden, "C", h->C, p, err));
    ZB_TRY(check_init_shape(doc, s, "heads", a->heads, "NH", h->NH, p, err));
    ZB_TRY(check_init_shape(doc, s, "vocab", a->vocab, "V", h->V, p, err));
    ZB_TRY(check_init_shape(doc, s, "ffn_hidden", a->ffn_hidden, "4C", 4 * h->C, p, err));
    if (a->seq_len > h->maxT) {
        const zb_ynode *n = zb_ymap_get(s, "seq_len");
        return zb_fail_at(err, doc->file, n->line, n->col, "'seq_len' is %d but the "
                          "checkpoint %s has maxT = %d", a->seq_len, p, h->maxT);
    }
    if (!a->tied_embeddings) {
        const zb_ynode *n = zb_ymap_get(s, "tied_embeddings");
        return zb_fail_at(err, doc->file, n->line, n->col, "'tied_embeddings' is false "
                          "but llm.c checkpoints (%s) tie the LM head to wte", p);
    }
    return ZB_OK;
}

/* arch (a preset), then the block kinds it sets, each of which may be
 * given on its own and wins over the preset. */
static zb_status parse_block_kinds(const zb_ydoc *doc, const zb_ynode *s, zb_arch *a,
                                   zb_err *err) {
    int preset = 0;
    ZB_TRY(zb_yget_enum(doc, s, "arch", false, k_archs, &preset, err));
    if (preset == 1) {   /* llama: Touvron et al. 2023; Llama 3 (Dubey et al. 2024) */
        a->mlp = ZB_MLP_SWIGLU;
        a->norm = ZB_NORM_RMSNORM;
        a->position = ZB_POS_ROPE;
        a->no_bias = true;
        a->tied_embeddings = false;
    }
    int mlp = a->mlp, norm = a->norm, pos = a->position;
    ZB_TRY(zb_yget_enum(doc, s, "mlp", false, k_mlps, &mlp, err));
    ZB_TRY(zb_yget_enum(doc, s, "norm", false, k_norms, &norm, err));
    ZB_TRY(zb_yget_enum(doc, s, "position", false, k_positions, &pos, err));
    a->mlp = (zb_mlp)mlp;
    a->norm = (zb_norm)norm;
    a->position = (zb_position)pos;
    bool bias = !a->no_bias;
    ZB_TRY(zb_yget_bool(doc, s, "bias", false, &bias, err));
    a->no_bias = !bias;
    ZB_TRY(zb_yget_bool(doc, s, "qkv_bias", false, &a->qkv_bias, err));
    const zb_ynode *q = zb_ymap_get(s, "qkv_bias");
    if (q && !a->no_bias)
        return zb_fail_at(err, doc->file, q->line, q->col,
                          "'qkv_bias' needs 'bias: false' (with biases Q, K, V have them)");
    ZB_TRY(get_positive(doc, s, "rope_theta", false, &a->rope_theta, err));
    const zb_ynode *n = zb_ymap_get(s, "rope_theta");
    if (n && a->position != ZB_POS_ROPE)
        return zb_fail_at(err, doc->file, n->line, n->col,
                          "'rope_theta' needs 'position: rope' (position is learned)");
    return ZB_OK;
}

/* SwiGLU's customary width: 2/3 of 4h rounded up to a multiple of 256
 * (Touvron et al. 2023, the reference code's multiple_of). */
static int swiglu_default_ffn(int hidden) {
    long long f = (8LL * hidden + 2) / 3;
    return (int)((f + 255) / 256 * 256);
}

/* The relations between the shape keys: heads divide hidden, kv_heads
 * heads; params, when given, the count of the shapes. */
static zb_status check_arch(const zb_ydoc *doc, const zb_ynode *s, const zb_arch *a,
                            zb_err *err) {
    if (a->hidden % a->heads != 0) {
        const zb_ynode *n = zb_ymap_get(s, "heads");
        return zb_fail_at(err, doc->file, n->line, n->col,
                          "'heads' (%d) must divide 'hidden' (%d)", a->heads, a->hidden);
    }
    const zb_ynode *n = zb_ymap_get(s, "kv_heads");
    if (n && (a->kv_heads > a->heads || a->heads % a->kv_heads != 0))
        return zb_fail_at(err, doc->file, n->line, n->col,
                          "'kv_heads' (%d) must divide 'heads' (%d)", a->kv_heads, a->heads);
    long long given = 0;
    ZB_TRY(zb_yget_int(doc, s, "params", false, 1, LLONG_MAX, &given, err));
    n = zb_ymap_get(s, "params");
    unsigned long long have = (unsigned long long)zb_model_params(a);
    if (n && (unsigned long long)given != have)
        return zb_fail_at(err, doc->file, n->line, n->col, "'params' is %lld but the "
                          "model's shapes give %llu", given, have);
    return ZB_OK;
}

static zb_status parse_arch(const zb_ydoc *doc, const zb_ynode *root, const char *base_dir,
                            zb_arch *a, zb_err *err) {
    const zb_ynode *s;
    ZB_TRY(section(doc, root, "model", "the top level", "'model'", true, k_model_keys, &s,
                   err));
    zb_llmc_hdr h;
    ZB_TRY(parse_init(doc, s, base_dir, a, &h, err));
    ZB_TRY(parse_block_kinds(doc, s, a, err));
    bool req = !a->init[0];   /* a checkpoint gives the shapes */
    ZB_TRY(get_int(doc, s, "layers", req, 1, 100000, &a->layers, err));
    ZB_TRY(get_int(doc, s, "hidden", req, 1, 1 << 20, &a->hidden, err));
    ZB_TRY(get_int(doc, s, "heads", req, 1, 1 << 20, &a->heads, err));
    a->kv_heads = a->heads;
    ZB_TRY(get_int(doc, s, "kv_heads", false, 1, 1 << 20, &a->kv_heads, err));
    a->ffn_hidden = a->mlp == ZB_MLP_SWIGLU ? swiglu_default_ffn(a->hidden) : 4 * a->hidden;
    ZB_TRY(get_int(doc, s, "ffn_hidden", false, 1, 1 << 23, &a->ffn_hidden, err));
    ZB_TRY(get_int(doc, s, "seq_len", req, 1, 1 << 22, &a->seq_len, err));
    ZB_TRY(get_int(doc, s, "vocab", req, 1, 1 << 24, &a->vocab, err));
    ZB_TRY(zb_yget_bool(doc, s, "tied_embeddings", false, &a->tied_embeddings, err));
    if (a->init[0]) ZB_TRY(check_init(doc, s, a, &h, err));
    return check_arch(doc, s, a, err);
}

int zb_arch_kv_heads(const zb_arch *a) { return a->kv_heads > 0 ? a->kv_heads : a->heads; }

bool zb_arch_is_gpt2(const zb_arch *a) {
    return zb_arch_kv_heads(a) == a->heads && a->mlp == ZB_MLP_GELU && !a->qkv_bias &&
           a->norm == ZB_NORM_LAYERNORM && a->position == ZB_POS_LEARNED && !a->no_bias;
}

uint64_t zb_model_params(const zb_arch *a) {
    uint64_t h = (uint64_t)a->hidden, f = (uint64_t)a->ffn_hidden, V = (uint64_t)a->vocab;
    uint64_t kv = (uint64_t)zb_arch_kv_heads(a) * (h / (uint64_t)a->heads);   /* K/V width */
    uint64_t norm = a->norm == ZB_NORM_RMSNORM ? h : 2 * h;   /* gain (+ shift) */
    uint64_t nmat = a->mlp == ZB_MLP_SWIGLU ? 3 : 2;
    uint64_t layer = 2 * h * h + 2 * h * kv + nmat * h * f + 2 * norm;
    if (!a->no_bias)   /* Q, K, V, O; the MLP's up (and gate) and down */
        layer += 2 * h + 2 * kv + (nmat - 1) * f + h;
    else if (a->qkv_bias)   /* Q, K, V only (Qwen2) */
        layer += h + 2 * kv;
    uint64_t npos = (uint64_t)(a->init_maxT > 0 ? a->init_maxT : a->seq_len);
    uint64_t embed = V * h + (a->tied_embeddings ? 0 : V * h) +
                     (a->position == ZB_POS_LEARNED ? npos * h : 0);
    return (uint64_t)a->layers * layer + embed + norm;
}

/* micro_batch: a positive integer or the word auto (0: the planner picks). */
static zb_status parse_micro_batch(const zb_ydoc *doc, const zb_ynode *s, zb_training *t,
                                   zb_err *err) {
    const zb_ynode *n = zb_ymap_get(s, "micro_batch");
    if (!n) return ZB_OK;
    if (n->type == ZB_Y_SCALAR && strcmp(n->str, "auto") == 0) {
        t->micro_batch = 0;
        return ZB_OK;
    }
    bool numeric = n->type == ZB_Y_SCALAR && !n->quoted && n->str[0] &&
                   strchr("+-0123456789", n->str[0]);
    if (!numeric) {
        char got[80];
        if (n->type != ZB_Y_SCALAR)
            snprintf(got, sizeof got, "%s", n->type == ZB_Y_MAP ? "a mapping" : "a sequence");
        else if (!n->str[0] && !n->quoted)
            snprintf(got, sizeof got, "nothing");
        else
            snprintf(got, sizeof got, "%s'%.60s'", n->quoted ? "a quoted string " : "",
                     n->str);
        return zb_fail_at(err, doc->file, n->line, n->col,
                          "'micro_batch' must be a positive integer or auto, got %s", got);
    }
    long long v;
    ZB_TRY(zb_yscalar_int(doc, n, "'micro_batch'", 1, t->global_batch, &v, err));
    t->micro_batch = (int)v;
    if (t->global_batch % t->micro_batch != 0)
        return zb_fail_at(err, doc->file, n->line, n->col,
                          "'micro_batch' (%d) must divide 'global_batch' (%d)",
                          t->micro_batch, t->global_batch);
    return ZB_OK;
}

/* Join base_dir and a relative path; absolute and empty paths stay as they are. */
static zb_status resolve_path(const zb_ydoc *doc, const zb_ynode *n, const char *base_dir,
                              char *path, size_t cap, zb_err *err) {
    if (!path[0] || path[0] == '/' || !base_dir || !base_dir[0] ||
        strcmp(base_dir, ".") == 0)
        return ZB_OK;
    char joined[2048];
    int w = snprintf(joined, sizeof joined, "%s%s%s", base_dir,
                     base_dir[strlen(base_dir) - 1] == '/' ? "" : "/", path);
    if (w < 0 || (size_t)w >= cap)
        return zb_fail_at(err, doc->file, n->line, n->col,
                          "'path' is too long once joined with '%s'", base_dir);
    memcpy(path, joined, (size_t)w + 1);
    return ZB_OK;
}

static zb_status parse_data(const zb_ydoc *doc, const zb_ynode *train, const char *base_dir,
                            zb_training *t, zb_err *err) {
    const zb_ynode *s;
    ZB_TRY(section(doc, train, "data", "'training'", "'training.data'", false, k_data_keys,
                   &s, err));
    if (!s) return ZB_OK;
    int kind = t->data_kind;
    ZB_TRY(zb_yget_enum(doc, s, "kind", false, k_data_kinds, &kind, err));
    t->data_kind = (zb_data_kind)kind;
    ZB_TRY(zb_yget_str(doc, s, "path", false, t->data_path, sizeof t->data_path, err));
    int order = t->data_sequential;
    ZB_TRY(zb_yget_enum(doc, s, "order", false, k_orders, &order, err));
    t->data_sequential = order == 1;
    if (t->data_kind == ZB_DATA_SHARDS && !t->data_path[0])
        return zb_fail_at(err, doc->file, s->line, s->col,
                          "'training.data' needs a 'path' when 'kind' is shards");
    const zb_ynode *pn = zb_ymap_get(s, "path");
    return pn ? resolve_path(doc, pn, base_dir, t->data_path, sizeof t->data_path, err)
              : ZB_OK;
}

/* training.val: the validation source, read sequentially. */
static zb_status parse_val(const zb_ydoc *doc, const zb_ynode *train, const char *base_dir,
                           zb_training *t, zb_err *err) {
    const zb_ynode *s;
    ZB_TRY(section(doc, train, "val", "'training'", "'training.val'", false, k_val_keys,
                   &s, err));
    if (!s) return ZB_OK;
    int kind = t->data_kind;
    ZB_TRY(zb_yget_enum(doc, s, "kind", false, k_data_kinds, &kind, err));
    t->val_kind = (zb_data_kind)kind;
    ZB_TRY(zb_yget_str(doc, s, "path", true, t->val_path, sizeof t->val_path, err));
    const zb_ynode *pn = zb_ymap_get(s, "path");
    if (!t->val_path[0])
        return zb_fail_at(err, doc->file, pn->line, pn->col, "'path' must name a file");
    ZB_TRY(get_int(doc, s, "every", false, 0, INT_MAX, &t->val_every, err));
    ZB_TRY(get_int(doc, s, "batches", false, 1, 1000000, &t->val_batches, err));
    return resolve_path(doc, pn, base_dir, t->val_path, sizeof t->val_path, err);
}

/* lr / 10 as the decimal a user would write: 3e-3 / 10 is the double
 * 0.00030000000000000003, which plans would print in full; 15 significant
 * digits read back give 0.0003. */
static double tenth(double lr) {
    char buf[32];
    snprintf(buf, sizeof buf, "%.15g", lr / 10);
    return strtod(buf, NULL);
}

static zb_status parse_optim(const zb_ydoc *doc, const zb_ynode *train, zb_optim *o,
                             zb_err *err) {
    const zb_ynode *s;
    ZB_TRY(section(doc, train, "optimizer", "'training'", "'training.optimizer'", false,
                   k_optim_keys, &s, err));
    if (!s) return ZB_OK;
    if (zb_ymap_get(s, "lr")) {
        ZB_TRY(get_positive(doc, s, "lr", false, &o->lr, err));
        o->min_lr = tenth(o->lr);   /* default follows lr, so lr alone is always valid */
    }
    ZB_TRY(zb_yget_double(doc, s, "min_lr", false, 0, DBL_MAX, &o->min_lr, err));
    if (o->min_lr > o->lr) {
        const zb_ynode *n = zb_ymap_get(s, "min_lr");   /* the default never exceeds lr */
        return zb_fail_at(err, doc->file, n->line, n->col, "'min_lr' (%g) must be <= 'lr' (%g)",
                          o->min_lr, o->lr);
    }
    ZB_TRY(get_beta(doc, s, "beta1", &o->beta1, err));
    ZB_TRY(get_beta(doc, s, "beta2", &o->beta2, err));
    ZB_TRY(get_positive(doc, s, "eps", false, &o->eps, err));
    ZB_TRY(zb_yget_double(doc, s, "weight_decay", false, 0, DBL_MAX, &o->weight_decay, err));
    ZB_TRY(zb_yget_double(doc, s, "grad_clip", false, 0, DBL_MAX, &o->grad_clip, err));
    ZB_TRY(get_int(doc, s, "warmup_steps", false, 0, INT_MAX, &o->warmup_steps, err));
    int sched = o->cosine ? 0 : 1;
    ZB_TRY(zb_yget_enum(doc, s, "schedule", false, k_schedules, &sched, err));
    o->cosine = sched == 0;
    return ZB_OK;
}

static zb_status parse_training(const zb_ydoc *doc, const zb_ynode *root,
                                const char *base_dir, zb_training *t, zb_err *err) {
    const zb_ynode *s;
    ZB_TRY(section(doc, root, "training", "the top level", "'training'", true,
                   k_training_keys, &s, err));
    ZB_TRY(get_int(doc, s, "global_batch", true, 1, 1 << 24, &t->global_batch, err));
    ZB_TRY(parse_micro_batch(doc, s, t, err));
    ZB_TRY(get_int(doc, s, "steps", false, 1, 1000000000, &t->steps, err));
    long long seed = (long long)t->seed;
    ZB_TRY(zb_yget_int(doc, s, "seed", false, 0, LLONG_MAX, &seed, err));
    t->seed = (uint64_t)seed;
    int prec = t->precision, rec = t->recompute;
    ZB_TRY(zb_yget_enum(doc, s, "precision", false, k_precisions, &prec, err));
    ZB_TRY(zb_yget_enum(doc, s, "recompute", false, k_recomputes, &rec, err));
    t->precision = (zb_precision)prec;
    t->recompute = (zb_recompute)rec;
    ZB_TRY(zb_yget_bool(doc, s, "sequence_parallel", false, &t->sequence_parallel, err));
    ZB_TRY(zb_yget_bool(doc, s, "zero1", false, &t->zero1, err));
    ZB_TRY(zb_yget_bool(doc, s, "fused_attention", false, &t->fused_attention, err));
    ZB_TRY(zb_yget_bool(doc, s, "tp_overlap", false, &t->tp_overlap, err));
    ZB_TRY(zb_yget_double(doc, s, "tp_overlap_efficiency", false, 0, 1,
                          &t->tp_overlap_eff, err));
    ZB_TRY(zb_yget_bool(doc, s, "dp_overlap", false, &t->dp_overlap, err));
    ZB_TRY(parse_data(doc, s, base_dir, t, err));
    ZB_TRY(parse_val(doc, s, base_dir, t, err));
    return parse_optim(doc, s, &t->opt, err);
}

static zb_status parse_device_map(const zb_ydoc *doc, const zb_ynode *n, zb_device *d,
                                  zb_err *err) {
    ZB_TRY(zb_ymap_check_keys(doc, n, "'cluster.device'", k_device_keys, err));
    double bf16 = 0, fp32 = 0, gib = 0, gbps = 0, eff = 0, tile = 0, attn = 0,
           region_us = 0;
    ZB_TRY(zb_yget_str(doc, n, "name", true, d->name, sizeof d->name, err));
    ZB_TRY(get_positive(doc, n, "peak_bf16_tflops", true, &bf16, err));
    ZB_TRY(get_positive(doc, n, "peak_fp32_tflops", true, &fp32, err));
    ZB_TRY(get_positive(doc, n, "memory_gib", true, &gib, err));
    ZB_TRY(get_positive(doc, n, "memory_bandwidth_gbps", false, &gbps, err));
    ZB_TRY(zb_yget_double(doc, n, "gemm_efficiency", false, 0, 1, &eff, err));
    ZB_TRY(zb_yget_double(doc, n, "gemm_tile", false, 0, 4096, &tile, err));
    ZB_TRY(zb_yget_double(doc, n, "attention_efficiency", false, 0, 1, &attn, err));
    ZB_TRY(zb_yget_double(doc, n, "omp_region_us", false, 0, 1e6, &region_us, err));
    long long sms = 0;
    ZB_TRY(zb_yget_int(doc, n, "sm_count", false, 0, 100000, &sms, err));
    d->sm_count = (int)sms;
    d->peak_bf16_flops = bf16 * TFLOPS;
    d->peak_fp32_flops = fp32 * TFLOPS;
    d->mem_bytes = gib * GIB;
    /* Without a bandwidth: a machine balance of 200 FLOP/byte at the bf16
     * peak (A100: 312 TFLOP/s over 1.56 TB/s). */
    d->mem_bw_Bps = gbps > 0 ? gbps * GBPS : d->peak_bf16_flops / 200;
    d->gemm_eff = eff;
    d->gemm_tile = tile;
    d->attn_eff = attn;
    d->omp_region_s = region_us / US_PER_S;
    return ZB_OK;
}

/* device: a table name, or a mapping with explicit numbers. */
static zb_status parse_device(const zb_ydoc *doc, const zb_ynode *cl, zb_device *d,
                              zb_err *err) {
    const zb_ynode *n = zb_ymap_get(cl, "device");
    if (!n)
        return zb_fail_at(err, doc->file, cl->line, cl->col, "missing key 'device' in 'cluster'");
    if (n->type == ZB_Y_MAP) return parse_device_map(doc, n, d, err);
    if (n->type == ZB_Y_SEQ || !n->str[0])
        return zb_fail_at(err, doc->file, n->line, n->col,
                          "'device' must be a device name or a mapping, got %s",
                          n->type == ZB_Y_SEQ ? "a sequence" : "nothing");
    const zb_device *known = zb_device_lookup(n->str);
    if (!known) {
        char list[256];
        zb_device_known_text(list, sizeof list);
        return zb_fail_at(err, doc->file, n->line, n->col,
                          "unknown device '%.60s'; known (any case): %s", n->str, list);
    }
    *d = *known;
    return ZB_OK;
}

static zb_status parse_link(const zb_ydoc *doc, const zb_ynode *cl, const char *key,
                            const char *where, double *bw_Bps, double *lat_s,
                            double *p2p_s, zb_err *err) {
    const zb_ynode *s;
    ZB_TRY(section(doc, cl, key, "'cluster'", where, false, k_link_keys, &s, err));
    if (!s) return ZB_OK;
    double gbps = 0, us = 0;
    if (zb_ymap_get(s, "bandwidth_gbps")) {
        ZB_TRY(get_positive(doc, s, "bandwidth_gbps", false, &gbps, err));
        *bw_Bps = gbps * GBPS;
    }
    if (zb_ymap_get(s, "latency_us")) {
        ZB_TRY(zb_yget_double(doc, s, "latency_us", false, 0, DBL_MAX, &us, err));
        *lat_s = us / US_PER_S;
    }
    if (zb_ymap_get(s, "p2p_overhead_us")) {
        ZB_TRY(zb_yget_double(doc, s, "p2p_overhead_us", false, 0, DBL_MAX, &us, err));
        *p2p_s = us / US_PER_S;
    }
    return ZB_OK;
}

static zb_status parse_cluster(const zb_ydoc *doc, const zb_ynode *root, zb_cluster *c,
                               zb_err *err) {
    const zb_ynode *s;
    ZB_TRY(section(doc, root, "cluster", "the top level", "'cluster'", true, k_cluster_keys,
                   &s, err));
    ZB_TRY(get_int(doc, s, "nodes", false, 1, 100000, &c->nodes, err));
    ZB_TRY(get_int(doc, s, "devices_per_node", false, 1, 1024, &c->devices_per_node, err));
    ZB_TRY(parse_device(doc, s, &c->device, err));
    device_links(&c->device, c);
    if (zb_ymap_get(s, "memory_margin_pct")) {
        double pct = 0;
        ZB_TRY(zb_yget_double(doc, s, "memory_margin_pct", false, 0, 99, &pct, err));
        c->mem_margin = pct / 100;
    }
    ZB_TRY(parse_link(doc, s, "intra_node", "'cluster.intra_node'", &c->intra_bw_Bps,
                      &c->intra_lat_s, &c->intra_p2p_s, err));
    return parse_link(doc, s, "inter_node", "'cluster.inter_node'", &c->inter_bw_Bps,
                      &c->inter_lat_s, &c->inter_p2p_s, err);
}

/* name: given, or the file name without folder and extension. */
static zb_status parse_name(const zb_ydoc *doc, const zb_ynode *root, char *name,
                            size_t cap, zb_err *err) {
    const char *base = strrchr(doc->file, '/');
    base = base ? base + 1 : doc->file;
    size_t n = strcspn(base, ".");
    snprintf(name, cap, "%.*s", (int)(n < cap ? n : cap - 1), base);
    ZB_TRY(zb_yget_str(doc, root, "name", false, name, cap, err));
    const zb_ynode *node = zb_ymap_get(root, "name");
    if (node && !name[0])
        return zb_fail_at(err, doc->file, node->line, node->col, "'name' must not be empty");
    return ZB_OK;
}

zb_status zb_model_parse(const zb_ydoc *doc, const zb_ynode *root,
                         const char *const *extra_keys, const char *base_dir,
                         zb_model *out, zb_err *err) {
    ZB_TRY(zb_ynode_expect(doc, root, ZB_Y_MAP, "the top level", err));
    const char *allowed[64];
    int n = 0;
    for (int i = 0; k_top_keys[i]; i++) allowed[n++] = k_top_keys[i];
    for (int i = 0; extra_keys && extra_keys[i] && n < 63; i++) allowed[n++] = extra_keys[i];
    allowed[n] = NULL;
    ZB_TRY(zb_ymap_check_keys(doc, root, "the top level", allowed, err));
    set_defaults(out);
    ZB_TRY(parse_name(doc, root, out->name, sizeof out->name, err));
    ZB_TRY(parse_arch(doc, root, base_dir, &out->arch, err));
    ZB_TRY(parse_training(doc, root, base_dir, &out->train, err));
    return parse_cluster(doc, root, &out->cluster, err);
}

zb_status zb_model_load(const char *path, zb_model *out, zb_err *err) {
    zb_ydoc doc;
    ZB_TRY(zb_ydoc_load(path, &doc, err));
    /* The folder holding the file: "" (none), "/" or "a/b". */
    char base_dir[1024] = "";
    const char *slash = strrchr(path, '/');
    if (slash) {
        size_t n = slash == path ? 1 : (size_t)(slash - path);
        if (n >= sizeof base_dir) n = sizeof base_dir - 1;
        memcpy(base_dir, path, n);
        base_dir[n] = '\0';
    }
    zb_status s = zb_model_parse(&doc, doc.root, NULL, base_dir, out, err);
    zb_ydoc_free(&doc);
    return s;
}

/* ---- writing ---- */

/* File units from struct units: the inverse of the parser's conversions.
 * For every value the parser produces (t * scale, or t / scale for
 * latencies), converting back and parsing again gives the same double; the
 * round-trip test checks this on every shipped model. */
static double in_units(double v, double scale) { return v / scale; }
static double in_us(double seconds) { return seconds * US_PER_S; }

static void begin_map(zb_yw *w, const char *key) {
    zb_yw_str(w, key);
    zb_yw_map_begin(w, false);
}

static void write_arch(zb_yw *w, const zb_arch *a, bool with_params) {
    begin_map(w, "model");
    zb_yw_kint(w, "layers", a->layers);
    zb_yw_kint(w, "hidden", a->hidden);
    zb_yw_kint(w, "heads", a->heads);
    zb_yw_kint(w, "ffn_hidden", a->ffn_hidden);
    zb_yw_kint(w, "seq_len", a->seq_len);
    zb_yw_kint(w, "vocab", a->vocab);
    zb_yw_kbool(w, "tied_embeddings", a->tied_embeddings);
    if (!zb_arch_is_gpt2(a)) {   /* GPT-2's plans stay as they were */
        zb_yw_kint(w, "kv_heads", zb_arch_kv_heads(a));
        zb_yw_kstr(w, "mlp", k_mlps[a->mlp]);
        zb_yw_kstr(w, "norm", k_norms[a->norm]);
        zb_yw_kstr(w, "position", k_positions[a->position]);
        if (a->position == ZB_POS_ROPE) zb_yw_kdouble(w, "rope_theta", a->rope_theta);
        zb_yw_kbool(w, "bias", !a->no_bias);
        if (a->no_bias && a->qkv_bias) zb_yw_kbool(w, "qkv_bias", true);
        if (with_params) zb_yw_kint(w, "params", (long long)zb_model_params(a));
    }
    if (a->init[0]) zb_yw_kstr(w, "init", a->init);
    zb_yw_map_end(w);
}

static void write_optim(zb_yw *w, const zb_optim *o) {
    begin_map(w, "optimizer");
    zb_yw_kdouble(w, "lr", o->lr);
    zb_yw_kdouble(w, "min_lr", o->min_lr);
    zb_yw_kdouble(w, "beta1", o->beta1);
    zb_yw_kdouble(w, "beta2", o->beta2);
    zb_yw_kdouble(w, "eps", o->eps);
    zb_yw_kdouble(w, "weight_decay", o->weight_decay);
    zb_yw_kdouble(w, "grad_clip", o->grad_clip);
    zb_yw_kint(w, "warmup_steps", o->warmup_steps);
    zb_yw_kstr(w, "schedule", k_schedules[o->cosine ? 0 : 1]);
    zb_yw_map_end(w);
}

static void write_training(zb_yw *w, const zb_training *t) {
    begin_map(w, "training");
    zb_yw_kint(w, "global_batch", t->global_batch);
    if (t->micro_batch > 0)
        zb_yw_kint(w, "micro_batch", t->micro_batch);
    else
        zb_yw_kstr(w, "micro_batch", "auto");
    zb_yw_kint(w, "steps", t->steps);
    zb_yw_kint(w, "seed", (long long)t->seed);
    zb_yw_kstr(w, "precision", k_precisions[t->precision]);
    zb_yw_kstr(w, "recompute", k_recomputes[t->recompute]);
    zb_yw_kbool(w, "sequence_parallel", t->sequence_parallel);
    zb_yw_kbool(w, "zero1", t->zero1);
    zb_yw_kbool(w, "fused_attention", t->fused_attention);
    zb_yw_kbool(w, "tp_overlap", t->tp_overlap);
    zb_yw_kdouble(w, "tp_overlap_efficiency", t->tp_overlap_eff);
    zb_yw_kbool(w, "dp_overlap", t->dp_overlap);
    begin_map(w, "data");
    zb_yw_kstr(w, "kind", k_data_kinds[t->data_kind]);
    zb_yw_kstr(w, "path", t->data_path);
    if (t->data_sequential) zb_yw_kstr(w, "order", k_orders[1]);
    zb_yw_map_end(w);
    if (t->val_path[0]) {   /* only when set: plans without one stay as they were */
        begin_map(w, "val");
        zb_yw_kstr(w, "kind", k_data_kinds[t->val_kind]);
        zb_yw_kstr(w, "path", t->val_path);
        zb_yw_kint(w, "every", t->val_every);
        zb_yw_kint(w, "batches", t->val_batches);
        zb_yw_map_end(w);
    }
    write_optim(w, &t->opt);
    zb_yw_map_end(w);
}

static void write_link(zb_yw *w, const char *key, double bw_Bps, double lat_s,
                       double p2p_s) {
    begin_map(w, key);
    zb_yw_kdouble(w, "bandwidth_gbps", in_units(bw_Bps, GBPS));
    zb_yw_kdouble(w, "latency_us", in_us(lat_s));
    zb_yw_kdouble(w, "p2p_overhead_us", in_us(p2p_s));
    zb_yw_map_end(w);
}

static void write_cluster(zb_yw *w, const zb_cluster *c) {
    begin_map(w, "cluster");
    zb_yw_kint(w, "nodes", c->nodes);
    zb_yw_kint(w, "devices_per_node", c->devices_per_node);
    /* Always the explicit numbers: a plan must not depend on the table. */
    begin_map(w, "device");
    zb_yw_kstr(w, "name", c->device.name);
    zb_yw_kdouble(w, "peak_bf16_tflops", in_units(c->device.peak_bf16_flops, TFLOPS));
    zb_yw_kdouble(w, "peak_fp32_tflops", in_units(c->device.peak_fp32_flops, TFLOPS));
    zb_yw_kdouble(w, "memory_gib", in_units(c->device.mem_bytes, GIB));
    zb_yw_kdouble(w, "memory_bandwidth_gbps", in_units(c->device.mem_bw_Bps, GBPS));
    if (c->device.gemm_eff > 0)
        zb_yw_kdouble(w, "gemm_efficiency", c->device.gemm_eff);
    if (c->device.gemm_tile > 0)
        zb_yw_kdouble(w, "gemm_tile", c->device.gemm_tile);
    if (c->device.attn_eff > 0)
        zb_yw_kdouble(w, "attention_efficiency", c->device.attn_eff);
    if (c->device.omp_region_s > 0)
        zb_yw_kdouble(w, "omp_region_us", c->device.omp_region_s * US_PER_S);
    if (c->device.sm_count > 0) zb_yw_kint(w, "sm_count", c->device.sm_count);
    zb_yw_map_end(w);
    write_link(w, "intra_node", c->intra_bw_Bps, c->intra_lat_s, c->intra_p2p_s);
    write_link(w, "inter_node", c->inter_bw_Bps, c->inter_lat_s, c->inter_p2p_s);
    /* the default stays implicit: plans made with it keep their bytes */
    if (c->mem_margin != ZB_MEM_MARGIN_DEFAULT)
        zb_yw_kdouble(w, "memory_margin_pct", 100 * c->mem_margin);
    zb_yw_map_end(w);
}

void zb_model_write(zb_yw *w, const zb_model *m) { zb_model_write_keys(w, m, true); }

void zb_model_write_keys(zb_yw *w, const zb_model *m, bool with_params) {
    zb_yw_kstr(w, "name", m->name);
    write_arch(w, &m->arch, with_params);
    write_training(w, &m->train);
    write_cluster(w, &m->cluster);
}
