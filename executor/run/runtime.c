/* runtime.c - zb_run: set-up of the shared state (programs, transport,
 * data, groups, result arrays), one thread per rank (rank.c), and the
 * summary of the measurements once they are joined. See runtime.h.
 *
 * Group ids (unique per world, as transport.h asks): TP groups
 * 0*world + pp*dp + dp, DP groups 1*world + pp*tp + tp, embedding groups
 * 2*world + dp*tp + tp, the world 3*world.
 *
 * One process per rank (opts->proc.tr): only that rank is set up and run,
 * on the calling thread, after a world barrier that also aligns the
 * processes' clocks for the timeline; then zb_run_gather.
 */
#include "executor/run/runtime.h"

#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "executor/host/blas_env.h"
#include "executor/state/checkpoint.h"
#include "executor/run/eval.h"
#include "executor/host/memlimit.h"
#include "executor/run/run_ctx.h"

#define ZB_TRACE_STEPS_DEFAULT 2

int zb_threads_per_rank(int cores, int world) {
    int t = world > 0 ? cores / world : cores;
    return t < 1 ? 1 : t;
}

static zb_status alloc_doubles(double **p, size_t n, zb_err *err) {
    *p = zb_calloc(n, sizeof **p, err);
    return *p ? ZB_OK : ZB_ENOMEM;
}

static zb_status alloc_result(zb_run_result *res, const zb_plan *plan,
                              int max_steps, zb_err *err) {
    int w = res->world, pp = plan->pp;
    size_t st = (size_t)(max_steps > 0 ? max_steps : 1);
    ZB_TRY(alloc_doubles(&res->loss, st, err));
    ZB_TRY(alloc_doubles(&res->lr, st, err));
    ZB_TRY(alloc_doubles(&res->grad_norm, st, err));
    ZB_TRY(alloc_doubles(&res->step_s, st, err));
    ZB_TRY(alloc_doubles(&res->span_s, (size_t)w, err));
    ZB_TRY(alloc_doubles(&res->busy_s, (size_t)w, err));
    ZB_TRY(alloc_doubles(&res->bubble, (size_t)w, err));
    ZB_TRY(alloc_doubles(&res->static_bytes, (size_t)w, err));
    ZB_TRY(alloc_doubles(&res->act_peak_bytes, (size_t)w, err));
    ZB_TRY(alloc_doubles(&res->recv_s, (size_t)w, err));
    ZB_TRY(alloc_doubles(&res->stall_s, (size_t)w, err));
    ZB_TRY(alloc_doubles(&res->boundary_s, (size_t)w, err));
    ZB_TRY(alloc_doubles(&res->boundary_idle_s, (size_t)w, err));
    ZB_TRY(alloc_doubles(&res->boundary_busy_s, (size_t)w, err));
    ZB_TRY(alloc_doubles(&res->verdict_wait_s, (size_t)w, err));
    ZB_TRY(alloc_doubles(&res->pp_span_s, (size_t)pp, err));
    ZB_TRY(alloc_doubles(&res->pp_busy_s, (size_t)pp, err));
    ZB_TRY(alloc_doubles(&res->pp_bubble, (size_t)pp, err));
    ZB_TRY(alloc_doubles(&res->pp_mem_bytes, (size_t)pp, err));
    ZB_TRY(alloc_doubles(&res->send_s, (size_t)w, err));
    ZB_TRY(alloc_doubles(&res->dp_ar_s, (size_t)w, err));
    ZB_TRY(alloc_doubles(&res->emb_ar_s, (size_t)w, err));
    ZB_TRY(alloc_doubles(&res->post_s, (size_t)w, err));
    res->trace_step = zb_calloc((size_t)res->trace_n, sizeof(int), err);
    res->n_acts = zb_calloc((size_t)w, sizeof(int), err);
    res->t_start = zb_calloc((size_t)w, sizeof(double *), err);
    res->t_end = zb_calloc((size_t)w, sizeof(double *), err);
    res->params = zb_calloc((size_t)w, sizeof(float *), err);
    res->n_params = zb_calloc((size_t)w, sizeof(size_t), err);
    if (!res->trace_step || !res->n_acts || !res->t_start || !res->t_end ||
        !res->params || !res->n_params)
        return ZB_ENOMEM;
    for (int r = 0; r < w; r++) {
        int pr, dr, tr;
        zb_plan_coords(plan, r, &pr, &dr, &tr);
        res->n_acts[r] = plan->sched.len[pr];
        size_t n = (size_t)res->trace_n * (size_t)res->n_acts[r];
        ZB_TRY(alloc_doubles(&res->t_start[r], n, err));
        ZB_TRY(alloc_doubles(&res->t_end[r], n, err));
    }
    return ZB_OK;
}

