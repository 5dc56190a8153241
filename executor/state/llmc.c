/* llmc.c - llm.c checkpoints in and out of a rank's parameters, see llmc.h. */
#include "executor/state/llmc.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/zb_afile.h"

#define CHUNK_ELEMS 65536   /* bounce buffer of one read or write */

/* llm.c tensor of t, or -1 (a tensor llm.c has no place for). */
static int file_tensor(const zb_ptensor *t) {
    if (t->layer >= 0) return ZB_LLMC_LN1W + t->id;
    switch (t->id) {
    case ZB_T_WTE: return ZB_LLMC_WTE;
    case ZB_T_WPE: return ZB_LLMC_WPE;
    case ZB_T_LNFW: return ZB_LLMC_LNFW;
    case ZB_T_LNFB: return ZB_LLMC_LNFB;
    default: return -1;
    }
}

/* Where t's full tensor starts in the parameter part (elements) and how
 * many elements the file has there; checks the shapes fit. */
static zb_status place(const zb_llmc_hdr *h, const zb_ptensor *t,
                       const char *path, size_t *off, size_t *room, zb_err *err) {
    int k = file_tensor(t);
    if (k < 0)
        return zb_fail(err, ZB_EINPUT, "%s: llm.c checkpoints have no '%s' "
                       "(the LM head is tied to wte)", path, t->name);
    size_t per = zb_llmc_layer_numel(h, k);
    size_t cols = (k == ZB_LLMC_FCPROJW) ? 4 * (size_t)h->C
                  : (t->full_cols == 1 ? 1 : (size_t)h->C);
    if ((size_t)t->full_cols != cols || t->layer >= h->L)
        return zb_fail(err, ZB_EINPUT, "%s: tensor %s of layer %d has %d "
                       "columns, the checkpoint's has %zu (L = %d)", path,
                       t->name, t->layer, t->full_cols, cols, h->L);
    *off = zb_llmc_offset(h, k) + (t->layer >= 0 ? (size_t)t->layer * per : 0);
    *room = per;
    return ZB_OK;
}

/* pread exactly n bytes at off. */
static zb_status read_at(int fd, void *buf, size_t n, off_t off,
                         const char *path, zb_err *err) {
    char *p = buf;
    while (n > 0) {
        ssize_t r = pread(fd, p, n, off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0)
            return zb_fail(err, ZB_EIO, "%s: read failed at byte %lld: %s", path,
                           (long long)off, r < 0 ? strerror(errno) : "end of file");
        p += r;
        n -= (size_t)r;
        off += r;
    }
    return ZB_OK;
}

/* Elements [first, first+n) of the parameter part as floats into out. */
static zb_status read_elems(int fd, const zb_llmc_hdr *h, size_t first,
                            size_t n, float *out, const char *path,
                            zb_err *err) {
    int es = zb_llmc_elem_bytes(h);
    off_t base = (off_t)ZB_LLMC_HEADER_BYTES + (off_t)first * es;
    if (es == 4) return read_at(fd, out, n * 4, base, path, err); /* LE host */
    uint16_t tmp[CHUNK_ELEMS];
    for (size_t done = 0; done < n;) {
        size_t k = n - done < CHUNK_ELEMS ? n - done : CHUNK_ELEMS;
        ZB_TRY(read_at(fd, tmp, k * 2, base + (off_t)done * 2, path, err));
        for (size_t i = 0; i < k; i++) out[done + i] = zb_bf16_to_f32(tmp[i]);
        done += k;
    }
    return ZB_OK;
}

static zb_status check_header(const char *path, const zb_llmc_hdr *h,
                              const zb_arch *a, zb_err *err) {
    const char *what[5] = {"layers", "hidden", "heads", "vocab", "ffn_hidden"};
    const char *hn[5] = {"L", "C", "NH", "V", "4C"};
    int mine[5] = {a->layers, a->hidden, a->heads, a->vocab, a->ffn_hidden};
    int theirs[5] = {h->L, h->C, h->NH, h->V, 4 * h->C};
    for (int i = 0; i < 5; i++)
        if (mine[i] != theirs[i])
            return zb_fail_at(err, path, 0, 0, "the model's %s is %d but the "
                              "checkpoint has %s = %d", what[i], mine[i], hn[i],
                              theirs[i]);
    if (a->seq_len > h->maxT)
        return zb_fail_at(err, path, 0, 0, "the model's seq_len is %d but the "
                          "checkpoint has maxT = %d", a->seq_len, h->maxT);
    return ZB_OK;
}

/* A NaN or Inf weight would turn every loss into NaN at step 1, far from
 * its cause: refuse it as it loads, naming the tensor and the element
 * (first: the index of x[0] in the file's tensor, per layer). */
static zb_status check_finite(const float *x, size_t n, const zb_ptensor *t,
                              size_t first, const char *path, zb_err *err) {
    for (size_t i = 0; i < n; i++) {
        if (isfinite(x[i])) continue;
        char layer[32] = "";
        if (t->layer >= 0) snprintf(layer, sizeof layer, " of layer %d", t->layer);
        return zb_fail(err, ZB_EINPUT, "%s: tensor %s%s holds %s at element "
                       "%zu: the checkpoint is damaged or its training "
                       "diverged", path, t->name, layer,
                       isnan(x[i]) ? "NaN" : x[i] > 0 ? "+Inf" : "-Inf", first + i);
    }
    return ZB_OK;
}

