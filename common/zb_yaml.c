/* zb_yaml.c - YAML reading into a node tree, typed getters, and the writer
 * (see zb_yaml.h for the contract).
 *
 * Reading walks libyaml's event stream with a small recursive descent: one
 * function per node kind. Children are collected in a temporary growable
 * array and copied into the document's arena when the collection ends, so
 * the whole tree is freed with the arena. libyaml marks are 0-based; every
 * node stores 1-based line/col. Anchors, aliases, tags, non-scalar keys,
 * duplicate keys and multiple documents are rejected: models and plans never
 * need them and silently accepting them invites misreadings.
 *
 * Scalars stay text in the tree; the getters convert them and own the error
 * wording: "file:line:col: 'key' must be an integer, got '1.5'".
 */
#include "common/zb_yaml.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <strings.h>
#include <yaml.h>

#include "common/zb_afile.h"
#include "common/zb_files.h"
#include "common/zb_suggest.h"

#define MAX_DEPTH 64        /* nesting deeper than this is certainly a mistake */
#define CHUNK_BYTES 65536

/* ---- arena: bump allocator, freed all at once with the document ---- */

typedef struct chunk {
    struct chunk *next;
    size_t used, cap;
    alignas(max_align_t) unsigned char data[];
} chunk;

static void *arena_alloc(zb_ydoc *doc, size_t n) {
    const size_t align = alignof(max_align_t);
    n = (n + align - 1) / align * align;
    chunk *c = doc->arena_;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > CHUNK_BYTES ? n : CHUNK_BYTES;
        chunk *fresh = malloc(sizeof *fresh + cap);
        if (!fresh) return NULL;
        fresh->next = c;
        fresh->used = 0;
        fresh->cap = cap;
        doc->arena_ = c = fresh;
    }
    void *p = c->data + c->used;
    c->used += n;
    memset(p, 0, n);
    return p;
}

void zb_ydoc_free(zb_ydoc *doc) {
    if (!doc) return;
    chunk *c = doc->arena_;
    while (c) {
        chunk *next = c->next;
        free(c);
        c = next;
    }
    doc->arena_ = NULL;
    doc->root = NULL;
}

/* ---- loading ---- */

typedef struct {
    yaml_parser_t parser;
    zb_ydoc *doc;
    const char *text;       /* the input, to turn reader byte offsets into lines */
    size_t len;
    zb_err *err;
} loader;

/* Growable array of child pointers used while a collection is being read. */
typedef struct {
    zb_ynode **v;
    int n, cap;
} nodevec;

static bool nodevec_push(nodevec *a, zb_ynode *x) {
    if (a->n == a->cap) {
        int cap = a->cap ? 2 * a->cap : 8;
        zb_ynode **v = realloc(a->v, (size_t)cap * sizeof *v);
        if (!v) return false;
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = x;
    return true;
}

static zb_status oom(zb_err *err) {
    return zb_fail(err, ZB_ENOMEM, "out of memory while reading YAML");
}

static zb_status fail_mark(loader *ld, yaml_mark_t m, const char *what) {
    return zb_fail_at(ld->err, ld->doc->file, (int)m.line + 1, (int)m.column + 1,
                      "%s", what);
}

/* Line and column (1-based) of a byte offset in the input. */
static void offset_pos(const loader *ld, size_t off, int *line, int *col) {
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < off && i < ld->len; i++) {
        if (ld->text[i] == '\n') {
            ++*line;
            *col = 1;
        } else if (((unsigned char)ld->text[i] & 0xC0) != 0x80) {
            ++*col;   /* count characters, as libyaml does, not UTF-8 bytes */
        }
    }
}

static zb_status syntax_error(loader *ld) {
    yaml_parser_t *p = &ld->parser;
    if (p->error == YAML_MEMORY_ERROR) return oom(ld->err);
    const char *problem = p->problem ? p->problem : "unknown error";
    int line, col;
    if (p->error == YAML_READER_ERROR) {   /* bad encoding: only an offset is known */
        offset_pos(ld, p->problem_offset, &line, &col);
    } else {
        line = (int)p->problem_mark.line + 1;
        col = (int)p->problem_mark.column + 1;
    }
    return zb_fail_at(ld->err, ld->doc->file, line, col, "YAML syntax error: %s", problem);
}

static zb_status next_event(loader *ld, yaml_event_t *ev) {
    if (!yaml_parser_parse(&ld->parser, ev)) return syntax_error(ld);
    return ZB_OK;
}

static zb_ynode *new_node(loader *ld, zb_ytype type, yaml_mark_t m) {
    zb_ynode *n = arena_alloc(ld->doc, sizeof *n);
    if (!n) return NULL;
    n->type = type;
    n->line = (int)m.line + 1;
    n->col = (int)m.column + 1;
    return n;
}

