/* cmp_report.c - read what zbreport compares from a report (cmp_report.h). */
#include "compare/cmp_report.h"

#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/zb_yaml.h"

/* A required mapping under map. */
static zb_status section(const zb_ydoc *d, const zb_ynode *map, const char *key,
                         const zb_ynode **out, zb_err *err) {
    *out = zb_ymap_get(map, key);
    if (!*out)
        return zb_fail_at(err, d->file, map->line, map->col, "missing key '%s' "
                          "(is this a zbrun --report file?)", key);
    return zb_ynode_expect(d, *out, ZB_Y_MAP, key, err);
}

static zb_status get_int(const zb_ydoc *d, const zb_ynode *m, const char *k,
                         int *out, zb_err *err) {
    long long v;
    ZB_TRY(zb_yget_int(d, m, k, true, 0, 1 << 24, &v, err));
    *out = (int)v;
    return ZB_OK;
}

static zb_status read_plan(const zb_ydoc *d, zb_cmp_report *r, zb_err *err) {
    const zb_ynode *p;
    ZB_TRY(section(d, d->root, "plan", &p, err));
    ZB_TRY(zb_yget_str(d, p, "name", true, r->model, sizeof r->model, err));
    ZB_TRY(zb_yget_str(d, p, "schedule", true, r->schedule, sizeof r->schedule, err));
    ZB_TRY(get_int(d, p, "dp", &r->dp, err));
    ZB_TRY(get_int(d, p, "tp", &r->tp, err));
    ZB_TRY(get_int(d, p, "pp", &r->pp, err));
    ZB_TRY(get_int(d, p, "v", &r->v, err));
    ZB_TRY(get_int(d, p, "microbatches", &r->m, err));
    if (r->pp < 1)
        return zb_fail_at(err, d->file, p->line, p->col, "'pp' must be >= 1");
    return ZB_OK;
}

