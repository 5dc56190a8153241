/* cmp_svg.c - see cmp_svg.h. */
#include "compare/cmp_svg.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/zb_afile.h"
#include "common/zb_ticks.h"

#define W 1000.0
#define LEFT 150.0      /* row and bar labels */
#define RIGHT 40.0      /* room for the last tick label */
#define MID 40.0        /* between the two bar charts */
#define BAR_H 12.0
#define ROW_H 16.0
#define GAP 8.0
#define PRED_FILL "#a0cbe8"
#define MEAS_FILL "#1f4e79"
#define WAIT_FILL "#e15759"   /* zbrun's timeline.svg draws waits so too */
#define WAIT_H 4.0

static const char *const pass_names[4] = {"F", "B", "W", "BW"};
static const char *const pass_fills[4] = {"#4e79a7", "#59a14f", "#f28e2b", "#b07aa1"};

static const char *pass_fill(const char *label) {
    switch (label[0]) {
    case 'F': return pass_fills[0];
    case 'W': return pass_fills[2];
    case 'B': return label[1] == 'W' ? pass_fills[3] : pass_fills[1];
    default: return "#999";
    }
}

/* A horizontal axis from x0, width wide, round ticks up to n * step. */
static void axis(FILE *f, double x0, double width, double y, double step, int n,
                 const char *unit) {
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#666\"/>\n",
            x0, y, x0 + width, y);
    for (int i = 0; i <= n; i++) {
        double x = x0 + width * i / n;
        char num[32];
        zb_tick_label(i * step, step, num, sizeof num);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#666\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"%s\" "
                "fill=\"#333\">%s%s%s</text>\n", x, y, x, y + 4, x, y + 15,
                i == n ? "end" : "middle", num, i == n ? " " : "", i == n ? unit : "");
    }
}

static void swatch(FILE *f, double x, double y, const char *fill, const char *text) {
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\" "
            "stroke=\"#333\" stroke-width=\"0.5\"/><text x=\"%.1f\" y=\"%.1f\" "
            "font-size=\"11\" fill=\"#222\">%s</text>\n", x, y, fill, x + 17, y + 10, text);
}

/* The colour key: bars, then passes. Returns the next y. */
static double key(FILE *f, double y) {
    swatch(f, LEFT, y, PRED_FILL, "predicted (plan)");
    swatch(f, LEFT + 130, y, MEAS_FILL, "measured (run)");
    for (int k = 0; k < 4; k++) swatch(f, LEFT + 270 + k * 60, y, pass_fills[k], pass_names[k]);
    swatch(f, LEFT, y + 18, WAIT_FILL, "step-end wait: a rank done before the "
           "last rank's passes end (every rank's norm is summed before the update)");
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#555\">F forward, "
            "B input grad, W weight grad, BW fused</text>\n", LEFT + 520, y + 10);
    return y + 38;
}

/* The note of zb_cmp_rank_note, wrapped at about 150 characters a line. */
static double note_lines(FILE *f, const char *note, double y) {
    char line[200];
    const char *p = note;
    bool first = true;
    while (*p) {
        size_t n = strlen(p);
        if (n > 150) {
            n = 150;
            while (n > 0 && p[n] != ' ') n--;
            if (n == 0) n = 150;
        }
        snprintf(line, sizeof line, "%s%.*s", first ? "note: " : "", (int)n, p);
        fprintf(f, "<text x=\"10\" y=\"%.1f\" font-size=\"12\" fill=\"#b22\">%s</text>\n",
                y + 12, line);
        y += 16;
        p += n;
        while (*p == ' ') p++;
        first = false;
    }
    return y + 4;
}

/* One bar chart of (predicted, measured) pairs per run, from x0, width
 * wide, with the value at each bar's end. */
