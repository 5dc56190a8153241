/* ckpt_guard.c - what keeps a checkpoint folder honest besides its
 * checksums (checkpoint.h): one writer at a time (flock), and a resume that
 * would silently change the run is refused unless asked for. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "executor/state/checkpoint.h"
#include "executor/base.h"

/* The first step the resumed run would train, from `from` to its end
 * `now`, whose learning rate differs between the schedule of a run of
 * `was` steps (the checkpoint's) and one of `now` steps; 0 when none does
 * (a constant schedule). Exact comparison: any difference changes the
 * weights, even one that %.6g would not show. */
static int first_lr_change(const zb_optim *o, int from, int was, int now) {
    for (int s = from; s <= now; s++)
        if (zb_lr_at(o, s, now) != zb_lr_at(o, s, was)) return s;
    return 0;
}

static zb_status check_data(const char *dir, const zb_ckpt_index *idx,
                            const zb_plan *plan, zb_err *err);

zb_status zb_ckpt_check_resume(const char *dir, const zb_ckpt_index *idx,
                               const zb_plan *plan, int total_steps,
                               bool allow_changed, zb_err *err) {
    const zb_optim *o = &plan->model.train.opt;
    int next = idx->step + 1;
    ZB_TRY(check_data(dir, idx, plan, err));
    if (allow_changed) return ZB_OK;
    if (idx->total_steps != total_steps && next <= total_steps) {
        int d = first_lr_change(o, next, idx->total_steps, total_steps);
        char what[160];
        if (d > 0)
            snprintf(what, sizeof what, "the learning rate first differs at "
                     "step %d: %.9g instead of %.9g", d,
                     zb_lr_at(o, d, total_steps), zb_lr_at(o, d, idx->total_steps));
        else
            snprintf(what, sizeof what, "the learning rate of every step "
                     "left stays the same, but the run would end at step %d "
                     "instead of %d", total_steps, idx->total_steps);
        return zb_fail(err, ZB_EINPUT, "%s/latest.yaml: the checkpoint belongs "
                       "to a run of %d steps, this one has %d: %s (pass "
                       "--steps %d to keep it, or --resume-changed to accept "
                       "the change)", dir, idx->total_steps, total_steps, what,
                       idx->total_steps);
    }
    if (idx->seed != (long long)plan->model.train.seed)
        return zb_fail(err, ZB_EINPUT, "%s/latest.yaml: the checkpoint was "
                       "trained with seed %lld, the plan has %lld: the data "
                       "batches from step %d would differ (--resume-changed "
                       "accepts the change)", dir, idx->seed,
                       (long long)plan->model.train.seed, next);
    return ZB_OK;
}

/* pid of the holder, as written in the lock file ("?" when unknown). */
static void holder(int fd, char *out, size_t cap) {
    char buf[32] = {0};
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    long pid = n > 0 ? strtol(buf, NULL, 10) : 0;
    if (pid > 0) snprintf(out, cap, "pid %ld", pid);
    else snprintf(out, cap, "pid unknown");
}

