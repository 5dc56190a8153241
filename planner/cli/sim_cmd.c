/* sim_cmd.c - see cli/sim_cmd.h.
 *
 * Costs are per pipeline rank and uniform: a schedule with v chunks per rank
 * gets t_F = F/v, t_B = B/v, t_W = W/v, M_B = mem-f/v and M_W = mem-w/v per
 * virtual stage, so every schedule does the same work per rank and the
 * spans compare directly. --cost-comm is per transfer, not divided.
 * --costs FILE gives the same per rank (or per virtual stage) from a file.
 */
#include "planner/cli/sim_cmd.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/zb_schedule_csv.h"
#include "common/zb_schedule_vocab.h"
#include "common/zb_sim.h"
#include "common/zb_suggest.h"
#include "planner/cli/cli.h"
#include "planner/registry/registry.h"
#include "planner/cli/guard.h"
#include "planner/cli/sim_costs.h"

#define ZB_SIM_MAX_TOTAL 1e100   /* bound on summed costs (any unit) */

typedef struct {
    const char *schedule;    /* a name or "all" */
    int p, m, v;             /* v 0: interleaved uses 2 */
    double f, b, w, comm;    /* per rank, seconds (any unit) */
    double mem_f, mem_w, mem_limit;
    double fb_overlap;       /* zb_costs.fb_overlap, 0..1 */
    bool mem_w_set;
    int solver;              /* zb_solver */
    double time_limit_s;
    bool json;
    const char *import_path, *export_path; /* PyTorch CSV (zb_schedule_csv.h) */
    zb_schedule imported;    /* read from import_path */
    const char *costs_path;  /* --costs: per-stage costs (cli/sim_costs.h) */
    zb_sim_costs_file costs;
    int vocab;               /* --vocab-parallel: 0 none, 1, 2 */
    double cost_s, cost_t, mem_s; /* per rank: S, T, what S holds until T */
    bool cost_s_set, cost_t_set;
    bool timeline;           /* --timeline: every action's start and end */
} sim_args;

typedef struct {
    const char *name;
    int v;
    bool ok;                 /* conditions held */
    char reason[sizeof(zb_err) + 32]; /* why not */
    zb_sched_report rep;
    zb_sim_result sim;
    zb_schedule sched;       /* what was simulated (kept for --timeline) */
} sim_out;

static const char usage[] =
    "usage: zbplan sim --schedule NAME|all --stages P --microbatches M\n"
    "                  [--cost-f F] [--cost-b B] [--cost-w W] [--cost-comm C]\n"
    "                  [--mem-f X] [--mem-w Y] [--mem-limit L] [--chunks V]\n"
    "                  [--solver heuristic|ilp|auto] [--time-limit S]\n"
    "                  [--format table|json] [--export FILE.csv]\n"
    "                  [--costs FILE] [--fb-overlap O]\n"
    "                  [--vocab-parallel none|1|2] [--cost-s S] [--cost-t T]\n"
    "                  [--mem-s Z] [--timeline]\n"
    "       zbplan sim --import FILE.csv [cost, memory and format options]\n"
    "Simulates a schedule with uniform costs per pipeline rank (a schedule\n"
    "with v chunks gets F/v, B/v, W/v, X/v, Y/v per chunk) and prints the\n"
    "longest rank span (the objective), last end, bubble rate and per-rank\n"
    "span, busy time, bubble and peak\n"
    "activation memory. Defaults: F = B = W = 1, C = 0, X = 1, Y = X/2,\n"
    "L = 0 (the schedule's own limit), V = 2 for interleaved, heuristic,\n"
    "10 s, table. --schedule all prints every schedule, skipping those whose\n"
    "conditions do not hold. --import scores an order made elsewhere, in\n"
    "PyTorch pipelining's compute-only CSV (one row per rank, cells such\n"
    "as 0F0, 1I0, 1W0, 1B0), p and m taken from the file; --mem-limit then\n"
    "names the first action over it. --export writes the simulated\n"
    "schedule in that format. --costs FILE gives per-stage costs instead of\n"
    "the cost and memory options: one line per rank (divided over its\n"
    "chunks) or per virtual stage, F,B,W,comm,mem_f,mem_w. --fb-overlap\n"
    "prices the overlapped F&B steps of dualpipev: the share (0..1, default\n"
    "0: one pass after the other) of the shorter pass hidden under the\n"
    "longer. --vocab-parallel places the output layer's vocabulary passes S\n"
    "and T on every rank (docs/schedules.md, \"Vocabulary passes\"): each S\n"
    "costs S (default F/2), each T costs T (default F), S holds Z until T\n"
    "(default 0), and the broadcast of X and the all-reduces C1, C2 cost C\n"
    "each; a --costs line may end in S,T. --timeline also prints every\n"
    "action's start and end per rank.\n"
    "  -h, --help  this text;  --version  zbplan's version\n";

