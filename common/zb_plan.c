/* zb_plan.c - plan allocation, rank layout, and writing the YAML plan
 * format (docs/plan-format.md). Its reader, with full validation, is
 * zb_plan_read.c; keep the two in step (tests/unit/test_plan.c round-trips). */
#include "common/zb_plan.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/zb_yaml.h"

zb_status zb_plan_alloc(zb_plan *plan, int pp, int v, zb_err *err) {
    int n = pp * v;
    plan->version = ZB_PLAN_VERSION;
    plan->pp = pp;
    plan->v = v;
    plan->stages = zb_calloc((size_t)n, sizeof *plan->stages, err);
    plan->pred.bubble = zb_calloc((size_t)pp, sizeof(double), err);
    plan->pred.peak_mem_bytes = zb_calloc((size_t)pp, sizeof(double), err);
    plan->pred.act_mem_bytes = zb_calloc((size_t)pp, sizeof(double), err);
    zb_status st = zb_costs_init(&plan->costs, n, err);
    if (st != ZB_OK || !plan->stages || !plan->pred.bubble ||
        !plan->pred.peak_mem_bytes || !plan->pred.act_mem_bytes) {
        zb_plan_free(plan);
        return ZB_ENOMEM;
    }
    return ZB_OK;
}

void zb_plan_free(zb_plan *plan) {
    if (!plan) return;
    free(plan->stages);
    free(plan->pred.bubble);
    free(plan->pred.peak_mem_bytes);
    free(plan->pred.act_mem_bytes);
    zb_costs_free(&plan->costs);
    zb_schedule_free(&plan->sched);
    plan->stages = NULL;
    plan->pred.bubble = plan->pred.peak_mem_bytes = plan->pred.act_mem_bytes = NULL;
}

int zb_plan_world(const zb_plan *plan) { return plan->dp * plan->tp * plan->pp; }

int zb_plan_rank(const zb_plan *plan, int pp_rank, int dp_rank, int tp_rank) {
    return (pp_rank * plan->dp + dp_rank) * plan->tp + tp_rank;
}

void zb_plan_coords(const zb_plan *plan, int rank, int *pp_rank, int *dp_rank,
                    int *tp_rank) {
    *tp_rank = rank % plan->tp;
    *dp_rank = (rank / plan->tp) % plan->dp;
    *pp_rank = rank / (plan->tp * plan->dp);
}

/* ------------------------------------------------------------ writing */

#define ZB_PLAN_LAYOUT "pp-dp-tp"

/* "F3", "B3.1", "S3" (S and T are chunk 0 and never carry one); into
 * tok[cap]. */
static void action_text(const zb_schedule *s, const zb_action *a, char *tok,
                        size_t cap) {
    if (s->v > 1 && a->pass != ZB_S && a->pass != ZB_T)
        snprintf(tok, cap, "%s%d.%d", zb_pass_name((zb_pass)a->pass),
                 (int)a->mb, (int)a->chunk);
    else
        snprintf(tok, cap, "%s%d", zb_pass_name((zb_pass)a->pass), (int)a->mb);
}

/* Action i of rank r, or the overlapped F&B step it starts ("F3.0&BW1.1",
 * zb_schedule.h); returns the actions written (1 or 2). */
static int write_action(zb_yw *w, const zb_schedule *s, int r, int i) {
    char tok[72];
    const zb_action *a = &s->acts[r][i];
    action_text(s, a, tok, 32);
    int n = zb_action_overlaps(a) && i + 1 < s->len[r] ? 2 : 1;
    if (n == 2) {
        size_t len = strlen(tok);
        tok[len] = '&';
        action_text(s, a + 1, tok + len + 1, sizeof tok - len - 1);
    }
    zb_yw_str(w, tok);
    return n;
}

static void write_schedule(zb_yw *w, const zb_plan *plan) {
    const zb_schedule *s = &plan->sched;
    zb_yw_str(w, "schedule");
    zb_yw_map_begin(w, false);
    zb_yw_kstr(w, "name", s->name);
    zb_yw_kstr(w, "solver", plan->solver[0] ? plan->solver : "generator");
    zb_yw_kstr(w, "placement", s->placement == ZB_PLACE_V      ? "v"
                               : s->placement == ZB_PLACE_DUAL ? "dual"
                                                               : "loop");
    zb_yw_str(w, "ranks");
    zb_yw_seq_begin(w, false);
    for (int r = 0; r < s->p; r++) {
        zb_yw_seq_begin(w, true);
        for (int i = 0; i < s->len[r];) i += write_action(w, s, r, i);
        zb_yw_seq_end(w);
    }
    zb_yw_seq_end(w);
    zb_yw_map_end(w);
}

static void write_stages(zb_yw *w, const zb_plan *plan) {
    const zb_costs *c = &plan->costs;
    zb_yw_str(w, "stages");
    zb_yw_seq_begin(w, false);
    for (int s = 0; s < plan->pp * plan->v; s++) {
        const zb_stage_span *sp = &plan->stages[s];
        int rank, chunk;
        zb_vstage_owner(&plan->sched, s, &rank, &chunk);
        zb_yw_map_begin(w, true);
        zb_yw_kint(w, "vstage", s);
        zb_yw_kint(w, "rank", rank);
        zb_yw_kint(w, "chunk", chunk);
        zb_yw_kint(w, "first_layer", sp->first_layer);
        zb_yw_kint(w, "layers", sp->n_layers);
        zb_yw_kbool(w, "embed", sp->embed);
        zb_yw_kbool(w, "head", sp->head);
        zb_yw_kdouble(w, "t_f", c->t_f[s]);
        zb_yw_kdouble(w, "t_b", c->t_b[s]);
        zb_yw_kdouble(w, "t_w", c->t_w[s]);
        zb_yw_kdouble(w, "t_comm", c->t_comm[s]);
        zb_yw_kdouble(w, "m_b", c->m_b[s]);
        zb_yw_kdouble(w, "m_w", c->m_w[s]);
        zb_yw_map_end(w);
    }
    zb_yw_seq_end(w);
}

