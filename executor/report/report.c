/* report.c - report.yaml and the table zbrun prints (see report.h). */
#include "executor/report/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/zb_sim.h"
#include "common/zb_yaml.h"
#include "executor/report/pass_times.h"
#include "executor/report/replay.h"
#include "executor/report/trace.h"
#include "planner/cost/plan_fit.h"

double zb_load_average(void) {
    FILE *f = fopen("/proc/loadavg", "r");
    double l = -1;
    if (!f) return -1;
    if (fscanf(f, "%lf", &l) != 1) l = -1;
    fclose(f);
    return l;
}

double zb_report_margin_bytes(const zb_plan *plan) {
    return zb_plan_workspace_bytes(plan) + zb_plan_staging_bytes(plan);
}

double zb_report_pred_mem(const zb_plan *plan, int r) {
    double m = plan->pred.peak_mem_bytes[r] - zb_report_margin_bytes(plan);
    return m > 0 ? m : 0;
}

static bool cpu_device(const zb_plan *plan) {
    return strcasecmp(plan->model.cluster.device.name, "cpu") == 0;
}

/* A cpu device whose peak is not the table's guess: `zbplan calibrate`
 * measured it (per core; MFU is over the cores the ranks use). */
static bool cpu_calibrated(const zb_plan *plan) {
    const zb_device *t = zb_device_lookup("cpu");
    const zb_device *d = &plan->model.cluster.device;
    return cpu_device(plan) && t && (d->peak_fp32_flops != t->peak_fp32_flops ||
                                     d->gemm_eff > 0);
}

static const char *mfu_basis(const zb_plan *plan) {
    if (!cpu_device(plan)) return "device datasheet";
    return cpu_calibrated(plan) ? "measured cpu peak (zbplan calibrate)"
                                : "guessed cpu peak";
}

zb_status zb_report_pred_make(const zb_plan *plan, zb_report_pred *out,
                              zb_err *err) {
    memset(out, 0, sizeof *out);
    zb_sim_result sim;
    zb_status s = zb_simulate(&plan->sched, &plan->costs, &sim, err);
    if (s == ZB_OK) {
        out->busy_s = zb_calloc((size_t)plan->pp, sizeof(double), err);
        out->span_s = zb_calloc((size_t)plan->pp, sizeof(double), err);
        if (!out->busy_s || !out->span_s) s = ZB_ENOMEM;
    }
    for (int r = 0; s == ZB_OK && r < plan->pp; r++) {
        out->busy_s[r] = sim.busy[r];
        out->span_s[r] = sim.span[r];
    }
    zb_sim_result_free(&sim);
    if (s != ZB_OK) zb_report_pred_free(out);
    return s;
}

void zb_report_pred_free(zb_report_pred *p) {
    free(p->busy_s);
    free(p->span_s);
    memset(p, 0, sizeof *p);
}

/* ---- YAML ---- */

static void write_machine(zb_yw *w, const zb_plan *plan,
                          const zb_report_meta *m) {
    zb_yw_str(w, "machine");
    zb_yw_map_begin(w, true);
    zb_yw_kint(w, "cores", m->cores);
    zb_yw_kstr(w, "device", plan->model.cluster.device.name);
    if (m->blas) zb_yw_kstr(w, "blas", m->blas);
    zb_yw_kdouble(w, "load_start", m->load_start);
    zb_yw_kdouble(w, "load_end", m->load_end);
    zb_yw_map_end(w);
}

static void write_plan_info(zb_yw *w, const zb_plan *plan,
                            const zb_report_meta *m, const zb_run_result *res) {
    zb_yw_str(w, "plan");
    zb_yw_map_begin(w, true);
    zb_yw_kstr(w, "name", plan->model.name);
    zb_yw_kstr(w, "schedule", plan->sched.name);
    zb_yw_kstr(w, "solver", plan->solver);
    zb_yw_kint(w, "dp", plan->dp);
    zb_yw_kint(w, "tp", plan->tp);
    zb_yw_kint(w, "pp", plan->pp);
    zb_yw_kint(w, "v", plan->v);
    zb_yw_kint(w, "microbatches", plan->m);
    zb_yw_kint(w, "micro_batch", plan->micro_batch);
    zb_yw_map_end(w);
    zb_yw_str(w, "run");
    zb_yw_map_begin(w, true);
    zb_yw_kstr(w, "plan_path", m->plan_path ? m->plan_path : "");
    if (m->plan_hash) zb_yw_kstr(w, "plan_hash", m->plan_hash);
    zb_yw_kstr(w, "zbrun_version", m->version ? m->version : "unknown");
    zb_yw_kdouble(w, "wall_s", m->wall_s);
    write_machine(w, plan, m);
    zb_yw_kstr(w, "backend", m->backend);
    zb_yw_kint(w, "ranks", res->world);
    zb_yw_kint(w, "threads_per_rank", res->threads);
    zb_yw_kint(w, "first_step", res->first_step);
    zb_yw_kint(w, "steps_run", res->n_steps);
    zb_yw_kint(w, "total_steps", res->total_steps);
    zb_yw_kint(w, "resumed_from", res->resumed_from);
    zb_yw_map_end(w);
}

