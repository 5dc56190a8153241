/* zb_override.c - see zb_override.h.
 *
 * An override edits the loaded tree in place: a value node is replaced by
 * the root of a document parsed from VALUE (a mapping over a mapping merges
 * key by key), a missing key is appended to its mapping (new key and item
 * arrays). Everything this adds is owned by a
 * list freed after the last parse; the tree is freed with its document. */
#include "common/zb_override.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

zb_status zb_overrides_add(zb_overrides *s, const char *arg, zb_err *err) {
    const char *eq = strchr(arg, '=');
    if (s->n == ZB_OVERRIDE_MAX)
        return zb_fail(err, ZB_EINPUT, "--set %s: more than %d --set options",
                       arg, ZB_OVERRIDE_MAX);
    if (!eq)
        return zb_fail(err, ZB_EINPUT, "--set %s: want KEY=VALUE (e.g. "
                       "training.global_batch=32)", arg);
    size_t n = (size_t)(eq - arg);
    zb_override *o = &s->o[s->n];
    if (n == 0 || n >= sizeof o->key)
        return zb_fail(err, ZB_EINPUT, "--set %s: the key must be 1 to %zu "
                       "characters", arg, sizeof o->key - 1);
    memcpy(o->key, arg, n);
    o->key[n] = '\0';
    if (o->key[0] == '.' || o->key[n - 1] == '.' || strstr(o->key, ".."))
        return zb_fail(err, ZB_EINPUT, "--set %s: empty part in key '%s'", arg,
                       o->key);
    o->arg = arg;
    s->n++;
    return ZB_OK;
}

zb_status zb_overrides_only(const zb_overrides *s, const char *const *prefixes,
                            const char *hint, zb_err *err) {
    for (int i = 0; s && i < s->n; i++) {
        const char *k = s->o[i].key;
        bool ok = false;
        for (int j = 0; prefixes[j] && !ok; j++) {
            size_t n = strlen(prefixes[j]);
            ok = prefixes[j][n - 1] == '.' ? !strncmp(k, prefixes[j], n) && k[n]
                                           : !strcmp(k, prefixes[j]);
        }
        if (!ok) return zb_fail(err, ZB_EINPUT, "--set %s: %s", s->o[i].arg, hint);
    }
    return ZB_OK;
}

/* ---- what an override adds, freed at the end ---- */

typedef struct owned {
    struct owned *next;
    zb_ydoc *doc;      /* a parsed VALUE, or NULL */
    void *mem;         /* an array or node, or NULL */
} owned;

static void *own(owned **list, void *mem, zb_ydoc *doc) {
    owned *o = malloc(sizeof *o);
    if (!o) {
        free(mem);
        if (doc) zb_ydoc_free(doc);
        free(doc);
        return NULL;
    }
    *o = (owned){*list, doc, mem};
    *list = o;
    return mem ? mem : (void *)doc;
}

static void free_owned(owned *l) {
    while (l) {
        owned *next = l->next;
        if (l->doc) zb_ydoc_free(l->doc);
        free(l->doc);
        free(l->mem);
        free(l);
        l = next;
    }
}

/* Append key -> value to map (new arrays, owned). */
static zb_status append(zb_ynode *map, zb_ynode *key, zb_ynode *value,
                        owned **list, zb_err *err) {
    size_t n = (size_t)map->n + 1;
    zb_ynode **keys = own(list, calloc(n, sizeof *keys), NULL);
    zb_ynode **items = keys ? own(list, calloc(n, sizeof *items), NULL) : NULL;
    if (!items) return zb_fail(err, ZB_ENOMEM, "out of memory applying --set");
    for (int i = 0; i < map->n; i++) {
        keys[i] = map->keys[i];
        items[i] = map->items[i];
    }
    keys[n - 1] = key;
    items[n - 1] = value;
    map->keys = keys;
    map->items = items;
    map->n = (int)n;
    return ZB_OK;
}

