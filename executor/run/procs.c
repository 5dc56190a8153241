/* procs.c - see procs.h. */
#include "executor/run/procs.h"

#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "executor/state/checkpoint.h"
#include "executor/host/watchdog.h"

/* ---- the start-up agreement (procs.h) ---- */

/* One rank's slot of the all-reduce: K doubles. Text travels 6 bytes per
 * double (exact below 2^53). */
enum {
    F_STATUS, F_HOST, F_FP = F_HOST + 6, F_SCHED = F_FP + 2, F_ACTS = F_SCHED + 2,
    F_LR = F_ACTS + 2, F_OPT, F_SEED = F_OPT + 2, F_DATA = F_SEED + 2,
    F_STEPS = F_DATA + 2, F_RESUME, F_CHANGED, F_EVERY, F_RATIO, K
};
#define ST_OK 1.0
#define ST_FAILED 2.0

static void put_text(double *d, int n, const char *s) {
    size_t len = strlen(s), at = 0;
    for (int i = 0; i < n; i++) {
        uint64_t v = 0;
        for (int b = 0; b < 6; b++, at++)
            v = v << 8 | (at < len ? (unsigned char)s[at] : 0);
        d[i] = (double)v;
    }
}

static void get_text(const double *d, int n, char *out, size_t cap) {
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        uint64_t v = (uint64_t)d[i];
        for (int b = 5; b >= 0 && at + 1 < cap; b--) {
            char c = (char)(v >> (8 * b) & 0xff);
            if (c) out[at++] = c;
        }
    }
    out[at] = '\0';
}

static void put_u64(double *d, uint64_t v) {
    d[0] = (double)(v >> 32);
    d[1] = (double)(v & 0xffffffffu);
}

static uint64_t get_u64(const double *d) {
    return (uint64_t)d[0] << 32 | (uint64_t)d[1];
}

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static uint64_t sched_hash(const zb_schedule *s) {
    uint64_t h = fnv(14695981039346656037ull, &s->p, sizeof s->p);
    for (int r = 0; r < s->p; r++) {
        h = fnv(h, &s->len[r], sizeof s->len[r]);
        for (int i = 0; i < s->len[r]; i++) {
            const zb_action *a = &s->acts[r][i];
            h = fnv(h, &a->pass, 1);
            h = fnv(h, &a->chunk, 1);
            h = fnv(h, &a->mb, sizeof a->mb);
        }
    }
    return h;
}

static uint64_t opt_hash(const zb_optim *o) {
    double v[7] = {o->min_lr, o->beta1, o->beta2, o->eps, o->weight_decay,
                   o->grad_clip, o->warmup_steps + 0.5 * o->cosine};
    return fnv(14695981039346656037ull, v, sizeof v);
}

static void host_of(double *slot) {
    char host[64] = "?";
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "?");
    host[sizeof host - 1] = '\0';
    put_text(slot + F_HOST, 6, host);
}

static void fill(double *slot, const zb_plan *p, const zb_agree_opts *o) {
    const zb_training *t = &p->model.train;
    slot[F_STATUS] = ST_OK;
    host_of(slot);
    put_u64(slot + F_FP, zb_plan_fingerprint(p));
    put_text(slot + F_SCHED, 2, p->sched.name);
    put_u64(slot + F_ACTS, sched_hash(&p->sched));
    slot[F_LR] = t->opt.lr;
    put_u64(slot + F_OPT, opt_hash(&t->opt));
    put_u64(slot + F_SEED, (uint64_t)t->seed);
    put_u64(slot + F_DATA, fnv(fnv(14695981039346656037ull, t->data_path,
                                   strlen(t->data_path)),
                               t->val_path, strlen(t->val_path)));
    slot[F_STEPS] = o->steps;
    slot[F_RESUME] = o->resume;
    slot[F_CHANGED] = o->resume_changed;
    slot[F_EVERY] = o->checkpoint_every;
    slot[F_RATIO] = o->max_loss_ratio;
}

/* What differs between slots a (rank 0's) and b, as "what A vs B"; false
 * when nothing does. */
