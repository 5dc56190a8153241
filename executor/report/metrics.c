/* metrics.c - see metrics.h. */
#include "executor/report/metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

zb_status zb_metrics_format_of(const char *name, const char *path,
                               zb_metrics_format *out, zb_err *err) {
    if (!name) {
        size_t n = strlen(path);
        *out = n >= 4 && !strcmp(path + n - 4, ".csv") ? ZB_METRICS_CSV
                                                       : ZB_METRICS_JSONL;
        return ZB_OK;
    }
    if (!strcmp(name, "jsonl")) *out = ZB_METRICS_JSONL;
    else if (!strcmp(name, "csv")) *out = ZB_METRICS_CSV;
    else
        return zb_fail(err, ZB_EINPUT, "--metrics-format must be jsonl or csv, "
                       "got '%s'", name);
    return ZB_OK;
}

static const char csv_header[] =
    "step,steps,loss,lr,grad_norm,tokens_per_s,step_ms,elapsed_s,val_loss,"
    "timestamp,tokens_seen,mfu";

/* The header, then a peak-memory column per global rank. */
static bool put_csv_header(FILE *f, int world) {
    bool ok = fputs(csv_header, f) >= 0;
    for (int r = 0; r < world && ok; r++) ok = fprintf(f, ",mem_bytes_rank%d", r) > 0;
    return ok && fputc('\n', f) != EOF;
}

zb_status zb_metrics_open(zb_metrics *m, const char *path, zb_metrics_format fmt,
                          int world, bool append, zb_err *err) {
    memset(m, 0, sizeof *m);
    m->path = path;
    m->fmt = fmt;
    m->world = world;
    /* opened without blocking: a FIFO nobody reads is an error at once,
     * not a hang before step 1 (issue 29) */
    int fd = open(path, O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC |
                  (append ? O_APPEND : O_TRUNC), 0666);
    int fl = fd >= 0 ? fcntl(fd, F_GETFL) : -1;
    if (fd < 0 && errno == ENXIO)
        return zb_fail(err, ZB_EIO, "--metrics %s: a FIFO that nobody reads",
                       path);
    if (fd >= 0 && (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0 ||
                    !(m->f = fdopen(fd, append ? "a" : "w"))))
        close(fd);
    if (!m->f)
        return zb_fail(err, ZB_EIO, "--metrics %s: cannot create: %s", path,
                       strerror(errno));
    bool empty = fseek(m->f, 0, SEEK_END) == 0 && ftell(m->f) <= 0;
    if (fmt == ZB_METRICS_CSV && empty &&
        (!put_csv_header(m->f, world) || fflush(m->f) != 0)) {
        zb_fail(err, ZB_EIO, "--metrics %s: cannot write: %s", path, strerror(errno));
        fclose(m->f);
        m->f = NULL;
        return ZB_EIO;
    }
    return ZB_OK;
}

/* One number: the shortest text that reads back as v; JSON has no NaN,
 * so null (CSV: an empty cell). */
static void num(FILE *f, const char *key, double v, bool json) {
    if (json) fprintf(f, ", \"%s\": ", key);
    else fputc(',', f);
    if (!isfinite(v)) {
        if (json) fputs("null", f);
        return;
    }
    char buf[32];
    for (int digits = 6; digits <= 17; digits++) {
        snprintf(buf, sizeof buf, "%.*g", digits, v);
        if (strtod(buf, NULL) == v) break;
    }
    fputs(buf, f);
}

static void write_json(FILE *f, const zb_step_info *s) {
    fprintf(f, "{\"step\": %d, \"steps\": %d, \"timestamp\": %.3f, "
            "\"tokens_seen\": %lld", s->step, s->steps, s->unix_s, s->tokens_seen);
    if (!s->eval_only) {
        num(f, "loss", s->loss, true);
        num(f, "lr", s->lr, true);
        num(f, "grad_norm", s->grad_norm, true);
        num(f, "tokens_per_s", s->tokens_per_s, true);
        num(f, "step_ms", s->step_s * 1e3, true);
        num(f, "elapsed_s", s->elapsed_s, true);
        num(f, "mfu", s->mfu, true);
        fputs(", \"mem_bytes\": [", f);
        for (int r = 0; r < s->world; r++)
            fprintf(f, "%s%.0f", r ? ", " : "", s->mem_bytes[r]);
        fputc(']', f);
    }
    if (!isnan(s->val_loss)) num(f, "val_loss", s->val_loss, true);
    fputs("}\n", f);
}

/* Columns as csv_header; an evaluation's record leaves the step's empty. */
static void write_csv(FILE *f, int world, const zb_step_info *s) {
    fprintf(f, "%d,%d", s->step, s->steps);
    double v[] = {s->loss, s->lr, s->grad_norm, s->tokens_per_s, s->step_s * 1e3,
                  s->elapsed_s};
    for (int k = 0; k < 6; k++) num(f, "", s->eval_only ? NAN : v[k], false);
    num(f, "", s->val_loss, false);
    fprintf(f, ",%.3f,%lld", s->unix_s, s->tokens_seen);
    num(f, "", s->eval_only ? NAN : s->mfu, false);
    for (int r = 0; r < world; r++)
        num(f, "", s->eval_only || r >= s->world ? NAN : s->mem_bytes[r], false);
    fputc('\n', f);
}

void zb_metrics_step(zb_metrics *m, const zb_step_info *s) {
    if (!m || !m->f || m->failed) return;
    if (m->fmt == ZB_METRICS_JSONL) write_json(m->f, s);
    else write_csv(m->f, m->world, s);
    if (fflush(m->f) != 0 || ferror(m->f)) {
        m->failed = true;
        zb_fail(&m->err, ZB_EIO, "--metrics %s: cannot write after step %d: %s",
                m->path, s->step, strerror(errno));
    }
}

zb_status zb_metrics_close(zb_metrics *m, zb_err *err) {
    if (!m || !m->f) return ZB_OK;
    bool bad = fclose(m->f) != 0;
    int e = errno;
    m->f = NULL;
    if (m->failed) {
        *err = m->err;
        return ZB_EIO;
    }
    if (bad)
        return zb_fail(err, ZB_EIO, "--metrics %s: cannot close: %s", m->path,
                       strerror(e));
    return ZB_OK;
}