/* Anchors and tags can appear on any node; reject both. */
static zb_status check_props(loader *ld, const yaml_event_t *ev) {
    const yaml_char_t *anchor = NULL, *tag = NULL;
    if (ev->type == YAML_SCALAR_EVENT) {
        anchor = ev->data.scalar.anchor;
        tag = ev->data.scalar.tag;
    } else if (ev->type == YAML_SEQUENCE_START_EVENT) {
        anchor = ev->data.sequence_start.anchor;
        tag = ev->data.sequence_start.tag;
    } else if (ev->type == YAML_MAPPING_START_EVENT) {
        anchor = ev->data.mapping_start.anchor;
        tag = ev->data.mapping_start.tag;
    }
    if (anchor)
        return zb_fail_at(ld->err, ld->doc->file, (int)ev->start_mark.line + 1,
                          (int)ev->start_mark.column + 1,
                          "YAML anchors ('&%s') are not supported", (const char *)anchor);
    if (tag)
        return zb_fail_at(ld->err, ld->doc->file, (int)ev->start_mark.line + 1,
                          (int)ev->start_mark.column + 1,
                          "YAML tags ('%s') are not supported", (const char *)tag);
    return ZB_OK;
}

static zb_status read_scalar(loader *ld, const yaml_event_t *ev, zb_ynode **out) {
    size_t len = ev->data.scalar.length;
    const char *val = (const char *)ev->data.scalar.value;
    if (memchr(val, '\0', len))
        return fail_mark(ld, ev->start_mark, "NUL characters are not allowed in values");
    zb_ynode *n = new_node(ld, ZB_Y_SCALAR, ev->start_mark);
    char *s = n ? arena_alloc(ld->doc, len + 1) : NULL;
    if (!s) return oom(ld->err);
    memcpy(s, val, len);
    s[len] = '\0';
    n->str = s;
    n->quoted = ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
    *out = n;
    return ZB_OK;
}

/* Copy collected children into the arena. */
static zb_ynode **freeze(loader *ld, const nodevec *a) {
    zb_ynode **v = arena_alloc(ld->doc, (size_t)(a->n ? a->n : 1) * sizeof *v);
    if (v && a->n) memcpy(v, a->v, (size_t)a->n * sizeof *v);
    return v;
}

static zb_status read_node(loader *ld, yaml_event_t *ev, int depth, zb_ynode **out);

