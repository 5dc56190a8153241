/* zb_plan_read.c - reading and validating a plan (docs/plan-format.md).
 * Every problem is one line "plan.yaml:line:col: what is wrong"; nothing
 * runs on a plan that does not pass: the action lists must also pass the
 * simulator against the plan's own costs. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/zb_plan.h"
#include "common/zb_yaml.h"

typedef struct {
    const zb_ydoc *doc;
    zb_err *err;
} rd;

static zb_status get_int(rd *r, const zb_ynode *map, const char *key,
                         long long min, long long max, int *out) {
    long long v = 0;
    ZB_TRY(zb_yget_int(r->doc, map, key, true, min, max, &v, r->err));
    *out = (int)v;
    return ZB_OK;
}

/* Costs and predictions: seconds, bytes, tokens/s and ratios, all far
 * below 1e15 (a petabyte, 30 million years); a bigger one is a hand edit
 * that would print as hundreds of digits or inf: refused, key named. */
#define PLAN_NUMBER_MAX 1e15

static zb_status get_double(rd *r, const zb_ynode *map, const char *key,
                            double *out) {
    return zb_yget_double(r->doc, map, key, true, 0, PLAN_NUMBER_MAX, out, r->err);
}

static zb_status section(rd *r, const zb_ynode *root, const char *key,
                         zb_ytype type, const zb_ynode **out) {
    const zb_ynode *n = zb_ymap_get(root, key);
    if (!n)
        return zb_fail_at(r->err, r->doc->file, root->line, root->col,
                          "missing key '%s' in the plan", key);
    ZB_TRY(zb_ynode_expect(r->doc, n, type, key, r->err));
    *out = n;
    return ZB_OK;
}

/* Every product the executor sizes or indexes with, in 64 bits: each
 * factor is bounded on its own, their products are not. The kernels index
 * with int, so each must fit one. */
static zb_status check_products(rd *r, const zb_ynode *par, const zb_plan *plan) {
    zb_layout l = {plan->dp, plan->tp, plan->pp, plan->v, plan->micro_batch, plan->m};
    long long v, max;
    const char *what = zb_layout_over_limits(&plan->model.arch, &l, &v, &max);
    if (what)
        return zb_fail_at(r->err, r->doc->file, par->line, par->col,
                          "%s is %lld, more than this zb handles (%lld)", what, v, max);
    return ZB_OK;
}

/* parallel.vocab_parallel: none (also when absent), 1 or 2; needs pp >= 2
 * (the vocabulary is sharded over the pipeline ranks). */
static zb_status read_vocab_key(rd *r, const zb_ynode *par, zb_plan *plan) {
    static const char *const kinds[] = {"none", "1", "2", NULL};
    int k = 0;
    ZB_TRY(zb_yget_enum(r->doc, par, "vocab_parallel", false, kinds, &k, r->err));
    plan->vocab_parallel = k;
    const zb_ynode *n = zb_ymap_get(par, "vocab_parallel");
    if (k && plan->pp < 2)
        return zb_fail_at(r->err, r->doc->file, n->line, n->col,
                          "vocab_parallel %d needs pp >= 2 (the vocabulary is "
                          "sharded over the pipeline ranks), pp is %d", k, plan->pp);
    return ZB_OK;
}

