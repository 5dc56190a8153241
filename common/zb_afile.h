/* zb_afile.h - files written atomically: everything goes to "<path>.tmp.<pid>"
 * and is renamed over <path> only after a successful fflush + fsync, so a
 * reader never sees a half-written plan, report, trace or checkpoint.
 *
 * What a rename would destroy is kept: a symbolic link is followed (the
 * file it names is replaced, the link stays), and an existing path that is
 * not a regular file (a character device such as /dev/null, a FIFO) is
 * written through in place, without a temporary. A folder is refused. */
#ifndef ZB_AFILE_H
#define ZB_AFILE_H

#include <stdbool.h>
#include <stdio.h>

#include "common/zb_error.h"

typedef struct {
    FILE *f;
    char path[1024];
    char tmp[1100];
    bool direct;       /* writing straight to path (not a regular file) */
} zb_afile;

zb_status zb_afile_open(zb_afile *a, const char *path, zb_err *err);
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
