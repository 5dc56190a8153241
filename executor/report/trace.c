/* trace.c - Chrome trace JSON of the measured timeline (see trace.h). */
#include "executor/report/trace.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/zb_afile.h"
#include "common/zb_lower.h"

void zb_action_label(const zb_action *a, char *buf, size_t cap) {
    const char *pass = zb_pass_name((zb_pass)a->pass);
    if (a->chunk > 0)
        snprintf(buf, cap, "%s%d.c%d", pass, (int)a->mb, (int)a->chunk);
    else
        snprintf(buf, cap, "%s%d", pass, (int)a->mb);
}

/* Earliest kept start over all ranks: the trace's time zero. */
static double trace_origin(const zb_run_result *res) {
    double t0 = 0;
    bool any = false;
    for (int r = 0; r < res->world; r++) {
        size_t n = (size_t)res->trace_n * (size_t)res->n_acts[r];
        for (size_t i = 0; i < n; i++)
            if (!any || res->t_start[r][i] < t0) {
                t0 = res->t_start[r][i];
                any = true;
            }
    }
    return t0;
}

static void write_names(FILE *f, const zb_plan *plan, const zb_run_result *res) {
    bool first = true;
    for (int r = 0; r < plan->pp; r++) {
        fprintf(f, "%s\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,"
                "\"args\":{\"name\":\"pipeline rank %d\"}}", first ? "" : ",",
                r, r);
        first = false;
    }
    for (int g = 0; g < res->world; g++) {
        int pr, dr, tr;
        zb_plan_coords(plan, g, &pr, &dr, &tr);
        fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,"
                "\"tid\":%d,\"args\":{\"name\":\"dp %d tp %d (rank %d)\"}}",
                pr, dr * plan->tp + tr, dr, tr, g);
    }
}

/* Sends and receives: ph "X" on the rank's own row, cat "send"/"recv"; a
 * receive lasts from the moment the rank asked for the message until it
 * had it, so its length is the rank's wait. */
static void write_transfers(FILE *f, const zb_plan *plan,
                            const zb_run_result *res, const zb_program *prog,
                            double t0) {
    for (int g = 0; g < res->world; g++) {
        int pr, dr, tr;
        zb_plan_coords(plan, g, &pr, &dr, &tr);
        const zb_op *ops = prog->ops[pr];
        for (int k = 0; k < res->trace_n; k++)
            for (int i = 0; i < res->n_ops[g]; i++) {
                if (ops[i].kind == ZB_OP_COMPUTE) continue;
                size_t at = (size_t)k * (size_t)res->n_ops[g] + (size_t)i;
                bool send = ops[i].kind == ZB_OP_SEND;
                const char *msg = ops[i].msg == ZB_MSG_ACT ? "act" : "grad";
                fprintf(f, ",\n{\"name\":\"%s %s%d %s %d\",\"cat\":\"%s\","
                        "\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,"
                        "\"dur\":%.3f,\"args\":{\"step\":%d,\"mb\":%d,"
                        "\"peer\":%d,\"vstage\":%d}}", send ? "send" : "recv",
                        msg, ops[i].mb, send ? "to" : "from", ops[i].peer,
                        send ? "send" : "recv", pr, dr * plan->tp + tr,
                        (res->x_start[g][at] - t0) * 1e6,
                        (res->x_end[g][at] - res->x_start[g][at]) * 1e6,
                        res->trace_step[k], ops[i].mb, ops[i].peer,
                        ops[i].vstage);
            }
        for (int k = 0; k < res->trace_n; k++)
            fprintf(f, ",\n{\"name\":\"sync+optimizer\",\"cat\":\"step\","
                    "\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,"
                    "\"dur\":%.3f,\"args\":{\"step\":%d}}", pr,
                    dr * plan->tp + tr, (res->tail_start[g][k] - t0) * 1e6,
                    (res->tail_end[g][k] - res->tail_start[g][k]) * 1e6,
                    res->trace_step[k]);
    }
}

static void write_events(FILE *f, const zb_plan *plan, const zb_run_result *res) {
    double t0 = trace_origin(res);
    char label[24];
    for (int g = 0; g < res->world; g++) {
        int pr, dr, tr;
        zb_plan_coords(plan, g, &pr, &dr, &tr);
        const zb_action *acts = plan->sched.acts[pr];
        for (int k = 0; k < res->trace_n; k++)
            for (int i = 0; i < res->n_acts[g]; i++) {
                size_t at = (size_t)k * (size_t)res->n_acts[g] + (size_t)i;
                double ts = (res->t_start[g][at] - t0) * 1e6;
                double dur = (res->t_end[g][at] - res->t_start[g][at]) * 1e6;
                zb_action_label(&acts[i], label, sizeof label);
                fprintf(f, ",\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\","
                        "\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
                        "\"args\":{\"step\":%d,\"mb\":%d,\"chunk\":%d,"
                        "\"rank\":%d}}", label,
                        zb_pass_name((zb_pass)acts[i].pass), pr,
                        dr * plan->tp + tr, ts, dur, res->trace_step[k],
                        (int)acts[i].mb, (int)acts[i].chunk, g);
            }
    }
}

/* Validation losses: a counter track where they fall inside the kept
 * steps, and all of them (with their steps) in otherData. */
static void write_val_events(FILE *f, const zb_run_result *res) {
    double t0 = trace_origin(res);
    for (int i = 0; i < res->n_val; i++)
        if (res->val_t[i] >= t0 && isfinite(res->val_loss[i]))
            fprintf(f, ",\n{\"name\":\"val_loss\",\"ph\":\"C\",\"pid\":0,"
                    "\"ts\":%.3f,\"args\":{\"val_loss\":%.9g}}",
                    (res->val_t[i] - t0) * 1e6, res->val_loss[i]);
}

zb_status zb_trace_write(const char *path, const zb_plan *plan,
                         const zb_run_result *res, zb_err *err) {
    zb_afile af;
    ZB_TRY(zb_afile_open(&af, path, err));
    fprintf(af.f, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"schedule\":"
            "\"%s\",\"dp\":%d,\"tp\":%d,\"pp\":%d,\"v\":%d,\"val_loss\":[",
            plan->sched.name, plan->dp, plan->tp, plan->pp, plan->v);
    for (int i = 0; i < res->n_val; i++) /* JSON has no nan: null */
        fprintf(af.f, isfinite(res->val_loss[i]) ? "%s[%d,%.9g]" : "%s[%d,null]",
                i ? "," : "", res->val_step[i], res->val_loss[i]);
    fprintf(af.f, "]},\n\"traceEvents\":[");
    write_names(af.f, plan, res);
    write_events(af.f, plan, res);
    write_val_events(af.f, res);
    zb_program prog;
    if (res->n_ops && zb_lower(&plan->sched, &prog, err) == ZB_OK) {
        write_transfers(af.f, plan, res, &prog, trace_origin(res));
        zb_program_free(&prog);
    }
    fprintf(af.f, "\n]}\n");
    bool ok = !ferror(af.f);
    zb_status s = zb_afile_close(&af, ok, err);
    if (!ok) return zb_fail(err, ZB_EIO, "cannot write '%s': %s", path,
                            strerror(errno));
    return s;
}
