/* cmp_report.c - read what zbreport compares from a report (cmp_report.h). */
#include "compare/cmp_report.h"

#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/zb_plan.h"
#include "common/zb_sim.h"
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
    long long steps = 0, cores = 0;
    if (run && run->type == ZB_Y_MAP)
        ZB_TRY(zb_yget_int(d, run, "steps_run", false, 0, 1 << 30, &steps, err));
    r->steps_run = (int)steps;
    const zb_ynode *mach = run ? zb_ymap_get(run, "machine") : NULL;
    if (mach && mach->type == ZB_Y_MAP)
        ZB_TRY(zb_yget_double(d, mach, "load_start", false, -1, DBL_MAX, &r->load, err));
    if (mach && mach->type == ZB_Y_MAP)
        ZB_TRY(zb_yget_int(d, mach, "cores", false, 0, 1 << 20, &cores, err));
    r->cores = (int)cores;
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

/* out->label from the report's file name. */
static void name_run(zb_cmp_report *out, const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(out->label, sizeof out->label, "%s", base);
    static const char *const ends[] = {".report.yaml", ".yaml", ".yml"};
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(out->label), e = strlen(ends[i]);
        if (n > e && !strcmp(out->label + n - e, ends[i])) {
            out->label[n - e] = '\0';
            break;
        }
    }
}

/* Read the plan at path when its content hash is want (or want is ""):
 * true. A plan of another hash sets r->plan_changed (the first one seen). */
static bool plan_that_ran(const char *path, const char *want, zb_cmp_report *r,
                          zb_plan *plan) {
    char hex[17];
    zb_err e;
    if (want[0] && zb_plan_file_hash(path, hex, &e) != ZB_OK) return false;
    if (want[0] && strcmp(hex, want)) {
        if (!r->plan_changed[0])
            snprintf(r->plan_changed, sizeof r->plan_changed, "the plan on disk "
                     "(%s, content hash %s) is not the one that ran (%s)", path,
                     hex, want);
        return false;
    }
    return zb_plan_read(path, plan, &e) == ZB_OK;
}

/* The plan's simulated schedule as rows (best effort: a plan that cannot be
 * read or simulated, or whose content is not the one that ran, leaves
 * out->planned NULL). */
static void read_planned(const zb_ydoc *d, zb_cmp_report *r, const char *path) {
    const zb_ynode *run = zb_ymap_get(d->root, "run");
    char pp[512] = "", beside[1100];
    zb_err e;
    if (!run || run->type != ZB_Y_MAP ||
        zb_yget_str(d, run, "plan_path", false, pp, sizeof pp, &e) != ZB_OK || !pp[0])
        return;
    /* reports before plan_hash: "", any plan of that name is taken */
    if (zb_yget_str(d, run, "plan_hash", false, r->plan_hash, sizeof r->plan_hash,
                    &e) != ZB_OK)
        r->plan_hash[0] = '\0';
    const char *slash = strrchr(path, '/'), *pbase = strrchr(pp, '/');
    snprintf(beside, sizeof beside, "%.*s%s", slash ? (int)(slash - path + 1) : 0,
             path, pbase ? pbase + 1 : pp);
    zb_plan plan;
    if (!plan_that_ran(pp, r->plan_hash, r, &plan) &&
        !plan_that_ran(beside, r->plan_hash, r, &plan))
        return;
    r->plan_changed[0] = '\0';   /* the other candidate is the one */
    zb_sim_result sim;
    if (plan.pp == r->pp && zb_simulate(&plan.sched, &plan.costs, &sim, &e) == ZB_OK) {
        r->planned = calloc((size_t)r->pp, sizeof *r->planned);
        for (int p = 0; r->planned && p < r->pp; p++) {
            zb_cmp_row *row = &r->planned[p];
            int n = plan.sched.len[p];
            row->label = calloc(n ? (size_t)n : 1, sizeof *row->label);
            row->start = calloc(n ? (size_t)n : 1, sizeof *row->start);
            row->end = calloc(n ? (size_t)n : 1, sizeof *row->end);
            if (!row->label || !row->start || !row->end) continue;   /* n stays 0 */
            row->n = n;
            for (int i = 0; i < n; i++) {
                const zb_action *a = &plan.sched.acts[p][i];
                snprintf(row->label[i], sizeof row->label[i], "%s%d%s%.0d",
                         zb_pass_name((zb_pass)a->pass), (int)a->mb,
                         a->chunk > 0 ? ".c" : "", (int)a->chunk);
                row->start[i] = sim.start[sim.off[p] + i];
                row->end[i] = sim.end[sim.off[p] + i];
            }
        }
        r->planned_end = sim.last_end;
        zb_sim_result_free(&sim);
    }
    zb_plan_free(&plan);
}

zb_status zb_cmp_report_read(const char *path, zb_cmp_report *out, zb_err *err) {
    memset(out, 0, sizeof *out);
    snprintf(out->path, sizeof out->path, "%s", path);
    name_run(out, path);
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
    if (s == ZB_OK) read_planned(&d, out, path);
    zb_ydoc_free(&d);
    if (s != ZB_OK) zb_cmp_report_free(out);
    return s;
}

static void free_rows(zb_cmp_row *rows, int pp) {
    for (int p = 0; rows && p < pp; p++) {
        free(rows[p].label);
        free(rows[p].start);
        free(rows[p].end);
    }
    free(rows);
}

void zb_cmp_report_free(zb_cmp_report *r) {
    free_rows(r->rows, r->pp);
    free_rows(r->planned, r->pp);
    r->rows = r->planned = NULL;
}

bool zb_cmp_rank_note(const zb_cmp_report *r, int n, char *note, size_t cap) {
    int shortest = 0, cores = 0;
    double stall = 0, load = -1;
    for (int i = 0; i < n; i++) {
        if (r[i].steps_run > 0 && (!shortest || r[i].steps_run < shortest))
            shortest = r[i].steps_run;
        if (r[i].stalled > stall) stall = r[i].stalled;
        if (r[i].load > load) {
            load = r[i].load;
            cores = r[i].cores;
        }
    }
    bool brief = shortest > 0 && shortest < ZB_CMP_MIN_STEPS;
    bool busy = stall > ZB_CMP_MAX_STALL || (cores > 0 && load > cores);
    note[0] = '\0';
    if (brief)
        snprintf(note, cap, "a run of %d steps is too short to rank schedules (the "
                 "first step warms up; run %d or more)", shortest, 4 * ZB_CMP_MIN_STEPS);
    if (busy) {
        size_t k = strlen(note);
        snprintf(note + k, cap - k, "%sthe machine was busy (rank threads off their "
                 "cores for up to %.0f%% of pass time, load %.1f on %d cores): measured "
                 "bubbles and step times describe the machine more than the "
                 "schedules; rank by the replayed bubble or rerun on a quiet machine",
                 brief ? "; " : "", 100 * stall, load, cores);
    }
    return brief || busy;
}
