/* ops_cuda.cu - the op table (ops.h) on one CUDA device: cuBLAS for the
 * GEMMs, kernels/cuda/ for the rest. Every op only enqueues work on the
 * rank's one compute stream (created here; the transport orders its
 * copies against it); to_host, step_begin and pass_times wait for it, and
 * from_host waits only for copies larger than cfg.upload_bytes (small ones
 * go through a ring of pinned staging buffers, each reused once its
 * previous copy has run).
 *
 * GEMMs: the row-major descriptor becomes one column-major cuBLAS call by
 * zb_gemm_colmajor (gemm_desc.h, tested on the CPU); one cublasSetStream
 * and one workspace per handle, set at creation. A GEMM with a bias (and
 * GELU) runs as one cublasLtMatmul with the bias (GELU_AUX_BIAS) epilogue
 * where zb_gemm_lt_plan and cuBLASLt's heuristic allow, else as the bias
 * rows, a beta = 1 GEMM and a GELU kernel; ZB_CUDA_GEMM_LOG=1 prints
 * which path every biased shape took when the ops end. Precision fp32:
 * fp32 activations and plain fp32 GEMMs (CUBLAS_COMPUTE_32F, no TF32), so
 * results match the CPU to rounding. Precision bf16: activations stored in
 * bf16 (act_dtype; every kernel loads bf16, computes in fp32 and rounds
 * once on the store: kernels/cuda/act.cuh); the GEMMs take bf16 A and B
 * (activations, and the stage's bf16 copy of the weights) on the tensor
 * cores with fp32 accumulation (CUBLAS_COMPUTE_32F) into a bf16 C
 * (activations) or an fp32 C (weight gradients, beta 1; the TP partial
 * sums); parameters, gradients and AdamW stay fp32. The logits' row stride
 * is padded to a multiple of ZB_LOGITS_ALIGN elements (logits_align).
 * Attention: with cfg.attn_gemm (precision bf16) QK^T, PV and their
 * gradients are cuBLAS strided-batched GEMMs (tensor cores) around the
 * causal softmax kernels of kernels/cuda/attn_softmax.cu, keeping the
 * [T, T] probabilities (in the activations' type) as the CPU does; else
 * (fp32, the reference) the fused online-softmax kernel of
 * kernels/cuda/attention.cu, keeping only the row log-sum-exp.
 *
 * Time: two events bracket every pass; step_begin records the reference
 * event and its host time. Debugging: ZB_CUDA_SYNC=1 waits after every
 * pass, so that an asynchronous fault names its pass.
 */
extern "C" {
#include "executor/stage/cuda_choice.h"
#include "executor/stage/ops.h"
}
#include "executor/host/cuda_util.h"
#include "executor/stage/gqa_gemm.h"
#include "kernels/cuda/llama_cuda.h"
#include "kernels/cuda/vocab_cuda.h"

#include <cublasLt.h>
#include <stdint.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ZB_CUBLAS_WORKSPACE ((size_t)32 << 20) /* what cuBLAS asks on Hopper */
#define ZB_UPLOAD_RING 16                      /* pinned staging buffers */
/* Logit rows start at multiples of 128 elements (512 bytes in fp32, 256 in
 * bf16): V = 50257 would leave rows unaligned for cuBLAS and the vector
 * loads of the kernels. */
#define ZB_LOGITS_ALIGN 128
#define ZB_LT_SHAPES 64 /* GEMM shapes whose cuBLASLt choice is kept */

/* One GEMM shape with a bias epilogue (zb_gemm_lt_plan) and the alignment
 * class of its pointers: the algorithm cuBLASLt's heuristic chose for it
 * (or that it found none: the fallback), and how often each path ran. */
typedef struct {
    int epi, transa, transb, m, n, k, lda, ldb, ldc;
    long long aux_ld;
    unsigned align[6]; /* A, B, D, bias, aux (0 when none), compute */
    int ab_type, c_type; /* zb_dtype of A/B and of C/D/aux */
} lt_key;
typedef struct {
    lt_key key;
    bool found;                 /* an algorithm: the epilogue path */
    const char *why;            /* fallback reason */
    cublasLtMatmulAlgo_t algo;
    long long calls;
} lt_shape;

struct cu_ops {
    int device;
    bool bf16, debug_sync;
    bool act_bf16;            /* activations stored in bf16 (precision bf16):
                                 the kernels' _bf16 instantiations */
    cudaStream_t stream;
    cublasHandle_t blas;
    cublasLtHandle_t lt;      /* the bias/GELU epilogues */
    void *workspace;          /* ZB_CUBLAS_WORKSPACE bytes, shared by blas
                                 and lt: both run on `stream`, one GEMM
                                 after the other */
    bool gemm_log;            /* ZB_CUDA_GEMM_LOG=1: the paths at exit */
    lt_shape lt_shapes[ZB_LT_SHAPES];
    int n_lt_shapes;
    long long lt_uncached;    /* epilogue GEMMs past the table */
    double *sum_scratch;      /* zb_cuda_sum_scratch_doubles() */
    int wgrad_rows, wgrad_cols;
    bool attn_gemm;           /* attention as GEMMs + softmax kernels */
    float *wgrad_scratch;     /* zb_cuda_wgrad_scratch_floats(rows, cols) */
    void *embed_scratch;      /* the embedding backward's sort, for
                                 wgrad_rows positions */
    size_t embed_scratch_bytes;
    size_t upload_bytes;
    char *staged;             /* pinned [ZB_UPLOAD_RING, upload_bytes] */
    cudaEvent_t staged_done[ZB_UPLOAD_RING];
    int next_stage;
    int max_passes;
    cudaEvent_t *ev_start, *ev_end; /* [max_passes] */
    cudaEvent_t ev_ref;
    double ref_host_s;
};

static cu_ops *X(void *ctx) { return (cu_ops *)ctx; }

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- memory ---- */

static zb_status o_alloc(void *ctx, size_t bytes, void **out, zb_err *err) {
    cu_ops *o = X(ctx);
    *out = NULL;
    cudaError_t e = cudaMalloc(out, bytes ? bytes : 256);
    if (e != cudaSuccess) {
        cudaGetLastError(); /* clear the non-sticky error state */
        size_t free_b = 0, total_b = 0;
        cudaMemGetInfo(&free_b, &total_b);
        *out = NULL;
        return zb_fail(err, ZB_ERUNTIME, "CUDA device %d: out of device "
                       "memory: %zu bytes asked, %zu free of %zu (%s)",
                       o->device, bytes, free_b, total_b,
                       cudaGetErrorString(e));
    }
    ZB_CUDA(cudaMemsetAsync(*out, 0, bytes, o->stream));
    return ZB_OK;
}

static void o_release(void *ctx, void *p) {
    cudaStreamSynchronize(X(ctx)->stream);
    cudaFree(p);
}

static zb_status o_to_host(void *ctx, void *dst, const void *src, size_t bytes,
                           zb_err *err) {
    cu_ops *o = X(ctx);
    if (bytes == 0) return ZB_OK;
    ZB_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, o->stream));
    ZB_CUDA(cudaStreamSynchronize(o->stream));
    return ZB_OK;
}

static zb_status o_from_host(void *ctx, void *dst, const void *src,
                             size_t bytes, zb_err *err) {
    cu_ops *o = X(ctx);
    if (bytes == 0) return ZB_OK;
    if (bytes > o->upload_bytes) { /* large (parameters): copy and wait */
        ZB_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice,
                                o->stream));
        ZB_CUDA(cudaStreamSynchronize(o->stream));
        return ZB_OK;
    }
    int k = o->next_stage;
    o->next_stage = (k + 1) % ZB_UPLOAD_RING;
    char *buf = o->staged + (size_t)k * o->upload_bytes;
    ZB_CUDA(cudaEventSynchronize(o->staged_done[k]));
    memcpy(buf, src, bytes);
    ZB_CUDA(cudaMemcpyAsync(dst, buf, bytes, cudaMemcpyHostToDevice, o->stream));
    ZB_CUDA(cudaEventRecord(o->staged_done[k], o->stream));
    return ZB_OK;
}

