/* zb_afile.c - atomic file replacement (see zb_afile.h).
 *
 * The sequence is the classic one: write "<path>.tmp.<pid>", fflush (libc
 * buffer -> kernel), fsync (kernel -> disk), rename over <path> (atomic on
 * POSIX file systems), then fsync the directory so the rename itself is
 * durable. Any failure unlinks the temporary file and leaves <path> as it
 * was. zb_afile_close is safe to call on a zeroed or already closed zb_afile.
 */
#include "common/zb_afile.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

zb_status zb_afile_target(const char *path, char *out, size_t cap, zb_err *err) {
    char cur[1024], link[1024];
    if (snprintf(cur, sizeof cur, "%s", path) >= (int)sizeof cur)
        return zb_fail(err, ZB_EIO, "path too long: %.64s...", path);
    for (int hops = 0;; hops++) {
        struct stat sb;
        if (lstat(cur, &sb) != 0 || !S_ISLNK(sb.st_mode)) break;
        if (hops == 40)
            return zb_fail(err, ZB_EIO, "cannot write '%s': too many levels of "
                           "symbolic links", path);
        ssize_t n = readlink(cur, link, sizeof link - 1);
        if (n < 0) return zb_fail(err, ZB_EIO, "cannot read link '%s': %s", cur,
                                  strerror(errno));
        link[n] = 0;
        const char *slash = strrchr(cur, '/');
        int w = link[0] == '/' || !slash
                    ? snprintf(out, cap, "%s", link)
                    : snprintf(out, cap, "%.*s/%s", (int)(slash - cur), cur, link);
        if (w < 0 || (size_t)w >= cap || (size_t)w >= sizeof cur)
            return zb_fail(err, ZB_EIO, "path too long: %.64s...", path);
        memcpy(cur, out, (size_t)w + 1);
    }
    if (snprintf(out, cap, "%s", cur) >= (int)cap)
        return zb_fail(err, ZB_EIO, "path too long: %.64s...", path);
    return ZB_OK;
}

bool zb_same_file(const char *a, const char *b) {
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

/* A FIFO nobody reads yet: open(O_NONBLOCK) says ENXIO. Wait for a reader
 * in short naps, at most ZB_AFILE_FIFO_WAIT_S; a signal ends a nap early
 * (nanosleep is never restarted) and with it the wait, so a stop request
 * is honoured within one nap instead of blocking in open(2) for ever. */
static volatile sig_atomic_t *stop_flag;

void zb_afile_stop_on(volatile sig_atomic_t *flag) {
    stop_flag = flag;
}

/* *stopped: the wait ended by a signal (or the stop flag) */
static int open_fifo_wait(const char *path, bool *stopped) {
    struct timespec nap = {0, 50 * 1000 * 1000};
    *stopped = false;
    for (int i = 0; i < ZB_AFILE_FIFO_WAIT_S * 20; i++) {
        int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd >= 0 || errno != ENXIO) return fd;
        if ((stop_flag && *stop_flag) || nanosleep(&nap, NULL) != 0) {
            *stopped = true;   /* a signal came: give up */
            break;
        }
    }
    errno = ENXIO;
    return -1;
}

/* An existing path that is not a regular file: write to it in place,
 * opened without blocking (a FIFO with no reader), then blocking again. */
static zb_status open_direct(zb_afile *a, const struct stat *sb, zb_err *err) {
    if (S_ISDIR(sb->st_mode))
        return zb_fail(err, ZB_EIO, "cannot write '%s': Is a directory", a->path);
    a->direct = true;
    bool stopped = false;
    int fd = S_ISFIFO(sb->st_mode) ? open_fifo_wait(a->path, &stopped)
                                   : open(a->path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 && stopped)
        return zb_fail(err, ZB_EIO, "cannot write '%s': stopped by a signal "
                       "while waiting for a reader of the FIFO", a->path);
    if (fd < 0 && errno == ENXIO && S_ISFIFO(sb->st_mode))
        return zb_fail(err, ZB_EIO, "cannot write '%s': a FIFO that nobody "
                       "reads (waited %d s)", a->path, ZB_AFILE_FIFO_WAIT_S);
    int fl = fd >= 0 ? fcntl(fd, F_GETFL) : -1;
    if (fd >= 0 && (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0 ||
                    !(a->f = fdopen(fd, "w")))) {
        close(fd);
        fd = -1;
    }
    if (fd < 0)
        return zb_fail(err, ZB_EIO, "cannot open '%s': %s", a->path, strerror(errno));
    return ZB_OK;
}

/* The temporary file: created new (O_EXCL), never through a link someone
 * put at its name (O_NOFOLLOW); a leftover of a killed process with our
 * pid is removed once. */
