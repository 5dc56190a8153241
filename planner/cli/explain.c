/* explain.c - a candidate taken apart (cli/explain.h). */
#include "planner/cli/explain.h"

#include <math.h>
#include <string.h>

#include "common/zb_sim.h"
#include "planner/cost/cost.h"
#include "planner/cost/partition.h"
#include "planner/cost/profile.h"
#include "planner/cost/vocab.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/* Rank r's compute and TP time over a step: m times its chunks' passes. */
static void rank_passes(const zb_candidate *c, const zb_cost_table *ct, int r,
                        zb_explain *e) {
    const zb_pass_cost *parts[3] = {&ct->layer, &ct->embed, &ct->head};
    double f = 0, b = 0, w = 0, tp = 0;
    for (int ch = 0; ch < c->v; ch++) {
        const zb_stage_span *s = &c->spans[zb_vstage(&c->sched, r, ch)];
        double mult[3] = {s->n_layers, s->embed, s->head};
        for (int i = 0; i < 3; i++) {
            f += mult[i] * (parts[i]->f_s - parts[i]->f_tp_s);
            b += mult[i] * (parts[i]->b_s - parts[i]->b_tp_s);
            w += mult[i] * (parts[i]->w_s - parts[i]->w_tp_s);
            tp += mult[i] * (parts[i]->f_tp_s + parts[i]->b_tp_s + parts[i]->w_tp_s);
        }
    }
    e->f_s = c->m * f;
    e->b_s = c->m * b;
    e->w_s = c->m * w;
    e->tp_s = c->m * tp;
}

static double rank_params(const zb_model *m, const zb_candidate *c,
                          const zb_cost_table *ct, int r) {
    double p = 0;
    bool embed = false, head = false;
    for (int ch = 0; ch < c->v; ch++) {
        const zb_stage_span *s = &c->spans[zb_vstage(&c->sched, r, ch)];
        p += s->n_layers * ct->layer.params;
        if (s->embed) p += ct->embed.params;
        if (s->head) p += ct->head.params;
        embed |= s->embed;
        head |= s->head;
    }
    if (embed && head && m->arch.tied_embeddings) p -= ct->vocab_params;
    return p + ct->vocab_rank_params; /* vocabulary shards (cost/vocab.h) */
}

/* Static memory split as zb_static_mem_bytes counts it. */
static void rank_static(const zb_model *m, const zb_candidate *c, double prm,
                        zb_explain *e, int r) {
    double el = zb_precision_bytes(m->train.precision);
    double total = zb_static_mem_bytes(m, prm, c->dp);
    e->weights[r] = el * prm;
    e->grads[r] = el * prm;
    e->optim[r] = total - 2 * el * prm;
}

static zb_status simulate_parts(const zb_candidate *c, zb_costs *costs,
                                zb_explain *e, zb_err *err) {
    zb_sim_result sim, nocomm;
    zb_status st = zb_simulate(&c->sched, costs, &sim, err);
    if (st == ZB_OK) {
        for (int s = 0; s < costs->n; s++) costs->t_comm[s] = 0;
        st = zb_simulate(&c->sched, costs, &nocomm, err);
        if (st == ZB_OK) {
            double busy = 0;
            for (int r = 0; r < c->pp; r++)
                if (sim.busy[r] > busy) { busy = sim.busy[r]; e->rank = r; }
            e->p2p_s = sim.last_end - nocomm.last_end;
            e->bubble_s = nocomm.last_end - busy;
            for (int r = 0; r < c->pp && r < ZB_EXPLAIN_MAX_PP; r++)
                e->act[r] = sim.peak_mem[r];
        }
        zb_sim_result_free(&nocomm);
    }
    zb_sim_result_free(&sim);
    return st;
}

zb_status zb_explain_candidate(const zb_model *model, const zb_candidate *c,
                               zb_explain *e, zb_err *err) {
    memset(e, 0, sizeof *e);
    zb_model m = zb_candidate_model(model, c);
    zb_cost_cpu_rank_share(&m, c->dp * c->tp * c->pp, c->cores);
    zb_cost_table ct;
    ZB_TRY(zb_cost_eval(&m, c->tp, c->micro_batch, &ct, err));
    if (zb_profile_apply(c->profile, &m, c->tp, c->micro_batch, &ct)) {
        /* measured pass times include their collectives */
        zb_pass_cost *parts[3] = {&ct.layer, &ct.embed, &ct.head};
        for (int i = 0; i < 3; i++)
            parts[i]->f_tp_s = parts[i]->b_tp_s = parts[i]->w_tp_s = 0;
    }
    zb_vocab_cost vc;
    ZB_TRY(zb_vocab_eval(&m, c->dp, c->tp, c->pp, c->micro_batch, c->vocab, &ct,
                         &vc, err));
    zb_costs costs;
    ZB_TRY(zb_costs_init(&costs, c->pp * c->v, err));
    zb_stage_costs(&ct, c->spans, c->pp, c->v, c->sched.placement, c->dp, c->tp,
                   m.cluster.devices_per_node, &costs);
    zb_vocab_apply(&vc, &costs);
    zb_status st = simulate_parts(c, &costs, e, err);
    zb_costs_free(&costs);
    ZB_TRY(st);
    rank_passes(c, &ct, e->rank, e);
    e->dp_s = c->allreduce_s;
    e->opt_s = c->optimizer_s;
    e->vocab_s = c->m * (vc.t_s + vc.t_t);
    e->other_s = c->step_s - (e->f_s + e->b_s + e->w_s + e->vocab_s + e->tp_s + e->bubble_s +
                              e->p2p_s + e->dp_s + e->opt_s);
    e->pp = c->pp;
    e->ws = zb_workspace_bytes(&m);
    e->staging = c->staging_bytes;
    for (int r = 0; r < c->pp && r < ZB_EXPLAIN_MAX_PP; r++)
        rank_static(&m, c, rank_params(&m, c, &ct, r), e, r);
    return ZB_OK;
}