static bool differs(const double *a, const double *b, char *out, size_t cap) {
    char x[40], y[40];
    if (memcmp(a + F_SCHED, b + F_SCHED, 2 * sizeof *a) != 0) {
        get_text(a + F_SCHED, 2, x, sizeof x);
        get_text(b + F_SCHED, 2, y, sizeof y);
        snprintf(out, cap, "schedule %s vs %s", x, y);
    } else if (get_u64(a + F_FP) != get_u64(b + F_FP)) {
        snprintf(out, cap, "plan fingerprint %016llx vs %016llx (model, batch, "
                 "layout or device)", (unsigned long long)get_u64(a + F_FP),
                 (unsigned long long)get_u64(b + F_FP));
    } else if (get_u64(a + F_ACTS) != get_u64(b + F_ACTS)) {
        snprintf(out, cap, "the schedule's actions");
    } else if (a[F_LR] != b[F_LR]) {
        snprintf(out, cap, "lr %g vs %g", a[F_LR], b[F_LR]);
    } else if (get_u64(a + F_OPT) != get_u64(b + F_OPT)) {
        snprintf(out, cap, "optimizer settings");
    } else if (get_u64(a + F_SEED) != get_u64(b + F_SEED)) {
        snprintf(out, cap, "seed %llu vs %llu", (unsigned long long)get_u64(a + F_SEED),
                 (unsigned long long)get_u64(b + F_SEED));
    } else if (get_u64(a + F_DATA) != get_u64(b + F_DATA)) {
        snprintf(out, cap, "data file paths");
    } else if (a[F_STEPS] != b[F_STEPS]) {
        snprintf(out, cap, "steps %.0f vs %.0f", a[F_STEPS], b[F_STEPS]);
    } else if (a[F_RESUME] != b[F_RESUME] || a[F_CHANGED] != b[F_CHANGED]) {
        snprintf(out, cap, "--resume%s %s vs %s", a[F_RESUME] != b[F_RESUME] ? "" : "-changed",
                 (a[F_RESUME] != b[F_RESUME] ? a[F_RESUME] : a[F_CHANGED]) ? "on" : "off",
                 (a[F_RESUME] != b[F_RESUME] ? b[F_RESUME] : b[F_CHANGED]) ? "on" : "off");
    } else if (a[F_EVERY] != b[F_EVERY]) {
        snprintf(out, cap, "--checkpoint-every %.0f vs %.0f", a[F_EVERY], b[F_EVERY]);
    } else if (a[F_RATIO] != b[F_RATIO]) {
        snprintf(out, cap, "--max-loss-ratio %g vs %g", a[F_RATIO], b[F_RATIO]);
    } else {
        return false;
    }
    return true;
}

/* Every rank's slot into all[world * K] (own slot filled by the caller). */
static zb_status exchange(zb_transport *tr, double *all, zb_err *err) {
    zb_group g = {.id = 3 * tr->world, .n = tr->world, .first = 0, .stride = 1};
    return tr->allreduce_f64(tr, &g, all, (size_t)tr->world * K, err);
}

/* The verdict every rank reaches from all[]: ZB_OK, or ZB_EINPUT with
 * this rank's line in err (empty: nothing to print). */
static zb_status verdict(const double *all, int me, int world, const zb_err *mine,
                         zb_err *err) {
    int failed = 0, first = -1;
    for (int r = 0; r < world; r++)
        if (all[r * K + F_STATUS] != ST_OK && failed++ == 0) first = r;
    char host[40];
    if (failed == world) {   /* the same bad input everywhere: say it once */
        if (me == 0) *err = *mine;
        else err->msg[0] = '\0';
        return ZB_EINPUT;
    }
    if (failed) {
        get_text(all + (size_t)first * K + F_HOST, 6, host, sizeof host);
        if (all[(size_t)me * K + F_STATUS] != ST_OK)
            return zb_fail(err, ZB_EINPUT, "rank %d (host %s): %s", me, host, mine->msg);
        return zb_fail(err, ZB_EINPUT, "rank %d: rank %d (host %s)%s could not "
                       "start (its message says why); nothing was run", me, first,
                       host, failed > 1 ? " and others" : "");
    }
    char what[160];
    for (int r = 1; r < world; r++)
        if (differs(all, all + (size_t)r * K, what, sizeof what))
            return zb_fail(err, ZB_EINPUT, "rank %d: rank %d's plan or options "
                           "differ from rank 0's: %s (every process must be "
                           "given the same plan and options)", me, r, what);
    return ZB_OK;
}

