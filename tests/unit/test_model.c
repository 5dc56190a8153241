/* test_model.c - model spec (common/zb_model.c): the bad-input corpus in
 * tests/bad/models (each NAME.yaml must fail with exactly NAME.err), every
 * shipped model in models/ loads with the values written in it, the documented
 * defaults, the device table against datasheet numbers, data path
 * resolution, extra top-level keys, and the write -> parse round trip.
 * Runs from the repository root. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/zb_model.h"

#define GIB 1073741824.0

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* First line of a file without its newline; false if it cannot be read. */
static bool read_line(const char *path, char *buf, size_t cap) {
    FILE *f = fopen(path, "r");
    if (!f) return false;
    bool ok = fgets(buf, (int)cap, f) != NULL;
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
    return ok;
}

/* Parse a model from text (file name "m.yaml" in messages). */
static zb_status parse_text(const char *text, const char *const *extra, const char *base,
                            zb_model *m, zb_err *e) {
    zb_ydoc d;
    zb_status s = zb_ydoc_load_string("m.yaml", text, &d, e);
    if (s != ZB_OK) return s;
    s = zb_model_parse(&d, d.root, extra, base, m, e);
    zb_ydoc_free(&d);
    return s;
}

static const char *k_minimal = "model: {layers: 2, hidden: 32, heads: 2, seq_len: 16, vocab: 50}\n"
                               "training: {global_batch: 4}\n"
                               "cluster: {device: a100-40gb}\n";

/* ---- the bad-input corpus ---- */

START_TEST(bad_corpus) {
    const char *dir = "tests/bad/models";
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "cannot open %s (run from the repository root)", dir);
    int n = 0;
    for (struct dirent *ent; (ent = readdir(d));) {
        char path[512], errpath[512], want[600];
        if (ends_with(ent->d_name, ".err")) {   /* every .err has its .yaml */
            snprintf(path, sizeof path, "%s/%.*s.yaml", dir, (int)strlen(ent->d_name) - 4,
                     ent->d_name);
            ck_assert_msg(access(path, F_OK) == 0, "%s has no .yaml", ent->d_name);
            continue;
        }
        if (!ends_with(ent->d_name, ".yaml")) continue;
        snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
        snprintf(errpath, sizeof errpath, "%.*s.err", (int)strlen(path) - 5, path);
        ck_assert_msg(read_line(errpath, want, sizeof want), "missing %s", errpath);
        zb_model m;
        zb_err e = {{0}};
        zb_status s = zb_model_load(path, &m, &e);
        ck_assert_msg(s == ZB_EINPUT, "%s: status %d (%s)", path, s, s ? e.msg : "loaded");
        ck_assert_msg(strcmp(e.msg, want) == 0, "%s:\n  got:  %s\n  want: %s", path, e.msg,
                      want);
        n++;
    }
    closedir(d);
    ck_assert_int_ge(n, 20);
}
END_TEST

/* ---- shipped models ---- */

START_TEST(all_models_load) {
    DIR *d = opendir("models");
    ck_assert_ptr_nonnull(d);
    int n = 0;
    for (struct dirent *ent; (ent = readdir(d));) {
        if (!ends_with(ent->d_name, ".yaml")) continue;
        char path[512];
        snprintf(path, sizeof path, "models/%s", ent->d_name);
        zb_model m;
        zb_err e;
        ck_assert_msg(zb_model_load(path, &m, &e) == ZB_OK, "%s: %s", path, e.msg);
        /* Every shipped name matches its file name. */
        ck_assert_int_eq(strncmp(m.name, ent->d_name, strlen(ent->d_name) - 5), 0);
        ck_assert_int_eq(strlen(m.name), strlen(ent->d_name) - 5);
        n++;
    }
    closedir(d);
    ck_assert_int_ge(n, 9);
}
END_TEST

static zb_model load(const char *path) {
    zb_model m;
    zb_err e;
    ck_assert_msg(zb_model_load(path, &m, &e) == ZB_OK, "%s: %s", path, e.msg);
    return m;
}