zb_status zb_ckpt_lock(const char *dir, bool shared, int *fd, zb_err *err) {
    char path[1100];
    *fd = -1;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)   /* a name the user gave */
        return zb_fail(err, ZB_EINPUT, "cannot create checkpoint folder '%s': %s",
                       dir, strerror(errno));
    if (snprintf(path, sizeof path, "%s/.lock", dir) >= (int)sizeof path)
        return zb_fail(err, ZB_EINPUT, "checkpoint path too long: %.64s...", dir);
    /* never through a link: only zbrun makes this file, and a link
     * planted there would have the pid written over whatever it names */
    int f = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);
    struct stat sb;
    if (f >= 0 && (fstat(f, &sb) != 0 || !S_ISREG(sb.st_mode))) {
        close(f);
        f = -1;
        errno = EINVAL;
    }
    if (f < 0 && (errno == ELOOP || errno == EINVAL))
        return zb_fail(err, ZB_EINPUT, "cannot use checkpoint folder '%s': %s is "
                       "not a regular file (a symbolic link?); remove it", dir, path);
    if (f < 0)
        return zb_fail(err, ZB_EINPUT, "cannot use checkpoint folder '%s': %s: %s",
                       dir, path, strerror(errno));
    if (flock(f, (shared ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0) {
        char who[48];
        int e = errno;
        holder(f, who, sizeof who);
        close(f);
        if (e == EWOULDBLOCK && shared)
            return zb_fail(err, ZB_EINPUT, "checkpoint folder '%s' is being "
                           "written by another zbrun (%s); resume from it once "
                           "that run ends", dir, who);
        if (e == EWOULDBLOCK)
            return zb_fail(err, ZB_EINPUT, "checkpoint folder '%s' is in use by "
                           "another zbrun (%s); wait for it or choose another "
                           "--checkpoint-dir", dir, who);
        return zb_fail(err, ZB_EIO, "cannot lock '%s': %s", path, strerror(e));
    }
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (!shared && (ftruncate(f, 0) != 0 || pwrite(f, pid, (size_t)n, 0) != n)) {
        /* the pid is only for messages; the lock is what counts */
    }
    *fd = f;
    return ZB_OK;
}

void zb_ckpt_unlock(int fd) {
    if (fd >= 0) close(fd);   /* closing releases the flock */
}

zb_status zb_ckpt_check_fresh(const char *dir, zb_err *err) {
    char path[1100];
    struct stat sb;
    snprintf(path, sizeof path, "%s/latest.yaml", dir);
    bool index = lstat(path, &sb) == 0;
    DIR *d = opendir(dir);
    int steps = 0;
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)))
            if (!strncmp(e->d_name, "step-", 5)) steps++;
        closedir(d);
    }
    if (!index && steps == 0) return ZB_OK;
    char what[64] = "step folders of an unfinished checkpoint";
    if (index) {
        zb_ydoc doc;
        zb_err e;
        long long step = 0;
        if (zb_ydoc_load(path, &doc, &e) == ZB_OK && doc.root &&
            doc.root->type == ZB_Y_MAP &&
            zb_yget_int(&doc, doc.root, "step", false, 0, 1LL << 40, &step, &e) == ZB_OK &&
            step > 0)
            snprintf(what, sizeof what, "the checkpoint of step %lld", step);
        else
            snprintf(what, sizeof what, "a checkpoint index");
        zb_ydoc_free(&doc);
    }
    return zb_fail(err, ZB_EINPUT, "--checkpoint-dir %s holds %s: a run "
                   "without --resume would replace it (--resume continues it, "
                   "--overwrite-checkpoints replaces it, or choose another "
                   "--checkpoint-dir)", dir, what);
}

/* ---- the model map of the index ---- */

static const char *model_keys[] = {"layers", "hidden", "heads", "ffn_hidden",
                                   "seq_len", "vocab", "tied_embeddings", NULL};

static void model_values(const zb_arch *a, long long v[7]) {
    v[0] = a->layers;
    v[1] = a->hidden;
    v[2] = a->heads;
    v[3] = a->ffn_hidden;
    v[4] = a->seq_len;
    v[5] = a->vocab;
    v[6] = a->tied_embeddings;
}

void zb_ckpt_write_model(zb_yw *w, const zb_plan *plan) {
    long long v[7];
    model_values(&plan->model.arch, v);
    zb_yw_str(w, "model");
    zb_yw_map_begin(w, true);
    for (int i = 0; i < 6; i++) zb_yw_kint(w, model_keys[i], v[i]);
    zb_yw_kbool(w, model_keys[6], v[6] != 0);
    zb_yw_map_end(w);
}

zb_status zb_ckpt_check_model(const zb_ydoc *doc, const zb_ynode *model,
                              const zb_plan *plan, zb_err *err) {
    long long mine[7], theirs[7];
    bool tied;
    model_values(&plan->model.arch, mine);
    ZB_TRY(zb_ynode_expect(doc, model, ZB_Y_MAP, "'model'", err));
    ZB_TRY(zb_ymap_check_keys(doc, model, "model", model_keys, err));
    for (int i = 0; i < 6; i++)
        ZB_TRY(zb_yget_int(doc, model, model_keys[i], true, 1, 1LL << 40,
                           &theirs[i], err));
    ZB_TRY(zb_yget_bool(doc, model, model_keys[6], true, &tied, err));
    theirs[6] = tied;
    for (int i = 0; i < 7; i++) {
        if (mine[i] == theirs[i]) continue;
        const zb_ynode *n = zb_ymap_get(model, model_keys[i]);
        if (i == 6)
            return zb_fail_at(err, doc->file, n->line, n->col, "the checkpoint's "
                              "model has tied_embeddings: %s, the plan's %s: its "
                              "weights belong to another model (resume with the "
                              "plan it was trained with)", tied ? "true" : "false",
                              mine[6] ? "true" : "false");
        return zb_fail_at(err, doc->file, n->line, n->col, "the checkpoint's "
                          "model has %s %lld, the plan's %lld: its weights "
                          "belong to another model (resume with the plan it "
                          "was trained with)", model_keys[i], theirs[i], mine[i]);
    }
    return ZB_OK;
}

