/* zb_files.c - see zb_files.h. */
#include "common/zb_files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/zb_afile.h"

void zb_files_init(zb_files *fs) {
    memset(fs, 0, sizeof *fs);
}

zb_status zb_files_input(zb_files *fs, const char *what, const char *path, zb_err *err) {
    struct stat sb;
    if (!path || !path[0] || stat(path, &sb) != 0) return ZB_OK;
    if (fs->n_in == ZB_FILES_MAX)
        return zb_fail(err, ZB_EINPUT, "too many input files (at most %d)", ZB_FILES_MAX);
    zb_file_ent *e = &fs->in[fs->n_in++];
    *e = (zb_file_ent){.what = what, .path = path, .exists = true,
                       .dev = sb.st_dev, .ino = sb.st_ino};
    return ZB_OK;
}

void zb_files_ckpt(zb_files *fs, const char *dir) {
    fs->ckpt = dir;
    fs->ckpt_real[0] = 0;
    char real[PATH_MAX];
    if (dir && dir[0] && realpath(dir, real) && strlen(real) < sizeof fs->ckpt_real)
        memcpy(fs->ckpt_real, real, strlen(real) + 1);
}

/* Folder of path into dir[cap] ("." when it has none). */
static void dir_of(const char *path, char *dir, size_t cap) {
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, cap, ".");
    else if (slash == path) snprintf(dir, cap, "/");
    else snprintf(dir, cap, "%.*s", (int)(slash - path), path);
}

static bool exists_in(const char *dir, const char *name) {
    char p[PATH_MAX + 64];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return lstat(p, &sb) == 0;
}

static bool has_step_folder(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return false;
    bool found = false;
    struct dirent *e;
    while (!found && (e = readdir(d)))
        found = !strncmp(e->d_name, "step-", 5);
    closedir(d);
    return found;
}

/* The folder itself: a lock (only zbrun makes "DIR/.lock"), or an index
 * beside step folders. */
static bool holds_ckpt(const char *dir) {
    return exists_in(dir, ".lock") ||
           (exists_in(dir, "latest.yaml") && has_step_folder(dir));
}

bool zb_files_is_ckpt_dir(const char *dir) {
    if (holds_ckpt(dir)) return true;
    char real[PATH_MAX], parent[PATH_MAX];
    if (!realpath(dir, real)) return false;
    const char *base = strrchr(real, '/');
    if (!base || strncmp(base + 1, "step-", 5)) return false;
    dir_of(real, parent, sizeof parent);
    return holds_ckpt(parent);
}

/* Where path (links in its last part followed) lands: the real path of its
 * folder, "/" and its own name into out; its folder into dir. */
static zb_status landing(const char *opt, const char *path, const char *target,
                         char *out, size_t cap, char *dir, size_t dcap, zb_err *err) {
    char d[1024];
    dir_of(target, d, sizeof d);
    const char *slash = strrchr(target, '/');
    const char *base = slash ? slash + 1 : target;
    char real[PATH_MAX];
    if (!realpath(d, real))
        return zb_fail(err, ZB_EINPUT, "%s %s: cannot create: %s", opt, path,
                       strerror(errno));
    int n = snprintf(out, cap, "%s/%s", strcmp(real, "/") ? real : "", base);
    if (n < 0 || (size_t)n >= cap || strlen(real) >= dcap)
        return zb_fail(err, ZB_EINPUT, "%s %s: path too long", opt, path);
    memcpy(dir, real, strlen(real) + 1);
    return ZB_OK;
}

/* An existing target that is not a regular file: only a character device
 * or a FIFO (written in place, never created) passes. */
static zb_status check_kind(const char *opt, const char *path, const char *target,
                            const struct stat *sb, zb_err *err) {
    if (S_ISDIR(sb->st_mode))
        return zb_fail(err, ZB_EINPUT, "%s %s: is a folder, not a file (Is a directory)",
                       opt, path);
    if (S_ISBLK(sb->st_mode) || S_ISSOCK(sb->st_mode))
        return zb_fail(err, ZB_EINPUT, "%s %s: is a %s, not a file", opt, path,
                       S_ISBLK(sb->st_mode) ? "block device" : "socket");
    if (!S_ISREG(sb->st_mode) && access(target, W_OK) != 0)
        return zb_fail(err, ZB_EINPUT, "%s %s: cannot write: %s", opt, path,
                       strerror(errno));
    return ZB_OK;
}

