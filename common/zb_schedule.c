/* zb_schedule.c - see zb_schedule.h. */
#include "common/zb_schedule.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

zb_status zb_schedule_init(zb_schedule *s, const char *name, int p, int m,
                           int v, zb_placement pl, int cap_per_rank,
                           zb_err *err) {
    memset(s, 0, sizeof *s);
    if (p < 1 || m < 1 || v < 1 || (pl == ZB_PLACE_V && v != 2))
        return zb_fail(err, ZB_EINPUT,
                       "schedule needs p >= 1, m >= 1, v >= 1 (v = 2 for the "
                       "V placement); got p=%d m=%d v=%d", p, m, v);
    if ((long long)p * m * v > ZB_SCHED_MAX_PASSES)
        return zb_fail(err, ZB_EINPUT, "schedule too large: stages x microbatches "
                       "x chunks = %lld, the limit is %d (docs/schedules.md)",
                       (long long)p * m * v, ZB_SCHED_MAX_PASSES);
    snprintf(s->name, sizeof s->name, "%s", name ? name : "");
    s->p = p;
    s->m = m;
    s->v = v;
    s->placement = pl;
    s->vocab = 0;
    if (cap_per_rank <= 0) cap_per_rank = 3 * m * v;
    s->len = zb_calloc((size_t)p, sizeof *s->len, err);
    s->cap = zb_calloc((size_t)p, sizeof *s->cap, err);
    s->acts = zb_calloc((size_t)p, sizeof *s->acts, err);
    if (!s->len || !s->cap || !s->acts) goto oom;
    for (int r = 0; r < p; r++) {
        s->acts[r] = zb_calloc((size_t)cap_per_rank, sizeof(zb_action), err);
        if (!s->acts[r]) goto oom;
        s->cap[r] = cap_per_rank;
    }
    return ZB_OK;
oom:
    zb_schedule_free(s);
    return ZB_ENOMEM;
}

void zb_schedule_free(zb_schedule *s) {
    if (!s) return;
    if (s->acts)
        for (int r = 0; r < s->p; r++) free(s->acts[r]);
    free(s->acts);
    free(s->len);
    free(s->cap);
    s->acts = NULL;
    s->len = s->cap = NULL;
}

zb_status zb_schedule_push(zb_schedule *s, int r, zb_pass pass, int mb,
                           int chunk, zb_err *err) {
    if (s->len[r] == s->cap[r]) {
        int ncap = s->cap[r] * 2 + 8;
        zb_action *na = realloc(s->acts[r], (size_t)ncap * sizeof *na);
        if (!na)
            return zb_fail(err, ZB_ENOMEM, "out of memory growing rank %d's "
                           "action list", r);
        s->acts[r] = na;
        s->cap[r] = ncap;
    }
    zb_action *a = &s->acts[r][s->len[r]++];
    a->pass = (uint8_t)pass;
    a->chunk = (uint8_t)chunk;
    a->flags = 0;
    a->mb = mb;
    return ZB_OK;
}

zb_status zb_schedule_push_overlap(zb_schedule *s, int r, int f_mb,
                                   int f_chunk, zb_pass b_pass, int b_mb,
                                   int b_chunk, zb_err *err) {
    ZB_TRY(zb_schedule_push(s, r, ZB_F, f_mb, f_chunk, err));
    s->acts[r][s->len[r] - 1].flags = ZB_ACT_OVERLAP;
    return zb_schedule_push(s, r, b_pass, b_mb, b_chunk, err);
}

zb_status zb_schedule_copy(zb_schedule *dst, const zb_schedule *src,
                           zb_err *err) {
    int maxlen = 1;
    for (int r = 0; r < src->p; r++)
        if (src->len[r] > maxlen) maxlen = src->len[r];
    ZB_TRY(zb_schedule_init(dst, src->name, src->p, src->m, src->v,
                            src->placement, maxlen, err));
    dst->vocab = src->vocab;
    for (int r = 0; r < src->p; r++) {
        memcpy(dst->acts[r], src->acts[r], (size_t)src->len[r] * sizeof(zb_action));
        dst->len[r] = src->len[r];
    }
    return ZB_OK;
}

int zb_placement_vstage(zb_placement pl, int p, int rank, int chunk) {
    if (pl == ZB_PLACE_V) return chunk == 0 ? rank : 2 * p - 1 - rank;
    return chunk * p + rank;
}

int zb_vstage(const zb_schedule *s, int rank, int chunk) {
    return zb_placement_vstage(s->placement, s->p, rank, chunk);
}