static zb_status read_parallel(rd *r, const zb_ynode *root, zb_plan *plan) {
    static const char *const keys[] = {"dp", "tp", "pp", "chunks", "micro_batch",
                                       "microbatches", "layout", "vocab_parallel",
                                       NULL};
    const zb_ynode *par;
    ZB_TRY(section(r, root, "parallel", ZB_Y_MAP, &par));
    ZB_TRY(zb_ymap_check_keys(r->doc, par, "parallel", keys, r->err));
    ZB_TRY(get_int(r, par, "dp", 1, 1 << 20, &plan->dp));
    ZB_TRY(get_int(r, par, "tp", 1, 1 << 20, &plan->tp));
    ZB_TRY(get_int(r, par, "pp", 1, 1 << 20, &plan->pp));
    ZB_TRY(get_int(r, par, "chunks", 1, 64, &plan->v));
    ZB_TRY(get_int(r, par, "micro_batch", 1, 1 << 30, &plan->micro_batch));
    ZB_TRY(get_int(r, par, "microbatches", 1, 1 << 20, &plan->m));
    char layout[32];
    ZB_TRY(zb_yget_str(r->doc, par, "layout", true, layout, sizeof layout, r->err));
    const zb_ynode *ln = zb_ymap_get(par, "layout");
    if (strcmp(layout, "pp-dp-tp") != 0)
        return zb_fail_at(r->err, r->doc->file, ln->line, ln->col,
                          "unsupported rank layout '%s' (this zbrun reads pp-dp-tp)",
                          layout);
    const zb_arch *a = &plan->model.arch;
    const zb_training *t = &plan->model.train;
    int line = par->line, col = par->col;
    if ((long long)plan->dp * plan->m * plan->micro_batch != t->global_batch)
        return zb_fail_at(r->err, r->doc->file, line, col,
                          "dp (%d) x microbatches (%d) x micro_batch (%d) must equal "
                          "global_batch (%d)", plan->dp, plan->m, plan->micro_batch,
                          t->global_batch);
    if (t->micro_batch != plan->micro_batch)
        return zb_fail_at(r->err, r->doc->file, line, col,
                          "parallel.micro_batch (%d) differs from training.micro_batch (%d)",
                          plan->micro_batch, t->micro_batch);
    if (a->heads % plan->tp || a->ffn_hidden % plan->tp)
        return zb_fail_at(r->err, r->doc->file, line, col,
                          "tp (%d) must divide heads (%d) and ffn_hidden (%d)",
                          plan->tp, a->heads, a->ffn_hidden);
    ZB_TRY(check_products(r, par, plan));
    ZB_TRY(read_vocab_key(r, par, plan));
    if (plan->pp * plan->v > a->layers + 2)
        return zb_fail_at(r->err, r->doc->file, line, col,
                          "pp x chunks (%d) exceeds the layers (%d) + embedding + head",
                          plan->pp * plan->v, a->layers);
    return ZB_OK;
}

/* A decimal number of 1 to 9 digits at *s (no sign, space or other
 * prefix that strtol would take); advances *s; -1 when there is none. */
static long strict_digits(const char **s) {
    long v = 0;
    int n = 0;
    while (**s >= '0' && **s <= '9' && n < 10) {
        v = v * 10 + (**s - '0');
        (*s)++;
        n++;
    }
    return n == 0 || n > 9 ? -1 : v;
}

/* The action text s of token tok: "F3", "BW12", "W0.1", "S3". Strict: the
 * pass in capitals, then digits only; ".chunk" only when v > 1 and never
 * on S or T (chunk 0 by definition). */
static zb_status parse_one(rd *r, const zb_ynode *tok, const char *s, int m,
                           int v, zb_action *a) {
    int plen = strncmp(s, "BW", 2) == 0 ? 2 : 1, pass = -1;
    for (int k = 0; k < ZB_NPASS && s[0]; k++)
        if (strlen(zb_pass_name((zb_pass)k)) == (size_t)plen &&
            strncmp(s, zb_pass_name((zb_pass)k), (size_t)plen) == 0)
            pass = k;
    const char *end = s + (s[0] ? plen : 0);
    long mb = pass < 0 ? -1 : strict_digits(&end);
    long chunk = 0;
    bool dot = mb >= 0 && *end == '.';
    if (dot) {
        end++;
        chunk = strict_digits(&end);
    }
    bool vocab = pass == ZB_S || pass == ZB_T;
    if (pass < 0 || mb < 0 || chunk < 0 || *end || (dot && (v == 1 || vocab)))
        return zb_fail_at(r->err, r->doc->file, tok->line, tok->col,
                          "bad action '%s' (expected F, B, W, BW, S or T, a "
                          "microbatch and for chunks > 1 '.chunk' except on S "
                          "and T, e.g. F3, B3.1 or S3)", tok->str);
    if (mb >= m || chunk < 0 || chunk >= v)
        return zb_fail_at(r->err, r->doc->file, tok->line, tok->col,
                          "action '%s' out of range (microbatches %d, chunks %d)",
                          tok->str, m, v);
    a->pass = (uint8_t)pass;
    a->mb = (int32_t)mb;
    a->chunk = (uint8_t)chunk;
    return ZB_OK;
}

