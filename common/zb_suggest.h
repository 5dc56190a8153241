/* zb_suggest.h - "did you mean" for mistyped options, keys and paths.
 *
 * Both functions only read; the returned text lives in static storage
 * (one call's answer is valid until the next call: single-threaded CLI use).
 */
#ifndef ZB_SUGGEST_H
#define ZB_SUGGEST_H

#include <stddef.h>

#include "common/zb_error.h"

/* The candidate of the NULL-terminated list names[] closest to word by
 * edit distance (insertions, deletions, substitutions, swaps of neighbours),
 * or NULL when none is within max(1, strlen(word) / 3) edits, or when the
 * word is a prefix of exactly one (that one). */
const char *zb_suggest(const char *word, const char *const *names);

/* For a path that cannot be opened: " (did you mean 'dir/name'?)" naming
 * the entry of its folder closest to its last part, within max(1,
 * strlen(last part) / 5) edits, or "" when there is none that close (or
 * the folder cannot be read). */
const char *zb_suggest_path(const char *path);

/* ZB_EINPUT with "unknown option 'ARG'; did you mean '--x'? (see HELP)"
 * (the did-you-mean part only when an option of names[] is close; an
 * "--opt=value" argument is compared by its "--opt" part). */
zb_status zb_fail_unknown_option(zb_err *err, const char *arg,
                                 const char *const *names, const char *help);

#endif
