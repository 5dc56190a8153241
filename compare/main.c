/* main.c - zbreport: compare schedules from zbrun reports (docs/zbreport.md).
 *
 *   zbreport REPORT.yaml... [-o FILE.svg]
 *   zbreport --diff A.yaml B.yaml   (two plans: cmp_diff.h)
 *
 * Prints one table row per report (schedule, layout, predicted and
 * measured bubble, step time, tokens/s, MFU, peak memory predicted and
 * measured) and, with -o, writes the comparison picture (cmp_svg.h).
 * Exit status: 0 done, 2 bad usage or a file that is not a zbrun report,
 * 1 failure writing the picture.
 */
#include "version.h"   /* ZB_VERSION: git describe at build time (Makefile) */

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/zb_afile.h"
#include "common/zb_files.h"
#include "common/zb_suggest.h"
#include "compare/cmp_diff.h"
#include "compare/cmp_report.h"
#include "compare/cmp_svg.h"

static const char usage[] =
    "usage: zbreport REPORT.yaml... [-o FILE.svg] [--label NAME]...\n"
    "       zbreport --diff PLAN_A.yaml PLAN_B.yaml\n"
    "Compare runs (zbrun --report FILE) of one model with different schedules.\n"
    "  --diff A B       print what differs between two plans (zbplan -o) and\n"
    "                   their predictions, one line per difference\n"
    "  -o, --svg FILE   write the bars and timelines picture (default: none)\n"
    "  --label NAME     name the runs in the order given, one --label per\n"
    "                   report (default: the report's file name without\n"
    "                   its folder and .yaml / .report.yaml)\n"
    "  -h, --help       this text\n"
    "  --version        zbreport's version (git describe at build time)\n"
    "Exit status: 0 done; 2 bad usage, a file that is not a zbrun report, or\n"
    "  a picture over a report or in a missing folder; 1 the picture could\n"
    "  not be written.\n"
    "Docs: docs/zbreport.md; `make compare` runs every schedule and calls this.\n";

#define MIB (1024.0 * 1024.0)

static void print_table(const zb_cmp_report *r, int n) {
    bool guessed = false;
    int w = 12;
    for (int i = 0; i < n; i++)
        if ((int)strlen(r[i].label) > w) w = (int)strlen(r[i].label);
    printf("%-*s %-12s %-14s %15s %10s %19s %9s %9s %17s %9s %5s\n", w, "run",
           "schedule", "dp/tp/pp/v", "bubble % (pred)", "replayed %",
           "step ms (pred)", "tokens/s", "MFU %", "peak MiB (pred)", "stalled %",
           "load");
    for (int i = 0; i < n; i++) {
        char layout[32], rep[16] = "-", stall[16] = "-";
        if (r[i].stalled >= 0) snprintf(stall, sizeof stall, "%.0f", 100 * r[i].stalled);
        snprintf(layout, sizeof layout, "%d/%d/%d/%d", r[i].dp, r[i].tp, r[i].pp, r[i].v);
        if (r[i].replayed >= 0) snprintf(rep, sizeof rep, "%.1f", 100 * r[i].replayed);
        printf("%-*s %-12s %-14s %6.1f (%6.1f) %10s %8.2f (%8.2f) %9.0f %8.2f%s "
               "%7.1f (%7.1f) %9s %5.1f\n", w, r[i].label,
               r[i].schedule, layout, 100 * r[i].bubble, 100 * r[i].pred_bubble, rep,
               r[i].step_s * 1e3, r[i].pred_step_s * 1e3, r[i].tokens_per_s, 100 * r[i].mfu,
               r[i].mfu_guessed ? "*" : " ", r[i].mem_bytes / MIB,
               r[i].pred_mem_bytes / MIB, stall, r[i].load);
        guessed = guessed || r[i].mfu_guessed;
    }
    printf("replayed: the plan's schedule simulated with the run's measured pass "
           "times\npeak MiB: largest pipeline rank; predicted without the "
           "planner's workspace margin\nstalled: share of pass time the "
           "rank threads were off their cores (busy machine: the bubbles "
           "include it); load: at the run's start\n");
    if (guessed) printf("*: MFU against a guessed CPU peak, not a measured one\n");
    char note[400];
    if (zb_cmp_rank_note(r, n, note, sizeof note)) printf("note: %s\n", note);
}

/* The picture may not be written over a report it is drawn from, or be
 * unwritable (common/zb_files.h), checked before anything is read. */