static void write_summary(zb_yw *w, const zb_plan *plan,
                          const zb_run_result *res) {
    zb_yw_str(w, "summary");
    zb_yw_map_begin(w, false);
    zb_yw_kdouble(w, "step_s", res->step_s_mean);
    zb_yw_kdouble(w, "predicted_step_s", plan->pred.step_s);
    zb_yw_kdouble(w, "tokens_per_s", res->tokens_per_s);
    zb_yw_kdouble(w, "predicted_tokens_per_s", plan->pred.tokens_per_s);
    zb_yw_kdouble(w, "mfu", res->mfu);
    zb_yw_kdouble(w, "predicted_mfu", plan->pred.mfu);
    zb_yw_kdouble(w, "bubble_rate", res->bubble_rate);
    zb_yw_kdouble(w, "predicted_bubble_rate", plan->pred.bubble_rate);
    double replayed;
    zb_err err;
    if (zb_replay_bubble(plan, res, &replayed, &err) == ZB_OK)
        zb_yw_kdouble(w, "replayed_bubble_rate", replayed);
    zb_yw_kstr(w, "mfu_peak", mfu_basis(plan));
    if (res->n_steps > 0) {
        zb_yw_kdouble(w, "first_loss", res->loss[0]);
        zb_yw_kdouble(w, "final_loss", res->loss[res->n_steps - 1]);
    }
    if (res->n_val > 0) {
        zb_yw_kdouble(w, "first_val_loss", res->val_loss[0]);
        zb_yw_kdouble(w, "final_val_loss", res->val_loss[res->n_val - 1]);
    }
    zb_yw_map_end(w);
}

/* Validation losses (eval.h): step 0 of a fresh run is before training. */
static void write_val(zb_yw *w, const zb_run_result *res) {
    if (res->n_val == 0) return;
    zb_yw_str(w, "val");
    zb_yw_seq_begin(w, false);
    for (int i = 0; i < res->n_val; i++) {
        zb_yw_map_begin(w, true);
        zb_yw_kint(w, "step", res->val_step[i]);
        zb_yw_kdouble(w, "val_loss", res->val_loss[i]);
        zb_yw_map_end(w);
    }
    zb_yw_seq_end(w);
}

static void write_steps(zb_yw *w, const zb_run_result *res) {
    zb_yw_str(w, "steps");
    zb_yw_seq_begin(w, false);
    for (int k = 0; k < res->n_steps; k++) {
        zb_yw_map_begin(w, true);
        zb_yw_kint(w, "step", res->first_step + k);
        zb_yw_kdouble(w, "loss", res->loss[k]);
        zb_yw_kdouble(w, "lr", res->lr[k]);
        zb_yw_kdouble(w, "grad_norm", res->grad_norm[k]);
        zb_yw_kdouble(w, "time_s", res->step_s[k]);
        zb_yw_map_end(w);
    }
    zb_yw_seq_end(w);
}

