/* ckpt_guard.c - what keeps a checkpoint folder honest besides its
 * checksums (checkpoint.h): one writer at a time (flock), and a resume that
 * would silently change the run is refused unless asked for. */
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

zb_status zb_ckpt_lock(const char *dir, int *fd, zb_err *err) {
    char path[1100];
    *fd = -1;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return zb_fail(err, ZB_EIO, "cannot create checkpoint folder '%s': %s",
                       dir, strerror(errno));
    if (snprintf(path, sizeof path, "%s/.lock", dir) >= (int)sizeof path)
        return zb_fail(err, ZB_EINPUT, "checkpoint path too long: %.64s...", dir);
    int f = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (f < 0)
        return zb_fail(err, ZB_EIO, "cannot use checkpoint folder '%s': %s: %s",
                       dir, path, strerror(errno));
    if (flock(f, LOCK_EX | LOCK_NB) != 0) {
        char who[48];
        int e = errno;
        holder(f, who, sizeof who);
        close(f);
        if (e == EWOULDBLOCK)
            return zb_fail(err, ZB_EINPUT, "checkpoint folder '%s' is in use by "
                           "another zbrun (%s); wait for it or choose another "
                           "--checkpoint-dir", dir, who);
        return zb_fail(err, ZB_EIO, "cannot lock '%s': %s", path, strerror(e));
    }
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(f, 0) != 0 || pwrite(f, pid, (size_t)n, 0) != n) {
        /* the pid is only for messages; the lock is what counts */
    }
    *fd = f;
    return ZB_OK;
}

void zb_ckpt_unlock(int fd) {
    if (fd >= 0) close(fd);   /* closing releases the flock */
}
