/* hf_import.c - a Hugging Face config.json as a zb model (hf_import.h).
 *
 * The config is parsed by libyaml into the same node tree as a model file;
 * the values are read with the typed getters (so a wrong type or a missing
 * key is one line "config.json:line:col: ..."), checked where zb's rules
 * would otherwise report a place in the generated text, and written out as
 * a model file's text, which zb_model_parse then validates under --set.
 */
#include "planner/cli/hf_import.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/zb_yaml.h"
#include "planner/cli/cli.h"
#include "planner/cli/guard.h"

/* Longest training sequence an import takes from max_position_embeddings:
 * Llama 3 pretrains at 8192 (Dubey et al. 2024) while 3.1's config allows
 * 131072 after long-context training; --set model.seq_len=N changes it. */
#define HF_MAX_SEQ 8192

/* Training and cluster defaults of an imported model (docs/zbplan.md). */
static const char k_training[] =
    "training:\n"
    "  global_batch: 512\n"
    "  micro_batch: auto\n"
    "  precision: bf16\n"
    "  recompute: selective\n"
    "  sequence_parallel: true\n"
    "  zero1: true\n"
    "  fused_attention: true\n"
    "cluster:\n"
    "  nodes: 1\n"
    "  devices_per_node: 8\n"
    "  device: h100-sxm\n";

static const struct {
    const char *arch, *type;   /* "architectures"[0], "model_type" */
    bool llama, qkv_bias;   /* Qwen2: Q, K, V with biases */
} k_known[] = {
    {"LlamaForCausalLM", "llama", true, false},
    {"MistralForCausalLM", "mistral", true, false},
    {"Qwen2ForCausalLM", "qwen2", true, true},
    {"GPT2LMHeadModel", "gpt2", false, false},
};
#define N_KNOWN ((int)(sizeof k_known / sizeof k_known[0]))

/* What the model file needs from the config. */
typedef struct {
    bool llama, qkv_bias;
    long long layers, hidden, heads, kv_heads, ffn, seq, vocab;
    double rope_theta;
    bool tied;
} hf_shape;

bool zb_hf_is_json(const char *path) {
    size_t n = strlen(path);
    return n >= 5 && strcasecmp(path + n - 5, ".json") == 0;
}

/* ---- reading ---- */

static bool is_null(const zb_ynode *n) {
    return n && n->type == ZB_Y_SCALAR && !n->quoted && strcmp(n->str, "null") == 0;
}

/* An integer that may be absent or null (then *out keeps its default). */
static zb_status opt_int(const zb_ydoc *doc, const zb_ynode *root, const char *key,
                         long long max, long long *out, zb_err *err) {
    if (is_null(zb_ymap_get(root, key))) return ZB_OK;
    return zb_yget_int(doc, root, key, false, 1, max, out, err);
}

static zb_status req_int(const zb_ydoc *doc, const zb_ynode *root, const char *key,
                         long long max, long long *out, zb_err *err) {
    const zb_ynode *n = zb_ymap_get(root, key);
    if (is_null(n))
        return zb_fail_at(err, doc->file, n->line, n->col, "'%s' must be an integer, got null",
                          key);
    return zb_yget_int(doc, root, key, true, 1, max, out, err);
}

static const char k_arch_key[] = "architectures";

/* The architecture: "architectures"[0], else "model_type". */
static zb_status find_arch(const zb_ydoc *doc, const zb_ynode *root, int *which,
                           zb_err *err) {
    const zb_ynode *n = zb_ymap_get(root, "architectures");
    const char *key = k_arch_key;   /* or "model_type": match by type */
    if (n && n->type == ZB_Y_SEQ && n->n > 0 && n->items[0]->type == ZB_Y_SCALAR) {
        n = n->items[0];
    } else if (n) {
        return zb_fail_at(err, doc->file, n->line, n->col,
                          "'architectures' must be a list of names");
    } else if ((n = zb_ymap_get(root, "model_type")) && n->type == ZB_Y_SCALAR) {
        key = "model_type";
    } else {
        return zb_fail_at(err, doc->file, root->line, root->col,
                          "missing key 'architectures' (or 'model_type') in the top level");
    }
    for (int i = 0; i < N_KNOWN; i++)
        if (strcmp(n->str, key == k_arch_key ? k_known[i].arch : k_known[i].type) == 0) {
            *which = i;
            return ZB_OK;
        }
    return zb_fail_at(err, doc->file, n->line, n->col,
                      "unknown architecture '%.80s' in '%s'; zbplan imports "
                      "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM and "
                      "GPT2LMHeadModel", n->str, key);
}

