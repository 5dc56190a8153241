/* embed.c - token + position embedding, see embed.h.
 *   tokens [B, T]; wte, dwte [V, C]; wpe, dwpe [maxT, C] (rows 0..T-1 used);
 *   out, dout [B, T, C]
 */
#include "kernels/embed.h"

#include <stddef.h>

#include "kernels/parallel.h"

/* Channels per thread-owned block in the dwte pass. */
#define ZB_EMBED_COLS_PER_BLOCK 64

void zb_embed_forward(float *out, const int *tokens, const float *wte,
                      const float *wpe, int B, int T, int C) {
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH((size_t)B * T * C))
    for (int bt = 0; bt < B * T; bt++) {
        const float *te = wte + (size_t)tokens[bt] * C; /* [C] */
        const float *pe = wpe + (size_t)(bt % T) * C;   /* [C] */
        float *o = out + (size_t)bt * C;                /* [C] */
        for (int c = 0; c < C; c++) o[c] = te[c] + pe[c];
    }
}

/* A token can appear at many positions, so rows of dwte are shared between
 * positions. Parallelise over channels instead: a block of channels belongs
 * to one thread, which walks the positions in order. dwpe row t gets the sum
 * over the batch, again one owner per row. Deterministic for any thread
 * count. */
void zb_embed_backward(float *dwte, float *dwpe, const float *dout,
                       const int *tokens, int B, int T, int C) {
    int nblocks = (C + ZB_EMBED_COLS_PER_BLOCK - 1) / ZB_EMBED_COLS_PER_BLOCK;
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH((size_t)B * T * C))
    for (int blk = 0; blk < nblocks; blk++) {
        int c0 = blk * ZB_EMBED_COLS_PER_BLOCK;
        int c1 = c0 + ZB_EMBED_COLS_PER_BLOCK < C ? c0 + ZB_EMBED_COLS_PER_BLOCK
                                                  : C;
        for (int bt = 0; bt < B * T; bt++) {
            const float *d = dout + (size_t)bt * C;         /* [C] */
            float *dte = dwte + (size_t)tokens[bt] * C;     /* [C] */
            for (int c = c0; c < c1; c++) dte[c] += d[c];
        }
    }
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH((size_t)B * T * C))
    for (int t = 0; t < T; t++) {
        float *dpe = dwpe + (size_t)t * C; /* [C] */
        for (int b = 0; b < B; b++) {
            const float *d = dout + ((size_t)b * T + t) * C; /* [C] */
            for (int c = 0; c < C; c++) dpe[c] += d[c];
        }
    }
}

/* ---- vocabulary-parallel pieces ---- */

void zb_embed_tokens_shard(float *out, const int *tokens, const float *wtel,
                           int v0, int nv, int N, int C) {
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH((size_t)N * C))
    for (int n = 0; n < N; n++) {
        float *o = out + (size_t)n * C; /* [C] */
        int k = tokens[n] - v0;
        if (k < 0 || k >= nv) {
            for (int c = 0; c < C; c++) o[c] = 0.0f;
            continue;
        }
        const float *te = wtel + (size_t)k * C; /* [C] */
        for (int c = 0; c < C; c++) o[c] = te[c];
    }
}

void zb_embed_add_pos(float *out, const float *wpe, int B, int T, int C) {
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH((size_t)B * T * C))
    for (int bt = 0; bt < B * T; bt++) {
        const float *pe = wpe + (size_t)(bt % T) * C; /* [C] */
        float *o = out + (size_t)bt * C;              /* [C] */
        for (int c = 0; c < C; c++) o[c] = o[c] + pe[c];
    }
}

/* Same ownership as zb_embed_backward: a block of channels per thread. */
void zb_embed_tokens_shard_backward(float *dwtel, const float *dout,
                                    const int *tokens, int v0, int nv, int N,
                                    int C) {
    int nblocks = (C + ZB_EMBED_COLS_PER_BLOCK - 1) / ZB_EMBED_COLS_PER_BLOCK;
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH((size_t)N * C))
    for (int blk = 0; blk < nblocks; blk++) {
        int c0 = blk * ZB_EMBED_COLS_PER_BLOCK;
        int c1 = c0 + ZB_EMBED_COLS_PER_BLOCK < C ? c0 + ZB_EMBED_COLS_PER_BLOCK
                                                  : C;
        for (int n = 0; n < N; n++) {
            int k = tokens[n] - v0;
            if (k < 0 || k >= nv) continue;
            const float *d = dout + (size_t)n * C; /* [C] */
            float *dte = dwtel + (size_t)k * C;    /* [C] */
            for (int c = c0; c < c1; c++) dte[c] += d[c];
        }
    }
}

void zb_embed_pos_backward(float *dwpe, const float *dout, int B, int T,
                           int C) {
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH((size_t)B * T * C))
    for (int t = 0; t < T; t++) {
        float *dpe = dwpe + (size_t)t * C; /* [C] */
        for (int b = 0; b < B; b++) {
            const float *d = dout + ((size_t)b * T + t) * C; /* [C] */
            for (int c = 0; c < C; c++) dpe[c] += d[c];
        }
    }
}