static zb_status read_seq(loader *ld, zb_ynode *seq, int depth) {
    nodevec items = {0};
    zb_status s = ZB_OK;
    for (;;) {
        yaml_event_t ev;
        if ((s = next_event(ld, &ev)) != ZB_OK) break;
        if (ev.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        zb_ynode *item = NULL;
        s = read_node(ld, &ev, depth + 1, &item);
        yaml_event_delete(&ev);
        if (s != ZB_OK) break;
        if (!nodevec_push(&items, item)) {
            s = oom(ld->err);
            break;
        }
    }
    if (s == ZB_OK) {
        seq->n = items.n;
        if (!(seq->items = freeze(ld, &items))) s = oom(ld->err);
    }
    free(items.v);
    return s;
}

/* The keys of one map seen so far, for the duplicate check: an open-
 * addressing table of indices into the keys vector, so that a map of n
 * keys is checked in O(n), not O(n^2) (a 300k-key file took minutes). */
typedef struct {
    int *slot;     /* -1: empty; else an index into keys */
    size_t cap;    /* a power of two, at least twice the keys */
} keyset;

static size_t key_hash(const char *s) {
    size_t h = 1469598103934665603ULL;   /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static bool keyset_grow(keyset *ks, const nodevec *keys) {
    size_t cap = ks->cap ? 2 * ks->cap : 64;
    int *slot = malloc(cap * sizeof *slot);
    if (!slot) return false;
    for (size_t i = 0; i < cap; i++) slot[i] = -1;
    for (int k = 0; k < keys->n; k++) {
        size_t j = key_hash(keys->v[k]->str) & (cap - 1);
        while (slot[j] >= 0) j = (j + 1) & (cap - 1);
        slot[j] = k;
    }
    free(ks->slot);
    ks->slot = slot;
    ks->cap = cap;
    return true;
}

/* Index of an earlier key equal to str, or -1. */
static int keyset_find(const keyset *ks, const nodevec *keys, const char *str) {
    for (size_t j = key_hash(str) & (ks->cap - 1); ks->slot[j] >= 0;
         j = (j + 1) & (ks->cap - 1))
        if (strcmp(keys->v[ks->slot[j]]->str, str) == 0) return ks->slot[j];
    return -1;
}

/* keys->v[keys->n - 1], just pushed, into the table. */
static bool keyset_add(keyset *ks, const nodevec *keys) {
    if ((size_t)keys->n * 2 > ks->cap) return keyset_grow(ks, keys);
    int k = keys->n - 1;
    size_t j = key_hash(keys->v[k]->str) & (ks->cap - 1);
    while (ks->slot[j] >= 0) j = (j + 1) & (ks->cap - 1);
    ks->slot[j] = k;
    return true;
}

/* Read one key event: must be a scalar, must not repeat an earlier key. */
static zb_status read_key(loader *ld, yaml_event_t *ev, const nodevec *keys,
                          const keyset *ks, zb_ynode **out) {
    if (ev->type != YAML_SCALAR_EVENT)
        return fail_mark(ld, ev->start_mark, "mapping keys must be plain scalars");
    ZB_TRY(check_props(ld, ev));
    ZB_TRY(read_scalar(ld, ev, out));
    if (ks->cap && keyset_find(ks, keys, (*out)->str) >= 0)
        return zb_fail_at(ld->err, ld->doc->file, (*out)->line, (*out)->col,
                          "duplicate key '%s'", (*out)->str);
    return ZB_OK;
}

static zb_status read_pair(loader *ld, yaml_event_t *kev, int depth, nodevec *keys,
                           keyset *ks, nodevec *vals) {
    zb_ynode *k = NULL, *v = NULL;
    ZB_TRY(read_key(ld, kev, keys, ks, &k));
    yaml_event_t vev;
    ZB_TRY(next_event(ld, &vev));
    zb_status s = read_node(ld, &vev, depth + 1, &v);
    yaml_event_delete(&vev);
    if (s != ZB_OK) return s;
    if (!nodevec_push(keys, k) || !nodevec_push(vals, v) || !keyset_add(ks, keys))
        return oom(ld->err);
    return ZB_OK;
}

static zb_status read_map(loader *ld, zb_ynode *map, int depth) {
    nodevec keys = {0}, vals = {0};
    keyset ks = {0};
    zb_status s = ZB_OK;
    for (;;) {
        yaml_event_t ev;
        if ((s = next_event(ld, &ev)) != ZB_OK) break;
        if (ev.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        s = read_pair(ld, &ev, depth, &keys, &ks, &vals);
        yaml_event_delete(&ev);
        if (s != ZB_OK) break;
    }
    if (s == ZB_OK) {
        map->n = keys.n;
        map->keys = freeze(ld, &keys);
        map->items = freeze(ld, &vals);
        if (!map->keys || !map->items) s = oom(ld->err);
    }
    free(keys.v);
    free(vals.v);
    free(ks.slot);
    return s;
}

/* ev is the node's first event; the caller deletes it. */
static zb_status read_node(loader *ld, yaml_event_t *ev, int depth, zb_ynode **out) {
    if (depth > MAX_DEPTH)
        return fail_mark(ld, ev->start_mark, "YAML nesting is too deep");
    if (ev->type == YAML_ALIAS_EVENT)
        return fail_mark(ld, ev->start_mark, "YAML aliases are not supported");
    ZB_TRY(check_props(ld, ev));
    if (ev->type == YAML_SCALAR_EVENT) return read_scalar(ld, ev, out);
    bool is_map = ev->type == YAML_MAPPING_START_EVENT;
    if (!is_map && ev->type != YAML_SEQUENCE_START_EVENT)
        return fail_mark(ld, ev->start_mark, "YAML syntax error: unexpected event");
    zb_ynode *n = new_node(ld, is_map ? ZB_Y_MAP : ZB_Y_SEQ, ev->start_mark);
    if (!n) return oom(ld->err);
    *out = n;
    return is_map ? read_map(ld, n, depth) : read_seq(ld, n, depth);
}

/* Expect an event of one type (stream/document framing), then drop it. */
static zb_status expect_event(loader *ld, yaml_event_type_t type, yaml_event_t *ev) {
    ZB_TRY(next_event(ld, ev));
    if (ev->type == type) return ZB_OK;
    zb_status s = ev->type == YAML_DOCUMENT_START_EVENT
                      ? fail_mark(ld, ev->start_mark,
                                  "multiple YAML documents are not supported")
                      : fail_mark(ld, ev->start_mark, "YAML syntax error: unexpected event");
    yaml_event_delete(ev);
    return s;
}

/* STREAM-START (DOCUMENT-START node DOCUMENT-END)? STREAM-END */
static zb_status read_stream(loader *ld) {
    yaml_event_t ev;
    ZB_TRY(expect_event(ld, YAML_STREAM_START_EVENT, &ev));
    yaml_event_delete(&ev);
    ZB_TRY(next_event(ld, &ev));
    if (ev.type == YAML_STREAM_END_EVENT) {   /* empty file or only comments */
        yaml_event_delete(&ev);
        return ZB_OK;
    }
    bool doc_start = ev.type == YAML_DOCUMENT_START_EVENT;
    yaml_mark_t mark = ev.start_mark;
    yaml_event_delete(&ev);
    if (!doc_start) return fail_mark(ld, mark, "YAML syntax error: unexpected event");
    ZB_TRY(next_event(ld, &ev));
    zb_status s = read_node(ld, &ev, 0, &ld->doc->root);
    yaml_event_delete(&ev);
    if (s != ZB_OK) return s;
    ZB_TRY(expect_event(ld, YAML_DOCUMENT_END_EVENT, &ev));
    yaml_event_delete(&ev);
    ZB_TRY(expect_event(ld, YAML_STREAM_END_EVENT, &ev));
    yaml_event_delete(&ev);
    return ZB_OK;
}

static zb_status load_buffer(const char *name, const char *text, size_t len,
                             zb_ydoc *doc, zb_err *err) {
    memset(doc, 0, sizeof *doc);
    snprintf(doc->file, sizeof doc->file, "%s", name);
    loader ld = {.doc = doc, .text = text, .len = len, .err = err};
    if (!yaml_parser_initialize(&ld.parser)) return oom(err);
    yaml_parser_set_input_string(&ld.parser, (const unsigned char *)text, len);
    yaml_parser_set_encoding(&ld.parser, YAML_UTF8_ENCODING);
    zb_status s = read_stream(&ld);
    yaml_parser_delete(&ld.parser);
    if (s != ZB_OK) zb_ydoc_free(doc);
    return s;
}

zb_status zb_ydoc_load_string(const char *name, const char *text, zb_ydoc *doc,
                              zb_err *err) {
    return load_buffer(name, text, strlen(text), doc, err);
}

/* Whole file into a malloc'ed buffer. */
static zb_status read_file(const char *path, char **out, size_t *len, zb_err *err) {
    const char *kind;
    FILE *f = zb_files_open_input(path, &kind);   /* never blocks (a FIFO) */
    if (!f && kind && !strcmp(kind, "a folder"))
        return zb_fail(err, ZB_EINPUT, "cannot read '%s': Is a directory", path);
    if (!f && kind)
        return zb_fail(err, ZB_EINPUT, "cannot read '%s': %s, not a regular "
                       "file", path, kind);
    /* a model or plan that cannot be opened is bad input (exit 2) */
    if (!f) {
        int e = errno;
        return zb_fail_at(err, path, 0, 0, "cannot open: %s%s", strerror(e),
                          e == ENOENT ? zb_suggest_path(path) : "");
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    zb_status s = buf ? ZB_OK : oom(err);
    while (s == ZB_OK) {
        if (n >= ZB_YAML_MAX_BYTES) {
            s = zb_fail(err, ZB_EINPUT, "%s: larger than %d MiB, not a zb "
                        "model, plan or index", path, ZB_YAML_MAX_BYTES >> 20);
            break;
        }
        if (n == cap) {
            char *bigger = realloc(buf, cap *= 2);
            if (!bigger) {
                s = oom(err);
                break;
            }
            buf = bigger;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    if (s == ZB_OK && ferror(f))
        s = zb_fail(err, ZB_EIO, "cannot read '%s': %s", path, strerror(errno));
    fclose(f);
    if (s != ZB_OK) {
        free(buf);
        return s;
    }
    *out = buf;
    *len = n;
    return ZB_OK;
}

zb_status zb_ydoc_load(const char *path, zb_ydoc *doc, zb_err *err) {
    memset(doc, 0, sizeof *doc);
    char *text = NULL;
    size_t len = 0;
    ZB_TRY(read_file(path, &text, &len, err));
    zb_status s = load_buffer(path, text, len, doc, err);
    free(text);
    return s;
}

/* ---- lookups and key checks ---- */

zb_ynode *zb_ymap_get(const zb_ynode *map, const char *key) {
    if (!map || map->type != ZB_Y_MAP) return NULL;
    for (int i = 0; i < map->n; i++)
        if (strcmp(map->keys[i]->str, key) == 0) return map->items[i];
    return NULL;
}

/* Levenshtein distance; strings longer than 63 bytes count as far apart. */
static int edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63) return INT_MAX;
    int row[64];
    for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];   /* row[i-1][j-1] */
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* Closest allowed word within distance max(2, len/3), or NULL. */
static const char *suggest(const char *word, const char *const *allowed) {
    int limit = (int)strlen(word) / 3;
    if (limit < 2) limit = 2;
    const char *best = NULL;
    int best_d = INT_MAX;
    for (int i = 0; allowed[i]; i++) {
        int d = edit_distance(word, allowed[i]);
        if (d < best_d) {
            best_d = d;
            best = allowed[i];
        }
    }
    return best_d <= limit ? best : NULL;
}

/* "a, b, c" into buf[cap] (truncated with "..." when it does not fit). */
static void join_words(const char *const *words, char *buf, size_t cap) {
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; words[i]; i++) {
        int w = snprintf(buf + n, cap - n, "%s%s", i ? ", " : "", words[i]);
        if (w < 0 || (size_t)w >= cap - n) {
            if (cap > 4) strcpy(buf + cap - 4, "...");
            return;
        }
        n += (size_t)w;
    }
}

zb_status zb_ymap_check_keys(const zb_ydoc *doc, const zb_ynode *map,
                             const char *where, const char *const *allowed,
                             zb_err *err) {
    if (!map || map->type != ZB_Y_MAP) return ZB_OK;
    for (int i = 0; i < map->n; i++) {
        const zb_ynode *k = map->keys[i];
        bool known = false;
        for (int j = 0; allowed[j] && !known; j++) known = strcmp(k->str, allowed[j]) == 0;
        if (known) continue;
        const char *hint = suggest(k->str, allowed);
        if (hint)
            return zb_fail_at(err, doc->file, k->line, k->col,
                              "unknown key '%s' in %s (did you mean '%s'?)", k->str,
                              where, hint);
        char list[320];
        join_words(allowed, list, sizeof list);
        return zb_fail_at(err, doc->file, k->line, k->col,
                          "unknown key '%s' in %s (known keys: %s)", k->str, where, list);
    }
    return ZB_OK;
}

/* ---- type errors ---- */

static const char *type_name(zb_ytype t) {
    return t == ZB_Y_MAP ? "a mapping" : t == ZB_Y_SEQ ? "a sequence" : "a scalar";
}

/* What the user wrote, for "got ...": "'1.5'", "a mapping", "nothing". */
static void describe(const zb_ynode *n, char *buf, size_t cap) {
    if (!n || (n->type == ZB_Y_SCALAR && !n->quoted && !n->str[0]))
        snprintf(buf, cap, "nothing");
    else if (n->type != ZB_Y_SCALAR)
        snprintf(buf, cap, "%s", type_name(n->type));
    else
        snprintf(buf, cap, "%s'%.48s%s'", n->quoted ? "a quoted string " : "", n->str,
                 strlen(n->str) > 48 ? "..." : "");
}

static zb_status type_error(const zb_ydoc *doc, const zb_ynode *n, const char *what,
                            const char *expected, zb_err *err) {
    char got[80];
    describe(n, got, sizeof got);
    return zb_fail_at(err, doc->file, n->line, n->col, "%s must be %s, got %s", what,
                      expected, got);
}

zb_status zb_ynode_expect(const zb_ydoc *doc, const zb_ynode *node, zb_ytype type,
                          const char *what, zb_err *err) {
    if (node && node->type == type) return ZB_OK;
    const char *want = type == ZB_Y_MAP ? "a mapping" : type == ZB_Y_SEQ ? "a sequence"
                                                                         : "a scalar";
    if (!node && !doc->root)
        return zb_fail_at(err, doc->file, 1, 1, "%s must be %s, got an empty document",
                          what, want);
    if (!node) return zb_fail_at(err, doc->file, 0, 0, "%s is missing", what);
    char got[80];
    describe(node, got, sizeof got);
    return zb_fail_at(err, doc->file, node->line, node->col, "%s must be %s, got %s", what,
                      want, got);
}

/* ---- scalar conversions ---- */

/* Shortest "%.Ng" text (N = 15..17) that reads back as exactly v. */
static void fmt_double(double v, char *buf, size_t cap) {
    if (isnan(v)) {
        snprintf(buf, cap, ".nan");
        return;
    }
    if (isinf(v)) {
        snprintf(buf, cap, v > 0 ? ".inf" : "-.inf");
        return;
    }
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, cap, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) return;
    }
}

/* [-+]?[0-9]+ */
static bool is_int_text(const char *s) {
    if (*s == '-' || *s == '+') s++;
    if (!isdigit((unsigned char)*s)) return false;
    while (isdigit((unsigned char)*s)) s++;
    return *s == '\0';
}

/* [-+]? ( [0-9]+ (. [0-9]*)? | . [0-9]+ ) ([eE] [-+]? [0-9]+)? */
static bool is_float_text(const char *s) {
    if (*s == '-' || *s == '+') s++;
    int digits = 0;
    while (isdigit((unsigned char)*s)) s++, digits++;
    if (*s == '.') {
        s++;
        while (isdigit((unsigned char)*s)) s++, digits++;
    }
    if (!digits) return false;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '-' || *s == '+') s++;
        if (!isdigit((unsigned char)*s)) return false;
        while (isdigit((unsigned char)*s)) s++;
    }
    return *s == '\0';
}