static void chart(FILE *f, const zb_cmp_report *reps, int n, double x0, double width,
                  double y, const char *title, const char *unit, bool ms) {
    double vmax = 0;
    for (int i = 0; i < n; i++) {
        double a = ms ? reps[i].pred_step_s * 1e3 : 100 * reps[i].pred_bubble;
        double b = ms ? reps[i].step_s * 1e3 : 100 * reps[i].bubble;
        if (a > vmax) vmax = a;
        if (b > vmax) vmax = b;
    }
    int nt;
    double step = zb_tick_step(vmax * 1.2, 5, &nt), top = nt * step;
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"13\" font-weight=\"bold\">"
            "%s</text>\n", x0, y - 6, title);
    for (int i = 0; i < n; i++) {
        const zb_cmp_report *r = &reps[i];
        double v[2] = {ms ? r->pred_step_s * 1e3 : 100 * r->pred_bubble,
                       ms ? r->step_s * 1e3 : 100 * r->bubble};
        double yy = y + i * (2 * BAR_H + GAP);
        for (int k = 0; k < 2; k++) {
            double w = v[k] > 0 ? width * v[k] / top : 0;
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" "
                    "fill=\"%s\"><title>%s %s %.1f %s</title></rect><text x=\"%.1f\" "
                    "y=\"%.1f\" font-size=\"10\" fill=\"#222\">%.1f%s</text>\n", x0,
                    yy + k * BAR_H, w, BAR_H, k ? MEAS_FILL : PRED_FILL, r->label,
                    k ? "measured" : "predicted", v[k], unit, x0 + w + 3,
                    yy + k * BAR_H + 10, v[k], ms ? "" : "%");
        }
    }
    axis(f, x0, width, y + n * (2 * BAR_H + GAP), step, nt, unit);
}

static double bars(FILE *f, const zb_cmp_report *reps, int n, double y) {
    double half = (W - LEFT - RIGHT - MID) / 2;
    y += 22;
    for (int i = 0; i < n; i++)
        fprintf(f, "<text x=\"10\" y=\"%.1f\" font-size=\"12\">%s</text>\n",
                y + i * (2 * BAR_H + GAP) + BAR_H + 4, reps[i].label);
    chart(f, reps, n, LEFT, half, y, "bubble rate", "%", false);
    chart(f, reps, n, LEFT + half + MID, half, y, "step time (ms)", "ms", true);
    return y + n * (2 * BAR_H + GAP) + 34;
}

static double row_end(const zb_cmp_row *rw, int pp);

/* A row's wait from its last pass to the panel's last: a red strip along
 * its foot (the step's end waits for the slowest rank: a bubble, not
 * work). */
static void end_wait(FILE *f, const zb_cmp_row *row, double last, double yy,
                     double scale, bool plan) {
    double own = row_end(row, 1);
    if ((last - own) * scale < 0.5) return;
    fprintf(f, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" "
            "fill=\"%s\"><title>%sstep-end wait for the last rank's passes: "
            "%.3f-%.3f ms</title></rect>\n", LEFT + own * scale, yy + ROW_H - WAIT_H,
            (last - own) * scale, WAIT_H, WAIT_FILL, plan ? "plan " : "",
            own * 1e3, last * 1e3);
}

/* Rows of boxes; planned boxes' tooltips start "plan ". */
static double rows(FILE *f, const zb_cmp_row *rw, int pp, double y, double scale,
                   const char *name) {
    bool plan = !strcmp(name, "plan");
    double width = W - LEFT - RIGHT, last = row_end(rw, pp);
    for (int p = 0; p < pp; p++) {
        const zb_cmp_row *row = &rw[p];
        double yy = y + p * (ROW_H + 2);
        fprintf(f, "<text x=\"20\" y=\"%.1f\" font-size=\"11\">%s %d</text>"
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                "fill=\"#f3f3f3\"/>\n", yy + ROW_H - 4, name, p, LEFT, yy, width, ROW_H);
        end_wait(f, row, last, yy, scale, plan);
        for (int i = 0; i < row->n; i++) {
            double x = LEFT + row->start[i] * scale;
            double w = (row->end[i] - row->start[i]) * scale;
            fprintf(f, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" "
                    "fill=\"%s\" stroke=\"#333\" stroke-width=\"0.3\"><title>%s%s: "
                    "%.3f-%.3f ms</title></rect>\n", x, yy, w > 0.5 ? w : 0.5,
                    ROW_H, pass_fill(row->label[i]), plan ? "plan " : "", row->label[i],
                    row->start[i] * 1e3, row->end[i] * 1e3);
        }
    }
    return y + pp * (ROW_H + 2);
}

