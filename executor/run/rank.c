/* rank.c - the life of one rank thread inside zb_run (run_ctx.h): build the
 * stage, load the checkpoint when resuming (else the llm.c init weights when
 * the model names them, llmc.h), evaluate the validation loss (eval.h), then
 * per step: read the batch, run the pipeline program, synchronise gradients,
 * take the optimizer step, record timings, maybe evaluate, maybe checkpoint.
 *
 * Buffers that take part in all-reduces (gradients, rk->red) live until
 * every thread is joined: the local transport reads peers' buffers in
 * place, so a rank that fails must not free anything a peer may still read.
 * runtime.c frees the stages after the join.
 */
#include <math.h>
#include <signal.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "executor/host/affinity.h"
#include "executor/state/checkpoint.h"
#include "executor/run/eval.h"
#include "executor/state/llmc.h"
#include "executor/host/memlimit.h"
#include "executor/run/run_ctx.h"
#include "executor/host/watchdog.h"

/* CPU seconds of the calling thread. */
static double thread_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- the step boundary (zb_run_result's boundary_*) ----
 * A mark is a moment on both clocks. Between the end of the pipeline
 * program and the point where the next step may start, bnd_add adds an
 * interval to the step's boundary wall and busy (thread CPU) time, and
 * bnd_wait adds the off-CPU time of one blocking collective to its idle
 * time and returns it: the transports sleep while they wait for a slower
 * member, and what the collective computes (a share of the sum) is CPU
 * time, so not idle. */
typedef struct {
    double wall, cpu;
} zb_mark;

static zb_mark mark_now(void) { return (zb_mark){zb_now_s(), thread_cpu_s()}; }

static void bnd_add(zb_rank *rk, zb_mark m) {
    rk->bnd_wall += zb_now_s() - m.wall;
    rk->bnd_busy += thread_cpu_s() - m.cpu;
}

static double bnd_wait(zb_rank *rk, zb_mark m) {
    double off = (zb_now_s() - m.wall) - (thread_cpu_s() - m.cpu);
    rk->bnd_idle += off > 0 ? off : 0;
    return off > 0 ? off : 0;
}

/* The step's boundary times into the per-step arrays (index k). */
static void record_boundary(zb_rank *rk, int k) {
    size_t at = (size_t)k * (size_t)rk->ctx->world + (size_t)rk->rank;
    rk->ctx->step_bnd[0][at] = rk->bnd_wall;
    rk->ctx->step_bnd[1][at] = rk->bnd_idle;
    rk->ctx->step_bnd[2][at] = rk->bnd_busy;
    rk->ctx->step_bnd[3][at] = rk->bnd_verdict;
}

/* ---- one step's pieces ---- */

/* Tokens and targets of every microbatch of this DP rank for 1-based step
 * `step` (data batch step-1). */
static zb_status load_batches(zb_rank *rk, int step, zb_err *err) {
    const zb_plan *p = rk->ctx->plan;
    if (!rk->tokens) return ZB_OK;
    size_t per_mb = (size_t)p->micro_batch * (size_t)p->model.arch.seq_len;
    for (int j = 0; j < p->m; j++)
        ZB_TRY(zb_data_microbatch(rk->ctx->data, step - 1, rk->dp_rank, j,
                                  p->m, p->micro_batch, rk->tokens + j * per_mb,
                                  rk->targets + j * per_mb, err));
    return ZB_OK;
}

/* One compute action, timed. */
static zb_status run_action(zb_rank *rk, int i, zb_err *err) {
    const zb_plan *p = rk->ctx->plan;
    const zb_action *a = &rk->acts[i];
    size_t per_mb = (size_t)p->micro_batch * (size_t)p->model.arch.seq_len;
    const int *tok = rk->tokens ? rk->tokens + a->mb * per_mb : NULL;
    const int *tgt = rk->targets ? rk->targets + a->mb * per_mb : NULL;
    double t = zb_now_s(), cpu = thread_cpu_s();
    zb_status s;
    switch (a->pass) {
    case ZB_F:
        s = zb_stage_forward(rk->st, a->chunk, a->mb, tok, tgt,
                             (float)rk->ctx->loss_scale, err);
        break;
    case ZB_B: s = zb_stage_backward_b(rk->st, a->chunk, a->mb, err); break;
    case ZB_W: s = zb_stage_backward_w(rk->st, a->chunk, a->mb, err); break;
    case ZB_BW: s = zb_stage_backward_bw(rk->st, a->chunk, a->mb, err); break;
    case ZB_S: s = zb_stage_vocab_s(rk->st, a->mb, tgt, err); break;
    case ZB_T:
        s = zb_stage_vocab_t(rk->st, a->mb, (float)rk->ctx->loss_scale, err);
        break;
    default:
        s = zb_fail(err, ZB_ERUNTIME, "action %d has unknown pass %d", i, a->pass);
    }
    rk->t_start[i] = t - rk->ctx->t0;
    rk->t_end[i] = zb_now_s() - rk->ctx->t0;
    double off = (rk->t_end[i] - rk->t_start[i]) - (thread_cpu_s() - cpu);
    rk->stall += off > 0 ? off : 0;   /* time the thread was not running */
    return s;
}

/* The stage's buffer of a SEND or RECV op: that of the action it belongs
 * to, or a vocabulary message's (zb_lower_vocab). */
static float *transfer_buf(zb_rank *rk, const zb_op *op, zb_err *err) {
    bool send = op->kind == ZB_OP_SEND, act = op->msg == ZB_MSG_ACT;
    if (op->what != ZB_V_NONE) {
        float *b = zb_stage_vocab_msg(rk->st, op->what, op->mb, op->peer, send);
        if (!b)
            zb_fail(err, ZB_ERUNTIME, "rank %d: no buffer for vocabulary "
                    "message %d of mb %d", rk->rank, op->what, op->mb);
        return b;
    }
    const zb_action *a = &rk->acts[op->action];
    float *buf = send ? (act ? zb_stage_act_out(rk->st, a->chunk, a->mb)
                             : zb_stage_grad_out(rk->st, a->chunk, a->mb))
                      : (act ? zb_stage_act_in(rk->st, a->chunk, a->mb)
                             : zb_stage_grad_in(rk->st, a->chunk, a->mb));
    if (!buf)
        zb_fail(err, ZB_ERUNTIME, "rank %d: no %s %s buffer for chunk %d mb "
                "%d", rk->rank, act ? "activation" : "gradient",
                send ? "output" : "input", a->chunk, a->mb);
    return buf;
}

/* A SEND or RECV op. */
static zb_status transfer(zb_rank *rk, const zb_op *op, zb_err *err) {
    const zb_plan *p = rk->ctx->plan;
    bool send = op->kind == ZB_OP_SEND;
    float *buf = transfer_buf(rk, op, err);
    if (!buf) return ZB_ERUNTIME;
    int peer = zb_plan_rank(p, op->peer, rk->dp_rank, rk->tp_rank);
    int tag = op->what != ZB_V_NONE
                  ? zb_lower_op_tag(&p->sched, op, rk->pp_rank)
                  : zb_lower_tag(&p->sched, op->msg, op->vstage, op->mb);
    if (!send) return rk->tr->recv(rk->tr, peer, tag, buf, rk->msg_floats, err);
    double t = zb_now_s();
    zb_status s = rk->tr->send(rk->tr, peer, tag, buf, rk->msg_floats, err);
    if (rk->count_comm) {
        rk->send_s += zb_now_s() - t;
        rk->sends++;
    }
    return s;
}

/* A vocabulary step that is no action (zb_lower_vocab): C1, the
 * statistics gathered over the pipeline group, or the stage's own. */
static zb_status vocab_step(zb_rank *rk, const zb_op *op, zb_err *err) {
    if (op->what == ZB_V_STATS) {
        size_t n;
        double *tab = zb_stage_vocab_stats(rk->st, op->mb, &n);
        if (!tab)
            return zb_fail(err, ZB_ERUNTIME, "rank %d: no statistics table "
                           "for mb %d", rk->rank, op->mb);
        return rk->tr->allreduce_f64(rk->tr, &rk->pp_g, tab, n, err);
    }
    const zb_plan *p = rk->ctx->plan;
    size_t per_mb = (size_t)p->micro_batch * (size_t)p->model.arch.seq_len;
    const int *tok = rk->tokens ? rk->tokens + op->mb * per_mb : NULL;
    return zb_stage_vocab_op(rk->st, op->what, op->mb, tok,
                             (float)rk->ctx->loss_scale, err);
}

static zb_status run_program(zb_rank *rk, zb_err *err) {
    for (int k = 0; k < rk->n_ops; k++) {
        const zb_op *op = &rk->ops[k];
        if (op->kind == ZB_OP_COMPUTE) {
            ZB_TRY(run_action(rk, op->action, err));
            continue;
        }
        rk->x_start[k] = zb_now_s() - rk->ctx->t0;   /* timed like actions */
        if (op->kind == ZB_OP_VOCAB) ZB_TRY(vocab_step(rk, op, err));
        else ZB_TRY(transfer(rk, op, err));
        rk->x_end[k] = zb_now_s() - rk->ctx->t0;
    }
    return ZB_OK;
}

/* DUAL plans (dualpipe): pipeline ranks r and pp-1-r hold the two copies
 * of stages lo = min(r, pp-1-r) and pp-1-lo, as chunks (0, 1) on rank lo
 * and (1, 0) on the other; both sum stage lo's gradients first, then the
 * other's, so the copies get the same sums and stay equal. */
static zb_status sync_copies(zb_rank *rk, zb_err *err) {
    int pp = rk->ctx->plan->pp, pr = rk->pp_rank;
    bool low = pr < pp - 1 - pr;
    for (int k = 0; k < 2; k++) {
        size_t n;
        float *g = zb_stage_copy_grads(rk->st, low ? k : 1 - k, &n);
        if (g && n > 0)
            ZB_TRY(rk->tr->allreduce(rk->tr, &rk->copy_g, g, n, err));
    }
    return ZB_OK;
}

/* Tied embedding (both copies), the two model copies of a DUAL plan, then
 * data parallel: plain sums. */
static zb_status sync_grads(zb_rank *rk, zb_err *err) {
    size_t n;
    float *tied = zb_stage_tied_grad(rk->st, &n);
    zb_mark emb = mark_now();
    if (tied && rk->in_emb_group)
        ZB_TRY(rk->tr->allreduce(rk->tr, &rk->emb_g, tied, n, err));
    if (rk->copy_g.n > 1) ZB_TRY(sync_copies(rk, err));
    bnd_wait(rk, emb);
    zb_mark dp = mark_now();
    if (rk->dp_g.n > 1) {
        float *g = zb_stage_grads(rk->st, &n);
        ZB_TRY(rk->tr->allreduce(rk->tr, &rk->dp_g, g, n, err));
    }
    bnd_wait(rk, dp);
    if (rk->count_comm) {
        rk->emb_ar_s += dp.wall - emb.wall;
        rk->dp_ar_s += zb_now_s() - dp.wall;
    }
    return ZB_OK;
}

static const char *nonfinite_word(double x) { return isnan(x) ? "nan" : "inf"; }

/* The lowest rank whose flag in flags[world] is set (0 if none). */
static int first_flagged(const double *flags, int world) {
    for (int r = 0; r < world; r++)
        if (flags[r] != 0) return r;
    return 0;
}

/* This rank's share of the world sums of the squared gradients (each
 * parameter once: dp_rank 0, the stage's ownership rule) and of the losses
 * (tp_rank 0: the head is replicated over TP), plus its flags of non-finite
 * local values, and its memory high-water mark, into rk->red [2 + 3*world].
 * A failure the stage kept (an asynchronous CUDA fault surfaces in these
 * reads as NaN) ends the step with the device's own error, this rank and
 * the step, before the world all-reduce (the failure aborts the
 * transport, which frees the peers). */
static zb_status local_stats(zb_rank *rk, int step, zb_err *err) {
    int world = rk->ctx->world;
    double *red = rk->red;
    memset(red, 0, (2 + 3 * (size_t)world) * sizeof *red);
    /* cuda: these wait for the step's device work, NCCL transfers from
     * peers included; one process per rank, a dead peer must not hang us */
    zb_watchdog_arm_s("the step's device work (waiting for the loss)",
                      zb_watchdog_step_s(rk->ctx->plan->pred.step_s));
    double sq = rk->dp_rank == 0 ? zb_stage_grad_sumsq(rk->st) : 0.0;
    double ls = rk->tp_rank == 0 ? zb_stage_loss_sum(rk->st) : 0.0;
    zb_watchdog_disarm();
    zb_err dev = {{0}};
    zb_status s = zb_stage_failure(rk->st, &dev);
    if (s != ZB_OK)
        return zb_fail(err, s, "rank %d: step %d: %s", rk->rank, step,
                       dev.msg); /* this rank's own error, not a verdict */
    red[0] = sq;
    red[1] = ls;
    red[2 + rk->rank] = isfinite(ls) ? 0.0 : 1.0;
    red[2 + world + rk->rank] = isfinite(sq) ? 0.0 : 1.0;
    /* each rank's memory high-water mark, for rank 0's step record: the
     * sum adds zeros to one value, exact in any order */
    red[2 + 2 * world + rk->rank] = zb_stage_static_bytes(rk->st) +
                                    zb_stage_act_peak_bytes(rk->st);
    return ZB_OK;
}

/* The world sums of local_stats, so that every rank reaches the same
 * verdict and names the same culprit. */
static zb_status global_stats(zb_rank *rk, int step, double *norm,
                              double *loss, zb_err *err) {
    const zb_plan *p = rk->ctx->plan;
    int world = rk->ctx->world;
    double *red = rk->red;
    zb_mark m = mark_now();
    ZB_TRY(rk->tr->allreduce_f64(rk->tr, &rk->world_g, red,
                                 2 + 3 * (size_t)world, err));
    rk->bnd_verdict += bnd_wait(rk, m);
    double tokens = (double)p->model.train.global_batch * p->model.arch.seq_len;
    *loss = red[1] / tokens;
    *norm = sqrt(red[0]);
    if (!isfinite(*loss))
        return zb_fail(err, ZB_ERUNTIME, "step %d rank %d: loss is %s", step,
                       first_flagged(red + 2, world), nonfinite_word(*loss));
    if (!isfinite(*norm))
        return zb_fail(err, ZB_ERUNTIME, "step %d rank %d: grad norm is %s",
                       step, first_flagged(red + 2 + world, world),
                       nonfinite_word(*norm));
    return ZB_OK;
}

/* Span and busy time of this step's compute actions. */
static void record_times(zb_rank *rk, int k) {
    double first = 0, last = 0, busy = 0;
    for (int i = 0; i < rk->n_acts; i++) {
        if (i == 0 || rk->t_start[i] < first) first = rk->t_start[i];
        if (i == 0 || rk->t_end[i] > last) last = rk->t_end[i];
        busy += rk->t_end[i] - rk->t_start[i];
    }
    double recv = 0;
    for (int i = 0; i < rk->n_ops; i++)
        if (rk->ops[i].kind == ZB_OP_RECV) recv += rk->x_end[i] - rk->x_start[i];
    size_t at = (size_t)k * (size_t)rk->ctx->world + (size_t)rk->rank;
    rk->ctx->step_span[at] = last - first;
    rk->ctx->step_busy[at] = busy;
    rk->ctx->step_recv[at] = recv;
    rk->ctx->step_stall[at] = rk->stall;
}

static zb_status checkpoint(zb_rank *rk, int step, zb_err *err) {
    zb_run_ctx *c = rk->ctx;
    if (rk->rank == 0) ZB_TRY(zb_ckpt_begin(c->ckpt_dir, step, err));
    ZB_TRY(rk->tr->barrier(rk->tr, &rk->world_g, err));
    ZB_TRY(zb_ckpt_save_rank(c->ckpt_dir, step, rk->rank, c->world, rk->st,
                             err));
    /* the index may name this step only once every rank file exists */
    ZB_TRY(rk->tr->barrier(rk->tr, &rk->world_g, err));
    zb_ckpt_state cs = {.step = step, .total_steps = c->total_steps,
                        .baseline_loss = rk->loss0, .last_good_step = rk->last_good};
    if (rk->rank == 0) ZB_TRY(zb_ckpt_commit(c->ckpt_dir, c->plan, &cs, err));
    return ZB_OK;
}

/* The lead rank (0, or this process's): the step's numbers into the
 * result; rank 0: the caller's callback. */
static void report_step(zb_rank *rk, int k, double loss, double lr,
                        double norm, double step_s, double val) {
    zb_run_ctx *c = rk->ctx;
    zb_run_result *res = c->res;
    const zb_plan *p = c->plan;
    res->loss[k] = loss;
    res->lr[k] = lr;
    res->grad_norm[k] = norm;
    res->step_s[k] = step_s;
    res->n_steps = k + 1;
    if (!c->opts->on_step || rk->rank != 0) return;
    double tokens = (double)p->model.train.global_batch * p->model.arch.seq_len;
    int step = c->first_step + k;
    /* the memory entries of global_stats' sums (an evaluation since
     * clears only the entries before them) */
    zb_step_info info = {.step = step, .steps = c->total_steps,
                         .loss = loss, .lr = lr, .grad_norm = norm,
                         .step_s = step_s,
                         .tokens_per_s = step_s > 0 ? tokens / step_s : 0,
                         .elapsed_s = zb_now_s() - c->t0, .val_loss = val,
                         .unix_s = zb_unix_s(), .tokens_seen = (long long)tokens * step,
                         .world = c->world, .mem_bytes = rk->red + 2 + 2 * c->world,
                         .mfu = step_s > 0 ? p->pred.mfu * p->pred.step_s / step_s : 0};
    c->opts->on_step(&info, c->opts->on_step_ctx);
}

/* Validation loss after `step` when one is due (eval.h), else NaN. */
static zb_status maybe_eval(zb_rank *rk, int step, double *val, zb_err *err) {
    *val = NAN;
    if (!zb_eval_due(rk->ctx, step)) return ZB_OK;
    return zb_eval_run(rk, step, val, err);
}

/* The validation loss before the first step, reported on its own. */
static zb_status initial_eval(zb_rank *rk, zb_err *err) {
    zb_run_ctx *c = rk->ctx;
    double val;
    ZB_TRY(maybe_eval(rk, c->first_step - 1, &val, err));
    if (rk->eval_stopped && (rk->rank == 0 || c->opts->proc.tr)) {
        c->res->stopped = *c->opts->stop ? *c->opts->stop : SIGTERM;
        c->res->stop_saved = false;   /* no step ran: nothing new to save */
    }
    if (rk->eval_stopped || rk->rank != 0 || !c->val || !c->opts->on_step)
        return ZB_OK;
    const zb_training *t = &c->plan->model.train;
    zb_step_info info = {.step = c->first_step - 1, .steps = c->total_steps,
                         .loss = NAN, .val_loss = val, .eval_only = true,
                         .elapsed_s = zb_now_s() - c->t0, .unix_s = zb_unix_s(),
                         .tokens_seen = (long long)t->global_batch *
                                        c->plan->model.arch.seq_len * (c->first_step - 1)};
    c->opts->on_step(&info, c->opts->on_step_ctx);
    return ZB_OK;
}

/* A loss that explodes without becoming NaN: every rank sees the same
 * all-reduced loss, so every rank stops at the same step, before the
 * update. */
static zb_status check_loss(zb_rank *rk, int step, double loss, zb_err *err) {
    zb_run_ctx *c = rk->ctx;
    double ratio = c->opts->max_loss_ratio;
    /* resumed: the baseline and last good step kept in the checkpoint */
    if (rk->loss0 == 0) rk->loss0 = c->baseline > 0 ? c->baseline : loss;
    if (rk->last_good == 0) rk->last_good = c->last_good;
    if (ratio > 0 && rk->loss0 > 0 && loss > ratio * rk->loss0)
        return zb_fail(err, ZB_ERUNTIME, "step %d: loss %.4g is more than %g "
                       "times the first step's %.4g: training diverges (the "
                       "last step within the limit was %d, and its update "
                       "made these weights; lower the learning rate; "
                       "--max-loss-ratio sets the limit)", step, loss, ratio,
                       rk->loss0, rk->last_good);
    rk->last_good = step;
    return ZB_OK;
}

/* Between steps: do all ranks agree to stop (opts->stop set on any)? Then
 * checkpoint `step` when checkpoints are on and it is not saved yet. */
static zb_status stop_here(zb_rank *rk, int step, bool *stop, zb_err *err) {
    zb_run_ctx *c = rk->ctx;
    int every = c->opts->checkpoint_every;
    *stop = false;
    if (!c->opts->stop) return ZB_OK;
    int sig = *c->opts->stop;
    rk->red[0] = sig;
    zb_mark m = mark_now();   /* part of the step boundary */
    ZB_TRY(rk->tr->allreduce_f64(rk->tr, &rk->world_g, rk->red, 1, err));
    bnd_wait(rk, m);
    bnd_add(rk, m);
    if (rk->red[0] == 0) return ZB_OK;
    *stop = true;
    if (every > 0 && step % every != 0) ZB_TRY(checkpoint(rk, step, err));
    if (rk->rank == 0 || c->opts->proc.tr) {   /* each process's result */
        c->res->stopped = *c->opts->stop ? *c->opts->stop : SIGTERM;
        c->res->stop_saved = every > 0;
    }
    return ZB_OK;
}

/* Post-validation (Qi et al. 2023, section 4): should this rank step
 * before the world check's verdict? Only when that cannot change the
 * arithmetic (its sums finite, and its own norm alone not past grad_clip:
 * the world sum of non-negative terms is never below one of them), and
 * when it pays on the measured times: the last step's wait for the verdict
 * was longer than keeping the state aside plus AdamW, and did not clip
 * (ZB_POSTVAL=1: whenever it cannot change the arithmetic; 0: never). */
static bool speculate(const zb_rank *rk) {
    const zb_optim *o = &rk->ctx->plan->model.train.opt;
    double sq = rk->red[0], ls = rk->red[1];
    return rk->undo && isfinite(sq) && isfinite(ls) &&
           !(o->grad_clip > 0 && sqrt(sq) > o->grad_clip) &&
           (rk->spec_mode == 1 ||
            (!rk->spec_clipped && rk->spec_idle_s > rk->spec_cost_s));
}

/* The world check (norm, loss, non-finite values), then AdamW with the
 * clipping scale it gives. A speculating rank keeps its state aside and
 * steps unclipped before the world all-reduce, so that a rank done early
 * works instead of waiting; the verdict then keeps that step (scale 1,
 * checks passed: the same arithmetic as the synchronous step), or restores
 * the state and redoes the step clipped, or restores it and fails. */
static zb_status optimizer_step(zb_rank *rk, int step, float lr, double *norm,
                                double *loss, zb_err *err) {
    const zb_optim *o = &rk->ctx->plan->model.train.opt;
    ZB_TRY(local_stats(rk, step, err));
    bool spec = speculate(rk);
    double t0 = zb_now_s();
    if (spec) {
        ZB_TRY(zb_stage_undo_keep(rk->st, rk->undo, err));
        ZB_TRY(zb_stage_adamw(rk->st, lr, 1.0f, step, err));
    }
    zb_status s = global_stats(rk, step, norm, loss, err);
    if (s == ZB_OK) s = check_loss(rk, step, *loss, err);
    double t1 = zb_now_s();
    float scale = s == ZB_OK && o->grad_clip > 0 && *norm > o->grad_clip
                      ? (float)(o->grad_clip / *norm) : 1.0f;
    rk->spec_idle_s = t1 - t0;   /* the wait, with any work done inside it */
    rk->spec_clipped = scale != 1.0f;
    if (spec && (s != ZB_OK || scale != 1.0f)) {
        zb_err e2 = {{0}};
        zb_status r = zb_stage_undo_restore(rk->st, rk->undo,
                                            s != ZB_OK ? &e2 : err);
        if (s == ZB_OK) s = r;
    }
    if (s != ZB_OK || (spec && scale == 1.0f)) return s;
    s = zb_stage_adamw(rk->st, lr, scale, step, err);
    /* keeping aside copies 3 arrays, AdamW reads 4: twice AdamW bounds it */
    rk->spec_cost_s = 2 * (zb_now_s() - t1);
    return s;
}

static zb_status rank_step(zb_rank *rk, int step, zb_err *err) {
    zb_run_ctx *c = rk->ctx;
    zb_run_result *res = c->res;
    const zb_optim *o = &c->plan->model.train.opt;
    int k = step - c->first_step, slot = k % res->trace_n;
    double t_begin = zb_now_s();
    rk->t_start = res->t_start[rk->rank] + (size_t)slot * (size_t)rk->n_acts;
    rk->t_end = res->t_end[rk->rank] + (size_t)slot * (size_t)rk->n_acts;
    rk->x_start = res->x_start[rk->rank] + (size_t)slot * (size_t)rk->n_ops;
    rk->x_end = res->x_end[rk->rank] + (size_t)slot * (size_t)rk->n_ops;
    if (rk->rank == c->lead) res->trace_step[slot] = step;

    ZB_TRY(load_batches(rk, step, err));
    zb_stage_zero_grads(rk->st);
    rk->stall = 0;
    /* the first step pays for first-touch page faults: left out of the
     * communication means when later steps exist */
    rk->count_comm = k > 0 || c->total_steps == c->first_step;
    ZB_TRY(run_program(rk, err));
    zb_mark tail = mark_now();   /* the step's tail: sync, norm, AdamW */
    double t_post = tail.wall;
    rk->bnd_wall = rk->bnd_idle = rk->bnd_busy = rk->bnd_verdict = 0;
    ZB_TRY(sync_grads(rk, err));
    double norm, loss, lr = zb_lr_at(o, step, c->total_steps);
    ZB_TRY(optimizer_step(rk, step, (float)lr, &norm, &loss, err));
    /* asynchronous backends (cuda) replace the host times with the
     * device's own; the cpu keeps what run_action measured */
    zb_stage_pass_times(rk->st, rk->t_start, rk->t_end, rk->n_acts,
                        rk->ctx->t0);
    res->tail_start[rk->rank][slot] = t_post - c->t0;
    res->tail_end[rk->rank][slot] = zb_now_s() - c->t0;
    bnd_add(rk, tail);
    record_times(rk, k);
    if (rk->count_comm) {
        rk->post_s += zb_now_s() - t_post;
        rk->comm_steps++;
    }
    double step_s = zb_now_s() - t_begin, val;
    ZB_TRY(maybe_eval(rk, step, &val, err));
    if (rk->rank == c->lead) report_step(rk, k, loss, lr, norm, step_s, val);
    if (c->opts->checkpoint_every > 0 && step % c->opts->checkpoint_every == 0)
        ZB_TRY(checkpoint(rk, step, err));
    return ZB_OK;
}

/* ---- set-up ---- */

/* Under a memory limit, with every stage built: room left for OpenBLAS's
 * buffers, or OpenBLAS would spin in its allocator (memlimit.h). */
static zb_status check_headroom(zb_rank *rk, zb_err *err) {
    int world = rk->ctx->world;
    if (!zb_memlimit_bytes()) return ZB_OK;
    rk->red[0] = rk->rank == 0 && !zb_memlimit_room(world);
    ZB_TRY(rk->tr->allreduce_f64(rk->tr, &rk->world_g, rk->red, 1, err));
    if (rk->red[0] != 0)
        return zb_fail(err, ZB_ENOMEM, "rank %d: memory limit (ulimit -v) of %zu "
                       "MiB leaves no room for the %zu MiB of OpenBLAS buffers "
                       "once the model is allocated; raise the limit", rk->rank,
                       zb_memlimit_bytes() >> 20, zb_memlimit_blas_bytes(world) >> 20);
    return ZB_OK;
}

/* The stage, and the agreement of both ends of every embedding group on
 * whether a tied gradient exists (a mismatch would hang the all-reduce). */
static zb_status rank_setup(zb_rank *rk, zb_err *err) {
    zb_run_ctx *c = rk->ctx;
    zb_stage_cfg cfg = {.plan = c->plan, .pp_rank = rk->pp_rank,
                        .dp_rank = rk->dp_rank, .tp_rank = rk->tp_rank,
                        .tr = rk->tr, .tp_group = &rk->tp_g,
                        .backend = rk->backend, .device = rk->device};
    ZB_TRY(zb_stage_new(&cfg, &rk->st, err));
    const char *pv = getenv("ZB_POSTVAL");
    rk->spec_mode = !pv || !strcmp(pv, "auto") ? 2 : !strcmp(pv, "1") ? 1
                  : !strcmp(pv, "0") ? 0 : -1;
    if (rk->spec_mode < 0)
        return zb_fail(err, ZB_EINPUT, "ZB_POSTVAL must be 0, 1 or auto, "
                       "got '%s'", pv);
    if (rk->spec_mode > 0) ZB_TRY(zb_stage_undo_new(rk->st, &rk->undo, err));
    /* the transports hold fp32 [B, T, C]; bf16 activations send half */
    if (zb_stage_msg_floats(rk->st) > rk->msg_floats)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: stage messages have %zu "
                       "floats, the runtime expects %zu", rk->rank,
                       zb_stage_msg_floats(rk->st), rk->msg_floats);
    rk->msg_floats = zb_stage_msg_floats(rk->st);
    size_t n;
    bool tied = zb_stage_tied_grad(rk->st, &n) != NULL;
    if (tied && !rk->in_emb_group)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: the stage has a tied "
                       "embedding gradient but no partner rank", rk->rank);
    int world = c->world;
    memset(rk->red, 0, (2 + 2 * (size_t)world) * sizeof *rk->red);
    rk->red[2 + rk->rank] = tied;
    ZB_TRY(rk->tr->allreduce_f64(rk->tr, &rk->world_g, rk->red,
                                 2 + 2 * (size_t)world, err));
    for (int i = 0; rk->in_emb_group && i < rk->emb_g.n; i++)
        if ((rk->red[2 + zb_group_rank(&rk->emb_g, i)] != 0) != tied)
            return zb_fail(err, ZB_ERUNTIME, "ranks %d and %d disagree on "
                           "holding a tied embedding gradient", rk->rank,
                           zb_group_rank(&rk->emb_g, i));
    ZB_TRY(check_headroom(rk, err));
    /* cuda: no first-of-its-kind pass inside a step (docs/gpu.md) */
    if (rk->backend == ZB_BACKEND_CUDA) ZB_TRY(zb_stage_warmup(rk->st, err));
    if (c->first_step > 1)
        ZB_TRY(zb_ckpt_load_rank(c->ckpt_dir, c->first_step - 1, rk->rank,
                                 world, rk->st, err));
    else if (c->plan->model.arch.init[0])   /* llm.c weights (llmc.h) */
        ZB_TRY(zb_llmc_load_stage(c->plan->model.arch.init, c->plan,
                                  rk->pp_rank, rk->tp_rank, rk->st, err));
    return ZB_OK;
}

