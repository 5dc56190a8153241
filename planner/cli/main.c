/* main.c - zbplan: plan zero-bubble pipeline-parallel training.
 *
 *   zbplan MODEL.yaml [options]   search, print the best candidates, write
 *                                 the plan (docs/zbplan.md)
 *   zbplan sim [options]          the schedule simulator (cli/sim_cmd.c)
 *
 * Exit status: 0 ok, 2 bad input (model file or arguments; one line on
 * stderr), 1 anything else (no candidate fits, I/O).
 */
#include "version.h"   /* ZB_VERSION: git describe at build time (Makefile) */

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "common/zb_model.h"
#include "common/zb_override.h"
#include "common/zb_plan.h"
#include "common/zb_suggest.h"
#include "common/zb_yaml.h"
#include "planner/cli/calibrate_cmd.h"
#include "planner/cli/cli.h"
#include "planner/cli/explain.h"
#include "planner/cli/forced.h"
#include "planner/cli/guard.h"
#include "planner/cli/hf_import.h"
#include "planner/cli/sim_cmd.h"
#include "planner/cost/calibrate.h"
#include "planner/cost/calibrate_regions.h"
#include "planner/cost/profile.h"
#include "planner/registry/registry.h"
#include "planner/search/levers.h"
#include "planner/search/nofit.h"
#include "planner/search/search.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

static const char usage[] =
    "usage: zbplan MODEL.yaml [-o FILE] [--dp N] [--tp N] [--pp N]\n"
    "              [--chunks V] [--schedule NAME] [--micro-batch N]\n"
    "              [--max-micro-batch N] [--solver heuristic|ilp|auto]\n"
    "              [--time-limit S] [--top K] [--compare] [--profile FILE]\n"
    "              [--mem-margin PCT] [--cores N] [--explain K]\n"
    "              [--levers] [--no-staging] [--vocab-parallel none|1|2|auto]\n"
    "              [--set KEY=VALUE]... [-q]\n"
    "       zbplan CONFIG.json [options]   (a Hugging Face config, imported)\n"
    "       zbplan import --help\n"
    "       zbplan sim --help\n"
    "       zbplan calibrate --help\n"
    "Searches data/tensor/pipeline sizes, micro-batch size, chunks and\n"
    "schedule for MODEL.yaml's model and cluster, prints the best K\n"
    "candidates (default 5) and writes the best as a plan (default\n"
    "plan.yaml). Forced options fix a dimension of the search. --compare\n"
    "also prints every schedule for the chosen split. -q prints nothing.\n"
    "  -o FILE              the plan (default: plan.yaml)\n"
    "  --dp/--tp/--pp N     fix that degree (default: searched)\n"
    "  --chunks V           chunks per rank of interleaved (default: 2 and 4 tried)\n"
    "  --schedule NAME      one schedule, names below (default: all that apply)\n"
    "  --micro-batch N      fix the micro-batch (default: the model's\n"
    "                       training.micro_batch, else searched)\n"
    "  --max-micro-batch N  largest micro-batch tried (default: 16)\n"
    "  --solver S           zb-auto orders: heuristic, ilp or auto (default: heuristic);\n"
    "                       ilp: the heuristic search, then the ILP re-solves the\n"
    "                       zb-auto/zb-auto-v schedules of the top K, kept if faster\n"
    "  --time-limit S       seconds for the search with --solver ilp (the ILP gets what\n"
    "                       the heuristic leaves of 90% of S); auto: per solve (default: 10)\n"
    "  --top K              candidates printed (default: 5)\n"
    "  --compare            also every schedule for the chosen split (default: off)\n"
    "  --profile FILE       use the times `zbrun --profile` measured wherever\n"
    "                       they cover a candidate (default: the cost model only)\n"
    "  --cores N            device cpu: plan for N cores (default: this\n"
    "                       machine's); a rank gets cores / ranks threads\n"
    "  --mem-margin PCT     keep PCT% of device memory free: a plan may use\n"
    "                       at most the rest (default: the model's\n"
    "                       cluster.memory_margin_pct, 10 unless set)\n"
    "  --levers             also search recompute (none, selective, full),\n"
    "                       sequence parallelism and ZeRO-1 (default: the\n"
    "                       model file's)\n"
    "  --vocab-parallel V   shard the embedding and output layer over the\n"
    "                       pipeline ranks (docs/plan-format.md): none, 1 or 2\n"
    "                       (the variant), auto: tried with everything else,\n"
    "                       chosen only when faster (default: none)\n"
    "  --no-staging         leave zbrun's NCCL staging rings out of GPU memory\n"
    "                       and its size limits out of the search: a layout\n"
    "                       as another framework runs it (make validate;\n"
    "                       default: counted)\n"
    "  --explain K          also take candidate K of the table apart (the\n"
    "                       chosen plan, #1, always is)\n"
    "  --set KEY=VALUE      change a key of MODEL.yaml before it is checked, e.g.\n"
    "                       --set training.global_batch=32 --set model.layers=24\n"
    "                       (repeatable; VALUE is YAML; default: none)\n"
    "  -q, --quiet          print nothing but errors (default: off)\n"
    "  -h, --help           this text;  --version  zbplan's version\n"
    "Exit status: 0 done; 2 bad input (model file or arguments: one line on\n"
    "  stderr); 1 anything else (no candidate fits, I/O).\n"
    "Docs: docs/zbplan.md, docs/model-format.md, docs/schedules.md,\n"
    "  docs/cost-model.md.\n";

