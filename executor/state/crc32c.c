/* crc32c.c - see crc32c.h. The streams are glibc fopencookie streams, so
 * zb_stage_save/zb_stage_load write and read them like any FILE. */
#include "executor/state/crc32c.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

static uint32_t table[256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void make_table(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        table[i] = c;
    }
}

uint32_t zb_crc32c(uint32_t crc, const void *data, size_t n) {
    pthread_once(&table_once, make_table);
    const unsigned char *p = data;
    crc = ~crc;
    for (size_t i = 0; i < n; i++) crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    return ~crc;
}

/* ---- trailer ---- */

static const char trailer_magic[8] = {'Z', 'B', 'C', 'R', 'C', '3', '2', 'C'};

typedef struct {
    char magic[8];
    uint64_t data_bytes;
    uint32_t block_bytes, n_blocks, head_crc, trailer_crc;
} footer;   /* 32 bytes, no padding */

_Static_assert(sizeof(footer) == 32, "footer layout");

static uint32_t trailer_crc(const uint32_t *crcs, uint32_t n, const footer *ft) {
    uint32_t c = zb_crc32c(0, crcs, (size_t)n * sizeof *crcs);
    return zb_crc32c(c, ft, offsetof(footer, trailer_crc));
}

/* ---- writing ---- */

struct zb_crc_writer {
    FILE *out, *stream;
    const char *path;
    uint64_t bytes;
    uint32_t cur, *crcs;
    size_t n, cap;
    int write_errno;     /* first failed write, 0: none */
};

static int push_crc(zb_crc_writer *w) {
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 64;
        uint32_t *c = realloc(w->crcs, cap * sizeof *c);
        if (!c) return -1;
        w->crcs = c;
        w->cap = cap;
    }
    w->crcs[w->n++] = w->cur;
    w->cur = 0;
    return 0;
}

static ssize_t crc_write(void *cookie, const char *buf, size_t size) {
    zb_crc_writer *w = cookie;
    size_t total = size;
    if (fwrite(buf, 1, size, w->out) != size) {
        if (!w->write_errno) w->write_errno = errno ? errno : EIO;
        return -1;
    }
    while (size > 0) {
        size_t off = (size_t)(w->bytes % ZB_CRC_BLOCK), take = ZB_CRC_BLOCK - off;
        if (take > size) take = size;
        w->cur = zb_crc32c(w->cur, buf, take);
        w->bytes += take;
        buf += take;
        size -= take;
        if (w->bytes % ZB_CRC_BLOCK == 0 && push_crc(w) != 0) {
            w->write_errno = ENOMEM;
            return -1;
        }
    }
    return (ssize_t)total;
}

int zb_crc_writer_errno(const zb_crc_writer *w) { return w ? w->write_errno : 0; }

static int crc_wclose(void *cookie) {
    (void)cookie;   /* out stays open: the trailer follows */
    return 0;
}

zb_status zb_crc_writer_open(FILE *out, const char *path, zb_crc_writer **w,
                             FILE **stream, zb_err *err) {
    *stream = NULL;
    *w = zb_calloc(1, sizeof **w, err);
    if (!*w) return ZB_ENOMEM;
    (*w)->out = out;
    (*w)->path = path;
    cookie_io_functions_t io = {.write = crc_write, .close = crc_wclose};
    (*w)->stream = fopencookie(*w, "w", io);
    if (!(*w)->stream) {
        free(*w);
        *w = NULL;
        return zb_fail(err, ZB_ENOMEM, "cannot open a checksummed stream for '%s'", path);
    }
    *stream = (*w)->stream;
    return ZB_OK;
}

static zb_status write_trailer(zb_crc_writer *w, uint32_t head_crc, zb_err *err) {
    if (w->bytes % ZB_CRC_BLOCK != 0 && push_crc(w) != 0)
        return zb_fail(err, ZB_ENOMEM, "out of memory checksumming '%s'", w->path);
    footer ft = {.data_bytes = w->bytes, .block_bytes = ZB_CRC_BLOCK,
                 .n_blocks = (uint32_t)w->n, .head_crc = head_crc};
    memcpy(ft.magic, trailer_magic, sizeof ft.magic);
    ft.trailer_crc = trailer_crc(w->crcs, ft.n_blocks, &ft);
    if ((w->n && fwrite(w->crcs, sizeof *w->crcs, w->n, w->out) != w->n) ||
        fwrite(&ft, sizeof ft, 1, w->out) != 1)
        return zb_fail(err, ZB_EIO, "cannot write '%s': %s", w->path, strerror(errno));
    return ZB_OK;
}

zb_status zb_crc_writer_finish(zb_crc_writer *w, bool ok, uint32_t head_crc,
                               zb_err *err) {
    if (!w) return ZB_OK;
    zb_status s = ZB_OK;
    int e = fclose(w->stream) != 0 ? errno : 0;   /* flushes through crc_write */
    if (ok && (w->write_errno || e))
        s = zb_fail(err, ZB_EIO, "cannot write '%s': %s", w->path,
                    strerror(w->write_errno ? w->write_errno : e));
    else if (ok)
        s = write_trailer(w, head_crc, err);
    free(w->crcs);
    free(w);
    return s;
}

/* ---- reading ---- */

typedef struct {
    FILE *f;
    uint64_t left;
} limited;

static ssize_t lim_read(void *cookie, char *buf, size_t size) {
    limited *l = cookie;
    if (size > l->left) size = (size_t)l->left;
    size_t got = size ? fread(buf, 1, size, l->f) : 0;
    l->left -= got;
    if (got < size && ferror(l->f)) return -1;
    return (ssize_t)got;
}