static zb_status run(zb_transport *tr, double *slot_fill, const zb_err *mine,
                     bool *all_know, zb_err *err) {
    *all_know = false;
    size_t n = (size_t)tr->world * K;
    double *all = calloc(n, sizeof *all);
    if (!all) return zb_fail(err, ZB_ENOMEM, "out of memory for the start-up check");
    memcpy(all + (size_t)tr->rank * K, slot_fill, K * sizeof *all);
    zb_status s = exchange(tr, all, err);
    if (s == ZB_OK) {
        s = verdict(all, tr->rank, tr->world, mine, err);
        *all_know = s != ZB_OK;
    }
    free(all);
    return s;
}

zb_status zb_agree(zb_transport *tr, const zb_plan *plan, const zb_agree_opts *o,
                   bool *all_know, zb_err *err) {
    double slot[K] = {0};
    zb_err none = {{0}};
    fill(slot, plan, o);
    return run(tr, slot, &none, all_know, err);
}

zb_status zb_agree_failed(zb_transport *tr, const zb_err *why, zb_err *err) {
    double slot[K] = {0};
    bool all_know;
    slot[F_STATUS] = ST_FAILED;
    host_of(slot);
    zb_status s = run(tr, slot, why, &all_know, err);
    return s == ZB_OK ? ZB_EINPUT : s;   /* it failed either way */
}

/* ---- start and finish ---- */

static zb_status check_world(const zb_launch *l, const zb_plan *plan,
                             zb_err *err) {
    int need = zb_plan_world(plan);
    if (l->world == need) return ZB_OK;
    return zb_fail(err, ZB_EINPUT, "launched as %d processes (%s=%d) but the "
                   "plan has dp %d x tp %d x pp %d = %d ranks, one per process",
                   l->world, zb_launch_world_var(l->kind), l->world, plan->dp,
                   plan->tp, plan->pp, need);
}

static zb_status check_resume(const char *dir, const zb_plan *plan,
                              zb_err *err) {
    zb_ckpt_index idx;
    bool found;
    if (!dir) return ZB_OK;
    return zb_ckpt_find(dir, plan, &idx, &found, err);
}

static zb_status check_mpi(const zb_launch *l, zb_err *err) {
    if (l->kind == ZB_LAUNCH_TORCHRUN)
        return zb_fail(err, ZB_EINPUT, "a torchrun-style launch (RANK, "
                       "WORLD_SIZE) has no MPI, and the cpu backend runs "
                       "across processes over MPI only: launch with mpirun "
                       "or srun");
    if (!zb_mpi_built()) return zb_mpi_init(l->rank, l->world, err);  /* says why */
    return ZB_OK;
}

static zb_status bring_up(zb_procs *p, const zb_plan *plan, zb_err *err) {
    const zb_launch *l = &p->launch;
    int max_msgs;
    size_t msg_floats;
    ZB_TRY(zb_run_msg_sizes(plan, &max_msgs, &msg_floats, err));
    ZB_TRY(zb_watchdog_start(l->comm_timeout_s, l->rank, err));
    zb_watchdog_arm("MPI_Init");
    zb_status s = zb_mpi_init(l->rank, l->world, err);
    zb_watchdog_disarm();
    if (zb_mpi_initialized()) p->started = true;
    if (s != ZB_OK) return s;
    zb_watchdog_arm("the MPI transport's set-up (MPI_Comm_dup)");
    s = zb_mpi_world_new(max_msgs, msg_floats, l->comm_timeout_s, &p->mpi, err);
    zb_watchdog_disarm();
    return s;
}

/* The CUDA backend: a device per process, checked before any
 * communication (every process of a host finds the same), then NCCL. */