/* every option, for "did you mean" */
static const char *const option_names[] = {
    "--schedule", "--stages", "--microbatches", "--chunks", "--cost-f",
    "--cost-b", "--cost-w", "--cost-comm", "--mem-f", "--mem-w", "--mem-limit",
    "--time-limit", "--solver", "--format", "--import", "--export", "--costs",
    "--fb-overlap", "--vocab-parallel", "--cost-s", "--cost-t", "--mem-s",
    "--timeline", "--help", "--version", NULL};

const char *zb_sim_cmd_usage(void) { return usage; }

static const char *const solver_names[] = {"heuristic", "ilp", "auto", NULL};
static const char *const format_names[] = {"table", "json", NULL};
static const char *const vocab_names[] = {"none", "1", "2", NULL};

/* One option; *st is set on a bad value. Returns false if argv[*i] is not
 * one of ours. */
static bool parse_one(int argc, char **argv, int *i, sim_args *a,
                      zb_status *st, zb_err *err) {
    const struct { const char *name; int *dst; } ints[] = {
        {"--stages", &a->p}, {"--microbatches", &a->m}, {"--chunks", &a->v}};
    const struct { const char *name; double *dst; bool positive; } dbls[] = {
        {"--cost-f", &a->f, true}, {"--cost-b", &a->b, true},
        {"--cost-w", &a->w, true}, {"--cost-comm", &a->comm, false},
        {"--mem-f", &a->mem_f, false}, {"--mem-w", &a->mem_w, false},
        {"--mem-limit", &a->mem_limit, false},
        {"--fb-overlap", &a->fb_overlap, false},
        {"--cost-s", &a->cost_s, false}, {"--cost-t", &a->cost_t, false},
        {"--mem-s", &a->mem_s, false},
        {"--time-limit", &a->time_limit_s, true}};
    const char *val;
    int k;
    for (size_t n = 0; n < sizeof ints / sizeof ints[0]; n++)
        if (zb_cli_opt(argc, argv, i, ints[n].name, &val, st, err)) {
            if (val) *st = zb_cli_int(ints[n].name, val, 1, ints[n].dst, err);
            return true;
        }
    for (size_t n = 0; n < sizeof dbls / sizeof dbls[0]; n++)
        if (zb_cli_opt(argc, argv, i, dbls[n].name, &val, st, err)) {
            if (val)
                *st = zb_cli_double(dbls[n].name, val, dbls[n].positive,
                                    dbls[n].dst, err);
            a->mem_w_set |= dbls[n].dst == &a->mem_w;
            a->cost_s_set |= dbls[n].dst == &a->cost_s;
            a->cost_t_set |= dbls[n].dst == &a->cost_t;
            return true;
        }
    if (zb_cli_opt(argc, argv, i, "--schedule", &val, st, err)) {
        if (val) a->schedule = val;
    } else if (zb_cli_opt(argc, argv, i, "--import", &val, st, err)) {
        if (val) a->import_path = val;
    } else if (zb_cli_opt(argc, argv, i, "--export", &val, st, err)) {
        if (val) a->export_path = val;
    } else if (zb_cli_opt(argc, argv, i, "--costs", &val, st, err)) {
        if (val) a->costs_path = val;
    } else if (zb_cli_opt(argc, argv, i, "--solver", &val, st, err)) {
        if (val) *st = zb_cli_enum("--solver", val, solver_names, &a->solver, err);
    } else if (zb_cli_opt(argc, argv, i, "--vocab-parallel", &val, st, err)) {
        if (val) *st = zb_cli_enum("--vocab-parallel", val, vocab_names, &a->vocab, err);
    } else if (strcmp(argv[*i], "--timeline") == 0) {
        a->timeline = true;
        (*i)++;
    } else if (zb_cli_opt(argc, argv, i, "--format", &val, st, err)) {
        if (val && (*st = zb_cli_enum("--format", val, format_names, &k, err)) == ZB_OK)
            a->json = k == 1;
    } else {
        return false;
    }
    return true;
}