/* The transfer timeline: like t_start/t_end, by op of the lowered program. */
static zb_status alloc_transfers(zb_run_result *res, const zb_plan *plan,
                                 const zb_program *prog, zb_err *err) {
    int w = res->world;
    res->n_ops = zb_calloc((size_t)w, sizeof(int), err);
    res->x_start = zb_calloc((size_t)w, sizeof(double *), err);
    res->x_end = zb_calloc((size_t)w, sizeof(double *), err);
    res->tail_start = zb_calloc((size_t)w, sizeof(double *), err);
    res->tail_end = zb_calloc((size_t)w, sizeof(double *), err);
    if (!res->n_ops || !res->x_start || !res->x_end || !res->tail_start ||
        !res->tail_end)
        return ZB_ENOMEM;
    for (int r = 0; r < w; r++) {
        int pr, dr, tr;
        zb_plan_coords(plan, r, &pr, &dr, &tr);
        res->n_ops[r] = prog->len[pr];
        size_t n = (size_t)res->trace_n * (size_t)res->n_ops[r];
        ZB_TRY(alloc_doubles(&res->x_start[r], n, err));
        ZB_TRY(alloc_doubles(&res->x_end[r], n, err));
        ZB_TRY(alloc_doubles(&res->tail_start[r], (size_t)res->trace_n, err));
        ZB_TRY(alloc_doubles(&res->tail_end[r], (size_t)res->trace_n, err));
    }
    return ZB_OK;
}

static void reverse_d(double *a, size_t lo, size_t hi) {
    for (; lo + 1 < hi; lo++, hi--) {
        double t = a[lo];
        a[lo] = a[hi - 1];
        a[hi - 1] = t;
    }
}

/* Rotate a[0..n) left by k: three reversals, in place. */
static void rotate_d(double *a, size_t n, size_t k) {
    reverse_d(a, 0, k);
    reverse_d(a, k, n);
    reverse_d(a, 0, n);
}

/* The trace is a ring indexed by (step - first_step) % trace_n; put the
 * oldest kept step first. */
static void order_trace(zb_run_result *res) {
    if (res->n_steps < res->trace_n) {
        res->trace_n = res->n_steps;   /* slots 0..n_steps-1, in order */
        return;
    }
    int oldest = res->n_steps % res->trace_n, n = res->trace_n;
    if (oldest == 0) return;
    for (int r = 0; r < res->world; r++) {
        size_t na = (size_t)res->n_acts[r];
        rotate_d(res->t_start[r], na * (size_t)n, na * (size_t)oldest);
        rotate_d(res->t_end[r], na * (size_t)n, na * (size_t)oldest);
        size_t no = res->n_ops ? (size_t)res->n_ops[r] : 0;
        if (!res->n_ops) continue;
        rotate_d(res->tail_start[r], (size_t)n, (size_t)oldest);
        rotate_d(res->tail_end[r], (size_t)n, (size_t)oldest);
        if (no == 0) continue;
        rotate_d(res->x_start[r], no * (size_t)n, no * (size_t)oldest);
        rotate_d(res->x_end[r], no * (size_t)n, no * (size_t)oldest);
    }
    for (int rot = 0; rot < oldest; rot++) {   /* n is small: one at a time */
        int first = res->trace_step[0];
        memmove(res->trace_step, res->trace_step + 1, (size_t)(n - 1) * sizeof(int));
        res->trace_step[n - 1] = first;
    }
}

/* Means over the steps after the first (warm-up), per rank, per pipeline
 * rank and overall. */