/* The usage text, then the schedule names from the generator table. */
static void print_usage(void) {
    char list[1024];
    zb_schedule_list_text(list, sizeof list);
    fputs(usage, stdout);
    fputs(list, stdout);
}

typedef struct {
    const char *model_path, *out_path, *profile_path;
    zb_search_opts so;
    zb_overrides sets;   /* --set KEY=VALUE, applied to the model file */
    bool compare, quiet, help, version;
    bool margin_set;         /* --mem-margin given: it wins over the model's */
    int explain;             /* --explain K: also candidate K taken apart */
} args;

/* every option, for "did you mean" */
static const char *const option_names[] = {
    "--dp", "--tp", "--pp", "--chunks", "--schedule", "--micro-batch",
    "--max-micro-batch", "--solver", "--time-limit", "--top", "--compare",
    "--profile", "--set", "--quiet", "--help", "--version", "--cores",
    "--mem-margin", "--levers", "--no-staging", "--explain", "--vocab-parallel",
    NULL};

static const char *const solver_names[] = {"heuristic", "ilp", "auto", NULL};
static const char *const vocab_names[] = {"none", "1", "2", "auto", NULL};

/* One option; false if argv[*i] is not one. *st reports a bad value. */
static bool parse_one(int argc, char **argv, int *i, args *a, zb_status *st,
                      zb_err *err) {
    zb_search_opts *o = &a->so;
    const struct { const char *name; int *dst; } ints[] = {
        {"--dp", &o->dp}, {"--tp", &o->tp}, {"--pp", &o->pp},
        {"--chunks", &o->v}, {"--micro-batch", &o->micro_batch},
        {"--max-micro-batch", &o->max_micro_batch}, {"--top", &o->top_k},
        {"--cores", &o->cores}, {"--explain", &a->explain}};
    const char *val;
    int k;
    for (size_t n = 0; n < sizeof ints / sizeof ints[0]; n++)
        if (zb_cli_opt(argc, argv, i, ints[n].name, &val, st, err)) {
            if (val) *st = zb_cli_int(ints[n].name, val, 1, ints[n].dst, err);
            return true;
        }
    if (zb_cli_opt(argc, argv, i, "-o", &val, st, err)) {
        if (val) a->out_path = val;
    } else if (zb_cli_opt(argc, argv, i, "--profile", &val, st, err)) {
        if (val) a->profile_path = val;
    } else if (zb_cli_opt(argc, argv, i, "--set", &val, st, err)) {
        if (val) *st = zb_overrides_add(&a->sets, val, err);
    } else if (zb_cli_opt(argc, argv, i, "--time-limit", &val, st, err)) {
        if (val) *st = zb_cli_double("--time-limit", val, true, &o->time_limit_s, err);
    } else if (zb_cli_opt(argc, argv, i, "--mem-margin", &val, st, err)) {
        if (val) *st = zb_cli_double("--mem-margin", val, false, &o->mem_margin, err);
        if (val && *st == ZB_OK) o->mem_margin /= 100;
        a->margin_set = true;
    } else if (zb_cli_opt(argc, argv, i, "--schedule", &val, st, err)) {
        if (val && strlen(val) >= sizeof o->schedule)
            *st = zb_fail(err, ZB_EINPUT, "unknown schedule '%.40s...'", val);
        else if (val)
            snprintf(o->schedule, sizeof o->schedule, "%s", val);
    } else if (zb_cli_opt(argc, argv, i, "--vocab-parallel", &val, st, err)) {
        if (val && (*st = zb_cli_enum("--vocab-parallel", val, vocab_names, &k,
                                      err)) == ZB_OK)
            o->vocab = k == 3 ? ZB_SEARCH_VOCAB_AUTO : k;
    } else if (zb_cli_opt(argc, argv, i, "--solver", &val, st, err)) {
        if (val && (*st = zb_cli_enum("--solver", val, solver_names, &k, err)) == ZB_OK)
            o->solver = (zb_solver)k;
    } else {
        return false;
    }
    return true;
}