/* The registry's name for --schedule (any case, or an alias). */
static zb_status check_name(const char **name, zb_err *err) {
    const char *known = zb_schedule_resolve(*name);
    if (known) {
        *name = known;
        return ZB_OK;
    }
    char list[256] = "";
    for (int l = 0; l < 2; l++) {
        const char *const *names = l ? zb_schedule_block_names() : zb_schedule_names();
        for (int i = 0; names[i]; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s, ",
                     names[i]);
    }
    return zb_fail(err, ZB_EINPUT, "--schedule must be one of %sall; got '%s'",
                   list, *name);
}

/* The makespan is at most every pass and transfer of every rank in a row,
 * the memory at most every microbatch's M_B on every rank: both must stay
 * far from overflowing a double, or "makespan inf" would be printed. */
static zb_status check_range(const sim_args *a, zb_err *err) {
    double v = a->v > 0 ? a->v : 2, pm = (double)a->p * a->m;
    double work = pm * (a->f + a->b + a->w + 2 * v * a->comm);
    double mem = pm * v * (a->mem_f + a->mem_w) + a->mem_limit;
    if (!(work <= ZB_SIM_MAX_TOTAL))
        return zb_fail(err, ZB_EINPUT, "sim: costs too large: stages x "
                       "microbatches x (F + B + W + 2 v C) = %g exceeds %g; "
                       "use a larger time unit", work, ZB_SIM_MAX_TOTAL);
    if (!(mem <= ZB_SIM_MAX_TOTAL))
        return zb_fail(err, ZB_EINPUT, "sim: memory sizes too large: stages x "
                       "microbatches x v x (X + Y) = %g exceeds %g; use a "
                       "larger unit", mem, ZB_SIM_MAX_TOTAL);
    return ZB_OK;
}

/* --import: the file gives the schedule, p and m (--stages and
 * --microbatches, if given, must agree); --schedule is not allowed. */
static zb_status sim_import_args(sim_args *a, zb_err *err) {
    if (a->schedule)
        return zb_fail(err, ZB_EINPUT, "sim: give --schedule or --import, not both");
    ZB_TRY(zb_sched_csv_read(a->import_path, &a->imported, err));
    const zb_schedule *s = &a->imported;
    if ((a->p && a->p != s->p) || (a->m && a->m != s->m)) {
        zb_status st = zb_fail(err, ZB_EINPUT, "sim: %s has %d ranks and %d "
                               "microbatches, --stages %d --microbatches %d",
                               a->import_path, s->p, s->m, a->p, a->m);
        zb_schedule_free(&a->imported);
        return st;
    }
    a->schedule = "import", a->p = s->p, a->m = s->m, a->v = s->v;
    return ZB_OK;
}

static zb_status parse_args(int argc, char **argv, sim_args *a, bool *help,
                            zb_err *err) {
    memset(a, 0, sizeof *a);
    a->f = a->b = a->w = 1;
    a->mem_f = 1;
    a->time_limit_s = 10;
    *help = false;
    for (int i = 1; i < argc;) {
        zb_status st = ZB_OK;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            *help = true;
            return ZB_OK;
        }
        if (!parse_one(argc, argv, &i, a, &st, err))
            return zb_fail_unknown_option(err, argv[i], option_names,
                                          "zbplan sim --help");
        ZB_TRY(st);
    }
    const zb_guard_in in[] = {{"the --costs file", a->costs_path},
                              {"the --import file", a->import_path}};
    ZB_TRY(zb_guard_output("--export", a->export_path, in, 2, err));
    if (a->import_path) ZB_TRY(sim_import_args(a, err));
    if (!a->schedule) return zb_fail(err, ZB_EINPUT, "sim: --schedule is required");
    if (!a->p) return zb_fail(err, ZB_EINPUT, "sim: --stages is required");
    if (!a->m) return zb_fail(err, ZB_EINPUT, "sim: --microbatches is required");
    if (a->import_path) ; /* the file is the schedule */
    else if (strcmp(a->schedule, "all") != 0) ZB_TRY(check_name(&a->schedule, err));
    else if (a->export_path)
        return zb_fail(err, ZB_EINPUT, "sim: --export needs one --schedule, not all");
    if (!a->mem_w_set) a->mem_w = a->mem_f / 2;
    if (!a->cost_s_set) a->cost_s = a->f / 2;
    if (!a->cost_t_set) a->cost_t = a->f;
    if (!a->vocab && (a->cost_s_set || a->cost_t_set || a->mem_s > 0))
        return zb_fail(err, ZB_EINPUT, "sim: --cost-s, --cost-t and --mem-s "
                       "need --vocab-parallel 1 or 2");
    if (a->fb_overlap > 1)
        return zb_fail(err, ZB_EINPUT, "--fb-overlap must be in 0..1 (a share "
                       "of the shorter pass hidden), got %g", a->fb_overlap);
    if (a->costs_path) return zb_sim_costs_read(a->costs_path, &a->costs, err);
    return check_range(a, err);
}