/* "010", "-007", "00.5": a digit after a leading 0. YAML 1.1 reads 010 as
 * octal 8, YAML 1.2 as decimal 10; rather than pick one silently, zb
 * refuses it (docs/model-format.md). */
static bool leading_zero(const char *s) {
    if (*s == '-' || *s == '+') s++;
    return s[0] == '0' && isdigit((unsigned char)s[1]);
}

static zb_status leading_zero_error(const zb_ydoc *doc, const zb_ynode *n,
                                    const char *what, zb_err *err) {
    return zb_fail_at(err, doc->file, n->line, n->col, "%s: '%s' has a leading "
                      "zero, which YAML 1.1 reads as octal and YAML 1.2 as "
                      "decimal; write it without the zero", what, n->str);
}

static bool plain_scalar(const zb_ynode *n) {
    return n->type == ZB_Y_SCALAR && !n->quoted;
}

zb_status zb_yscalar_int(const zb_ydoc *doc, const zb_ynode *node, const char *what,
                         long long min, long long max, long long *out, zb_err *err) {
    if (!plain_scalar(node) || !is_int_text(node->str))
        return type_error(doc, node, what, "an integer", err);
    if (leading_zero(node->str)) return leading_zero_error(doc, node, what, err);
    errno = 0;
    long long v = strtoll(node->str, NULL, 10);
    if (errno == ERANGE)
        return zb_fail_at(err, doc->file, node->line, node->col,
                          "%s is out of range, got '%s'", what, node->str);
    if (v < min)
        return zb_fail_at(err, doc->file, node->line, node->col, "%s must be >= %lld, got %lld",
                          what, min, v);
    if (v > max)
        return zb_fail_at(err, doc->file, node->line, node->col, "%s must be <= %lld, got %lld",
                          what, max, v);
    *out = v;
    return ZB_OK;
}

