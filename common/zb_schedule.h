/* zb_schedule.h - the one schedule representation used by every generator,
 * the simulator, the plan file and the executor.
 *
 * A schedule is, for each of p pipeline ranks, an ordered list of compute
 * actions. An action is a pass (F, B, W or fused BW) of one microbatch
 * (0..m-1) through one model chunk (0..v-1) held by that rank.
 *
 * Chunks map to virtual stages s in [0, p*v), the order the data flows:
 *   ZB_PLACE_LOOP (GPipe, 1F1B, ZB-H*, interleaved): s = chunk * p + rank
 *   ZB_PLACE_V    (ZB-V, v = 2):  chunk 0 -> s = rank, chunk 1 -> 2p-1-rank
 * Dependencies (DESIGN.md): F(s,j) after F(s-1,j); B(s,j) after B(s+1,j),
 * and on the last virtual stage after F(s,j); W(s,j) after B(s,j). BW is B
 * and W together. A transfer is needed exactly when the two virtual stages of
 * a dependency live on different ranks (zb_lower.h).
 *
 * Overlapped F&B step (DualPipe, DeepSeek-V3 2024): an F whose flags hold
 * ZB_ACT_OVERLAP and the B or BW that follows it on the same rank are one
 * step: it starts when both passes' inputs are there, both passes end
 * when the step ends, and it costs the overlapped time of the two
 * (zb_sim.h, zb_costs_fb_time). The two passes belong to different cells
 * (another microbatch or another chunk). Every other action has flags 0.
 */
#ifndef ZB_SCHEDULE_H
#define ZB_SCHEDULE_H

#include <stdint.h>

#include "common/zb_error.h"

typedef enum {
    ZB_F = 0, ZB_B = 1, ZB_W = 2, ZB_BW = 3,
    ZB_S = 4, ZB_T = 5 /* vocabulary passes, one rank's shard (see above) */
} zb_pass;
#define ZB_NPASS 6
typedef enum { ZB_PLACE_LOOP = 0, ZB_PLACE_V = 1 } zb_placement;

typedef struct {
    uint8_t pass;   /* zb_pass */
    uint8_t chunk;  /* 0..v-1 */
    uint16_t flags; /* ZB_ACT_OVERLAP or 0 */
    int32_t mb;     /* microbatch 0..m-1 */
} zb_action;

/* On an F: it and the next action of its rank (a B or BW) are one
 * overlapped F&B step. */
#define ZB_ACT_OVERLAP 1u

typedef struct {
    char name[32];           /* generator name, e.g. "1f1b", "zb-h1" */
    int p, m, v;
    zb_placement placement;
    int vocab;               /* vocabulary parallelism: 0 none, 1 or 2 */
    int *len;                /* [p] actions on each rank */
    int *cap;                /* [p] allocated capacity */
    zb_action **acts;        /* [p][len[r]] */
} zb_schedule;

/* Most (stage, microbatch, chunk) triples a schedule may hold: about 200
 * MB and a second or two to simulate at the limit. */
#define ZB_SCHED_MAX_PASSES (1 << 21)

/* Allocate p empty lists with room for cap_per_rank actions each (0 picks
 * 3*m*v). Lists grow as needed. p*m*v over ZB_SCHED_MAX_PASSES is
 * ZB_EINPUT "schedule too large: ...". */
zb_status zb_schedule_init(zb_schedule *s, const char *name, int p, int m,
                           int v, zb_placement pl, int cap_per_rank,
                           zb_err *err);
void zb_schedule_free(zb_schedule *s);
/* Append an action to rank r's list (grows the list; ZB_ENOMEM on failure). */
zb_status zb_schedule_push(zb_schedule *s, int r, zb_pass pass, int mb,
                           int chunk, zb_err *err);
/* Append an overlapped F&B step to rank r's list: F(f_mb, f_chunk) with
 * ZB_ACT_OVERLAP, then b_pass (ZB_B or ZB_BW) of (b_mb, b_chunk). */
zb_status zb_schedule_push_overlap(zb_schedule *s, int r, int f_mb,
                                   int f_chunk, zb_pass b_pass, int b_mb,
                                   int b_chunk, zb_err *err);
/* True when action a starts an overlapped F&B step (with the next one). */
static inline int zb_action_overlaps(const zb_action *a) {
    return (a->flags & ZB_ACT_OVERLAP) != 0;
}
/* Deep copy (dst is initialised by the call). */
zb_status zb_schedule_copy(zb_schedule *dst, const zb_schedule *src,
                           zb_err *err);

/* Virtual stage of (rank, chunk), and the inverse. */
int zb_vstage(const zb_schedule *s, int rank, int chunk);
void zb_vstage_owner(const zb_schedule *s, int vstage, int *rank, int *chunk);
int zb_placement_vstage(zb_placement pl, int p, int rank, int chunk);

/* "F", "B", "W", "BW", "S", "T"; and parsing back (-1 if unknown). */
const char *zb_pass_name(zb_pass k);
int zb_pass_parse(const char *s);

/* The vocabulary contract of s (above): with s->vocab == 0 no S or T
 * action; with 1 or 2, p >= 2 and every rank's list holds S and T of each
 * microbatch once, chunk 0, in the same S/T order as rank 0's, S(mb)
 * before T(mb) and mb increasing within each kind. ZB_EINFEASIBLE naming
 * the rank and the action ("rank 2: action 7 (T mb 3): ..."). */
zb_status zb_schedule_check_vocab(const zb_schedule *s, zb_err *err);

/* Drop every S and T action (s->vocab is left as it is). */
void zb_schedule_strip_vocab(zb_schedule *s);

#endif
