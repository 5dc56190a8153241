/* test_yaml.c - the YAML layer (common/zb_yaml.c) and atomic files
 * (common/zb_afile.c): tree shape and 1-based marks, rejected YAML features,
 * getter conversions and their exact messages, did-you-mean, the writer's
 * round trip (including strings that look like numbers or bools), and that
 * failed writes leave the destination and no temporary behind. Expected
 * positions and messages below are counted by hand from the inputs. */
#include <check.h>
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/zb_afile.h"
#include "common/zb_yaml.h"

/* ---- helpers ---- */

static zb_ydoc load_ok(const char *text) {
    zb_ydoc d;
    zb_err e = {{0}};
    zb_status s = zb_ydoc_load_string("t.yaml", text, &d, &e);
    ck_assert_msg(s == ZB_OK, "load failed: %s", e.msg);
    return d;
}

/* Load must fail with exactly want (and ZB_EINPUT). */
static void load_fails(const char *text, const char *want) {
    zb_ydoc d;
    zb_err e = {{0}};
    zb_status s = zb_ydoc_load_string("t.yaml", text, &d, &e);
    ck_assert_int_eq(s, ZB_EINPUT);
    ck_assert_str_eq(e.msg, want);
    ck_assert_ptr_null(d.root);
}

/* A fresh directory for file tests; removed by rm_dir. */
static void make_dir(char *dir) {
    strcpy(dir, "/tmp/zb_test_yaml_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static int count_entries(const char *dir, const char *containing) {
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.' && strstr(e->d_name, containing)) n++;
    closedir(d);
    return n;
}

static void rm_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    char p[512];
    for (struct dirent *e; (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static char *read_text(const char *path) {
    static char buf[8192];
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* ---- tree and marks ---- */

START_TEST(tree_shape_and_marks) {
    const char *text =
        "a: 1\n"                 /* line 1 */
        "b:\n"                   /* line 2 */
        "  c: [x, 'y']\n"        /* line 3 */
        "  d:\n"                 /* line 4 */
        "    - 1\n"              /* line 5 */
        "    - \"two\"\n";       /* line 6 */
    zb_ydoc d = load_ok(text);
    const zb_ynode *r = d.root;
    ck_assert_int_eq(r->type, ZB_Y_MAP);
    ck_assert_int_eq(r->n, 2);
    ck_assert_str_eq(r->keys[0]->str, "a");
    ck_assert_str_eq(r->keys[1]->str, "b");
    ck_assert_int_eq(r->line, 1);
    ck_assert_int_eq(r->col, 1);
    const zb_ynode *a = zb_ymap_get(r, "a");
    ck_assert_int_eq(a->type, ZB_Y_SCALAR);
    ck_assert_str_eq(a->str, "1");
    ck_assert(!a->quoted);
    ck_assert_int_eq(a->line, 1);
    ck_assert_int_eq(a->col, 4);
    const zb_ynode *b = zb_ymap_get(r, "b");
    ck_assert_int_eq(b->type, ZB_Y_MAP);
    ck_assert_int_eq(b->line, 3);
    ck_assert_int_eq(b->col, 3);
    ck_assert_int_eq(r->keys[1]->line, 2);
    const zb_ynode *c = zb_ymap_get(b, "c");
    ck_assert_int_eq(c->type, ZB_Y_SEQ);
    ck_assert_int_eq(c->n, 2);
    ck_assert_int_eq(c->line, 3);
    ck_assert_int_eq(c->col, 6);
    ck_assert_str_eq(c->items[0]->str, "x");
    ck_assert(!c->items[0]->quoted);
    ck_assert_str_eq(c->items[1]->str, "y");
    ck_assert(c->items[1]->quoted);
    ck_assert_int_eq(c->items[1]->col, 10);
    const zb_ynode *dd = zb_ymap_get(b, "d");
    ck_assert_int_eq(dd->type, ZB_Y_SEQ);
    ck_assert_int_eq(dd->n, 2);
    ck_assert_int_eq(dd->items[0]->line, 5);
    ck_assert_int_eq(dd->items[0]->col, 7);
    ck_assert_str_eq(dd->items[1]->str, "two");
    ck_assert(dd->items[1]->quoted);
    ck_assert_ptr_null(zb_ymap_get(r, "c"));      /* not at this level */
    ck_assert_ptr_null(zb_ymap_get(c, "x"));      /* not a map */
    ck_assert_ptr_null(zb_ymap_get(NULL, "a"));
    zb_ydoc_free(&d);
    zb_ydoc_free(&d);   /* second free is harmless */
}
END_TEST

START_TEST(empty_documents) {
    zb_ydoc d = load_ok("");
    ck_assert_ptr_null(d.root);
    zb_ydoc_free(&d);
    d = load_ok("# only a comment\n\n");
    ck_assert_ptr_null(d.root);
    zb_ydoc_free(&d);
}
END_TEST

START_TEST(large_collections) {
    /* More children than one growth step and more text than one arena chunk. */
    char *text = malloc(200000);
    size_t n = 0;
    n += (size_t)sprintf(text + n, "big:\n");
    for (int i = 0; i < 5000; i++) n += (size_t)sprintf(text + n, "  k%d: [%d, %d]\n", i, i, -i);
    zb_ydoc d = load_ok(text);
    const zb_ynode *big = zb_ymap_get(d.root, "big");
    ck_assert_int_eq(big->n, 5000);
    ck_assert_str_eq(big->keys[4321]->str, "k4321");
    ck_assert_str_eq(big->items[4321]->items[1]->str, "-4321");
    ck_assert_int_eq(big->items[4999]->line, 5001);
    zb_ydoc_free(&d);
    free(text);
}
END_TEST

START_TEST(file_loading) {
    char dir[64], path[128];
    make_dir(dir);
    snprintf(path, sizeof path, "%s/m.yaml", dir);
    write_text(path, "x: 1\ny: [1, 2]\n");
    zb_ydoc d;
    zb_err e;
    ck_assert_int_eq(zb_ydoc_load(path, &d, &e), ZB_OK);
    ck_assert_str_eq(d.file, path);
    ck_assert_int_eq(zb_ymap_get(d.root, "y")->n, 2);
    zb_ydoc_free(&d);
    snprintf(path, sizeof path, "%s/missing.yaml", dir);
    ck_assert_int_eq(zb_ydoc_load(path, &d, &e), ZB_EINPUT); /* a missing input file is bad input */
    ck_assert_ptr_nonnull(strstr(e.msg, "No such file"));
    rm_dir(dir);
}
END_TEST

/* ---- rejected input ---- */

START_TEST(syntax_errors) {
    load_fails("a: 1: 2\n",
               "t.yaml:1:5: YAML syntax error: mapping values are not allowed in this context");
    load_fails("a:\n\tb: 1\n",
               "t.yaml:2:1: YAML syntax error: found character that cannot start any token");
    load_fails("a:\n  b: 1\n\tc: 2\n",
               "t.yaml:3:1: YAML syntax error: found a tab character that violates indentation");
    load_fails("a: [1, 2\n", "t.yaml:2:1: YAML syntax error: did not find expected ',' or ']'");
    /* Invalid UTF-8: a reader error, located from its byte offset. */
    load_fails("a: 1\nb: \xff\n", "t.yaml:2:4: YAML syntax error: invalid leading UTF-8 octet");
}
END_TEST

START_TEST(duplicate_keys) {
    load_fails("a: 1\nb: 2\na: 3\n", "t.yaml:3:1: duplicate key 'a'");
    load_fails("m:\n  x: 1\n  'x': 2\n", "t.yaml:3:3: duplicate key 'x'");
    load_fails("{p: 1, q: 2, p: 3}\n", "t.yaml:1:14: duplicate key 'p'");
    /* The same key in different mappings is fine. */
    zb_ydoc d = load_ok("a: {x: 1}\nb: {x: 2}\n");
    zb_ydoc_free(&d);
}
END_TEST

START_TEST(unsupported_features) {
    load_fails("a: &x 1\nb: 2\n", "t.yaml:1:4: YAML anchors ('&x') are not supported");
    load_fails("b: *x\n", "t.yaml:1:4: YAML aliases are not supported");
    load_fails("a: !!str 5\n",
               "t.yaml:1:4: YAML tags ('tag:yaml.org,2002:str') are not supported");
    load_fails("a: 1\n---\nb: 2\n", "t.yaml:2:1: multiple YAML documents are not supported");
    load_fails("? [a, b]\n: 1\n", "t.yaml:1:3: mapping keys must be plain scalars");
    load_fails("a: \"x\\0y\"\n", "t.yaml:1:4: NUL characters are not allowed in values");
    /* 70 nested flow sequences: deeper than the limit of 64. */
    char deep[200];
    memset(deep, '[', 70);
    memset(deep + 70, ']', 70);
    deep[140] = '\0';
    load_fails(deep, "t.yaml:1:66: YAML nesting is too deep");
}
END_TEST

/* ---- getters ---- */

/* Run fn on a one-key document "v: <value>" and compare the message. */
static zb_status get_int_from(const char *text, long long min, long long max, long long *out,
                              zb_err *e) {
    zb_ydoc d = load_ok(text);
    zb_status s = zb_yget_int(&d, d.root, "v", true, min, max, out, e);
    zb_ydoc_free(&d);
    return s;
}

static void int_fails(const char *text, long long min, long long max, const char *want) {
    long long v = 77;
    zb_err e;
    ck_assert_int_eq(get_int_from(text, min, max, &v, &e), ZB_EINPUT);
    ck_assert_str_eq(e.msg, want);
    ck_assert_int_eq(v, 77);   /* untouched on error */
}

START_TEST(get_int_values) {
    long long v = 0;
    zb_err e;
    ck_assert_int_eq(get_int_from("v: 12\n", 0, 100, &v, &e), ZB_OK);
    ck_assert_int_eq(v, 12);
    ck_assert_int_eq(get_int_from("v: -3\n", -10, 10, &v, &e), ZB_OK);
    ck_assert_int_eq(v, -3);
    ck_assert_int_eq(get_int_from("v: +5\n", 0, 10, &v, &e), ZB_OK);
    ck_assert_int_eq(v, 5);
    ck_assert_int_eq(get_int_from("v: 9223372036854775807\n", 0, LLONG_MAX, &v, &e), ZB_OK);
    ck_assert(v == LLONG_MAX);
}
END_TEST

START_TEST(get_int_errors) {
    int_fails("v: 1.5\n", 0, 9, "t.yaml:1:4: 'v' must be an integer, got '1.5'");
    int_fails("v: abc\n", 0, 9, "t.yaml:1:4: 'v' must be an integer, got 'abc'");
    int_fails("v: 1e3\n", 0, 9, "t.yaml:1:4: 'v' must be an integer, got '1e3'");
    int_fails("v: 0x10\n", 0, 99, "t.yaml:1:4: 'v' must be an integer, got '0x10'");
    int_fails("v: '12'\n", 0, 99, "t.yaml:1:4: 'v' must be an integer, got a quoted string '12'");
    int_fails("v: {a: 1}\n", 0, 9, "t.yaml:1:4: 'v' must be an integer, got a mapping");
    int_fails("v:\n  - 1\n", 0, 9, "t.yaml:2:3: 'v' must be an integer, got a sequence");
    int_fails("w: 1\nv:\n", 0, 9, "t.yaml:2:3: 'v' must be an integer, got nothing");
    int_fails("v: 0\n", 1, 9, "t.yaml:1:4: 'v' must be >= 1, got 0");
    int_fails("v: 10\n", 1, 9, "t.yaml:1:4: 'v' must be <= 9, got 10");
    int_fails("v: 99999999999999999999\n", 0, LLONG_MAX,
              "t.yaml:1:4: 'v' is out of range, got '99999999999999999999'");
}
END_TEST

START_TEST(get_missing_keys) {
    zb_ydoc d = load_ok("top: 1\nm:\n  x: 1\n  inner:\n    y: 2\n");
    zb_err e;
    long long v = 5;
    /* Optional and absent: untouched, OK. */
    ck_assert_int_eq(zb_yget_int(&d, d.root, "nope", false, 0, 9, &v, &e), ZB_OK);
    ck_assert_int_eq(v, 5);
    ck_assert_int_eq(zb_yget_int(&d, NULL, "nope", false, 0, 9, &v, &e), ZB_OK);
    /* Required and absent: at the mapping, which is named by its path. */
    ck_assert_int_eq(zb_yget_int(&d, d.root, "nope", true, 0, 9, &v, &e), ZB_EINPUT);
    ck_assert_str_eq(e.msg, "t.yaml:1:1: missing key 'nope' in the top level");
    const zb_ynode *m = zb_ymap_get(d.root, "m");
    ck_assert_int_eq(zb_yget_int(&d, m, "nope", true, 0, 9, &v, &e), ZB_EINPUT);
    ck_assert_str_eq(e.msg, "t.yaml:3:3: missing key 'nope' in 'm'");
    const zb_ynode *inner = zb_ymap_get(m, "inner");
    ck_assert_int_eq(zb_yget_int(&d, inner, "nope", true, 0, 9, &v, &e), ZB_EINPUT);
    ck_assert_str_eq(e.msg, "t.yaml:5:5: missing key 'nope' in 'm.inner'");
    /* A scalar where a mapping is needed. */
    ck_assert_int_eq(zb_yget_int(&d, zb_ymap_get(d.root, "top"), "x", true, 0, 9, &v, &e),
                     ZB_EINPUT);
    ck_assert_str_eq(e.msg, "t.yaml:1:6: 'top' must be a mapping, got '1'");
    zb_ydoc_free(&d);
}
END_TEST

static void double_ok(const char *text, double want) {
    zb_ydoc d = load_ok(text);
    double v = -1;
    zb_err e;
    ck_assert_int_eq(zb_yget_double(&d, d.root, "v", true, -1e300, 1e300, &v, &e), ZB_OK);
    ck_assert_msg(v == want, "%s: got %.17g want %.17g", text, v, want);
    zb_ydoc_free(&d);
}

static void double_fails(const char *text, double min, double max, const char *want) {
    zb_ydoc d = load_ok(text);
    double v = 7;
    zb_err e;
    ck_assert_int_eq(zb_yget_double(&d, d.root, "v", true, min, max, &v, &e), ZB_EINPUT);
    ck_assert_str_eq(e.msg, want);
    ck_assert(v == 7);
    zb_ydoc_free(&d);
}

START_TEST(get_double_values) {
    double_ok("v: 3\n", 3.0);
    double_ok("v: -2.5\n", -2.5);
    double_ok("v: 1e9\n", 1e9);
    double_ok("v: 3.0e-4\n", 3e-4);
    double_ok("v: .5\n", 0.5);
    double_ok("v: 2.\n", 2.0);
    double_ok("v: 1E+2\n", 100.0);
    double_ok("v: 0.1\n", 0.1);
    double_fails("v: abc\n", 0, 1, "t.yaml:1:4: 'v' must be a number, got 'abc'");
    double_fails("v: 1e\n", 0, 1, "t.yaml:1:4: 'v' must be a number, got '1e'");
    double_fails("v: .inf\n", 0, 1, "t.yaml:1:4: 'v' must be a number, got '.inf'");
    double_fails("v: nan\n", 0, 1, "t.yaml:1:4: 'v' must be a number, got 'nan'");
    double_fails("v: 0x1p3\n", 0, 1, "t.yaml:1:4: 'v' must be a number, got '0x1p3'");
    double_fails("v: \"0.5\"\n", 0, 1,
                 "t.yaml:1:4: 'v' must be a number, got a quoted string '0.5'");
    double_fails("v: [1]\n", 0, 1, "t.yaml:1:4: 'v' must be a number, got a sequence");
    double_fails("v: 1e999\n", 0, 1, "t.yaml:1:4: 'v' is out of range, got '1e999'");
    double_fails("v: -0.5\n", 0, 1, "t.yaml:1:4: 'v' must be >= 0, got -0.5");
    double_fails("v: 1.25\n", 0, 1, "t.yaml:1:4: 'v' must be <= 1, got 1.25");
    /* Bounds print exactly, not rounded to 6 digits. */
    double_fails("v: 1.0000001\n", 0, 1, "t.yaml:1:4: 'v' must be <= 1, got 1.0000001");
}
END_TEST

START_TEST(get_bool_str_enum) {
    zb_ydoc d = load_ok("t: true\nf: false\ny: yes\nq: 'true'\ns: hello world\n"
                        "e: ''\nn:\nm: {a: 1}\np: fp8\nk: 'bf16'\nlong: abcdefghij\n");
    zb_err e;
    bool b = false;
    ck_assert_int_eq(zb_yget_bool(&d, d.root, "t", true, &b, &e), ZB_OK);
    ck_assert(b);
    ck_assert_int_eq(zb_yget_bool(&d, d.root, "f", true, &b, &e), ZB_OK);
    ck_assert(!b);
    ck_assert_int_eq(zb_yget_bool(&d, d.root, "y", true, &b, &e), ZB_EINPUT);
    ck_assert_str_eq(e.msg, "t.yaml:3:4: 'y' must be true or false, got 'yes'");
    ck_assert_int_eq(zb_yget_bool(&d, d.root, "q", true, &b, &e), ZB_EINPUT);
    ck_assert_str_eq(e.msg, "t.yaml:4:4: 'q' must be true or false, got a quoted string 'true'");

    char s[11] = "unchanged";
    ck_assert_int_eq(zb_yget_str(&d, d.root, "s", true, s, sizeof s, &e), ZB_EINPUT);
    ck_assert_str_eq(e.msg, "t.yaml:5:4: 's' is too long (11 characters, at most 10)");
    ck_assert_int_eq(zb_yget_str(&d, d.root, "long", true, s, sizeof s, &e), ZB_OK);
    ck_assert_str_eq(s, "abcdefghij");
    ck_assert_int_eq(zb_yget_str(&d, d.root, "e", true, s, sizeof s, &e), ZB_OK);
    ck_assert_str_eq(s, "");
    ck_assert_int_eq(zb_yget_str(&d, d.root, "n", true, s, sizeof s, &e), ZB_EINPUT);
    ck_assert_str_eq(e.msg, "t.yaml:7:3: 'n' must be a string, got nothing");
    ck_assert_int_eq(zb_yget_str(&d, d.root, "m", true, s, sizeof s, &e), ZB_EINPUT);
    ck_assert_str_eq(e.msg, "t.yaml:8:4: 'm' must be a string, got a mapping");
    ck_assert_int_eq(zb_yget_str(&d, d.root, "t", true, s, sizeof s, &e), ZB_OK);
    ck_assert_str_eq(s, "true");   /* any scalar is a string */

    static const char *const prec[] = {"fp32", "bf16", NULL};
    int k = -1;
    ck_assert_int_eq(zb_yget_enum(&d, d.root, "p", true, prec, &k, &e), ZB_EINPUT);
    ck_assert_str_eq(e.msg, "t.yaml:9:4: 'p' must be one of fp32, bf16; got 'fp8'");
    ck_assert_int_eq(k, -1);
    ck_assert_int_eq(zb_yget_enum(&d, d.root, "k", true, prec, &k, &e), ZB_OK);
    ck_assert_int_eq(k, 1);
    ck_assert_int_eq(zb_yget_enum(&d, d.root, "m", true, prec, &k, &e), ZB_EINPUT);
    ck_assert_str_eq(e.msg, "t.yaml:8:4: 'm' must be one of fp32, bf16; got a mapping");
    zb_ydoc_free(&d);
}
END_TEST

START_TEST(scalar_items_and_expect) {
    zb_ydoc d = load_ok("xs: [4, 2.5, x]\n");
    const zb_ynode *xs = zb_ymap_get(d.root, "xs");
    zb_err e;
    ck_assert_int_eq(zb_ynode_expect(&d, xs, ZB_Y_SEQ, "'xs'", &e), ZB_OK);
    ck_assert_int_eq(zb_ynode_expect(&d, xs, ZB_Y_MAP, "'xs'", &e), ZB_EINPUT);
    ck_assert_str_eq(e.msg, "t.yaml:1:5: 'xs' must be a mapping, got a sequence");
    ck_assert_int_eq(zb_ynode_expect(&d, d.root, ZB_Y_SEQ, "the top level", &e), ZB_EINPUT);
    ck_assert_str_eq(e.msg, "t.yaml:1:1: the top level must be a sequence, got a mapping");
    long long i = 0;
    double x = 0;
    ck_assert_int_eq(zb_yscalar_int(&d, xs->items[0], "'xs' item", 0, 9, &i, &e), ZB_OK);
    ck_assert_int_eq(i, 4);
    ck_assert_int_eq(zb_yscalar_int(&d, xs->items[1], "'xs' item", 0, 9, &i, &e), ZB_EINPUT);
    ck_assert_str_eq(e.msg, "t.yaml:1:9: 'xs' item must be an integer, got '2.5'");
    ck_assert_int_eq(zb_yscalar_double(&d, xs->items[1], "'xs' item", 0, 9, &x, &e), ZB_OK);
    ck_assert(x == 2.5);
    ck_assert_int_eq(zb_yscalar_double(&d, xs->items[2], "'xs' item", 0, 9, &x, &e),
                     ZB_EINPUT);
    ck_assert_str_eq(e.msg, "t.yaml:1:14: 'xs' item must be a number, got 'x'");
    zb_ydoc_free(&d);
    d = load_ok("");
    ck_assert_int_eq(zb_ynode_expect(&d, d.root, ZB_Y_MAP, "the top level", &e), ZB_EINPUT);
    ck_assert_str_eq(e.msg, "t.yaml:1:1: the top level must be a mapping, got an empty document");
    zb_ydoc_free(&d);
}
END_TEST

/* ---- unknown keys ---- */

static const char *check_key(const char *key, const char *const *allowed) {
    static zb_err e;
    char text[128];
    snprintf(text, sizeof text, "%s: 1\n", key);
    zb_ydoc d = load_ok(text);
    zb_status s = zb_ymap_check_keys(&d, d.root, "'m'", allowed, &e);
    zb_ydoc_free(&d);
    return s == ZB_OK ? NULL : e.msg;
}

START_TEST(did_you_mean) {
    static const char *const keys[] = {"layers", "hidden", "heads", "seq_len",
                                       "sequence_parallel", "abcdefghijkl", NULL};
    ck_assert_ptr_null(check_key("hidden", keys));
    ck_assert_str_eq(check_key("hiden", keys),
                     "t.yaml:1:1: unknown key 'hiden' in 'm' (did you mean 'hidden'?)");
    ck_assert_str_eq(check_key("Layers", keys),   /* substitution */
                     "t.yaml:1:1: unknown key 'Layers' in 'm' (did you mean 'layers'?)");
    ck_assert_str_eq(check_key("haeds", keys),    /* transposition = 2 edits */
                     "t.yaml:1:1: unknown key 'haeds' in 'm' (did you mean 'heads'?)");
    ck_assert_str_eq(check_key("sequence_paralel", keys),
                     "t.yaml:1:1: unknown key 'sequence_paralel' in 'm' "
                     "(did you mean 'sequence_parallel'?)");
    /* 12 characters: up to 4 edits suggest, 5 do not. */
    ck_assert_str_eq(check_key("abcdefghWXYZ", keys),
                     "t.yaml:1:1: unknown key 'abcdefghWXYZ' in 'm' "
                     "(did you mean 'abcdefghijkl'?)");
    ck_assert_str_eq(check_key("abcdefgVWXYZ", keys),
                     "t.yaml:1:1: unknown key 'abcdefgVWXYZ' in 'm' (known keys: layers, "
                     "hidden, heads, seq_len, sequence_parallel, abcdefghijkl)");
    /* 'seq' is 4 edits from seq_len: too far for a 3-letter word. */
    ck_assert_str_eq(check_key("seq", keys),
                     "t.yaml:1:1: unknown key 'seq' in 'm' (known keys: layers, hidden, "
                     "heads, seq_len, sequence_parallel, abcdefghijkl)");
}
END_TEST

START_TEST(unknown_key_position) {
    static const char *const keys[] = {"a", "b", NULL};
    zb_ydoc d = load_ok("a: 1\nsub:\n  b: 2\n  zzz: 3\n");
    zb_err e;
    const zb_ynode *sub = zb_ymap_get(d.root, "sub");
    ck_assert_int_eq(zb_ymap_check_keys(&d, sub, "'sub'", keys, &e), ZB_EINPUT);
    ck_assert_str_eq(e.msg, "t.yaml:4:3: unknown key 'zzz' in 'sub' (known keys: a, b)");
    zb_ydoc_free(&d);
}
END_TEST

/* ---- writer ---- */

START_TEST(writer_round_trip) {
    char dir[64], path[128];
    make_dir(dir);
    snprintf(path, sizeof path, "%s/out.yaml", dir);
    static const char *const strs[] = {"true", "1e3",  "",     "a: b", "hello", "~",
                                       "null", "12",   " lead", "x\ny", "- item", "#c",
                                       "no",   "0x1F", "-.inf", "it's", "\"q\"", NULL};
    static const double dbls[] = {0.1, 1e-300, 3e-4, 1.0 / 3, -0.0, 1e308, 5e-324, 989e12,
                                  -2.5, 1e9};
    const int nd = (int)(sizeof dbls / sizeof dbls[0]);
    zb_yw *w;
    zb_err e;
    ck_assert_int_eq(zb_yw_open(path, &w, &e), ZB_OK);
    zb_yw_map_begin(w, false);
    char key[16];
    for (int i = 0; strs[i]; i++) {
        snprintf(key, sizeof key, "s%d", i);
        zb_yw_kstr(w, key, strs[i]);
    }
    for (int i = 0; i < nd; i++) {
        snprintf(key, sizeof key, "d%d", i);
        zb_yw_kdouble(w, key, dbls[i]);
    }
    zb_yw_kint(w, "imin", LLONG_MIN);
    zb_yw_kint(w, "imax", LLONG_MAX);
    zb_yw_kbool(w, "bt", true);
    zb_yw_kbool(w, "bf", false);
    zb_yw_str(w, "flow");
    zb_yw_seq_begin(w, true);
    for (int i = 1; i <= 3; i++) zb_yw_int(w, i);
    zb_yw_seq_end(w);
    zb_yw_str(w, "fmap");
    zb_yw_map_begin(w, true);
    zb_yw_kint(w, "x", 1);
    zb_yw_kstr(w, "y", "true");
    zb_yw_map_end(w);
    zb_yw_str(w, "block");
    zb_yw_seq_begin(w, false);
    zb_yw_map_begin(w, false);
    zb_yw_kdouble(w, "z", 0.5);
    zb_yw_map_end(w);
    zb_yw_seq_end(w);
    zb_yw_map_end(w);
    ck_assert_int_eq(zb_yw_close(w, true, &e), ZB_OK);
    ck_assert_int_eq(count_entries(dir, ".tmp."), 0);

    const char *text = read_text(path);
    ck_assert_ptr_nonnull(strstr(text, "flow: [1, 2, 3]\n"));   /* one line */
    ck_assert_ptr_nonnull(strstr(text, "fmap: {x: 1, y: 'true'}\n"));
    ck_assert_ptr_nonnull(strstr(text, "s4: hello\n"));          /* plain when safe */
    ck_assert_ptr_nonnull(strstr(text, "d0: 0.1\n"));            /* shortest exact text */
    ck_assert_ptr_null(strstr(text, "---"));

    zb_ydoc d;
    ck_assert_int_eq(zb_ydoc_load(path, &d, &e), ZB_OK);
    char s[64];
    for (int i = 0; strs[i]; i++) {
        snprintf(key, sizeof key, "s%d", i);
        ck_assert_int_eq(zb_yget_str(&d, d.root, key, true, s, sizeof s, &e), ZB_OK);
        ck_assert_str_eq(s, strs[i]);
    }
    /* Strings that would read as another type come back quoted. */
    ck_assert(zb_ymap_get(d.root, "s0")->quoted);   /* true */
    ck_assert(zb_ymap_get(d.root, "s1")->quoted);   /* 1e3 */
    ck_assert(zb_ymap_get(d.root, "s2")->quoted);   /* "" */
    ck_assert(zb_ymap_get(d.root, "s11")->quoted);  /* 12 */
    ck_assert(!zb_ymap_get(d.root, "s4")->quoted);  /* hello */
    for (int i = 0; i < nd; i++) {
        snprintf(key, sizeof key, "d%d", i);
        double v = 99;
        ck_assert_int_eq(zb_yget_double(&d, d.root, key, true, -1e308, 1e308, &v, &e), ZB_OK);
        ck_assert_msg(memcmp(&v, &dbls[i], sizeof v) == 0, "%s: %.17g != %.17g", key, v,
                      dbls[i]);
    }
    long long i = 0;
    ck_assert_int_eq(zb_yget_int(&d, d.root, "imin", true, LLONG_MIN, LLONG_MAX, &i, &e), ZB_OK);
    ck_assert(i == LLONG_MIN);
    ck_assert_int_eq(zb_yget_int(&d, d.root, "imax", true, LLONG_MIN, LLONG_MAX, &i, &e), ZB_OK);
    ck_assert(i == LLONG_MAX);
    bool b = false;
    ck_assert_int_eq(zb_yget_bool(&d, d.root, "bt", true, &b, &e), ZB_OK);
    ck_assert(b);
    ck_assert_int_eq(zb_yget_bool(&d, d.root, "bf", true, &b, &e), ZB_OK);
    ck_assert(!b);
    const zb_ynode *block = zb_ymap_get(d.root, "block");
    ck_assert_int_eq(block->type, ZB_Y_SEQ);
    double z = 0;
    ck_assert_int_eq(zb_yget_double(&d, block->items[0], "z", true, 0, 1, &z, &e), ZB_OK);
    ck_assert(z == 0.5);
    zb_ydoc_free(&d);
    rm_dir(dir);
}
END_TEST

START_TEST(writer_failures_leave_destination) {
    char dir[64], path[128];
    make_dir(dir);
    snprintf(path, sizeof path, "%s/plan.yaml", dir);
    write_text(path, "old: 1\n");
    zb_yw *w;
    zb_err e;

    /* The caller gives up: destination untouched, no temporary, err untouched. */
    ck_assert_int_eq(zb_yw_open(path, &w, &e), ZB_OK);
    zb_yw_map_begin(w, false);
    zb_yw_kint(w, "new", 2);
    strcpy(e.msg, "caller's error");
    ck_assert_int_eq(zb_yw_close(w, false, &e), ZB_OK);
    ck_assert_str_eq(e.msg, "caller's error");
    ck_assert_str_eq(read_text(path), "old: 1\n");
    ck_assert_int_eq(count_entries(dir, ".tmp."), 0);

    /* Emitter misuse (an end without a begin) is reported at close. */
    ck_assert_int_eq(zb_yw_open(path, &w, &e), ZB_OK);
    zb_yw_map_end(w);
    zb_yw_kint(w, "ignored", 1);
    ck_assert_int_eq(zb_yw_close(w, true, &e), ZB_ERUNTIME);
    ck_assert_ptr_nonnull(strstr(e.msg, "YAML emitter error writing"));
    ck_assert_str_eq(read_text(path), "old: 1\n");
    ck_assert_int_eq(count_entries(dir, ".tmp."), 0);

    /* A folder that does not exist. */
    snprintf(path, sizeof path, "%s/no/such/dir.yaml", dir);
    ck_assert_int_eq(zb_yw_open(path, &w, &e), ZB_EIO);
    ck_assert_ptr_null(w);
    ck_assert_ptr_nonnull(strstr(e.msg, "cannot create"));
    ck_assert_ptr_nonnull(strstr(e.msg, "No such file or directory"));
    ck_assert_int_eq(zb_yw_close(NULL, true, &e), ZB_OK);
    rm_dir(dir);
}
END_TEST

/* ---- atomic files ---- */

START_TEST(afile_commit_and_abort) {
    char dir[64], path[128], tmp[160];
    make_dir(dir);
    snprintf(path, sizeof path, "%s/f.txt", dir);
    zb_afile a;
    zb_err e;

    ck_assert_int_eq(zb_afile_open(&a, path, &e), ZB_OK);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    ck_assert_str_eq(a.tmp, tmp);
    fputs("first\n", a.f);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), -1);   /* nothing visible before close */
    ck_assert_int_eq(zb_afile_close(&a, true, &e), ZB_OK);
    ck_assert_str_eq(read_text(path), "first\n");
    ck_assert_int_eq(count_entries(dir, ".tmp."), 0);
    ck_assert_int_eq(zb_afile_close(&a, true, &e), ZB_OK);   /* closing twice is harmless */

    ck_assert_int_eq(zb_afile_open(&a, path, &e), ZB_OK);
    fputs("second\n", a.f);
    ck_assert_int_eq(zb_afile_close(&a, false, &e), ZB_OK);
    ck_assert_str_eq(read_text(path), "first\n");
    ck_assert_int_eq(count_entries(dir, ".tmp."), 0);

    ck_assert_int_eq(zb_afile_open(&a, path, &e), ZB_OK);
    fputs("third\n", a.f);
    ck_assert_int_eq(zb_afile_close(&a, true, &e), ZB_OK);
    ck_assert_str_eq(read_text(path), "third\n");

    zb_afile zero;
    memset(&zero, 0, sizeof zero);
    ck_assert_int_eq(zb_afile_close(&zero, true, &e), ZB_OK);
    rm_dir(dir);
}
END_TEST

START_TEST(afile_errors) {
    zb_afile a;
    zb_err e;
    ck_assert_int_eq(zb_afile_open(&a, "/nonexistent_zb_dir/x.txt", &e), ZB_EIO);
    ck_assert_ptr_nonnull(strstr(e.msg, "cannot create '/nonexistent_zb_dir/x.txt': "));
    ck_assert_ptr_nonnull(strstr(e.msg, "No such file or directory"));
    ck_assert_int_eq(zb_afile_close(&a, true, &e), ZB_OK);   /* nothing open */
    char longp[1200];
    memset(longp, 'a', sizeof longp - 1);
    longp[sizeof longp - 1] = '\0';
    ck_assert_int_eq(zb_afile_open(&a, longp, &e), ZB_EIO);
    ck_assert_ptr_nonnull(strstr(e.msg, "path too long"));
    ck_assert_int_eq(zb_afile_open(&a, "", &e), ZB_EIO);
}
END_TEST

int main(void) {
    Suite *s = suite_create("yaml");
    TCase *t = tcase_create("read");
    tcase_add_test(t, tree_shape_and_marks);
    tcase_add_test(t, empty_documents);
    tcase_add_test(t, large_collections);
    tcase_add_test(t, file_loading);
    tcase_add_test(t, syntax_errors);
    tcase_add_test(t, duplicate_keys);
    tcase_add_test(t, unsupported_features);
    suite_add_tcase(s, t);
    t = tcase_create("getters");
    tcase_add_test(t, get_int_values);
    tcase_add_test(t, get_int_errors);
    tcase_add_test(t, get_missing_keys);
    tcase_add_test(t, get_double_values);
    tcase_add_test(t, get_bool_str_enum);
    tcase_add_test(t, scalar_items_and_expect);
    tcase_add_test(t, did_you_mean);
    tcase_add_test(t, unknown_key_position);
    suite_add_tcase(s, t);
    t = tcase_create("write");
    tcase_add_test(t, writer_round_trip);
    tcase_add_test(t, writer_failures_leave_destination);
    tcase_add_test(t, afile_commit_and_abort);
    tcase_add_test(t, afile_errors);
    suite_add_tcase(s, t);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
