/* preflight.c - see preflight.h. */
#include "executor/run/preflight.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/zb_afile.h"
#include "executor/state/checkpoint.h"

/* Can `path` (links followed) be written as zb_afile would? */
static zb_status probe(const char *name, const char *path, zb_err *err) {
    char target[1024], tmp[1100];
    zb_err e;
    if (zb_afile_target(path, target, sizeof target, &e) != ZB_OK)
        return zb_fail(err, ZB_EINPUT, "%s %s: %s", name, path, e.msg);
    struct stat sb;
    if (stat(target, &sb) == 0 && S_ISDIR(sb.st_mode))
        return zb_fail(err, ZB_EINPUT, "%s %s: is a folder, not a file", name, path);
    if (stat(target, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        if (access(target, W_OK) != 0)
            return zb_fail(err, ZB_EINPUT, "%s %s: cannot write: %s", name, path,
                           strerror(errno));
        return ZB_OK;   /* a device or FIFO: written through at the end */
    }
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", target, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0)
        return zb_fail(err, ZB_EINPUT, "%s %s: cannot create: %s", name, path,
                       strerror(errno));
    close(fd);
    unlink(tmp);
    return ZB_OK;
}

zb_status zb_preflight_outputs(const char *const *names, const char *const *paths,
                               int n, zb_err *err) {
    for (int i = 0; i < n; i++) {
        if (!paths[i]) continue;
        ZB_TRY(probe(names[i], paths[i], err));
        for (int j = 0; j < i; j++)
            if (paths[j] && (!strcmp(paths[i], paths[j]) || zb_same_file(paths[i], paths[j])))
                return zb_fail(err, ZB_EINPUT, "%s and %s both name '%s'",
                               names[j], names[i], paths[i]);
    }
    return ZB_OK;
}

zb_status zb_preflight_checkpoints(const char *dir, int *lock_fd, zb_err *err) {
    char probe_path[1100];
    ZB_TRY(zb_ckpt_lock(dir, lock_fd, err));
    snprintf(probe_path, sizeof probe_path, "%s/.probe.%ld", dir, (long)getpid());
    int fd = open(probe_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) {
        zb_status s = zb_fail(err, ZB_EINPUT, "--checkpoint-dir %s: cannot create "
                              "files in it: %s", dir, strerror(errno));
        zb_ckpt_unlock(*lock_fd);
        *lock_fd = -1;
        return s;
    }
    close(fd);
    unlink(probe_path);
    return ZB_OK;
}