static double pct(double part, double whole) {
    return whole > 0 ? 100 * part / whole : 0;
}

void zb_explain_print(FILE *out, const zb_candidate *c, const zb_explain *e) {
    double t = c->step_s;
    char st[64] = ""; /* the vocabulary passes, only with them */
    if (e->vocab_s > 0)
        snprintf(st, sizeof st, ", S and T %.4f s (%.1f%%)", e->vocab_s,
                 pct(e->vocab_s, t));
    fprintf(out, "step %.4f s on pp rank %d (the busiest): compute F %.4f s "
            "(%.1f%%), B %.4f s (%.1f%%), W %.4f s (%.1f%%)%s; bubble %.4f s "
            "(%.1f%%); pipeline p2p %.4f s (%.1f%%); TP collectives exposed "
            "%.4f s (%.1f%%); DP all-reduce exposed %.4f s (%.1f%%); optimizer "
            "%.4f s (%.1f%%); other %.4f s (%.1f%%)\n", t, e->rank,
            e->f_s, pct(e->f_s, t), e->b_s, pct(e->b_s, t), e->w_s, pct(e->w_s, t),
            st, e->bubble_s, pct(e->bubble_s, t), e->p2p_s, pct(e->p2p_s, t),
            e->tp_s, pct(e->tp_s, t), e->dp_s, pct(e->dp_s, t), e->opt_s,
            pct(e->opt_s, t), e->other_s, pct(e->other_s, t));
    fprintf(out, "memory GiB per device  %7s %9s %9s %11s %10s %9s %9s %9s\n",
            "pp rank", "weights", "grads", "optimizer", "activ.", "staging",
            "workspace", "total");
    int n = e->pp < ZB_EXPLAIN_MAX_PP ? e->pp : ZB_EXPLAIN_MAX_PP;
    for (int r = 0; r < n; r++) {
        double tot = e->weights[r] + e->grads[r] + e->optim[r] + e->act[r] +
                     e->staging + e->ws;
        fprintf(out, "%22s %7d %9.3f %9.3f %11.3f %10.3f %9.3f %9.3f %9.3f\n",
                "", r, e->weights[r] / GIB, e->grads[r] / GIB, e->optim[r] / GIB,
                e->act[r] / GIB, e->staging / GIB, e->ws / GIB, tot / GIB);
    }
    if (n < e->pp) fprintf(out, "%22s (%d more ranks)\n", "", e->pp - n);
}

typedef struct { const char *name; double a, b; } part;

void zb_explain_why(FILE *out, const zb_candidate *a, const zb_explain *ea,
                    const zb_candidate *b, const zb_explain *eb) {
    fprintf(out, "why #1 (%s, dp %d tp %d pp %d v %d mb %d) over #2 (%s, dp "
            "%d tp %d pp %d v %d mb %d): ", a->schedule, a->dp, a->tp, a->pp,
            a->v, a->micro_batch, b->schedule, b->dp, b->tp, b->pp, b->v,
            b->micro_batch);
    if (a->step_s == b->step_s) {
        if (a->peak_mem_bytes != b->peak_mem_bytes)
            fprintf(out, "the same step time, less memory (%.2f vs %.2f GiB)\n",
                    a->peak_mem_bytes / GIB, b->peak_mem_bytes / GIB);
        else
            fprintf(out, "the same step time and memory; the first found "
                    "comes first\n");
        return;
    }
    part p[] = {{"compute", ea->f_s + ea->b_s + ea->w_s + ea->vocab_s,
                 eb->f_s + eb->b_s + eb->w_s + eb->vocab_s},
                {"idle of the busiest rank", ea->bubble_s, eb->bubble_s},
                {"pipeline p2p", ea->p2p_s, eb->p2p_s},
                {"TP collectives", ea->tp_s, eb->tp_s},
                {"DP all-reduce", ea->dp_s, eb->dp_s},
                {"optimizer", ea->opt_s, eb->opt_s}};
    int n = (int)(sizeof p / sizeof p[0]), best = 0, second = -1;
    for (int i = 1; i < n; i++)
        if (p[i].b - p[i].a > p[best].b - p[best].a) best = i;
    for (int i = 0; i < n; i++)
        if (i != best && (second < 0 || p[i].b - p[i].a > p[second].b - p[second].a))
            second = i;
    fprintf(out, "%.4f s faster (%.1f%%): %s %.4f vs %.4f s", b->step_s - a->step_s,
            pct(b->step_s - a->step_s, b->step_s), p[best].name, p[best].a,
            p[best].b);
    if (second >= 0 && fabs(p[second].b - p[second].a) > 1e-3 * b->step_s)
        fprintf(out, ", %s %.4f vs %.4f s", p[second].name, p[second].a,
                p[second].b);
    fprintf(out, " (overall bubble rate %.1f%% vs %.1f%%)\n", 100 * a->bubble_rate,
            100 * b->bubble_rate);
}