static void write_vocab_costs(zb_yw *w, const zb_plan *plan) {
    const zb_costs *c = &plan->costs;
    if (!plan->vocab_parallel) return;
    zb_yw_str(w, "vocab");
    zb_yw_map_begin(w, false);
    zb_yw_kdouble(w, "t_s", c->t_s);
    zb_yw_kdouble(w, "t_t", c->t_t);
    zb_yw_kdouble(w, "t_bcast", c->t_bcast);
    zb_yw_kdouble(w, "t_c1", c->t_c1);
    zb_yw_kdouble(w, "t_c2", c->t_c2);
    zb_yw_kdouble(w, "m_s", c->m_s);
    zb_yw_map_end(w);
}

static void write_prediction(zb_yw *w, const zb_plan *plan) {
    const zb_prediction *p = &plan->pred;
    zb_yw_str(w, "prediction");
    zb_yw_map_begin(w, false);
    zb_yw_kdouble(w, "step_s", p->step_s);
    zb_yw_kdouble(w, "pipeline_s", p->pipeline_s);
    zb_yw_kdouble(w, "tokens_per_s", p->tokens_per_s);
    zb_yw_kdouble(w, "mfu", p->mfu);
    zb_yw_kdouble(w, "bubble_rate", p->bubble_rate);
    zb_yw_str(w, "ranks");
    zb_yw_seq_begin(w, false);
    for (int r = 0; r < plan->pp; r++) {
        zb_yw_map_begin(w, true);
        zb_yw_kint(w, "rank", r);
        zb_yw_kdouble(w, "bubble", p->bubble[r]);
        zb_yw_kdouble(w, "peak_mem_bytes", p->peak_mem_bytes[r]);
        zb_yw_kdouble(w, "act_mem_bytes", p->act_mem_bytes[r]);
        zb_yw_map_end(w);
    }
    zb_yw_seq_end(w);
    zb_yw_map_end(w);
}

zb_status zb_plan_write(const char *path, const zb_plan *plan, zb_err *err) {
    zb_yw *w;
    ZB_TRY(zb_yw_open(path, &w, err));
    zb_yw_map_begin(w, false);
    zb_yw_kint(w, "version", ZB_PLAN_VERSION);
    zb_model_write(w, &plan->model);
    zb_yw_str(w, "parallel");
    zb_yw_map_begin(w, false);
    zb_yw_kint(w, "dp", plan->dp);
    zb_yw_kint(w, "tp", plan->tp);
    zb_yw_kint(w, "pp", plan->pp);
    zb_yw_kint(w, "chunks", plan->v);
    zb_yw_kint(w, "micro_batch", plan->micro_batch);
    zb_yw_kint(w, "microbatches", plan->m);
    zb_yw_kstr(w, "layout", ZB_PLAN_LAYOUT);
    if (plan->vocab_parallel) /* absent: none, so older plans stay as they are */
        zb_yw_kint(w, "vocab_parallel", plan->vocab_parallel);
    zb_yw_map_end(w);
    write_schedule(w, plan);
    write_stages(w, plan);
    write_vocab_costs(w, plan);
    write_prediction(w, plan);
    char fp[32];
    snprintf(fp, sizeof fp, "%016llx", (unsigned long long)zb_plan_fingerprint(plan));
    zb_yw_kstr(w, "fingerprint", fp);
    zb_yw_map_end(w);
    return zb_yw_close(w, true, err);
}

const char *zb_layout_over_limits(const zb_arch *a, const zb_layout *l,
                                  long long *val, long long *max) {
    long long bt = (long long)l->micro_batch * a->seq_len;
    long long ffn = a->ffn_hidden > 4LL * a->hidden ? a->ffn_hidden : 4LL * a->hidden;
    int tp = l->tp > 0 ? l->tp : 1;
    struct { const char *what; long long v, max; } p[] = {
        {"dp x tp x pp (ranks)", (long long)l->dp * l->tp * l->pp, ZB_PLAN_MAX_WORLD},
        {"pp x chunks", (long long)l->pp * l->v, ZB_PLAN_MAX_WORLD},
        {"microbatches x micro_batch x seq_len (tokens per step)", (long long)l->m * bt, INT_MAX},
        {"micro_batch x seq_len x 3 hidden (qkv)", bt * 3 * a->hidden, INT_MAX},
        {"micro_batch x seq_len x ffn_hidden", bt * ffn, INT_MAX},
        {"micro_batch x seq_len x vocab (logits)", bt * a->vocab, INT_MAX},
        /* a TP rank holds the scores of its heads / tp heads */
        {"micro_batch x heads/tp x seq_len^2 (attention)", bt * (a->heads / tp) * a->seq_len, INT_MAX},
        {"vocab x hidden (embedding)", (long long)a->vocab * a->hidden, INT_MAX},
        {"hidden x ffn_hidden", (long long)a->hidden * ffn, INT_MAX},
    };
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
        if (p[i].v > p[i].max) {
            *val = p[i].v;
            *max = p[i].max;
            return p[i].what;
        }
    return NULL;
}
