/* zb_yaml.h - YAML in (libyaml parser -> node tree with line/col marks) and
 * YAML out (libyaml emitter), plus typed getters that produce the project's
 * one-line errors "file:line:col: what is wrong".
 *
 * Reading: zb_ydoc_load parses one document into a tree owned by the doc.
 * Anchors/aliases are rejected (plans and models never need them).
 * Writing: zb_yw writes through libyaml's emitter into a temporary file and
 * zb_yw_close renames it over the destination only on success (atomic).
 */
#ifndef ZB_YAML_H
#define ZB_YAML_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/zb_error.h"

typedef enum { ZB_Y_SCALAR, ZB_Y_MAP, ZB_Y_SEQ } zb_ytype;

typedef struct zb_ynode zb_ynode;
struct zb_ynode {
    zb_ytype type;
    int line, col;       /* 1-based position of the node's start */
    char *str;           /* SCALAR: the text (NUL-terminated) */
    bool quoted;         /* SCALAR: was single/double quoted */
    int n;               /* MAP: pairs, SEQ: items */
    zb_ynode **keys;     /* MAP: [n] scalar keys */
    zb_ynode **items;    /* MAP: [n] values, SEQ: [n] items */
};

typedef struct {
    char file[512];      /* path as given, used in every message */
    zb_ynode *root;      /* NULL for an empty document */
    void *arena_;        /* private: owned allocations */
} zb_ydoc;

/* Largest file zb_ydoc_load reads (models, plans and indexes are KBs to a
 * few MB; anything bigger, or endless like /dev/zero, is refused). */
#define ZB_YAML_MAX_BYTES (64 << 20)

/* Parse path. Syntax errors: "file:line:col: YAML syntax error: <problem>".
 * A folder or a file over ZB_YAML_MAX_BYTES is ZB_EINPUT. */
zb_status zb_ydoc_load(const char *path, zb_ydoc *doc, zb_err *err);
/* Same, from a memory buffer; name is used as the file name in messages. */
zb_status zb_ydoc_load_string(const char *name, const char *text, zb_ydoc *doc,
                              zb_err *err);
void zb_ydoc_free(zb_ydoc *doc);

/* Value for key in a MAP node, or NULL (map may be NULL). */
zb_ynode *zb_ymap_get(const zb_ynode *map, const char *key);

/* Fail on the first key of map not in allowed[] (NULL-terminated):
 * "file:l:c: unknown key 'hiden' in <where> (did you mean 'hidden'?)".
 * The suggestion is given when the edit distance is <= 2 (or <= len/3). */
zb_status zb_ymap_check_keys(const zb_ydoc *doc, const zb_ynode *map,
                             const char *where, const char *const *allowed,
                             zb_err *err);

/* Require node to be of a type: "file:l:c: <what> must be a mapping". */
zb_status zb_ynode_expect(const zb_ydoc *doc, const zb_ynode *node,
                          zb_ytype type, const char *what, zb_err *err);

/* Typed getters for map[key]. If the key is absent: error "missing key 'k'
 * in <map's context>" at the map's position when required, otherwise *out is
 * left untouched (so callers set defaults first). Range errors name the key
 * and the bounds: "file:l:c: 'hidden' must be >= 1, got 0". */
zb_status zb_yget_int(const zb_ydoc *doc, const zb_ynode *map, const char *key,
                      bool required, long long min, long long max,
                      long long *out, zb_err *err);
zb_status zb_yget_double(const zb_ydoc *doc, const zb_ynode *map,
                         const char *key, bool required, double min,
                         double max, double *out, zb_err *err);
zb_status zb_yget_bool(const zb_ydoc *doc, const zb_ynode *map, const char *key,
                       bool required, bool *out, zb_err *err);
/* Copies into out[cap]; too long is an error. */
zb_status zb_yget_str(const zb_ydoc *doc, const zb_ynode *map, const char *key,
                      bool required, char *out, size_t cap, zb_err *err);
/* Scalar must be one of choices[] (NULL-terminated); *out = its index.
 * Error lists the choices: "'precision' must be one of fp32, bf16; got 'fp8'". */
zb_status zb_yget_enum(const zb_ydoc *doc, const zb_ynode *map,
                       const char *key, bool required,
                       const char *const *choices, int *out, zb_err *err);

/* Scalar conversions for nodes that are not map values (sequence items). */
zb_status zb_yscalar_int(const zb_ydoc *doc, const zb_ynode *node,
                         const char *what, long long min, long long max,
                         long long *out, zb_err *err);
zb_status zb_yscalar_double(const zb_ydoc *doc, const zb_ynode *node,
                            const char *what, double min, double max,
                            double *out, zb_err *err);

/* ---- writing ---- */
typedef struct zb_yw zb_yw;

/* Open path for writing: creates "path.tmp.<pid>" next to it. */
zb_status zb_yw_open(const char *path, zb_yw **w, zb_err *err);
/* follow false: a symbolic link at path is replaced, never followed
 * (zb_afile_open_mode), for files only zb writes (a checkpoint index). */
zb_status zb_yw_open_mode(const char *path, bool follow, zb_yw **w, zb_err *err);
/* Finish the document, fsync, rename over path. On any earlier failure (or
 * if ok is false) removes the temporary file and leaves path untouched.
 * Always frees w. Returns the first error seen. */
zb_status zb_yw_close(zb_yw *w, bool ok, zb_err *err);
/* Structure. flow = true writes [a, b] / {a: 1} on one line. */
void zb_yw_map_begin(zb_yw *w, bool flow);
void zb_yw_map_end(zb_yw *w);
void zb_yw_seq_begin(zb_yw *w, bool flow);
void zb_yw_seq_end(zb_yw *w);
/* Scalars (plain style unless the text needs quoting). */
void zb_yw_str(zb_yw *w, const char *s);
void zb_yw_int(zb_yw *w, long long v);
void zb_yw_double(zb_yw *w, double v);   /* shortest text that reads back exactly */
void zb_yw_bool(zb_yw *w, bool v);
/* key: value shorthands inside a block or flow mapping. */
void zb_yw_kstr(zb_yw *w, const char *k, const char *v);
void zb_yw_kint(zb_yw *w, const char *k, long long v);
void zb_yw_kdouble(zb_yw *w, const char *k, double v);
void zb_yw_kbool(zb_yw *w, const char *k, bool v);
/* A comment is not supported by libyaml's emitter; write headers with keys. */

#endif