zb_status zb_yscalar_double(const zb_ydoc *doc, const zb_ynode *node, const char *what,
                            double min, double max, double *out, zb_err *err) {
    if (!plain_scalar(node) || !is_float_text(node->str))
        return type_error(doc, node, what, "a number", err);
    if (leading_zero(node->str)) return leading_zero_error(doc, node, what, err);
    double v = strtod(node->str, NULL);
    if (!isfinite(v))
        return zb_fail_at(err, doc->file, node->line, node->col,
                          "%s is out of range, got '%s'", what, node->str);
    char vb[32], bb[32];
    fmt_double(v, vb, sizeof vb);
    if (v < min) {
        fmt_double(min, bb, sizeof bb);
        return zb_fail_at(err, doc->file, node->line, node->col, "%s must be >= %s, got %s",
                          what, bb, vb);
    }
    if (v > max) {
        fmt_double(max, bb, sizeof bb);
        return zb_fail_at(err, doc->file, node->line, node->col, "%s must be <= %s, got %s",
                          what, bb, vb);
    }
    *out = v;
    return ZB_OK;
}

/* ---- map getters ---- */

/* Append the path from cur to target to buf ("training.optimizer", "a[2]"). */
static bool find_path(const zb_ynode *cur, const zb_ynode *target, char *buf, size_t cap,
                      size_t len, int depth) {
    if (cur == target) return true;
    if (!cur || cur->type == ZB_Y_SCALAR || depth > MAX_DEPTH) return false;
    for (int i = 0; i < cur->n; i++) {
        int w = cur->type == ZB_Y_MAP
                    ? snprintf(buf + len, cap - len, "%s%s", len ? "." : "", cur->keys[i]->str)
                    : snprintf(buf + len, cap - len, "[%d]", i);
        if (w < 0 || (size_t)w >= cap - len) break;
        if (find_path(cur->items[i], target, buf, cap, len + (size_t)w, depth + 1)) return true;
        buf[len] = '\0';
    }
    return false;
}

