/* search/nofit.h - when no candidate fits: how far the closest one is
 * from the memory limit, and what each memory lever (full recompute, a
 * micro-batch of 1, ZeRO-1, all levers searched, more devices, the
 * forced tp/pp lifted) would give. Each row is a search
 * (zb_search_levers) of the model and options with that one change; its
 * numbers are the search's own predictions (bytes, seconds).
 */
#ifndef ZB_SEARCH_NOFIT_H
#define ZB_SEARCH_NOFIT_H

#include "common/zb_model.h"
#include "planner/search/search.h"

#define ZB_NOFIT_ROWS 8

typedef struct {
    char what[40];        /* "recompute full", "2 x devices (16)", ... */
    char change[64];      /* the option that makes the change */
    zb_status st;         /* ZB_OK: fits; ZB_EINFEASIBLE: still over;
                             else the change does not apply (note says) */
    zb_closest best;      /* fits: the winner (exact); over: the closest */
    double step_s;        /* fits: the winner's step time */
    char note[160];       /* st neither: why the change does not apply */
} zb_nofit_row;

typedef struct {
    double limit_bytes;   /* what a plan may use per device: memory less
                             the margin */
    zb_closest closest;   /* the search as given: the closest candidate */
    zb_nofit_row row[ZB_NOFIT_ROWS];
    int n;
} zb_nofit;

/* Fill out for model m and options o, whose search found nothing that
 * fits (closest: that search's zb_search_result.closest). Errors other
 * than a row's search failing (out of memory) are returned. */
zb_status zb_search_nofit(const zb_model *m, const zb_search_opts *o,
                          const zb_closest *closest, zb_nofit *out, zb_err *err);

#endif
