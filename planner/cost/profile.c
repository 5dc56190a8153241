/* profile.c - see cost/profile.h. */
#include "planner/cost/profile.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/zb_yaml.h"

/* ---- reading ---- */

static zb_status get_i(const zb_ydoc *d, const zb_ynode *m, const char *k,
                       int *out, zb_err *err) {
    long long v = 0;
    ZB_TRY(zb_yget_int(d, m, k, true, 0, 1LL << 30, &v, err));
    *out = (int)v;
    return ZB_OK;
}

static zb_status get_d(const zb_ydoc *d, const zb_ynode *m, const char *k,
                       double *out, zb_err *err) {
    return zb_yget_double(d, m, k, true, 0, 1e9, out, err);
}

static zb_status section(const zb_ydoc *d, const char *k, const zb_ynode **s,
                         zb_err *err) {
    *s = zb_ymap_get(d->root, k);
    if (!*s)
        return zb_fail_at(err, d->file, d->root->line, d->root->col,
                          "missing key '%s' in the profile", k);
    char what[64];
    snprintf(what, sizeof what, "'%s'", k);
    return zb_ynode_expect(d, *s, ZB_Y_MAP, what, err);
}

static zb_status read_model(const zb_ydoc *d, zb_profile *p, zb_err *err) {
    static const char *const precs[] = {"fp32", "bf16", NULL};
    const zb_ynode *s;
    ZB_TRY(section(d, "model", &s, err));
    ZB_TRY(get_i(d, s, "hidden", &p->hidden, err));
    ZB_TRY(get_i(d, s, "heads", &p->heads, err));
    ZB_TRY(get_i(d, s, "ffn_hidden", &p->ffn_hidden, err));
    ZB_TRY(get_i(d, s, "seq_len", &p->seq_len, err));
    ZB_TRY(get_i(d, s, "vocab", &p->vocab, err));
    int prec = 0;
    ZB_TRY(zb_yget_enum(d, s, "precision", true, precs, &prec, err));
    p->precision = (zb_precision)prec;
    ZB_TRY(zb_yget_bool(d, s, "fused_attention", true, &p->fused_attention, err));
    ZB_TRY(zb_yget_str(d, d->root, "device", true, p->device, sizeof p->device, err));
    ZB_TRY(section(d, "layout", &s, err));
    ZB_TRY(get_i(d, s, "dp", &p->dp, err));
    ZB_TRY(get_i(d, s, "tp", &p->tp, err));
    ZB_TRY(get_i(d, s, "pp", &p->pp, err));
    ZB_TRY(get_i(d, s, "micro_batch", &p->micro_batch, err));
    long long threads = 0;
    ZB_TRY(zb_yget_int(d, s, "threads", false, 0, 1 << 20, &threads, err));
    p->threads = (int)threads;
    ZB_TRY(section(d, "step", &s, err));
    ZB_TRY(get_d(d, s, "measured_s", &p->step_s, err));
    ZB_TRY(zb_yget_double(d, s, "overhead_s", true, -1e9, 1e9, &p->overhead_s, err));
    if (p->overhead_s < 0) p->overhead_s = 0;
    ZB_TRY(section(d, "p2p", &s, err));
    return get_d(d, s, "measured_s", &p->p2p_s, err);
}

/* Times that contradict each other (issue 29): a pass kind is measured
 * (a time and samples) or never ran (0 and 0), and every stage runs F. */
static zb_status check_row(const zb_ydoc *d, const zb_ynode *r, int i,
                           const zb_profile_row *row, zb_err *err) {
    static const char *const kind[4] = {"f", "b", "w", "bw"};
    for (int k = 0; k < 4; k++)
        if ((row->t[k] > 0) != (row->samples[k] > 0))
            return zb_fail_at(err, d->file, r->line, r->col, "vstage %d: t_%s "
                              "%g s over samples_%s %d: a pass that ran has a "
                              "time and samples, one that never ran has 0 and "
                              "0", i, kind[k], row->t[k], kind[k], row->samples[k]);
    if (row->samples[0] == 0)
        return zb_fail_at(err, d->file, r->line, r->col, "vstage %d: no forward "
                          "pass measured (samples_f 0): every stage runs F; a "
                          "profile of one step has no samples (the first step "
                          "is not counted)", i);
    return ZB_OK;
}

