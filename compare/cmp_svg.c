/* cmp_svg.c - see cmp_svg.h. */
#include "compare/cmp_svg.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/zb_afile.h"

#define W 1000.0
#define LEFT 150.0      /* row and bar labels */
#define RIGHT 40.0      /* room for the last tick label */
#define BAR_H 12.0
#define ROW_H 16.0
#define GAP 6.0

static const char *pass_fill(const char *label) {
    switch (label[0]) {
    case 'F': return "#4e79a7";
    case 'W': return "#f28e2b";
    case 'B': return label[1] == 'W' ? "#b07aa1" : "#59a14f";
    default: return "#999";
    }
}

/* A horizontal axis with 5 ticks from 0 to vmax, labels "%.3g unit"; the
 * last label is anchored at its end so it stays inside the picture. */
static void axis(FILE *f, double y, double vmax, const char *unit) {
    double width = W - LEFT - RIGHT;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#666\"/>\n",
            LEFT, y, LEFT + width, y);
    for (int i = 0; i <= 4; i++) {
        double x = LEFT + width * i / 4;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#666\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"%s\" "
                "fill=\"#333\">%.3g %s</text>\n", x, y, x, y + 4, x, y + 15,
                i == 4 ? "end" : "middle", vmax * i / 4, unit);
    }
}

static double bars(FILE *f, const zb_cmp_report *reps, int n, double y) {
    double vmax = 0, width = W - LEFT - RIGHT;
    for (int i = 0; i < n; i++) {
        if (reps[i].bubble > vmax) vmax = reps[i].bubble;
        if (reps[i].pred_bubble > vmax) vmax = reps[i].pred_bubble;
    }
    vmax = vmax > 0 ? vmax * 100 * 1.1 : 1;
    fprintf(f, "<text x=\"10\" y=\"%.1f\" font-size=\"14\" font-weight=\"bold\">"
            "bubble rate: predicted (light) and measured (dark)</text>\n", y + 14);
    y += 24;
    for (int i = 0; i < n; i++) {
        const zb_cmp_report *r = &reps[i];
        double yy = y + i * (2 * BAR_H + GAP);
        fprintf(f, "<text x=\"10\" y=\"%.1f\" font-size=\"12\">%s</text>\n",
                yy + BAR_H + 4, r->schedule);
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" "
                "fill=\"#a0cbe8\"><title>%s predicted %.1f%%</title></rect>\n", LEFT,
                yy, width * r->pred_bubble * 100 / vmax, BAR_H, r->schedule,
                100 * r->pred_bubble);
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" "
                "fill=\"#1f4e79\"><title>%s measured %.1f%%</title></rect>\n", LEFT,
                yy + BAR_H, width * r->bubble * 100 / vmax, BAR_H, r->schedule,
                100 * r->bubble);
    }
    y += n * (2 * BAR_H + GAP);
    axis(f, y, vmax, "%");
    return y + 30;
}

static double panel(FILE *f, const zb_cmp_report *r, double y, double tmax) {
    double width = W - LEFT - RIGHT, scale = tmax > 0 ? width / tmax : 0;
    fprintf(f, "<text x=\"10\" y=\"%.1f\" font-size=\"13\" font-weight=\"bold\">"
            "%s (dp %d tp %d pp %d v %d): step %d, measured bubble %.1f%%, "
            "predicted %.1f%%</text>\n", y + 14, r->schedule, r->dp, r->tp, r->pp,
            r->v, r->step, 100 * r->bubble, 100 * r->pred_bubble);
    y += 22;
    for (int p = 0; p < r->pp; p++) {
        const zb_cmp_row *row = &r->rows[p];
        double yy = y + p * (ROW_H + 2);
        fprintf(f, "<text x=\"10\" y=\"%.1f\" font-size=\"11\">rank %d</text>"
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                "fill=\"#f3f3f3\"/>\n", yy + ROW_H - 4, p, LEFT, yy, width, ROW_H);
        for (int i = 0; i < row->n; i++) {
            double x = LEFT + row->start[i] * scale;
            double w = (row->end[i] - row->start[i]) * scale;
            fprintf(f, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" "
                    "fill=\"%s\" stroke=\"#333\" stroke-width=\"0.3\"><title>%s: "
                    "%.3f-%.3f ms</title></rect>\n", x, yy, w > 0.5 ? w : 0.5,
                    ROW_H, pass_fill(row->label[i]), row->label[i],
                    row->start[i] * 1e3, row->end[i] * 1e3);
        }
    }
    return y + r->pp * (ROW_H + 2) + 8;
}

static double height(const zb_cmp_report *reps, int n) {
    double h = 24 + n * (2 * BAR_H + GAP) + 30 + 30 + 40;
    for (int i = 0; i < n; i++)
        if (reps[i].rows) h += 22 + reps[i].pp * (ROW_H + 2) + 8;
    return h;
}

static void draw(FILE *f, const zb_cmp_report *reps, int n) {
    double h = height(reps, n), tmax = 0;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\">\n<rect width=\"100%%\" "
            "height=\"100%%\" fill=\"#fff\"/>\n", W, h, W, h);
    double y = bars(f, reps, n, 10);
    for (int i = 0; i < n; i++)
        for (int p = 0; reps[i].rows && p < reps[i].pp; p++)
            for (int a = 0; a < reps[i].rows[p].n; a++)
                if (reps[i].rows[p].end[a] > tmax) tmax = reps[i].rows[p].end[a];
    fprintf(f, "<text x=\"10\" y=\"%.1f\" font-size=\"14\" font-weight=\"bold\">"
            "measured timelines (one step each, same time scale; F blue, B green, "
            "W orange, BW purple)</text>\n", y + 10);
    y += 20;
    for (int i = 0; i < n; i++)
        if (reps[i].rows) y = panel(f, &reps[i], y, tmax);
    axis(f, y, tmax * 1e3, "ms");
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