static zb_status read_summary(const zb_ydoc *d, zb_cmp_report *r, zb_err *err) {
    const zb_ynode *s;
    ZB_TRY(section(d, d->root, "summary", &s, err));
    struct { const char *k; double *v; } f[] = {
        {"bubble_rate", &r->bubble}, {"predicted_bubble_rate", &r->pred_bubble},
        {"step_s", &r->step_s}, {"predicted_step_s", &r->pred_step_s},
        {"tokens_per_s", &r->tokens_per_s}, {"mfu", &r->mfu},
        {"predicted_mfu", &r->pred_mfu}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        ZB_TRY(zb_yget_double(d, s, f[i].k, true, -DBL_MAX, DBL_MAX, f[i].v, err));
    r->replayed = -1;
    ZB_TRY(zb_yget_double(d, s, "replayed_bubble_rate", false, -DBL_MAX, DBL_MAX,
                          &r->replayed, err));
    char peak[64] = "";
    ZB_TRY(zb_yget_str(d, s, "mfu_peak", false, peak, sizeof peak, err));
    r->mfu_guessed = strstr(peak, "guess") != NULL;
    return ZB_OK;
}

/* Optional: stalls over pass time (ranks[].stall_s / busy_s) and the load
 * (run.machine.load_start); reports from older zbruns lack them. */
static zb_status read_conditions(const zb_ydoc *d, zb_cmp_report *r, zb_err *err) {
    const zb_ynode *ranks = zb_ymap_get(d->root, "ranks");
    double busy = 0, stall = 0;
    for (int i = 0; ranks && ranks->type == ZB_Y_SEQ && i < ranks->n; i++) {
        const zb_ynode *e = ranks->items[i];
        double b = 0, s = 0;
        ZB_TRY(zb_ynode_expect(d, e, ZB_Y_MAP, "a ranks entry", err));
        ZB_TRY(zb_yget_double(d, e, "busy_s", false, 0, DBL_MAX, &b, err));
        ZB_TRY(zb_yget_double(d, e, "stall_s", false, 0, DBL_MAX, &s, err));
        busy += b;
        stall += s;
    }
    r->stalled = busy > 0 ? stall / busy : 0;
    r->load = -1;
    const zb_ynode *run = zb_ymap_get(d->root, "run");
    long long threads = 1;
    if (run && run->type == ZB_Y_MAP)
        ZB_TRY(zb_yget_int(d, run, "threads_per_rank", false, 1, 1 << 20, &threads, err));
    if (threads != 1) r->stalled = -1;   /* not meaningful (executor/base.h) */
    const zb_ynode *mach = run ? zb_ymap_get(run, "machine") : NULL;
    if (mach && mach->type == ZB_Y_MAP)
        ZB_TRY(zb_yget_double(d, mach, "load_start", false, -1, DBL_MAX, &r->load, err));
    return ZB_OK;
}

static zb_status read_memory(const zb_ydoc *d, zb_cmp_report *r, zb_err *err) {
    const zb_ynode *ranks = zb_ymap_get(d->root, "pipeline_ranks");
    if (!ranks)
        return zb_fail_at(err, d->file, d->root->line, d->root->col,
                          "missing key 'pipeline_ranks'");
    ZB_TRY(zb_ynode_expect(d, ranks, ZB_Y_SEQ, "pipeline_ranks", err));
    for (int i = 0; i < ranks->n; i++) {
        const zb_ynode *e = ranks->items[i];
        double m = 0, pm = 0;
        ZB_TRY(zb_ynode_expect(d, e, ZB_Y_MAP, "a pipeline_ranks entry", err));
        ZB_TRY(zb_yget_double(d, e, "peak_mem_bytes", true, 0, DBL_MAX, &m, err));
        ZB_TRY(zb_yget_double(d, e, "predicted_peak_mem_bytes", true, 0, DBL_MAX,
                              &pm, err));
        if (m > r->mem_bytes) r->mem_bytes = m;
        if (pm > r->pred_mem_bytes) r->pred_mem_bytes = pm;
    }
    return ZB_OK;
}

/* One [label, start_s, end_s] item into row slot i. */
static zb_status read_action(const zb_ydoc *d, const zb_ynode *a, zb_cmp_row *row,
                             int i, zb_err *err) {
    ZB_TRY(zb_ynode_expect(d, a, ZB_Y_SEQ, "a timeline action", err));
    if (a->n != 3 || a->items[0]->type != ZB_Y_SCALAR)
        return zb_fail_at(err, d->file, a->line, a->col, "a timeline action must "
                          "be [label, start_s, end_s]");
    snprintf(row->label[i], sizeof row->label[i], "%s", a->items[0]->str);
    ZB_TRY(zb_yscalar_double(d, a->items[1], "start_s", 0, DBL_MAX, &row->start[i], err));
    ZB_TRY(zb_yscalar_double(d, a->items[2], "end_s", 0, DBL_MAX, &row->end[i], err));
    return ZB_OK;
}

static zb_status read_timeline(const zb_ydoc *d, zb_cmp_report *r, zb_err *err) {
    const zb_ynode *tl = zb_ymap_get(d->root, "timeline");
    if (!tl) return ZB_OK;   /* a run that kept no step */
    ZB_TRY(zb_ynode_expect(d, tl, ZB_Y_SEQ, "timeline", err));
    if (tl->n != r->pp)
        return zb_fail_at(err, d->file, tl->line, tl->col, "timeline has %d "
                          "rows for pp %d", tl->n, r->pp);
    r->rows = zb_calloc((size_t)r->pp, sizeof *r->rows, err);
    if (!r->rows) return ZB_ENOMEM;
    for (int p = 0; p < r->pp; p++) {
        const zb_ynode *e = tl->items[p], *acts;
        ZB_TRY(zb_ynode_expect(d, e, ZB_Y_MAP, "a timeline entry", err));
        ZB_TRY(get_int(d, e, "step", &r->step, err));
        acts = zb_ymap_get(e, "actions");
        if (!acts)
            return zb_fail_at(err, d->file, e->line, e->col, "missing key 'actions'");
        ZB_TRY(zb_ynode_expect(d, acts, ZB_Y_SEQ, "actions", err));
        zb_cmp_row *row = &r->rows[p];
        size_t n = acts->n > 0 ? (size_t)acts->n : 1;
        row->label = zb_calloc(n, sizeof *row->label, err);
        row->start = zb_calloc(n, sizeof *row->start, err);
        row->end = zb_calloc(n, sizeof *row->end, err);
        if (!row->label || !row->start || !row->end) return ZB_ENOMEM;
        row->n = acts->n;
        for (int i = 0; i < acts->n; i++)
            ZB_TRY(read_action(d, acts->items[i], row, i, err));
    }
    return ZB_OK;
}

zb_status zb_cmp_report_read(const char *path, zb_cmp_report *out, zb_err *err) {
    memset(out, 0, sizeof *out);
    snprintf(out->path, sizeof out->path, "%s", path);
    zb_ydoc d;
    zb_status s = zb_ydoc_load(path, &d, err);
    if (s != ZB_OK) return s;
    if (!d.root || d.root->type != ZB_Y_MAP || !zb_ymap_get(d.root, "report"))
        s = zb_fail(err, ZB_EINPUT, "%s:1:1: not a zbrun report (no 'report' key; "
                    "write one with zbrun --report FILE)", path);
    if (s == ZB_OK) s = read_plan(&d, out, err);
    if (s == ZB_OK) s = read_summary(&d, out, err);
    if (s == ZB_OK) s = read_memory(&d, out, err);
    if (s == ZB_OK) s = read_conditions(&d, out, err);
    if (s == ZB_OK) s = read_timeline(&d, out, err);
    zb_ydoc_free(&d);
    if (s != ZB_OK) zb_cmp_report_free(out);
    return s;
}

void zb_cmp_report_free(zb_cmp_report *r) {
    for (int p = 0; r->rows && p < r->pp; p++) {
        free(r->rows[p].label);
        free(r->rows[p].start);
        free(r->rows[p].end);
    }
    free(r->rows);
    r->rows = NULL;
}