static void summarize(zb_run_ctx *c) {
    zb_run_result *res = c->res;
    const zb_plan *p = c->plan;
    int n = res->n_steps, w = c->world, k0 = n > 1 ? 1 : 0, per = p->dp * p->tp;
    order_trace(res);
    if (n == 0) return;
    for (int r = 0; r < w; r++) {
        double span = 0, busy = 0, recv = 0, stall = 0, bnd[4] = {0, 0, 0, 0};
        for (int k = k0; k < n; k++) {
            span += c->step_span[(size_t)k * w + r];
            busy += c->step_busy[(size_t)k * w + r];
            recv += c->step_recv[(size_t)k * w + r];
            stall += c->step_stall[(size_t)k * w + r];
            for (int i = 0; i < 4; i++) bnd[i] += c->step_bnd[i][(size_t)k * w + r];
        }
        res->recv_s[r] = recv / (n - k0);
        res->stall_s[r] = stall / (n - k0);
        res->boundary_s[r] = bnd[0] / (n - k0);
        res->boundary_idle_s[r] = bnd[1] / (n - k0);
        res->boundary_busy_s[r] = bnd[2] / (n - k0);
        res->verdict_wait_s[r] = bnd[3] / (n - k0);
        res->span_s[r] = span / (n - k0);
        res->busy_s[r] = busy / (n - k0);
        res->bubble[r] = span > 0 ? (span - busy) / span : 0;
    }
    double max_span = 0, sum_busy = 0;
    for (int r = 0; r < w; r++) {
        int pr, dr, tr;
        zb_plan_coords(p, r, &pr, &dr, &tr);
        res->pp_span_s[pr] += res->span_s[r] / per;
        res->pp_busy_s[pr] += res->busy_s[r] / per;
        double mem = res->static_bytes[r] + res->act_peak_bytes[r];
        if (mem > res->pp_mem_bytes[pr]) res->pp_mem_bytes[pr] = mem;
    }
    for (int pr = 0; pr < p->pp; pr++) {
        double s = res->pp_span_s[pr];
        res->pp_bubble[pr] = s > 0 ? (s - res->pp_busy_s[pr]) / s : 0;
        if (s > max_span) max_span = s;
        sum_busy += res->pp_busy_s[pr];
    }
    res->bubble_rate = max_span > 0 ? (max_span - sum_busy / p->pp) / max_span : 0;
    double step_s = 0;
    for (int k = k0; k < n; k++) step_s += res->step_s[k];
    res->step_s_mean = step_s / (n - k0);
    double tokens = (double)p->model.train.global_batch * p->model.arch.seq_len;
    res->tokens_per_s = res->step_s_mean > 0 ? tokens / res->step_s_mean : 0;
    res->mfu = res->step_s_mean > 0 ? p->pred.mfu * p->pred.step_s / res->step_s_mean : 0;
}

/* ---- set-up ---- */

static zb_status check_plan(const zb_plan *p, const zb_run_opts *o, zb_err *err) {
    int world = zb_plan_world(p);
    if (world < 1 || p->sched.p != p->pp || p->sched.v != p->v ||
        p->sched.m != p->m || p->m * p->micro_batch * p->dp != p->model.train.global_batch)
        return zb_fail(err, ZB_EINPUT, "inconsistent plan: dp %d tp %d pp %d v %d "
                       "m %d micro_batch %d, schedule p %d v %d m %d, global_batch %d",
                       p->dp, p->tp, p->pp, p->v, p->m, p->micro_batch, p->sched.p,
                       p->sched.v, p->sched.m, p->model.train.global_batch);
    if (o->steps < 0 || o->threads < 0 || o->checkpoint_every < 0 || o->trace_steps < 0)
        return zb_fail(err, ZB_EINPUT, "steps, threads, checkpoint interval and "
                       "trace steps must be >= 0");
    if (o->proc.tr && (o->proc.world != world || o->proc.tr->world != world ||
                       o->proc.rank < 0 || o->proc.rank >= world ||
                       o->proc.tr->rank != o->proc.rank))
        return zb_fail(err, ZB_EINPUT, "%d processes (transport: rank %d of "
                       "%d) cannot run the plan's %d ranks (dp %d x tp %d x "
                       "pp %d)", o->proc.world, o->proc.tr->rank,
                       o->proc.tr->world, world, p->dp, p->tp, p->pp);
    return ZB_OK;
}

/* Messages in flight towards a rank never exceed the receives of its
 * program in one step: every step ends with a world all-reduce. */
static int max_recvs(const zb_program *prog) {
    int most = 1;
    for (int r = 0; r < prog->p; r++) {
        int n = 0;
        for (int i = 0; i < prog->len[r]; i++) n += prog->ops[r][i].kind == ZB_OP_RECV;
        if (n > most) most = n;
    }
    return most;
}