static zb_status o_copy(void *ctx, void *dst, const void *src, size_t bytes,
                        zb_err *err) {
    if (bytes == 0) return ZB_OK;
    ZB_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice,
                            X(ctx)->stream));
    return ZB_OK;
}

static zb_status o_memset0(void *ctx, void *p, size_t bytes, zb_err *err) {
    if (bytes == 0) return ZB_OK;
    ZB_CUDA(cudaMemsetAsync(p, 0, bytes, X(ctx)->stream));
    return ZB_OK;
}

/* ---- dense ---- */

static cublasOperation_t op_of(int t) { return t ? CUBLAS_OP_T : CUBLAS_OP_N; }

static cudaDataType_t cu_type(zb_dtype t) {
    return t == ZB_DT_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

/* bf16 operands: the tensor cores with fp32 sums (CUBLAS_COMPUTE_32F);
 * fp32 operands: exact fp32, or rounded to bf16 on the way in under
 * precision bf16 (CUBLAS_COMPUTE_32F_FAST_16BF) */
static cublasComputeType_t compute_of(const cu_ops *o, zb_dtype ab) {
    if (ab == ZB_DT_BF16) return CUBLAS_COMPUTE_32F;
    return o->bf16 ? CUBLAS_COMPUTE_32F_FAST_16BF : CUBLAS_COMPUTE_32F;
}

/* ---- the bias/GELU epilogue in cuBLASLt ----
 * zb_gemm_lt_plan (gemm_desc.h, tested on the CPU) maps the descriptor to
 * CUBLASLT_EPILOGUE_BIAS (D = alpha op(A) op(B) + bias, D = C) or
 * CUBLASLT_EPILOGUE_GELU_AUX_BIAS (D = gelu_out = GELU(that), the aux
 * output = C = the pre-activation) and checks the rules of cublasLt.h
 * (CUDA 13.0): bias length = rows of D, packed; aux ld divisible by 8 and
 * >= rows of D; no batched epilogue. Types: A and B the descriptor's
 * ab_type, C, D and aux its c_type (aux takes D's type by default), the
 * bias fp32 (CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE set to CUDA_R_32F when D
 * is bf16), scale type fp32, compute compute_of(), the combinations of
 * cublasGemmEx's path. cuBLASLt's heuristic assumes
 * 256-byte aligned buffers unless told (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_
 * {A,B,C,D}_BYTES, default 256), and reads the bias and aux pointers'
 * values for their alignment, so every call tells it each pointer's
 * alignment, and the chosen algorithm is kept per shape and alignment.
 * When the plan says no, or the heuristic finds no algorithm, the GEMM
 * takes the cublasGemmEx path (bias rows, beta 1, a GELU kernel). */

static unsigned align_of(const void *p) {
    uintptr_t a = (uintptr_t)p;
    unsigned k = 1;
    while (k < 256 && a % (2 * k) == 0) k *= 2;
    return p ? k : 0;
}

static lt_key lt_key_of(const cu_ops *o, const zb_gemm_lt *p) {
    lt_key k;
    memset(&k, 0, sizeof k); /* padding too: keys compare with memcmp */
    k.epi = p->epi;
    k.transa = p->cm.transa;
    k.transb = p->cm.transb;
    k.m = p->cm.m;
    k.n = p->cm.n;
    k.k = p->cm.k;
    k.lda = p->cm.lda;
    k.ldb = p->cm.ldb;
    k.ldc = p->cm.ldc;
    k.aux_ld = p->aux_ld;
    k.align[0] = align_of(p->cm.A);
    k.align[1] = align_of(p->cm.B);
    k.align[2] = align_of(p->D);
    k.align[3] = align_of(p->bias);
    k.align[4] = align_of(p->aux);
    k.align[5] = o->bf16;
    k.ab_type = p->cm.ab_type;
    k.c_type = p->cm.c_type;
    return k;
}

/* The descriptors of one cublasLtMatmul call. */
typedef struct {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, d;
    cublasLtMatmulPreference_t pref;
} lt_call;

static void lt_call_free(lt_call *c) {
    if (c->pref) cublasLtMatmulPreferenceDestroy(c->pref);
    if (c->d) cublasLtMatrixLayoutDestroy(c->d);
    if (c->b) cublasLtMatrixLayoutDestroy(c->b);
    if (c->a) cublasLtMatrixLayoutDestroy(c->a);
    if (c->op) cublasLtMatmulDescDestroy(c->op);
}

#define LT_SET(desc, attr, val)                                                \
    ZB_CUBLAS(cublasLtMatmulDescSetAttribute(desc, attr, &(val), sizeof(val)))

/* op, layouts (column-major; A stored [k, m] when transposed, else
 * [m, k]; B likewise; D [m, n]) and the epilogue's attributes */
static zb_status lt_describe(const cu_ops *o, const zb_gemm_lt *p, lt_call *c,
                             zb_err *err) {
    const zb_gemm_cm *m = &p->cm;
    cublasComputeType_t ct = compute_of(o, m->ab_type);
    ZB_CUBLAS(cublasLtMatmulDescCreate(&c->op, ct, CUDA_R_32F));
    cublasOperation_t ta = op_of(m->transa), tb = op_of(m->transb);
    LT_SET(c->op, CUBLASLT_MATMUL_DESC_TRANSA, ta);
    LT_SET(c->op, CUBLASLT_MATMUL_DESC_TRANSB, tb);
    cublasLtEpilogue_t epi = p->epi == ZB_LT_GELU_AUX_BIAS
                                 ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS
                                 : CUBLASLT_EPILOGUE_BIAS;
    LT_SET(c->op, CUBLASLT_MATMUL_DESC_EPILOGUE, epi);
    const void *bias = p->bias;
    LT_SET(c->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
    if (m->c_type != ZB_DT_F32) {
        int32_t bt = CUDA_R_32F; /* the bias stays fp32 */
        LT_SET(c->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, bt);
    }
    if (p->epi == ZB_LT_GELU_AUX_BIAS) {
        void *aux = p->aux;
        int64_t ld = p->aux_ld;
        LT_SET(c->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, aux);
        LT_SET(c->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, ld);
    }
    cudaDataType_t ab = cu_type(m->ab_type), cd = cu_type(m->c_type);
    ZB_CUBLAS(cublasLtMatrixLayoutCreate(&c->a, ab, m->transa ? m->k : m->m,
                                         m->transa ? m->m : m->k, m->lda));
    ZB_CUBLAS(cublasLtMatrixLayoutCreate(&c->b, ab, m->transb ? m->n : m->k,
                                         m->transb ? m->k : m->n, m->ldb));
    ZB_CUBLAS(cublasLtMatrixLayoutCreate(&c->d, cd, m->m, m->n, m->ldc));
    return ZB_OK;
}

#define LT_PREF(attr, val)                                                     \
    ZB_CUBLAS(cublasLtMatmulPreferenceSetAttribute(c->pref, attr, &(val),      \
                                                   sizeof(val)))

/* The heuristic's best algorithm for this call and its pointers'
 * alignment; *found false when it has none (*why says so): no algorithm,
 * or the heuristic refusing the combination (NOT_SUPPORTED,
 * INVALID_VALUE: e.g. an epilogue this compute type lacks). Any other
 * failure fails the GEMM. */
static zb_status lt_heuristic(cu_ops *o, lt_call *c, const lt_key *k,
                              cublasLtMatmulAlgo_t *algo, bool *found,
                              const char **why, zb_err *err) {
    ZB_CUBLAS(cublasLtMatmulPreferenceCreate(&c->pref));
    uint64_t ws = ZB_CUBLAS_WORKSPACE;
    uint32_t aa = k->align[0], ab = k->align[1], ad = k->align[2];
    LT_PREF(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, ws);
    LT_PREF(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, aa);
    LT_PREF(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, ab);
    LT_PREF(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, ad);
    LT_PREF(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, ad);
    cublasLtMatmulHeuristicResult_t res;
    memset(&res, 0, sizeof res);
    int n = 0;
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(
        o->lt, c->op, c->a, c->b, c->d, c->d, c->pref, 1, &res, &n);
    *found = false;
    *why = "heuristic: no algorithm";
    if (st == CUBLAS_STATUS_NOT_SUPPORTED || st == CUBLAS_STATUS_INVALID_VALUE) {
        *why = st == CUBLAS_STATUS_NOT_SUPPORTED
                   ? "heuristic: CUBLAS_STATUS_NOT_SUPPORTED"
                   : "heuristic: CUBLAS_STATUS_INVALID_VALUE";
        return ZB_OK;
    }
    ZB_CUBLAS(st);
    if (n < 1 || res.state != CUBLAS_STATUS_SUCCESS ||
        res.workspaceSize > ZB_CUBLAS_WORKSPACE)
        return ZB_OK;
    *why = NULL;
    *algo = res.algo;
    *found = true;
    return ZB_OK;
}

/* The kept entry of this shape, or a new one (NULL when the table is
 * full: the heuristic then runs on every call). */
static lt_shape *lt_entry(cu_ops *o, const lt_key *k, bool *fresh) {
    *fresh = false;
    for (int i = 0; i < o->n_lt_shapes; i++)
        if (memcmp(&o->lt_shapes[i].key, k, sizeof *k) == 0)
            return &o->lt_shapes[i];
    if (o->n_lt_shapes == ZB_LT_SHAPES) return NULL;
    lt_shape *e = &o->lt_shapes[o->n_lt_shapes++];
    memset(e, 0, sizeof *e);
    e->key = *k;
    *fresh = true;
    return e;
}

/* Run p (an epilogue plan) through cuBLASLt; *ran false: no algorithm,
 * or cublasLtMatmul refused the call (NOT_SUPPORTED or INVALID_VALUE: it
 * enqueued nothing), and the caller takes the other path. */
static zb_status lt_gemm(cu_ops *o, const zb_gemm_lt *p, bool *ran,
                         zb_err *err) {
    lt_key k = lt_key_of(o, p);
    bool fresh, found = false;
    lt_shape *e = lt_entry(o, &k, &fresh);
    *ran = false;
    if (e && !fresh && !e->found) { /* known: no algorithm */
        e->calls++;
        return ZB_OK;
    }
    if (!e) o->lt_uncached++;
    lt_call c;
    memset(&c, 0, sizeof c);
    cublasLtMatmulAlgo_t algo;
    memset(&algo, 0, sizeof algo);
    const char *why = NULL;
    zb_status s = lt_describe(o, p, &c, err);
    if (s == ZB_OK && (!e || fresh))
        s = lt_heuristic(o, &c, &k, &algo, &found, &why, err);
    if (s != ZB_OK && fresh) o->n_lt_shapes--; /* failed: keep nothing */
    if (s == ZB_OK && e) {
        if (fresh) {
            e->found = found;
            e->why = why;
            if (found) e->algo = algo;
        }
        found = e->found;
        algo = e->algo;
        e->calls++;
    }
    if (s == ZB_OK && found) {
        const zb_gemm_cm *m = &p->cm;
        float beta = 0.0f;
        cublasStatus_t st = cublasLtMatmul(
            o->lt, c.op, &m->alpha, m->A, c.a, m->B, c.b, &beta, p->D, c.d,
            p->D, c.d, &algo, o->workspace, ZB_CUBLAS_WORKSPACE, o->stream);
        /* refused, nothing ran: NOT_SUPPORTED, or INVALID_VALUE for a
         * type combination (an fp32 bias with a bf16 D) this cuBLASLt
         * lacks; the GEMM takes the other path */
        if (st == CUBLAS_STATUS_NOT_SUPPORTED ||
            st == CUBLAS_STATUS_INVALID_VALUE) {
            found = false;
            if (e) {
                e->found = false;
                e->why = st == CUBLAS_STATUS_NOT_SUPPORTED
                             ? "cublasLtMatmul: CUBLAS_STATUS_NOT_SUPPORTED"
                             : "cublasLtMatmul: CUBLAS_STATUS_INVALID_VALUE";
            }
        } else if (st != CUBLAS_STATUS_SUCCESS) {
            s = zb_fail(err, ZB_ERUNTIME, "cublasLtMatmul %dx%dx%d (%s): %s "
                        "(%s:%d)", m->m, m->n, m->k,
                        p->epi == ZB_LT_GELU_AUX_BIAS ? "GELU_AUX_BIAS" : "BIAS",
                        zb_cublas_status_name(st), __FILE__, __LINE__);
        }
    }
    lt_call_free(&c);
    *ran = s == ZB_OK && found;
    return s;
}

/* Fallback plans (no epilogue possible) are kept in the table too, so
 * that ZB_CUDA_GEMM_LOG shows every biased shape's path. */
static void lt_count_fallback(cu_ops *o, const zb_gemm_lt *p) {
    lt_key k = lt_key_of(o, p);
    bool fresh;
    lt_shape *e = lt_entry(o, &k, &fresh);
    if (!e) {
        o->lt_uncached++;
        return;
    }
    if (fresh) e->why = p->why;
    e->calls++;
}

/* ZB_CUDA_GEMM_LOG=1: one line per biased GEMM shape, printed once when
 * the ops end (what the first GPU run has to show). */
static void lt_report(const cu_ops *o) {
    if (!o->gemm_log) return;
    for (int i = 0; i < o->n_lt_shapes; i++) {
        const lt_shape *e = &o->lt_shapes[i];
        const lt_key *k = &e->key;
        fprintf(stderr, "zb cuda gemm: m %d n %d k %d ld %d/%d/%d align %u/%u/"
                "%u bias %u: %s%s, %lld calls\n", k->m, k->n, k->k, k->lda,
                k->ldb, k->ldc, k->align[0], k->align[1], k->align[2],
                k->align[3],
                e->found ? (k->epi == ZB_LT_GELU_AUX_BIAS
                                ? "cublasLt GELU_AUX_BIAS"
                                : "cublasLt BIAS")
                         : "fallback: ",
                e->found || !e->why ? "" : e->why, e->calls);
    }
    if (o->lt_uncached)
        fprintf(stderr, "zb cuda gemm: %lld biased GEMMs past the %d kept "
                "shapes\n", o->lt_uncached, ZB_LT_SHAPES);
}

static zb_status o_gemm(void *ctx, const zb_gemm *g, zb_err *err) {
    cu_ops *o = X(ctx);
    const char *bad = zb_gemm_check(g);
    if (bad) return zb_fail(err, ZB_ERUNTIME, "gemm %dx%dx%d: %s", g->M, g->N,
                            g->K, bad);
    if (g->ab_type == ZB_DT_F32 && g->c_type == ZB_DT_BF16)
        return zb_fail(err, ZB_ERUNTIME, "gemm %dx%dx%d: fp32 operands with a "
                       "bf16 output (not a cuBLAS combination)", g->M, g->N,
                       g->K);
    bool cb = g->c_type == ZB_DT_BF16;
    size_t ce = zb_dtype_bytes(g->c_type);
    if (g->M == 0 || g->N == 0) return ZB_OK;
    if (g->bias) {
        zb_gemm_lt p;
        zb_gemm_lt_plan(g, &p);
        bool ran = false;
        if (p.epi != ZB_LT_NONE) ZB_TRY(lt_gemm(o, &p, &ran, err));
        else lt_count_fallback(o, &p);
        if (ran) return ZB_OK;
    }
    zb_gemm_cm c;
    zb_gemm_colmajor(g, &c);
    if (g->bias) {
        for (int b = 0; b < g->batch; b++) {
            char *Cb = (char *)g->C + b * g->sc * ce;
            if (cb)
                ZB_KERNEL(zb_cuda_bias_rows_bf16(Cb, g->bias, g->M, g->N,
                                                 g->ldc, o->stream));
            else
                ZB_KERNEL(zb_cuda_bias_rows((float *)Cb, g->bias, g->M, g->N,
                                            g->ldc, o->stream));
        }
        c.beta = 1.0f;
    }
    cublasComputeType_t ct = compute_of(o, c.ab_type);
    cudaDataType_t at = cu_type(c.ab_type), ctp = cu_type(c.c_type);
    if (c.batch == 1)
        ZB_CUBLAS(cublasGemmEx(o->blas, op_of(c.transa), op_of(c.transb), c.m,
                               c.n, c.k, &c.alpha, c.A, at, c.lda, c.B, at,
                               c.ldb, &c.beta, c.C, ctp, c.ldc, ct,
                               CUBLAS_GEMM_DEFAULT));
    else
        ZB_CUBLAS(cublasGemmStridedBatchedEx(
            o->blas, op_of(c.transa), op_of(c.transb), c.m, c.n, c.k, &c.alpha,
            c.A, at, c.lda, c.sa, c.B, at, c.ldb, c.sb, &c.beta, c.C, ctp,
            c.ldc, c.sc, c.batch, ct, CUBLAS_GEMM_DEFAULT));
    if (g->gelu_out)
        for (int b = 0; b < g->batch; b++) {
            char *Gb = (char *)g->gelu_out + b * g->sc * ce;
            char *Cb = (char *)g->C + b * g->sc * ce;
            size_t n = (size_t)g->M * g->N;
            if (cb)
                ZB_KERNEL(zb_cuda_gelu_forward_bf16(Gb, Cb, n, o->stream));
            else
                ZB_KERNEL(zb_cuda_gelu_forward((float *)Gb, (float *)Cb, n,
                                               o->stream));
        }
    return ZB_OK;
}

/* The full-grid weight-gradient sums need scratch sized at creation. */
static zb_status wgrad_fits(const cu_ops *o, int N, int cols, zb_err *err) {
    if (N == o->wgrad_rows && cols <= o->wgrad_cols) return ZB_OK;
    return zb_fail(err, ZB_ERUNTIME, "weight gradient of %d x %d: the CUDA "
                   "ops were sized for %d x %d", N, cols, o->wgrad_rows,
                   o->wgrad_cols);
}

/* fp32 views of the activation pointers (act_dtype fp32); with bf16
 * activations (o->act_bf16) every op takes the kernels' _bf16 entry */
#define F(p) ((float *)(p))
#define CF(p) ((const float *)(p))

static zb_status o_colsum_add(void *ctx, float *dbias, const zb_act *dout,
                              int N, int OC, zb_err *err) {
    cu_ops *o = X(ctx);
    ZB_TRY(wgrad_fits(o, N, OC, err));
    if (o->act_bf16)
        ZB_KERNEL(zb_cuda_colsum_add_bf16(dbias, dout, N, OC, o->wgrad_scratch,
                                          o->stream));
    else
        ZB_KERNEL(zb_cuda_colsum_add(dbias, CF(dout), N, OC, o->wgrad_scratch,
                                     o->stream));
    return ZB_OK;
}

static zb_status o_residual_add(void *ctx, zb_act *out, const zb_act *x,
                                const float *part, const float *bias, int N,
                                int C, zb_err *err) {
    cu_ops *o = X(ctx);
    if (o->act_bf16)
        ZB_KERNEL(zb_cuda_residual_add_bf16(out, x, part, bias, N, C,
                                            o->stream));
    else
        ZB_KERNEL(zb_cuda_residual_add(F(out), CF(x), part, bias, N, C,
                                       o->stream));
    return ZB_OK;
}

static zb_status o_gelu_bwd(void *ctx, zb_act *dinp, const zb_act *inp,
                            const zb_act *dout, size_t n, zb_err *err) {
    cu_ops *o = X(ctx);
    if (o->act_bf16)
        ZB_KERNEL(zb_cuda_gelu_backward_bf16(dinp, inp, dout, n, o->stream));
    else
        ZB_KERNEL(zb_cuda_gelu_backward(F(dinp), CF(inp), CF(dout), n,
                                        o->stream));
    return ZB_OK;
}

static zb_status o_cast(void *ctx, zb_act *dst, const float *src, size_t n,
                        zb_err *err) {
    cu_ops *o = X(ctx);
    if (n == 0) return ZB_OK;
    if (o->act_bf16) ZB_KERNEL(zb_cuda_cast_bf16(dst, src, n, o->stream));
    else
        ZB_CUDA(cudaMemcpyAsync(dst, src, n * sizeof *src,
                                cudaMemcpyDeviceToDevice, o->stream));
    return ZB_OK;
}

/* ---- LayerNorm ---- */

static zb_status o_ln_fwd(void *ctx, zb_act *out, float *mean, float *rstd,
                          const zb_act *inp, const float *w, const float *b,
                          int N, int C, zb_err *err) {
    cu_ops *o = X(ctx);
    if (o->act_bf16)
        ZB_KERNEL(zb_cuda_layernorm_forward_bf16(out, mean, rstd, inp, w, b, N,
                                                 C, o->stream));
    else
        ZB_KERNEL(zb_cuda_layernorm_forward(F(out), mean, rstd, CF(inp), w, b,
                                            N, C, o->stream));
    return ZB_OK;
}
static zb_status o_ln_bwd_input(void *ctx, zb_act *dinp, const zb_act *dout,
                                const zb_act *inp, const float *w,
                                const float *mean, const float *rstd, int N,
                                int C, zb_err *err) {
    cu_ops *o = X(ctx);
    if (o->act_bf16)
        ZB_KERNEL(zb_cuda_layernorm_backward_input_bf16(
            dinp, dout, inp, w, mean, rstd, N, C, o->stream));
    else
        ZB_KERNEL(zb_cuda_layernorm_backward_input(F(dinp), CF(dout), CF(inp),
                                                   w, mean, rstd, N, C,
                                                   o->stream));
    return ZB_OK;
}
static zb_status o_ln_bwd_weight(void *ctx, float *dw, float *db,
                                 const zb_act *dout, const zb_act *inp,
                                 const float *mean, const float *rstd, int N,
                                 int C, zb_err *err) {
    cu_ops *o = X(ctx);
    ZB_TRY(wgrad_fits(o, N, C, err));
    if (o->act_bf16)
        ZB_KERNEL(zb_cuda_layernorm_backward_weight_bf16(
            dw, db, dout, inp, mean, rstd, N, C, o->wgrad_scratch, o->stream));
    else
        ZB_KERNEL(zb_cuda_layernorm_backward_weight(
            dw, db, CF(dout), CF(inp), mean, rstd, N, C, o->wgrad_scratch,
            o->stream));
    return ZB_OK;
}

/* ---- attention ----
 * attn_gemm: per batch row b, the NH heads as one strided-batched GEMM
 * (head h is the column block h*hs of Q, K, V in qkv [T, 3C] and of out
 * [T, C]); the probabilities [B, NH, T, T] are kept for B, the scratch
 * holds dP / dS, both in the activations' type (bf16 storage: the GEMMs
 * on bf16 operands, P and dS rounded to bf16 as llm.c keeps them). Else
 * the fused fp32 kernel keeps the row log-sum-exp [B, NH, T] and
 * recomputes the scores in B (fp32 activations only). */

static size_t o_attn_saved(void *ctx, int B, int NH, int T) {
    cu_ops *o = X(ctx);
    size_t rows = (size_t)B * NH * T;
    return o->attn_gemm ? rows * T * (o->act_bf16 ? 2 : sizeof(float))
                        : rows * sizeof(float);
}

/* The activation n elements past p (the ops' element size). */
static const void *at(const cu_ops *o, const void *p, size_t n) {
    return (const char *)p + n * (o->act_bf16 ? 2 : sizeof(float));
}
static void *atw(const cu_ops *o, void *p, size_t n) {
    return (char *)p + n * (o->act_bf16 ? 2 : sizeof(float));
}

/* One GEMM per batch row b over the NH heads (strides: hs inside qkv, out
 * and dout, T*T between the heads' [T, T] matrices), all operands in the
 * activations' type. */
static zb_status head_gemm(cu_ops *o, bool ta, bool tb, int M, int N, int K,
                           float alpha, const void *A, int lda, long long sa,
                           const void *B, int ldb, long long sb, void *C,
                           int ldc, long long sc, int NH, zb_err *err) {
    zb_gemm g = {};
    g.M = M; g.N = N; g.K = K; g.ta = ta; g.tb = tb;
    g.A = A; g.lda = lda; g.sa = sa;
    g.B = B; g.ldb = ldb; g.sb = sb;
    g.C = C; g.ldc = ldc; g.sc = sc;
    g.batch = NH; g.alpha = alpha; g.beta = 0.0f;
    g.ab_type = g.c_type = o->act_bf16 ? ZB_DT_BF16 : ZB_DT_F32;
    return o_gemm(o, &g, err);
}

static zb_status softmax_fwd(cu_ops *o, void *P, int T, size_t nmat,
                             zb_err *err) {
    if (o->act_bf16)
        ZB_KERNEL(zb_cuda_attn_softmax_causal_bf16(P, T, nmat, o->stream));
    else
        ZB_KERNEL(zb_cuda_attn_softmax_causal(F(P), T, nmat, o->stream));
    return ZB_OK;
}

static zb_status softmax_bwd(cu_ops *o, void *dS, const void *P, int T,
                             size_t nmat, zb_err *err) {
    if (o->act_bf16)
        ZB_KERNEL(zb_cuda_attn_softmax_causal_backward_bf16(dS, P, T, nmat,
                                                            o->stream));
    else
        ZB_KERNEL(zb_cuda_attn_softmax_causal_backward(F(dS), CF(P), T, nmat,
                                                       o->stream));
    return ZB_OK;
}

/* P = softmax(scale Q K^T) (causal), out = P V */
static zb_status attn_gemm_fwd(cu_ops *o, void *out, void *P, const void *qkv,
                               int B, int T, int C, int NH, zb_err *err) {
    int hs = C / NH, l3 = 3 * C;
    long long TT = (long long)T * T;
    float scale = 1.0f / sqrtf((float)hs);
    for (int b = 0; b < B; b++) {
        const void *q = at(o, qkv, (size_t)b * T * l3), *k = at(o, q, C);
        ZB_TRY(head_gemm(o, false, true, T, T, hs, scale, q, l3, hs, k, l3, hs,
                         atw(o, P, (size_t)b * NH * TT), T, TT, NH, err));
    }
    ZB_TRY(softmax_fwd(o, P, T, (size_t)B * NH, err));
    for (int b = 0; b < B; b++) {
        const void *v = at(o, qkv, (size_t)b * T * l3 + 2 * C);
        ZB_TRY(head_gemm(o, false, false, T, hs, T, 1.0f,
                         at(o, P, (size_t)b * NH * TT), T, TT, v, l3, hs,
                         atw(o, out, (size_t)b * T * C), C, hs, NH, err));
    }
    return ZB_OK;
}

/* dS = P (dP - rowsum(P dP)), dP = dout V^T; dq = scale dS K,
 * dk = scale dS^T Q, dv = P^T dout (each written, =) */
static zb_status attn_gemm_bwd(cu_ops *o, void *dqkv, void *dS,
                               const void *dout, const void *qkv,
                               const void *P, int B, int T, int C, int NH,
                               zb_err *err) {
    int hs = C / NH, l3 = 3 * C;
    long long TT = (long long)T * T;
    float scale = 1.0f / sqrtf((float)hs);
    for (int b = 0; b < B; b++) {
        const void *dy = at(o, dout, (size_t)b * T * C);
        const void *v = at(o, qkv, (size_t)b * T * l3 + 2 * C);
        ZB_TRY(head_gemm(o, false, true, T, T, hs, 1.0f, dy, C, hs, v, l3, hs,
                         atw(o, dS, (size_t)b * NH * TT), T, TT, NH, err));
    }
    ZB_TRY(softmax_bwd(o, dS, P, T, (size_t)B * NH, err));
    for (int b = 0; b < B; b++) {
        size_t off = (size_t)b * T * l3;
        const void *q = at(o, qkv, off), *k = at(o, q, C);
        const void *dy = at(o, dout, (size_t)b * T * C);
        void *dq = atw(o, dqkv, off), *dk = atw(o, dq, C), *dv = atw(o, dq, 2 * C);
        const void *ds = at(o, dS, (size_t)b * NH * TT);
        const void *p = at(o, P, (size_t)b * NH * TT);
        ZB_TRY(head_gemm(o, false, false, T, hs, T, scale, ds, T, TT, k, l3,
                         hs, dq, l3, hs, NH, err));
        ZB_TRY(head_gemm(o, true, false, T, hs, T, scale, ds, T, TT, q, l3, hs,
                         dk, l3, hs, NH, err));
        ZB_TRY(head_gemm(o, true, false, T, hs, T, 1.0f, p, T, TT, dy, C, hs,
                         dv, l3, hs, NH, err));
    }
    return ZB_OK;
}

static zb_status o_attn_fwd(void *ctx, zb_act *out, void *saved,
                            const zb_act *qkv, int B, int T, int C, int NH,
                            zb_err *err) {
    cu_ops *o = X(ctx);
    if (o->attn_gemm)
        return attn_gemm_fwd(o, out, saved, qkv, B, T, C, NH, err);
    ZB_KERNEL(zb_cuda_attention_forward(F(out), F(saved), CF(qkv), B, T, C,
                                        NH, o->stream));
    return ZB_OK;
}
static zb_status o_attn_bwd(void *ctx, zb_act *dqkv, void *scratch,
                            const zb_act *dout, const zb_act *qkv,
                            const zb_act *out, const void *saved, int B,
                            int T, int C, int NH, zb_err *err) {
    cu_ops *o = X(ctx);
    if (o->attn_gemm)
        return attn_gemm_bwd(o, dqkv, scratch, dout, qkv, saved, B, T, C, NH,
                             err);
    ZB_KERNEL(zb_cuda_attention_backward(F(dqkv), F(scratch), CF(dout),
                                         CF(qkv), CF(out), CF(saved), B, T, C,
                                         NH, o->stream));
    return ZB_OK;
}

/* ---- embedding ---- */

static zb_status o_embed_tokens(void *ctx, float *out, const int *tokens,
                                const float *wtel, int v0, int nv, int N,
                                int C, zb_err *err) {
    ZB_KERNEL(zb_cuda_embed_tokens(out, tokens, wtel, v0, nv, N, C,
                                   X(ctx)->stream));
    return ZB_OK;
}
/* out = tok + wpe (fp32: tok copied into out, wpe added in place) */
static zb_status o_embed_add_pos(void *ctx, zb_act *out, const float *tok,
                                 const float *wpe, int B, int T, int C,
                                 zb_err *err) {
    cu_ops *o = X(ctx);
    if (o->act_bf16) {
        ZB_KERNEL(zb_cuda_embed_add_pos_bf16(out, tok, wpe, B, T, C,
                                             o->stream));
        return ZB_OK;
    }
    if (CF(out) != tok)
        ZB_CUDA(cudaMemcpyAsync(out, tok, (size_t)B * T * C * sizeof *tok,
                                cudaMemcpyDeviceToDevice, o->stream));
    ZB_KERNEL(zb_cuda_embed_add_pos(F(out), wpe, B, T, C, o->stream));
    return ZB_OK;
}
static zb_status o_embed_tokens_bwd(void *ctx, float *dwtel,
                                    const zb_act *dout, const int *tokens,
                                    int v0, int nv, int N, int C,
                                    zb_err *err) {
    cu_ops *o = X(ctx);
    if (N > o->wgrad_rows)
        return zb_fail(err, ZB_ERUNTIME, "embedding backward of %d positions: "
                       "the CUDA ops were sized for %d", N, o->wgrad_rows);
    if (o->act_bf16)
        ZB_KERNEL(zb_cuda_embed_tokens_backward_bf16(
            dwtel, dout, tokens, v0, nv, N, C, o->embed_scratch,
            o->embed_scratch_bytes, o->stream));
    else
        ZB_KERNEL(zb_cuda_embed_tokens_backward(
            dwtel, CF(dout), tokens, v0, nv, N, C, o->embed_scratch,
            o->embed_scratch_bytes, o->stream));
    return ZB_OK;
}
static zb_status o_embed_pos_bwd(void *ctx, float *dwpe, const zb_act *dout,
                                 int B, int T, int C, zb_err *err) {
    cu_ops *o = X(ctx);
    if (o->act_bf16)
        ZB_KERNEL(zb_cuda_embed_pos_backward_bf16(dwpe, dout, B, T, C,
                                                  o->stream));
    else
        ZB_KERNEL(zb_cuda_embed_pos_backward(dwpe, CF(dout), B, T, C,
                                             o->stream));
    return ZB_OK;
}

/* ---- cross-entropy ---- */

static zb_status o_ce_max(void *ctx, double *rowmax, const zb_act *zl, int N,
                          int Vl, int ld, zb_err *err) {
    cu_ops *o = X(ctx);
    if (o->act_bf16)
        ZB_KERNEL(zb_cuda_ce_max_bf16(rowmax, zl, N, Vl, ld, o->stream));
    else ZB_KERNEL(zb_cuda_ce_max(rowmax, CF(zl), N, Vl, ld, o->stream));
    return ZB_OK;
}
static zb_status o_ce_max_combine(void *ctx, double *tab, int tp, int N,
                                  zb_err *err) {
    ZB_KERNEL(zb_cuda_ce_max_combine(tab, tp, N, X(ctx)->stream));
    return ZB_OK;
}
static zb_status o_ce_stats(void *ctx, double *S, double *Zt,
                            const zb_act *zl, const double *M,
                            const int *targets, int v0, int N, int Vl, int ld,
                            zb_err *err) {
    cu_ops *o = X(ctx);
    if (o->act_bf16)
        ZB_KERNEL(zb_cuda_ce_stats_bf16(S, Zt, zl, M, targets, v0, N, Vl, ld,
                                        o->stream));
    else
        ZB_KERNEL(zb_cuda_ce_stats(S, Zt, CF(zl), M, targets, v0, N, Vl, ld,
                                   o->stream));
    return ZB_OK;
}
static zb_status o_ce_loss(void *ctx, double *acc, float *losses,
                           const double *M, const double *S, const double *Zt,
                           int N, zb_err *err) {
    ZB_KERNEL(zb_cuda_ce_loss(acc, losses, M, S, Zt, N, X(ctx)->stream));
    return ZB_OK;
}
static zb_status o_ce_bwd(void *ctx, zb_act *dzl, const zb_act *zl,
                          const double *M, const double *S, const int *targets,
                          int v0, float scale, int N, int Vl, int ld,
                          zb_err *err) {
    cu_ops *o = X(ctx);
    if (o->act_bf16)
        ZB_KERNEL(zb_cuda_ce_backward_bf16(dzl, zl, M, S, targets, v0, scale,
                                           N, Vl, ld, o->stream));
    else
        ZB_KERNEL(zb_cuda_ce_backward(F(dzl), CF(zl), M, S, targets, v0, scale,
                                      N, Vl, ld, o->stream));
    return ZB_OK;
}

static zb_status o_ce_fused(void *ctx, double *acc, float *losses,
                            zb_act *dzl, const zb_act *zl, const int *targets,
                            float scale, int N, int V, int ld, zb_err *err) {
    cu_ops *o = X(ctx);
    if (o->act_bf16)
        ZB_KERNEL(zb_cuda_ce_fused_bf16(acc, losses, dzl, zl, targets, scale,
                                        N, V, ld, o->stream));
    else
        ZB_KERNEL(zb_cuda_ce_fused(acc, losses, F(dzl), CF(zl), targets, scale,
                                   N, V, ld, o->stream));
    return ZB_OK;
}

/* ---- optimizer and norms ---- */

static zb_status o_sumsq_add(void *ctx, double *acc, const float *x, size_t n,
                             zb_err *err) {
    ZB_KERNEL(zb_cuda_sumsq_add(acc, X(ctx)->sum_scratch, x, n, X(ctx)->stream));
    return ZB_OK;
}
static zb_status o_adamw(void *ctx, float *p, const float *g, float *m,
                         float *v, size_t n, float lr, float beta1,
                         float beta2, float eps, float wd, float grad_scale,
                         int t, zb_err *err) {
    ZB_KERNEL(zb_cuda_adamw_update(p, g, m, v, n, lr, beta1, beta2, eps, wd,
                                   grad_scale, t, X(ctx)->stream));
    return ZB_OK;
}

/* ---- time ---- */

static zb_status o_step_begin(void *ctx, zb_err *err) {
    cu_ops *o = X(ctx);
    ZB_CUDA(cudaStreamSynchronize(o->stream));
    ZB_CUDA(cudaEventRecord(o->ev_ref, o->stream));
    o->ref_host_s = mono_s();
    return ZB_OK;
}

static zb_status o_pass_begin(void *ctx, int i, zb_err *err) {
    cu_ops *o = X(ctx);
    if (i < 0 || i >= o->max_passes) return ZB_OK;
    ZB_CUDA(cudaEventRecord(o->ev_start[i], o->stream));
    return ZB_OK;
}

static zb_status o_pass_end(void *ctx, int i, zb_err *err) {
    cu_ops *o = X(ctx);
    if (i >= 0 && i < o->max_passes)
        ZB_CUDA(cudaEventRecord(o->ev_end[i], o->stream));
    if (o->debug_sync) { /* name the pass an asynchronous fault came from */
        cudaError_t e = cudaStreamSynchronize(o->stream);
        if (e == cudaSuccess) e = cudaGetLastError();
        if (e != cudaSuccess)
            return zb_fail(err, ZB_ERUNTIME, "pass %d of the step: %s "
                           "(ZB_CUDA_SYNC)", i, cudaGetErrorString(e));
    }
    return ZB_OK;
}

/* Event times on the host clock through the reference event. */
static bool o_pass_times(void *ctx, double *t_start, double *t_end, int n,
                         double t0) {
    cu_ops *o = X(ctx);
    if (n > o->max_passes) return false;
    if (cudaStreamSynchronize(o->stream) != cudaSuccess) return false;
    for (int i = 0; i < n; i++) {
        float a_ms, b_ms;
        if (cudaEventElapsedTime(&a_ms, o->ev_ref, o->ev_start[i]) != cudaSuccess ||
            cudaEventElapsedTime(&b_ms, o->ev_ref, o->ev_end[i]) != cudaSuccess)
            return false;
        t_start[i] = o->ref_host_s - t0 + 1e-3 * a_ms;
        t_end[i] = o->ref_host_s - t0 + 1e-3 * b_ms;
    }
    return true;
}

/* ---- lifetime ---- */

static void o_destroy(void *ctx) {
    cu_ops *o = X(ctx);
    if (!o) return;
    cudaSetDevice(o->device);
    if (o->stream) cudaStreamSynchronize(o->stream);
    for (int i = 0; i < o->max_passes; i++) {
        if (o->ev_start && o->ev_start[i]) cudaEventDestroy(o->ev_start[i]);
        if (o->ev_end && o->ev_end[i]) cudaEventDestroy(o->ev_end[i]);
    }
    free(o->ev_start);
    free(o->ev_end);
    if (o->ev_ref) cudaEventDestroy(o->ev_ref);
    for (int k = 0; k < ZB_UPLOAD_RING; k++)
        if (o->staged_done[k]) cudaEventDestroy(o->staged_done[k]);
    if (o->staged) cudaFreeHost(o->staged);
    if (o->workspace) cudaFree(o->workspace);
    if (o->sum_scratch) cudaFree(o->sum_scratch);
    if (o->wgrad_scratch) cudaFree(o->wgrad_scratch);
    if (o->embed_scratch) cudaFree(o->embed_scratch);
    lt_report(o);
    if (o->lt) cublasLtDestroy(o->lt);
    if (o->blas) cublasDestroy(o->blas);
    if (o->stream) cudaStreamDestroy(o->stream);
    free(o);
}

static zb_status events_init(cu_ops *o, zb_err *err) {
    size_t np = (size_t)(o->max_passes > 0 ? o->max_passes : 1);
    o->ev_start = (cudaEvent_t *)zb_calloc(np, sizeof(cudaEvent_t), err);
    o->ev_end = (cudaEvent_t *)zb_calloc(np, sizeof(cudaEvent_t), err);
    if (!o->ev_start || !o->ev_end) return ZB_ENOMEM;
    for (int i = 0; i < o->max_passes; i++) {
        ZB_CUDA(cudaEventCreate(&o->ev_start[i]));
        ZB_CUDA(cudaEventCreate(&o->ev_end[i]));
    }
    ZB_CUDA(cudaEventCreate(&o->ev_ref));
    ZB_CUDA(cudaMallocHost((void **)&o->staged,
                           ZB_UPLOAD_RING * o->upload_bytes));
    for (int k = 0; k < ZB_UPLOAD_RING; k++) {
        ZB_CUDA(cudaEventCreateWithFlags(&o->staged_done[k],
                                         cudaEventDisableTiming));
        ZB_CUDA(cudaEventRecord(o->staged_done[k], o->stream));
    }
    return ZB_OK;
}

static zb_status device_init(cu_ops *o, zb_err *err) {
    ZB_CUDA(cudaSetDevice(o->device));
    ZB_CUDA(cudaStreamCreateWithFlags(&o->stream, cudaStreamNonBlocking));
    ZB_CUBLAS(cublasCreate(&o->blas));
    /* one stream and one workspace for the handle's life */
    ZB_CUBLAS(cublasSetStream(o->blas, o->stream));
    ZB_CUDA(cudaMalloc(&o->workspace, ZB_CUBLAS_WORKSPACE));
    ZB_CUBLAS(cublasSetWorkspace(o->blas, o->workspace, ZB_CUBLAS_WORKSPACE));
    /* plain fp32: no TF32, so the GPU matches the CPU to fp32 rounding */
    ZB_CUBLAS(cublasSetMathMode(o->blas, CUBLAS_DEFAULT_MATH));
    ZB_CUBLAS(cublasLtCreate(&o->lt));
    ZB_CUDA(cudaMalloc((void **)&o->sum_scratch,
                       zb_cuda_sum_scratch_doubles() * sizeof(double)));
    ZB_CUDA(cudaMalloc((void **)&o->wgrad_scratch,
                       zb_cuda_wgrad_scratch_floats(o->wgrad_rows,
                                                    o->wgrad_cols) *
                           sizeof(float)));
    ZB_CUDA(zb_cuda_embed_scratch_bytes(o->wgrad_rows, &o->embed_scratch_bytes));
    ZB_CUDA(cudaMalloc(&o->embed_scratch, o->embed_scratch_bytes));
    return events_init(o, err);
}

static void llama_ops(zb_ops *t);
static void vocab_ops(zb_ops *t);

extern "C" zb_status zb_ops_cuda(const zb_ops_cuda_cfg *cfg, zb_ops *ops,
                                 zb_err *err) {
    cu_ops *o = (cu_ops *)zb_calloc(1, sizeof *o, err);
    if (!o) return ZB_ENOMEM;
    o->device = cfg->device;
    o->bf16 = cfg->bf16;
    o->act_bf16 = cfg->bf16; /* precision bf16: bf16 activations */
    o->max_passes = cfg->max_passes;
    o->upload_bytes = cfg->upload_bytes > 0 ? cfg->upload_bytes : 1;
    o->wgrad_rows = cfg->wgrad_rows;
    o->attn_gemm = cfg->attn_gemm;
    o->wgrad_cols = cfg->wgrad_cols > 0 ? cfg->wgrad_cols : 1;
    const char *sync = getenv("ZB_CUDA_SYNC");
    o->debug_sync = sync && sync[0] == '1';
    const char *glog = getenv("ZB_CUDA_GEMM_LOG");
    o->gemm_log = glog && glog[0] == '1';
    const char *bad = zb_cuda_ops_cfg_refusal(o->act_bf16, cfg->attn_gemm);
    if (bad) {
        free(o);
        return zb_fail(err, ZB_EINPUT, "%s", bad);
    }
    zb_status s = device_init(o, err);
    if (s != ZB_OK) {
        o_destroy(o);
        return s;
    }
    zb_ops t = {};
    llama_ops(&t);
    vocab_ops(&t);
    t.name = "cuda";
    t.ctx = o;
    t.stream = (void *)o->stream;
    t.act_dtype = o->act_bf16 ? ZB_DT_BF16 : ZB_DT_F32;
    t.act_align = 256;
    t.logits_align = ZB_LOGITS_ALIGN;
    t.alloc = o_alloc;
    t.release = o_release;
    t.to_host = o_to_host;
    t.from_host = o_from_host;
    t.copy = o_copy;
    t.memset0 = o_memset0;
    t.gemm = o_gemm;
    t.colsum_add = o_colsum_add;
    t.residual_add = o_residual_add;
    t.gelu_bwd = o_gelu_bwd;
    t.cast = o_cast;
    t.ln_fwd = o_ln_fwd;
    t.ln_bwd_input = o_ln_bwd_input;
    t.ln_bwd_weight = o_ln_bwd_weight;
    t.attn_saved_bytes = o_attn_saved;
    t.attn_scratch_bytes = o_attn_saved;
    t.attn_fwd = o_attn_fwd;
    t.attn_bwd = o_attn_bwd;
    t.embed_tokens = o_embed_tokens;
    t.embed_add_pos = o_embed_add_pos;
    t.embed_tokens_bwd = o_embed_tokens_bwd;
    t.embed_pos_bwd = o_embed_pos_bwd;
    t.ce_max = o_ce_max;
    t.ce_max_combine = o_ce_max_combine;
    t.ce_stats = o_ce_stats;
    t.ce_loss = o_ce_loss;
    t.ce_bwd = o_ce_bwd;
    t.ce_fused = o_ce_fused;
    t.sumsq_add = o_sumsq_add;
    t.adamw = o_adamw;
    t.step_begin = o_step_begin;
    t.pass_begin = o_pass_begin;
    t.pass_end = o_pass_end;
    t.pass_times = o_pass_times;
    t.destroy = o_destroy;
    *ops = t;
    return ZB_OK;
}

extern "C" bool zb_ops_cuda_attention_supported(int C, int NH) {
    return zb_cuda_attention_supported(C, NH);
}

extern "C" int zb_ops_cuda_device_count(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError(); /* no driver or no device: clear, report 0 */
        return 0;
    }
    return n;
}

extern "C" void zb_ops_cuda_device_name(int device, char *buf, size_t n) {
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
        cudaGetLastError();
        snprintf(buf, n, "?");
        return;
    }
    snprintf(buf, n, "%s, %.0f GiB", prop.name,
             (double)prop.totalGlobalMem / (1024.0 * 1024.0 * 1024.0));
}

