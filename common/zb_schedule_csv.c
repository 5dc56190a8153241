/* zb_schedule_csv.c - see zb_schedule_csv.h. */
#include "common/zb_schedule_csv.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/zb_afile.h"

#define MAX_STAGE 65535

typedef struct {
    int rank, stage, mb, line, col;
    zb_pass pass;
    unsigned flags;  /* ZB_ACT_OVERLAP: the F of an OVERLAP_F_B cell */
} cell;

typedef struct {
    cell *c;
    size_t n, cap;
} cells;

static zb_status cells_push(cells *cs, cell c, zb_err *err) {
    if (cs->n == cs->cap) {
        size_t nc = cs->cap ? 2 * cs->cap : 256;
        cell *q = realloc(cs->c, nc * sizeof *q);
        if (!q) return zb_fail(err, ZB_ENOMEM, "schedule csv: out of memory");
        cs->c = q, cs->cap = nc;
    }
    cs->c[cs->n++] = c;
    return ZB_OK;
}

static int is_blank(char ch) { return ch == ' ' || ch == '\t' || ch == '\r'; }

/* Decimal digits [s, e) into *v (at most max); false if none or too big. */
static int digits(const char *s, const char *e, long max, long *v) {
    if (s == e) return 0;
    *v = 0;
    for (; s < e; s++) {
        if (*s < '0' || *s > '9') return 0;
        *v = *v * 10 + (*s - '0');
        if (*v > max) return 0;
    }
    return 1;
}

/* STAGE TYPE MB in [s, e) (blank space around it skipped) into *c (its
 * rank, line and col set by the caller); false if it is not one. */
static int parse_action(const char *s, const char *e, cell *c) {
    while (s < e && is_blank(*s)) s++;
    while (e > s && is_blank(e[-1])) e--;
    const char *t = s;
    while (t < e && *t >= '0' && *t <= '9') t++;
    long stage, mb;
    static const char types[] = "FIWB";
    static const zb_pass pass[] = {ZB_F, ZB_B, ZB_W, ZB_BW};
    const char *k = t < e && *t ? strchr(types, *t) : NULL;
    if (!digits(s, t, MAX_STAGE, &stage) || !k || !digits(t + 1, e, (1L << 20) - 1, &mb))
        return 0;
    c->stage = (int)stage, c->mb = (int)mb, c->pass = pass[k - types];
    return 1;
}

static const char overlap_tag[] = ")OVERLAP_F_B";

/* An overlapped F&B cell [s, e), "(0F3;3B1)OVERLAP_F_B": an F, then an I
 * or B (zb's B or BW), pushed as the F (flagged) and the backward. */
static zb_status parse_overlap(const char *s, const char *e, const char *name,
                               cell c, cells *cs, zb_err *err) {
    size_t tl = sizeof overlap_tag - 1;
    const char *semi = memchr(s, ';', (size_t)(e - s));
    cell f = c, b = c;
    bool ok = (size_t)(e - s) > tl + 1 && memcmp(e - tl, overlap_tag, tl) == 0 &&
              semi && semi < e - tl && parse_action(s + 1, semi, &f) &&
              parse_action(semi + 1, e - tl, &b) && f.pass == ZB_F &&
              (b.pass == ZB_B || b.pass == ZB_BW);
    if (!ok)
        return zb_fail_at(err, name, c.line, c.col, "bad overlapped cell "
                          "'%.*s': expected (STAGE F MB;STAGE I|B MB)OVERLAP_F_B, "
                          "e.g. (0F3;3B1)OVERLAP_F_B",
                          (int)(e - s > 60 ? 60 : e - s), s);
    f.flags = ZB_ACT_OVERLAP;
    ZB_TRY(cells_push(cs, f, err));
    return cells_push(cs, b, err);
}

/* One cell [s, e) of row `rank` (line, col): empty, STAGE TYPE MB, or an
 * overlapped F&B cell. */