static zb_status open_tmp(zb_afile *a, zb_err *err) {
    int fd = -1;
    for (int i = 0; i < 2 && fd < 0; i++) {
        fd = open(a->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0 && errno == EEXIST && i == 0) unlink(a->tmp);
        else if (fd < 0) break;
    }
    if (fd >= 0 && !(a->f = fdopen(fd, "w"))) close(fd);
    if (!a->f)
        return zb_fail(err, ZB_EIO, "cannot create '%s': %s", a->path, strerror(errno));
    return ZB_OK;
}

zb_status zb_afile_open_mode(zb_afile *a, const char *path, bool follow, zb_err *err) {
    memset(a, 0, sizeof *a);
    size_t n = strlen(path);
    if (n == 0) return zb_fail(err, ZB_EIO, "cannot write a file with an empty name");
    if (n >= sizeof a->path)
        return zb_fail(err, ZB_EIO, "path too long (%zu bytes): %.64s...", n, path);
    if (follow) ZB_TRY(zb_afile_target(path, a->path, sizeof a->path, err));
    else memcpy(a->path, path, n + 1);
    struct stat sb;
    int got = follow ? stat(a->path, &sb) : lstat(a->path, &sb);
    if (got == 0 && !S_ISREG(sb.st_mode) && (follow || !S_ISLNK(sb.st_mode)))
        return open_direct(a, &sb, err);
    path = a->path;
    int t = snprintf(a->tmp, sizeof a->tmp, "%s.tmp.%ld", path, (long)getpid());
    if (t < 0 || (size_t)t >= sizeof a->tmp)
        return zb_fail(err, ZB_EIO, "path too long: %.64s...", path);
    return open_tmp(a, err);
}

zb_status zb_afile_open(zb_afile *a, const char *path, zb_err *err) {
    return zb_afile_open_mode(a, path, true, err);
}

/* Directory part of path ("." when there is none) into dir[cap]. */
static void dir_of(const char *path, char *dir, size_t cap) {
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(dir, cap, ".");
    } else if (slash == path) {
        snprintf(dir, cap, "/");
    } else {
        snprintf(dir, cap, "%.*s", (int)(slash - path), path);
    }
}

/* fsync the directory holding path so the rename survives a crash. File
 * systems that cannot sync a directory answer EINVAL; that is not an error. */
static zb_status sync_dir(const char *path, zb_err *err) {
    char dir[1024];
    dir_of(path, dir, sizeof dir);
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return zb_fail(err, ZB_EIO, "cannot open directory '%s': %s", dir, strerror(errno));
    zb_status s = ZB_OK;
    if (fsync(fd) != 0 && errno != EINVAL)
        s = zb_fail(err, ZB_EIO, "cannot sync directory '%s': %s", dir, strerror(errno));
    if (close(fd) != 0 && s == ZB_OK)
        s = zb_fail(err, ZB_EIO, "cannot close directory '%s': %s", dir, strerror(errno));
    return s;
}

/* Flush, sync and close a->f; on failure the caller unlinks a->tmp. */
static zb_status finish_tmp(zb_afile *a, zb_err *err) {
    FILE *f = a->f;
    a->f = NULL;
    zb_status s = ZB_OK;
    if (fflush(f) != 0)
        s = zb_fail(err, ZB_EIO, "cannot write '%s': %s", a->path, strerror(errno));
    else if (ferror(f))   /* an earlier write failed; its errno is gone */
        s = zb_fail(err, ZB_EIO, "cannot write '%s': write error", a->path);
    else if (fsync(fileno(f)) != 0)
        s = zb_fail(err, ZB_EIO, "cannot sync '%s': %s", a->path, strerror(errno));
    if (fclose(f) != 0 && s == ZB_OK)
        s = zb_fail(err, ZB_EIO, "cannot close '%s': %s", a->path, strerror(errno));
    return s;
}

zb_status zb_afile_close(zb_afile *a, bool ok, zb_err *err) {
    if (!a->f) return ZB_OK;   /* never opened, or closed already */
    if (a->direct) {           /* nothing to rename; report a write error */
        FILE *f = a->f;
        a->f = NULL;
        bool bad = fflush(f) != 0 || ferror(f);
        int e = errno;
        if (fclose(f) != 0 && !bad) bad = true, e = errno;
        if (ok && bad)
            return zb_fail(err, ZB_EIO, "cannot write '%s': %s", a->path, strerror(e));
        return ZB_OK;
    }
    if (!ok) {
        fclose(a->f);          /* the data is being discarded: errors do not matter */
        a->f = NULL;
        unlink(a->tmp);
        return ZB_OK;
    }
    zb_status s = finish_tmp(a, err);
    if (s == ZB_OK && rename(a->tmp, a->path) != 0)
        s = zb_fail(err, ZB_EIO, "cannot write '%s' (rename of its temporary "
                    "file): %s", a->path, strerror(errno));
    if (s != ZB_OK) {
        unlink(a->tmp);
        return s;
    }
    return sync_dir(a->path, err);
}