static zb_status check_output(const char *svg, const char *const *paths, int n,
                              zb_err *err) {
    zb_files *fs = svg ? zb_calloc(1, sizeof *fs, err) : NULL;
    if (!svg) return ZB_OK;
    if (!fs) return ZB_ENOMEM;
    zb_files_init(fs);
    zb_status st = ZB_OK;
    for (int i = 0; st == ZB_OK && i < n && i < ZB_FILES_MAX; i++)
        st = zb_files_input(fs, "the report", paths[i], err);
    for (int i = ZB_FILES_MAX; st == ZB_OK && i < n; i++)   /* past the table */
        if (zb_same_file(paths[i], svg))
            st = zb_fail(err, ZB_EINPUT, "-o %s would overwrite the report %s",
                         svg, paths[i]);
    if (st == ZB_OK) st = zb_files_output(fs, "-o", svg, err);
    free(fs);
    return st;
}

/* zbreport --diff A B: exit 0 (also when they differ), 2 bad input. */
static int diff_main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "zbreport: --diff needs two plans: zbreport --diff "
                "A.yaml B.yaml\n");
        return 2;
    }
    zb_err err;
    int n;
    if (zb_cmp_diff(argv[2], argv[3], stdout, &n, &err) != ZB_OK) {
        fprintf(stderr, "zbreport: %s\n", err.msg);
        return 2;
    }
    return 0;
}

int main(int argc, char **argv) {
    const char *svg = NULL;
    if (argc > 1 && !strcmp(argv[1], "--diff")) return diff_main(argc, argv);
    int n = 0, nlabels = 0;
    const char **paths = calloc((size_t)argc, sizeof *paths);
    const char **labels = calloc((size_t)argc, sizeof *labels);
    if (!paths || !labels) {
        fprintf(stderr, "zbreport: out of memory\n");
        free(paths);
        free(labels);
        return 1;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            free(paths);
            free(labels);
            return 0;
        } else if (!strcmp(a, "--version")) {
            printf("zbreport %s\n", ZB_VERSION);
            free(paths);
            free(labels);
            return 0;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--svg") || !strcmp(a, "--label")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "zbreport: %s needs a %s\n", a,
                        a[2] == 'l' ? "name" : "file name");
                free(paths);
                free(labels);
                return 2;
            }
            if (a[2] == 'l') labels[nlabels++] = argv[++i];
            else svg = argv[++i];
        } else if (a[0] == '-' && a[1]) {
            static const char *const names[] = {"--svg", "--label", "--help",
                                                "--version", "--diff", NULL};
            zb_err e;
            zb_fail_unknown_option(&e, a, names, "zbreport --help");
            fprintf(stderr, "zbreport: %s\n", e.msg);
            free(paths);
            free(labels);
            return 2;
        } else {
            paths[n++] = a;
        }
    }
    if (n == 0) {
        fprintf(stderr, "zbreport: no report given (usage: zbreport REPORT.yaml... "
                "[-o FILE.svg])\n");
        free(paths);
        free(labels);
        return 2;
    }
    if (nlabels && nlabels != n) {
        fprintf(stderr, "zbreport: %d --label for %d reports: give one per report, "
                "in the reports' order\n", nlabels, n);
        free(paths);
        free(labels);
        return 2;
    }
    zb_cmp_report *reps = calloc((size_t)n, sizeof *reps);
    zb_err err = {{0}};
    zb_status st = reps ? check_output(svg, paths, n, &err) : ZB_ENOMEM;
    int read = 0;
    bool drawing = false;
    for (; st == ZB_OK && read < n; read++)
        st = zb_cmp_report_read(paths[read], &reps[read], &err);
    if (st == ZB_OK) {
        read = n;
        for (int i = 0; i < nlabels; i++)
            snprintf(reps[i].label, sizeof reps[i].label, "%s", labels[i]);
        print_table(reps, n);
        for (int i = 0; i < n; i++)
            if (reps[i].plan_changed[0])
                fprintf(stderr, "zbreport: warning: %s: %s; its planned rows are "
                        "not drawn\n", reps[i].path, reps[i].plan_changed);
        drawing = svg != NULL;
        if (svg) st = zb_cmp_svg_write(svg, reps, n, &err);
        if (st == ZB_OK && svg) printf("wrote %s\n", svg);
    }
    if (st != ZB_OK) fprintf(stderr, "zbreport: %s\n", err.msg);
    for (int i = 0; reps && i < read; i++) zb_cmp_report_free(&reps[i]);
    free(reps);
    free(paths);
    free(labels);
    /* a report that cannot be read is bad input (2); a picture that
     * cannot be written is an I/O failure (1), as documented */
    return st == ZB_OK ? 0 : (st == ZB_EINPUT || st == ZB_EIO) && !drawing ? 2 : 1;
}