/* One tensor: runs of local elements whose full indices are consecutive. */
static zb_status load_tensor(int fd, const zb_llmc_hdr *h, const zb_ptable *pt,
                             const zb_ptensor *t, float *dst, const char *path,
                             zb_err *err) {
    size_t off, room, n = (size_t)t->rows * t->cols;
    ZB_TRY(place(h, t, path, &off, &room, err));
    for (size_t i = 0; i < n;) {
        size_t f0 = zb_ptable_full_index(pt, t, i), run = 1;
        while (i + run < n && zb_ptable_full_index(pt, t, i + run) == f0 + run) run++;
        size_t in_file = f0 >= room ? 0 : (f0 + run > room ? room - f0 : run);
        if (in_file) {
            ZB_TRY(read_elems(fd, h, off + f0, in_file, dst + i, path, err));
            ZB_TRY(check_finite(dst + i, in_file, t, f0, path, err));
        }
        memset(dst + i + in_file, 0, (run - in_file) * sizeof *dst);
        i += run;
    }
    return ZB_OK;
}

zb_status zb_llmc_load(const char *path, const zb_plan *plan,
                       const zb_ptable *pt, float *params, zb_err *err) {
    zb_llmc_hdr h;
    if (!zb_arch_is_gpt2(&plan->model.arch))
        return zb_fail_at(err, path, 0, 0, "an llm.c checkpoint holds GPT-2 "
                          "blocks only; this model's blocks are Llama-shaped");
    ZB_TRY(zb_llmc_read_header(path, &h, err));
    ZB_TRY(check_header(path, &h, &plan->model.arch, err));
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return zb_fail_at(err, path, 0, 0, "cannot open checkpoint: %s", strerror(errno));
    zb_status s = ZB_OK;
    for (int j = 0; j < pt->n && s == ZB_OK; j++)
        s = load_tensor(fd, &h, pt, &pt->t[j], params + pt->t[j].off, path, err);
    close(fd);
    return s;
}

zb_status zb_llmc_load_stage(const char *path, const zb_plan *plan,
                             int pp_rank, int tp_rank, zb_stage *st,
                             zb_err *err) {
    zb_ptable pt;
    ZB_TRY(zb_ptable_build(&pt, plan, pp_rank, tp_rank, err));
    /* through host memory: the stage's buffer may be on a device */
    float *host = zb_calloc(pt.floats ? pt.floats : 1, sizeof *host, err);
    zb_status s = host ? zb_llmc_load(path, plan, &pt, host, err) : ZB_ENOMEM;
    if (s == ZB_OK) s = zb_stage_params_from_host(st, host, pt.floats, err);
    free(host);
    zb_ptable_free(&pt);
    return s;
}

/* ---- export ---- */

void zb_llmc_export_header(const zb_plan *plan, zb_llmc_hdr *h) {
    const zb_arch *a = &plan->model.arch;
    *h = (zb_llmc_hdr){
        .version = plan->model.train.precision == ZB_PREC_BF16 ? ZB_LLMC_V_BF16
                                                               : ZB_LLMC_V_FP32,
        .maxT = a->init[0] ? a->init_maxT : a->seq_len, .V = a->vocab,
        .L = a->layers, .NH = a->heads, .C = a->hidden,
        .Vp = a->init[0] ? a->init_Vp : (a->vocab + 127) / 128 * 128};
}

/* The parameter tables of dp rank 0 of every (pp, tp) and their buffers. */
typedef struct {
    int n;
    zb_ptable *pt;       /* [n] */
    const float **buf;   /* [n] */
} sources;

static void sources_free(sources *s) {
    for (int i = 0; i < s->n; i++) zb_ptable_free(&s->pt[i]);
    free(s->pt);
    free(s->buf);
}

static zb_status sources_build(const zb_plan *plan, float *const *params,
                               sources *s, zb_err *err) {
    memset(s, 0, sizeof *s);
    int n = plan->pp * plan->tp;
    s->pt = zb_calloc((size_t)n, sizeof *s->pt, err);
    s->buf = zb_calloc((size_t)n, sizeof *s->buf, err);
    if (!s->pt || !s->buf) {
        sources_free(s);
        return ZB_ENOMEM;
    }
    for (int p = 0; p < plan->pp; p++)
        for (int t = 0; t < plan->tp; t++) {
            s->buf[s->n] = params[zb_plan_rank(plan, p, 0, t)];
            zb_status st = zb_ptable_build(&s->pt[s->n], plan, p, t, err);
            if (st != ZB_OK) {
                sources_free(s);
                return st;
            }
            s->n++;
            if (!s->buf[s->n - 1]) {
                sources_free(s);
                return zb_fail(err, ZB_ERUNTIME, "export: no parameters of pp "
                               "rank %d tp rank %d", p, t);
            }
        }
    return ZB_OK;
}

