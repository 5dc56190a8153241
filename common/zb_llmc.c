/* zb_llmc.c - llm.c checkpoint header and tensor offsets, see zb_llmc.h. */
#include "common/zb_llmc.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static int32_t le32(const unsigned char *p) {
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 |
                     (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

static void put32(unsigned char *p, int32_t v) {
    uint32_t u = (uint32_t)v;
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(u >> (8 * i));
}

/* Rows and columns of one layer's slice of tensor k (the whole tensor for
 * wte, wpe, lnfw, lnfb). */
static void layer_shape(const zb_llmc_hdr *h, int k, size_t *r, size_t *c) {
    size_t C = (size_t)h->C;
    static const int rows_in_C[ZB_LLMC_N] = {
        [ZB_LLMC_QKVW] = 3, [ZB_LLMC_QKVB] = 3, [ZB_LLMC_ATTPROJW] = 1,
        [ZB_LLMC_FCW] = 4, [ZB_LLMC_FCB] = 4, [ZB_LLMC_FCPROJW] = 1};
    switch (k) {
    case ZB_LLMC_WTE: *r = (size_t)h->Vp; *c = C; return;
    case ZB_LLMC_WPE: *r = (size_t)h->maxT; *c = C; return;
    case ZB_LLMC_QKVW: case ZB_LLMC_ATTPROJW: case ZB_LLMC_FCW:
        *r = rows_in_C[k] * C; *c = C; return;
    case ZB_LLMC_FCPROJW: *r = C; *c = 4 * C; return;
    case ZB_LLMC_QKVB: case ZB_LLMC_FCB: *r = rows_in_C[k] * C; *c = 1; return;
    default: *r = C; *c = 1; return; /* LayerNorms, attprojb, fcprojb */
    }
}

static int stacked(int k) {
    return k != ZB_LLMC_WTE && k != ZB_LLMC_WPE && k != ZB_LLMC_LNFW &&
           k != ZB_LLMC_LNFB;
}

size_t zb_llmc_layer_numel(const zb_llmc_hdr *h, int k) {
    size_t r, c;
    layer_shape(h, k, &r, &c);
    return r * c;
}

size_t zb_llmc_numel(const zb_llmc_hdr *h, int k) {
    return zb_llmc_layer_numel(h, k) * (stacked(k) ? (size_t)h->L : 1);
}

size_t zb_llmc_offset(const zb_llmc_hdr *h, int k) {
    size_t off = 0;
    for (int i = 0; i < k; i++) off += zb_llmc_numel(h, i);
    return off;
}

size_t zb_llmc_total(const zb_llmc_hdr *h) { return zb_llmc_offset(h, ZB_LLMC_N); }

int zb_llmc_elem_bytes(const zb_llmc_hdr *h) {
    return h->version == ZB_LLMC_V_BF16 ? 2 : 4;
}

void zb_llmc_header_bytes(const zb_llmc_hdr *h, unsigned char *out) {
    memset(out, 0, ZB_LLMC_HEADER_BYTES);
    int32_t v[8] = {ZB_LLMC_MAGIC, h->version, h->maxT, h->V, h->L, h->NH, h->C, h->Vp};
    for (int i = 0; i < 8; i++) put32(out + 4 * i, v[i]);
}

static zb_status check_shapes(const char *path, const zb_llmc_hdr *h, zb_err *err) {
    const char *names[6] = {"maxT", "V", "L", "NH", "C", "Vp"};
    int vals[6] = {h->maxT, h->V, h->L, h->NH, h->C, h->Vp};
    for (int i = 0; i < 6; i++)
        if (vals[i] < 1 || vals[i] > (1 << 24))
            return zb_fail_at(err, path, 0, 0, "checkpoint header: %s = %d is "
                              "out of range [1, 2^24]", names[i], vals[i]);
    if (h->Vp < h->V)
        return zb_fail_at(err, path, 0, 0, "checkpoint header: padded vocab "
                          "Vp = %d is smaller than V = %d", h->Vp, h->V);
    if (h->C % h->NH != 0)
        return zb_fail_at(err, path, 0, 0, "checkpoint header: NH = %d does "
                          "not divide C = %d", h->NH, h->C);
    return ZB_OK;
}

zb_status zb_llmc_read_header(const char *path, zb_llmc_hdr *h, zb_err *err) {
    memset(h, 0, sizeof *h);
    FILE *f = fopen(path, "rb");
    if (!f) return zb_fail_at(err, path, 0, 0, "cannot open checkpoint: %s", strerror(errno));
    unsigned char b[ZB_LLMC_HEADER_BYTES];
    struct stat sb;
    size_t got = fread(b, 1, sizeof b, f);
    int st_ok = fstat(fileno(f), &sb) == 0;
    fclose(f);
    if (got != sizeof b)
        return zb_fail_at(err, path, 0, 0, "checkpoint is shorter than its "
                          "%d-byte header", ZB_LLMC_HEADER_BYTES);
    if (le32(b) != ZB_LLMC_MAGIC)
        return zb_fail_at(err, path, 0, 0, "bad checkpoint magic %d (expected "
                          "%d, llm.c's GPT-2 format)", (int)le32(b), ZB_LLMC_MAGIC);
    h->version = le32(b + 4);
    if (h->version != ZB_LLMC_V_FP32 && h->version != ZB_LLMC_V_BF16)
        return zb_fail_at(err, path, 0, 0, "unsupported checkpoint version %d "
                          "(3 = fp32 or 5 = bf16)", h->version);
    h->maxT = le32(b + 8);
    h->V = le32(b + 12);
    h->L = le32(b + 16);
    h->NH = le32(b + 20);
    h->C = le32(b + 24);
    h->Vp = le32(b + 28);
    ZB_TRY(check_shapes(path, h, err));
    size_t want = ZB_LLMC_HEADER_BYTES + zb_llmc_total(h) * (size_t)zb_llmc_elem_bytes(h);
    if (!st_ok || (size_t)sb.st_size != want)
        return zb_fail_at(err, path, 0, 0, "checkpoint is %lld bytes but its "
                          "header needs %zu", st_ok ? (long long)sb.st_size : -1LL, want);
    return ZB_OK;
}

float zb_bf16_to_f32(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

uint16_t zb_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) {
        uint16_t t = (uint16_t)(u >> 16);   /* NaN: keep its payload ... */
        return (t & 0x7fu) ? t : (uint16_t)(t | 0x40u); /* ... and a NaN */
    }
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
