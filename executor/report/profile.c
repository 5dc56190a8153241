/* profile.c - see profile.h. */
#include "executor/report/profile.h"

#include "common/zb_yaml.h"
#include "executor/report/pass_times.h"

static void write_model(zb_yw *w, const zb_plan *plan) {
    const zb_model *m = &plan->model;
    const zb_arch *a = &m->arch;
    zb_yw_str(w, "model");
    zb_yw_map_begin(w, true);
    zb_yw_kstr(w, "name", m->name);
    zb_yw_kint(w, "layers", a->layers);
    zb_yw_kint(w, "hidden", a->hidden);
    zb_yw_kint(w, "heads", a->heads);
    zb_yw_kint(w, "ffn_hidden", a->ffn_hidden);
    zb_yw_kint(w, "seq_len", a->seq_len);
    zb_yw_kint(w, "vocab", a->vocab);
    zb_yw_kstr(w, "precision", m->train.precision == ZB_PREC_BF16 ? "bf16" : "fp32");
    zb_yw_kbool(w, "fused_attention", m->train.fused_attention);
    zb_yw_map_end(w);
    zb_yw_kstr(w, "device", m->cluster.device.name);
}

static void write_layout(zb_yw *w, const zb_plan *plan, const zb_run_result *res) {
    zb_yw_str(w, "layout");
    zb_yw_map_begin(w, true);
    zb_yw_kint(w, "dp", plan->dp);
    zb_yw_kint(w, "tp", plan->tp);
    zb_yw_kint(w, "pp", plan->pp);
    zb_yw_kint(w, "v", plan->v);
    zb_yw_kint(w, "micro_batch", plan->micro_batch);
    zb_yw_kint(w, "microbatches", plan->m);
    zb_yw_kstr(w, "schedule", plan->sched.name);
    zb_yw_kint(w, "threads", res->threads);
    zb_yw_map_end(w);
}

static double max_pp_span(const zb_plan *plan, const zb_run_result *res) {
    double m = 0;
    for (int r = 0; r < plan->pp; r++)
        if (res->pp_span_s[r] > m) m = res->pp_span_s[r];
    return m;
}

static void write_step(zb_yw *w, const zb_plan *plan, const zb_run_result *res) {
    double pipe = max_pp_span(plan, res);
    zb_yw_str(w, "step");
    zb_yw_map_begin(w, true);
    zb_yw_kdouble(w, "measured_s", res->step_s_mean);
    zb_yw_kdouble(w, "predicted_s", plan->pred.step_s);
    zb_yw_kdouble(w, "pipeline_s", pipe);
    zb_yw_kdouble(w, "predicted_pipeline_s", plan->pred.pipeline_s);
    zb_yw_kdouble(w, "overhead_s", res->step_s_mean - pipe);
    zb_yw_map_end(w);
}

static void write_vstages(zb_yw *w, const zb_plan *plan, const zb_pass_times *pt) {
    static const char *const tkey[4] = {"t_f", "t_b", "t_w", "t_bw"};
    static const char *const skey[4] = {"samples_f", "samples_b", "samples_w",
                                        "samples_bw"};
    static const char *const pkey[3] = {"predicted_t_f", "predicted_t_b",
                                        "predicted_t_w"};
    zb_yw_str(w, "vstages");
    zb_yw_seq_begin(w, false);
    for (int s = 0; s < pt->n; s++) {
        const zb_stage_span *sp = &plan->stages[s];
        zb_yw_map_begin(w, true);
        zb_yw_kint(w, "vstage", s);
        zb_yw_kint(w, "layers", sp->n_layers);
        zb_yw_kbool(w, "embed", sp->embed);
        zb_yw_kbool(w, "head", sp->head);
        for (int k = 0; k < 4; k++) zb_yw_kdouble(w, tkey[k], pt->mean_s[s * 4 + k]);
        for (int k = 0; k < 3; k++)
            zb_yw_kdouble(w, pkey[k], zb_pass_times_predicted(plan, s, (zb_pass)k));
        for (int k = 0; k < 4; k++) zb_yw_kint(w, skey[k], pt->count[s * 4 + k]);
        zb_yw_map_end(w);
    }
    zb_yw_seq_end(w);
}