/* Placement of schedule `name` (the file's for --import). */
static zb_placement placement_of(const sim_args *a, const char *name) {
    if (a->import_path) return a->imported.placement;
    return zb_schedule_placement(name);
}

/* The vocabulary passes' costs (zb_costs): per rank, not divided over
 * chunks (every rank holds one shard); a --costs file's S,T columns win. */
static void set_vocab_costs(const sim_args *a, zb_costs *c) {
    if (!a->vocab) return;
    bool file = a->costs_path && a->costs.ncols == 8;
    c->t_s = file ? a->costs.v[6] : a->cost_s;
    c->t_t = file ? a->costs.v[7] : a->cost_t;
    c->t_bcast = c->t_c1 = c->t_c2 = a->costs_path ? a->costs.v[3] : a->comm;
    c->m_s = a->mem_s;
}

/* Build and simulate one schedule. Unmet conditions: o->ok = false. */
static zb_status run_one(const sim_args *a, const char *name, sim_out *o,
                         zb_err *err) {
    memset(o, 0, sizeof *o);
    o->name = name;
    o->v = a->import_path ? a->v : zb_schedule_chunks(name, a->v > 0 ? a->v : 2);
    snprintf(o->rep.solver, sizeof o->rep.solver, "%s",
             a->import_path ? "import" : "generator");
    double v = o->v;
    zb_costs c;
    if (a->costs_path) {
        zb_err e2;
        zb_status cs = zb_sim_costs_apply(&a->costs, a->costs_path, a->p, o->v,
                                          placement_of(a, name), &c, &e2);
        if (cs == ZB_EINPUT) { /* not this schedule's stage count */
            snprintf(o->reason, sizeof o->reason, "%s", e2.msg);
            return ZB_OK;
        }
        if (cs != ZB_OK) return zb_fail(err, cs, "%s", e2.msg);
    } else {
        ZB_TRY(zb_costs_uniform(&c, a->p * o->v, a->f / v, a->b / v, a->w / v,
                                a->comm, a->mem_f / v, a->mem_w / v, err));
    }
    c.fb_overlap = a->fb_overlap;
    set_vocab_costs(a, &c);
    zb_sched_params prm = {.p = a->p, .m = a->m, .v = o->v, .costs = &c,
                           .mem_limit = a->mem_limit,
                           .solver = (zb_solver)a->solver,
                           .time_limit_s = a->time_limit_s, .mip_gap = 1e-4};
    zb_schedule s;
    memset(&s, 0, sizeof s);
    zb_err e2;
    zb_status st = a->import_path ? zb_schedule_copy(&s, &a->imported, &e2)
                                  : zb_schedule_make(name, &prm, &s, &o->rep, &e2);
    if (st == ZB_OK && a->vocab) st = zb_schedule_place_vocab(&s, a->vocab, &e2);
    if (st == ZB_OK && a->import_path) {
        st = zb_simulate(&s, &c, &o->sim, &e2);
        if (st == ZB_OK && a->mem_limit > 0)
            st = zb_sim_check_limit(&s, &c, a->mem_limit, &e2);
        if (st != ZB_OK) {
            st = zb_fail(err, ZB_EINPUT, "%s: %s", a->import_path, e2.msg);
            zb_sim_result_free(&o->sim);
        }
        o->ok = st == ZB_OK;
    } else if (st == ZB_EINPUT || st == ZB_EINFEASIBLE) {
        bool hint = a->mem_limit <= 0 && strstr(e2.msg, "memory limit");
        snprintf(o->reason, sizeof o->reason, "%s%s", e2.msg,
                 hint ? " (give --mem-limit)" : "");
        st = ZB_OK;
    } else if (st != ZB_OK) {
        zb_fail(err, st, "%s: %s", name, e2.msg);
    } else {
        st = zb_simulate(&s, &c, &o->sim, &e2);
        if (st != ZB_OK)
            zb_fail(err, ZB_ERUNTIME, "%s produced an invalid schedule: %s",
                    name, e2.msg);
        o->ok = st == ZB_OK;
    }
    if (st == ZB_OK && o->ok && a->export_path)
        st = zb_sched_csv_write(&s, a->export_path, err);
    if (st == ZB_OK && o->ok && a->timeline) o->sched = s;
    else zb_schedule_free(&s);
    zb_costs_free(&c);
    return st;
}

