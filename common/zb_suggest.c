/* zb_suggest.c - see zb_suggest.h. */
#include "common/zb_suggest.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>

#define MAXW 64   /* longer words are compared by their first MAXW bytes */

/* Optimal string alignment distance of a[0..n) and b[0..m). */
static int distance(const char *a, const char *b) {
    size_t n = strlen(a), m = strlen(b);
    if (n > MAXW) n = MAXW;
    if (m > MAXW) m = MAXW;
    int d[MAXW + 1][MAXW + 1];
    for (size_t i = 0; i <= n; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= m; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            int c = a[i - 1] != b[j - 1];
            int v = d[i - 1][j - 1] + c;
            if (d[i - 1][j] + 1 < v) v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[n][m];
}

/* Edits allowed for a word of n bytes. */
static int allowed(size_t n) { return n / 3 > 1 ? (int)(n / 3) : 1; }

const char *zb_suggest(const char *word, const char *const *names) {
    const char *best = NULL, *prefix_of = NULL;
    int best_d = allowed(strlen(word)) + 1, prefixes = 0;
    for (int k = 0; names[k]; k++) {
        if (strlen(word) >= 3 && !strncmp(names[k], word, strlen(word))) {
            prefix_of = names[k];
            prefixes++;
        }
        int d = distance(word, names[k]);
        if (d < best_d) {
            best_d = d;
            best = names[k];
        }
    }
    if (best) return best;
    return prefixes == 1 ? prefix_of : NULL;
}

const char *zb_suggest_path(const char *path) {
    static char out[1100];
    char dir[1024];
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (slash == path) snprintf(dir, sizeof dir, "/");
    else if (slash) snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    else snprintf(dir, sizeof dir, ".");
    out[0] = '\0';
    if (!base[0]) return out;
    DIR *d = opendir(dir);
    if (!d) return out;
    char best[256] = "";
    /* stricter than for options: a folder holds many unrelated names */
    int best_d = (strlen(base) / 5 > 1 ? (int)(strlen(base) / 5) : 1) + 1;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.' && base[0] != '.') continue;
        int k = distance(base, e->d_name);
        /* ties: the first in name order, so the answer does not depend on
         * the order the file system lists entries in */
        if (k < best_d || (k == best_d && best[0] && strcmp(e->d_name, best) < 0)) {
            best_d = k;
            snprintf(best, sizeof best, "%s", e->d_name);
        }
    }
    closedir(d);
    if (best[0] && strcmp(best, base))
        snprintf(out, sizeof out, " (did you mean '%s%s%s'?)", slash ? dir : "",
                 slash && strcmp(dir, "/") ? "/" : "", best);
    return out;
}

zb_status zb_fail_unknown_option(zb_err *err, const char *arg,
                                 const char *const *names, const char *help) {
    char word[MAXW + 1];
    snprintf(word, sizeof word, "%.*s", (int)strcspn(arg, "="), arg);
    const char *near = zb_suggest(word, names);
    if (near)
        return zb_fail(err, ZB_EINPUT, "unknown option '%s'; did you mean '%s'? "
                       "(see %s)", arg, near, help);
    return zb_fail(err, ZB_EINPUT, "unknown option '%s' (see %s)", arg, help);
}