static zb_status parse_args(int argc, char **argv, args *a, zb_err *err) {
    memset(a, 0, sizeof *a);
    zb_search_opts_default(&a->so);
    a->out_path = "plan.yaml";
    for (int i = 1; i < argc;) {
        zb_status st = ZB_OK;
        const char *s = argv[i];
        if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0) {
            a->help = true;
            return ZB_OK;
        }
        if (strcmp(s, "--version") == 0) {
            a->version = true;
            return ZB_OK;
        }
        if (strcmp(s, "--compare") == 0) { a->compare = true; i++; continue; }
        if (strcmp(s, "--levers") == 0) { a->so.levers = true; i++; continue; }
        if (strcmp(s, "--no-staging") == 0) {
            a->so.no_staging = true;
            i++;
            continue;
        }
        if (strcmp(s, "-q") == 0 || strcmp(s, "--quiet") == 0) {
            a->quiet = true;
            i++;
            continue;
        }
        if (parse_one(argc, argv, &i, a, &st, err)) { ZB_TRY(st); continue; }
        if (s[0] == '-' && s[1] != '\0')
            return zb_fail_unknown_option(err, s, option_names, "zbplan --help");
        if (a->model_path)
            return zb_fail(err, ZB_EINPUT, "unexpected argument '%s' (one "
                           "model file only)", s);
        a->model_path = s;
        i++;
    }
    if (!a->model_path)
        return zb_fail(err, ZB_EINPUT, "missing MODEL.yaml (see zbplan --help)");
    return ZB_OK;
}

/* ---- printing ---- */

