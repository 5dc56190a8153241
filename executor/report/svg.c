/* svg.c - the planned and executed timelines as SVG (see svg.h). */
#include "executor/report/svg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/zb_afile.h"
#include "common/zb_lower.h"
#include "common/zb_sim.h"
#include "common/zb_ticks.h"
#include "executor/report/trace.h"

#define SVG_W 1000.0
#define LEFT 90.0       /* room for the row labels */
#define RIGHT 20.0
#define ROW_H 22.0
#define ROW_GAP 4.0
#define PANEL_HEAD 34.0 /* panel title */
#define AXIS_H 26.0     /* tick labels under a panel */
#define WAIT_H 5.0      /* receive-wait strip along a row's foot */
#define TAIL_FILL "#bab0ac"
#define WAIT_FILL "#e15759"
#define GAP_FILL "#f3f3f3"

/* Base colours per pass, and lighter ones for chunks above 0. */
static const char *const pass_fill[4] = {"#4e79a7", "#59a14f", "#f28e2b", "#b07aa1"};
static const char *const pass_fill_light[4] = {"#9ab6d3", "#9fcc98", "#f7bf8a", "#d4b5cc"};
static const char *const pass_title[4] = {"F (forward)", "B (input grad)",
                                          "W (weight grad)", "BW (fused backward)"};

/* One pipeline rank's boxes: actions acts[0..n) from start/end (seconds,
 * relative to the panel's origin) into a row at y. */
typedef struct {
    const zb_action *acts;
    int n;
    const double *start, *end;
    double tail0, tail1;       /* sync + optimizer after the passes */
    const char *tail_what;
    /* the step's end waits for the last rank's passes (every rank's
     * gradient norm is summed before any update): a wait, not work */
    double end_wait0, end_wait1;
    const char *end_wait_what;
    int n_wait;                /* receive waits (executed only) */
    const double *wait_start, *wait_end;
} svg_row;

static double panel_height(int pp) {
    return PANEL_HEAD + pp * (ROW_H + ROW_GAP) + AXIS_H;
}

/* The shared time axis: [0, tmax] in n round steps (zb_ticks.h). */
typedef struct {
    double step, tmax;   /* seconds */
    int n;
} svg_axis;

static svg_axis make_axis(double t) {
    svg_axis a;
    a.step = zb_tick_step(t * 1e3, 8, &a.n) / 1e3;
    a.tmax = a.n * a.step;
    return a;
}

static void draw_box(FILE *f, const zb_action *a, double x, double y,
                     double w, double t0_ms, double t1_ms) {
    int k = a->pass <= ZB_BW ? a->pass : 0;
    char label[24];
    zb_action_label(a, label, sizeof label);
    fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.1f\" "
            "fill=\"%s\" stroke=\"#333\" stroke-width=\"0.5\"><title>%s: "
            "%.3f-%.3f ms</title></rect>\n", x, y, w > 0.5 ? w : 0.5, ROW_H,
            a->chunk ? pass_fill_light[k] : pass_fill[k], label, t0_ms, t1_ms);
    char num[12];
    snprintf(num, sizeof num, "%d", (int)a->mb);
    if (w >= 7.0 * (double)strlen(num) + 4)   /* ~7 px per digit at 11 px */
        fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"11\" "
                "text-anchor=\"middle\" fill=\"#fff\">%s</text>\n", x + w / 2,
                y + ROW_H / 2 + 4, num);
}

/* Round ticks 0, step, ... tmax in ms; " ms" after the last label, which
 * ends at its tick so it stays inside the picture. */
static void draw_axis(FILE *f, double y, const svg_axis *ax) {
    double width = SVG_W - LEFT - RIGHT;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
            "stroke=\"#666\"/>\n", LEFT, y, LEFT + width, y);
    for (int i = 0; i <= ax->n; i++) {
        double x = LEFT + width * i / ax->n;
        char num[32];
        zb_tick_label(i * ax->step * 1e3, ax->step * 1e3, num, sizeof num);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                "stroke=\"#666\"/><text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" "
                "text-anchor=\"%s\" fill=\"#333\">%s%s</text>\n", x, y, x, y + 4,
                x, y + 16, i == ax->n ? "end" : "middle", num,
                i == ax->n ? " ms" : "");
    }
}