static zb_status read_llama(const zb_ydoc *doc, const zb_ynode *r, hf_shape *s, zb_err *err) {
    ZB_TRY(req_int(doc, r, "hidden_size", 1 << 20, &s->hidden, err));
    ZB_TRY(req_int(doc, r, "intermediate_size", 1 << 23, &s->ffn, err));
    ZB_TRY(req_int(doc, r, "num_attention_heads", 1 << 20, &s->heads, err));
    s->kv_heads = s->heads;   /* Hugging Face's default: multi-head */
    ZB_TRY(opt_int(doc, r, "num_key_value_heads", 1 << 20, &s->kv_heads, err));
    ZB_TRY(req_int(doc, r, "num_hidden_layers", 100000, &s->layers, err));
    ZB_TRY(req_int(doc, r, "vocab_size", 1 << 24, &s->vocab, err));
    ZB_TRY(req_int(doc, r, "max_position_embeddings", 1LL << 40, &s->seq, err));
    s->rope_theta = 10000;
    if (!is_null(zb_ymap_get(r, "rope_theta")))
        ZB_TRY(zb_yget_double(doc, r, "rope_theta", false, 1e-300, 1e300, &s->rope_theta,
                              err));
    s->tied = false;   /* LlamaConfig, MistralConfig, Qwen2Config */
    ZB_TRY(zb_yget_bool(doc, r, "tie_word_embeddings", false, &s->tied, err));
    long long head_dim = 0;
    ZB_TRY(opt_int(doc, r, "head_dim", 1 << 20, &head_dim, err));
    const zb_ynode *n = zb_ymap_get(r, "head_dim");
    if (head_dim && s->hidden % s->heads == 0 && head_dim != s->hidden / s->heads)
        return zb_fail_at(err, doc->file, n->line, n->col, "'head_dim' (%lld) is not "
                          "hidden_size / num_attention_heads (%lld): zb's attention "
                          "has heads x head_dim = hidden", head_dim, s->hidden / s->heads);
    return ZB_OK;
}

static zb_status read_gpt2(const zb_ydoc *doc, const zb_ynode *r, hf_shape *s, zb_err *err) {
    ZB_TRY(req_int(doc, r, "n_embd", 1 << 20, &s->hidden, err));
    ZB_TRY(req_int(doc, r, "n_layer", 100000, &s->layers, err));
    ZB_TRY(req_int(doc, r, "n_head", 1 << 20, &s->heads, err));
    s->kv_heads = s->heads;
    ZB_TRY(req_int(doc, r, "vocab_size", 1 << 24, &s->vocab, err));
    const char *pos = zb_ymap_get(r, "n_positions") || !zb_ymap_get(r, "n_ctx")
                          ? "n_positions" : "n_ctx";
    ZB_TRY(req_int(doc, r, pos, 1LL << 40, &s->seq, err));
    s->ffn = 4 * s->hidden;   /* n_inner: null means 4 n_embd */
    ZB_TRY(opt_int(doc, r, "n_inner", 1 << 23, &s->ffn, err));
    s->tied = true;
    return zb_yget_bool(doc, r, "tie_word_embeddings", false, &s->tied, err);
}