/* After the last step: memory high-water marks and, if asked, a copy of
 * the parameters. */
static zb_status rank_finish(zb_rank *rk, zb_err *err) {
    zb_run_result *res = rk->ctx->res;
    res->static_bytes[rk->rank] = zb_stage_static_bytes(rk->st);
    res->act_peak_bytes[rk->rank] = zb_stage_act_peak_bytes(rk->st);
    int n_steps = rk->comm_steps > 0 ? rk->comm_steps : 1;
    res->send_s[rk->rank] = rk->sends ? rk->send_s / rk->sends : 0;
    res->dp_ar_s[rk->rank] = rk->dp_ar_s / n_steps;
    res->emb_ar_s[rk->rank] = rk->emb_ar_s / n_steps;
    res->post_s[rk->rank] = rk->post_s / n_steps;
    if (!rk->ctx->opts->keep_params) return ZB_OK;
    size_t n;
    zb_stage_params(rk->st, &n);
    res->params[rk->rank] = zb_calloc(n, sizeof(float), err);
    if (!res->params[rk->rank]) return ZB_ENOMEM;
    ZB_TRY(zb_stage_params_to_host(rk->st, res->params[rk->rank], n, err));
    res->n_params[rk->rank] = n;
    return ZB_OK;
}

static zb_status rank_run(zb_rank *rk, zb_err *err) {
    zb_run_ctx *c = rk->ctx;
    /* threads of one process: each rank on cores of its own (affinity.h);
     * processes under a launcher are placed by the launcher's binding */
    if (!c->opts->proc.tr) zb_pin_rank(rk->rank, c->world, c->res->threads);
    omp_set_num_threads(c->res->threads);
    ZB_TRY(rank_setup(rk, err));
    ZB_TRY(initial_eval(rk, err));
    for (int step = c->first_step; step <= c->total_steps && !rk->eval_stopped; step++) {
        bool stop = false;
        ZB_TRY(rank_step(rk, step, err));
        if (step == c->opts->hold_after_step && c->opts->on_hold)
            c->opts->on_hold(rk->rank, step, c->opts->on_step_ctx);
        if (step < c->total_steps) ZB_TRY(stop_here(rk, step, &stop, err));
        record_boundary(rk, step - c->first_step);
        if (step < c->total_steps && stop) break;
    }
    return rank_finish(rk, err);
}

/* Keep the first error; wake every other rank. Messages that do not say
 * where they come from get the rank in front (input errors keep their
 * "file:line:" start). */
static void rank_fail(zb_rank *rk, zb_status s, const zb_err *err) {
    zb_run_ctx *c = rk->ctx;
    pthread_mutex_lock(&c->err_mu);
    if (c->status == ZB_OK) {
        c->status = s;
        if (s == ZB_EINPUT || !strncmp(err->msg, "rank", 4) ||
            !strncmp(err->msg, "step", 4))
            c->err = *err;
        else
            zb_fail(&c->err, s, "rank %d: %.480s", rk->rank, err->msg);
    }
    pthread_mutex_unlock(&c->err_mu);
    rk->tr->abort(rk->tr);
}

void *zb_rank_main(void *arg) {
    zb_rank *rk = arg;
    zb_err err = {{0}};
    zb_status s = rank_run(rk, &err);
    if (s != ZB_OK) rank_fail(rk, s, &err);
    return NULL;
}