/* The passes of a pipeline rank run one after the other inside its span,
 * so all of them together take at most pp x the longest span (step's
 * pipeline_s) per step, with m microbatches each; 5% for rounding and
 * the means' noise. Only when the profile gives both numbers. */
static zb_status check_busy(const zb_ydoc *d, const zb_ynode *seq,
                            const zb_profile *p, zb_err *err) {
    const zb_ynode *lay = zb_ymap_get(d->root, "layout"), *st = zb_ymap_get(d->root, "step");
    long long m = 0;
    double span = 0, busy = 0;
    zb_err e;
    if (zb_yget_int(d, lay, "microbatches", false, 0, 1 << 30, &m, &e) != ZB_OK ||
        zb_yget_double(d, st, "pipeline_s", false, 0, 1e15, &span, &e) != ZB_OK ||
        m == 0 || span == 0)
        return ZB_OK;
    for (int i = 0; i < p->n; i++)
        for (int k = 0; k < 4; k++) busy += (double)m * p->rows[i].t[k];
    if (busy <= 1.05 * p->pp * span + 1e-9) return ZB_OK;
    return zb_fail_at(err, d->file, seq->line, seq->col, "the passes take %g s "
                      "per step (%lld microbatches), more than pp %d x "
                      "pipeline_s %g s allows: the profile's times contradict "
                      "each other", busy, m, p->pp, span);
}

static zb_status read_rows(const zb_ydoc *d, zb_profile *p, zb_err *err) {
    static const char *const tk[4] = {"t_f", "t_b", "t_w", "t_bw"};
    static const char *const sk[4] = {"samples_f", "samples_b", "samples_w",
                                      "samples_bw"};
    const zb_ynode *seq = zb_ymap_get(d->root, "vstages");
    if (!seq)
        return zb_fail_at(err, d->file, d->root->line, d->root->col,
                          "missing key 'vstages' in the profile");
    ZB_TRY(zb_ynode_expect(d, seq, ZB_Y_SEQ, "'vstages'", err));
    if (seq->n < 1 || seq->n > ZB_PROFILE_MAX_STAGES)
        return zb_fail_at(err, d->file, seq->line, seq->col, "'vstages' must "
                          "have 1 to %d entries, got %d", ZB_PROFILE_MAX_STAGES,
                          seq->n);
    p->n = seq->n;
    for (int i = 0; i < seq->n; i++) {
        const zb_ynode *r = seq->items[i];
        zb_profile_row *row = &p->rows[i];
        ZB_TRY(zb_ynode_expect(d, r, ZB_Y_MAP, "a 'vstages' entry", err));
        ZB_TRY(get_i(d, r, "layers", &row->layers, err));
        ZB_TRY(zb_yget_bool(d, r, "embed", true, &row->embed, err));
        ZB_TRY(zb_yget_bool(d, r, "head", true, &row->head, err));
        for (int k = 0; k < 4; k++) {
            ZB_TRY(get_d(d, r, tk[k], &row->t[k], err));
            ZB_TRY(get_i(d, r, sk[k], &row->samples[k], err));
        }
        ZB_TRY(check_row(d, r, i, row, err));
    }
    return check_busy(d, seq, p, err);
}