/* heads divide hidden, K/V heads divide heads: named by the config's keys. */
static zb_status check_heads(const zb_ydoc *doc, const zb_ynode *r, const hf_shape *s,
                             zb_err *err) {
    const char *hk = s->llama ? "num_attention_heads" : "n_head";
    const zb_ynode *n = zb_ymap_get(r, hk);
    if (s->hidden % s->heads)
        return zb_fail_at(err, doc->file, n->line, n->col, "'%s' (%lld) must divide '%s' "
                          "(%lld)", hk, s->heads, s->llama ? "hidden_size" : "n_embd",
                          s->hidden);
    n = zb_ymap_get(r, "num_key_value_heads");
    if (s->kv_heads > s->heads || s->heads % s->kv_heads)
        return zb_fail_at(err, doc->file, n->line, n->col, "'num_key_value_heads' (%lld) "
                          "must divide 'num_attention_heads' (%lld)", s->kv_heads, s->heads);
    return ZB_OK;
}

/* ---- writing the model text ---- */

/* The model's name: the config's folder for .../NAME/config.json, else
 * the file's name; characters other than [A-Za-z0-9._-] become '-'. */
static void model_name(const char *path, char *name, size_t cap) {
    const char *base = strrchr(path, '/');
    const char *start = base ? base + 1 : path;
    size_t len = strlen(start) - 5;   /* without ".json" */
    if (strcasecmp(start, "config.json") == 0 && base && base > path) {
        const char *dir = base;
        while (dir > path && dir[-1] != '/') dir--;
        start = dir;
        len = (size_t)(base - dir);
    }
    size_t o = 0;
    for (size_t i = 0; i < len && o + 1 < cap; i++) {
        char c = start[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
        name[o++] = ok ? c : '-';
    }
    name[o] = '\0';
    if (!o) snprintf(name, cap, "imported");
}

static char *model_text(const char *path, const hf_shape *s, zb_err *err) {
    char name[64], theta[80] = "";
    model_name(path, name, sizeof name);
    if (s->llama)
        snprintf(theta, sizeof theta, "  rope_theta: %.17g\n%s", s->rope_theta,
                 s->qkv_bias ? "  qkv_bias: true\n" : "");
    long long seq = s->seq < HF_MAX_SEQ ? s->seq : HF_MAX_SEQ;
    size_t cap = 1024 + sizeof k_training;
    char *text = malloc(cap);
    if (!text) {
        zb_fail(err, ZB_ENOMEM, "out of memory importing %s", path);
        return NULL;
    }
    snprintf(text, cap,
             "name: '%s'\nmodel:\n  arch: %s\n  layers: %lld\n  hidden: %lld\n"
             "  heads: %lld\n  kv_heads: %lld\n  ffn_hidden: %lld\n  seq_len: %lld\n"
             "  vocab: %lld\n%s  tied_embeddings: %s\n%s",
             name, s->llama ? "llama" : "gpt2", s->layers, s->hidden, s->heads,
             s->kv_heads, s->ffn, seq, s->vocab, theta, s->tied ? "true" : "false",
             k_training);
    return text;
}

zb_status zb_hf_model_text(const char *path, char **text, zb_err *err) {
    *text = NULL;
    zb_ydoc doc;
    ZB_TRY(zb_ydoc_load(path, &doc, err));
    const zb_ynode *r = doc.root;
    zb_status st = r ? zb_ynode_expect(&doc, r, ZB_Y_MAP, "the top level", err)
                     : zb_fail(err, ZB_EINPUT, "%s:1:1: empty file, not a config.json", path);
    int which = 0;
    if (st == ZB_OK) st = find_arch(&doc, r, &which, err);
    hf_shape s = {.llama = k_known[which].llama, .qkv_bias = k_known[which].qkv_bias};
    if (st == ZB_OK)
        st = s.llama ? read_llama(&doc, r, &s, err) : read_gpt2(&doc, r, &s, err);
    if (st == ZB_OK) st = check_heads(&doc, r, &s, err);
    if (st == ZB_OK && !(*text = model_text(path, &s, err))) st = ZB_ENOMEM;
    zb_ydoc_free(&doc);
    return st;
}

zb_status zb_hf_import(const char *path, const zb_overrides *sets, zb_model *out,
                       zb_err *err) {
    char *text;
    ZB_TRY(zb_hf_model_text(path, &text, err));
    char name[600];
    snprintf(name, sizeof name, "%s (imported)", path);
    zb_status st = zb_model_load_set_string(name, text, sets, out, err);
    free(text);
    return st;
}

/* ---- zbplan import ---- */

static const char k_usage[] =
    "usage: zbplan import CONFIG.json [-o MODEL.yaml] [--set KEY=VALUE]...\n"
    "Reads a Hugging Face config.json (LlamaForCausalLM, MistralForCausalLM,\n"
    "Qwen2ForCausalLM, GPT2LMHeadModel) and writes a zb model file with every\n"
    "key explicit: the shapes from the config, training and cluster defaults\n"
    "(docs/zbplan.md) to edit or to change with --set. zbplan CONFIG.json\n"
    "imports and plans in one go.\n"
    "  -o FILE          the model file (default: model.yaml)\n"
    "  --set KEY=VALUE  change a key of the model before it is checked, e.g.\n"
    "                   --set training.global_batch=1024 --set cluster.nodes=16\n"
    "  -h, --help       this text\n";

typedef struct {
    const char *in, *out;
    zb_overrides sets;
    bool help;
} import_args;

static zb_status import_parse(int argc, char **argv, import_args *a, zb_err *err) {
    memset(a, 0, sizeof *a);
    a->out = "model.yaml";
    for (int i = 1; i < argc;) {   /* zb_cli_opt steps past what it takes */
        const char *v;
        zb_status st = ZB_OK;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) a->help = true, i++;
        else if (zb_cli_opt(argc, argv, &i, "-o", &v, &st, err)) a->out = v;
        else if (zb_cli_opt(argc, argv, &i, "--set", &v, &st, err))
            st = st == ZB_OK ? zb_overrides_add(&a->sets, v, err) : st;
        else if (argv[i][0] == '-' && argv[i][1])
            return zb_fail(err, ZB_EINPUT, "import: unknown option '%s' (zbplan import "
                           "--help)", argv[i]);
        else if (a->in)
            return zb_fail(err, ZB_EINPUT, "import: one config.json only, got '%s' "
                           "and '%s'", a->in, argv[i]);
        else a->in = argv[i++];
        if (st != ZB_OK) return st;
    }
    if (!a->in && !a->help)
        return zb_fail(err, ZB_EINPUT, "import: needs a config.json (zbplan import --help)");
    return ZB_OK;
}