/* Sends of one pipeline rank in one step, the most over the ranks. */
static int max_sends(const zb_program *prog) {
    int most = 1;
    for (int r = 0; r < prog->p; r++) {
        int n = 0;
        for (int i = 0; i < prog->len[r]; i++) n += prog->ops[r][i].kind == ZB_OP_SEND;
        if (n > most) most = n;
    }
    return most;
}

void zb_run_ring_slots(const zb_plan *plan, int slots[ZB_NCCL_RINGS]) {
    zb_staging_slots(plan->pp, plan->v, plan->sched.placement, plan->m, slots);
}

zb_status zb_run_msg_sizes(const zb_plan *plan, int *max_msgs,
                           size_t *msg_floats, zb_err *err) {
    zb_program prog;
    ZB_TRY(zb_lower_vocab(&plan->sched, &prog, err));
    int r = max_recvs(&prog), s = max_sends(&prog);
    *max_msgs = r > s ? r : s;
    *msg_floats = (size_t)plan->micro_batch * plan->model.arch.seq_len *
                  plan->model.arch.hidden;
    zb_program_free(&prog);
    return ZB_OK;
}

static void make_groups(zb_rank *rk, const zb_plan *p, int world) {
    int pr = rk->pp_rank, dr = rk->dp_rank, tr = rk->tp_rank, a, b, chunk;
    rk->tp_g = (zb_group){.id = pr * p->dp + dr, .n = p->tp,
                          .first = zb_plan_rank(p, pr, dr, 0), .stride = 1};
    rk->dp_g = (zb_group){.id = world + pr * p->tp + tr, .n = p->dp,
                          .first = zb_plan_rank(p, pr, 0, tr), .stride = p->tp};
    rk->world_g = (zb_group){.id = 3 * world, .n = world, .first = 0, .stride = 1};
    int r0 = zb_plan_rank(p, 0, dr, tr), r1 = zb_plan_rank(p, 1 % p->pp, dr, tr);
    rk->pp_g = (zb_group){.id = 5 * world + dr * p->tp + tr, .n = p->pp,
                          .first = r0, .stride = r1 > r0 ? r1 - r0 : 1};
    /* the tied embedding lives with vstage 0 and the last vstage (DUAL:
     * the down copy's last, rank pp-1, which holds the up copy's first) */
    bool dual = p->sched.placement == ZB_PLACE_DUAL;
    zb_vstage_owner(&p->sched, 0, &a, &chunk);
    zb_vstage_owner(&p->sched, dual ? p->pp - 1 : p->pp * p->v - 1, &b, &chunk);
    rk->in_emb_group = a != b && (pr == a || pr == b);
    int ra = zb_plan_rank(p, a, dr, tr), rb = zb_plan_rank(p, b, dr, tr);
    rk->emb_g = (zb_group){.id = 2 * world + dr * p->tp + tr, .n = 2,
                           .first = ra, .stride = rb > ra ? rb - ra : 1};
    /* DUAL: the pair holding the two copies of the same stages */
    int lo = pr < p->pp - 1 - pr ? pr : p->pp - 1 - pr;
    int rl = zb_plan_rank(p, lo, dr, tr), rh = zb_plan_rank(p, p->pp - 1 - lo, dr, tr);
    rk->copy_g = (zb_group){.id = 4 * world + (lo * p->dp + dr) * p->tp + tr,
                            .n = dual ? 2 : 0, .first = rl,
                            .stride = rh > rl ? rh - rl : 1};
}

void zb_run_groups(const zb_plan *p, int rank, zb_group g[ZB_RUN_GROUPS]) {
    zb_rank rk = {.rank = rank};
    zb_plan_coords(p, rank, &rk.pp_rank, &rk.dp_rank, &rk.tp_rank);
    make_groups(&rk, p, zb_plan_world(p));
    g[0] = rk.tp_g;
    g[1] = rk.dp_g;
    g[2] = rk.emb_g;
    if (!rk.in_emb_group) g[2].n = 0;
    g[3] = rk.copy_g;
}

/* Does any chunk of pipeline rank pr hold the embedding or the head? */
static bool needs_data(const zb_plan *p, int pr) {
    if (p->vocab_parallel) return true; /* every rank holds a shard */
    for (int c = 0; c < p->v; c++) {
        const zb_stage_span *sp = &p->stages[zb_vstage(&p->sched, pr, c)];
        if (sp->embed || sp->head) return true;
    }
    return false;
}

