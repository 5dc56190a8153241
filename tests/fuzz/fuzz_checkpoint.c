/* fuzz_checkpoint.c - libFuzzer target: the checkpoint readers on any
 * bytes. The first byte picks what the rest is: even, a rank file loaded
 * into a stage of tests/fuzz/ckpt_plan.yaml (header, CRC32C trailer and
 * block checks, then zb_stage_load); odd, the index latest.yaml
 * (zb_ckpt_find and the resume checks). Run from the repository root. */
#include "common/zb_plan.h"
#include "executor/state/checkpoint.h"
#include "executor/stage/stage.h"
#include "tests/fuzz/fuzz_util.h"

#include <sys/stat.h>

static zb_plan plan;
static zb_stage *stage;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    zb_err err;
    if (zb_plan_read("tests/fuzz/ckpt_plan.yaml", &plan, &err) != ZB_OK) {
        fprintf(stderr, "fuzz_checkpoint: %s (run from the repository root)\n", err.msg);
        abort();
    }
    zb_stage_cfg cfg = {.plan = &plan};
    if (zb_stage_new(&cfg, &stage, &err) != ZB_OK) {
        fprintf(stderr, "fuzz_checkpoint: %s\n", err.msg);
        abort();
    }
    char step[128];
    snprintf(step, sizeof step, "%s/step-00000001", fuzz_dir());
    mkdir(step, 0777);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    if (n < 1) return 0;
    char path[128];
    zb_err err = {{0}};
    if ((data[0] & 1) == 0) {
        fuzz_write("step-00000001/rank-00000.bin", data + 1, n - 1, path, sizeof path);
        fuzz_check(zb_ckpt_load_rank(fuzz_dir(), 1, 0, 1, stage, &err), &err, 1);
        return 0;
    }
    fuzz_write("latest.yaml", data + 1, n - 1, path, sizeof path);
    zb_ckpt_index idx;
    bool found;
    zb_status st = zb_ckpt_find(fuzz_dir(), &plan, &idx, &found, &err);
    fuzz_check(st, &err, 0);
    if (st == ZB_OK && found) {
        if (idx.step < 1) abort();
        fuzz_check(zb_ckpt_check_resume(fuzz_dir(), &idx, &plan, 5, false, &err), &err, 0);
    }
    return 0;
}