static zb_status start_cuda(zb_procs *p, const zb_plan *plan,
                            zb_run_proc *out, zb_err *err) {
    const zb_launch *l = &p->launch;
    int device;
    ZB_TRY(zb_procs_cuda_device(l->local_rank, l->local_size,
                                zb_backend_cuda_devices(),
                                getenv("CUDA_VISIBLE_DEVICES"), &device, err));
    if (zb_launch_is_mpi(l) && !zb_mpi_built())
        return zb_mpi_init(l->rank, l->world, err);   /* says why */
    ZB_TRY(zb_procs_cuda_up(p, plan, device, err));
    *out = (zb_run_proc){.tr = p->nccl, .rank = l->rank, .world = l->world,
                         .local_rank = l->local_rank, .device = device};
    return ZB_OK;
}

/* Can a rank that failed before the transport still reach the others
 * (zb_agree_failed)? Over MPI, for the cpu backend; NCCL needs a plan. */
static bool can_join(const zb_launch *l, zb_backend backend) {
    return backend == ZB_BACKEND_CPU && zb_launch_is_mpi(l) && zb_mpi_built();
}

zb_status zb_procs_fail_start(zb_procs *p, const zb_launch *l, zb_backend backend,
                              zb_status why, zb_err *err) {
    if (why != ZB_EINPUT || !can_join(l, backend)) return why;
    p->launch = *l;
    zb_err mine = *err;
    ZB_TRY(zb_watchdog_start(l->comm_timeout_s, l->rank, err));
    zb_watchdog_arm("MPI_Init");
    zb_status s = zb_mpi_init(l->rank, l->world, err);
    zb_watchdog_disarm();
    if (zb_mpi_initialized()) p->started = true;
    if (s != ZB_OK) return s;
    zb_watchdog_arm("the MPI transport's set-up (MPI_Comm_dup)");
    s = zb_mpi_world_new(1, 1, l->comm_timeout_s, &p->mpi, err);
    if (s == ZB_OK) s = zb_agree_failed(zb_mpi_transport(p->mpi), &mine, err);
    zb_watchdog_disarm();
    p->agreed = s == ZB_EINPUT;
    return s;
}

zb_status zb_procs_check(zb_procs *p, const zb_run_proc *proc, const zb_plan *plan,
                         const zb_agree_opts *o, zb_err *err) {
    zb_watchdog_arm("the start-up check that all processes run the same plan");
    zb_status s = zb_agree(proc->tr, plan, o, &p->agreed, err);
    zb_watchdog_disarm();
    return s;
}

zb_status zb_procs_start(zb_procs *p, const zb_launch *launch,
                         const zb_plan *plan, zb_backend backend,
                         const char *resume_dir, zb_run_proc *out,
                         zb_err *err) {
    memset(p, 0, sizeof *p);
    memset(out, 0, sizeof *out);
    p->launch = *launch;
    zb_status s = check_world(launch, plan, err);
    if (s == ZB_OK) s = check_resume(resume_dir, plan, err);
    if (s != ZB_OK) return zb_procs_fail_start(p, launch, backend, s, err);
    if (backend == ZB_BACKEND_CUDA) return start_cuda(p, plan, out, err);
    ZB_TRY(check_mpi(launch, err));
    ZB_TRY(bring_up(p, plan, err));
    *out = (zb_run_proc){.tr = zb_mpi_transport(p->mpi), .rank = launch->rank,
                         .world = launch->world,
                         .local_rank = launch->local_rank};
    return ZB_OK;
}

int zb_procs_here(const zb_launch *l) {
    return l->local_size > 0 ? l->local_size : l->world;
}

int zb_procs_threads(const zb_launch *l) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int share = zb_threads_per_rank(cores > 0 ? (int)cores : 1, zb_procs_here(l));
    int bound = omp_get_num_procs();
    return share < bound ? share : bound > 0 ? bound : 1;
}

void zb_procs_finish(zb_procs *p) {
    if (!p->started) return;
    if (p->nccl) zb_procs_cuda_free(p);
    zb_watchdog_arm("MPI_Finalize");
    zb_mpi_world_free(p->mpi);
    p->mpi = NULL;
    zb_mpi_finalize();
    zb_watchdog_disarm();
    zb_watchdog_stop();
    p->started = false;
}