static double panel(FILE *f, const zb_cmp_report *r, double y, double scale) {
    bool same = !strcmp(r->label, r->schedule);   /* name the schedule once */
    fprintf(f, "<text x=\"10\" y=\"%.1f\" font-size=\"13\" font-weight=\"bold\">"
            "%s%s%s dp %d tp %d pp %d v %d, step %d; bubble %.1f%% measured, %.1f%% "
            "predicted</text>\n", y + 14, same ? "" : r->label, same ? "" : ": ",
            r->schedule, r->dp, r->tp, r->pp, r->v, r->step, 100 * r->bubble,
            100 * r->pred_bubble);
    y += 22;
    if (r->planned) y = rows(f, r->planned, r->pp, y, scale, "plan") + 4;
    if (r->rows) y = rows(f, r->rows, r->pp, y, scale, "rank");
    return y + 8;
}

static double row_end(const zb_cmp_row *rw, int pp) {
    double t = 0;
    for (int p = 0; rw && p < pp; p++)
        for (int a = 0; a < rw[p].n; a++)
            if (rw[p].end[a] > t) t = rw[p].end[a];
    return t;
}

static double height(const zb_cmp_report *reps, int n, int note_n) {
    double h = 40 + 38 + note_n * 16 + 8 + 22 + n * (2 * BAR_H + GAP) + 34 + 20 + 30;
    for (int i = 0; i < n; i++)
        h += 30 + (reps[i].rows ? reps[i].pp * (ROW_H + 2) : 0) +
             (reps[i].planned ? reps[i].pp * (ROW_H + 2) + 4 : 0);
    return h;
}

static void draw(FILE *f, const zb_cmp_report *reps, int n) {
    char note[400];
    bool noted = zb_cmp_rank_note(reps, n, note, sizeof note);
    double h = height(reps, n, noted ? (int)strlen(note) / 140 + 2 : 0), tmax = 0;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\">\n<rect width=\"100%%\" "
            "height=\"100%%\" fill=\"#fff\"/>\n", W, h, W, h);
    fprintf(f, "<text x=\"10\" y=\"24\" font-size=\"16\" font-weight=\"bold\">%s: %d "
            "run(s) compared</text>\n", n ? reps[0].model : "", n);
    double y = key(f, 36);
    if (noted) y = note_lines(f, note, y);
    y = bars(f, reps, n, y);
    for (int i = 0; i < n; i++) {
        double a = row_end(reps[i].rows, reps[i].pp), b = row_end(reps[i].planned, reps[i].pp);
        if (a > tmax) tmax = a;
        if (b > tmax) tmax = b;
    }
    int nt;
    double step = zb_tick_step(tmax * 1e3, 8, &nt), scale = (W - LEFT - RIGHT) / (nt * step / 1e3);
    fprintf(f, "<text x=\"10\" y=\"%.1f\" font-size=\"14\" font-weight=\"bold\">"
            "timelines, one step each on one time scale: plan (simulated with the "
            "plan's costs) and measured ranks</text>\n", y + 10);
    y += 20;
    for (int i = 0; i < n; i++) y = panel(f, &reps[i], y, scale);
    axis(f, LEFT, W - LEFT - RIGHT, y, step, nt, "ms");
    fprintf(f, "</svg>\n");
}

zb_status zb_cmp_svg_write(const char *path, const zb_cmp_report *reps, int n,
                           zb_err *err) {
    zb_afile af;
    ZB_TRY(zb_afile_open(&af, path, err));
    draw(af.f, reps, n);
    bool ok = !ferror(af.f);
    zb_status s = zb_afile_close(&af, ok, err);
    if (!ok) return zb_fail(err, ZB_EIO, "cannot write '%s': %s", path, strerror(errno));
    return s;
}