/* ---- the data map of the index ---- */

static const char *data_keys[] = {"global_batch", "path", "order", NULL};

/* path's real path into out ("" stays ""; a path that cannot be resolved
 * is kept as given). */
static void real_data_path(const char *path, char *out, size_t cap) {
    char real[PATH_MAX];
    const char *p = path[0] && realpath(path, real) && strlen(real) < cap ? real : path;
    snprintf(out, cap, "%.*s", (int)cap - 1, p);
}

void zb_ckpt_write_data(zb_yw *w, const zb_plan *plan) {
    const zb_training *t = &plan->model.train;
    char path[1024];
    real_data_path(t->data_path, path, sizeof path);
    zb_yw_str(w, "data");
    zb_yw_map_begin(w, true);
    zb_yw_kint(w, "global_batch", t->global_batch);
    zb_yw_kstr(w, "path", path);
    zb_yw_kstr(w, "order", t->data_sequential ? "sequential" : "random");
    zb_yw_map_end(w);
}

zb_status zb_ckpt_read_data(const zb_ydoc *doc, const zb_ynode *root,
                            zb_ckpt_index *idx, zb_err *err) {
    const zb_ynode *d = zb_ymap_get(root, "data");
    idx->has_data = false;
    if (!d) return ZB_OK;   /* written before issue 29 */
    long long gb;
    static const char *const orders[] = {"random", "sequential", NULL};
    int order;
    ZB_TRY(zb_ynode_expect(doc, d, ZB_Y_MAP, "'data'", err));
    ZB_TRY(zb_ymap_check_keys(doc, d, "data", data_keys, err));
    ZB_TRY(zb_yget_int(doc, d, "global_batch", true, 1, 1LL << 40, &gb, err));
    ZB_TRY(zb_yget_str(doc, d, "path", true, idx->data_path,
                       sizeof idx->data_path, err));
    ZB_TRY(zb_yget_enum(doc, d, "order", true, orders, &order, err));
    idx->global_batch = (int)gb;
    idx->data_sequential = order == 1;
    idx->has_data = true;
    return ZB_OK;
}

/* What --resume-changed does not cover: the batches would be other
 * samples than the data position says. */
static zb_status check_data(const char *dir, const zb_ckpt_index *idx,
                            const zb_plan *plan, zb_err *err) {
    const zb_training *t = &plan->model.train;
    char path[1024];
    if (!idx->has_data) return ZB_OK;
    real_data_path(t->data_path, path, sizeof path);
    const char *tail = "the data position would name other samples; resume "
                       "with the settings it was trained with (--resume-changed "
                       "does not cover this)";
    if (idx->global_batch != t->global_batch)
        return zb_fail(err, ZB_EINPUT, "%s/latest.yaml: the checkpoint was "
                       "trained with training.global_batch %d, the plan has %d: "
                       "%s", dir, idx->global_batch, t->global_batch, tail);
    if (strcmp(idx->data_path, path))
        return zb_fail(err, ZB_EINPUT, "%s/latest.yaml: the checkpoint was "
                       "trained on training.data.path '%s', the plan reads "
                       "'%s': %s", dir, idx->data_path[0] ? idx->data_path
                       : "(the built-in corpus)", path[0] ? path
                       : "(the built-in corpus)", tail);
    if (idx->data_sequential != t->data_sequential)
        return zb_fail(err, ZB_EINPUT, "%s/latest.yaml: the checkpoint was "
                       "trained with training.data.order %s, the plan has %s: "
                       "%s", dir, idx->data_sequential ? "sequential" : "random",
                       t->data_sequential ? "sequential" : "random", tail);
    return ZB_OK;
}