START_TEST(tiny_values) {
    zb_model m = load("models/tiny.yaml");
    ck_assert_str_eq(m.name, "tiny");
    ck_assert_int_eq(m.arch.layers, 8);
    ck_assert_int_eq(m.arch.hidden, 64);
    ck_assert_int_eq(m.arch.heads, 4);
    ck_assert_int_eq(m.arch.ffn_hidden, 256);   /* default 4 * 64 */
    ck_assert_int_eq(m.arch.seq_len, 64);
    ck_assert_int_eq(m.arch.vocab, 256);
    ck_assert(m.arch.tied_embeddings);
    ck_assert_int_eq(m.train.global_batch, 16);
    ck_assert_int_eq(m.train.micro_batch, 2);
    ck_assert_int_eq(m.train.steps, 30);
    ck_assert_int_eq(m.train.precision, ZB_PREC_FP32);
    ck_assert_int_eq(m.train.data_kind, ZB_DATA_TEXT);
    ck_assert_str_eq(m.train.data_path, "models/data/corpus.txt");   /* joined with models/ */
    ck_assert(m.train.opt.lr == 3e-3);
    ck_assert(m.train.opt.min_lr == 3e-4);
    ck_assert_int_eq(m.train.opt.warmup_steps, 5);
    ck_assert(m.train.opt.cosine);
    ck_assert_int_eq(m.cluster.nodes, 1);
    ck_assert_int_eq(m.cluster.devices_per_node, 16);
    ck_assert_str_eq(m.cluster.device.name, "cpu");
    ck_assert(m.cluster.device.peak_fp32_flops == 1e11);
    ck_assert(m.cluster.device.mem_bytes == 16 * GIB);
}
END_TEST

START_TEST(paper_models) {
    /* Qi et al. 2023, Table 3. */
    static const struct {
        const char *path;
        int layers, heads, hidden, gpus, micro_batch;
    } want[] = {{"models/zb-1.5b.yaml", 22, 24, 2304, 8, 6},
                {"models/zb-6.2b.yaml", 30, 32, 4096, 8, 3},
                {"models/zb-14.6b.yaml", 46, 40, 5120, 16, 1},
                {"models/zb-28.3b.yaml", 62, 48, 6144, 32, 1}};
    for (int i = 0; i < 4; i++) {
        zb_model m = load(want[i].path);
        ck_assert_int_eq(m.arch.layers, want[i].layers);
        ck_assert_int_eq(m.arch.heads, want[i].heads);
        ck_assert_int_eq(m.arch.hidden, want[i].hidden);
        ck_assert_int_eq(m.arch.seq_len, 1024);
        ck_assert_int_eq(m.cluster.nodes * m.cluster.devices_per_node, want[i].gpus);
        ck_assert_int_eq(m.train.micro_batch, want[i].micro_batch);
        ck_assert(m.cluster.device.peak_bf16_flops == 312e12);   /* A100 SXM 80GB */
    }
    zb_model g = load("models/gpt3-175b.yaml");
    ck_assert_int_eq(g.arch.layers, 96);
    ck_assert_int_eq(g.arch.hidden, 12288);
    ck_assert_int_eq(g.cluster.nodes * g.cluster.devices_per_node, 1024);
    ck_assert_int_eq(g.train.global_batch, 1536);
    ck_assert(g.cluster.device.mem_bytes == 80 * GIB);
    zb_model s = load("models/gpt2-124m.yaml");
    ck_assert_int_eq(s.train.micro_batch, 0);   /* auto */
    ck_assert(s.cluster.device.peak_bf16_flops == 989e12);
}
END_TEST

/* ---- defaults and the device table ---- */

START_TEST(defaults) {
    zb_model m;
    zb_err e;
    ck_assert_int_eq(parse_text(k_minimal, NULL, NULL, &m, &e), ZB_OK);
    ck_assert_str_eq(m.name, "m");   /* from the file name */
    ck_assert_int_eq(m.arch.ffn_hidden, 128);
    ck_assert(m.arch.tied_embeddings);
    ck_assert_int_eq(m.train.micro_batch, 0);
    ck_assert_int_eq(m.train.steps, 10);
    ck_assert(m.train.seed == 1234);
    ck_assert_int_eq(m.train.precision, ZB_PREC_BF16);
    ck_assert_int_eq(m.train.recompute, ZB_RECOMPUTE_NONE);
    ck_assert(!m.train.sequence_parallel);
    ck_assert(!m.train.zero1);
    ck_assert_int_eq(m.train.data_kind, ZB_DATA_TEXT);
    ck_assert_str_eq(m.train.data_path, "");
    const zb_optim *o = &m.train.opt;
    ck_assert(o->lr == 3e-4 && o->min_lr == 3e-5);
    ck_assert(o->beta1 == 0.9 && o->beta2 == 0.95 && o->eps == 1e-8);
    ck_assert(o->weight_decay == 0.1 && o->grad_clip == 1.0);
    ck_assert_int_eq(o->warmup_steps, 0);
    ck_assert(o->cosine);
    const zb_cluster *c = &m.cluster;
    ck_assert_int_eq(c->nodes, 1);
    ck_assert_int_eq(c->devices_per_node, 8);
    ck_assert(c->intra_bw_Bps == 300e9 && c->intra_lat_s == 5e-6);
    ck_assert(c->inter_bw_Bps == 25e9 && c->inter_lat_s == 10e-6);
    ck_assert_str_eq(c->device.name, "a100-40gb");
    ck_assert(c->device.mem_bytes == 40 * GIB);
}
END_TEST