zb_status zb_profile_load(const char *path, zb_profile *out, zb_err *err) {
    memset(out, 0, sizeof *out);
    snprintf(out->path, sizeof out->path, "%s", path);
    zb_ydoc d;
    zb_status s = zb_ydoc_load(path, &d, err);
    if (s != ZB_OK) return ZB_EINPUT;
    if (!d.root || d.root->type != ZB_Y_MAP) {
        zb_ydoc_free(&d);
        return zb_fail(err, ZB_EINPUT, "%s:1:1: a profile must be a mapping "
                       "(write one with zbrun --profile)", path);
    }
    long long version = 0;
    s = zb_yget_int(&d, d.root, "profile", true, 1, 1, &version, err);
    if (s == ZB_OK) s = read_model(&d, out, err);
    if (s == ZB_OK) s = read_rows(&d, out, err);
    zb_ydoc_free(&d);
    return s == ZB_OK ? ZB_OK : ZB_EINPUT;
}

/* ---- covering ---- */

bool zb_profile_covers(const zb_profile *p, const zb_model *m, int tp,
                       int micro_batch) {
    const zb_arch *a = &m->arch;
    return p && p->hidden == a->hidden && p->heads == a->heads &&
           p->ffn_hidden == a->ffn_hidden && p->seq_len == a->seq_len &&
           p->vocab == a->vocab && p->precision == m->train.precision &&
           p->fused_attention == m->train.fused_attention &&
           strcasecmp(p->device, m->cluster.device.name) == 0 &&
           p->tp == tp && p->micro_batch == micro_batch &&
           (p->threads == 0 || strcasecmp(p->device, "cpu") != 0 ||
            p->threads == m->cluster.device.threads);
}

bool zb_profile_covers_layout(const zb_profile *p, int dp, int tp, int pp) {
    return p && p->dp == dp && p->tp == tp && p->pp == pp;
}

/* ---- fitting ---- */

/* Least squares y_s ~ sum_j X[s][j] c[j] over the columns in use (3 at
 * most) by the normal equations and Gaussian elimination with pivoting.
 * False when there are fewer rows than unknowns, the system is singular or
 * a coefficient comes out negative. */
static bool lsq(int n, const double X[][3], const double *y, double c[3]) {
    int cols[3], nc = 0;
    for (int j = 0; j < 3; j++) {
        bool used = false;
        for (int s = 0; s < n; s++) used |= X[s][j] != 0;
        c[j] = 0;
        if (used) cols[nc++] = j;
    }
    if (nc == 0 || n < nc) return false;
    double A[3][4] = {{0}};
    for (int a = 0; a < nc; a++) {
        for (int b = 0; b < nc; b++)
            for (int s = 0; s < n; s++) A[a][b] += X[s][cols[a]] * X[s][cols[b]];
        for (int s = 0; s < n; s++) A[a][nc] += X[s][cols[a]] * y[s];
    }
    for (int k = 0; k < nc; k++) {
        int piv = k;
        for (int r = k + 1; r < nc; r++)
            if (fabs(A[r][k]) > fabs(A[piv][k])) piv = r;
        if (fabs(A[piv][k]) < 1e-9 * (1 + fabs(A[0][0]))) return false;
        for (int j = 0; j <= nc; j++) {
            double t = A[k][j]; A[k][j] = A[piv][j]; A[piv][j] = t;
        }
        for (int r = 0; r < nc; r++) {
            if (r == k) continue;
            double f = A[r][k] / A[k][k];
            for (int j = k; j <= nc; j++) A[r][j] -= f * A[k][j];
        }
    }
    for (int k = 0; k < nc; k++) {
        c[cols[k]] = A[k][nc] / A[k][k];
        if (c[cols[k]] < 0) return false;
    }
    return true;
}

/* When least squares cannot separate the parts (fewer rows than parts,
 * e.g. pp 2: 4 layers + embedding, 4 layers + head): the time per layer from
 * rows of layers only, else the analytic one scaled by measured / analytic
 * over all rows; then each row's remainder goes to its embedding or head
 * (split in the analytic proportion when a row holds both), which
 * reproduces every row (the layer time is lowered as far as needed to leave
 * no row a negative remainder). A part no row holds keeps the scaled
 * analytic time. */