/* ---- Llama-shaped blocks (ops.h, appended): the kernels of
 * kernels/cuda/llama_cuda.h, and GQA as GEMMs around the softmax kernels
 * ---- */

static zb_status o_rms_fwd(void *ctx, zb_act *out, float *rstd,
                           const zb_act *inp, const float *w, int N, int C,
                           zb_err *err) {
    cu_ops *o = X(ctx);
    if (o->act_bf16)
        ZB_KERNEL(zb_cuda_rmsnorm_forward_bf16(out, rstd, inp, w, N, C,
                                               o->stream));
    else
        ZB_KERNEL(zb_cuda_rmsnorm_forward(F(out), rstd, CF(inp), w, N, C,
                                          o->stream));
    return ZB_OK;
}

static zb_status o_rms_bwd_input(void *ctx, zb_act *dinp, const zb_act *dout,
                                 const zb_act *inp, const float *w,
                                 const float *rstd, int N, int C,
                                 zb_err *err) {
    cu_ops *o = X(ctx);
    if (o->act_bf16)
        ZB_KERNEL(zb_cuda_rmsnorm_backward_input_bf16(dinp, dout, inp, w, rstd,
                                                      N, C, o->stream));
    else
        ZB_KERNEL(zb_cuda_rmsnorm_backward_input(F(dinp), CF(dout), CF(inp), w,
                                                 rstd, N, C, o->stream));
    return ZB_OK;
}

