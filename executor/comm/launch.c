/* launch.c - launcher detection from the environment; see launch.h. */
#include "executor/comm/launch.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The variable names of one launcher; NULL: the launcher has none. */
typedef struct {
    zb_launcher kind;
    const char *rank, *world, *local_rank, *local_size;
    const char *guard;     /* must also be set (Slurm: inside a job step) */
    const char *guard_alt; /* or this one */
} zb_launch_vars;

static const zb_launch_vars launchers[] = {
    {ZB_LAUNCH_OMPI, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
     "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", NULL, NULL},
    {ZB_LAUNCH_SLURM, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID",
     "SLURM_NTASKS_PER_NODE", "SLURM_STEP_ID", "SLURM_STEPID"},
    {ZB_LAUNCH_PMI, "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID",
     "MPI_LOCALNRANKS", NULL, NULL},
    {ZB_LAUNCH_TORCHRUN, "RANK", "WORLD_SIZE", "LOCAL_RANK",
     "LOCAL_WORLD_SIZE", NULL, NULL},
};

const char *zb_launcher_name(zb_launcher k) {
    switch (k) {
    case ZB_LAUNCH_OMPI: return "Open MPI";
    case ZB_LAUNCH_SLURM: return "Slurm";
    case ZB_LAUNCH_PMI: return "PMI";
    case ZB_LAUNCH_TORCHRUN: return "torchrun-style";
    default: return "none";
    }
}

const char *zb_launch_world_var(zb_launcher k) {
    for (size_t i = 0; i < sizeof launchers / sizeof *launchers; i++)
        if (launchers[i].kind == k) return launchers[i].world;
    return "";
}

bool zb_launch_is_mpi(const zb_launch *l) {
    return l->kind == ZB_LAUNCH_OMPI || l->kind == ZB_LAUNCH_SLURM ||
           l->kind == ZB_LAUNCH_PMI;
}

/* Integer variable `name` in [min, max]; unset: *out = dflt (when
 * required is false). */
static zb_status env_int(zb_env_fn get, void *ctx, const char *name,
                         bool required, long min, long max, long dflt,
                         long *out, zb_err *err) {
    const char *v = get(name, ctx);
    if (!v || !v[0]) {
        if (required)
            return zb_fail(err, ZB_EINPUT, "environment: %s is not set", name);
        *out = dflt;
        return ZB_OK;
    }
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (*end != '\0' || errno || x < min || x > max)
        return zb_fail(err, ZB_EINPUT, "environment: %s='%.64s' must be an "
                       "integer in %ld..%ld", name, v, min, max);
    *out = x;
    return ZB_OK;
}

/* Positive seconds from `name`, default dflt. */
static zb_status env_seconds(zb_env_fn get, void *ctx, const char *name,
                             double dflt, double *out, zb_err *err) {
    const char *v = get(name, ctx);
    *out = dflt;
    if (!v || !v[0]) return ZB_OK;
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (*end != '\0' || errno || !(x > 0) || x > 1e6)
        return zb_fail(err, ZB_EINPUT, "environment: %s='%.64s' must be a "
                       "number of seconds > 0", name, v);
    *out = x;
    return ZB_OK;
}

static bool present(zb_env_fn get, void *ctx, const zb_launch_vars *lv) {
    if (!get(lv->rank, ctx) || !get(lv->world, ctx)) return false;
    if (!lv->guard) return true;
    return get(lv->guard, ctx) || (lv->guard_alt && get(lv->guard_alt, ctx));
}

static zb_status read_launcher(zb_env_fn get, void *ctx,
                               const zb_launch_vars *lv, zb_launch *out,
                               zb_err *err) {
    long world, rank, lr, ls, port;
    ZB_TRY(env_int(get, ctx, lv->world, true, 1, INT_MAX, 0, &world, err));
    ZB_TRY(env_int(get, ctx, lv->rank, true, 0, world - 1, 0, &rank, err));
    ZB_TRY(env_int(get, ctx, lv->local_rank, false, 0, world - 1, 0, &lr, err));
    ZB_TRY(env_int(get, ctx, lv->local_size, false, 1, world, 0, &ls, err));
    out->kind = lv->kind;
    out->rank = (int)rank;
    out->world = (int)world;
    out->local_rank = (int)lr;
    out->local_size = (int)ls;
    if (lv->kind != ZB_LAUNCH_TORCHRUN) return ZB_OK;
    const char *addr = get("MASTER_ADDR", ctx);
    if (!addr || !addr[0])
        return zb_fail(err, ZB_EINPUT, "environment: RANK and WORLD_SIZE are "
                       "set (torchrun-style launch) but MASTER_ADDR is not");
    if (strlen(addr) >= sizeof out->master_addr)
        return zb_fail(err, ZB_EINPUT, "environment: MASTER_ADDR is longer "
                       "than %zu characters", sizeof out->master_addr - 1);
    strcpy(out->master_addr, addr);
    ZB_TRY(env_int(get, ctx, "MASTER_PORT", true, 1, 65535, 0, &port, err));
    out->master_port = (int)port;
    return ZB_OK;
}

zb_status zb_launch_detect(zb_env_fn get, void *ctx, zb_launch *out,
                           zb_err *err) {
    memset(out, 0, sizeof *out);
    out->world = 1;
    ZB_TRY(env_seconds(get, ctx, "ZB_BOOTSTRAP_TIMEOUT_S",
                       ZB_BOOTSTRAP_TIMEOUT_DEFAULT_S,
                       &out->bootstrap_timeout_s, err));
    ZB_TRY(env_seconds(get, ctx, "ZB_COMM_TIMEOUT_S", ZB_COMM_TIMEOUT_DEFAULT_S,
                       &out->comm_timeout_s, err));
    for (size_t i = 0; i < sizeof launchers / sizeof *launchers; i++)
        if (present(get, ctx, &launchers[i])) {
            zb_launch l = *out;
            ZB_TRY(read_launcher(get, ctx, &launchers[i], &l, err));
            *out = l;
            return ZB_OK;
        }
    return ZB_OK;
}

static const char *real_getenv(const char *name, void *ctx) {
    (void)ctx;
    return getenv(name);
}

zb_status zb_launch_from_env(zb_launch *out, zb_err *err) {
    return zb_launch_detect(real_getenv, NULL, out, err);
}