static zb_status parse_cell(const char *s, const char *e, const char *name,
                            int rank, int line, int col, cells *cs,
                            zb_err *err) {
    while (s < e && is_blank(*s)) s++, col++;
    while (e > s && is_blank(e[-1])) e--;
    if (s == e) return ZB_OK; /* an idle step */
    cell c = {rank, 0, 0, line, col, ZB_F, 0};
    if (*s == '(') return parse_overlap(s, e, name, c, cs, err);
    if (!parse_action(s, e, &c))
        return zb_fail_at(err, name, line, col, "bad action '%.*s': expected "
                          "STAGE TYPE MICROBATCH with TYPE F, I, W or B (e.g. "
                          "1I0; stage <= %d, compute actions only)",
                          (int)(e - s > 40 ? 40 : e - s), s, MAX_STAGE);
    return cells_push(cs, c, err);
}

/* Split text into rows and cells. */
static zb_status parse_rows(const char *text, size_t len, const char *name,
                            cells *cs, int *rows, zb_err *err) {
    const char *p = text, *end = text + len;
    int line = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        line++;
        if (memchr(p, '\0', (size_t)(le - p)))
            return zb_fail_at(err, name, line, 0, "NUL byte: not a text file");
        for (const char *c = p; c <= le; c++) {
            const char *ce = memchr(c, ',', (size_t)(le - c));
            if (!ce) ce = le;
            ZB_TRY(parse_cell(c, ce, name, line - 1, line, (int)(c - p) + 1, cs, err));
            c = ce;
        }
        p = nl ? nl + 1 : end;
    }
    *rows = line;
    if (line == 0) return zb_fail_at(err, name, 0, 0, "empty file: no rank rows");
    return ZB_OK;
}

static int loop_ok(const cell *c, int p) { return c->stage % p == c->rank; }
static int v_ok(const cell *c, int p) {
    return c->stage == c->rank || c->stage == 2 * p - 1 - c->rank;
}

/* p ranks, n stages: LOOP, else V (v = 2), else an error at the first
 * stage neither places. */
static zb_status placement(const cells *cs, int p, int n, const char *name,
                           zb_placement *pl, zb_err *err) {
    if (n % p != 0)
        return zb_fail_at(err, name, 0, 0, "%d stages (largest stage index "
                          "%d) do not divide evenly over %d ranks (rows)",
                          n, n - 1, p);
    if (n / p > 255)
        return zb_fail_at(err, name, 0, 0, "%d stages per rank: at most 255",
                          n / p);
    size_t bad_loop = cs->n, bad_v = cs->n;
    for (size_t i = 0; i < cs->n; i++) {
        if (bad_loop == cs->n && !loop_ok(&cs->c[i], p)) bad_loop = i;
        if (bad_v == cs->n && !v_ok(&cs->c[i], p)) bad_v = i;
    }
    if (bad_loop == cs->n) {
        *pl = ZB_PLACE_LOOP;
        return ZB_OK;
    }
    if (n == 2 * p && bad_v == cs->n) {
        *pl = ZB_PLACE_V;
        return ZB_OK;
    }
    const cell *c = &cs->c[n == 2 * p ? bad_v : bad_loop];
    return zb_fail_at(err, name, c->line, c->col, "stage %d on rank %d: "
                      "neither the LOOP placement (stage chunk*%d + rank) "
                      "nor the V placement (stages rank and %d - rank)",
                      c->stage, c->rank, p, 2 * p - 1);
}

