/* cmp_diff.c - see cmp_diff.h. */
#include "compare/cmp_diff.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/zb_plan.h"
#include "common/zb_yaml.h"

typedef struct {
    FILE *out;
    int n;
} differ;

/* A node in a few words: a scalar's text, a flow list of scalars up to
 * about 60 characters, or what kind of node it is. */
static void show(const zb_ynode *x, char *buf, size_t cap) {
    if (!x) {
        snprintf(buf, cap, "(absent)");
    } else if (x->type == ZB_Y_SCALAR) {
        snprintf(buf, cap, "%s", x->str);
    } else if (x->type == ZB_Y_MAP) {
        snprintf(buf, cap, "(a mapping of %d keys)", x->n);
    } else {
        size_t at = (size_t)snprintf(buf, cap, "[");
        for (int i = 0; i < x->n && at < cap; i++) {
            const zb_ynode *it = x->items[i];
            if (at > 60 || it->type != ZB_Y_SCALAR) {
                at += (size_t)snprintf(buf + at, cap - at, "%s... %d items", i ? ", " : "", x->n);
                break;
            }
            at += (size_t)snprintf(buf + at, cap - at, "%s%s", i ? ", " : "", it->str);
        }
        if (at < cap) snprintf(buf + at, cap - at, "]");
    }
}

static bool number(const char *s, double *v) {
    char *end;
    *v = strtod(s, &end);
    return end != s && *end == '\0' && isfinite(*v);
}

static void line(differ *d, const char *path, const zb_ynode *a, const zb_ynode *b) {
    char sa[160], sb[160], rel[32] = "";
    show(a, sa, sizeof sa);
    show(b, sb, sizeof sb);
    double va, vb;
    if (a && b && a->type == ZB_Y_SCALAR && b->type == ZB_Y_SCALAR &&
        number(a->str, &va) && number(b->str, &vb) && va != 0)
        snprintf(rel, sizeof rel, " (%+.1f%%)", 100 * (vb - va) / fabs(va));
    fprintf(d->out, "%s: %s -> %s%s\n", path, sa, sb, rel);
    d->n++;
}

static bool scalars_only(const zb_ynode *x) {
    for (int i = 0; i < x->n; i++)
        if (x->items[i]->type != ZB_Y_SCALAR) return false;
    return true;
}

static void walk(differ *d, const char *path, const zb_ynode *a, const zb_ynode *b);

/* Two lists of scalars (a rank's actions): lengths and first difference. */
static void list_diff(differ *d, const char *path, const zb_ynode *a, const zb_ynode *b) {
    int k = 0;
    while (k < a->n && k < b->n && !strcmp(a->items[k]->str, b->items[k]->str)) k++;
    if (k == a->n && k == b->n) return;
    fprintf(d->out, "%s: %d -> %d items, first difference at %d: %s -> %s\n", path,
            a->n, b->n, k, k < a->n ? a->items[k]->str : "(end)",
            k < b->n ? b->items[k]->str : "(end)");
    d->n++;
}

static void map_diff(differ *d, const char *path, const zb_ynode *a, const zb_ynode *b) {
    char sub[512];
    for (int i = 0; i < a->n; i++) {
        snprintf(sub, sizeof sub, "%s%s%s", path, path[0] ? "." : "", a->keys[i]->str);
        walk(d, sub, a->items[i], zb_ymap_get(b, a->keys[i]->str));
    }
    for (int i = 0; i < b->n; i++)
        if (!zb_ymap_get(a, b->keys[i]->str)) {
            snprintf(sub, sizeof sub, "%s%s%s", path, path[0] ? "." : "", b->keys[i]->str);
            line(d, sub, NULL, b->items[i]);
        }
}

static void walk(differ *d, const char *path, const zb_ynode *a, const zb_ynode *b) {
    if (!a || !b || a->type != b->type) {
        line(d, path, a, b);
    } else if (a->type == ZB_Y_SCALAR) {
        if (strcmp(a->str, b->str)) line(d, path, a, b);
    } else if (a->type == ZB_Y_MAP) {
        map_diff(d, path, a, b);
    } else if (scalars_only(a) && scalars_only(b)) {
        list_diff(d, path, a, b);
    } else {
        if (a->n != b->n) {
            fprintf(d->out, "%s: %d -> %d items\n", path, a->n, b->n);
            d->n++;
        }
        char sub[512];
        for (int i = 0; i < a->n && i < b->n; i++) {
            snprintf(sub, sizeof sub, "%s[%d]", path, i);
            walk(d, sub, a->items[i], b->items[i]);
        }
    }
}

/* The file must be a plan: zb_plan_read's verdict, the plan itself unused. */
static zb_status check_plan(const char *path, zb_err *err) {
    zb_plan p;
    ZB_TRY(zb_plan_read(path, &p, err));
    zb_plan_free(&p);
    return ZB_OK;
}

zb_status zb_cmp_diff(const char *a, const char *b, FILE *out, int *n_diff,
                      zb_err *err) {
    char ha[17], hb[17];
    ZB_TRY(check_plan(a, err));
    ZB_TRY(check_plan(b, err));
    ZB_TRY(zb_plan_file_hash(a, ha, err));
    ZB_TRY(zb_plan_file_hash(b, hb, err));
    zb_ydoc da, db;
    ZB_TRY(zb_ydoc_load(a, &da, err));
    zb_status st = zb_ydoc_load(b, &db, err);
    if (st != ZB_OK) {
        zb_ydoc_free(&da);
        return st;
    }
    fprintf(out, "plans: %s (content hash %s) -> %s (content hash %s)\n", a, ha, b, hb);
    differ d = {out, 0};
    walk(&d, "", da.root, db.root);
    if (d.n) fprintf(out, "%d difference(s)\n", d.n);
    else fprintf(out, "no differences\n");
    *n_diff = d.n;
    zb_ydoc_free(&da);
    zb_ydoc_free(&db);
    return ZB_OK;
}