/* Gradient sync and optimizer after the passes, from t0 to t1 (seconds). */
static void draw_tail(FILE *f, double x0, double x1, double y, double t0,
                      double t1, const char *what) {
    if (x1 - x0 <= 0) return;
    fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.1f\" "
            "fill=\"%s\" stroke=\"#333\" stroke-width=\"0.5\"><title>%s: "
            "%.3f-%.3f ms</title></rect>\n", x0, y, x1 - x0 > 0.5 ? x1 - x0 : 0.5,
            ROW_H, TAIL_FILL, what, t0 * 1e3, t1 * 1e3);
}

/* A wait (a receive's, the step end's): a red strip along the row's foot. */
static void draw_wait(FILE *f, double x0, double x1, double y, double t0, double t1,
                      const char *what) {
    if (x1 - x0 < 0.5) return;
    fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.1f\" "
            "fill=\"%s\"><title>%s: %.3f-%.3f ms</title></rect>\n", x0,
            y + ROW_H - WAIT_H, x1 - x0, WAIT_H, WAIT_FILL, what, t0 * 1e3, t1 * 1e3);
}

static void draw_panel(FILE *f, double y0, const char *title, int pp,
                       const svg_row *rows, const svg_axis *ax) {
    double width = SVG_W - LEFT - RIGHT, scale = width / ax->tmax;
    fprintf(f, "<text x=\"10\" y=\"%.1f\" font-size=\"14\" font-weight=\"bold\" "
            "fill=\"#222\">%s</text>\n", y0 + 20, title);
    for (int r = 0; r < pp; r++) {
        const svg_row *row = &rows[r];
        double y = y0 + PANEL_HEAD + r * (ROW_H + ROW_GAP);
        fprintf(f, "<text x=\"10\" y=\"%.1f\" font-size=\"12\" fill=\"#222\">"
                "rank %d</text>\n<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                "height=\"%.1f\" fill=\"%s\"/>\n", y + ROW_H / 2 + 4, r,
                LEFT, y, width, ROW_H, GAP_FILL);
        for (int i = 0; i < row->n_wait; i++)
            draw_wait(f, LEFT + row->wait_start[i] * scale, LEFT + row->wait_end[i] * scale,
                      y, row->wait_start[i], row->wait_end[i], "receive wait");
        if (row->end_wait_what)
            draw_wait(f, LEFT + row->end_wait0 * scale, LEFT + row->end_wait1 * scale,
                      y, row->end_wait0, row->end_wait1, row->end_wait_what);
        for (int i = 0; i < row->n; i++) {
            double s = row->start[i], e = row->end[i];
            draw_box(f, &row->acts[i], LEFT + s * scale, y, (e - s) * scale,
                     s * 1e3, e * 1e3);
        }
        draw_tail(f, LEFT + row->tail0 * scale, LEFT + row->tail1 * scale, y,
                  row->tail0, row->tail1, row->tail_what);
    }
    draw_axis(f, y0 + PANEL_HEAD + pp * (ROW_H + ROW_GAP), ax);
}

static void swatch(FILE *f, double x, double y, const char *fill, const char *text) {
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"14\" "
            "fill=\"%s\" stroke=\"#333\" stroke-width=\"0.5\"/><text "
            "x=\"%.1f\" y=\"%.1f\" font-size=\"12\" fill=\"#222\">%s</text>\n",
            x, y, fill, x + 20, y + 12, text);
}

static void draw_legend(FILE *f, double y) {
    for (int k = 0; k < 4; k++) swatch(f, LEFT + k * 170, y, pass_fill[k], pass_title[k]);
    swatch(f, LEFT, y + 22, TAIL_FILL, "gradient sync + optimizer");
    swatch(f, LEFT + 210, y + 22, WAIT_FILL, "wait: receive, step end");
    swatch(f, LEFT + 420, y + 22, GAP_FILL, "idle, not receiving: host work or off-core stall");
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#555\">"
            "lighter shade: model chunk 1 and up; numbers: microbatch; both panels "
            "share one time scale; step time: from the step's start to the end of "
            "its optimizer update</text>\n", LEFT, y + 54);
}

/* Planned panel rows from a simulation (times already start at 0), with the
 * predicted sync and optimizer after the pipeline, and each rank's wait
 * from its last pass to the pipeline's last. */
static void planned_rows(const zb_plan *plan, const zb_sim_result *sim,
                         svg_row *rows) {
    for (int r = 0; r < plan->pp; r++) {
        const double *end = sim->end + sim->off[r];
        double own = 0;
        for (int i = 0; i < plan->sched.len[r]; i++) if (end[i] > own) own = end[i];
        rows[r] = (svg_row){plan->sched.acts[r], plan->sched.len[r],
                            sim->start + sim->off[r], end,
                            .tail0 = sim->last_end,
                            .tail1 = plan->pred.step_s > sim->last_end
                                         ? plan->pred.step_s : sim->last_end,
                            .tail_what = "predicted gradient sync + optimizer",
                            .end_wait0 = own, .end_wait1 = sim->last_end,
                            .end_wait_what = "predicted step-end wait for the "
                                             "last rank's passes"};
    }
}