/* ---- output ---- */

static void json_str(const char *s) {
    putchar('"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') printf("\\%c", ch);
        else if (ch < 0x20) printf("\\u%04x", ch);
        else putchar(ch);
    }
    putchar('"');
}

static void json_result(const sim_args *a, const sim_out *o) {
    const zb_sim_result *r = &o->sim;
    printf("{\"schedule\": ");
    json_str(o->name);
    printf(", \"p\": %d, \"m\": %d, \"v\": %d, \"max_span\": %.15g, "
           "\"last_end\": %.15g, \"bubble_rate\": %.15g, \"solver\": ",
           a->p, a->m, o->v, r->max_span, r->last_end, r->bubble_rate);
    json_str(o->rep.solver);
    if (a->vocab) printf(", \"vocab_parallel\": %d", a->vocab);
    if (strcmp(o->rep.solver, "generator") != 0 && strcmp(o->rep.solver, "import") != 0)
        printf(", \"solve\": {\"max_span\": %.15g, \"bound\": %.15g, "
               "\"gap\": %.15g, \"optimal\": %s, \"timed_out\": %s, "
               "\"solve_s\": %.6g}", o->rep.max_span, o->rep.bound,
               o->rep.gap, o->rep.optimal ? "true" : "false",
               o->rep.timed_out ? "true" : "false", o->rep.solve_s);
    printf(", \"stages\": [");
    for (int k = 0; k < r->p; k++)
        printf("%s{\"rank\": %d, \"span\": %.15g, \"busy\": %.15g, "
               "\"bubble\": %.15g, \"peak_mem\": %.15g}", k ? ", " : "", k,
               r->span[k], r->busy[k], r->bubble[k], r->peak_mem[k]);
    printf("]}");
}

/* --timeline: per rank, every action as PASS MB[.CHUNK] START-END in list
 * order (S and T carry no chunk). */
static void print_timeline(const sim_out *o) {
    const zb_schedule *s = &o->sched;
    const zb_sim_result *r = &o->sim;
    printf("timeline (per rank: action start-end)\n");
    for (int k = 0; k < s->p; k++) {
        printf("%6d", k);
        for (int i = 0; i < s->len[k]; i++) {
            const zb_action *x = &s->acts[k][i];
            bool chunk = s->v > 1 && x->pass != ZB_S && x->pass != ZB_T;
            printf(" %s%d", zb_pass_name((zb_pass)x->pass), (int)x->mb);
            if (chunk) printf(".%d", (int)x->chunk);
            printf(" %g-%g", r->start[r->off[k] + i], r->end[r->off[k] + i]);
        }
        printf("\n");
    }
}

static void table_one(const sim_args *a, const sim_out *o) {
    const zb_sim_result *r = &o->sim;
    printf("schedule %s  p %d  m %d  v %d  solver %s", o->name, a->p, a->m,
           o->v, o->rep.solver);
    if (a->vocab) printf("  vocab-parallel %d", a->vocab);
    printf("\n");
    if (strcmp(o->rep.solver, "generator") != 0 && strcmp(o->rep.solver, "import") != 0)
        printf("solve: bound %g  gap %.4f  optimal %s  timed out %s  %.3f s\n",
               o->rep.bound, o->rep.gap, o->rep.optimal ? "yes" : "no",
               o->rep.timed_out ? "yes" : "no", o->rep.solve_s);
    printf("longest rank span %g  last end %g  bubble rate %.4f\n",
           r->max_span, r->last_end, r->bubble_rate);
    printf("%6s %12s %12s %8s %12s\n", "rank", "span", "busy", "bubble",
           "peak_mem");
    for (int k = 0; k < r->p; k++)
        printf("%6d %12g %12g %8.4f %12g\n", k, r->span[k], r->busy[k],
               r->bubble[k], r->peak_mem[k]);
    if (a->timeline) print_timeline(o);
}

