/* stage_backend.h - private to the stage: the table of operations one
 * backend provides, one entry per public call of stage.h. stage.c owns the
 * public zb_stage (backend table + the backend's own state) and forwards
 * each zb_stage_* call to the entry of the same name with that state.
 *
 * The state is passed as void * so that every backend's functions have the
 * same, exact type (no function-pointer casts); each backend converts it
 * back to its own struct in one place. Semantics, shapes and ownership are
 * those of the matching stage.h call.
 */
#ifndef ZB_STAGE_BACKEND_H
#define ZB_STAGE_BACKEND_H

#include "executor/stage/stage.h"

typedef struct {
    const char *name;
    zb_status (*create)(const zb_stage_cfg *cfg, void **out, zb_err *err);
    void (*destroy)(void *s);
    size_t (*msg_floats)(const void *s);
    float *(*act_in)(void *s, int chunk, int mb);
    float *(*act_out)(void *s, int chunk, int mb);
    float *(*grad_in)(void *s, int chunk, int mb);
    float *(*grad_out)(void *s, int chunk, int mb);
    zb_status (*forward)(void *s, int chunk, int mb, const int *tokens,
                         const int *targets, float loss_scale, zb_err *err);
    zb_status (*backward_b)(void *s, int chunk, int mb, zb_err *err);
    zb_status (*backward_w)(void *s, int chunk, int mb, zb_err *err);
    zb_status (*backward_bw)(void *s, int chunk, int mb, zb_err *err);
    double (*loss_sum)(const void *s);
    void (*zero_grads)(void *s);
    float *(*params)(void *s, size_t *n);
    float *(*grads)(void *s, size_t *n);
    zb_status (*params_to_host)(void *s, float *dst, size_t n, zb_err *err);
    zb_status (*params_from_host)(void *s, const float *src, size_t n,
                                  zb_err *err);
    void (*drop)(void *s, int chunk, int mb);
    float *(*tied_grad)(void *s, size_t *n);
    double (*grad_sumsq)(const void *s);
    zb_status (*adamw)(void *s, float lr, float grad_scale, int t,
                       zb_err *err);
    double (*static_bytes)(const void *s);
    double (*act_peak_bytes)(const void *s);
    bool (*pass_times)(void *s, double *t_start, double *t_end, int n,
                       double t0);
    zb_status (*save)(const void *s, FILE *f, zb_err *err);
    zb_status (*load)(void *s, FILE *f, zb_err *err);
} zb_stage_ops;

/* stage_cpu.c */
extern const zb_stage_ops zb_stage_cpu_ops;

#ifdef ZB_HAVE_CUDA
/* stage_cuda.cu (C linkage) */
#ifdef __cplusplus
extern "C" {
#endif
extern const zb_stage_ops zb_stage_cuda_ops;
/* cudaGetDeviceCount, 0 on any error */
int zb_stage_cuda_device_count(void);
void zb_stage_cuda_device_name(int device, char *buf, size_t n);
#ifdef __cplusplus
}
#endif
#endif

#endif