static zb_status import_write(const import_args *a, const zb_model *m, zb_err *err) {
    zb_yw *w;
    ZB_TRY(zb_yw_open(a->out, &w, err));
    zb_yw_map_begin(w, false);
    zb_model_write_keys(w, m, false);
    zb_yw_map_end(w);
    return zb_yw_close(w, true, err);
}

int zb_import_cmd(int argc, char **argv) {
    import_args a;
    zb_err err = {{0}};
    zb_model m;
    zb_status st = import_parse(argc, argv, &a, &err);
    if (st == ZB_OK && a.help) {
        fputs(k_usage, stdout);
        return 0;
    }
    if (st == ZB_OK) st = zb_guard_paths(a.in, NULL, a.out, &err);
    if (st == ZB_OK) st = zb_hf_import(a.in, &a.sets, &m, &err);
    if (st == ZB_OK) st = import_write(&a, &m, &err);
    if (st != ZB_OK) {
        bool at = !strncmp(err.msg, a.in ? a.in : "", a.in ? strlen(a.in) : 1);
        fprintf(stderr, "%s%s\n", at ? "" : "zbplan: ", err.msg);
        return zb_exit_code(st);
    }
    printf("wrote %s: %s, %s blocks, %llu parameters; plan it with zbplan %s\n", a.out,
           m.name, zb_arch_is_gpt2(&m.arch) ? "GPT-2" : "Llama-shaped",
           (unsigned long long)zb_model_params(&m.arch), a.out);
    return 0;
}