static void table_row(const sim_out *o) {
    if (!o->ok) {
        printf("%-12s %2s  skipped: %s\n", o->name, "-", o->reason);
        return;
    }
    const zb_sim_result *r = &o->sim;
    printf("%-12s %2d  %-10s %12g %8.4f  ", o->name, o->v, o->rep.solver,
           r->max_span, r->bubble_rate);
    for (int k = 0; k < r->p; k++) printf("%s%g", k ? " " : "", r->peak_mem[k]);
    printf("\n");
}

static void print_all(const sim_args *a, const sim_out *outs, int n) {
    if (a->json) {
        printf("{\"p\": %d, \"m\": %d, \"schedules\": [", a->p, a->m);
        for (int i = 0, first = 1; i < n; i++)
            if (outs[i].ok) {
                printf(first ? "\n  " : ",\n  ");
                json_result(a, &outs[i]);
                first = 0;
            }
        printf("],\n \"skipped\": [");
        for (int i = 0, first = 1; i < n; i++)
            if (!outs[i].ok) {
                printf(first ? "\n  {\"schedule\": " : ",\n  {\"schedule\": ");
                json_str(outs[i].name);
                printf(", \"reason\": ");
                json_str(outs[i].reason);
                printf("}");
                first = 0;
            }
        printf("]}\n");
        return;
    }
    if (a->costs_path) printf("p %d  m %d  costs %s\n", a->p, a->m, a->costs_path);
    else printf("p %d  m %d  F %g  B %g  W %g  comm %g  (per rank)\n", a->p, a->m,
           a->f, a->b, a->w, a->comm);
    if (a->vocab) printf("vocab-parallel %d  S %g  T %g  mem-s %g  (per rank)\n",
                         a->vocab, a->costs_path && a->costs.ncols == 8 ? a->costs.v[6] : a->cost_s,
                         a->costs_path && a->costs.ncols == 8 ? a->costs.v[7] : a->cost_t,
                         a->mem_s);
    printf("%-12s %2s  %-10s %12s %8s  %s\n", "schedule", "v", "solver",
           "max_span", "bubble", "peak_mem per rank");
    for (int i = 0; i < n; i++) table_row(&outs[i]);
}

#define MAX_SCHEDULES 32

static zb_status run_all(const sim_args *a, zb_err *err) {
    sim_out outs[MAX_SCHEDULES];
    int n = 0;
    zb_status st = ZB_OK;
    for (int l = 0; l < 2; l++) {
        const char *const *names = l ? zb_schedule_block_names() : zb_schedule_names();
        for (int i = 0; names[i] && n < MAX_SCHEDULES && st == ZB_OK; i++, n++)
            st = run_one(a, names[i], &outs[n], err);
    }
    if (st == ZB_OK) print_all(a, outs, n);
    for (int i = 0; i < n; i++) {
        zb_sim_result_free(&outs[i].sim);
        zb_schedule_free(&outs[i].sched);
    }
    return st;
}

static zb_status run_single(const sim_args *a, zb_err *err) {
    sim_out o;
    ZB_TRY(run_one(a, a->schedule, &o, err));
    zb_status st = ZB_OK;
    if (!o.ok) {
        st = zb_fail(err, ZB_EINPUT, "%s", o.reason);
    } else if (a->json) {
        json_result(a, &o);
        printf("\n");
    } else {
        table_one(a, &o);
    }
    zb_sim_result_free(&o.sim);
    zb_schedule_free(&o.sched);
    return st;
}

int zb_sim_cmd(int argc, char **argv) {
    sim_args a;
    bool help;
    zb_err err = {{0}};
    zb_status st = parse_args(argc, argv, &a, &help, &err);
    if (st == ZB_OK && help) {
        char list[1024];
        zb_schedule_list_text(list, sizeof list);
        fputs(usage, stdout);
        fputs(list, stdout);
        fputs("Docs: docs/zbplan.md (zbplan sim), docs/schedules.md.\n", stdout);
        return 0;
    }
    if (st == ZB_OK)
        st = strcmp(a.schedule, "all") == 0 ? run_all(&a, &err)
                                            : run_single(&a, &err);
    if (st != ZB_OK) fprintf(stderr, "zbplan: %s\n", err.msg);
    zb_schedule_free(&a.imported);
    zb_sim_costs_free(&a.costs);
    return zb_exit_code(st);
}