/* A new node (owned) at map's place: a scalar key, or an empty mapping. */
static zb_ynode *new_node(const zb_ynode *at, zb_ytype type, const char *text,
                          size_t len, owned **list) {
    zb_ynode *n = own(list, calloc(1, sizeof *n + len + 1), NULL);
    if (!n) return NULL;
    n->type = type;
    n->line = at->line;
    n->col = at->col;
    if (type == ZB_Y_SCALAR) {
        n->str = (char *)(n + 1);
        memcpy(n->str, text, len);
    }
    return n;
}

/* Merge mapping src into mapping dst key by key, so that
 * `--set training.optimizer={lr: 1e-3}` changes lr and keeps the file's
 * other optimizer keys: a key dst lacks is appended, a mapping under a
 * mapping merges in turn, anything else replaces dst's value (which keeps
 * the file's place, so errors point at the file's key). */
static zb_status merge(zb_ynode *dst, zb_ynode *src, owned **list, zb_err *err) {
    for (int i = 0; i < src->n; i++) {
        zb_ynode *k = src->keys[i], *v = src->items[i];
        int at = -1;
        for (int j = 0; j < dst->n && at < 0; j++)
            if (!strcmp(dst->keys[j]->str, k->str)) at = j;
        if (at < 0) {
            ZB_TRY(append(dst, k, v, list, err));
        } else if (v->type == ZB_Y_MAP && dst->items[at]->type == ZB_Y_MAP) {
            ZB_TRY(merge(dst->items[at], v, list, err));
        } else {
            v->line = dst->items[at]->line;
            v->col = dst->items[at]->col;
            dst->items[at] = v;
        }
    }
    return ZB_OK;
}

/* Apply one override to doc's tree. */
static zb_status apply(zb_ydoc *doc, const zb_override *o, owned **list,
                       zb_err *err) {
    zb_ydoc *vd = own(list, NULL, calloc(1, sizeof *vd));
    if (!vd) return zb_fail(err, ZB_ENOMEM, "out of memory applying --set");
    const char *value = o->arg + strlen(o->key) + 1;
    zb_err e;
    if (zb_ydoc_load_string("value", value, vd, &e) != ZB_OK)
        return zb_fail(err, ZB_EINPUT, "--set %s: %s", o->arg, e.msg);
    zb_ynode *v = vd->root;
    if (!v) v = new_node(doc->root, ZB_Y_SCALAR, "", 0, list);   /* "KEY=" */
    if (!v) return zb_fail(err, ZB_ENOMEM, "out of memory applying --set");
    zb_ynode *map = doc->root;
    for (const char *part = o->key;;) {
        size_t len = strcspn(part, ".");
        if (map->type != ZB_Y_MAP)
            return zb_fail(err, ZB_EINPUT, "--set %s: '%.*s' is not a mapping "
                           "(%s:%d), so it has no key '%.*s'", o->arg,
                           (int)(part - o->key - 1), o->key, doc->file, map->line,
                           (int)len, part);
        int at = -1;
        for (int i = 0; i < map->n && at < 0; i++)
            if (strlen(map->keys[i]->str) == len && !strncmp(map->keys[i]->str, part, len))
                at = i;
        bool last = part[len] == '\0';
        if (at < 0) {
            zb_ynode *k = new_node(map, ZB_Y_SCALAR, part, len, list);
            zb_ynode *val = last ? v : new_node(map, ZB_Y_MAP, NULL, 0, list);
            if (!k || !val) return zb_fail(err, ZB_ENOMEM, "out of memory applying --set");
            ZB_TRY(append(map, k, val, list, err));
            at = map->n - 1;
        }
        if (last && v->type == ZB_Y_MAP && map->items[at]->type == ZB_Y_MAP)
            return merge(map->items[at], v, list, err);
        if (last) {
            v->line = map->items[at]->line;   /* errors point at the file's key */
            v->col = map->items[at]->col;
            map->items[at] = v;
            return ZB_OK;
        }
        map = map->items[at];
        part += len + 1;
    }
}