/* Token -> 1 action, or 2 for an overlapped F&B step "F3.0&BW1.1" (an F,
 * '&', a B or BW; zb_schedule.h): *n says how many; col points at the
 * token. */
static zb_status parse_action(rd *r, const zb_ynode *tok, int m, int v,
                              zb_action a[2], int *n) {
    if (tok->type != ZB_Y_SCALAR)
        return zb_fail_at(r->err, r->doc->file, tok->line, tok->col,
                          "an action must be a scalar like F3 or B3.1");
    const char *amp = strchr(tok->str, '&');
    *n = amp ? 2 : 1;
    if (!amp) return parse_one(r, tok, tok->str, m, v, &a[0]);
    char f[32];
    size_t flen = (size_t)(amp - tok->str);
    snprintf(f, sizeof f, "%.*s", (int)(flen < sizeof f ? flen : sizeof f - 1), tok->str);
    ZB_TRY(parse_one(r, tok, f, m, v, &a[0]));
    ZB_TRY(parse_one(r, tok, amp + 1, m, v, &a[1]));
    if (a[0].pass != ZB_F || (a[1].pass != ZB_B && a[1].pass != ZB_BW))
        return zb_fail_at(r->err, r->doc->file, tok->line, tok->col,
                          "bad overlapped step '%s' (expected an F, '&', then "
                          "a B or BW, e.g. F3.0&BW1.1)", tok->str);
    a[0].flags = ZB_ACT_OVERLAP;
    return ZB_OK;
}

static zb_status read_schedule(rd *r, const zb_ynode *root, zb_plan *plan,
                               const zb_ynode **ranks_out) {
    static const char *const keys[] = {"name", "solver", "placement", "ranks", NULL};
    static const char *const places[] = {"loop", "v", "dual", NULL};
    const zb_ynode *sn, *ranks;
    ZB_TRY(section(r, root, "schedule", ZB_Y_MAP, &sn));
    ZB_TRY(zb_ymap_check_keys(r->doc, sn, "schedule", keys, r->err));
    char name[32];
    int place = 0;
    ZB_TRY(zb_yget_str(r->doc, sn, "name", true, name, sizeof name, r->err));
    ZB_TRY(zb_yget_str(r->doc, sn, "solver", true, plan->solver,
                       sizeof plan->solver, r->err));
    ZB_TRY(zb_yget_enum(r->doc, sn, "placement", true, places, &place, r->err));
    ZB_TRY(section(r, sn, "ranks", ZB_Y_SEQ, &ranks));
    if (ranks->n != plan->pp)
        return zb_fail_at(r->err, r->doc->file, ranks->line, ranks->col,
                          "schedule has %d rank lists, parallel.pp is %d",
                          ranks->n, plan->pp);
    if (place != ZB_PLACE_LOOP && plan->v != 2)
        return zb_fail_at(r->err, r->doc->file, sn->line, sn->col,
                          "placement %s needs chunks: 2, got %d", places[place],
                          plan->v);
    if (place == ZB_PLACE_DUAL && plan->pp % 2 != 0)
        return zb_fail_at(r->err, r->doc->file, sn->line, sn->col,
                          "placement dual needs an even pp, got %d", plan->pp);
    ZB_TRY(zb_schedule_init(&plan->sched, name, plan->pp, plan->m, plan->v,
                            (zb_placement)place, 0, r->err));
    plan->sched.vocab = plan->vocab_parallel;
    for (int k = 0; k < ranks->n; k++) {
        const zb_ynode *list = ranks->items[k];
        ZB_TRY(zb_ynode_expect(r->doc, list, ZB_Y_SEQ, "a rank's action list", r->err));
        for (int i = 0; i < list->n; i++) {
            zb_action a[2] = {{0}};
            int n = 1;
            ZB_TRY(parse_action(r, list->items[i], plan->m, plan->v, a, &n));
            for (int j = 0; j < n; j++)
                ZB_TRY(zb_schedule_push(&plan->sched, k, (zb_pass)a[j].pass,
                                        a[j].mb, a[j].chunk, r->err));
            if (n == 2) /* the F of an overlapped step */
                plan->sched.acts[k][plan->sched.len[k] - 2].flags = ZB_ACT_OVERLAP;
        }
    }
    *ranks_out = ranks;
    return ZB_OK;
}