static zb_status setup_rank(zb_run_ctx *c, int r, zb_err *err) {
    const zb_plan *p = c->plan;
    zb_rank *rk = &c->ranks[r];
    rk->ctx = c;
    rk->rank = r;
    zb_plan_coords(p, r, &rk->pp_rank, &rk->dp_rank, &rk->tp_rank);
    make_groups(rk, p, c->world);
    rk->ops = c->prog.ops[rk->pp_rank];
    rk->n_ops = c->prog.len[rk->pp_rank];
    rk->acts = p->sched.acts[rk->pp_rank];
    rk->n_acts = p->sched.len[rk->pp_rank];
    size_t per_mb = (size_t)p->micro_batch * (size_t)p->model.arch.seq_len;
    rk->msg_floats = per_mb * (size_t)p->model.arch.hidden;
    rk->red = zb_calloc(2 + 3 * (size_t)c->world, sizeof(double), err);
    if (!rk->red) return ZB_ENOMEM;
    if (!needs_data(p, rk->pp_rank)) return ZB_OK;
    rk->tokens = zb_calloc((size_t)p->m * per_mb, sizeof(int), err);
    rk->targets = zb_calloc((size_t)p->m * per_mb, sizeof(int), err);
    return rk->tokens && rk->targets ? ZB_OK : ZB_ENOMEM;
}

/* ==== backend, devices and transport of the threaded run (issue 7) ====
 * cpu: the local transport. cuda: with as many visible devices as ranks
 * (and more than one rank), rank r on device r and NCCL between them
 * (communicators for the TP, DP and embedding groups and the world);
 * otherwise (or with ZB_CUDA_SHARE=1) every rank on device 0, sharing it
 * through the device-local transport. */

int zb_run_cuda_device(int rank, int world, int devices) {
    const char *share = getenv("ZB_CUDA_SHARE");
    if (share && share[0] == '1') return 0;
    return world > 1 && world <= devices ? rank : 0;
}

const char *zb_run_cuda_share_refusal(int world, int devices, bool share,
                                      char *buf, size_t n) {
    if (world <= 1 || world <= devices || share) return NULL;
    snprintf(buf, n, "backend cuda: %d ranks but %d CUDA device%s visible: "
             "every rank would share device 0 (its memory, and %d times its "
             "work per step); give each rank a GPU, plan fewer ranks, or set "
             "ZB_CUDA_SHARE=1 to share device 0 on purpose", world, devices,
             devices == 1 ? "" : "s", world);
    return buf;
}

size_t zb_run_cuda_msg_floats(const zb_plan *plan) {
    size_t tokens = (size_t)plan->micro_batch * plan->model.arch.seq_len;
    return zb_staging_msg_floats(tokens, plan->model.arch.hidden,
                                 zb_precision_bytes(plan->model.train.precision));
}

static zb_status setup_transport(zb_run_ctx *c, zb_err *err) {
    const zb_plan *p = c->plan;
    size_t msg = (size_t)p->micro_batch * p->model.arch.seq_len * p->model.arch.hidden;
    int world = c->world;
    for (int r = 0; r < world; r++) c->ranks[r].backend = c->opts->backend;
    if (c->opts->backend == ZB_BACKEND_CPU) {
        ZB_TRY(zb_local_world_new(world, max_recvs(&c->prog), msg, 0, &c->lw, err));
        for (int r = 0; r < world; r++)
            c->ranks[r].tr = zb_local_transport(c->lw, r);
        return ZB_OK;
    }
#ifdef ZB_HAVE_CUDA
    msg = zb_run_cuda_msg_floats(p); /* bf16: half the staging memory */
    int ndev = zb_backend_cuda_devices();
    if (ndev < 1)
        return zb_fail(err, ZB_EINPUT, "backend cuda: no CUDA device visible");
    const char *share = getenv("ZB_CUDA_SHARE");
    char why[sizeof err->msg];
    if (zb_run_cuda_share_refusal(world, ndev, share && share[0] == '1', why,
                                  sizeof why))
        return zb_fail(err, ZB_EINPUT, "%s", why);
    for (int r = 0; r < world; r++)
        c->ranks[r].device = zb_run_cuda_device(r, world, ndev);
    if (zb_run_cuda_device(world - 1, world, ndev) == 0) { /* all share 0 */
        ZB_TRY(zb_cuda_world_new(world, 0, max_recvs(&c->prog), msg, &c->cw, err));
        for (int r = 0; r < world; r++)
            c->ranks[r].tr = zb_cuda_transport(c->cw, r);
        return ZB_OK;
    }
    int *devices = zb_calloc((size_t)world, sizeof *devices, err);
    zb_group *groups = devices ? zb_calloc(ZB_RUN_GROUPS * (size_t)world, sizeof *groups, err) : NULL;
    zb_transport **ends = groups ? zb_calloc((size_t)world, sizeof *ends, err) : NULL;
    zb_status st = ends ? ZB_OK : ZB_ENOMEM;
    for (int r = 0; st == ZB_OK && r < world; r++) {
        zb_rank *rk = &c->ranks[r];
        devices[r] = rk->device;
        zb_run_groups(c->plan, r, groups + ZB_RUN_GROUPS * r);
    }
    int slots[ZB_NCCL_RINGS];
    zb_run_ring_slots(c->plan, slots);
    if (st == ZB_OK)
        st = zb_nccl_threads_new(world, devices, ZB_RUN_GROUPS, groups, slots, msg,
                                 c->plan->dp * c->plan->tp, ends, err);
    if (st == ZB_OK) {
        c->nccl0 = ends[0];
        for (int r = 0; r < world; r++) c->ranks[r].tr = ends[r];
    }
    free(devices);
    free(groups);
    free(ends);
    return st;
#else
    return zb_fail(err, ZB_EINPUT, "backend cuda: zbrun was built without CUDA");
#endif
}

