/* svg.c - the planned and executed timelines as SVG (see svg.h). */
#include "executor/report/svg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/zb_afile.h"
#include "common/zb_sim.h"
#include "executor/report/trace.h"

#define SVG_W 1000.0
#define LEFT 90.0       /* room for the row labels */
#define RIGHT 20.0
#define ROW_H 22.0
#define ROW_GAP 4.0
#define PANEL_HEAD 34.0 /* panel title */
#define AXIS_H 26.0     /* tick labels under a panel */

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
} svg_row;

static double panel_height(int pp) {
    return PANEL_HEAD + pp * (ROW_H + ROW_GAP) + AXIS_H;
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

static void draw_axis(FILE *f, double y, double tmax) {
    double width = SVG_W - LEFT - RIGHT;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
            "stroke=\"#666\"/>\n", LEFT, y, LEFT + width, y);
    for (int i = 0; i <= 4; i++) {
        double x = LEFT + width * i / 4;
        /* the last label ends at its tick: centred, it ran past the edge */
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                "stroke=\"#666\"/><text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" "
                "text-anchor=\"%s\" fill=\"#333\">%.3f ms</text>\n", x, y,
                x, y + 4, x, y + 16, i == 4 ? "end" : "middle", tmax * 1e3 * i / 4);
    }
}

static void draw_panel(FILE *f, double y0, const char *title, int pp,
                       const svg_row *rows, double tmax) {
    double width = SVG_W - LEFT - RIGHT, scale = tmax > 0 ? width / tmax : 0;
    fprintf(f, "<text x=\"10\" y=\"%.1f\" font-size=\"14\" font-weight=\"bold\" "
            "fill=\"#222\">%s</text>\n", y0 + 20, title);
    for (int r = 0; r < pp; r++) {
        double y = y0 + PANEL_HEAD + r * (ROW_H + ROW_GAP);
        fprintf(f, "<text x=\"10\" y=\"%.1f\" font-size=\"12\" fill=\"#222\">"
                "rank %d</text>\n<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                "height=\"%.1f\" fill=\"#f3f3f3\"/>\n", y + ROW_H / 2 + 4, r,
                LEFT, y, width, ROW_H);
        for (int i = 0; i < rows[r].n; i++) {
            double s = rows[r].start[i], e = rows[r].end[i];
            draw_box(f, &rows[r].acts[i], LEFT + s * scale, y, (e - s) * scale,
                     s * 1e3, e * 1e3);
        }
    }
    draw_axis(f, y0 + PANEL_HEAD + pp * (ROW_H + ROW_GAP), tmax);
}

static void draw_legend(FILE *f, double y) {
    for (int k = 0; k < 4; k++) {
        double x = LEFT + k * 170;
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"14\" "
                "fill=\"%s\" stroke=\"#333\" stroke-width=\"0.5\"/><text "
                "x=\"%.1f\" y=\"%.1f\" font-size=\"12\" fill=\"#222\">%s</text>\n",
                x, y, pass_fill[k], x + 20, y + 12, pass_title[k]);
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#555\">"
            "lighter shade: model chunk 1 and up; numbers: microbatch</text>\n",
            LEFT, y + 32);
}

/* Planned panel rows from a simulation (times already start at 0). */
static void planned_rows(const zb_plan *plan, const zb_sim_result *sim,
                         svg_row *rows) {
    for (int r = 0; r < plan->pp; r++)
        rows[r] = (svg_row){plan->sched.acts[r], plan->sched.len[r],
                            sim->start + sim->off[r], sim->end + sim->off[r]};
}

/* Executed panel rows: the last kept step of the dp 0, tp 0 ranks, shifted
 * so the step's first start is 0 (copies into buf [2 * total actions]).
 * Returns the span of that step. */
static double executed_rows(const zb_plan *plan, const zb_run_result *res,
                            double *buf, svg_row *rows) {
    int k = res->trace_n - 1;
    double t0 = 0, t1 = 0;
    bool any = false;
    for (int r = 0; r < plan->pp; r++) {
        int g = zb_plan_rank(plan, r, 0, 0), n = res->n_acts[g];
        const double *s = res->t_start[g] + (size_t)k * n, *e = res->t_end[g] + (size_t)k * n;
        for (int i = 0; i < n; i++) {
            if (!any || s[i] < t0) t0 = s[i];
            if (!any || e[i] > t1) t1 = e[i];
            any = true;
        }
    }
    size_t at = 0;
    for (int r = 0; r < plan->pp; r++) {
        int g = zb_plan_rank(plan, r, 0, 0), n = res->n_acts[g];
        const double *s = res->t_start[g] + (size_t)k * n, *e = res->t_end[g] + (size_t)k * n;
        rows[r] = (svg_row){plan->sched.acts[r], n, buf + at, buf + at + n};
        for (int i = 0; i < n; i++) {
            buf[at + i] = s[i] - t0;
            buf[at + n + i] = e[i] - t0;
        }
        at += 2 * (size_t)n;
    }
    return t1 - t0;
}

static void write_svg(FILE *f, const zb_plan *plan, const zb_run_result *res,
                      const zb_sim_result *sim, svg_row *rows, double *buf) {
    int pp = plan->pp;
    bool ran = res->trace_n > 0;
    double h = 40 + 2 * panel_height(pp) + 50;
    char title[200];
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
            "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n", SVG_W,
            h, SVG_W, h);
    fprintf(f, "<text x=\"10\" y=\"24\" font-size=\"16\" font-weight=\"bold\" "
            "fill=\"#111\">%s: dp %d tp %d pp %d v %d, %d microbatches of %d"
            "</text>\n", plan->sched.name, plan->dp, plan->tp, pp, plan->v,
            plan->m, plan->micro_batch);
    planned_rows(plan, sim, rows);
    snprintf(title, sizeof title, "planned (simulated with the plan's costs): "
             "%.3f ms, bubble %.1f%%", sim->last_end * 1e3, 100 * sim->bubble_rate);
    draw_panel(f, 40, title, pp, rows, sim->last_end);
    double y1 = 40 + panel_height(pp);
    if (ran) {
        double span = executed_rows(plan, res, buf, rows);
        snprintf(title, sizeof title, "executed (step %d, dp 0 tp 0, measured): "
                 "%.3f ms, bubble %.1f%% (mean over steps)",
                 res->trace_step[res->trace_n - 1], span * 1e3, 100 * res->bubble_rate);
        draw_panel(f, y1, title, pp, rows, span);
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
    for (int r = 0; r < plan->pp; r++) total += (size_t)plan->sched.len[r];
    svg_row *rows = zb_calloc((size_t)plan->pp, sizeof *rows, err);
    double *buf = rows ? zb_calloc(2 * total, sizeof *buf, err) : NULL;
    zb_afile af = {0};
    zb_status s = buf ? zb_afile_open(&af, path, err) : ZB_ENOMEM;
    if (s == ZB_OK) {
        write_svg(af.f, plan, res, &sim, rows, buf);
        bool ok = !ferror(af.f);
        s = zb_afile_close(&af, ok, err);
        if (!ok) s = zb_fail(err, ZB_EIO, "cannot write '%s': %s", path, strerror(errno));
    }
    free(buf);
    free(rows);
    zb_sim_result_free(&sim);
    return s;
}