/* Mean of x[r] over the ranks where it is > 0 (0 when none). */
static double mean_pos(const double *x, int n) {
    double s = 0;
    int k = 0;
    for (int r = 0; r < n; r++)
        if (x[r] > 0) s += x[r], k++;
    return k ? s / k : 0;
}

static void write_comm(zb_yw *w, const zb_plan *plan, const zb_run_result *res) {
    double pred = 0;
    for (int s = 0; s < plan->costs.n; s++)
        if (plan->costs.t_comm[s] > pred) pred = plan->costs.t_comm[s];
    double bytes = (double)plan->micro_batch * plan->model.arch.seq_len *
                   plan->model.arch.hidden * sizeof(float);
    zb_yw_str(w, "p2p");
    zb_yw_map_begin(w, true);
    zb_yw_kdouble(w, "bytes", bytes);
    zb_yw_kdouble(w, "measured_s", mean_pos(res->send_s, res->world));
    zb_yw_kdouble(w, "predicted_s", pred);
    zb_yw_map_end(w);
    zb_yw_str(w, "allreduce");
    zb_yw_map_begin(w, true);
    zb_yw_kint(w, "dp_group", plan->dp);
    zb_yw_kdouble(w, "dp_s", mean_pos(res->dp_ar_s, res->world));
    zb_yw_kdouble(w, "embedding_s", mean_pos(res->emb_ar_s, res->world));
    zb_yw_map_end(w);
}

static void write_ranks(zb_yw *w, const zb_plan *plan, const zb_run_result *res) {
    zb_yw_str(w, "ranks");
    zb_yw_seq_begin(w, false);
    for (int g = 0; g < res->world; g++) {
        int pr, dr, tr;
        zb_plan_coords(plan, g, &pr, &dr, &tr);
        zb_yw_map_begin(w, true);
        zb_yw_kint(w, "rank", g);
        zb_yw_kint(w, "pp_rank", pr);
        zb_yw_kint(w, "dp_rank", dr);
        zb_yw_kint(w, "tp_rank", tr);
        zb_yw_kdouble(w, "peak_mem_bytes", res->static_bytes[g] + res->act_peak_bytes[g]);
        zb_yw_kdouble(w, "predicted_peak_mem_bytes", plan->pred.peak_mem_bytes[pr]);
        zb_yw_kdouble(w, "send_s", res->send_s[g]);
        zb_yw_kdouble(w, "dp_allreduce_s", res->dp_ar_s[g]);
        zb_yw_kdouble(w, "embedding_allreduce_s", res->emb_ar_s[g]);
        zb_yw_map_end(w);
    }
    zb_yw_seq_end(w);
}

zb_status zb_profile_write(const char *path, const zb_plan *plan,
                           const zb_run_result *res, zb_err *err) {
    if (res->n_steps == 0)
        return zb_fail(err, ZB_ERUNTIME, "--profile: no step ran, nothing "
                       "measured");
    zb_pass_times pt;
    ZB_TRY(zb_pass_times_make(plan, res, &pt, err));
    zb_yw *w;
    zb_status s = zb_yw_open(path, &w, err);
    if (s == ZB_OK) {
        zb_yw_map_begin(w, false);
        zb_yw_kint(w, "profile", 1);
        write_model(w, plan);
        write_layout(w, plan, res);
        write_step(w, plan, res);
        write_vstages(w, plan, &pt);
        write_comm(w, plan, res);
        write_ranks(w, plan, res);
        zb_yw_map_end(w);
        s = zb_yw_close(w, true, err);
    }
    zb_pass_times_free(&pt);
    return s;
}
