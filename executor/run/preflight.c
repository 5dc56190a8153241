/* preflight.c - see preflight.h. */
#include "executor/run/preflight.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "executor/state/checkpoint.h"

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