static zb_status read_stage(rd *r, const zb_ynode *st, int s, zb_plan *plan,
                            int *next_layer) {
    static const char *const keys[] = {"vstage", "rank", "chunk", "first_layer",
                                       "layers", "embed", "head", "t_f", "t_b",
                                       "t_w", "t_comm", "m_b", "m_w", NULL};
    int n = plan->pp * plan->v, vs, rank, chunk, er, ec;
    zb_stage_span *sp = &plan->stages[s];
    zb_costs *c = &plan->costs;
    ZB_TRY(zb_ynode_expect(r->doc, st, ZB_Y_MAP, "a stage", r->err));
    ZB_TRY(zb_ymap_check_keys(r->doc, st, "a stage", keys, r->err));
    ZB_TRY(get_int(r, st, "vstage", 0, n - 1, &vs));
    ZB_TRY(get_int(r, st, "rank", 0, plan->pp - 1, &rank));
    ZB_TRY(get_int(r, st, "chunk", 0, plan->v - 1, &chunk));
    ZB_TRY(get_int(r, st, "first_layer", 0, plan->model.arch.layers, &sp->first_layer));
    ZB_TRY(get_int(r, st, "layers", 0, plan->model.arch.layers, &sp->n_layers));
    ZB_TRY(zb_yget_bool(r->doc, st, "embed", true, &sp->embed, r->err));
    ZB_TRY(zb_yget_bool(r->doc, st, "head", true, &sp->head, r->err));
    zb_vstage_owner(&plan->sched, s, &er, &ec);
    /* DUAL: each copy is a chain of pp stages holding the whole model, the
     * up copy split as the down copy */
    bool dual = plan->sched.placement == ZB_PLACE_DUAL;
    int len = dual ? plan->pp : n, j = s % len;
    if (dual && s == len) *next_layer = 0;
    const zb_stage_span *twin = dual && s >= len ? &plan->stages[s - len] : NULL;
    const char *bad = NULL;
    if (vs != s) bad = "vstage out of order";
    else if (rank != er || chunk != ec) bad = "rank/chunk do not match the placement";
    else if (sp->first_layer != *next_layer) bad = "layers are not contiguous";
    else if (sp->embed != (j == 0)) bad = dual ? "the embedding must be on each copy's first virtual stage only"
                                               : "the embedding must be on virtual stage 0 only";
    else if (sp->head != (j == len - 1)) bad = dual ? "the head must be on each copy's last virtual stage only"
                                                    : "the head must be on the last virtual stage only";
    else if (twin && sp->n_layers != twin->n_layers) bad = "the up copy must be split as the down copy";
    else if (sp->n_layers == 0 && !sp->embed && !sp->head) bad = "stage holds nothing";
    if (bad)
        return zb_fail_at(r->err, r->doc->file, st->line, st->col, "stage %d: %s", s, bad);
    *next_layer += sp->n_layers;
    ZB_TRY(get_double(r, st, "t_f", &c->t_f[s]));
    ZB_TRY(get_double(r, st, "t_b", &c->t_b[s]));
    ZB_TRY(get_double(r, st, "t_w", &c->t_w[s]));
    ZB_TRY(get_double(r, st, "t_comm", &c->t_comm[s]));
    ZB_TRY(get_double(r, st, "m_b", &c->m_b[s]));
    ZB_TRY(get_double(r, st, "m_w", &c->m_w[s]));
    return ZB_OK;
}