/* "the top level", "'training.optimizer'" or "a mapping" (not in the tree). */
static void map_context(const zb_ydoc *doc, const zb_ynode *map, char *buf, size_t cap) {
    char path[200] = "";
    if (map == doc->root)
        snprintf(buf, cap, "the top level");
    else if (find_path(doc->root, map, path, sizeof path, 0, 0))
        snprintf(buf, cap, "'%s'", path);
    else
        snprintf(buf, cap, "a mapping");
}

/* Find map[key]: *out = NULL when absent and not required. */
static zb_status lookup(const zb_ydoc *doc, const zb_ynode *map, const char *key,
                        bool required, const zb_ynode **out, zb_err *err) {
    *out = NULL;
    char ctx[220];
    if (map && map->type != ZB_Y_MAP) {
        map_context(doc, map, ctx, sizeof ctx);
        return zb_ynode_expect(doc, map, ZB_Y_MAP, ctx, err);
    }
    *out = zb_ymap_get(map, key);
    if (*out || !required) return ZB_OK;
    if (!map) return zb_fail_at(err, doc->file, 0, 0, "missing key '%s'", key);
    map_context(doc, map, ctx, sizeof ctx);
    return zb_fail_at(err, doc->file, map->line, map->col, "missing key '%s' in %s", key, ctx);
}

/* "'key'" for messages. */
static const char *quote_key(char *buf, size_t cap, const char *key) {
    snprintf(buf, cap, "'%.60s'", key);
    return buf;
}

zb_status zb_yget_int(const zb_ydoc *doc, const zb_ynode *map, const char *key,
                      bool required, long long min, long long max, long long *out,
                      zb_err *err) {
    const zb_ynode *v;
    ZB_TRY(lookup(doc, map, key, required, &v, err));
    if (!v) return ZB_OK;
    char what[80];
    return zb_yscalar_int(doc, v, quote_key(what, sizeof what, key), min, max, out, err);
}

zb_status zb_yget_double(const zb_ydoc *doc, const zb_ynode *map, const char *key,
                         bool required, double min, double max, double *out,
                         zb_err *err) {
    const zb_ynode *v;
    ZB_TRY(lookup(doc, map, key, required, &v, err));
    if (!v) return ZB_OK;
    char what[80];
    return zb_yscalar_double(doc, v, quote_key(what, sizeof what, key), min, max, out, err);
}