static void fit_rows(int n, const double X[][3], const double *y,
                     const double a[3], double ratio, double out[3]) {
    double ly = 0, ln = 0;
    for (int s = 0; s < n; s++)
        if (X[s][1] == 0 && X[s][2] == 0) ly += y[s], ln += X[s][0];
    out[0] = ln > 0 ? ly / ln : ratio * a[0];
    /* no row may be left with a negative remainder */
    for (int s = 0; s < n; s++)
        if (X[s][0] > 0 && X[s][1] + X[s][2] > 0 && y[s] / X[s][0] < out[0])
            out[0] = y[s] / X[s][0];
    double rest[3] = {0}, cnt[3] = {0};
    for (int s = 0; s < n; s++) {
        double r = y[s] - X[s][0] * out[0];
        double ea = X[s][1] * a[1], ha = X[s][2] * a[2];
        if (ea + ha <= 0) continue;
        for (int j = 1; j < 3; j++) {
            if (X[s][j] == 0) continue;
            rest[j] += r * (j == 1 ? ea : ha) / (ea + ha);
            cnt[j] += 1;
        }
    }
    for (int j = 1; j < 3; j++)
        out[j] = cnt[j] > 0 && rest[j] >= 0 ? rest[j] / cnt[j] : ratio * a[j];
}

/* Fit pass kind k (ZB_F.. ZB_BW) to per-(layer, embed, head) times: least
 * squares, else fit_rows; the analytic times a[3] give the fallbacks.
 * false: no row measured k. */
static bool fit(const zb_profile *p, int k, const double a[3], double out[3]) {
    double X[ZB_PROFILE_MAX_STAGES][3], y[ZB_PROFILE_MAX_STAGES];
    double sum_y = 0, sum_a = 0;
    int n = 0;
    for (int s = 0; s < p->n; s++) {
        const zb_profile_row *r = &p->rows[s];
        if (r->samples[k] == 0) continue;
        X[n][0] = r->layers;
        X[n][1] = r->embed;
        X[n][2] = r->head;
        y[n] = r->t[k];
        sum_y += y[n];
        sum_a += X[n][0] * a[0] + X[n][1] * a[1] + X[n][2] * a[2];
        n++;
    }
    if (n == 0) return false;
    double c[3], ratio = sum_a > 0 ? sum_y / sum_a : 1;
    if (!lsq(n, (const double(*)[3])X, y, c)) {
        fit_rows(n, (const double(*)[3])X, y, a, ratio, out);
        return true;
    }
    for (int j = 0; j < 3; j++) {
        bool used = false;
        for (int s = 0; s < n; s++) used |= X[s][j] != 0;
        out[j] = used ? c[j] : ratio * a[j];
    }
    return true;
}

bool zb_profile_apply(const zb_profile *p, const zb_model *m, int tp,
                      int micro_batch, zb_cost_table *ct) {
    if (!zb_profile_covers(p, m, tp, micro_batch)) return false;
    zb_pass_cost *comp[3] = {&ct->layer, &ct->embed, &ct->head};
    double a[4][3], f[4][3];
    for (int j = 0; j < 3; j++) {
        a[0][j] = comp[j]->f_s;
        a[1][j] = comp[j]->b_s;
        a[2][j] = comp[j]->w_s;
        a[3][j] = comp[j]->b_s + comp[j]->w_s;
    }
    bool has[4];
    for (int k = 0; k < 4; k++) has[k] = fit(p, k, a[k], f[k]);
    if (!has[0] || !(has[3] || (has[1] && has[2]))) return false;
    for (int j = 0; j < 3; j++) {
        comp[j]->f_s = f[0][j];
        if (has[1] && has[2]) {
            comp[j]->b_s = f[1][j];
            comp[j]->w_s = f[2][j];
        } else { /* BW only: split in the analytic proportion */
            double share = a[3][j] > 0 ? a[1][j] / a[3][j] : 0.5;
            comp[j]->b_s = share * f[3][j];
            comp[j]->w_s = f[3][j] - comp[j]->b_s;
        }
    }
    if (p->p2p_s > 0) ct->p2p_intra_s = ct->p2p_inter_s = p->p2p_s;
    return true;
}