static void free_transport(zb_run_ctx *c) {
    zb_local_world_free(c->lw);
#ifdef ZB_HAVE_CUDA
    zb_cuda_world_free(c->cw);
    zb_nccl_free(c->nccl0);
#endif
}
/* ==== end of the backend block ==== */

/* Where the run starts: after the newest checkpoint when resuming. */
static zb_status find_start(zb_run_ctx *c, zb_err *err) {
    c->first_step = 1;
    if (!c->opts->resume) return ZB_OK;
    zb_ckpt_index idx;
    bool found;
    ZB_TRY(zb_ckpt_find(c->ckpt_dir, c->plan, &idx, &found, err));
    if (!found) return ZB_OK;
    ZB_TRY(zb_ckpt_check_resume(c->ckpt_dir, &idx, c->plan, c->total_steps,
                                c->opts->resume_changed, err));
    c->first_step = idx.step + 1;
    c->res->resumed_from = idx.step;
    c->baseline = idx.baseline_loss;
    c->last_good = idx.last_good_step > 0 ? idx.last_good_step : idx.step;
    return ZB_OK;
}

static zb_status setup(zb_run_ctx *c, zb_err *err) {
    const zb_plan *p = c->plan;
    zb_run_result *res = c->res;
    int steps = res->total_steps - c->first_step + 1;
    if (steps < 0) steps = 0;
    ZB_TRY(alloc_result(res, p, steps, err));
    if (steps == 0) return ZB_OK;
    ZB_TRY(zb_lower_vocab(&p->sched, &c->prog, err));
    ZB_TRY(alloc_transfers(res, p, &c->prog, err));
    ZB_TRY(zb_data_open(&p->model, &c->data, err));
    if (p->model.train.val_path[0]) ZB_TRY(zb_data_open_val(&p->model, &c->val, err));
    ZB_TRY(zb_eval_alloc(res, p, c->first_step, res->total_steps, err));
    size_t cells = (size_t)steps * (size_t)c->world;
    ZB_TRY(alloc_doubles(&c->step_span, cells, err));
    ZB_TRY(alloc_doubles(&c->step_busy, cells, err));
    ZB_TRY(alloc_doubles(&c->step_recv, cells, err));
    ZB_TRY(alloc_doubles(&c->step_stall, cells, err));
    for (int i = 0; i < 4; i++) ZB_TRY(alloc_doubles(&c->step_bnd[i], cells, err));
    c->ranks = zb_calloc((size_t)c->world, sizeof *c->ranks, err);
    if (!c->ranks) return ZB_ENOMEM;
    if (c->opts->proc.tr) {   /* one process per rank: MPI or NCCL */
        ZB_TRY(setup_rank(c, c->lead, err));
        c->ranks[c->lead].backend = c->opts->backend;
        c->ranks[c->lead].device = c->opts->proc.device;
        c->ranks[c->lead].tr = c->opts->proc.tr;
        return ZB_OK;
    }
    for (int r = 0; r < c->world; r++) ZB_TRY(setup_rank(c, r, err));
    return setup_transport(c, err);
}

