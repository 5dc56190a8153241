/* fuzz_plan.c - libFuzzer target: the plan reader (zb_plan_read: YAML,
 * every field, size products, schedule simulation, fingerprint) on any
 * bytes; a plan it accepts is also lowered to per-rank programs, as zbrun
 * would. */
#include "common/zb_lower.h"
#include "common/zb_plan.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    char path[128];
    fuzz_write("plan.yaml", data, n, path, sizeof path);
    zb_plan p;
    zb_err err = {{0}};
    zb_status st = zb_plan_read(path, &p, &err);
    fuzz_check(st, &err, 0);
    if (st != ZB_OK) return 0;
    if ((long long)p.dp * p.tp * p.pp > ZB_PLAN_MAX_WORLD) abort();
    zb_program prog;
    if (zb_lower(&p.sched, &prog, &err) == ZB_OK) zb_program_free(&prog);
    zb_plan_free(&p);
    return 0;
}