/* The receive waits of rank g's kept step k, shifted by t0, into
 * buf (2 * n_ops[g] doubles); 0 when the run kept no transfers. */
static int waits(const zb_run_result *res, const zb_program *prog, int pr, int g,
                 int k, double t0, double *buf) {
    if (!prog || !res->n_ops || !res->n_ops[g]) return 0;
    int n = res->n_ops[g], w = 0;
    for (int i = 0; i < n; i++) {
        size_t at = (size_t)k * (size_t)n + (size_t)i;
        if (prog->ops[pr][i].kind != ZB_OP_RECV || res->x_end[g][at] <= res->x_start[g][at])
            continue;
        buf[w] = res->x_start[g][at] - t0;
        buf[n + w] = res->x_end[g][at] - t0;
        w++;
    }
    return w;
}

/* The earliest pass start or receive of the dp 0, tp 0 ranks in kept
 * step k: the executed panel's time zero. */
static double earliest(const zb_plan *plan, const zb_run_result *res,
                       const zb_program *prog, int k) {
    double t0 = 0;
    bool any = false;
    for (int r = 0; r < plan->pp; r++) {
        int g = zb_plan_rank(plan, r, 0, 0), n = res->n_acts[g];
        int no = prog && res->n_ops ? res->n_ops[g] : 0;
        const double *s = res->t_start[g] + (size_t)k * n;
        for (int i = 0; i < n; i++) {
            if (!any || s[i] < t0) t0 = s[i];
            any = true;
        }
        for (int i = 0; i < no; i++) {
            double x = res->x_start[g][(size_t)k * (size_t)no + (size_t)i];
            if (prog->ops[r][i].kind == ZB_OP_RECV && (!any || x < t0)) t0 = x;
        }
    }
    return t0;
}

/* When the last rank of the world (every replica) ended its passes in
 * kept step k: no rank's update can start before the world's norm sum,
 * so each rank's tail waits until then. */
static double last_pipeline_end(const zb_plan *plan, const zb_run_result *res, int k) {
    double t = res->tail_start[0][k];
    for (int g = 1; g < zb_plan_world(plan); g++)
        if (res->tail_start[g][k] > t) t = res->tail_start[g][k];
    return t;
}

/* Executed panel rows: the last kept step of the dp 0, tp 0 ranks, shifted
 * so the step's first pass or receive starts at 0 (copies into buf: 2 *
 * actions + 2 * ops). A rank's tail is drawn as a wait until the world's
 * last pipeline ends, then as sync + optimizer. Returns where the last
 * rank's optimizer ends. */
static double executed_rows(const zb_plan *plan, const zb_run_result *res,
                            const zb_program *prog, double *buf, svg_row *rows) {
    int k = res->trace_n - 1;
    double t0 = earliest(plan, res, prog, k), t1 = 0;
    double last = last_pipeline_end(plan, res, k) - t0;
    size_t at = 0;
    for (int r = 0; r < plan->pp; r++) {
        int g = zb_plan_rank(plan, r, 0, 0), n = res->n_acts[g];
        const double *s = res->t_start[g] + (size_t)k * n, *e = res->t_end[g] + (size_t)k * n;
        rows[r] = (svg_row){plan->sched.acts[r], n, buf + at, buf + at + n,
                            .tail0 = res->tail_start[g][k] - t0,
                            .tail1 = res->tail_end[g][k] - t0,
                            .tail_what = "gradient sync + optimizer",
                            .end_wait0 = res->tail_start[g][k] - t0,
                            .end_wait_what = "step-end wait for the last rank's passes"};
        rows[r].end_wait1 = last < rows[r].tail1 ? last : rows[r].tail1;
        if (rows[r].end_wait1 > rows[r].tail0) rows[r].tail0 = rows[r].end_wait1;
        for (int i = 0; i < n; i++) {
            buf[at + i] = s[i] - t0;
            buf[at + n + i] = e[i] - t0;
            if (e[i] - t0 > t1) t1 = e[i] - t0;
        }
        at += 2 * (size_t)n;
        int no = res->n_ops ? res->n_ops[g] : 0;
        rows[r].n_wait = waits(res, prog, r, g, k, t0, buf + at);
        rows[r].wait_start = buf + at;
        rows[r].wait_end = buf + at + no;
        at += 2 * (size_t)no;
        if (rows[r].tail1 > t1) t1 = rows[r].tail1;
    }
    return t1;
}

