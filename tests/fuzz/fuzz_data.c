/* fuzz_data.c - libFuzzer target: the training data reader (zb_data_open,
 * zb_data_microbatch) on any bytes, as a text file and as an llm.c token
 * shard (the first input byte picks, and sets the vocabulary). Every token
 * handed out must be inside the vocabulary. */
#include "executor/state/data.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    if (n < 1) return 0;
    zb_model m;
    memset(&m, 0, sizeof m);
    bool shard = data[0] & 1;
    m.arch = (zb_arch){.layers = 1, .hidden = 8, .heads = 1, .ffn_hidden = 32,
                       .seq_len = 4 + (data[0] >> 5), .vocab = shard ? 300 + data[0] : 256};
    m.train.global_batch = 4;
    m.train.micro_batch = 2;
    m.train.seed = data[0];
    m.train.data_kind = shard ? ZB_DATA_SHARDS : ZB_DATA_TEXT;
    fuzz_write("data.bin", data + 1, n - 1, m.train.data_path, sizeof m.train.data_path);
    zb_data *d = NULL;
    zb_err err = {{0}};
    zb_status st = zb_data_open(&m, &d, &err);
    fuzz_check(st, &err, 0);
    if (st != ZB_OK) return 0;
    int tok[2 * 12], tgt[2 * 12];
    for (int step = 0; step < 3; step++)
        for (int j = 0; j < 2; j++) {
            if (zb_data_microbatch(d, step, 0, j, 2, 2, tok, tgt, &err) != ZB_OK) abort();
            for (int i = 0; i < 2 * m.arch.seq_len; i++)
                if (tok[i] < 0 || tok[i] >= m.arch.vocab || tgt[i] < 0 ||
                    tgt[i] >= m.arch.vocab)
                    abort();
        }
    zb_data_free(d);
    return 0;
}