static zb_status read_stages(rd *r, const zb_ynode *root, zb_plan *plan) {
    const zb_ynode *seq;
    ZB_TRY(section(r, root, "stages", ZB_Y_SEQ, &seq));
    int n = plan->pp * plan->v, next = 0;
    if (seq->n != n)
        return zb_fail_at(r->err, r->doc->file, seq->line, seq->col,
                          "%d stages listed, pp x chunks is %d", seq->n, n);
    for (int s = 0; s < n; s++) {
        ZB_TRY(read_stage(r, seq->items[s], s, plan, &next));
        if (plan->sched.placement == ZB_PLACE_DUAL && s == plan->pp - 1 &&
            next != plan->model.arch.layers)
            return zb_fail_at(r->err, r->doc->file, seq->line, seq->col,
                              "the down copy's stages hold %d layers, the "
                              "model has %d", next, plan->model.arch.layers);
    }
    if (next != plan->model.arch.layers)
        return zb_fail_at(r->err, r->doc->file, seq->line, seq->col,
                          "stages hold %d layers, the model has %d", next,
                          plan->model.arch.layers);
    return ZB_OK;
}

/* 'vocab' (zb_sim.h's vocabulary costs): required with vocab_parallel,
 * refused without it. */
static zb_status read_vocab_costs(rd *r, const zb_ynode *root, zb_plan *plan) {
    static const char *const keys[] = {"t_s", "t_t", "t_bcast", "t_c1", "t_c2",
                                       "m_s", NULL};
    const zb_ynode *vn = zb_ymap_get(root, "vocab");
    zb_costs *c = &plan->costs;
    if (!plan->vocab_parallel) {
        if (vn)
            return zb_fail_at(r->err, r->doc->file, vn->line, vn->col,
                              "'vocab' costs without parallel.vocab_parallel");
        return ZB_OK;
    }
    ZB_TRY(section(r, root, "vocab", ZB_Y_MAP, &vn));
    ZB_TRY(zb_ymap_check_keys(r->doc, vn, "vocab", keys, r->err));
    ZB_TRY(get_double(r, vn, "t_s", &c->t_s));
    ZB_TRY(get_double(r, vn, "t_t", &c->t_t));
    ZB_TRY(get_double(r, vn, "t_bcast", &c->t_bcast));
    ZB_TRY(get_double(r, vn, "t_c1", &c->t_c1));
    ZB_TRY(get_double(r, vn, "t_c2", &c->t_c2));
    return get_double(r, vn, "m_s", &c->m_s);
}

static zb_status read_prediction(rd *r, const zb_ynode *root, zb_plan *plan) {
    static const char *const keys[] = {"step_s", "pipeline_s", "tokens_per_s", "mfu",
                                       "bubble_rate", "ranks", NULL};
    static const char *const rkeys[] = {"rank", "bubble", "peak_mem_bytes",
                                        "act_mem_bytes", NULL};
    const zb_ynode *pn, *ranks;
    zb_prediction *p = &plan->pred;
    ZB_TRY(section(r, root, "prediction", ZB_Y_MAP, &pn));
    ZB_TRY(zb_ymap_check_keys(r->doc, pn, "prediction", keys, r->err));
    ZB_TRY(get_double(r, pn, "step_s", &p->step_s));
    ZB_TRY(get_double(r, pn, "pipeline_s", &p->pipeline_s));
    ZB_TRY(get_double(r, pn, "tokens_per_s", &p->tokens_per_s));
    ZB_TRY(get_double(r, pn, "mfu", &p->mfu));
    ZB_TRY(get_double(r, pn, "bubble_rate", &p->bubble_rate));
    ZB_TRY(section(r, pn, "ranks", ZB_Y_SEQ, &ranks));
    if (ranks->n != plan->pp)
        return zb_fail_at(r->err, r->doc->file, ranks->line, ranks->col,
                          "prediction has %d ranks, parallel.pp is %d", ranks->n, plan->pp);
    for (int k = 0; k < ranks->n; k++) {
        const zb_ynode *e = ranks->items[k];
        int rank;
        ZB_TRY(zb_ynode_expect(r->doc, e, ZB_Y_MAP, "a prediction rank", r->err));
        ZB_TRY(zb_ymap_check_keys(r->doc, e, "a prediction rank", rkeys, r->err));
        ZB_TRY(get_int(r, e, "rank", k, k, &rank));
        ZB_TRY(get_double(r, e, "bubble", &p->bubble[k]));
        ZB_TRY(get_double(r, e, "peak_mem_bytes", &p->peak_mem_bytes[k]));
        ZB_TRY(get_double(r, e, "act_mem_bytes", &p->act_mem_bytes[k]));
    }
    return ZB_OK;
}