static zb_status o_rms_bwd_weight(void *ctx, float *dw, const zb_act *dout,
                                  const zb_act *inp, const float *rstd, int N,
                                  int C, zb_err *err) {
    cu_ops *o = X(ctx);
    ZB_TRY(wgrad_fits(o, N, C, err));
    if (o->act_bf16)
        ZB_KERNEL(zb_cuda_rmsnorm_backward_weight_bf16(
            dw, dout, inp, rstd, N, C, o->wgrad_scratch, o->stream));
    else
        ZB_KERNEL(zb_cuda_rmsnorm_backward_weight(
            dw, CF(dout), CF(inp), rstd, N, C, o->wgrad_scratch, o->stream));
    return ZB_OK;
}

static zb_status o_swiglu_fwd(void *ctx, zb_act *out, const zb_act *ab, int N,
                              int Fn, zb_err *err) {
    cu_ops *o = X(ctx);
    if (o->act_bf16)
        ZB_KERNEL(zb_cuda_swiglu_forward_bf16(out, ab, N, Fn, o->stream));
    else
        ZB_KERNEL(zb_cuda_swiglu_forward(F(out), CF(ab), N, Fn, o->stream));
    return ZB_OK;
}

static zb_status o_swiglu_bwd(void *ctx, zb_act *dab, const zb_act *ab,
                              const zb_act *dout, int N, int Fn, zb_err *err) {
    cu_ops *o = X(ctx);
    if (o->act_bf16)
        ZB_KERNEL(zb_cuda_swiglu_backward_bf16(dab, ab, dout, N, Fn,
                                               o->stream));
    else
        ZB_KERNEL(zb_cuda_swiglu_backward(F(dab), CF(ab), CF(dout), N, Fn,
                                          o->stream));
    return ZB_OK;
}

