/* tensorboard.c - see tensorboard.h. The protobuf wire format by hand:
 * a field is a varint key (number << 3 | wire type) then its value; wire
 * types used here: 0 varint, 1 fixed 64-bit, 2 length-delimited, 5 fixed
 * 32-bit. Field numbers are event.proto's and summary.proto's. */
#include "executor/report/tensorboard.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A write cursor that stops (ok = false) at the end of its buffer. */
typedef struct {
    uint8_t *p;
    size_t n, cap;
    bool ok;
} pb;

static void put(pb *b, const void *src, size_t n) {
    if (!b->ok || b->cap - b->n < n) {
        b->ok = false;
        return;
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void varint(pb *b, uint64_t v) {
    uint8_t out[10];
    size_t n = 0;
    do {
        out[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    put(b, out, n);
}

/* Little-endian, whatever the host's order. */
static void fixed(pb *b, uint64_t v, int bytes) {
    uint8_t out[8];
    for (int i = 0; i < bytes; i++) out[i] = (uint8_t)(v >> (8 * i));
    put(b, out, (size_t)bytes);
}

static void key(pb *b, int field, int wire) { varint(b, (uint64_t)(field << 3 | wire)); }

static void bytes_field(pb *b, int field, const void *data, size_t n) {
    key(b, field, 2);
    varint(b, n);
    put(b, data, n);
}

/* Summary.Value {tag = 1, simple_value = 2}: the length of its encoding. */
static size_t value_len(const char *tag) {
    size_t n = strlen(tag), v = 1;
    for (size_t x = n; x > 0x7f; x >>= 7) v++;
    return 1 + v + n + 1 + 4;
}

size_t zb_tb_event(uint8_t *buf, size_t cap, double wall_time, long long step,
                   const char *file_version, const char *const *tags,
                   const float *values, int n) {
    pb b = {buf, 0, cap, true};
    uint64_t w, v32 = 0;
    memcpy(&w, &wall_time, sizeof w);
    key(&b, 1, 1);                   /* Event.wall_time: double */
    fixed(&b, w, 8);
    key(&b, 2, 0);                   /* Event.step: int64 */
    varint(&b, (uint64_t)step);
    if (file_version) {              /* Event.file_version: string */
        bytes_field(&b, 3, file_version, strlen(file_version));
        return b.ok ? b.n : 0;
    }
    size_t sum = 0;                  /* Event.summary: Summary */
    for (int i = 0; i < n; i++) {
        size_t vl = value_len(tags[i]);
        sum += 1 + (vl > 0x7f ? 2 : 1) + vl;   /* tags are short: < 16 KiB */
    }
    key(&b, 5, 2);
    varint(&b, sum);
    for (int i = 0; i < n; i++) {
        key(&b, 1, 2);               /* Summary.value: repeated Value */
        varint(&b, value_len(tags[i]));
        bytes_field(&b, 1, tags[i], strlen(tags[i]));   /* Value.tag */
        uint32_t f;
        memcpy(&f, &values[i], sizeof f);
        v32 = f;
        key(&b, 2, 5);               /* Value.simple_value: float */
        fixed(&b, v32, 4);
    }
    return b.ok ? b.n : 0;
}

/* ---- TFRecord framing ---- */

static uint32_t masked(const zb_tb *t, const void *data, size_t n) {
    uint32_t c = t->crc(0, data, n);
    return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

static bool write_record(zb_tb *t, const uint8_t *data, size_t n) {
    uint8_t head[12];
    pb b = {head, 0, sizeof head, true};
    fixed(&b, n, 8);
    fixed(&b, masked(t, head, 8), 4);
    uint8_t tail[4];
    pb c = {tail, 0, sizeof tail, true};
    fixed(&c, masked(t, data, n), 4);
    return fwrite(head, 1, sizeof head, t->f) == sizeof head &&
           fwrite(data, 1, n, t->f) == n &&
           fwrite(tail, 1, sizeof tail, t->f) == sizeof tail && fflush(t->f) == 0;
}

zb_status zb_tb_open(zb_tb *t, const char *dir, zb_tb_crc_fn crc, zb_err *err) {
    memset(t, 0, sizeof *t);
    t->crc = crc;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return zb_fail(err, ZB_EINPUT, "--tensorboard %s: cannot create: %s", dir,
                       strerror(errno));
    char host[64] = "host";
    if (gethostname(host, sizeof host) != 0) strcpy(host, "host");
    host[sizeof host - 1] = '\0';
    double now = zb_unix_s();
    int n = snprintf(t->path, sizeof t->path, "%s/events.out.tfevents.%.0f.%s.%ld.zbrun",
                     dir, floor(now), host, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof t->path)
        return zb_fail(err, ZB_EINPUT, "--tensorboard %s: the path is too long", dir);
    t->f = fopen(t->path, "wbx");
    if (!t->f)
        return zb_fail(err, ZB_EINPUT, "--tensorboard %s: cannot create %s: %s", dir,
                       t->path, strerror(errno));
    uint8_t buf[64];
    size_t len = zb_tb_event(buf, sizeof buf, now, 0, "brain.Event:2", NULL, NULL, 0);
    if (len == 0 || !write_record(t, buf, len)) {
        zb_fail(err, ZB_EIO, "--tensorboard %s: cannot write: %s", t->path,
                strerror(errno));
        fclose(t->f);
        t->f = NULL;
        return ZB_EIO;
    }
    return ZB_OK;
}

/* The step's scalars as tensorboard.h lists them; returns how many. */
static int scalars(const zb_step_info *s, const char **tags, float *v) {
    int n = 0;
    if (!s->eval_only) {
        double mem = 0;
        for (int r = 0; r < s->world; r++) mem = fmax(mem, s->mem_bytes[r]);
        const char *const names[] = {"train/loss", "train/lr", "train/grad_norm",
                                     "train/tokens_per_s", "train/step_ms",
                                     "train/mfu", "train/tokens_seen",
                                     "train/mem_bytes_max"};
        double vals[] = {s->loss, s->lr, s->grad_norm, s->tokens_per_s,
                         s->step_s * 1e3, s->mfu, (double)s->tokens_seen, mem};
        for (; n < 8; n++) {
            tags[n] = names[n];
            v[n] = (float)vals[n];
        }
    }
    if (!isnan(s->val_loss)) {
        tags[n] = "val/loss";
        v[n++] = (float)s->val_loss;
    }
    return n;
}

void zb_tb_step(zb_tb *t, const zb_step_info *s) {
    if (!t || !t->f || t->failed) return;
    const char *tags[9];
    float v[9];
    int n = scalars(s, tags, v);
    if (n == 0) return;
    uint8_t buf[512];
    size_t len = zb_tb_event(buf, sizeof buf, s->unix_s, s->step, NULL, tags, v, n);
    if (len == 0 || !write_record(t, buf, len)) {
        t->failed = true;
        zb_fail(&t->err, ZB_EIO, "--tensorboard %s: cannot write after step %d: %s",
                t->path, s->step, len == 0 ? "record too long" : strerror(errno));
    }
}

zb_status zb_tb_close(zb_tb *t, zb_err *err) {
    if (!t || !t->f) return ZB_OK;
    bool bad = fclose(t->f) != 0;
    int e = errno;
    t->f = NULL;
    if (t->failed) {
        *err = t->err;
        return ZB_EIO;
    }
    if (bad)
        return zb_fail(err, ZB_EIO, "--tensorboard %s: cannot close: %s", t->path,
                       strerror(e));
    return ZB_OK;
}