static void write_pp_ranks(zb_yw *w, const zb_plan *plan,
                           const zb_run_result *res, const zb_report_pred *pr) {
    zb_yw_str(w, "pipeline_ranks");
    zb_yw_seq_begin(w, false);
    for (int r = 0; r < plan->pp; r++) {
        zb_yw_map_begin(w, true);
        zb_yw_kint(w, "pp_rank", r);
        zb_yw_kdouble(w, "busy_s", res->pp_busy_s[r]);
        zb_yw_kdouble(w, "predicted_busy_s", pr->busy_s[r]);
        zb_yw_kdouble(w, "span_s", res->pp_span_s[r]);
        zb_yw_kdouble(w, "predicted_span_s", pr->span_s[r]);
        zb_yw_kdouble(w, "bubble", res->pp_bubble[r]);
        zb_yw_kdouble(w, "predicted_bubble", plan->pred.bubble[r]);
        zb_yw_kdouble(w, "peak_mem_bytes", res->pp_mem_bytes[r]);
        zb_yw_kdouble(w, "predicted_peak_mem_bytes", zb_report_pred_mem(plan, r));
        zb_yw_kdouble(w, "predicted_margin_bytes", zb_report_margin_bytes(plan));
        zb_yw_map_end(w);
    }
    zb_yw_seq_end(w);
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
        zb_yw_kdouble(w, "busy_s", res->busy_s[g]);
        zb_yw_kdouble(w, "span_s", res->span_s[g]);
        zb_yw_kdouble(w, "bubble", res->bubble[g]);
        zb_yw_kdouble(w, "recv_s", res->recv_s[g]);
        zb_yw_kdouble(w, "stall_s", res->stall_s[g]);
        zb_yw_kdouble(w, "boundary_s", res->boundary_s[g]);
        zb_yw_kdouble(w, "boundary_idle_s", res->boundary_idle_s[g]);
        zb_yw_kdouble(w, "boundary_busy_s", res->boundary_busy_s[g]);
        zb_yw_kdouble(w, "verdict_wait_s", res->verdict_wait_s[g]);
        zb_yw_kdouble(w, "static_bytes", res->static_bytes[g]);
        zb_yw_kdouble(w, "act_peak_bytes", res->act_peak_bytes[g]);
        zb_yw_map_end(w);
    }
    zb_yw_seq_end(w);
}

/* Per virtual stage and pass kind that ran: measured mean vs plan. */
static void write_stage_passes(zb_yw *w, const zb_plan *plan,
                               const zb_pass_times *pt) {
    zb_yw_str(w, "stages");
    zb_yw_seq_begin(w, false);
    for (int s = 0; s < pt->n; s++) {
        for (int k = ZB_F; k <= ZB_BW; k++) {
            if (!pt->count[s * 4 + k]) continue;
            zb_yw_map_begin(w, true);
            zb_yw_kint(w, "vstage", s);
            zb_yw_kstr(w, "pass", zb_pass_name((zb_pass)k));
            zb_yw_kdouble(w, "time_s", pt->mean_s[s * 4 + k]);
            zb_yw_kdouble(w, "predicted_time_s",
                          zb_pass_times_predicted(plan, s, (zb_pass)k));
            zb_yw_kint(w, "samples", pt->count[s * 4 + k]);
            zb_yw_map_end(w);
        }
    }
    zb_yw_seq_end(w);
    if (!pt->vocab_count) return;
    zb_yw_str(w, "vocab_passes");
    zb_yw_seq_begin(w, false);
    for (int r = 0; r < pt->pp; r++)
        for (int k = 0; k < 2; k++) {
            if (!pt->vocab_count[r * 2 + k]) continue;
            zb_pass pass = k ? ZB_T : ZB_S;
            zb_yw_map_begin(w, true);
            zb_yw_kint(w, "pp_rank", r);
            zb_yw_kstr(w, "pass", zb_pass_name(pass));
            zb_yw_kdouble(w, "time_s", pt->vocab_mean_s[r * 2 + k]);
            zb_yw_kdouble(w, "predicted_time_s",
                          zb_pass_times_predicted(plan, 0, pass));
            zb_yw_kint(w, "samples", pt->vocab_count[r * 2 + k]);
            zb_yw_map_end(w);
        }
    zb_yw_seq_end(w);
}

/* The last kept step of the dp 0, tp 0 ranks: per pipeline rank its
 * actions as [label, start_s, end_s], times from the step's first start
 * (what zbreport draws). */