static zb_status o_rope_fwd(void *ctx, zb_act *x, int B, int T, int H, int hs,
                            int ld, float theta, zb_err *err) {
    cu_ops *o = X(ctx);
    if (o->act_bf16)
        ZB_KERNEL(zb_cuda_rope_forward_bf16(x, B, T, H, hs, ld, theta,
                                            o->stream));
    else
        ZB_KERNEL(zb_cuda_rope_forward(F(x), B, T, H, hs, ld, theta,
                                       o->stream));
    return ZB_OK;
}

static zb_status o_rope_bwd(void *ctx, zb_act *dx, int B, int T, int H,
                            int hs, int ld, float theta, zb_err *err) {
    cu_ops *o = X(ctx);
    if (o->act_bf16)
        ZB_KERNEL(zb_cuda_rope_backward_bf16(dx, B, T, H, hs, ld, theta,
                                             o->stream));
    else
        ZB_KERNEL(zb_cuda_rope_backward(F(dx), B, T, H, hs, ld, theta,
                                        o->stream));
    return ZB_OK;
}

/* GQA: the [B, NH, T, T] probabilities (saved) and dP / dS (scratch) in
 * the activations' type, whichever attention the plain op uses (the fused
 * kernel has no kv head sharing). */
static size_t o_gqa_saved(void *ctx, int B, int NH, int T) {
    return (size_t)B * NH * T * T * (X(ctx)->act_bf16 ? 2 : sizeof(float));
}

