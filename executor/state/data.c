/* data.c - token files and deterministic batches, see data.h. */
#include "executor/state/data.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/zb_yaml.h"

#define ZB_SHARD_MAGIC 20240520
#define ZB_SHARD_VERSION 1
#define ZB_SHARD_HEADER_BYTES 1024 /* 256 int32 */

struct zb_data {
    uint16_t *tok;       /* [count] */
    size_t count;
    int seq_len, global_batch;
    uint64_t seed;
    bool sequential;     /* consecutive windows instead of seeded random */
    size_t n_batches;    /* sequential: whole global batches in the file */
};

/* splitmix64 finaliser: a bijective 64-bit mixer. */
static uint64_t mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static int32_t le32(const unsigned char *p) {
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 |
                     (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

static const char *file_kind(const struct stat *sb) {
    return S_ISDIR(sb->st_mode) ? "a folder" : S_ISFIFO(sb->st_mode) ? "a FIFO"
         : S_ISCHR(sb->st_mode) ? "a character device"
         : S_ISBLK(sb->st_mode) ? "a block device"
         : S_ISSOCK(sb->st_mode) ? "a socket" : "not a regular file";
}

/* The whole file into a fresh buffer (*buf, *size); a zero-byte file gives
 * a one-byte buffer so callers never see NULL on success. */
static zb_status read_file(const char *path, unsigned char **buf, size_t *size,
                           zb_err *err) {
    *buf = NULL;
    /* non-blocking: a FIFO would block open() until a writer comes */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    /* a data file the plan names but that is missing is bad input (exit 2) */
    if (fd < 0) return zb_fail(err, ZB_EINPUT, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return zb_fail(err, ZB_EINPUT, "%s: not a regular file (%s)", path,
                       file_kind(&sb));
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return zb_fail(err, ZB_ENOMEM, "%s: cannot open: %s", path, strerror(errno));
    }
    size_t n = (size_t)sb.st_size;
    unsigned char *b = malloc(n > 0 ? n : 1);
    if (!b) {
        fclose(f);
        return zb_fail(err, ZB_ENOMEM, "%s: out of memory for %zu bytes", path, n);
    }
    if (fread(b, 1, n, f) != n) {
        free(b);
        fclose(f);
        return zb_fail(err, ZB_EIO, "%s: read failed", path);
    }
    fclose(f);
    *buf = b;
    *size = n;
    return ZB_OK;
}

static zb_status load_text(zb_data *d, const char *path, const unsigned char *b,
                           size_t n, int vocab, zb_err *err) {
    if (vocab < 256)
        return zb_fail_at(err, path, 0, 0, "text data has byte tokens (256 "
                          "values) but the model's vocab is %d", vocab);
    d->tok = malloc((n > 0 ? n : 1) * sizeof *d->tok);
    if (!d->tok) return zb_fail(err, ZB_ENOMEM, "%s: out of memory", path);
    for (size_t i = 0; i < n; i++) d->tok[i] = b[i];
    d->count = n;
    return ZB_OK;
}

static zb_status load_shard(zb_data *d, const char *path,
                            const unsigned char *b, size_t n, int vocab,
                            zb_err *err) {
    if (n < ZB_SHARD_HEADER_BYTES)
        return zb_fail_at(err, path, 0, 0, "shard is %zu bytes, shorter than "
                          "its %d-byte header", n, ZB_SHARD_HEADER_BYTES);
    int32_t magic = le32(b), version = le32(b + 4), count = le32(b + 8);
    if (magic != ZB_SHARD_MAGIC)
        return zb_fail_at(err, path, 0, 0, "bad shard magic %d (expected %d)",
                          (int)magic, ZB_SHARD_MAGIC);
    if (version != ZB_SHARD_VERSION)
        return zb_fail_at(err, path, 0, 0, "unsupported shard version %d "
                          "(expected %d)", (int)version, ZB_SHARD_VERSION);
    if (count < 0)
        return zb_fail_at(err, path, 0, 0, "negative token count %d", (int)count);
    size_t want = ZB_SHARD_HEADER_BYTES + 2 * (size_t)count;
    if (n != want)
        return zb_fail_at(err, path, 0, 0, "file is %zu bytes but the header "
                          "says %d tokens (%zu bytes expected)", n, (int)count, want);
    d->tok = malloc(((size_t)count > 0 ? (size_t)count : 1) * sizeof *d->tok);
    if (!d->tok) return zb_fail(err, ZB_ENOMEM, "%s: out of memory", path);
    const unsigned char *p = b + ZB_SHARD_HEADER_BYTES;
    for (size_t i = 0; i < (size_t)count; i++) {
        d->tok[i] = (uint16_t)(p[2 * i] | p[2 * i + 1] << 8);
        if (d->tok[i] >= vocab)
            return zb_fail_at(err, path, 0, 0, "token %u at index %zu is >= "
                              "the model's vocab %d", d->tok[i], i, vocab);
    }
    d->count = (size_t)count;
    return ZB_OK;
}

/* The built-in corpus (corpus.S). */
extern const unsigned char zb_corpus_text[], zb_corpus_end[];

/* The plan's folder joined with a relative path, into out[cap]. */
static bool beside(const char *plan_path, const char *rel, char *out, size_t cap) {
    const char *slash = strrchr(plan_path, '/');
    if (!slash) return false;   /* the plan is in the working directory */
    int n = snprintf(out, cap, "%.*s/%s", (int)(slash - plan_path), plan_path, rel);
    return n > 0 && (size_t)n < cap;
}

/* The position of training.data.path (or of training, or the top) in the
 * plan, for the message. */
static void path_mark(const char *plan_path, int *line, int *col) {
    zb_ydoc d;
    zb_err e;
    *line = *col = 1;
    if (zb_ydoc_load(plan_path, &d, &e) != ZB_OK) return;
    const zb_ynode *t = zb_ymap_get(d.root, "training");
    const zb_ynode *dn = t ? zb_ymap_get(t, "data") : NULL;
    const zb_ynode *p = dn ? zb_ymap_get(dn, "path") : NULL;
    const zb_ynode *at = p ? p : dn ? dn : t;
    if (at) {
        *line = at->line;
        *col = at->col;
    }
    zb_ydoc_free(&d);
}

zb_status zb_data_locate(const char *plan_path, zb_model *m, zb_err *err) {
    char *path = m->train.data_path;
    if (!path[0] && m->train.data_kind == ZB_DATA_TEXT) return ZB_OK;
    struct stat sb;
    int line, col;
    char alt[sizeof m->train.data_path];
    bool here = path[0] && stat(path, &sb) == 0;
    if (!here && path[0] && path[0] != '/' && beside(plan_path, path, alt, sizeof alt) &&
        stat(alt, &sb) == 0) {
        memcpy(path, alt, strlen(alt) + 1);
        here = true;
    }
    path_mark(plan_path, &line, &col);
    if (here && !S_ISREG(sb.st_mode))   /* a FIFO would block the open */
        return zb_fail_at(err, plan_path, line, col, "training.data.path '%s' "
                          "is not a regular file (%s)", path, file_kind(&sb));
    if (here) return ZB_OK;
    if (!path[0])
        return zb_fail_at(err, plan_path, line, col, "training.data.path is "
                          "empty, and kind shards needs a file");
    return zb_fail_at(err, plan_path, line, col, "training.data.path '%s' not "
                      "found (looked in the working directory%s)", path,
                      path[0] != '/' && strchr(plan_path, '/') ? " and the plan's folder" : "");
}

/* One token file of `kind` at `path` (empty with kind text: the built-in
 * corpus), batches in random or sequential order (see data.h). */
static zb_status open_source(const zb_model *m, const char *path,
                             zb_data_kind kind, bool sequential,
                             zb_data **out, zb_err *err) {
    *out = NULL;
    bool builtin = !path[0] && kind == ZB_DATA_TEXT;
    if (!path[0] && !builtin) return zb_fail(err, ZB_EINPUT, "no data file given");
    zb_data *d = zb_calloc(1, sizeof *d, err);
    if (!d) return ZB_ENOMEM;
    d->seq_len = m->arch.seq_len;
    d->global_batch = m->train.global_batch;
    d->seed = m->train.seed;
    d->sequential = sequential;
    unsigned char *buf = NULL;
    size_t size = 0;
    zb_status rc = ZB_OK;
    if (builtin) {
        path = ZB_DATA_BUILTIN;
        rc = load_text(d, path, zb_corpus_text,
                       (size_t)(zb_corpus_end - zb_corpus_text), m->arch.vocab, err);
    } else {
        rc = read_file(path, &buf, &size, err);
    }
    if (rc == ZB_OK && !builtin) {
        rc = kind == ZB_DATA_TEXT
                 ? load_text(d, path, buf, size, m->arch.vocab, err)
                 : load_shard(d, path, buf, size, m->arch.vocab, err);
        free(buf);
    }
    size_t batch = (size_t)d->global_batch * (size_t)d->seq_len;
    if (rc == ZB_OK && d->count < (size_t)d->seq_len + 1)
        rc = zb_fail_at(err, path, 0, 0, "holds %zu tokens, fewer than "
                        "seq_len + 1 = %d", d->count, d->seq_len + 1);
    else if (rc == ZB_OK && sequential && d->count < batch + 1)
        rc = zb_fail_at(err, path, 0, 0, "holds %zu tokens, fewer than one "
                        "sequential batch: global_batch * seq_len + 1 = %zu",
                        d->count, batch + 1);
    if (rc != ZB_OK) {
        zb_data_free(d);
        return rc;
    }
    if (sequential) d->n_batches = (d->count - 1) / batch;
    *out = d;
    return ZB_OK;
}

zb_status zb_data_open(const zb_model *m, zb_data **out, zb_err *err) {
    return open_source(m, m->train.data_path, m->train.data_kind,
                       m->train.data_sequential, out, err);
}

zb_status zb_data_open_val(const zb_model *m, zb_data **out, zb_err *err) {
    return open_source(m, m->train.val_path, m->train.val_kind, true, out, err);
}

void zb_data_free(zb_data *d) {
    if (!d) return;
    free(d->tok);
    free(d);
}

size_t zb_data_tokens(const zb_data *d) { return d->count; }

zb_status zb_data_batch(const zb_data *d, int step, int seq, int *tokens,
                        int *targets, zb_err *err) {
    if (step < 0 || seq < 0 || seq >= d->global_batch)
        return zb_fail(err, ZB_ERUNTIME, "data: step %d sequence %d out of "
                       "range (global batch %d)", step, seq, d->global_batch);
    int T = d->seq_len;
    size_t off;
    if (d->sequential) {  /* llm.c's loader without shuffling; wraps around */
        size_t b = (size_t)step % d->n_batches;
        off = (b * (size_t)d->global_batch + (size_t)seq) * (size_t)T;
    } else {
        uint64_t h = mix64(mix64(mix64(d->seed) ^ (uint64_t)step) ^
                           ((uint64_t)seq << 32 | 0x5eedu));
        off = (size_t)(h % (uint64_t)(d->count - (size_t)T)); /* [0, count-T-1] */
    }
    const uint16_t *p = d->tok + off;
    for (int t = 0; t < T; t++) {
        tokens[t] = p[t];
        targets[t] = p[t + 1];
    }
    return ZB_OK;
}

zb_status zb_data_microbatch(const zb_data *d, int step, int dp_rank, int j,
                             int m, int micro_batch, int *tokens, int *targets,
                             zb_err *err) {
    int first = (dp_rank * m + j) * micro_batch;
    for (int i = 0; i < micro_batch; i++) {
        size_t at = (size_t)i * d->seq_len;
        ZB_TRY(zb_data_batch(d, step, first + i, tokens + at, targets + at, err));
    }
    return ZB_OK;
}
