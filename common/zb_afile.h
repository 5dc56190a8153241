/* zb_afile.h - files written atomically: everything goes to "<path>.tmp.<pid>"
 * and is renamed over <path> only after a successful fflush + fsync, so a
 * reader never sees a half-written plan, report, trace or checkpoint.
 *
 * The temporary file is created new (O_EXCL) and never through a symbolic
 * link planted at its name (O_NOFOLLOW). What a rename would destroy is
 * kept: a symbolic link the caller named is followed (the file it names
 * is replaced, the link stays), and an existing path that is not a regular
 * file (a character device such as /dev/null, a FIFO) is written through
 * in place, without a temporary, opened without blocking: a FIFO nobody
 * reads is waited for at most ZB_AFILE_FIFO_WAIT_S seconds, and a signal
 * (SIGINT, SIGTERM caught by a handler) ends the wait at once (ZB_EIO).
 * A folder is refused. Outputs are checked before any work by zb_files.h. */
#ifndef ZB_AFILE_H
#define ZB_AFILE_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include "common/zb_error.h"

typedef struct {
    FILE *f;
    char path[1024];
    char tmp[1100];
    bool direct;       /* writing straight to path (not a regular file) */
} zb_afile;

#define ZB_AFILE_FIFO_WAIT_S 10

/* A program that catches SIGINT/SIGTERM in a flag (zbrun) names it here,
 * so that a wait for a FIFO's reader also ends when the signal came just
 * before the wait began. NULL (the default): only the signal itself. */
void zb_afile_stop_on(volatile sig_atomic_t *flag);

zb_status zb_afile_open(zb_afile *a, const char *path, zb_err *err);
/* follow false: path is replaced as named, a symbolic link there included
 * (the link is replaced, never what it points at): for files only zb
 * writes, such as a checkpoint's. follow true: zb_afile_open. */
zb_status zb_afile_open_mode(zb_afile *a, const char *path, bool follow, zb_err *err);
/* ok and no write error: flush, fsync, rename, fsync the directory.
 * Otherwise (or on any failure) unlink the temporary file. */
zb_status zb_afile_close(zb_afile *a, bool ok, zb_err *err);

/* Resolve symbolic links in the last component of path (up to 40, also a
 * link to a file not yet created) into out[cap]; path itself when it is no
 * link. ZB_EIO on a loop or a name too long. */
zb_status zb_afile_target(const char *path, char *out, size_t cap, zb_err *err);

/* true when a and b exist and are the same file (device and inode). */
bool zb_same_file(const char *a, const char *b);

#endif