zb_status zb_yget_bool(const zb_ydoc *doc, const zb_ynode *map, const char *key,
                       bool required, bool *out, zb_err *err) {
    const zb_ynode *v;
    ZB_TRY(lookup(doc, map, key, required, &v, err));
    if (!v) return ZB_OK;
    char what[80];
    quote_key(what, sizeof what, key);
    if (plain_scalar(v) && strcmp(v->str, "true") == 0) *out = true;
    else if (plain_scalar(v) && strcmp(v->str, "false") == 0) *out = false;
    else return type_error(doc, v, what, "true or false", err);
    return ZB_OK;
}

zb_status zb_yget_str(const zb_ydoc *doc, const zb_ynode *map, const char *key,
                      bool required, char *out, size_t cap, zb_err *err) {
    const zb_ynode *v;
    ZB_TRY(lookup(doc, map, key, required, &v, err));
    if (!v) return ZB_OK;
    char what[80];
    quote_key(what, sizeof what, key);
    /* An unquoted empty value is YAML's null, not a string: write '' for "". */
    if (v->type != ZB_Y_SCALAR || (!v->quoted && !v->str[0]))
        return type_error(doc, v, what, "a string", err);
    size_t n = strlen(v->str);
    if (n >= cap)
        return zb_fail_at(err, doc->file, v->line, v->col,
                          "%s is too long (%zu characters, at most %zu)", what, n, cap - 1);
    memcpy(out, v->str, n + 1);
    return ZB_OK;
}

zb_status zb_yget_enum(const zb_ydoc *doc, const zb_ynode *map, const char *key,
                       bool required, const char *const *choices, int *out,
                       zb_err *err) {
    const zb_ynode *v;
    ZB_TRY(lookup(doc, map, key, required, &v, err));
    if (!v) return ZB_OK;
    if (v->type == ZB_Y_SCALAR)
        for (int i = 0; choices[i]; i++)
            if (strcmp(v->str, choices[i]) == 0) {
                *out = i;
                return ZB_OK;
            }
    char list[256], got[80];
    join_words(choices, list, sizeof list);
    describe(v, got, sizeof got);
    return zb_fail_at(err, doc->file, v->line, v->col, "'%.60s' must be one of %s; got %s", key,
                      list, got);
}

/* ---- writing ---- */

struct zb_yw {
    zb_afile af;
    yaml_emitter_t em;
    zb_status st;           /* first error; later calls do nothing */
    zb_err err;
    int write_errno;        /* errno of a failed fwrite in the output handler */
};

static int yw_output(void *data, unsigned char *buf, size_t size) {
    zb_yw *w = data;
    errno = 0;
    if (fwrite(buf, 1, size, w->af.f) == size) return 1;
    w->write_errno = errno ? errno : EIO;
    return 0;
}

/* Record the emitter's failure as the writer's first error. */
static void yw_emitter_failed(zb_yw *w) {
    if (w->em.error == YAML_MEMORY_ERROR)
        w->st = zb_fail(&w->err, ZB_ENOMEM, "out of memory writing '%s'", w->af.path);
    else if (w->em.error == YAML_WRITER_ERROR)
        w->st = zb_fail(&w->err, ZB_EIO, "cannot write '%s': %s", w->af.tmp[0] ? w->af.tmp : w->af.path,
                        strerror(w->write_errno));
    else   /* misuse, e.g. a map_end without map_begin: a bug in the caller */
        w->st = zb_fail(&w->err, ZB_ERUNTIME, "YAML emitter error writing '%s': %s",
                        w->af.path, w->em.problem ? w->em.problem : "unknown");
}

/* Emit an event built by init_ok (0 = the initializer failed). The emitter
 * owns and frees the event even when emitting fails. */
static void yw_emit(zb_yw *w, int init_ok, yaml_event_t *ev) {
    if (!init_ok) {
        if (w->st == ZB_OK)
            w->st = zb_fail(&w->err, ZB_ENOMEM, "out of memory writing '%s'", w->af.path);
        return;
    }
    if (w->st != ZB_OK) {
        yaml_event_delete(ev);
        return;
    }
    if (!yaml_emitter_emit(&w->em, ev)) yw_emitter_failed(w);
}

zb_status zb_yw_open(const char *path, zb_yw **out, zb_err *err) {
    return zb_yw_open_mode(path, true, out, err);
}

zb_status zb_yw_open_mode(const char *path, bool follow, zb_yw **out, zb_err *err) {
    *out = NULL;
    zb_yw *w = zb_calloc(1, sizeof *w, err);
    if (!w) return ZB_ENOMEM;
    zb_status s = zb_afile_open_mode(&w->af, path, follow, err);
    if (s != ZB_OK) {
        free(w);
        return s;
    }
    if (!yaml_emitter_initialize(&w->em)) {
        zb_afile_close(&w->af, false, NULL);
        free(w);
        return zb_fail(err, ZB_ENOMEM, "out of memory writing '%s'", path);
    }
    yaml_emitter_set_output(&w->em, yw_output, w);
    yaml_emitter_set_unicode(&w->em, 1);
    yaml_emitter_set_width(&w->em, -1);   /* flow collections stay on one line */
    yaml_emitter_set_indent(&w->em, 2);
    yaml_event_t ev;
    yw_emit(w, yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING), &ev);
    yw_emit(w, yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1), &ev);
    *out = w;
    return ZB_OK;
}

