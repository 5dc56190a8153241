/* guard.c - see cli/guard.h. */
#include "planner/cli/guard.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/zb_afile.h"

/* A plan starts with "version:" and has a "schedule:" section at the top
 * level; a model has neither. Read the first 64 KiB as text: enough for
 * the top of any plan, and cheap on anything else. */
static bool looks_like_plan(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    if (strlen(buf) != n) return false;   /* binary */
    return strncmp(buf, "version:", 8) == 0 && strstr(buf, "\nschedule:") &&
           strstr(buf, "\nparallel:");
}

zb_status zb_guard_paths(const char *model_path, const char *out_path, zb_err *err) {
    if (looks_like_plan(model_path))
        return zb_fail_at(err, model_path, 1, 1, "this is a plan, not a model; "
                          "run it with zbrun (zbplan reads a model file)");
    char target[1024];
    if (zb_afile_target(out_path, target, sizeof target, NULL) == ZB_OK &&
        zb_same_file(model_path, target))
        return zb_fail(err, ZB_EINPUT, "-o %s would overwrite the model %s; "
                       "choose another plan file", out_path, model_path);
    return ZB_OK;
}
