/* zb_afile.h - files written atomically: everything goes to "<path>.tmp.<pid>"
 * and is renamed over <path> only after a successful fflush + fsync, so a
 * reader never sees a half-written plan, report, trace or checkpoint. */
#ifndef ZB_AFILE_H
#define ZB_AFILE_H

#include <stdbool.h>
#include <stdio.h>

#include "common/zb_error.h"

typedef struct {
    FILE *f;
    char path[1024];
    char tmp[1100];
} zb_afile;

zb_status zb_afile_open(zb_afile *a, const char *path, zb_err *err);
/* ok and no write error: flush, fsync, rename, fsync the directory.
 * Otherwise (or on any failure) unlink the temporary file. */
zb_status zb_afile_close(zb_afile *a, bool ok, zb_err *err);

#endif
