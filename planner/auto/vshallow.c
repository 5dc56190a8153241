/* vshallow.c - see auto/vshallow.h. */
#include "planner/auto/vshallow.h"

#include <math.h>
#include <stdlib.h>

#include "planner/schedules/build.h"

typedef struct {
    zb_schedule *s;
    int r, n;       /* n: microbatches the rule is laid out for, max(m, 2p) */
    int next[3][2]; /* next microbatch per pass kind (F, B, W) and chunk */
} sh_rank;

/* Append `pat` (kind letter, chunk digit pairs) `times` times, skipping
 * microbatches >= m and chains already complete. */
static zb_status put(sh_rank *k, int times, const char *pat, zb_err *err) {
    for (int t = 0; t < times; t++)
        for (const char *c = pat; c[0] && c[1]; c += 2) {
            zb_pass pass = c[0] == 'F' ? ZB_F : c[0] == 'B' ? ZB_B : ZB_W;
            int chunk = c[1] - '0', *nx = &k->next[pass][chunk];
            if (*nx >= k->n) continue;
            int mb = (*nx)++;
            if (mb < k->s->m) ZB_TRY(zb_sched_put(k->s, k->r, pass, mb, chunk, err));
        }
    return ZB_OK;
}

/* ZB-V's list for rank r with d fewer warm-up chunk-0 F; every chain is
 * completed at the end (a shallower warm-up leaves more for the tail). */
static zb_status rank_list(zb_schedule *s, int r, int d, zb_err *err) {
    int p = s->p;
    sh_rank k = {s, r, s->m > 2 * p ? s->m : 2 * p, {{0}}};
    int *f0 = &k.next[ZB_F][0], *f1 = &k.next[ZB_F][1];
    int warm = 2 * (p - r) - 1 - d;
    ZB_TRY(put(&k, warm < 1 ? 1 : warm, "F0", err));
    ZB_TRY(put(&k, r, "F1F0", err));
    ZB_TRY(put(&k, p - r, "F1B1W1", err));
    while (*f0 < k.n || *f1 < *f0) {
        if (*f0 < k.n) ZB_TRY(put(&k, 1, "F0", err));
        ZB_TRY(put(&k, 1, "B0W0F1B1W1", err));
    }
    ZB_TRY(put(&k, r, "B0B1", err));
    ZB_TRY(put(&k, p - r, "B0W0", err));
    ZB_TRY(put(&k, k.n, "B1", err)); /* none left at d = 0 */
    ZB_TRY(put(&k, k.n, "B0", err));
    ZB_TRY(put(&k, k.n, "W1", err));
    return put(&k, k.n, "W0", err);
}

/* Memory change of action x on rank r. */
static double delta(const zb_schedule *s, const zb_costs *c, int r, const zb_action *x) {
    int vs = zb_vstage(s, r, x->chunk);
    return x->pass == ZB_F ? c->m_b[vs] : x->pass == ZB_B ? c->m_w[vs] - c->m_b[vs]
                                                          : -c->m_w[vs];
}

/* Move a[j] to position i (i < j), the passes between one later. */
static void pull(zb_action *a, int i, int j) {
    zb_action x = a[j];
    for (; j > i; j--) a[j] = a[j - 1];
    a[i] = x;
}

/* Fit rank r's list to the limit (see the header): 0 if an F cannot fit. */
static int fit_rank(zb_schedule *s, const zb_costs *c, int r, double limit) {
    zb_action *a = s->acts[r];
    int len = s->len[r];
    double mem = 0, tol = 1e-9 * fmax(1, fabs(limit));
    for (int i = 0; i < len; i++) {
        while (a[i].pass == ZB_F && mem + delta(s, c, r, &a[i]) > limit + tol) {
            int j = i + 1;
            for (; j < len; j++) { /* the next B whose F has run (before i) */
                if (a[j].pass != ZB_B) continue;
                int ran = 0;
                for (int q = 0; q < i && !ran; q++)
                    ran = a[q].pass == ZB_F && a[q].mb == a[j].mb && a[q].chunk == a[j].chunk;
                if (ran) break;
            }
            if (j == len) return 0;
            pull(a, i, j);
            for (int w = i + 2; w < len; w++) /* its W right after it */
                if (a[w].pass == ZB_W && a[w].mb == a[i].mb && a[w].chunk == a[i].chunk) {
                    pull(a, i + 1, w);
                    break;
                }
            mem += delta(s, c, r, &a[i]);
            if (a[i + 1].pass == ZB_W && a[i + 1].mb == a[i].mb && a[i + 1].chunk == a[i].chunk)
                mem += delta(s, c, r, &a[++i]);
            i++;
        }
        mem += delta(s, c, r, &a[i]);
    }
    return 1;
}

/* The list for one d fitted to the limit; *ok 0 when some F cannot fit. */
static zb_status build(int p, int m, int d, const zb_costs *c, double limit,
                       zb_schedule *out, int *ok, zb_err *err) {
    ZB_TRY(zb_sched_begin(out, "zb-auto-v", p, m, 2, ZB_PLACE_V, 6 * m, err));
    zb_status st = ZB_OK;
    *ok = 1;
    for (int r = 0; r < p && st == ZB_OK; r++) {
        st = rank_list(out, r, d, err);
        if (st == ZB_OK && *ok) *ok = fit_rank(out, c, r, limit);
    }
    return zb_sched_end(out, st);
}

zb_status zb_vshallow_best(int p, int m, const zb_costs *c, double mem_limit,
                           zb_schedule *out, int *found, zb_err *err) {
    zb_sim_ws *ws = zb_sim_ws_new();
    if (!ws) return zb_fail(err, ZB_ENOMEM, "zb-auto-v: out of memory");
    double best = INFINITY, tol = 1e-9 * fmax(1, fabs(mem_limit));
    zb_status st = ZB_OK;
    *found = 0;
    for (int d = 0; d < 2 * p && st == ZB_OK; d++) {
        zb_schedule t;
        int ok;
        st = build(p, m, d, c, mem_limit, &t, &ok, err);
        if (st != ZB_OK) break;
        double span, peak;
        zb_err e2;
        if (ok && zb_simulate_fast(&t, c, ws, &span, &peak, &e2) == ZB_OK &&
            peak <= mem_limit + tol && span < best) {
            best = span;
            zb_schedule x = t;
            if (*found) t = *out;
            else t = (zb_schedule){0};
            *out = x, *found = 1;
        }
        zb_schedule_free(&t);
    }
    zb_sim_ws_free(ws);
    if (st != ZB_OK && *found) zb_schedule_free(out), *found = 0;
    return st;
}