static zb_status read_version(rd *r, const zb_ynode *root) {
    const zb_ynode *vn = zb_ymap_get(root, "version");
    long long v = 0;
    if (!vn)
        return zb_fail_at(r->err, r->doc->file, root->line, root->col,
                          "missing key 'version': not a zb plan?");
    ZB_TRY(zb_yget_int(r->doc, root, "version", true, 0, 1 << 30, &v, r->err));
    if (v != ZB_PLAN_VERSION)
        return zb_fail_at(r->err, r->doc->file, vn->line, vn->col,
                          "unsupported plan version %lld (this build reads version %d)",
                          v, ZB_PLAN_VERSION);
    return ZB_OK;
}

/* The whole plan after the model sections. */
static zb_status read_body(rd *r, const zb_ynode *root, zb_plan *plan) {
    const zb_ynode *ranks = NULL;
    ZB_TRY(read_parallel(r, root, plan));
    ZB_TRY(zb_plan_alloc(plan, plan->pp, plan->v, r->err));
    ZB_TRY(read_schedule(r, root, plan, &ranks));
    ZB_TRY(read_stages(r, root, plan));
    ZB_TRY(read_vocab_costs(r, root, plan));
    ZB_TRY(read_prediction(r, root, plan));
    zb_err serr;
    if (zb_simulate_fast(&plan->sched, &plan->costs, NULL, NULL, NULL, &serr))
        return zb_fail_at(r->err, r->doc->file, ranks->line, ranks->col,
                          "schedule rejected: %s", serr.msg);
    return ZB_OK;
}

/* Optional 'fingerprint' (zb_plan.h): must be what the plan now holds. */
static zb_status check_fingerprint(rd *r, const zb_ynode *root, const zb_plan *plan) {
    const zb_ynode *n = zb_ymap_get(root, "fingerprint");
    if (!n) return ZB_OK;
    char text[32], want[32];
    ZB_TRY(zb_yget_str(r->doc, root, "fingerprint", true, text, sizeof text, r->err));
    snprintf(want, sizeof want, "%016llx", (unsigned long long)zb_plan_fingerprint(plan));
    if (strcmp(text, want) != 0)
        return zb_fail_at(r->err, r->doc->file, n->line, n->col,
                          "the plan's stage costs and predictions no longer "
                          "belong to its model, cluster or split (edited by "
                          "hand?); re-run zbplan on the model to make a new plan");
    return ZB_OK;
}

zb_status zb_plan_read_doc(const zb_ydoc *doc, zb_plan *plan, zb_err *err) {
    static const char *const extra[] = {"version", "parallel", "schedule", "stages",
                                        "vocab", "prediction", "fingerprint", NULL};
    memset(plan, 0, sizeof *plan);
    rd r = {doc, err};
    zb_status st = ZB_OK;
    if (!doc->root || doc->root->type != ZB_Y_MAP)
        st = zb_fail_at(err, doc->file, doc->root ? doc->root->line : 1,
                        doc->root ? doc->root->col : 1, "a plan must be a mapping");
    if (st == ZB_OK) st = read_version(&r, doc->root);
    if (st == ZB_OK) {
        /* zbplan wrote the data path as resolved from where it ran; a
         * relative one stays relative to the working directory */
        st = zb_model_parse(doc, doc->root, extra, NULL, &plan->model, err);
    }
    if (st == ZB_OK) st = read_body(&r, doc->root, plan);
    if (st == ZB_OK) st = check_fingerprint(&r, doc->root, plan);
    if (st != ZB_OK) zb_plan_free(plan);
    return st;
}

zb_status zb_plan_read(const char *path, zb_plan *plan, zb_err *err) {
    zb_ydoc doc;
    memset(plan, 0, sizeof *plan);
    ZB_TRY(zb_ydoc_load(path, &doc, err));
    zb_status st = zb_plan_read_doc(&doc, plan, err);
    zb_ydoc_free(&doc);
    return st;
}
