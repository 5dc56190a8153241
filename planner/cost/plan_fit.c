/* plan_fit.c - per-rank memory of a plan on a device (cost/plan_fit.h). */
#include "planner/cost/plan_fit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/zb_sim.h"
#include "common/zb_staging.h"
#include "planner/cost/cost.h"
#include "planner/cost/partition.h"
#include "planner/cost/vocab.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/* Parameters held by pipeline rank r over its chunks; with tied
 * embeddings a rank holding embedding and head keeps one table shard. */
static double rank_params(const zb_plan *p, const zb_cost_table *ct, int r) {
    double params = 0;
    bool embed = false, head = false;
    for (int c = 0; c < p->v; c++) {
        const zb_stage_span *s = &p->stages[zb_vstage(&p->sched, r, c)];
        params += s->n_layers * ct->layer.params;
        if (s->embed) params += ct->embed.params;
        if (s->head) params += ct->head.params;
        embed |= s->embed;
        head |= s->head;
    }
    if (embed && head && p->model.arch.tied_embeddings) params -= ct->vocab_params;
    return params + ct->vocab_rank_params; /* vocabulary shards (cost/vocab.h) */
}

double zb_plan_workspace_bytes(const zb_plan *plan) {
    return zb_workspace_bytes(&plan->model);
}

double zb_staging_need_bytes(const zb_model *m, int dp, int tp, int pp, int v,
                             zb_placement pl, int n_micro, int micro_batch) {
    if (strcasecmp(m->cluster.device.name, "cpu") == 0) return 0;
    int slots[ZB_STAGING_RINGS];
    zb_staging_slots(pp, v, pl, n_micro, slots);
    size_t tokens = (size_t)micro_batch * (size_t)m->arch.seq_len;
    size_t msg = zb_staging_msg_floats(tokens, m->arch.hidden,
                                       zb_precision_bytes(m->train.precision));
    return (double)zb_staging_bytes(dp * tp * pp, slots, msg);
}

double zb_plan_staging_bytes(const zb_plan *plan) {
    return zb_staging_need_bytes(&plan->model, plan->dp, plan->tp, plan->pp,
                                 plan->v, plan->sched.placement, plan->m,
                                 plan->micro_batch);
}

zb_status zb_plan_mem_need(const zb_plan *plan, const char *device,
                           double *need, zb_err *err) {
    const zb_device *d = zb_device_lookup(device);
    if (!d)
        return zb_fail(err, ZB_EINPUT, "unknown device '%s'", device);
    zb_model m = plan->model;
    m.cluster.device = *d;
    /* zbrun's CPU backend computes in fp32 and does not shard the
     * optimizer state (docs/zbrun.md) */
    if (strcasecmp(d->name, "cpu") == 0) {
        m.train.precision = ZB_PREC_FP32;
        m.train.zero1 = false;
    }
    zb_cost_table ct;
    ZB_TRY(zb_cost_eval(&m, plan->tp, plan->micro_batch, &ct, err));
    zb_vocab_cost vc;
    ZB_TRY(zb_vocab_eval(&m, plan->dp, plan->tp, plan->pp, plan->micro_batch,
                         plan->vocab_parallel, &ct, &vc, err));
    int n = plan->pp * plan->v;
    zb_costs costs;
    ZB_TRY(zb_costs_init(&costs, n, err));
    zb_stage_costs(&ct, plan->stages, plan->pp, plan->v, plan->sched.placement,
                   plan->dp, plan->tp, m.cluster.devices_per_node, &costs);
    zb_vocab_apply(&vc, &costs);
    zb_sim_result sim;
    zb_status st = zb_simulate(&plan->sched, &costs, &sim, err);
    zb_costs_free(&costs);
    if (st != ZB_OK) {
        zb_sim_result_free(&sim);
        return st;
    }
    double ws = zb_workspace_bytes(&m) +
                zb_staging_need_bytes(&m, plan->dp, plan->tp, plan->pp, plan->v,
                                      plan->sched.placement, plan->m,
                                      plan->micro_batch);
    for (int r = 0; r < plan->pp; r++)
        need[r] = zb_static_mem_bytes(&m, rank_params(plan, &ct, r), plan->dp) +
                  sim.peak_mem[r] + ws;
    zb_sim_result_free(&sim);
    return ZB_OK;
}

/* Bytes this process's ranks need: every rank, or only `rank`. */
static double needed(const zb_plan *p, const double *need, bool launched,
                     int rank) {
    double sum = 0;
    for (int g = 0; g < zb_plan_world(p); g++) {
        if (launched && g != rank) continue;
        int pr, dr, tr;
        zb_plan_coords(p, g, &pr, &dr, &tr);
        sum += need[pr];
    }
    return sum;
}

zb_status zb_plan_fit_host(const zb_plan *plan, const char *plan_path, bool cpu,
                           bool launched, int rank, int here, double avail,
                           bool limited, char *note, size_t n, zb_err *err) {
    note[0] = '\0';
    const char *dev = plan->model.cluster.device.name;
    bool plan_cpu = strcasecmp(dev, "cpu") == 0;
    if (!cpu) {
        if (plan_cpu)
            snprintf(note, n, "note: the plan was made for the cpu device; its "
                     "predictions do not describe this GPU run");
        return ZB_OK;
    }
    double *need = zb_calloc((size_t)plan->pp, sizeof *need, err);
    if (!need) return ZB_ENOMEM;
    zb_status st = zb_plan_mem_need(plan, "cpu", need, err);
    double total = st == ZB_OK ? needed(plan, need, launched, rank) : 0;
    double worst = 0;
    for (int r = 0; r < plan->pp; r++)
        if (need[r] > worst) worst = need[r];
    free(need);
    ZB_TRY(st);
    if (!plan_cpu)
        snprintf(note, n, "note: the plan was made for %s; on the cpu backend "
                 "(fp32, every activation kept) a rank needs up to %.2f GiB",
                 dev, worst / GIB);
    if (launched && here > 1) avail /= here;
    if (!(avail > 0) || total <= avail) return ZB_OK;
    int ranks = launched ? 1 : zb_plan_world(plan);
    return zb_fail(err, ZB_EINPUT, "%s: does not fit this host: %d rank%s "
                   "need%s %.2f GiB of host memory (up to %.2f GiB per rank%s%s) "
                   "but %.2f GiB is available (%s)", plan_path, ranks,
                   ranks == 1 ? "" : "s", ranks == 1 ? "s" : "", total / GIB,
                   worst / GIB, plan_cpu ? "" : ", plan made for ",
                   plan_cpu ? "" : dev, avail / GIB,
                   limited ? "ulimit -v" : launched && here > 1
                   ? "MemAvailable shared by this host's processes" : "MemAvailable");
}