static void write_timeline(zb_yw *w, const zb_plan *plan,
                           const zb_run_result *res) {
    if (res->trace_n == 0) return;
    int k = res->trace_n - 1;
    double t0 = 0;
    bool any = false;
    for (int r = 0; r < plan->pp; r++) {
        int g = zb_plan_rank(plan, r, 0, 0), n = res->n_acts[g];
        for (int i = 0; i < n; i++) {
            double s = res->t_start[g][(size_t)k * n + i];
            if (!any || s < t0) t0 = s;
            any = true;
        }
    }
    zb_yw_str(w, "timeline");
    zb_yw_seq_begin(w, false);
    char label[24];
    for (int r = 0; r < plan->pp; r++) {
        int g = zb_plan_rank(plan, r, 0, 0), n = res->n_acts[g];
        zb_yw_map_begin(w, false);
        zb_yw_kint(w, "pp_rank", r);
        zb_yw_kint(w, "step", res->trace_step[k]);
        zb_yw_str(w, "actions");
        zb_yw_seq_begin(w, false);
        for (int i = 0; i < n; i++) {
            size_t at = (size_t)k * n + i;
            zb_action_label(&plan->sched.acts[r][i], label, sizeof label);
            zb_yw_seq_begin(w, true);
            zb_yw_str(w, label);
            zb_yw_double(w, res->t_start[g][at] - t0);
            zb_yw_double(w, res->t_end[g][at] - t0);
            zb_yw_seq_end(w);
        }
        zb_yw_seq_end(w);
        zb_yw_map_end(w);
    }
    zb_yw_seq_end(w);
}

zb_status zb_report_write(const char *path, const zb_plan *plan,
                          const zb_run_result *res, const zb_report_meta *meta,
                          zb_err *err) {
    zb_report_pred pr;
    zb_pass_times pt;
    ZB_TRY(zb_report_pred_make(plan, &pr, err));
    zb_status s = zb_pass_times_make(plan, res, &pt, err);
    zb_yw *w;
    if (s == ZB_OK) s = zb_yw_open(path, &w, err);
    if (s == ZB_OK) {
        zb_yw_map_begin(w, false);
        zb_yw_kint(w, "report", 1);
        write_plan_info(w, plan, meta, res);
        write_summary(w, plan, res);
        write_steps(w, res);
        write_val(w, res);
        write_pp_ranks(w, plan, res, &pr);
        write_ranks(w, plan, res);
        write_stage_passes(w, plan, &pt);
        write_timeline(w, plan, res);
        zb_yw_map_end(w);
        s = zb_yw_close(w, true, err);
    }
    zb_pass_times_free(&pt);
    zb_report_pred_free(&pr);
    return s;
}

/* ---- table ---- */

#define MIB (1024.0 * 1024.0)
/* Stalled time above this share of the pass time gets a note. */
#define ZB_STALL_NOTE 0.05

/* Vocabulary parallelism: one row per pipeline rank, its shard's S and T
 * passes, measured (predicted) ms. */
static void write_vocab_pass_table(FILE *out, const zb_plan *plan,
                                   const zb_pass_times *pt) {
    if (!pt->vocab_count) return;
    fprintf(out, "\n%-7s  %21s  %21s\n", "pp rank", "S ms (predicted)",
            "T ms (predicted)");
    for (int r = 0; r < pt->pp; r++) {
        fprintf(out, "%7d", r);
        for (int k = 0; k < 2; k++) {
            if (!pt->vocab_count[r * 2 + k]) {
                fprintf(out, "  %21s", "-");
                continue;
            }
            fprintf(out, "  %9.3f (%9.3f)", pt->vocab_mean_s[r * 2 + k] * 1e3,
                    zb_pass_times_predicted(plan, 0, k ? ZB_T : ZB_S) * 1e3);
        }
        fputc('\n', out);
    }
}

/* One row per virtual stage: measured (predicted) ms of each pass kind
 * the schedule runs there; "-" for kinds it does not. */
static void write_pass_table(FILE *out, const zb_plan *plan,
                                 const zb_run_result *res) {
    zb_pass_times pt;
    zb_err err;
    if (zb_pass_times_make(plan, res, &pt, &err) != ZB_OK) return;
    fprintf(out, "\n%-6s", "vstage");
    for (int k = ZB_F; k <= ZB_BW; k++)
        fprintf(out, "  %21s", k == ZB_F ? "F ms (predicted)" : k == ZB_B ? "B ms (predicted)"
                               : k == ZB_W ? "W ms (predicted)" : "BW ms (predicted)");
    fputc('\n', out);
    for (int s = 0; s < pt.n; s++) {
        fprintf(out, "%6d", s);
        for (int k = ZB_F; k <= ZB_BW; k++) {
            if (!pt.count[s * 4 + k]) { fprintf(out, "  %21s", "-"); continue; }
            fprintf(out, "  %9.3f (%9.3f)", pt.mean_s[s * 4 + k] * 1e3,
                    zb_pass_times_predicted(plan, s, (zb_pass)k) * 1e3);
        }
        fputc('\n', out);
    }
    write_vocab_pass_table(out, plan, &pt);
    zb_pass_times_free(&pt);
}