static int lim_close(void *cookie) {
    free(cookie);
    return 0;
}

static zb_status damaged(zb_err *err, const char *path, const char *what,
                         unsigned long long at) {
    return zb_fail(err, ZB_EINPUT, "%s: damaged checkpoint: %s at byte %llu "
                   "(delete this checkpoint folder or resume from a good copy)",
                   path, what, at);
}

/* The footer at the end of f, checked against the file size. */
static zb_status read_footer(FILE *f, const char *path, size_t head_bytes,
                             footer *ft, zb_err *err) {
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0)
        return zb_fail(err, ZB_EIO, "cannot stat '%s': %s", path, strerror(errno));
    unsigned long long size = (unsigned long long)sb.st_size;
    if (size < head_bytes + sizeof *ft)
        return damaged(err, path, "truncated, no checksum trailer", size);
    if (fseeko(f, (off_t)(size - sizeof *ft), SEEK_SET) != 0 ||
        fread(ft, sizeof *ft, 1, f) != 1)
        return zb_fail(err, ZB_EIO, "cannot read '%s': %s", path, strerror(errno));
    if (memcmp(ft->magic, trailer_magic, sizeof ft->magic) != 0)
        return damaged(err, path, "no checksum trailer (truncated?)", size - sizeof *ft);
    unsigned long long want_n = (ft->data_bytes + ZB_CRC_BLOCK - 1) / ZB_CRC_BLOCK;
    if (ft->block_bytes != ZB_CRC_BLOCK || ft->n_blocks != want_n ||
        ft->data_bytes > size ||
        size != head_bytes + ft->data_bytes + 4ull * ft->n_blocks + sizeof *ft)
        return damaged(err, path, "size does not match its trailer (truncated "
                       "or damaged)", size - sizeof *ft);
    return ZB_OK;
}

/* Every data block against its CRC; f ends past the data. */
static zb_status check_blocks(FILE *f, const char *path, size_t head_bytes,
                              const footer *ft, const uint32_t *crcs, zb_err *err) {
    unsigned char *buf = malloc(ZB_CRC_BLOCK);
    if (!buf) return zb_fail(err, ZB_ENOMEM, "out of memory checking '%s'", path);
    zb_status s = ZB_OK;
    uint64_t left = ft->data_bytes;
    if (fseeko(f, (off_t)head_bytes, SEEK_SET) != 0)
        s = zb_fail(err, ZB_EIO, "cannot read '%s': %s", path, strerror(errno));
    for (uint32_t k = 0; s == ZB_OK && k < ft->n_blocks; k++) {
        size_t n = left < ZB_CRC_BLOCK ? (size_t)left : ZB_CRC_BLOCK;
        if (fread(buf, 1, n, f) != n)
            s = zb_fail(err, ZB_EIO, "cannot read '%s': %s", path, strerror(errno));
        else if (zb_crc32c(0, buf, n) != crcs[k]) {
            char what[96];
            snprintf(what, sizeof what, "checksum mismatch in block %u of %u "
                     "(%zu bytes)", k, ft->n_blocks, n);
            s = damaged(err, path, what,
                        (unsigned long long)head_bytes + (unsigned long long)k * ZB_CRC_BLOCK);
        }
        left -= n;
    }
    free(buf);
    return s;
}

static zb_status verify(FILE *f, const char *path, const void *head,
                        size_t head_bytes, footer *ft, zb_err *err) {
    ZB_TRY(read_footer(f, path, head_bytes, ft, err));
    size_t n = ft->n_blocks;
    uint32_t *crcs = malloc(n ? n * sizeof *crcs : 1);
    if (!crcs) return zb_fail(err, ZB_ENOMEM, "out of memory checking '%s'", path);
    off_t at = (off_t)(head_bytes + ft->data_bytes);
    zb_status s = ZB_OK;
    if (fseeko(f, at, SEEK_SET) != 0 || (n && fread(crcs, sizeof *crcs, n, f) != n))
        s = zb_fail(err, ZB_EIO, "cannot read '%s': %s", path, strerror(errno));
    else if (trailer_crc(crcs, ft->n_blocks, ft) != ft->trailer_crc)
        s = damaged(err, path, "checksum trailer does not match itself",
                    (unsigned long long)at);
    else if (zb_crc32c(0, head, head_bytes) != ft->head_crc)
        s = damaged(err, path, "header checksum mismatch", 0);
    else
        s = check_blocks(f, path, head_bytes, ft, crcs, err);
    free(crcs);
    return s;
}

zb_status zb_crc_reader_open(FILE *f, const char *path, const void *head,
                             size_t head_bytes, FILE **stream,
                             uint64_t *data_bytes, zb_err *err) {
    footer ft;
    *stream = NULL;
    ZB_TRY(verify(f, path, head, head_bytes, &ft, err));
    if (fseeko(f, (off_t)head_bytes, SEEK_SET) != 0)
        return zb_fail(err, ZB_EIO, "cannot read '%s': %s", path, strerror(errno));
    limited *l = zb_calloc(1, sizeof *l, err);
    if (!l) return ZB_ENOMEM;
    *l = (limited){.f = f, .left = ft.data_bytes};
    cookie_io_functions_t io = {.read = lim_read, .close = lim_close};
    *stream = fopencookie(l, "r", io);
    if (!*stream) {
        free(l);
        return zb_fail(err, ZB_ENOMEM, "cannot open a stream on '%s'", path);
    }
    *data_bytes = ft.data_bytes;
    return ZB_OK;
}