/* The GEMMs of executor/stage/gqa_gemm.h (tested on the CPU in
 * tests/unit/test_llama_ops.c) around the softmax kernels. */
static zb_status gqa_geo_of(const cu_ops *o, zb_gqa_geo *q, int T, int C,
                            int NH, int KVH, zb_err *err) {
    const char *bad = zb_gqa_geo_init(q, T, C, NH, KVH,
                                      o->act_bf16 ? ZB_DT_BF16 : ZB_DT_F32);
    if (bad)
        return zb_fail(err, ZB_EINPUT, "attention: %d heads of width %d with "
                       "%d key/value heads: %s", NH, C, KVH, bad);
    return ZB_OK;
}

/* GEMM `which` for every batch row and group member */
static zb_status gqa_gemms(cu_ops *o, const zb_gqa_geo *q, int which, int B,
                           const zb_gqa_bufs *x, zb_err *err) {
    for (int b = 0; b < B; b++)
        for (int g = 0; g < q->G; g++) {
            zb_gemm d = zb_gqa_gemm(q, which, b, g, x);
            ZB_TRY(o_gemm(o, &d, err));
        }
    return ZB_OK;
}

/* P = softmax(scale Q K^T) (causal, into saved), out = P V */
static zb_status o_gqa_fwd(void *ctx, zb_act *out, void *P, const zb_act *qkv,
                           int B, int T, int C, int NH, int KVH, zb_err *err) {
    cu_ops *o = X(ctx);
    zb_gqa_geo q;
    ZB_TRY(gqa_geo_of(o, &q, T, C, NH, KVH, err));
    zb_gqa_bufs x = {};
    x.qkv = qkv, x.P = P, x.S = P, x.out = out;
    ZB_TRY(gqa_gemms(o, &q, ZB_GQA_SCORES, B, &x, err));
    ZB_TRY(softmax_fwd(o, P, T, (size_t)B * NH, err));
    return gqa_gemms(o, &q, ZB_GQA_OUT, B, &x, err);
}