/* n with thousands separators: 8,030,261,248. */
static const char *with_commas(unsigned long long n, char *buf, size_t cap) {
    char digits[32];
    int len = snprintf(digits, sizeof digits, "%llu", n), o = 0;
    for (int i = 0; i < len && (size_t)o + 2 < cap; i++) {
        if (i > 0 && (len - i) % 3 == 0) buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
    return buf;
}

/* A block other than GPT-2's: its parameter count and kinds (the plan
 * records the count as model.params). GPT-2 models print as before. */
static void print_block(const zb_model *m) {
    const zb_arch *a = &m->arch;
    if (zb_arch_is_gpt2(a)) return;
    char n[40];
    printf("model: %s parameters; %d layers, hidden %d, %d heads, %d K/V heads, "
           "%s MLP %d, %s, %s, %s, %s head\n",
           with_commas(zb_model_params(a), n, sizeof n), a->layers, a->hidden,
           a->heads, zb_arch_kv_heads(a), a->mlp == ZB_MLP_SWIGLU ? "SwiGLU" : "GELU",
           a->ffn_hidden, a->norm == ZB_NORM_RMSNORM ? "RMSNorm" : "LayerNorm",
           a->position == ZB_POS_ROPE ? "RoPE" : "learned positions",
           a->no_bias ? "no biases" : "biases", a->tied_embeddings ? "tied" : "untied");
}

static void print_header(const zb_model *m, const zb_search_result *r,
                         double margin) {
    char where[64];
    if (r->cores > 0)  /* cpu: ranks are threads sharing the cores */
        snprintf(where, sizeof where, "%d core%s cpu", r->cores,
                 r->cores == 1 ? "" : "s");
    else
        snprintf(where, sizeof where, "%d x %d %s", m->cluster.nodes,
                 m->cluster.devices_per_node, m->cluster.device.name);
    printf("%s: %s, %d layout(s), %d schedule(s) simulated, %d "
           "pruned, %d over memory, %d not applicable, %.3f s\n", m->name,
           where, r->splits, r->simulated, r->pruned,
           r->over_memory, r->not_applicable, r->elapsed_s);
    print_block(m);
    double dev = m->cluster.device.mem_bytes;
    printf("memory: %.2f GiB per device, %g%% safety margin: a plan may use "
           "%.2f GiB\n", dev / GIB, 100 * margin, dev * (1 - margin) / GIB);
}

/* "measured" or "analytic": where a candidate's costs came from. */
static const char *costs_word(const zb_candidate *c) {
    if (!c->profile) return "analytic";
    return c->measured_overhead ? "measured" : "measured*";
}

/* The memory levers of a candidate, e.g. "full+sp+z1", "none". */
static const char *levers_word(const zb_candidate *c, char *buf, size_t n) {
    static const char *const rc[] = {"none", "sel", "full"};
    snprintf(buf, n, "%s%s%s", rc[c->recompute], c->sp ? "+sp" : "",
             c->zero1 ? "+z1" : "");
    return buf;
}

static void print_table(const zb_search_result *r, bool compare, bool costs,
                        bool levers) {
    printf("%3s %5s %3s %4s %2s %4s %5s %-12s %-9s %10s %12s %6s %7s %9s %9s%s%s\n",
           "#", "dp", "tp", "pp", "v", "mb", "m", "schedule", "solver",
           "step (s)", "tokens/s", "MFU", "bubble", "mem GiB", "headroom",
           levers ? "  levers" : "", costs ? "  costs" : "");
    /* vocabulary parallelism: a column only when it was asked for, so the
     * table stays as it was without it */
    bool vocab = false;
    for (int i = 0; i < r->n; i++) vocab |= r->cand[i].vocab != 0;
    for (int i = 0; i < r->n; i++) {
        const zb_candidate *c = &r->cand[i];
        printf("%3d %5d %3d %4d %2d %4d %5d %-12s %-9s %10.4f %12.0f %5.1f%% "
               "%6.1f%% %9.2f %8.1f%%%s", i + 1, c->dp, c->tp, c->pp, c->v,
               c->micro_batch, c->m, c->schedule, c->rep.solver, c->step_s,
               c->tokens_per_s, 100 * c->mfu, 100 * c->bubble_rate,
               c->peak_mem_bytes / GIB,
               100 * (c->capacity_bytes - c->peak_mem_bytes) / c->capacity_bytes,
               compare && !c->fits ? "  (over memory)" : "");
        char lw[32];
        if (levers) printf("  %s", levers_word(c, lw, sizeof lw));
        printf("%s%s", costs ? "  " : "", costs ? costs_word(c) : "");
        if (vocab) printf("  vocab %s", c->vocab ? (c->vocab == 1 ? "1" : "2") : "none");
        if (c->same[0]) printf("  (= %s)", c->same);
        printf("\n");
    }
    if (costs)
        printf("costs: measured = pass, p2p and after-pipeline times from the "
               "profile; measured* = pass and p2p times from it, all-reduce "
               "and optimizer analytic (another dp/pp); analytic = the cost "
               "model (the profile does not cover this tp, micro-batch or "
               "model)\n");
}

static void print_legend(void) {
    printf("step: predicted seconds per optimizer step; MFU: model FLOPs "
           "(no recomputation) per second over the devices' peak; bubble: "
           "idle share of the pipeline ranks' time (simulated); mem: "
           "predicted peak of the fullest device, workspace included; "
           "headroom: share of the usable memory left\n");
}

/* "dp 1 tp 8 pp 4 v 1 mb 2 1f1b [full+z1]" (no schedule: a static bound) */
static const char *layout_text(const zb_closest *k, char *buf, size_t n) {
    static const char *const rc[] = {"none", "sel", "full"};
    snprintf(buf, n, "dp %d tp %d pp %d%s%.0d mb %d %s [%s%s%s]", k->dp, k->tp,
             k->pp, k->v ? " v " : "", k->v, k->micro_batch,
             k->exact ? k->schedule : "(weights alone)", rc[k->recompute],
             k->sp && k->tp > 1 ? "+sp" : "", k->zero1 && k->dp > 1 ? "+z1" : "");
    return buf;
}

/* After "no candidate fits": by how much, and what each lever gives
 * (search/nofit.h); on stderr, under the error line. */
static zb_status print_nofit(const zb_model *m, const zb_search_opts *o,
                             const zb_closest *closest, zb_err *err) {
    zb_nofit nf;
    ZB_TRY(zb_search_nofit(m, o, closest, &nf, err));
    char lay[160];
    double lim = nf.limit_bytes, k = closest->mem_bytes;
    fprintf(stderr, "zbplan: closest: %s needs %s%.2f GiB per device; a plan "
            "may use %.2f GiB (%.2f GiB less the %g%% margin): %.2f GiB over "
            "(%.2f x)\n", layout_text(closest, lay, sizeof lay),
            closest->exact ? "" : "at least ", k / GIB, lim / GIB,
            m->cluster.device.mem_bytes / GIB, 100 * o->mem_margin,
            (k - lim) / GIB, k / lim);
    fprintf(stderr, "zbplan: each change alone (peak per device of its best "
            "plan, or of its closest candidate):\n");
    for (int i = 0; i < nf.n; i++) {
        const zb_nofit_row *r = &nf.row[i];
        fprintf(stderr, "  %-22s %-44s ", r->what, r->change);
        if (r->st == ZB_OK)
            fprintf(stderr, "fits: %.2f GiB, step %.4f s, %s\n", r->best.mem_bytes / GIB,
                    r->step_s, layout_text(&r->best, lay, sizeof lay));
        else if (r->st == ZB_EINFEASIBLE && r->best.mem_bytes > 0)
            fprintf(stderr, "over: %s%.2f GiB (+%.2f), %s\n", r->best.exact ? "" : "at least ",
                    r->best.mem_bytes / GIB, (r->best.mem_bytes - lim) / GIB,
                    layout_text(&r->best, lay, sizeof lay));
        else
            fprintf(stderr, "does not apply: %s\n", r->st == ZB_EINFEASIBLE
                    ? "nothing was over memory" : r->note);
    }
    return ZB_OK;
}

/* Why this plan (cli/explain.h): #1 taken apart, why it beat #2, and
 * candidate `k` (1-based) when asked for. */
static zb_status explain(const zb_model *m, const zb_search_result *r, int k,
                         zb_err *err) {
    zb_explain e1, e2;
    ZB_TRY(zb_explain_candidate(m, &r->cand[0], &e1, err));
    printf("\nchosen plan (#1):\n");
    zb_explain_print(stdout, &r->cand[0], &e1);
    if (r->n > 1) {
        ZB_TRY(zb_explain_candidate(m, &r->cand[1], &e2, err));
        zb_explain_why(stdout, &r->cand[0], &e1, &r->cand[1], &e2);
    }
    if (k > 1 && k <= r->n) {
        ZB_TRY(zb_explain_candidate(m, &r->cand[k - 1], &e2, err));
        printf("\ncandidate #%d (%s):\n", k, r->cand[k - 1].schedule);
        zb_explain_print(stdout, &r->cand[k - 1], &e2);
    } else if (k > r->n) {
        printf("--explain %d: the table has %d candidate(s)\n", k, r->n);
    }
    return ZB_OK;
}

/* Every schedule for the winner's split, side by side. */
static zb_status compare(const zb_model *m, const args *a,
                         const zb_candidate *best, zb_err *err) {
    zb_search_opts o = a->so;
    o.dp = best->dp;
    o.tp = best->tp;
    o.pp = best->pp;
    o.micro_batch = best->micro_batch;
    o.schedule[0] = '\0';
    o.exhaustive = true;
    o.levers = false;
    zb_model lm = zb_candidate_model(m, best);
    zb_search_result r;
    zb_status st = zb_search(&lm, &o, &r, err);
    if (st == ZB_OK) {
        printf("\nall schedules for dp %d tp %d pp %d micro-batch %d:\n",
               best->dp, best->tp, best->pp, best->micro_batch);
        print_table(&r, true, a->so.profile != NULL, false);
    }
    zb_search_result_free(&r);
    return st;
}

/* zbrun reads a plan with zb_plan_read's limits, among them every time
 * and size below 1e15: a plan that breaks that one (a device peak of
 * 1e-20 TFLOPS predicts passes of 7e16 s) is refused here, exit 2,
 * instead of written for zbrun to refuse. The plan goes through a private
 * temporary file and is read back exactly as zbrun will read it. Only the
 * number limit is enforced: the reader's size limits (hidden x ffn_hidden,
 * ...) are this executor's, and a plan for a larger machine may pass them
 * legitimately (tests/bench/validate.sh plans a 1T model). */
static zb_status check_readable(const zb_plan *plan, zb_err *err) {
    char tmp[] = "/tmp/zbplan-check-XXXXXX";
    int fd = mkstemp(tmp);
    if (fd < 0)
        return zb_fail(err, ZB_EIO, "cannot create a temporary file in /tmp: %s",
                       strerror(errno));
    close(fd);
    zb_plan back;
    zb_err e;
    zb_status st = zb_plan_write(tmp, plan, err);
    bool read = st == ZB_OK && zb_plan_read(tmp, &back, &e) == ZB_OK;
    if (read) zb_plan_free(&back);
    if (st == ZB_OK && !read && strstr(e.msg, "must be <= 1e+15")) {
        const char *why = strncmp(e.msg, tmp, strlen(tmp)) ? e.msg : e.msg + strlen(tmp);
        st = zb_fail(err, ZB_EINPUT, "the plan would be refused by zbrun (plan%s); "
                     "check the model's cluster.device (peak %g TFLOPS bf16, "
                     "%g fp32)", why, plan->model.cluster.device.peak_bf16_flops / 1e12,
                     plan->model.cluster.device.peak_fp32_flops / 1e12);
    }
    unlink(tmp);
    return st;
}

static zb_status write_plan(const zb_model *m, const args *a,
                            const zb_candidate *best, zb_err *err) {
    zb_plan plan;
    zb_status st = zb_search_make_plan(m, best, &plan, err);
    if (st == ZB_OK) st = check_readable(&plan, err);
    if (st == ZB_OK) st = zb_plan_write(a->out_path, &plan, err);
    zb_plan_free(&plan);
    if (st == ZB_OK && !a->quiet)
        printf("wrote %s: dp %d tp %d pp %d v %d micro-batch %d m %d %s, "
               "step %.4f s%s%s%s\n", a->out_path, best->dp, best->tp, best->pp,
               best->v, best->micro_batch, best->m, best->schedule,
               best->step_s, a->so.profile ? ", costs " : "",
               a->so.profile ? costs_word(best) : "",
               best->vocab == 1 ? ", vocab-parallel 1"
               : best->vocab == 2 ? ", vocab-parallel 2" : "");
    return st;
}

/* A plan given where a model belongs: its top level has 'schedule' and
 * 'parallel', which a model never has. */
static bool is_plan(const char *path) {
    zb_ydoc d;
    zb_err e;
    if (zb_ydoc_load(path, &d, &e) != ZB_OK) return false;
    bool plan = d.root && d.root->type == ZB_Y_MAP &&
                zb_ymap_get(d.root, "schedule") && zb_ymap_get(d.root, "parallel");
    zb_ydoc_free(&d);
    return plan;
}

static zb_status plan_main(const args *a, zb_err *err, bool *printed) {
    if (is_plan(a->model_path))
        return zb_fail(err, ZB_EINPUT, "%s:1:1: this is a plan, not a model; "
                       "run it with zbrun %s", a->model_path, a->model_path);
    zb_model m;
    zb_status st = zb_guard_paths(a->model_path, a->profile_path, a->out_path, err);
    if (st == ZB_OK)   /* a Hugging Face config.json: imported, then planned */
        st = zb_hf_is_json(a->model_path) ? zb_hf_import(a->model_path, &a->sets, &m, err)
                                           : zb_model_load_set(a->model_path, &a->sets, &m, err);
    if (st != ZB_OK) {
        /* file:line:col: messages already say where; others get "zbplan:" */
        bool at = strncmp(err->msg, a->model_path, strlen(a->model_path)) == 0;
        fprintf(stderr, "%s%s\n", at ? "" : "zbplan: ", err->msg);
        *printed = true;
        return st;
    }
    zb_profile *prof = NULL;
    if (a->profile_path) {
        prof = zb_calloc(1, sizeof *prof, err);
        if (!prof) return ZB_ENOMEM;
        st = zb_profile_load(a->profile_path, prof, err);
        if (st != ZB_OK) {
            free(prof);
            return st;
        }
    }
    if (st == ZB_OK) st = zb_explain_forced(&m, &a->so, a->model_path, err);
    if (st != ZB_OK) {
        free(prof);
        return st;
    }
    args local = *a;
    local.so.profile = prof;
    if (!a->margin_set) local.so.mem_margin = m.cluster.mem_margin;
    a = &local;
    zb_search_result r;
    st = zb_search_levers(&m, &a->so, &r, err);
    if (st == ZB_EINFEASIBLE && r.closest.mem_bytes > 0) {
        fprintf(stderr, "zbplan: %s\n", err->msg);
        *printed = true;
        zb_err e2;
        if (print_nofit(&m, &a->so, &r.closest, &e2) != ZB_OK)
            fprintf(stderr, "zbplan: %s\n", e2.msg);
    }
    if (st == ZB_OK && !a->quiet) {
        print_header(&m, &r, a->so.mem_margin);
        print_table(&r, false, prof != NULL, a->so.levers);
        print_legend();
        st = explain(&m, &r, a->so.top_k > 0 ? a->explain : 0, err);
    }
    if (st == ZB_OK && a->compare && !a->quiet)
        st = compare(&m, a, &r.cand[0], err);
    if (st == ZB_OK) st = write_plan(&m, a, &r.cand[0], err);
    zb_search_result_free(&r);
    free(prof);
    return st;
}

/* "zbplan sim --version", "zbplan calibrate --version": the one version */
static bool sub_version(int argc, char **argv) {
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "--version")) return true;
    return false;
}