zb_status zb_yw_close(zb_yw *w, bool ok, zb_err *err) {
    if (!w) return ZB_OK;
    if (ok && w->st == ZB_OK) {
        yaml_event_t ev;
        yw_emit(w, yaml_document_end_event_initialize(&ev, 1), &ev);
        yw_emit(w, yaml_stream_end_event_initialize(&ev), &ev);
        if (w->st == ZB_OK && !yaml_emitter_flush(&w->em)) yw_emitter_failed(w);
    }
    zb_err aerr;
    zb_status as = zb_afile_close(&w->af, ok && w->st == ZB_OK, &aerr);
    /* ok == false: the caller already has its own error; leave err alone. */
    zb_status s = ZB_OK;
    if (ok && w->st != ZB_OK) {
        s = w->st;
        if (err) *err = w->err;
    } else if (ok && as != ZB_OK) {
        s = as;
        if (err) *err = aerr;
    }
    yaml_emitter_delete(&w->em);
    free(w);
    return s;
}

static void yw_collection(zb_yw *w, bool map, bool begin, bool flow) {
    if (!w) return;
    yaml_event_t ev;
    int ok;
    if (map && begin)
        ok = yaml_mapping_start_event_initialize(
            &ev, NULL, NULL, 1, flow ? YAML_FLOW_MAPPING_STYLE : YAML_BLOCK_MAPPING_STYLE);
    else if (begin)
        ok = yaml_sequence_start_event_initialize(
            &ev, NULL, NULL, 1, flow ? YAML_FLOW_SEQUENCE_STYLE : YAML_BLOCK_SEQUENCE_STYLE);
    else if (map)
        ok = yaml_mapping_end_event_initialize(&ev);
    else
        ok = yaml_sequence_end_event_initialize(&ev);
    yw_emit(w, ok, &ev);
}

void zb_yw_map_begin(zb_yw *w, bool flow) { yw_collection(w, true, true, flow); }
void zb_yw_map_end(zb_yw *w) { yw_collection(w, true, false, false); }
void zb_yw_seq_begin(zb_yw *w, bool flow) { yw_collection(w, false, true, flow); }
void zb_yw_seq_end(zb_yw *w) { yw_collection(w, false, false, false); }

/* Would this text, written plain, read back as something other than a
 * string (number, bool, null) in YAML 1.1 or 1.2? Then it must be quoted. */
static bool looks_special(const char *s) {
    static const char *const words[] = {"null", "~", "true", "false", "yes", "no", "on",
                                        "off", ".inf", "-.inf", "+.inf", ".nan", NULL};
    if (!*s) return true;
    for (int i = 0; words[i]; i++)
        if (strcasecmp(s, words[i]) == 0) return true;
    if (is_float_text(s)) return true;
    char *end;
    errno = 0;
    strtod(s, &end);    /* hex, "inf", "nan" and friends */
    if (*end == '\0') return true;
    return strncmp(s, "0x", 2) == 0 || strncmp(s, "0o", 2) == 0;
}

/* plain: the text is a number/bool we want read back as one. */
static void yw_scalar(zb_yw *w, const char *s, bool plain) {
    if (!w) return;
    bool quote = !plain && looks_special(s);
    yaml_event_t ev;
    int ok = yaml_scalar_event_initialize(
        &ev, NULL, NULL, (const yaml_char_t *)s, (int)strlen(s), quote ? 0 : 1,
        plain ? 0 : 1, plain ? YAML_PLAIN_SCALAR_STYLE : YAML_ANY_SCALAR_STYLE);
    yw_emit(w, ok, &ev);
}

void zb_yw_str(zb_yw *w, const char *s) { yw_scalar(w, s ? s : "", false); }

void zb_yw_int(zb_yw *w, long long v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", v);
    yw_scalar(w, buf, true);
}

void zb_yw_double(zb_yw *w, double v) {
    char buf[40];
    fmt_double(v, buf, sizeof buf);
    yw_scalar(w, buf, true);
}

void zb_yw_bool(zb_yw *w, bool v) { yw_scalar(w, v ? "true" : "false", true); }

void zb_yw_kstr(zb_yw *w, const char *k, const char *v) {
    zb_yw_str(w, k);
    zb_yw_str(w, v);
}

void zb_yw_kint(zb_yw *w, const char *k, long long v) {
    zb_yw_str(w, k);
    zb_yw_int(w, v);
}

void zb_yw_kdouble(zb_yw *w, const char *k, double v) {
    zb_yw_str(w, k);
    zb_yw_double(w, v);
}

void zb_yw_kbool(zb_yw *w, const char *k, bool v) {
    zb_yw_str(w, k);
    zb_yw_bool(w, v);
}
