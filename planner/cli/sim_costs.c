/* sim_costs.c - see cli/sim_costs.h. */
#include "planner/cli/sim_costs.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/zb_files.h"

#define MAX_ROWS 65536
#define MAX_VALUE 1e30

static const char *const field[8] = {"F", "B", "W", "comm", "mem_f", "mem_w",
                                     "S", "T"};

/* One data line into vals[8]: 6 numbers, or 8 with S and T; *ncols says
 * which. */
static zb_status parse_line(char *s, const char *path, int line, double *vals,
                            int *ncols, zb_err *err) {
    int n = 6;
    for (int k = 0; k < n; k++) {
        char *end;
        errno = 0;
        double x = strtod(s, &end);
        if (end == s || errno)
            return zb_fail_at(err, path, line, 0, "%s: expected a number "
                              "(F, B, W, comm, mem_f, mem_w)", field[k]);
        if (!isfinite(x) || x < 0 || x > MAX_VALUE)
            return zb_fail_at(err, path, line, 0, "%s = %g: must be finite, "
                              ">= 0 and <= %g", field[k], x, MAX_VALUE);
        vals[k] = x;
        while (*end == ' ' || *end == '\t' || *end == '\r') end++;
        if (k == 5 && *end == ',') n = 8; /* the vocabulary passes' S, T */
        if (k < n - 1 && *end != ',')
            return zb_fail_at(err, path, line, 0, "expected %d comma-separated "
                              "numbers (F, B, W, comm, mem_f, mem_w%s), got %d",
                              n, n == 8 ? ", S, T" : "", k + 1);
        if (k == n - 1 && *end != '\0' && *end != '\n')
            return zb_fail_at(err, path, line, 0, "more than 8 numbers "
                              "(F, B, W, comm, mem_f, mem_w, S, T)");
        s = end + 1;
    }
    for (int k = n; k < 8; k++) vals[k] = 0;
    *ncols = n;
    return ZB_OK;
}

/* Every line has as many numbers as the first, and the S, T columns are
 * the same on every line (each rank holds an equal vocabulary shard). */
static zb_status same_columns(zb_sim_costs_file *f, const double *row,
                              int ncols, const char *path, int line,
                              zb_err *err) {
    if (f->n == 0) f->ncols = ncols;
    if (ncols != f->ncols)
        return zb_fail_at(err, path, line, 0, "%d numbers, the first line has "
                          "%d (S, T on every line or on none)", ncols, f->ncols);
    if (ncols == 8 && f->n > 0 && (row[6] != f->v[6] || row[7] != f->v[7]))
        return zb_fail_at(err, path, line, 0, "S, T = %g, %g differ from the "
                          "first line's %g, %g (every rank holds an equal "
                          "vocabulary shard)", row[6], row[7], f->v[6], f->v[7]);
    return ZB_OK;
}

zb_status zb_sim_costs_read(const char *path, zb_sim_costs_file *f, zb_err *err) {
    memset(f, 0, sizeof *f);
    const char *kind;
    FILE *in = zb_files_open_input(path, &kind);   /* never /dev/zero, a FIFO */
    if (!in && kind)
        return zb_fail(err, ZB_EINPUT, "%s: %s, not a regular file", path, kind);
    if (!in) return zb_fail(err, ZB_EINPUT, "%s: %s", path, strerror(errno));
    zb_status st = ZB_OK;
    char buf[1024];
    int line = 0, cap = 0;
    while (st == ZB_OK && fgets(buf, sizeof buf, in)) {
        line++;
        size_t len = strlen(buf);
        if (len == sizeof buf - 1 && buf[len - 1] != '\n') {
            st = zb_fail_at(err, path, line, 0, "line longer than %d bytes",
                            (int)sizeof buf - 2);
            break;
        }
        char *s = buf;
        while (*s == ' ' || *s == '\t') s++;
        if (*s == '#' || *s == '\n' || *s == '\r' || *s == '\0') continue;
        if (f->n == MAX_ROWS) {
            st = zb_fail_at(err, path, line, 0, "more than %d stages", MAX_ROWS);
            break;
        }
        if (f->n == cap) {
            cap = cap ? 2 * cap : 16;
            double *q = realloc(f->v, (size_t)cap * 8 * sizeof(double));
            if (!q) {
                st = zb_fail(err, ZB_ENOMEM, "%s: out of memory", path);
                break;
            }
            f->v = q;
        }
        int ncols = 6;
        double *row = f->v + (size_t)f->n * 8;
        st = parse_line(s, path, line, row, &ncols, err);
        if (st == ZB_OK) st = same_columns(f, row, ncols, path, line, err);
        if (st == ZB_OK) f->n++;
    }
    if (st == ZB_OK && ferror(in)) st = zb_fail(err, ZB_EINPUT, "%s: read error", path);
    if (st == ZB_OK && f->n == 0) st = zb_fail_at(err, path, line, 0, "no stages");
    fclose(in);
    if (st != ZB_OK) zb_sim_costs_free(f);
    return st;
}

void zb_sim_costs_free(zb_sim_costs_file *f) {
    free(f->v);
    f->v = NULL;
    f->n = 0;
}

zb_status zb_sim_costs_apply(const zb_sim_costs_file *f, const char *path,
                             int p, int v, zb_placement pl, zb_costs *c,
                             zb_err *err) {
    int n = p * v;
    if (f->n != p && f->n != n && v == 1)
        return zb_fail(err, ZB_EINPUT, "%s: %d stages, but the schedule has %d",
                       path, f->n, p);
    if (f->n != p && f->n != n)
        return zb_fail(err, ZB_EINPUT, "%s: %d stages, but the schedule needs "
                       "%d (one per rank) or %d (one per virtual stage)", path,
                       f->n, p, n);
    ZB_TRY(zb_costs_init(c, n, err));
    for (int r = 0; r < p; r++)
        for (int k = 0; k < v; k++) {
            int s = zb_placement_vstage(pl, p, r, k);
            const double *x = f->v + (size_t)(f->n == n ? s : r) * 8;
            double d = f->n == n ? 1 : v;
            c->t_f[s] = x[0] / d, c->t_b[s] = x[1] / d, c->t_w[s] = x[2] / d;
            c->t_comm[s] = x[3];
            c->m_b[s] = x[4] / d, c->m_w[s] = x[5] / d;
        }
    return ZB_OK;
}
