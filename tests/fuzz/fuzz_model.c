/* fuzz_model.c - libFuzzer target: the model reader (zb_model_load) on any
 * bytes. It must load the file or refuse it as bad input with one line. */
#include "common/zb_model.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    char path[128];
    fuzz_write("model.yaml", data, n, path, sizeof path);
    zb_model m;
    zb_err err = {{0}};
    fuzz_check(zb_model_load(path, &m, &err), &err, 0);
    return 0;
}
