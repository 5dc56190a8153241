/* ckpt_guard.c - what keeps a checkpoint folder honest besides its
 * checksums (checkpoint.h): one writer at a time (flock), and a resume that
 * would silently change the run is refused unless asked for. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "executor/state/checkpoint.h"
#include "executor/base.h"

zb_status zb_ckpt_check_resume(const char *dir, const zb_ckpt_index *idx,
                               const zb_plan *plan, int total_steps,
                               bool allow_changed, zb_err *err) {
    const zb_optim *o = &plan->model.train.opt;
    int next = idx->step + 1;
    if (allow_changed) return ZB_OK;
    if (idx->total_steps != total_steps && next <= total_steps)
        return zb_fail(err, ZB_EINPUT, "%s/latest.yaml: the checkpoint belongs "
                       "to a run of %d steps, this one has %d: the learning "
                       "rate from step %d would be %.6g instead of %.6g (pass "
                       "--steps %d to keep it, or --resume-changed to accept "
                       "the change)", dir, idx->total_steps, total_steps, next,
                       zb_lr_at(o, next, total_steps),
                       zb_lr_at(o, next, idx->total_steps), idx->total_steps);
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