/* Can a temporary file be created beside target (as zb_afile will)? */
static zb_status probe(const char *opt, const char *path, const char *target,
                       zb_err *err) {
    char tmp[1100];
    int n = snprintf(tmp, sizeof tmp, "%s.tmp.%ld", target, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof tmp)
        return zb_fail(err, ZB_EINPUT, "%s %s: path too long", opt, path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0)
        return zb_fail(err, ZB_EINPUT, "%s %s: cannot create: %s", opt, path,
                       strerror(errno));
    close(fd);
    unlink(tmp);
    return ZB_OK;
}

/* Is real folder dir the checkpoint folder ckpt or below it? */
static bool under(const char *dir, const char *ckpt) {
    size_t n = strlen(ckpt);
    return n && !strncmp(dir, ckpt, n) && (dir[n] == 0 || dir[n] == '/');
}

static zb_status check_ckpt(const zb_files *fs, const char *opt, const char *path,
                            const char *dir, zb_err *err) {
    if (fs->ckpt && under(dir, fs->ckpt_real))
        return zb_fail(err, ZB_EINPUT, "%s %s: is inside the checkpoint folder "
                       "%s, which zbrun rotates; write it elsewhere", opt, path,
                       fs->ckpt);
    if (zb_files_is_ckpt_dir(dir))
        return zb_fail(err, ZB_EINPUT, "%s %s: is inside a checkpoint folder "
                       "(%s holds a zbrun checkpoint); write it elsewhere", opt,
                       path, dir);
    return ZB_OK;
}

static zb_status check_others(const zb_files *fs, const zb_file_ent *o,
                              zb_err *err) {
    for (int k = 0; o->exists && k < fs->n_in; k++)
        if (fs->in[k].dev == o->dev && fs->in[k].ino == o->ino)
            return zb_fail(err, ZB_EINPUT, "%s %s would overwrite %s %s", o->what,
                           o->path, fs->in[k].what, fs->in[k].path);
    for (int j = 0; j < fs->n_out; j++) {
        const zb_file_ent *p = &fs->out[j];
        bool same = !strcmp(p->land, o->land) ||
                    (o->exists && p->exists && p->dev == o->dev && p->ino == o->ino);
        if (same)
            return zb_fail(err, ZB_EINPUT, "%s %s and %s %s name the same file",
                           p->what, p->path, o->what, o->path);
    }
    return ZB_OK;
}

zb_status zb_files_output(zb_files *fs, const char *opt, const char *path, zb_err *err) {
    if (!path) return ZB_OK;
    if (!path[0]) return zb_fail(err, ZB_EINPUT, "%s: the file name is empty", opt);
    if (fs->n_out == ZB_FILES_MAX)
        return zb_fail(err, ZB_EINPUT, "too many output files (at most %d)", ZB_FILES_MAX);
    zb_file_ent o = {.what = opt, .path = path};
    char target[1024], dir[PATH_MAX];
    zb_err e;
    if (zb_afile_target(path, target, sizeof target, &e) != ZB_OK)
        return zb_fail(err, ZB_EINPUT, "%s %s: %s", opt, path, e.msg);
    struct stat sb;
    if (stat(target, &sb) == 0) {
        ZB_TRY(check_kind(opt, path, target, &sb, err));
        o.exists = true;
        o.dev = sb.st_dev;
        o.ino = sb.st_ino;
    }
    ZB_TRY(landing(opt, path, target, o.land, sizeof o.land, dir, sizeof dir, err));
    ZB_TRY(check_others(fs, &o, err));
    ZB_TRY(check_ckpt(fs, opt, path, dir, err));
    if (!o.exists || S_ISREG(sb.st_mode)) ZB_TRY(probe(opt, path, target, err));
    fs->out[fs->n_out++] = o;
    return ZB_OK;
}

static const char *kind_of(mode_t m) {
    return S_ISDIR(m) ? "a folder" : S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m)
           ? "a character device" : S_ISSOCK(m) ? "a socket" : "a block device";
}

FILE *zb_files_open_input(const char *path, const char **kind) {
    *kind = NULL;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct stat sb;
    int fl = fcntl(fd, F_GETFL);
    if (fstat(fd, &sb) != 0 || fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return NULL;
    }
    if (!S_ISREG(sb.st_mode)) {
        *kind = kind_of(sb.st_mode);
        close(fd);
        errno = EINVAL;
        return NULL;
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return f;
}
