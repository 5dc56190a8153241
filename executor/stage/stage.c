/* stage.c - the public stage API (stage.h): picks the backend's table of
 * operations (stage_backend.h) at zb_stage_new and forwards every call. */
#include "executor/stage/stage.h"

#include <stdio.h>
#include <stdlib.h>

#include "executor/stage/stage_backend.h"

struct zb_stage {
    const zb_stage_ops *ops;
    void *impl;              /* the backend's own state */
};

const char *zb_backend_name(zb_backend b) {
    return b == ZB_BACKEND_CUDA ? "cuda" : "cpu";
}

bool zb_backend_cuda_built(void) {
#ifdef ZB_HAVE_CUDA
    return true;
#else
    return false;
#endif
}

int zb_backend_cuda_devices(void) {
#ifdef ZB_HAVE_CUDA
    return zb_stage_cuda_device_count();
#else
    return 0;
#endif
}

void zb_backend_cuda_device_name(int device, char *buf, size_t n) {
#ifdef ZB_HAVE_CUDA
    zb_stage_cuda_device_name(device, buf, n);
#else
    snprintf(buf, n, "?");
    (void)device;
#endif
}

static const zb_stage_ops *ops_of(zb_backend b) {
#ifdef ZB_HAVE_CUDA
    if (b == ZB_BACKEND_CUDA) return &zb_stage_cuda_ops;
#endif
    return b == ZB_BACKEND_CPU ? &zb_stage_cpu_ops : NULL;
}

zb_status zb_stage_new(const zb_stage_cfg *cfg, zb_stage **out, zb_err *err) {
    *out = NULL;
    const zb_stage_ops *ops = ops_of(cfg->backend);
    if (!ops)
        return zb_fail(err, ZB_EINPUT, "backend %s: zbrun was built without "
                       "CUDA (no nvcc, cuBLAS or NCCL found at build time)",
                       zb_backend_name(cfg->backend));
    zb_stage *st = zb_calloc(1, sizeof *st, err);
    if (!st) return ZB_ENOMEM;
    st->ops = ops;
    zb_status s = ops->create(cfg, &st->impl, err);
    if (s != ZB_OK) {
        free(st);
        return s;
    }
    *out = st;
    return ZB_OK;
}

void zb_stage_free(zb_stage *st) {
    if (!st) return;
    st->ops->destroy(st->impl);
    free(st);
}

size_t zb_stage_msg_floats(const zb_stage *st) {
    return st->ops->msg_floats(st->impl);
}

float *zb_stage_act_in(zb_stage *st, int chunk, int mb) {
    return st->ops->act_in(st->impl, chunk, mb);
}
float *zb_stage_act_out(zb_stage *st, int chunk, int mb) {
    return st->ops->act_out(st->impl, chunk, mb);
}
float *zb_stage_grad_in(zb_stage *st, int chunk, int mb) {
    return st->ops->grad_in(st->impl, chunk, mb);
}
float *zb_stage_grad_out(zb_stage *st, int chunk, int mb) {
    return st->ops->grad_out(st->impl, chunk, mb);
}

zb_status zb_stage_forward(zb_stage *st, int chunk, int mb, const int *tokens,
                           const int *targets, float loss_scale, zb_err *err) {
    return st->ops->forward(st->impl, chunk, mb, tokens, targets, loss_scale,
                            err);
}
zb_status zb_stage_backward_b(zb_stage *st, int chunk, int mb, zb_err *err) {
    return st->ops->backward_b(st->impl, chunk, mb, err);
}
zb_status zb_stage_backward_w(zb_stage *st, int chunk, int mb, zb_err *err) {
    return st->ops->backward_w(st->impl, chunk, mb, err);
}
zb_status zb_stage_backward_bw(zb_stage *st, int chunk, int mb, zb_err *err) {
    return st->ops->backward_bw(st->impl, chunk, mb, err);
}

double zb_stage_loss_sum(const zb_stage *st) {
    return st->ops->loss_sum(st->impl);
}
void zb_stage_zero_grads(zb_stage *st) { st->ops->zero_grads(st->impl); }

float *zb_stage_params(zb_stage *st, size_t *n) {
    return st->ops->params(st->impl, n);
}
float *zb_stage_grads(zb_stage *st, size_t *n) {
    return st->ops->grads(st->impl, n);
}
zb_status zb_stage_params_to_host(zb_stage *st, float *dst, size_t n,
                                  zb_err *err) {
    return st->ops->params_to_host(st->impl, dst, n, err);
}
zb_status zb_stage_params_from_host(zb_stage *st, const float *src, size_t n,
                                    zb_err *err) {
    return st->ops->params_from_host(st->impl, src, n, err);
}
void zb_stage_drop(zb_stage *st, int chunk, int mb) {
    st->ops->drop(st->impl, chunk, mb);
}
float *zb_stage_tied_grad(zb_stage *st, size_t *n) {
    return st->ops->tied_grad(st->impl, n);
}
double zb_stage_grad_sumsq(const zb_stage *st) {
    return st->ops->grad_sumsq(st->impl);
}
zb_status zb_stage_adamw(zb_stage *st, float lr, float grad_scale, int t,
                         zb_err *err) {
    return st->ops->adamw(st->impl, lr, grad_scale, t, err);
}

double zb_stage_static_bytes(const zb_stage *st) {
    return st->ops->static_bytes(st->impl);
}
double zb_stage_act_peak_bytes(const zb_stage *st) {
    return st->ops->act_peak_bytes(st->impl);
}
bool zb_stage_pass_times(zb_stage *st, double *t_start, double *t_end, int n,
                         double t0) {
    return st->ops->pass_times(st->impl, t_start, t_end, n, t0);
}

zb_status zb_stage_save(const zb_stage *st, FILE *f, zb_err *err) {
    return st->ops->save(st->impl, f, err);
}
zb_status zb_stage_load(zb_stage *st, FILE *f, zb_err *err) {
    return st->ops->load(st->impl, f, err);
}