int main(int argc, char **argv) {
    /* calibrate re-executes itself through /proc/self/exe, which would make
     * ps and top show the process as "exe" */
    (void)prctl(PR_SET_NAME, "zbplan", 0, 0, 0);
    if (argc > 1 && (!strcmp(argv[1], "sim") || !strcmp(argv[1], "calibrate")) &&
        sub_version(argc, argv)) {
        printf("zbplan %s\n", ZB_VERSION);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "sim") == 0)
        return zb_sim_cmd(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "import") == 0)
        return zb_import_cmd(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "calibrate") == 0) {
        zb_calib_openmp_as_zbrun(argv);  /* its OpenMP regions as zbrun's */
        return zb_calibrate_cmd(argc - 1, argv + 1);
    }
    args a;
    zb_err err = {{0}};
    bool printed = false;
    zb_status st = parse_args(argc, argv, &a, &err);
    if (st == ZB_OK && a.help) {
        print_usage();
        return 0;
    }
    if (st == ZB_OK && a.version) {
        printf("zbplan %s\n", ZB_VERSION);
        return 0;
    }
    if (st == ZB_OK) st = plan_main(&a, &err, &printed);
    /* messages that start with the file name ("file:1:1: ...") stand alone */
    bool at_file = a.model_path && !strncmp(err.msg, a.model_path, strlen(a.model_path));
    if (st != ZB_OK && !printed)
        fprintf(stderr, "%s%s\n", at_file ? "" : "zbplan: ", err.msg);
    return zb_exit_code(st);
}