/* Tensor k's initial contents: the init checkpoint's when it has the same
 * header shapes, else zeros. */
static zb_status base_values(const zb_plan *plan, const zb_llmc_hdr *h, int k,
                             float *full, zb_err *err) {
    size_t n = zb_llmc_numel(h, k);
    memset(full, 0, n * sizeof *full);
    const char *init = plan->model.arch.init;
    if (!init[0]) return ZB_OK;
    zb_llmc_hdr ih;
    ZB_TRY(zb_llmc_read_header(init, &ih, err));
    if (ih.maxT != h->maxT || ih.Vp != h->Vp || ih.V != h->V || ih.L != h->L ||
        ih.C != h->C)
        return ZB_OK;
    int fd = open(init, O_RDONLY);
    if (fd < 0)
        return zb_fail_at(err, init, 0, 0, "cannot open checkpoint: %s", strerror(errno));
    zb_status s = read_elems(fd, &ih, zb_llmc_offset(&ih, k), n, full, init, err);
    close(fd);
    return s;
}

/* Every rank's elements of llm.c tensor k into full [numel(k)]. */
static zb_status gather(const sources *src, const zb_llmc_hdr *h, int k,
                        float *full, const char *path, zb_err *err) {
    size_t k_off = zb_llmc_offset(h, k);
    for (int r = 0; r < src->n; r++) {
        const zb_ptable *pt = &src->pt[r];
        for (int j = 0; j < pt->n; j++) {
            const zb_ptensor *t = &pt->t[j];
            if (t->copy || file_tensor(t) != k) continue;
            size_t off, room, n = (size_t)t->rows * t->cols;
            ZB_TRY(place(h, t, path, &off, &room, err));
            const float *p = src->buf[r] + t->off;
            for (size_t i = 0; i < n; i++) {
                size_t f = zb_ptable_full_index(pt, t, i);
                if (f < room) full[off - k_off + f] = p[i];
            }
        }
    }
    return ZB_OK;
}

static zb_status write_elems(FILE *f, const zb_llmc_hdr *h, const float *x,
                             size_t n, const char *path, zb_err *err) {
    bool ok = true;
    if (zb_llmc_elem_bytes(h) == 4) {
        ok = fwrite(x, sizeof *x, n, f) == n;
    } else {
        uint16_t tmp[CHUNK_ELEMS];
        for (size_t done = 0; done < n && ok;) {
            size_t k = n - done < CHUNK_ELEMS ? n - done : CHUNK_ELEMS;
            for (size_t i = 0; i < k; i++) tmp[i] = zb_f32_to_bf16(x[done + i]);
            ok = fwrite(tmp, 2, k, f) == k;
            done += k;
        }
    }
    return ok ? ZB_OK : zb_fail(err, ZB_EIO, "%s: write failed: %s", path, strerror(errno));
}

static zb_status write_all(zb_afile *af, const zb_plan *plan, const sources *src,
                           const zb_llmc_hdr *h, float *full, const char *path,
                           zb_err *err) {
    unsigned char hb[ZB_LLMC_HEADER_BYTES];
    zb_llmc_header_bytes(h, hb);
    if (fwrite(hb, 1, sizeof hb, af->f) != sizeof hb)
        return zb_fail(err, ZB_EIO, "%s: write failed: %s", path, strerror(errno));
    for (int k = 0; k < ZB_LLMC_N; k++) {
        ZB_TRY(base_values(plan, h, k, full, err));
        ZB_TRY(gather(src, h, k, full, path, err));
        ZB_TRY(write_elems(af->f, h, full, zb_llmc_numel(h, k), path, err));
    }
    return ZB_OK;
}

zb_status zb_llmc_export(const char *path, const zb_plan *plan,
                         float *const *params, zb_err *err) {
    if (!plan->model.arch.tied_embeddings)
        return zb_fail(err, ZB_EINPUT, "--export: llm.c checkpoints tie the LM "
                       "head to wte; this model has tied_embeddings: false");
    if (!zb_arch_is_gpt2(&plan->model.arch))
        return zb_fail(err, ZB_EINPUT, "--export: llm.c checkpoints hold GPT-2 "
                       "blocks only; this model's blocks are Llama-shaped");
    zb_llmc_hdr h;
    zb_llmc_export_header(plan, &h);
    size_t most = 0;
    for (int k = 0; k < ZB_LLMC_N; k++)
        if (zb_llmc_numel(&h, k) > most) most = zb_llmc_numel(&h, k);
    sources src;
    ZB_TRY(sources_build(plan, params, &src, err));
    float *full = malloc(most * sizeof *full);
    if (!full) {
        sources_free(&src);
        return zb_fail(err, ZB_ENOMEM, "export: out of memory for %zu floats", most);
    }
    zb_afile af;
    zb_status s = zb_afile_open(&af, path, err);
    if (s == ZB_OK) {
        s = write_all(&af, plan, &src, &h, full, path, err);
        zb_status c = zb_afile_close(&af, s == ZB_OK, s == ZB_OK ? err : NULL);
        if (s == ZB_OK) s = c;
    }
    free(full);
    sources_free(&src);
    return s;
}
