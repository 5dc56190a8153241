/* nofit.c - when no candidate fits, by how much, and what each memory
 * lever gives (search/nofit.h). Every number is a search's prediction:
 * the row's change is applied to the model or options and the search run
 * again, so a row that says "fits" is the plan zbplan makes with that
 * option, and one that says "over" names that search's closest candidate.
 * More devices double the nodes until a plan fits (at most 16 x), as a
 * user adding nodes would; dp is then searched (a forced --dp would keep
 * the world from growing). */
#include "planner/search/nofit.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "planner/search/levers.h"

#define MAX_NODE_FACTOR 16

/* One search with the change applied; the row gets its outcome. */
static zb_status try_row(const zb_model *m, const zb_search_opts *o,
                         zb_nofit_row *row, zb_err *err) {
    zb_search_opts lo = *o;
    lo.top_k = 1;
    lo.exhaustive = false;
    zb_search_result r;
    zb_err e = {{0}};
    row->st = zb_search_levers(m, &lo, &r, &e);
    if (row->st == ZB_OK) {
        const zb_candidate *c = &r.cand[0];
        row->best = (zb_closest){.dp = c->dp, .tp = c->tp, .pp = c->pp, .v = c->v,
                                 .micro_batch = c->micro_batch,
                                 .mem_bytes = c->peak_mem_bytes, .exact = true,
                                 .recompute = c->recompute, .sp = c->sp,
                                 .zero1 = c->zero1};
        snprintf(row->best.schedule, sizeof row->best.schedule, "%s", c->schedule);
        row->step_s = c->step_s;
    } else if (row->st == ZB_EINFEASIBLE) {
        row->best = r.closest;
    } else {
        snprintf(row->note, sizeof row->note, "%.150s", e.msg);
    }
    zb_search_result_free(&r);
    if (row->st == ZB_ENOMEM) {
        *err = e;
        return ZB_ENOMEM;
    }
    return ZB_OK;
}

static zb_nofit_row *add(zb_nofit *out, const char *what, const char *change) {
    zb_nofit_row *row = &out->row[out->n++];
    memset(row, 0, sizeof *row);
    snprintf(row->what, sizeof row->what, "%s", what);
    snprintf(row->change, sizeof row->change, "%s", change);
    return row;
}

/* The levers that change the model or the search's options alone. */
static zb_status memory_levers(const zb_model *m, const zb_search_opts *o,
                               zb_nofit *out, zb_err *err) {
    zb_model lm = *m;
    zb_search_opts lo = *o;
    if (!o->levers && m->train.recompute != ZB_RECOMPUTE_FULL) {
        lm.train.recompute = ZB_RECOMPUTE_FULL;
        ZB_TRY(try_row(&lm, o, add(out, "recompute full",
                                   "--set training.recompute=full"), err));
        lm = *m;
    }
    int mb = o->micro_batch > 0 ? o->micro_batch : m->train.micro_batch;
    if (mb > 1) {   /* a searched micro-batch already tries 1 */
        lo.micro_batch = 1;
        lm.train.micro_batch = 1;
        ZB_TRY(try_row(&lm, &lo, add(out, "micro-batch 1", o->micro_batch > 0
                                         ? "--micro-batch 1"
                                         : "--set training.micro_batch=1"), err));
        lm = *m;
        lo = *o;
    }
    if (!o->levers && !m->train.zero1 && o->dp != 1 &&
        m->cluster.nodes * m->cluster.devices_per_node > 1) {
        lm.train.zero1 = true;
        ZB_TRY(try_row(&lm, o, add(out, "ZeRO-1", "--set training.zero1=true"), err));
        lm = *m;
    }
    if (!o->levers) {
        lo.levers = true;
        ZB_TRY(try_row(m, &lo, add(out, "all memory levers",
                                   "--levers (recompute, SP, ZeRO-1 searched)"), err));
    }
    return ZB_OK;
}

/* Lifting a forced --tp/--pp lets the search split the model further. */
static zb_status lift_forced(const zb_model *m, const zb_search_opts *o,
                             zb_nofit *out, zb_err *err) {
    if (o->tp <= 0 && o->pp <= 0) return ZB_OK;
    zb_search_opts lo = *o;
    lo.tp = lo.pp = lo.dp = 0;
    return try_row(m, &lo, add(out, "tp, pp searched",
                               "leave out --dp/--tp/--pp"), err);
}

/* More nodes, doubling until a plan fits. */
static zb_status more_devices(const zb_model *m, const zb_search_opts *o,
                              zb_nofit *out, zb_err *err) {
    /* cpu: ranks are threads of this machine; nodes do not add cores */
    if (strcasecmp(m->cluster.device.name, "cpu") == 0 ||
        m->cluster.nodes * (long)MAX_NODE_FACTOR > 100000)
        return ZB_OK;
    zb_search_opts lo = *o;
    lo.dp = 0;
    zb_model lm = *m;
    zb_nofit_row *row = NULL;
    for (int f = 2; f <= MAX_NODE_FACTOR; f *= 2) {
        if (row) out->n--;   /* replace the smaller factor's row */
        lm.cluster.nodes = m->cluster.nodes * f;
        char what[40], change[64];
        snprintf(what, sizeof what, "%d x the devices (%d)", f,
                 lm.cluster.nodes * lm.cluster.devices_per_node);
        snprintf(change, sizeof change, "--set cluster.nodes=%d%s", lm.cluster.nodes,
                 o->dp > 0 ? " (and no --dp)" : "");
        row = add(out, what, change);
        ZB_TRY(try_row(&lm, &lo, row, err));
        if (row->st == ZB_OK) break;
    }
    return ZB_OK;
}

zb_status zb_search_nofit(const zb_model *m, const zb_search_opts *o,
                          const zb_closest *closest, zb_nofit *out, zb_err *err) {
    memset(out, 0, sizeof *out);
    out->limit_bytes = m->cluster.device.mem_bytes * (1 - o->mem_margin);
    out->closest = *closest;
    ZB_TRY(memory_levers(m, o, out, err));
    ZB_TRY(lift_forced(m, o, out, err));
    return more_devices(m, o, out, err);
}