START_TEST(min_lr_follows_lr) {
    zb_model m;
    zb_err e;
    char text[512];
    snprintf(text, sizeof text, "%straining: {global_batch: 4, optimizer: {lr: 1.0e-5}}\n",
             "model: {layers: 2, hidden: 32, heads: 2, seq_len: 16, vocab: 50}\n"
             "cluster: {device: cpu}\n");
    ck_assert_int_eq(parse_text(text, NULL, NULL, &m, &e), ZB_OK);
    ck_assert(m.train.opt.lr == 1e-5);
    ck_assert(m.train.opt.min_lr == 1e-6);   /* the decimal, not 1e-5 / 10 */
    snprintf(text, sizeof text, "%straining: {global_batch: 4, optimizer: {lr: 3.0e-3}}\n",
             "model: {layers: 2, hidden: 32, heads: 2, seq_len: 16, vocab: 50}\n"
             "cluster: {device: cpu}\n");
    ck_assert_int_eq(parse_text(text, NULL, NULL, &m, &e), ZB_OK);
    ck_assert(m.train.opt.min_lr == 3e-4);   /* 3e-3 / 10 is 0.00030000000000000003 */
}
END_TEST

START_TEST(device_table) {
    /* Dense peaks from the vendor datasheets (see docs/model-format.md). */
    static const struct {
        const char *name;
        double bf16_tflops, fp32_tflops, mem_bytes;
    } want[] = {{"a100-40gb", 312, 19.5, 40 * GIB}, {"a100-80gb", 312, 19.5, 80 * GIB},
                {"h100-sxm", 989, 67, 80 * GIB},    {"h200", 989, 67, 141e9},
                {"b200", 2250, 80, 180e9},          {"mi300x", 1307.4, 163.4, 192e9},
                {"cpu", 0.1, 0.1, 16 * GIB}};
    const char *const *names = zb_device_names();
    int n = 0;
    while (names[n]) n++;
    ck_assert_int_eq(n, 7);
    for (int i = 0; i < 7; i++) {
        ck_assert_str_eq(names[i], want[i].name);
        const zb_device *d = zb_device_lookup(want[i].name);
        ck_assert_ptr_nonnull(d);
        ck_assert_str_eq(d->name, want[i].name);
        ck_assert_double_eq_tol(d->peak_bf16_flops, want[i].bf16_tflops * 1e12, 1);
        ck_assert_double_eq_tol(d->peak_fp32_flops, want[i].fp32_tflops * 1e12, 1);
        ck_assert(d->mem_bytes == want[i].mem_bytes);
    }
    ck_assert_ptr_eq(zb_device_lookup("H100-SXM"), zb_device_lookup("h100-sxm"));
    ck_assert_ptr_null(zb_device_lookup("h300"));
    ck_assert_int_eq(zb_device_lookup("mi300x")->sm_count, 304);   /* compute units */
    ck_assert_double_eq_tol(zb_device_lookup("mi300x")->mem_bw_Bps, 5300e9, 1);
    ck_assert_int_eq(zb_precision_bytes(ZB_PREC_FP32), 4);
    zb_model dm;
    zb_err de;
    ck_assert(parse_text(k_minimal, NULL, NULL, &dm, &de) == ZB_OK);
    ck_assert(dm.cluster.mem_margin == ZB_MEM_MARGIN_DEFAULT && ZB_MEM_MARGIN_DEFAULT == 0.10);
    ck_assert_int_eq(zb_precision_bytes(ZB_PREC_BF16), 2);
}
END_TEST

/* The short names users type resolve to one table entry each, in any case;
 * the entry keeps the table's name (a plan says h100-sxm, not H100). */
