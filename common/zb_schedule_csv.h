/* zb_schedule_csv.h - PyTorch pipelining's compute-only CSV schedule format
 * (torch.distributed.pipelining, PipelineScheduleMulti._dump_csv and
 * _load_csv with format "compute_only").
 *
 * One row per pipeline rank, rank 0 first; each cell one action written
 * STAGE TYPE MICROBATCH, e.g. `0F0`, `5I3`, `5W3`: STAGE is the virtual
 * (global) stage index, TYPE is F (forward), I (backward for the input:
 * zb's B), W (backward for the weights) or B (full backward: zb's BW). An
 * empty cell is an idle step and is skipped. An overlapped F&B step
 * (zb_schedule.h) is one cell "(0F3;3B1)OVERLAP_F_B": the F, ';', then a
 * backward (I or B), as PyTorch's ScheduleDualPipeV writes it; read, it is
 * the F with ZB_ACT_OVERLAP and the backward. Rows end in "\r\n" (Python's
 * csv.writer); "\n" is accepted on reading, and so is blank space around a
 * cell (from_str strips it). Communication actions (SEND_F, RECV_B, ...,
 * UNSHARD, RESHARD) belong to the other form and are refused.
 *
 * Reading infers p (rows), m (largest microbatch + 1), v (stages / p) and
 * the placement from where the stages are: LOOP (stage c*p + rank) or V
 * (v = 2: stages rank and 2p-1-rank); any other mapping is refused. It
 * checks the syntax and the placement only: the simulator (zb_sim.h)
 * reports missing, repeated or deadlocked passes. Errors are ZB_EINPUT as
 * "FILE:LINE:COL: what" (zb_fail_at). Writing is atomic (zb_afile.h) and
 * reading what was written gives the same schedule back, so writing it
 * again gives the same bytes. PyTorch has no vocabulary passes: writing
 * a schedule with vocab != 0 (zb_schedule.h, S and T) is ZB_EINPUT
 * "PATH: the CSV schedule format has no vocabulary passes ...".
 */
#ifndef ZB_SCHEDULE_CSV_H
#define ZB_SCHEDULE_CSV_H

#include <stddef.h>

#include "common/zb_error.h"
#include "common/zb_schedule.h"

/* Largest file read (bytes): about 8 bytes per action at
 * ZB_SCHED_MAX_PASSES x 3 actions. */
#define ZB_SCHED_CSV_MAX_BYTES (64u << 20)

/* Parse text[len] (name is used in messages). out is initialised by the
 * call (name "import") and owned by the caller on ZB_OK. */
zb_status zb_sched_csv_parse(const char *text, size_t len, const char *name,
                             zb_schedule *out, zb_err *err);
zb_status zb_sched_csv_read(const char *path, zb_schedule *out, zb_err *err);
zb_status zb_sched_csv_write(const zb_schedule *s, const char *path,
                             zb_err *err);

#endif
