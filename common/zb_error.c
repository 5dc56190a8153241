/* zb_error.c - see zb_error.h. */
#include "common/zb_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* A message is one line: control characters (a newline inside a quoted
 * YAML value, a tab in a file name) become spaces. */
static void one_line(char *msg) {
    for (unsigned char *c = (unsigned char *)msg; *c; c++)
        if (*c < 0x20 || *c == 0x7f) *c = ' ';
}

zb_status zb_fail(zb_err *err, zb_status s, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        one_line(err->msg);
    }
    return s;
}

zb_status zb_fail_at(zb_err *err, const char *file, int line, int col,
                     const char *fmt, ...) {
    if (!err) return ZB_EINPUT;
    int n;
    if (line <= 0)
        n = snprintf(err->msg, sizeof err->msg, "%s: ", file);
    else if (col <= 0)
        n = snprintf(err->msg, sizeof err->msg, "%s:%d: ", file, line);
    else
        n = snprintf(err->msg, sizeof err->msg, "%s:%d:%d: ", file, line, col);
    if (n < 0) n = 0;
    if ((size_t)n < sizeof err->msg) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg + n, sizeof err->msg - (size_t)n, fmt, ap);
        va_end(ap);
    }
    one_line(err->msg);
    return ZB_EINPUT;
}

int zb_exit_code(zb_status s) {
    if (s == ZB_OK) return 0;
    return s == ZB_EINPUT ? 2 : 1;
}

void *zb_calloc(size_t n, size_t size, zb_err *err) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) zb_fail(err, ZB_ENOMEM, "out of memory allocating %zu x %zu bytes", n, size);
    return p;
}
