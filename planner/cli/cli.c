/* cli.c - see cli/cli.h. */
#include "planner/cli/cli.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool zb_cli_opt(int argc, char **argv, int *i, const char *name,
                const char **val, zb_status *st, zb_err *err) {
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0) return false;
    if (a[n] == '=') {
        *val = a + n + 1;
        (*i)++;
        return true;
    }
    if (a[n] != '\0') return false;
    if (*i + 1 >= argc) {
        *st = zb_fail(err, ZB_EINPUT, "%s needs a value", name);
        *val = NULL;
        (*i)++;
        return true;
    }
    *val = argv[*i + 1];
    *i += 2;
    return true;
}

zb_status zb_cli_int(const char *name, const char *text, int min, int *out,
                     zb_err *err) {
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    bool ok = text[0] != '\0' && *end == '\0' && errno == 0 && v >= min &&
              v <= INT_MAX;
    if (ok) {
        *out = (int)v;
        return ZB_OK;
    }
    if (min == 1)
        return zb_fail(err, ZB_EINPUT, "%s must be a positive integer, got "
                       "'%s'", name, text);
    if (min == 0)
        return zb_fail(err, ZB_EINPUT, "%s must be a non-negative integer, "
                       "got '%s'", name, text);
    return zb_fail(err, ZB_EINPUT, "%s must be an integer >= %d, got '%s'",
                   name, min, text);
}

zb_status zb_cli_double(const char *name, const char *text, bool positive,
                        double *out, zb_err *err) {
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    bool ok = text[0] != '\0' && *end == '\0' && errno == 0 && isfinite(v) &&
              (positive ? v > 0 : v >= 0);
    if (ok) {
        *out = v;
        return ZB_OK;
    }
    return zb_fail(err, ZB_EINPUT, "%s must be a %s number, got '%s'", name,
                   positive ? "positive" : "non-negative", text);
}

zb_status zb_cli_enum(const char *name, const char *text,
                      const char *const *choices, int *out, zb_err *err) {
    char list[256] = "";
    for (int k = 0; choices[k]; k++) {
        if (strcmp(choices[k], text) == 0) {
            *out = k;
            return ZB_OK;
        }
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
                 k ? ", " : "", choices[k]);
    }
    return zb_fail(err, ZB_EINPUT, "%s must be one of %s; got '%s'", name, list,
                   text);
}