zb_status zb_sched_csv_parse(const char *text, size_t len, const char *name,
                             zb_schedule *out, zb_err *err) {
    memset(out, 0, sizeof *out);
    cells cs = {0};
    int p = 0, n = 0, m = 0;
    zb_placement pl = ZB_PLACE_LOOP;
    zb_status st = parse_rows(text, len, name, &cs, &p, err);
    for (size_t i = 0; st == ZB_OK && i < cs.n; i++) {
        if (cs.c[i].stage + 1 > n) n = cs.c[i].stage + 1;
        if (cs.c[i].mb + 1 > m) m = cs.c[i].mb + 1;
    }
    if (st == ZB_OK && cs.n == 0)
        st = zb_fail_at(err, name, 0, 0, "no actions in %d rows", p);
    if (st == ZB_OK) st = placement(&cs, p, n, name, &pl, err);
    if (st == ZB_OK)
        st = zb_schedule_init(out, "import", p, m, n / p, pl, 0, err);
    for (size_t i = 0; st == ZB_OK && i < cs.n; i++) {
        const cell *c = &cs.c[i];
        int chunk = pl == ZB_PLACE_LOOP ? c->stage / p : c->stage >= p;
        st = zb_schedule_push(out, c->rank, c->pass, c->mb, chunk, err);
        if (st == ZB_OK) out->acts[c->rank][out->len[c->rank] - 1].flags = (uint16_t)c->flags;
    }
    free(cs.c);
    if (st != ZB_OK) zb_schedule_free(out);
    return st;
}

zb_status zb_sched_csv_read(const char *path, zb_schedule *out, zb_err *err) {
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) return zb_fail(err, ZB_EINPUT, "%s: %s", path, strerror(errno));
    char *buf = malloc(ZB_SCHED_CSV_MAX_BYTES + 1);
    if (!buf) {
        fclose(f);
        return zb_fail(err, ZB_ENOMEM, "%s: out of memory", path);
    }
    size_t len = fread(buf, 1, ZB_SCHED_CSV_MAX_BYTES + 1, f);
    zb_status st = ZB_OK;
    if (ferror(f))
        st = zb_fail(err, ZB_EINPUT, "%s: read error: %s", path, strerror(errno));
    else if (len > ZB_SCHED_CSV_MAX_BYTES)
        st = zb_fail(err, ZB_EINPUT, "%s: larger than %u bytes", path,
                     ZB_SCHED_CSV_MAX_BYTES);
    fclose(f);
    if (st == ZB_OK) st = zb_sched_csv_parse(buf, len, path, out, err);
    free(buf);
    return st;
}

static bool has_vocab(const zb_schedule *s) {
    for (int r = 0; r < s->p && !s->vocab; r++)
        for (int i = 0; i < s->len[r]; i++)
            if (s->acts[r][i].pass == ZB_S || s->acts[r][i].pass == ZB_T) return true;
    return s->vocab != 0;
}

static char type_letter(zb_pass k) {
    return k == ZB_F ? 'F' : k == ZB_B ? 'I' : k == ZB_W ? 'W' : 'B';
}

zb_status zb_sched_csv_write(const zb_schedule *s, const char *path,
                             zb_err *err) {
    if (has_vocab(s))
        return zb_fail(err, ZB_EINPUT, "%s: the CSV schedule format has no "
                       "vocabulary passes (S, T); write the plan instead", path);
    zb_afile a;
    ZB_TRY(zb_afile_open(&a, path, err));
    int ok = 1;
    for (int r = 0; r < s->p && ok; r++) {
        for (int i = 0; i < s->len[r] && ok; i++) {
            const zb_action *x = &s->acts[r][i];
            bool pair = zb_action_overlaps(x) && i + 1 < s->len[r];
            ok = fprintf(a.f, "%s%s%d%c%d", i ? "," : "", pair ? "(" : "",
                         zb_vstage(s, r, x->chunk), type_letter((zb_pass)x->pass),
                         (int)x->mb) > 0;
            if (ok && pair) {
                x = &s->acts[r][++i];
                ok = fprintf(a.f, ";%d%c%d%s", zb_vstage(s, r, x->chunk),
                             type_letter((zb_pass)x->pass), (int)x->mb,
                             overlap_tag) > 0;
            }
        }
        if (ok) ok = fputs("\r\n", a.f) >= 0;
    }
    if (!ok) {
        zb_afile_close(&a, false, NULL);
        return zb_fail(err, ZB_EIO, "%s: write failed: %s", path, strerror(errno));
    }
    return zb_afile_close(&a, true, err);
}
