/* cli.h - command-line parsing helpers for zbplan (cli/main.c, cli/sim_cmd.c).
 *
 * Options take their value as the next argument or after '=' ("--pp 4",
 * "--pp=4"). Every problem is ZB_EINPUT with one line naming the option,
 * without the program name (main prints "zbplan: " before it), e.g.
 * "--stages must be a positive integer, got 'x'".
 */
#ifndef ZB_CLI_H
#define ZB_CLI_H

#include <stdbool.h>

#include "common/zb_error.h"

/* If argv[*i] is option `name` ("--pp" or "--pp=..."), set *val to its
 * value (consuming the next argument when needed), advance *i past it and
 * return true. A missing value sets *st to ZB_EINPUT ("--pp needs a
 * value"); *st is untouched otherwise. */
bool zb_cli_opt(int argc, char **argv, int *i, const char *name,
                const char **val, zb_status *st, zb_err *err);

/* Integer >= min (min 1: "a positive integer", 0: "a non-negative
 * integer", else "an integer >= min"). */
zb_status zb_cli_int(const char *name, const char *text, int min, int *out,
                     zb_err *err);
/* Finite number >= 0 (positive when positive is true). */
zb_status zb_cli_double(const char *name, const char *text, bool positive,
                        double *out, zb_err *err);
/* One of choices (NULL-terminated); *out = its index. */
zb_status zb_cli_enum(const char *name, const char *text,
                      const char *const *choices, int *out, zb_err *err);

#endif
