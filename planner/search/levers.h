/* search/levers.h - the memory levers as search dimensions: recompute
 * (none, selective, full), sequence parallelism and ZeRO-1, each
 * combination a zb_search (search/search.h), merged into one top-k.
 */
#ifndef ZB_SEARCH_LEVERS_H
#define ZB_SEARCH_LEVERS_H

#include "common/zb_model.h"
#include "planner/search/search.h"

/* Search, and with o->levers every combination of the memory levers the
 * model and layout allow, merged into one top-k. */
zb_status zb_search_levers(const zb_model *m, const zb_search_opts *o,
                           zb_search_result *res, zb_err *err);

#endif
