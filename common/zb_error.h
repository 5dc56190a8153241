/* zb_error.h - status codes and error messages shared by zbplan and zbrun.
 *
 * Library code never prints or exits: it returns a zb_status and fills a
 * zb_err with one line of text. Only main() prints err.msg and exits with
 * zb_exit_code(status). Bad user input (model, plan, CLI) is ZB_EINPUT and
 * exits with status 2; its message starts with "file:line:col: ".
 */
#ifndef ZB_ERROR_H
#define ZB_ERROR_H

#include <stddef.h>

typedef enum {
    ZB_OK = 0,
    ZB_EINPUT,      /* bad input file or argument: exit status 2 */
    ZB_EIO,         /* read/write failure */
    ZB_ENOMEM,      /* allocation failure */
    ZB_EINFEASIBLE, /* no schedule/plan satisfies the constraints */
    ZB_ERUNTIME     /* failure while running (NaN loss, solver error, ...) */
} zb_status;

typedef struct {
    char msg[512];
} zb_err;

/* Fill err->msg (printf style; control characters become spaces, so the
 * message is one line) and return s. err may be NULL. */
zb_status zb_fail(zb_err *err, zb_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Input error at a place in a file: "file:line:col: msg", returns ZB_EINPUT.
 * line/col are 1-based; col <= 0 omits the column, line <= 0 omits both. */
zb_status zb_fail_at(zb_err *err, const char *file, int line, int col,
                     const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Process exit status for a status: 0 ok, 2 bad input, 1 otherwise. */
int zb_exit_code(zb_status s);

/* calloc that reports failure through err (ZB_ENOMEM) and returns NULL. */
void *zb_calloc(size_t n, size_t size, zb_err *err);

/* Propagate a failing status: use inside functions returning zb_status
 * that have nothing to clean up. */
#define ZB_TRY(expr)                                                           \
    do {                                                                       \
        zb_status zb_try_s_ = (expr);                                          \
        if (zb_try_s_ != ZB_OK) return zb_try_s_;                              \
    } while (0)

#endif
