/* fuzz_util.h - helpers shared by the libFuzzer targets (tests/fuzz/):
 * the readers take paths, so each input is written to a file in a private
 * folder under /tmp (tmpfs on most machines) and read back from there. */
#ifndef ZB_FUZZ_UTIL_H
#define ZB_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/zb_error.h"

/* The fuzzer's folder, made once per process. */
static const char *fuzz_dir(void) {
    static char dir[64];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/zb_fuzz_XXXXXX");
        if (!mkdtemp(dir)) abort();
    }
    return dir;
}

/* Write data[n] to dir/name; its path into out[cap]. Aborts on failure:
 * that is the harness failing, not the reader. */
static void fuzz_write(const char *name, const uint8_t *data, size_t n, char *out,
                       size_t cap) {
    snprintf(out, cap, "%s/%s", fuzz_dir(), name);
    FILE *f = fopen(out, "wb");
    if (!f || (n && fwrite(data, 1, n, f) != n) || fclose(f) != 0) abort();
}

/* A reader's answer must be ZB_OK or a one-line error that says something;
 * anything else (a crash is the sanitizers' business) aborts. */
static void fuzz_check(zb_status st, const zb_err *err, int allow_io) {
    if (st == ZB_OK) return;
    if (st != ZB_EINPUT && !(allow_io && (st == ZB_EIO || st == ZB_ENOMEM))) abort();
    if (!err->msg[0] || strchr(err->msg, '\n')) abort();
}

#endif