/* dS = P (dP - rowsum(P dP)), dP = dout V^T (in scratch); then dq, and
 * dk, dv summed over each group in order: dqkv written (=) */
static zb_status o_gqa_bwd(void *ctx, zb_act *dqkv, void *dS,
                           const zb_act *dout, const zb_act *qkv,
                           const zb_act *out, const void *P, int B, int T,
                           int C, int NH, int KVH, zb_err *err) {
    cu_ops *o = X(ctx);
    zb_gqa_geo q;
    ZB_TRY(gqa_geo_of(o, &q, T, C, NH, KVH, err));
    zb_gqa_bufs x = {};
    x.qkv = qkv, x.dout = dout, x.P = P, x.S = dS, x.dqkv = dqkv;
    ZB_TRY(gqa_gemms(o, &q, ZB_GQA_DP, B, &x, err));
    ZB_TRY(softmax_bwd(o, dS, P, T, (size_t)B * NH, err));
    ZB_TRY(gqa_gemms(o, &q, ZB_GQA_DQ, B, &x, err));
    ZB_TRY(gqa_gemms(o, &q, ZB_GQA_DK, B, &x, err));
    return gqa_gemms(o, &q, ZB_GQA_DV, B, &x, err);
}

static void llama_ops(zb_ops *t) {
    t->rms_fwd = o_rms_fwd;
    t->rms_bwd_input = o_rms_bwd_input;
    t->rms_bwd_weight = o_rms_bwd_weight;
    t->swiglu_fwd = o_swiglu_fwd;
    t->swiglu_bwd = o_swiglu_bwd;
    t->rope_fwd = o_rope_fwd;
    t->rope_bwd = o_rope_bwd;
    t->gqa_saved_bytes = o_gqa_saved;
    t->gqa_fwd = o_gqa_fwd;
    t->gqa_bwd = o_gqa_bwd;
}

