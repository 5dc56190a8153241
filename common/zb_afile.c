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
#include <string.h>
#include <sys/stat.h>
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

/* An existing path that is not a regular file: write to it in place. */
static zb_status open_direct(zb_afile *a, const struct stat *sb, zb_err *err) {
    if (S_ISDIR(sb->st_mode))
        return zb_fail(err, ZB_EIO, "cannot write '%s': Is a directory", a->path);
    a->direct = true;
    a->f = fopen(a->path, "w");
    if (!a->f)
        return zb_fail(err, ZB_EIO, "cannot open '%s': %s", a->path, strerror(errno));
    return ZB_OK;
}

zb_status zb_afile_open(zb_afile *a, const char *path, zb_err *err) {
    memset(a, 0, sizeof *a);
    size_t n = strlen(path);
    if (n == 0) return zb_fail(err, ZB_EIO, "cannot write a file with an empty name");
    if (n >= sizeof a->path)
        return zb_fail(err, ZB_EIO, "path too long (%zu bytes): %.64s...", n, path);
    ZB_TRY(zb_afile_target(path, a->path, sizeof a->path, err));
    struct stat sb;
    if (stat(a->path, &sb) == 0 && !S_ISREG(sb.st_mode)) return open_direct(a, &sb, err);
    path = a->path;
    int t = snprintf(a->tmp, sizeof a->tmp, "%s.tmp.%ld", path, (long)getpid());
    if (t < 0 || (size_t)t >= sizeof a->tmp)
        return zb_fail(err, ZB_EIO, "path too long: %.64s...", path);
    a->f = fopen(a->tmp, "w");
    if (!a->f)
        return zb_fail(err, ZB_EIO, "cannot create '%s': %s", a->path, strerror(errno));
    return ZB_OK;
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
