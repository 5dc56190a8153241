/* cmp_report.h - the part of a zbrun report (report.yaml, executor/
 * report.h) that zbreport compares: layout, bubbles, speed, memory, and the
 * measured timeline of one step.
 *
 * Memory: the largest pipeline rank's peak, measured and predicted on the
 * same basis (the plan's peak less its workspace margin, as zbrun writes
 * predicted_peak_mem_bytes). Times in seconds.
 * Planned timeline: when the plan the run names (run.plan_path, as given,
 * else the file of that name beside the report) can be read and has the
 * content hash the run recorded (run.plan_hash, zb_plan_file_hash; any
 * plan of that name for a report without one), its schedule simulated with
 * its costs (zb_sim.h), one step from 0; else none (plan_changed says
 * when a file was found with another hash).
 * Errors: ZB_EINPUT "file:line:col: what is wrong" for a file that is not a
 * zbrun report (missing key, wrong type), ZB_EIO when it cannot be read.
 */
#ifndef ZB_CMP_REPORT_H
#define ZB_CMP_REPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "common/zb_error.h"

typedef struct {
    int n;                  /* actions */
    char (*label)[24];      /* [n] "F3", "B3.c1" */
    double *start, *end;    /* [n] seconds from the step's first start */
} zb_cmp_row;

typedef struct {
    char path[512];
    char label[96];         /* the run's name: the file name without its
                               folder and ".yaml" / ".report.yaml" */
    char model[128], schedule[64];
    int dp, tp, pp, v, m;
    double bubble, pred_bubble;
    double replayed;        /* < 0 when the report has none */
    double step_s, pred_step_s, tokens_per_s, mfu, pred_mfu;
    bool mfu_guessed;       /* MFU against a guessed (cpu) peak */
    double mem_bytes, pred_mem_bytes;
    double stalled;         /* share of pass time off-core (0 if absent,
                               -1 with several threads per rank) */
    double load;            /* 1-minute load average at the start, -1 unknown */
    int step;               /* step of the timeline, 0 if none */
    int steps_run;          /* steps the run measured (0 if absent) */
    int cores;              /* the machine's cores (0 if absent) */
    zb_cmp_row *rows;       /* [pp], NULL when the report has no timeline */
    zb_cmp_row *planned;    /* [pp], NULL when the plan could not be read */
    double planned_end;     /* the simulated passes' last end, s */
    char plan_hash[17];     /* run.plan_hash: the content hash of the plan
                               that ran ("" in older reports) */
    char plan_changed[700]; /* "the plan on disk (...) is not the one that
                               ran (...)" when the plan file found has
                               another hash (then planned is NULL), else "" */
} zb_cmp_report;

zb_status zb_cmp_report_read(const char *path, zb_cmp_report *out, zb_err *err);

/* Why these runs cannot rank schedules, into note[cap]: a run of fewer than
 * ZB_CMP_MIN_STEPS steps, or a busy machine (rank threads off their cores
 * for more than ZB_CMP_MAX_STALL of their pass time, or a load average above
 * the cores). False (note "") when neither holds. */
#define ZB_CMP_MIN_STEPS 5
#define ZB_CMP_MAX_STALL 0.2
bool zb_cmp_rank_note(const zb_cmp_report *r, int n, char *note, size_t cap);
void zb_cmp_report_free(zb_cmp_report *r);

#endif