/* The step boundary (zb_run_result's boundary_*) over all ranks: idle and
 * busy ms summed, and the idle sum's share of the ranks' step time. */
static void write_boundary_line(FILE *out, const zb_run_result *res) {
    double idle = 0, busy = 0;
    for (int g = 0; g < res->world; g++) {
        idle += res->boundary_idle_s[g];
        busy += res->boundary_busy_s[g];
    }
    double all = res->world * res->step_s_mean;
    fprintf(out, "boundary idle %.3f ms (%.1f%% of %d x the mean step), busy "
            "%.3f ms, summed over the ranks (passes' end to the next step)\n",
            idle * 1e3, all > 0 ? 100 * idle / all : 0, res->world, busy * 1e3);
}

void zb_report_table(FILE *out, const zb_plan *plan, const zb_run_result *res,
                     const zb_report_pred *pred) {
    fprintf(out, "\n%-7s  %21s  %21s  %12s  %16s  %10s  %25s\n", "pp rank",
            "busy ms (predicted)", "bubble % (predicted)", "recv wait ms",
            "boundary idle ms", "stalled ms", "peak mem MiB (predicted*)");
    double stall_all = 0, busy_all = 0;
    for (int r = 0; r < plan->pp; r++) {
        double wait = 0, stall = 0, idle = 0;   /* means over its dp x tp ranks */
        for (int g = 0; g < res->world; g++) {
            int pr, dr, tr;
            zb_plan_coords(plan, g, &pr, &dr, &tr);
            if (pr != r) continue;
            wait += res->recv_s[g] / (plan->dp * plan->tp);
            stall += res->stall_s[g] / (plan->dp * plan->tp);
            idle += res->boundary_idle_s[g] / (plan->dp * plan->tp);
        }
        stall_all += stall;
        busy_all += res->pp_busy_s[r];
        char st[16] = "-";   /* meaningful with one thread per rank only */
        if (res->threads == 1) snprintf(st, sizeof st, "%.3f", stall * 1e3);
        fprintf(out, "%7d  %9.3f (%9.3f)  %9.1f (%9.1f)  %12.3f  %16.3f  %10s  %11.1f (%11.1f)\n",
                r, res->pp_busy_s[r] * 1e3, pred->busy_s[r] * 1e3,
                100 * res->pp_bubble[r], 100 * plan->pred.bubble[r], wait * 1e3,
                idle * 1e3, st, res->pp_mem_bytes[r] / MIB,
                zb_report_pred_mem(plan, r) / MIB);
    }
    fprintf(out, "* what the stage allocates; the plan's peak less its %.0f MiB "
            "workspace margin%s\n", zb_report_margin_bytes(plan) / MIB,
            zb_plan_staging_bytes(plan) > 0 ? " and transport staging rings" : "");
    write_pass_table(out, plan, res);
    double replayed = 0;
    zb_err err;
    bool rp = zb_replay_bubble(plan, res, &replayed, &err) == ZB_OK;
    char basis[96] = "";
    if (cpu_device(plan))
        snprintf(basis, sizeof basis, ", of %s CPU peak, %.1f GFLOP/s per core",
                 cpu_calibrated(plan) ? "the measured (zbplan calibrate)" : "a guessed",
                 plan->model.cluster.device.peak_fp32_flops / 1e9);
    fprintf(out, "mean step %.3f ms (predicted %.3f ms), %.0f tokens/s (predicted "
            "%.0f), MFU %.2f%% (predicted %.2f%%%s)\n", res->step_s_mean * 1e3,
            plan->pred.step_s * 1e3, res->tokens_per_s, plan->pred.tokens_per_s,
            100 * res->mfu, 100 * plan->pred.mfu, basis);
    fprintf(out, "bubble %.1f%% measured, %.1f%% predicted", 100 * res->bubble_rate,
            100 * plan->pred.bubble_rate);
    if (rp && plan->pp > 1)
        fprintf(out, ", %.1f%% for the measured pass times (the rest is waiting "
                "outside the passes)", 100 * replayed);
    fputc('\n', out);
    write_boundary_line(out, res);
    /* stalls stretch passes at random places: say so rather than let the
     * bubble be read as the schedule's */
    if (res->threads == 1 && busy_all > 0 && stall_all > ZB_STALL_NOTE * busy_all)
        fprintf(out, "note: the rank threads were off their cores for %.0f%% of "
                "their pass time (other processes or more ranks than cores); the "
                "measured times and bubble include that\n",
                100 * stall_all / busy_all);
}
