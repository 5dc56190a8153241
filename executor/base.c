/* base.c - the executor's leaf helpers (base.h): clock, learning-rate
 * schedule, freeing a run's result. */
#include "executor/base.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double zb_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double zb_unix_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double zb_lr_at(const zb_optim *o, int step, int total) {
    if (o->warmup_steps > 0 && step <= o->warmup_steps)
        return o->lr * step / o->warmup_steps;
    if (!o->cosine) return o->lr;
    int decay = total - o->warmup_steps;
    if (decay <= 0) return o->lr;
    double progress = (double)(step - o->warmup_steps) / decay;
    if (progress > 1) progress = 1;
    return o->min_lr + 0.5 * (o->lr - o->min_lr) * (1 + cos(M_PI * progress));
}

/* ---- result ---- */

void zb_run_result_free(zb_run_result *res) {
    if (!res) return;
    free(res->loss);
    free(res->lr);
    free(res->grad_norm);
    free(res->step_s);
    free(res->span_s);
    free(res->busy_s);
    free(res->bubble);
    free(res->static_bytes);
    free(res->act_peak_bytes);
    free(res->pp_span_s);
    free(res->pp_busy_s);
    free(res->pp_bubble);
    free(res->pp_mem_bytes);
    free(res->send_s);
    free(res->dp_ar_s);
    free(res->emb_ar_s);
    free(res->post_s);
    free(res->trace_step);
    free(res->n_acts);
    for (int r = 0; r < res->world; r++) {
        if (res->t_start) free(res->t_start[r]);
        if (res->t_end) free(res->t_end[r]);
        if (res->x_start) free(res->x_start[r]);
        if (res->x_end) free(res->x_end[r]);
        if (res->tail_start) free(res->tail_start[r]);
        if (res->tail_end) free(res->tail_end[r]);
        if (res->params) free(res->params[r]);
    }
    free(res->t_start);
    free(res->t_end);
    free(res->x_start);
    free(res->x_end);
    free(res->tail_start);
    free(res->tail_end);
    free(res->n_ops);
    free(res->recv_s);
    free(res->stall_s);
    free(res->boundary_s);
    free(res->boundary_idle_s);
    free(res->boundary_busy_s);
    free(res->verdict_wait_s);
    free(res->params);
    free(res->n_params);
    free(res->val_step);
    free(res->val_loss);
    free(res->val_t);
    memset(res, 0, sizeof *res);
}