/* ---- vocabulary parallelism over the pipeline (ops.h, appended): the
 * kernels of kernels/cuda/vocab_cuda.h ---- */

static zb_status o_vocab_combine(void *ctx, double *out, const double *tab,
                                 int p, int N, zb_err *err) {
    ZB_KERNEL(zb_cuda_vocab_combine(out, tab, p, N, X(ctx)->stream));
    return ZB_OK;
}
static zb_status o_vocab_exp(void *ctx, zb_act *P, const zb_act *zl,
                             const double *m, int N, int Vl, int ld,
                             zb_err *err) {
    cu_ops *o = X(ctx);
    if (o->act_bf16)
        ZB_KERNEL(zb_cuda_vocab_exp_bf16(P, zl, m, N, Vl, ld, o->stream));
    else
        ZB_KERNEL(zb_cuda_vocab_exp(F(P), CF(zl), m, N, Vl, ld, o->stream));
    return ZB_OK;
}
static zb_status o_vocab_dx(void *ctx, float *dx, const float *A,
                            const float *G, const double *m, const double *MS,
                            float scale, int N, int C, zb_err *err) {
    ZB_KERNEL(zb_cuda_vocab_dx(dx, A, G, m, MS, scale, N, C, X(ctx)->stream));
    return ZB_OK;
}

static void vocab_ops(zb_ops *t) {
    t->vocab_combine = o_vocab_combine;
    t->vocab_exp = o_vocab_exp;
    t->vocab_dx = o_vocab_dx;
}