START_TEST(device_aliases) {
    static const struct {
        const char *typed, *name;
    } cases[] = {{"h100", "h100-sxm"}, {"H100", "h100-sxm"},  {"a100", "a100-80gb"},
                 {"A100", "a100-80gb"}, {"h200", "h200"},      {"H200", "h200"},
                 {"b200", "b200"},      {"B200", "b200"},      {"mi300x", "mi300x"},
                 {"MI300X", "mi300x"},  {"Mi300X", "mi300x"},  {"A100-40GB", "a100-40gb"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const zb_device *d = zb_device_lookup(cases[i].typed);
        ck_assert_msg(d != NULL, "%s not found", cases[i].typed);
        ck_assert_ptr_eq(d, zb_device_lookup(cases[i].name));
        ck_assert_str_eq(d->name, cases[i].name);
    }
    ck_assert_ptr_null(zb_device_lookup("h100-pcie"));
    ck_assert_ptr_null(zb_device_lookup("a10"));
    ck_assert_ptr_null(zb_device_lookup(""));
    /* every table name and alias is in the unknown-device list */
    char text[256];
    zb_device_known_text(text, sizeof text);
    for (const char *const *nm = zb_device_names(); *nm; nm++)
        ck_assert_msg(strstr(text, *nm), "%s not in '%s'", *nm, text);
    ck_assert_ptr_nonnull(strstr(text, "(or a100)"));
    ck_assert_ptr_nonnull(strstr(text, "(or h100)"));
    char small[12];
    zb_device_known_text(small, sizeof small);   /* truncated, terminated */
    ck_assert_uint_eq(strlen(small), sizeof small - 1);
    /* a model file naming an alias gets the entry and its node's links */
    zb_model m;
    zb_err e;
    const char *text2 = "model: {layers: 2, hidden: 32, heads: 2, seq_len: 16, vocab: 50}\n"
                        "training: {global_batch: 4}\ncluster: {device: MI300X}\n";
    ck_assert_msg(parse_text(text2, NULL, NULL, &m, &e) == ZB_OK, "%s", e.msg);
    ck_assert_str_eq(m.cluster.device.name, "mi300x");
    ck_assert(m.cluster.intra_bw_Bps == 448e9 && m.cluster.inter_bw_Bps == 50e9);
    const char *text3 = "model: {layers: 2, hidden: 32, heads: 2, seq_len: 16, vocab: 50}\n"
                        "training: {global_batch: 4}\ncluster: {device: H100}\n";
    ck_assert_msg(parse_text(text3, NULL, NULL, &m, &e) == ZB_OK, "%s", e.msg);
    ck_assert_str_eq(m.cluster.device.name, "h100-sxm");
    ck_assert(m.cluster.intra_bw_Bps == 450e9 && m.cluster.inter_bw_Bps == 50e9);
}
END_TEST

START_TEST(explicit_device) {
    zb_model m;
    zb_err e;
    const char *text = "name: custom\n"
                       "model: {layers: 2, hidden: 32, heads: 2, seq_len: 16, vocab: 50}\n"
                       "training: {global_batch: 4}\n"
                       "cluster:\n"
                       "  device: {name: my-gpu, peak_bf16_tflops: 123.5, peak_fp32_tflops: 7,"
                       " memory_gib: 24}\n"
                       "  intra_node: {bandwidth_gbps: 46.5}\n"
                       "  inter_node: {latency_us: 2.5}\n";
    ck_assert_int_eq(parse_text(text, NULL, NULL, &m, &e), ZB_OK);
    ck_assert_str_eq(m.cluster.device.name, "my-gpu");
    ck_assert(m.cluster.device.peak_bf16_flops == 123.5 * 1e12);
    ck_assert(m.cluster.device.peak_fp32_flops == 7 * 1e12);
    ck_assert(m.cluster.device.mem_bytes == 24 * GIB);
    ck_assert(m.cluster.intra_bw_Bps == 46.5 * 1e9);
    ck_assert(m.cluster.intra_lat_s == 5e-6);     /* default kept */
    ck_assert(m.cluster.inter_bw_Bps == 25e9);    /* default kept */
    ck_assert(m.cluster.inter_lat_s == 2.5e-6);
}
END_TEST

/* ---- data paths and extra keys ---- */

static const char *path_after(const char *path_yaml, const char *base) {
    static zb_model m;
    zb_err e;
    char text[512];
    snprintf(text, sizeof text, "%straining: {global_batch: 4, data: {kind: shards, path: %s}}\n",
             "model: {layers: 2, hidden: 32, heads: 2, seq_len: 16, vocab: 50}\n"
             "cluster: {device: cpu}\n",
             path_yaml);
    ck_assert_msg(parse_text(text, NULL, base, &m, &e) == ZB_OK, "%s", e.msg);
    ck_assert_int_eq(m.train.data_kind, ZB_DATA_SHARDS);
    return m.train.data_path;
}

START_TEST(data_path_resolution) {
    ck_assert_str_eq(path_after("train.bin", "models"), "models/train.bin");
    ck_assert_str_eq(path_after("d/train.bin", "/abs/dir/"), "/abs/dir/d/train.bin");
    ck_assert_str_eq(path_after("/data/train.bin", "models"), "/data/train.bin");
    ck_assert_str_eq(path_after("train.bin", NULL), "train.bin");
    ck_assert_str_eq(path_after("train.bin", ""), "train.bin");
    ck_assert_str_eq(path_after("train.bin", "."), "train.bin");
    ck_assert_str_eq(path_after("'with space.bin'", "m"), "m/with space.bin");
}
END_TEST

START_TEST(extra_top_level_keys) {
    char text[600];
    snprintf(text, sizeof text, "version: 1\n%sstages: []\n", k_minimal);
    zb_model m;
    zb_err e;
    static const char *const extra[] = {"version", "stages", NULL};
    ck_assert_int_eq(parse_text(text, extra, NULL, &m, &e), ZB_OK);
    ck_assert_int_eq(parse_text(text, NULL, NULL, &m, &e), ZB_EINPUT);
    ck_assert_str_eq(e.msg, "m.yaml:1:1: unknown key 'version' in the top level "
                            "(known keys: name, model, training, cluster)");
    static const char *const only_version[] = {"version", NULL};
    ck_assert_int_eq(parse_text(text, only_version, NULL, &m, &e), ZB_EINPUT);
    ck_assert_str_eq(e.msg, "m.yaml:5:1: unknown key 'stages' in the top level "
                            "(known keys: name, model, training, cluster, version)");
}
END_TEST

/* ---- write -> parse round trip ---- */

static void assert_same(const zb_model *a, const zb_model *b) {
    ck_assert_str_eq(a->name, b->name);
    ck_assert_int_eq(a->arch.layers, b->arch.layers);
    ck_assert_int_eq(a->arch.hidden, b->arch.hidden);
    ck_assert_int_eq(a->arch.heads, b->arch.heads);
    ck_assert_int_eq(a->arch.ffn_hidden, b->arch.ffn_hidden);
    ck_assert_int_eq(a->arch.seq_len, b->arch.seq_len);
    ck_assert_int_eq(a->arch.vocab, b->arch.vocab);
    ck_assert_int_eq(a->arch.tied_embeddings, b->arch.tied_embeddings);
    ck_assert_int_eq(a->arch.kv_heads, b->arch.kv_heads);
    ck_assert_int_eq(a->arch.mlp, b->arch.mlp);
    ck_assert_int_eq(a->arch.norm, b->arch.norm);
    ck_assert_int_eq(a->arch.position, b->arch.position);
    ck_assert(a->arch.rope_theta == b->arch.rope_theta);
    ck_assert_int_eq(a->arch.no_bias, b->arch.no_bias);
    ck_assert_int_eq(a->arch.qkv_bias, b->arch.qkv_bias);
    const zb_training *s = &a->train, *t = &b->train;
    ck_assert_int_eq(s->global_batch, t->global_batch);
    ck_assert_int_eq(s->micro_batch, t->micro_batch);
    ck_assert_int_eq(s->steps, t->steps);
    ck_assert(s->seed == t->seed);
    ck_assert_int_eq(s->precision, t->precision);
    ck_assert_int_eq(s->recompute, t->recompute);
    ck_assert_int_eq(s->sequence_parallel, t->sequence_parallel);
    ck_assert_int_eq(s->zero1, t->zero1);
    ck_assert_int_eq(s->fused_attention, t->fused_attention);
    ck_assert_int_eq(s->tp_overlap, t->tp_overlap);
    ck_assert(s->tp_overlap_eff == t->tp_overlap_eff);
    ck_assert_int_eq(s->dp_overlap, t->dp_overlap);
    ck_assert_int_eq(s->data_kind, t->data_kind);
    ck_assert_str_eq(s->data_path, t->data_path);
    /* Doubles must be bit-identical, not close. */
    ck_assert(memcmp(&s->opt, &t->opt, sizeof s->opt) == 0);
    const zb_cluster *c = &a->cluster, *d = &b->cluster;
    ck_assert_int_eq(c->nodes, d->nodes);
    ck_assert_int_eq(c->devices_per_node, d->devices_per_node);
    ck_assert_str_eq(c->device.name, d->device.name);
    ck_assert(c->device.peak_bf16_flops == d->device.peak_bf16_flops);
    ck_assert(c->device.peak_fp32_flops == d->device.peak_fp32_flops);
    ck_assert(c->device.mem_bytes == d->device.mem_bytes);
    ck_assert(c->device.mem_bw_Bps == d->device.mem_bw_Bps);
    ck_assert(c->device.gemm_eff == d->device.gemm_eff);
    ck_assert(c->intra_p2p_s == d->intra_p2p_s && c->inter_p2p_s == d->inter_p2p_s);
    ck_assert(c->intra_bw_Bps == d->intra_bw_Bps && c->intra_lat_s == d->intra_lat_s);
    ck_assert(c->inter_bw_Bps == d->inter_bw_Bps && c->inter_lat_s == d->inter_lat_s);
    ck_assert(c->mem_margin == d->mem_margin);
}

/* Write m into a file with zb_yw (as the plan writer does, inside the
 * top-level mapping next to another key) and parse it back. */
static void round_trip(const zb_model *m) {
    char dir[] = "/tmp/zb_test_model_XXXXXX", path[64];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/plan.yaml", dir);
    zb_yw *w;
    zb_err e;
    ck_assert_int_eq(zb_yw_open(path, &w, &e), ZB_OK);
    zb_yw_map_begin(w, false);
    zb_yw_kint(w, "version", 1);
    zb_model_write(w, m);
    zb_yw_map_end(w);
    ck_assert_int_eq(zb_yw_close(w, true, &e), ZB_OK);
    zb_ydoc d;
    ck_assert_int_eq(zb_ydoc_load(path, &d, &e), ZB_OK);
    static const char *const extra[] = {"version", NULL};
    zb_model back;
    zb_status s = zb_model_parse(&d, d.root, extra, NULL, &back, &e);
    ck_assert_msg(s == ZB_OK, "%s", e.msg);
    zb_ydoc_free(&d);
    unlink(path);
    rmdir(dir);
    assert_same(m, &back);
}

START_TEST(round_trip_models) {
    DIR *dd = opendir("models");
    ck_assert_ptr_nonnull(dd);
    for (struct dirent *ent; (ent = readdir(dd));) {
        if (!ends_with(ent->d_name, ".yaml")) continue;
        char path[512];
        snprintf(path, sizeof path, "models/%s", ent->d_name);
        zb_model m = load(path);
        round_trip(&m);
    }
    closedir(dd);
}
END_TEST

START_TEST(round_trip_unusual_values) {
    const char *text =
        "name: 'true'\n"
        "model: {layers: 3, hidden: 48, heads: 3, ffn_hidden: 100, seq_len: 7, vocab: 11,"
        " tied_embeddings: false}\n"
        "training:\n"
        "  global_batch: 12\n"
        "  micro_batch: 3\n"
        "  steps: 1\n"
        "  seed: 9223372036854775807\n"
        "  precision: fp32\n"
        "  recompute: full\n"
        "  sequence_parallel: true\n"
        "  zero1: true\n"
        "  fused_attention: true\n"
        "  tp_overlap: true\n"
        "  tp_overlap_efficiency: 0.123456789\n"
        "  dp_overlap: true\n"
        "  data: {kind: shards, path: 'dir: x/#y 1e3.bin'}\n"
        "  optimizer: {lr: 0.0123456789, min_lr: 0, beta1: 0, beta2: 0.999999, eps: 1e-300,"
        " weight_decay: 0, grad_clip: 0, warmup_steps: 7, schedule: constant}\n"
        "cluster:\n"
        "  nodes: 3\n"
        "  devices_per_node: 5\n"
        "  device: {name: '12', peak_bf16_tflops: 0.333333333333, peak_fp32_tflops: 1e-3,"
        " memory_gib: 0.1, memory_bandwidth_gbps: 33.3333, gemm_efficiency: 0.61}\n"
        "  intra_node: {bandwidth_gbps: 0.7, latency_us: 0, p2p_overhead_us: 17.5}\n"
        "  inter_node: {bandwidth_gbps: 12.3456789, latency_us: 0.3}\n"
        "  memory_margin_pct: 12.5\n";
    zb_model m;
    zb_err e;
    ck_assert_msg(parse_text(text, NULL, NULL, &m, &e) == ZB_OK, "%s", e.msg);
    ck_assert_str_eq(m.name, "true");
    ck_assert_str_eq(m.train.data_path, "dir: x/#y 1e3.bin");
    ck_assert(!m.train.opt.cosine);
    ck_assert(m.train.fused_attention && m.train.tp_overlap && m.train.dp_overlap);
    ck_assert(m.cluster.device.gemm_eff == 0.61);
    ck_assert(m.cluster.intra_p2p_s == 17.5e-6);
    ck_assert(m.cluster.mem_margin == 0.125);
    round_trip(&m);
    m.train.micro_batch = 0;   /* auto is written as the word */
    round_trip(&m);
    zb_model tiny = load("models/tiny.yaml");
    tiny.cluster.device = *zb_device_lookup("h200");   /* 141e9 bytes: not whole GiB */
    round_trip(&tiny);
}
END_TEST

/* A node of H100/H200/B200s gets its NVLink and 400 Gb/s-per-GPU links
 * unless the file gives them; other devices keep the DGX A100 ones. */
START_TEST(device_link_defaults) {
    static const struct {
        const char *dev, *links;
        double intra, inter;
    } cases[] = {
        {"a100-80gb", "", 300e9, 25e9},
        {"h100-sxm", "", 450e9, 50e9},
        {"h200", "", 450e9, 50e9},
        {"b200", "", 900e9, 50e9},
        {"mi300x", "", 448e9, 50e9},
        {"h100-sxm", "  intra_node: {bandwidth_gbps: 100}\n", 100e9, 50e9},
        {"b200", "  inter_node: {bandwidth_gbps: 12.5}\n", 900e9, 12.5e9},
        {"{name: h100-sxm, peak_bf16_tflops: 900, peak_fp32_tflops: 60, memory_gib: 80}",
         "", 450e9, 50e9},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[1024];
        snprintf(text, sizeof text,
                 "model: {layers: 2, hidden: 64, heads: 4, seq_len: 16, vocab: 32}\n"
                 "training: {global_batch: 4}\n"
                 "cluster:\n  device: %s\n%s", cases[i].dev, cases[i].links);
        zb_model m;
        zb_err e;
        ck_assert_msg(parse_text(text, NULL, NULL, &m, &e) == ZB_OK, "%s", e.msg);
        ck_assert_msg(m.cluster.intra_bw_Bps == cases[i].intra &&
                          m.cluster.inter_bw_Bps == cases[i].inter,
                      "case %zu (%s): %g / %g", i, cases[i].dev,
                      m.cluster.intra_bw_Bps, m.cluster.inter_bw_Bps);
        ck_assert(!m.train.dp_overlap);  /* off unless asked for */
    }
}
END_TEST

/* ---- the Llama family: block kinds, the preset, parameter counts ---- */

/* A Llama 3 model file's model section (Dubey et al. 2024, Table 3):
 * 128256-token vocabulary, 8 K/V heads, untied head, RoPE base 500000. */
static zb_model llama3(int layers, int hidden, int heads, int ffn) {
    char text[512];
    snprintf(text, sizeof text,
             "model: {arch: llama, layers: %d, hidden: %d, heads: %d, kv_heads: 8, "
             "ffn_hidden: %d, seq_len: 8192, vocab: 128256, rope_theta: 500000}\n"
             "training: {global_batch: 16}\ncluster: {device: h100-sxm}\n",
             layers, hidden, heads, ffn);
    zb_model m;
    zb_err e;
    zb_status s = parse_text(text, NULL, NULL, &m, &e);
    ck_assert_msg(s == ZB_OK, "%s", e.msg);
    return m;
}

/* The count written out matrix by matrix, independent of zb_model_params's
 * grouping: per layer wq (h x h), wk and wv (h x kv*d), wo (h x h), w1 and
 * w3 (h x f), w2 (f x h), two RMSNorm gains (h); embedding and untied
 * output V x h; the final norm h. */
static unsigned long long llama_count(unsigned long long L, unsigned long long h,
                                      unsigned long long heads, unsigned long long kv,
                                      unsigned long long f, unsigned long long V) {
    unsigned long long d = h / heads;
    unsigned long long wq = h * h, wk = h * kv * d, wv = h * kv * d, wo = h * h;
    unsigned long long w1 = h * f, w2 = f * h, w3 = h * f, norms = h + h;
    return L * (wq + wk + wv + wo + w1 + w2 + w3 + norms) + V * h + h * V + h;
}

START_TEST(llama3_params) {
    /* published: Llama 3 8B and 70B as counted by their checkpoints
     * (8,030,261,248 and 70,553,706,496); 405B: ~405.8B */
    zb_model m8 = llama3(32, 4096, 32, 14336);
    zb_model m70 = llama3(80, 8192, 64, 28672);
    zb_model m405 = llama3(126, 16384, 128, 53248);
    ck_assert_uint_eq(zb_model_params(&m8.arch), 8030261248ull);
    ck_assert_uint_eq(zb_model_params(&m70.arch), 70553706496ull);
    ck_assert_uint_eq(zb_model_params(&m405.arch), 405853388800ull);
    ck_assert_uint_eq(llama_count(32, 4096, 32, 8, 14336, 128256), 8030261248ull);
    ck_assert_uint_eq(llama_count(80, 8192, 64, 8, 28672, 128256), 70553706496ull);
    ck_assert_uint_eq(llama_count(126, 16384, 128, 8, 53248, 128256),
                      zb_model_params(&m405.arch));
    ck_assert(!zb_arch_is_gpt2(&m8.arch));
    ck_assert_int_eq(m8.arch.mlp, ZB_MLP_SWIGLU);
    ck_assert_int_eq(m8.arch.norm, ZB_NORM_RMSNORM);
    ck_assert_int_eq(m8.arch.position, ZB_POS_ROPE);
    ck_assert(m8.arch.no_bias && !m8.arch.tied_embeddings);
    ck_assert(m8.arch.rope_theta == 500000);
    round_trip(&m70);
}
END_TEST

START_TEST(gpt2_params) {
    /* GPT-2 small: 124,439,808 (the Hugging Face checkpoint's count: wte
     * 50257 x 768, wpe 1024 x 768, 12 blocks of 12h^2 + 13h, ln_f 2h) */
    zb_model m = load("models/gpt2-124m.yaml");
    ck_assert(zb_arch_is_gpt2(&m.arch));
    ck_assert_int_eq(m.arch.kv_heads, m.arch.heads);
    ck_assert_uint_eq(zb_model_params(&m.arch), 124439808ull);
}
END_TEST

START_TEST(llama_preset_defaults) {
    zb_model m;
    zb_err e;
    /* the preset's keys may each be overridden; swiglu's ffn default is
     * 256 * ceil(8h/3 / 256): 11008 at h = 4096 (Llama 2 7B) */
    const char *t1 = "model: {arch: llama, layers: 2, hidden: 4096, heads: 32, seq_len: 16,"
                     " vocab: 50, norm: layernorm, tied_embeddings: true}\n"
                     "training: {global_batch: 4}\ncluster: {device: h100-sxm}\n";
    ck_assert_int_eq(parse_text(t1, NULL, NULL, &m, &e), ZB_OK);
    ck_assert_int_eq(m.arch.ffn_hidden, 11008);
    ck_assert_int_eq(m.arch.norm, ZB_NORM_LAYERNORM);
    ck_assert(m.arch.tied_embeddings);
    ck_assert_int_eq(m.arch.kv_heads, 32);
    ck_assert(m.arch.rope_theta == 10000);
    /* gelu without the preset keeps 4h; a GQA model is not GPT-2 */
    const char *t2 = "model: {layers: 2, hidden: 64, heads: 4, kv_heads: 1, seq_len: 16,"
                     " vocab: 50}\ntraining: {global_batch: 4}\ncluster: {device: cpu}\n";
    ck_assert_int_eq(parse_text(t2, NULL, NULL, &m, &e), ZB_OK);
    ck_assert_int_eq(m.arch.ffn_hidden, 256);
    ck_assert(!zb_arch_is_gpt2(&m.arch));
    round_trip(&m);
    /* Qwen2.5 7B: Q, K, V biases on a Llama block, 7,615,616,512 as
     * published (129,024 = 28 layers x (3584 + 2 x 512) of them) */
    const char *tq = "model: {arch: llama, layers: 28, hidden: 3584, heads: 28, kv_heads: 4,"
                     " ffn_hidden: 18944, seq_len: 4096, vocab: 152064, qkv_bias: true}\n"
                     "training: {global_batch: 4}\ncluster: {device: h100-sxm}\n";
    ck_assert_int_eq(parse_text(tq, NULL, NULL, &m, &e), ZB_OK);
    ck_assert_uint_eq(zb_model_params(&m.arch), 7615616512ull);
    ck_assert(!zb_arch_is_gpt2(&m.arch));
    round_trip(&m);
    m.arch.qkv_bias = false;
    ck_assert_uint_eq(zb_model_params(&m.arch), 7615616512ull - 28 * (3584 + 2 * 512));
    /* params given and right: accepted */
    const char *t3 = "model: {layers: 12, hidden: 768, heads: 12, seq_len: 1024,"
                     " vocab: 50257, params: 124439808}\ntraining: {global_batch: 4}\n"
                     "cluster: {device: cpu}\n";
    ck_assert_int_eq(parse_text(t3, NULL, NULL, &m, &e), ZB_OK);
}
END_TEST

int main(void) {
    Suite *s = suite_create("model");
    TCase *t = tcase_create("load");
    tcase_add_test(t, bad_corpus);
    tcase_add_test(t, all_models_load);
    tcase_add_test(t, tiny_values);
    tcase_add_test(t, paper_models);
    tcase_add_test(t, defaults);
    tcase_add_test(t, min_lr_follows_lr);
    tcase_add_test(t, device_table);
    tcase_add_test(t, device_aliases);
    tcase_add_test(t, explicit_device);
    tcase_add_test(t, data_path_resolution);
    tcase_add_test(t, extra_top_level_keys);
    tcase_add_test(t, llama3_params);
    tcase_add_test(t, gpt2_params);
    tcase_add_test(t, llama_preset_defaults);
    suite_add_tcase(s, t);
    t = tcase_create("write");
    tcase_add_test(t, round_trip_models);
    tcase_add_test(t, round_trip_unusual_values);
    tcase_add_test(t, device_link_defaults);
    suite_add_tcase(s, t);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