static void teardown(zb_run_ctx *c) {
    for (int r = 0; c->ranks && r < c->world; r++) {
        zb_stage_undo_free(c->ranks[r].st, c->ranks[r].undo);
        zb_stage_free(c->ranks[r].st);
        free(c->ranks[r].tokens);
        free(c->ranks[r].targets);
        free(c->ranks[r].red);
    }
    free(c->ranks);
    free(c->step_span);
    free(c->step_busy);
    free(c->step_recv);
    free(c->step_stall);
    for (int i = 0; i < 4; i++) free(c->step_bnd[i]);
    free_transport(c);
    zb_data_free(c->data);
    zb_data_free(c->val);
    zb_program_free(&c->prog);
    pthread_mutex_destroy(&c->err_mu);
}

/* One thread per rank; a failed pthread_create aborts the ones started. */
static void run_threads(zb_run_ctx *c) {
    pthread_t *th = calloc((size_t)c->world, sizeof *th);
    int started = 0;
    c->t0 = zb_now_s();
    for (; th && started < c->world; started++)
        if (pthread_create(&th[started], NULL, zb_rank_main, &c->ranks[started]) != 0)
            break;
    if (started < c->world) {
        pthread_mutex_lock(&c->err_mu);
        if (c->status == ZB_OK)
            c->status = zb_fail(&c->err, ZB_ERUNTIME, "cannot start the thread "
                                "of rank %d", started);
        pthread_mutex_unlock(&c->err_mu);
        zb_transport *t = c->ranks[0].tr;
        t->abort(t);
    }
    for (int r = 0; r < started; r++) pthread_join(th[r], NULL);
    free(th);
}

/* One process per rank: this process's rank on this thread, then the
 * measurements of all ranks gathered. */
static void run_here(zb_run_ctx *c) {
    zb_rank *rk = &c->ranks[c->lead];
    zb_err err = {{0}};
    zb_status s = rk->tr->barrier(rk->tr, &rk->world_g, &err);
    if (s != ZB_OK) {
        c->status = s;
        c->err = err;
        return;
    }
    c->t0 = zb_now_s();
    zb_rank_main(rk);
    if (c->status != ZB_OK) return;
    c->status = zb_run_gather(c, &c->err);
    if (c->status != ZB_OK) rk->tr->abort(rk->tr);   /* peers must not wait */
}

zb_status zb_run(const zb_plan *plan, const zb_run_opts *opts,
                 zb_run_result *res, zb_err *err) {
    memset(res, 0, sizeof *res);
    ZB_TRY(check_plan(plan, opts, err));
    zb_run_ctx c = {.plan = plan, .opts = opts, .res = res,
                    .world = zb_plan_world(plan), .status = ZB_OK,
                    .lead = opts->proc.tr ? opts->proc.rank : 0};
    pthread_mutex_init(&c.err_mu, NULL);
    c.ckpt_dir = opts->checkpoint_dir ? opts->checkpoint_dir : "checkpoints";
    c.total_steps = opts->steps > 0 ? opts->steps : plan->model.train.steps;
    c.loss_scale = 1.0 / ((double)plan->model.train.global_batch *
                          plan->model.arch.seq_len);
    *res = (zb_run_result){.world = c.world, .pp = plan->pp, .dp = plan->dp,
                           .tp = plan->tp, .total_steps = c.total_steps};
    res->trace_n = opts->trace_steps > 0 ? opts->trace_steps : ZB_TRACE_STEPS_DEFAULT;
    res->threads = opts->threads > 0 ? opts->threads
                                     : zb_threads_per_rank(omp_get_num_procs(), c.world);
    zb_status s = find_start(&c, err);
    res->first_step = c.first_step;
    if (s == ZB_OK) s = setup(&c, err);
    if (s == ZB_OK && c.first_step <= c.total_steps) {
        zb_blas_settle();   /* one thread pool: OpenMP's (blas_env.h) */
        if (opts->proc.tr) run_here(&c);
        else run_threads(&c);
        s = c.status;
        if (s != ZB_OK && err) *err = c.err;
    }
    if (res->t_start) summarize(&c);   /* the result arrays exist */
    teardown(&c);
    return s;
}