void zb_vstage_owner(const zb_schedule *s, int vstage, int *rank, int *chunk) {
    int p = s->p;
    if (s->placement == ZB_PLACE_V) {
        *chunk = vstage < p ? 0 : 1;
        *rank = vstage < p ? vstage : 2 * p - 1 - vstage;
    } else {
        *chunk = vstage / p;
        *rank = vstage % p;
    }
}

static const char *const pass_names[ZB_NPASS] = {"F", "B", "W", "BW", "S", "T"};

const char *zb_pass_name(zb_pass k) {
    return (unsigned)k < ZB_NPASS ? pass_names[k] : "?";
}

int zb_pass_parse(const char *s) {
    for (int k = 0; k < ZB_NPASS; k++)
        if (strcasecmp(s, pass_names[k]) == 0) return k;
    return -1;
}

/* ------------------------------------------------ vocabulary passes */

static bool is_vocab_pass(const zb_action *a) {
    return a->pass == ZB_S || a->pass == ZB_T;
}

static zb_status vocab_fault(zb_err *err, int r, int i, const zb_action *a,
                             const char *what) {
    return zb_fail(err, ZB_EINFEASIBLE, "rank %d: action %d (%s mb %d chunk "
                   "%d): %s", r, i, zb_pass_name((zb_pass)a->pass), (int)a->mb,
                   (int)a->chunk, what);
}

/* Rank r's S/T actions on their own: chunk 0, S of mb 0, 1, ... in order,
 * T likewise, each T after its S, all m of each. */
static zb_status check_vocab_rank(const zb_schedule *s, int r, zb_err *err) {
    int ns = 0, nt = 0;
    for (int i = 0; i < s->len[r]; i++) {
        const zb_action *a = &s->acts[r][i];
        if (!is_vocab_pass(a)) continue;
        int *next = a->pass == ZB_S ? &ns : &nt;
        const char *bad = a->chunk != 0 ? "S and T belong to chunk 0"
                          : a->mb != *next ? (a->mb < *next ? "repeated pass"
                                              : "out of microbatch order")
                          : a->pass == ZB_T && nt >= ns ? "T before its S"
                          : NULL;
        if (bad) return vocab_fault(err, r, i, a, bad);
        (*next)++;
    }
    if (ns < s->m || nt < s->m)
        return zb_fail(err, ZB_EINFEASIBLE, "rank %d: missing %s of mb %d "
                       "(vocabulary parallelism: one S and one T per "
                       "microbatch on every rank)", r, ns < s->m ? "S" : "T",
                       ns < s->m ? ns : nt);
    return ZB_OK;
}

/* Rank r's S/T order against rank 0's: the collectives must line up. */
static zb_status check_vocab_order(const zb_schedule *s, int r, zb_err *err) {
    int j = 0;
    for (int i = 0; i < s->len[r]; i++) {
        const zb_action *a = &s->acts[r][i];
        if (!is_vocab_pass(a)) continue;
        while (!is_vocab_pass(&s->acts[0][j])) j++; /* both hold 2m */
        const zb_action *b = &s->acts[0][j++];
        if (a->pass != b->pass || a->mb != b->mb) {
            char what[96];
            snprintf(what, sizeof what, "S/T order differs from rank 0's, "
                     "which runs %s mb %d here", zb_pass_name((zb_pass)b->pass),
                     (int)b->mb);
            return vocab_fault(err, r, i, a, what);
        }
    }
    return ZB_OK;
}

zb_status zb_schedule_check_vocab(const zb_schedule *s, zb_err *err) {
    if (s->vocab == 0) {
        for (int r = 0; r < s->p; r++)
            for (int i = 0; i < s->len[r]; i++)
                if (is_vocab_pass(&s->acts[r][i]))
                    return vocab_fault(err, r, i, &s->acts[r][i], "S and T "
                                       "need vocabulary parallelism");
        return ZB_OK;
    }
    if (s->vocab != 1 && s->vocab != 2)
        return zb_fail(err, ZB_EINPUT, "vocabulary parallelism %d: expected "
                       "none, 1 or 2", s->vocab);
    if (s->p < 2)
        return zb_fail(err, ZB_EINPUT, "vocabulary parallelism needs at least "
                       "2 pipeline ranks, the schedule has %d", s->p);
    for (int r = 0; r < s->p; r++) ZB_TRY(check_vocab_rank(s, r, err));
    for (int r = 1; r < s->p; r++) ZB_TRY(check_vocab_order(s, r, err));
    return ZB_OK;
}

void zb_schedule_strip_vocab(zb_schedule *s) {
    for (int r = 0; r < s->p; r++) {
        int k = 0;
        for (int i = 0; i < s->len[r]; i++)
            if (!is_vocab_pass(&s->acts[r][i])) s->acts[r][k++] = s->acts[r][i];
        s->len[r] = k;
    }
}
