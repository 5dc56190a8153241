/* eval.c - forward-only validation loss through the schedule's F passes,
 * see eval.h. */
#include "executor/run/eval.h"

#include <math.h>
#include <signal.h>
#include <string.h>

zb_status zb_eval_alloc(zb_run_result *res, const zb_plan *plan, int first,
                        int total, zb_err *err) {
    const zb_training *t = &plan->model.train;
    if (!t->val_path[0]) return ZB_OK;
    int steps = total - first + 1;
    size_t n = 2 + (size_t)(t->val_every > 0 && steps > 0 ? steps / t->val_every + 1 : 0);
    res->val_step = zb_calloc(n, sizeof *res->val_step, err);
    res->val_loss = zb_calloc(n, sizeof *res->val_loss, err);
    res->val_t = zb_calloc(n, sizeof *res->val_t, err);
    return res->val_step && res->val_loss && res->val_t ? ZB_OK : ZB_ENOMEM;
}

bool zb_eval_due(const zb_run_ctx *c, int step) {
    const zb_training *t = &c->plan->model.train;
    if (!c->val) return false;
    return step == c->first_step - 1 || step == c->total_steps ||
           (t->val_every > 0 && step % t->val_every == 0);
}

/* An activation SEND/RECV of the program. */
static zb_status transfer(zb_rank *rk, const zb_op *op, const zb_action *a,
                          zb_err *err) {
    const zb_plan *p = rk->ctx->plan;
    bool send = op->kind == ZB_OP_SEND;
    float *buf = send ? zb_stage_act_out(rk->st, a->chunk, a->mb)
                      : zb_stage_act_in(rk->st, a->chunk, a->mb);
    if (!buf)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: evaluation has no activation "
                       "buffer for chunk %d mb %d", rk->rank, a->chunk, a->mb);
    int peer = zb_plan_rank(p, op->peer, rk->dp_rank, rk->tp_rank);
    int tag = zb_lower_tag(&p->sched, op->msg, op->vstage, op->mb);
    if (send) return rk->tr->send(rk->tr, peer, tag, buf, rk->msg_floats, err);
    return rk->tr->recv(rk->tr, peer, tag, buf, rk->msg_floats, err);
}

/* Microbatch j's F passes and activation transfers, in program order. */
static zb_status forward_mb(zb_rank *rk, int j, zb_err *err) {
    const zb_plan *p = rk->ctx->plan;
    size_t per_mb = (size_t)p->micro_batch * (size_t)p->model.arch.seq_len;
    for (int k = 0; k < rk->n_ops; k++) {
        const zb_op *op = &rk->ops[k];
        const zb_action *a = &rk->acts[op->action];
        if (a->mb != j || a->pass != ZB_F) continue;
        if (op->kind != ZB_OP_COMPUTE) {
            if (op->msg == ZB_MSG_ACT) ZB_TRY(transfer(rk, op, a, err));
            continue;
        }
        const int *tok = rk->tokens ? rk->tokens + (size_t)j * per_mb : NULL;
        const int *tgt = rk->targets ? rk->targets + (size_t)j * per_mb : NULL;
        ZB_TRY(zb_stage_forward(rk->st, a->chunk, j, tok, tgt,
                                (float)rk->ctx->loss_scale, err));
    }
    for (int c = 0; c < p->v; c++) zb_stage_drop(rk->st, c, j);
    return ZB_OK;
}

static zb_status eval_batch(zb_rank *rk, int b, zb_err *err) {
    const zb_plan *p = rk->ctx->plan;
    size_t per_mb = (size_t)p->micro_batch * (size_t)p->model.arch.seq_len;
    for (int j = 0; rk->tokens && j < p->m; j++)
        ZB_TRY(zb_data_microbatch(rk->ctx->val, b, rk->dp_rank, j, p->m,
                                  p->micro_batch, rk->tokens + j * per_mb,
                                  rk->targets + j * per_mb, err));
    for (int j = 0; j < p->m; j++) ZB_TRY(forward_mb(rk, j, err));
    /* inboxes hold one step's messages: no rank runs a batch ahead. With
     * a stop flag the barrier is an all-reduce of it, so that every rank
     * agrees to end a long pass at the same batch when a SIGINT/SIGTERM
     * came (within one batch, not after all of them and a step) */
    const volatile sig_atomic_t *stop = rk->ctx->opts->stop;
    if (!stop) return rk->tr->barrier(rk->tr, &rk->world_g, err);
    rk->red[0] = *stop;
    ZB_TRY(rk->tr->allreduce_f64(rk->tr, &rk->world_g, rk->red, 1, err));
    rk->eval_stopped = rk->red[0] != 0;
    return ZB_OK;
}

zb_status zb_eval_run(zb_rank *rk, int step, double *loss, zb_err *err) {
    zb_run_ctx *c = rk->ctx;
    const zb_plan *p = c->plan;
    int batches = p->model.train.val_batches, world = c->world;
    zb_stage_zero_grads(rk->st);
    rk->eval_stopped = false;
    for (int b = 0; b < batches && !rk->eval_stopped; b++) ZB_TRY(eval_batch(rk, b, err));
    if (rk->eval_stopped) {   /* no loss: the pass did not finish */
        zb_stage_zero_grads(rk->st);
        *loss = NAN;
        return ZB_OK;
    }
    double *red = rk->red;   /* [2 + 2*world] */
    memset(red, 0, (2 + 2 * (size_t)world) * sizeof *red);
    red[1] = rk->tp_rank == 0 ? zb_stage_loss_sum(rk->st) : 0.0;
    ZB_TRY(rk->tr->allreduce_f64(rk->tr, &rk->world_g, red,
                                 2 + 2 * (size_t)world, err));
    *loss = red[1] / ((double)batches * p->model.train.global_batch *
                      p->model.arch.seq_len);
    zb_stage_zero_grads(rk->st);
    if (rk->rank == c->lead) {   /* the result's per-step arrays */
        c->res->val_step[c->res->n_val] = step;
        c->res->val_t[c->res->n_val] = zb_now_s() - c->t0;
        c->res->val_loss[c->res->n_val++] = *loss;
    }
    return ZB_OK;
}