/* "file:12:3: msg" -> "msg" (the place is the file's, not the override's). */
static const char *without_place(const char *msg, const char *file) {
    size_t n = strlen(file);
    if (strncmp(msg, file, n) || msg[n] != ':') return msg;
    const char *p = msg + n + 1;
    while (isdigit((unsigned char)*p) || *p == ':') p++;
    return *p == ' ' ? p + 1 : msg;
}

static zb_status load_doc(zb_ydoc *doc, const zb_overrides *s,
                          zb_override_parse_fn parse, void *ctx, zb_err *err);

zb_status zb_overrides_load(const char *path, const zb_overrides *s,
                            zb_override_parse_fn parse, void *ctx, zb_err *err) {
    zb_ydoc doc;
    ZB_TRY(zb_ydoc_load(path, &doc, err));
    return load_doc(&doc, s, parse, ctx, err);
}

zb_status zb_overrides_load_string(const char *name, const char *text,
                                   const zb_overrides *s, zb_override_parse_fn parse,
                                   void *ctx, zb_err *err) {
    zb_ydoc doc;
    ZB_TRY(zb_ydoc_load_string(name, text, &doc, err));
    return load_doc(&doc, s, parse, ctx, err);
}

/* Parse, then each override and parse again; frees doc. */
static zb_status load_doc(zb_ydoc *doc, const zb_overrides *s,
                          zb_override_parse_fn parse, void *ctx, zb_err *err) {
    zb_ydoc d = *doc;
    zb_status st = parse(&d, ctx, err);
    owned *list = NULL;
    for (int i = 0; st == ZB_OK && s && i < s->n; i++) {
        if (!d.root || d.root->type != ZB_Y_MAP) break;   /* parse said so */
        st = apply(&d, &s->o[i], &list, err);
        zb_err e;
        if (st == ZB_OK && (st = parse(&d, ctx, &e)) != ZB_OK)
            zb_fail(err, st, "--set %s: %s", s->o[i].arg, without_place(e.msg, d.file));
    }
    free_owned(list);
    zb_ydoc_free(&d);
    return st;
}

/* ---- models and plans ---- */

typedef struct {
    char base_dir[1024];   /* the model file's folder: "" (none), "/" or "a/b" */
    zb_model *out;
} model_ctx;

static zb_status parse_model(const zb_ydoc *doc, void *ctx, zb_err *err) {
    model_ctx *c = ctx;
    return zb_model_parse(doc, doc->root, NULL, c->base_dir, c->out, err);
}

zb_status zb_model_load_set_string(const char *name, const char *text,
                                   const zb_overrides *s, zb_model *out, zb_err *err) {
    model_ctx c = {.out = out};
    return zb_overrides_load_string(name, text, s, parse_model, &c, err);
}

zb_status zb_model_load_set(const char *path, const zb_overrides *s,
                            zb_model *out, zb_err *err) {
    model_ctx c = {.out = out};
    const char *slash = strrchr(path, '/');
    if (slash)
        snprintf(c.base_dir, sizeof c.base_dir, "%.*s",
                 (int)(slash == path ? 1 : slash - path), path);
    return zb_overrides_load(path, s, parse_model, &c, err);
}

typedef struct {
    zb_plan *out;
    bool have;   /* out holds an earlier parse's plan */
} plan_ctx;

static zb_status parse_plan(const zb_ydoc *doc, void *ctx, zb_err *err) {
    plan_ctx *c = ctx;
    if (c->have) zb_plan_free(c->out);
    c->have = false;
    ZB_TRY(zb_plan_read_doc(doc, c->out, err));   /* frees its own failures */
    c->have = true;
    return ZB_OK;
}

zb_status zb_plan_read_set(const char *path, const zb_overrides *s,
                           zb_plan *out, zb_err *err) {
    plan_ctx c = {.out = out};
    memset(out, 0, sizeof *out);
    zb_status st = zb_overrides_load(path, s, parse_plan, &c, err);
    if (st != ZB_OK && c.have) zb_plan_free(out);
    return st;
}
