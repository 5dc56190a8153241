/* preflight.c - see preflight.h. */
#include "executor/run/preflight.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
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

/* Where path (links in its last part followed) lands: the real path of
 * its folder and its own name; false when the folder does not exist. */
static bool landing(const char *path, char *out, size_t cap) {
    char target[1024], dir[1024];
    zb_err e;
    if (zb_afile_target(path, target, sizeof target, &e) != ZB_OK) return false;
    const char *slash = strrchr(target, '/');
    const char *base = slash ? slash + 1 : target;
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == target) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - target), target);
    char real[PATH_MAX];
    if (!realpath(dir, real)) return false;
    int n = snprintf(out, cap, "%s/%s", real, base);
    return n > 0 && (size_t)n < cap;
}

/* Do output a and output b land on the same file (existing or not)? */
static bool same_output(const char *a, const char *b) {
    char la[PATH_MAX + 256], lb[PATH_MAX + 256];
    if (!strcmp(a, b) || zb_same_file(a, b)) return true;
    return landing(a, la, sizeof la) && landing(b, lb, sizeof lb) && !strcmp(la, lb);
}

zb_status zb_preflight_outputs(const char *const *names, const char *const *paths,
                               int n, zb_err *err) {
    for (int i = 0; i < n; i++) {
        if (!paths[i]) continue;
        if (!paths[i][0])
            return zb_fail(err, ZB_EINPUT, "%s: the file name is empty", names[i]);
        ZB_TRY(probe(names[i], paths[i], err));
        for (int j = 0; j < i; j++)
            if (paths[j] && same_output(paths[i], paths[j]))
                return zb_fail(err, ZB_EINPUT, "%s %s and %s %s name the same "
                               "file", names[j], paths[j], names[i], paths[i]);
    }
    return ZB_OK;
}

zb_status zb_preflight_inputs(const char *const *names, const char *const *paths,
                              int n, const char *const *in_names,
                              const char *const *inputs, int n_in, zb_err *err) {
    for (int i = 0; i < n; i++) {
        char target[1024];
        zb_err e;
        struct stat so, si;
        if (!paths[i] || zb_afile_target(paths[i], target, sizeof target, &e) != ZB_OK ||
            stat(target, &so) != 0 || !S_ISREG(so.st_mode))
            continue;   /* a file not there yet (or a device) is no input */
        for (int k = 0; k < n_in; k++)
            if (inputs[k] && inputs[k][0] && stat(inputs[k], &si) == 0 &&
                si.st_dev == so.st_dev && si.st_ino == so.st_ino)
                return zb_fail(err, ZB_EINPUT, "%s %s would overwrite %s %s",
                               names[i], paths[i], in_names[k], inputs[k]);
    }
    return ZB_OK;
}

zb_status zb_preflight_checkpoints(const char *dir, bool writes, bool fresh,
                                   int *lock_fd, zb_err *err) {
    char probe_path[1100];
    struct stat sb;
    *lock_fd = -1;
    if (!writes && stat(dir, &sb) != 0) return ZB_OK;   /* nothing to read */
    ZB_TRY(zb_ckpt_lock(dir, !writes, lock_fd, err));
    if (!writes) return ZB_OK;
    zb_status s = fresh ? zb_ckpt_check_fresh(dir, err) : ZB_OK;
    snprintf(probe_path, sizeof probe_path, "%s/.probe.%ld", dir, (long)getpid());
    int fd = s == ZB_OK ? open(probe_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666) : -1;
    if (s == ZB_OK && fd < 0)
        s = zb_fail(err, ZB_EINPUT, "--checkpoint-dir %s: cannot create "
                    "files in it: %s", dir, strerror(errno));
    if (s != ZB_OK) {
        zb_ckpt_unlock(*lock_fd);
        *lock_fd = -1;
        return s;
    }
    close(fd);
    unlink(probe_path);
    return ZB_OK;
}
