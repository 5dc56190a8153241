/* guard.c - see cli/guard.h. */
#include "planner/cli/guard.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/zb_files.h"

/* A plan starts with "version:" and has a "schedule:" section at the top
 * level; a model has neither. Read the first 64 KiB as text: enough for
 * the top of any plan, and cheap on anything else. */
static bool looks_like_plan(const char *path) {
    struct stat sb;   /* a FIFO or a device is the model reader's to refuse */
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) return false;
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

zb_status zb_guard_output(const char *opt, const char *out_path,
                          const zb_guard_in *in, int n, zb_err *err) {
    zb_files fs;
    zb_files_init(&fs);
    for (int i = 0; i < n; i++) ZB_TRY(zb_files_input(&fs, in[i].what, in[i].path, err));
    return zb_files_output(&fs, opt, out_path, err);
}

zb_status zb_guard_paths(const char *model_path, const char *profile_path,
                         const char *out_path, zb_err *err) {
    if (looks_like_plan(model_path))
        return zb_fail_at(err, model_path, 1, 1, "this is a plan, not a model; "
                          "run it with zbrun (zbplan reads a model file)");
    const zb_guard_in in[] = {{"the model", model_path}, {"the profile", profile_path}};
    return zb_guard_output("-o", out_path, in, 2, err);
}
