/* zb_override.h - `--set KEY=VALUE` on the command line: a dotted key of a
 * model (or plan) file given a new value before the file is validated
 * (zbplan MODEL --set training.global_batch=32 --set model.layers=24; zbrun
 * PLAN --set training.optimizer.lr=1e-3).
 *
 * VALUE is YAML (a number, a word, a quoted string, [flow, list] or
 * {flow: map}); KEY names a mapping entry by its path of keys, created when
 * missing (its parent mappings too). A mapping VALUE over a mapping merges
 * key by key (keys it does not name keep the file's values; nested mappings
 * merge in turn); any other VALUE replaces the entry. The file is validated first on its own
 * (errors "file:line:col: ..."), then once after each override in order, so
 * an error the k-th override brings is reported as "--set KEY=VALUE: what is
 * wrong". Every error is ZB_EINPUT. Single-threaded; nothing global. */
#ifndef ZB_OVERRIDE_H
#define ZB_OVERRIDE_H

#include "common/zb_error.h"
#include "common/zb_model.h"
#include "common/zb_plan.h"
#include "common/zb_yaml.h"

#define ZB_OVERRIDE_MAX 64   /* --set options per command */

typedef struct {
    const char *arg;   /* "KEY=VALUE" as given (not owned) */
    char key[128];     /* KEY */
} zb_override;

typedef struct {
    zb_override o[ZB_OVERRIDE_MAX];
    int n;
} zb_overrides;

/* Add "KEY=VALUE" (the text after --set). ZB_EINPUT "--set ARG: ..." when
 * there is no '=', KEY is empty, has an empty part ("a..b") or is too long,
 * or there are more than ZB_OVERRIDE_MAX. */
zb_status zb_overrides_add(zb_overrides *s, const char *arg, zb_err *err);

/* ZB_EINPUT "--set ARG: zbrun changes only ..." for the first override
 * whose key starts with none of the NULL-terminated prefixes[] (a prefix
 * "a.b." admits keys under a.b; "a.b" admits exactly a.b); hint ends the
 * message. */
zb_status zb_overrides_only(const zb_overrides *s, const char *const *prefixes,
                            const char *hint, zb_err *err);

/* Validate a file, then the file under each override in turn, as the header
 * says. parse(doc, ctx, err) validates a loaded document and keeps its
 * result in ctx (it is called s->n + 1 times: it must release an earlier
 * result before keeping a new one, and may keep nothing pointing into the
 * document). s may be NULL (no overrides). */
typedef zb_status (*zb_override_parse_fn)(const zb_ydoc *doc, void *ctx, zb_err *err);
zb_status zb_overrides_load(const char *path, const zb_overrides *s,
                            zb_override_parse_fn parse, void *ctx, zb_err *err);

/* The same for a document held in memory (name is its file name in
 * messages): zbplan import's generated model. */
zb_status zb_overrides_load_string(const char *name, const char *text,
                                   const zb_overrides *s, zb_override_parse_fn parse,
                                   void *ctx, zb_err *err);

/* zb_model_load and zb_plan_read under overrides (s may be NULL);
 * zb_model_load_set_string a model's text held in memory (relative data
 * paths stay relative to the working directory). */
zb_status zb_model_load_set_string(const char *name, const char *text,
                                   const zb_overrides *s, zb_model *out, zb_err *err);
zb_status zb_model_load_set(const char *path, const zb_overrides *s,
                            zb_model *out, zb_err *err);
zb_status zb_plan_read_set(const char *path, const zb_overrides *s,
                           zb_plan *out, zb_err *err);

#endif