/* Off-core share of the dp 0, tp 0 ranks' pass time (-1: not measured). */
static double stalled(const zb_plan *plan, const zb_run_result *res) {
    double st = 0, busy = 0;
    for (int r = 0; res->stall_s && r < plan->pp; r++) {
        int g = zb_plan_rank(plan, r, 0, 0);
        st += res->stall_s[g];
        busy += res->busy_s[g];
    }
    return busy > 0 && res->threads == 1 ? st / busy : -1;
}

static void write_svg(FILE *f, const zb_plan *plan, const zb_run_result *res,
                      const zb_sim_result *sim, const zb_program *prog,
                      svg_row *rows, svg_row *rows2, double *buf) {
    int pp = plan->pp;
    bool ran = res->trace_n > 0;
    double h = 40 + 2 * panel_height(pp) + 76;
    char title[320];
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
            "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n", SVG_W,
            h, SVG_W, h);
    fprintf(f, "<text x=\"10\" y=\"24\" font-size=\"16\" font-weight=\"bold\" "
            "fill=\"#111\">%s: dp %d tp %d pp %d v %d, %d microbatches of %d"
            "</text>\n", plan->sched.name, plan->dp, plan->tp, pp, plan->v,
            plan->m, plan->micro_batch);
    planned_rows(plan, sim, rows);
    double tmax = rows[0].tail1, end = ran ? executed_rows(plan, res, prog, buf, rows2) : 0;
    svg_axis ax = make_axis(end > tmax ? end : tmax);
    snprintf(title, sizeof title, "planned: step %.1f ms (predicted), bubble %.1f%%",
             plan->pred.step_s * 1e3, 100 * sim->bubble_rate);
    draw_panel(f, 40, title, pp, rows, &ax);
    double y1 = 40 + panel_height(pp);
    if (ran) {
        int step = res->trace_step[res->trace_n - 1];
        double st = stalled(plan, res);
        char off[64] = "";
        if (st >= 0) snprintf(off, sizeof off, ", off-core %.0f%% of pass time", 100 * st);
        snprintf(title, sizeof title, "executed, step %d: step %.1f ms; mean step "
                 "%.1f ms, bubble %.1f%%%s", step,
                 res->step_s[step - res->first_step] * 1e3, res->step_s_mean * 1e3,
                 100 * res->bubble_rate, off);
        draw_panel(f, y1, title, pp, rows2, &ax);
    } else {
        fprintf(f, "<text x=\"10\" y=\"%.1f\" font-size=\"14\" fill=\"#222\">"
                "executed: no step was run</text>\n", y1 + 20);
    }
    draw_legend(f, 40 + 2 * panel_height(pp) + 6);
    fprintf(f, "</svg>\n");
}

zb_status zb_svg_write(const char *path, const zb_plan *plan,
                       const zb_run_result *res, zb_err *err) {
    zb_sim_result sim;
    ZB_TRY(zb_simulate(&plan->sched, &plan->costs, &sim, err));
    size_t total = 0;
    for (int r = 0; r < plan->pp; r++) {
        int g = zb_plan_rank(plan, r, 0, 0);
        total += (size_t)plan->sched.len[r] + (res->n_ops ? (size_t)res->n_ops[g] : 0);
    }
    zb_program prog;
    bool lowered = res->n_ops && zb_lower(&plan->sched, &prog, err) == ZB_OK;
    svg_row *rows = zb_calloc(2 * (size_t)plan->pp, sizeof *rows, err);
    double *buf = rows ? zb_calloc(2 * total + 1, sizeof *buf, err) : NULL;
    zb_afile af = {0};
    zb_status s = buf ? zb_afile_open(&af, path, err) : ZB_ENOMEM;
    if (s == ZB_OK) {
        write_svg(af.f, plan, res, &sim, lowered ? &prog : NULL, rows,
                  rows + plan->pp, buf);
        bool ok = !ferror(af.f);
        s = zb_afile_close(&af, ok, err);
        if (!ok) s = zb_fail(err, ZB_EIO, "cannot write '%s': %s", path, strerror(errno));
    }
    free(buf);
    free(rows);
    if (lowered) zb_program_free(&prog);
    zb_sim_result_free(&sim);
    return s;
}
