/* test_data.c - the data loader: text and shard files, their validation
 * errors, and the deterministic batch selection (executor/state/data.h). */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "executor/state/data.h"

/* A model with only what the loader reads. */
static zb_model model(zb_data_kind kind, const char *path, int seq_len,
                      int vocab) {
    zb_model m;
    memset(&m, 0, sizeof m);
    m.arch.seq_len = seq_len;
    m.arch.vocab = vocab;
    m.train.global_batch = 8;
    m.train.seed = 42;
    m.train.data_kind = kind;
    snprintf(m.train.data_path, sizeof m.train.data_path, "%s", path);
    return m;
}

/* Write bytes to a fresh temp file; its name goes to path[64]. */
static void write_tmp(char *path, const void *buf, size_t n) {
    strcpy(path, "/tmp/zb_test_data_XXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, buf, n), (ssize_t)n);
    close(fd);
}

static void put32(unsigned char *p, int32_t x) {
    uint32_t u = (uint32_t)x;
    p[0] = u & 255; p[1] = (u >> 8) & 255; p[2] = (u >> 16) & 255; p[3] = u >> 24;
}

/* A shard of count tokens tok[i] = f(i); header fields overridable;
 * extra bytes appended after the tokens. */
static size_t make_shard(unsigned char *buf, int magic, int version,
                         int count, int real_count, int extra, int vocab) {
    memset(buf, 0, 1024);
    put32(buf, magic);
    put32(buf + 4, version);
    put32(buf + 8, count);
    for (int i = 0; i < real_count; i++) {
        int t = (i * 37 + 5) % vocab;
        buf[1024 + 2 * i] = t & 255;
        buf[1024 + 2 * i + 1] = t >> 8;
    }
    memset(buf + 1024 + 2 * real_count, 0, (size_t)extra);
    return 1024 + 2 * (size_t)real_count + (size_t)extra;
}

/* Opening fails with status st and a message containing each of the words. */
static void expect_open_error(const zb_model *m, zb_status st, const char *w1,
                              const char *w2) {
    zb_data *d = (zb_data *)1;
    zb_err err = {{0}};
    ck_assert_int_eq(zb_data_open(m, &d, &err), st);
    ck_assert_ptr_null(d);
    ck_assert_msg(strstr(err.msg, w1), "'%s' lacks '%s'", err.msg, w1);
    if (w2) ck_assert_msg(strstr(err.msg, w2), "'%s' lacks '%s'", err.msg, w2);
}

static unsigned char shard_buf[1024 + 2 * 5000 + 16];

START_TEST(test_text_tokens_and_targets) {
    unsigned char text[200];
    for (int i = 0; i < 200; i++) text[i] = (unsigned char)(i + 20); /* unique */
    char path[64];
    write_tmp(path, text, sizeof text);
    zb_model m = model(ZB_DATA_TEXT, path, 16, 256);
    zb_data *d;
    zb_err err;
    ck_assert_int_eq(zb_data_open(&m, &d, &err), ZB_OK);
    ck_assert_uint_eq(zb_data_tokens(d), 200);
    int tok[16], tgt[16];
    for (int step = 0; step < 5; step++)
        for (int s = 0; s < 8; s++) {
            ck_assert_int_eq(zb_data_batch(d, step, s, tok, tgt, &err), ZB_OK);
            int off = tok[0] - 20; /* bytes are unique: the offset */
            ck_assert_int_ge(off, 0);
            ck_assert_int_le(off, 200 - 17);
            for (int t = 0; t < 16; t++) {
                ck_assert_int_eq(tok[t], text[off + t]);
                ck_assert_int_eq(tgt[t], text[off + t + 1]);
            }
        }
    zb_data_free(d);
    unlink(path);
}
END_TEST

START_TEST(test_text_needs_byte_vocab) {
    char path[64];
    write_tmp(path, "hello world, hello world", 24);
    zb_model m = model(ZB_DATA_TEXT, path, 4, 100);
    expect_open_error(&m, ZB_EINPUT, path, "vocab is 100");
    unlink(path);
}
END_TEST

START_TEST(test_shard_ok) {
    size_t n = make_shard(shard_buf, 20240520, 1, 3000, 3000, 0, 1000);
    char path[64];
    write_tmp(path, shard_buf, n);
    zb_model m = model(ZB_DATA_SHARDS, path, 8, 1000);
    zb_data *d;
    zb_err err;
    ck_assert_int_eq(zb_data_open(&m, &d, &err), ZB_OK);
    ck_assert_uint_eq(zb_data_tokens(d), 3000);
    int tok[8], tgt[8];
    ck_assert_int_eq(zb_data_batch(d, 3, 1, tok, tgt, &err), ZB_OK);
    /* find the offset by brute force: the sequence must occur in the file */
    int found = -1;
    for (int off = 0; off + 9 <= 3000 && found < 0; off++) {
        int ok = 1;
        for (int t = 0; t < 8 && ok; t++)
            ok = tok[t] == ((off + t) * 37 + 5) % 1000;
        if (ok) found = off;
    }
    ck_assert_int_ge(found, 0);
    for (int t = 0; t < 8; t++)
        ck_assert_int_eq(tgt[t], ((found + t + 1) * 37 + 5) % 1000);
    zb_data_free(d);
    unlink(path);
}
END_TEST

START_TEST(test_shard_errors) {
    char path[64];
    zb_model m;
    /* bad magic */
    size_t n = make_shard(shard_buf, 1234, 1, 100, 100, 0, 500);
    write_tmp(path, shard_buf, n);
    m = model(ZB_DATA_SHARDS, path, 8, 500);
    expect_open_error(&m, ZB_EINPUT, path, "magic 1234");
    unlink(path);
    /* bad version */
    n = make_shard(shard_buf, 20240520, 7, 100, 100, 0, 500);
    write_tmp(path, shard_buf, n);
    m = model(ZB_DATA_SHARDS, path, 8, 500);
    expect_open_error(&m, ZB_EINPUT, path, "version 7");
    unlink(path);
    /* one byte too many */
    n = make_shard(shard_buf, 20240520, 1, 100, 100, 1, 500);
    write_tmp(path, shard_buf, n);
    m = model(ZB_DATA_SHARDS, path, 8, 500);
    expect_open_error(&m, ZB_EINPUT, path, "1225 bytes");
    unlink(path);
    /* header claims more tokens than the file holds */
    n = make_shard(shard_buf, 20240520, 1, 200, 100, 0, 500);
    write_tmp(path, shard_buf, n);
    m = model(ZB_DATA_SHARDS, path, 8, 500);
    expect_open_error(&m, ZB_EINPUT, path, "200 tokens");
    unlink(path);
    /* shorter than the header */
    write_tmp(path, shard_buf, 100);
    m = model(ZB_DATA_SHARDS, path, 8, 500);
    expect_open_error(&m, ZB_EINPUT, path, "header");
    unlink(path);
    /* a token outside the vocabulary: tokens reach 499, vocab 400 */
    n = make_shard(shard_buf, 20240520, 1, 100, 100, 0, 500);
    write_tmp(path, shard_buf, n);
    m = model(ZB_DATA_SHARDS, path, 8, 400);
    expect_open_error(&m, ZB_EINPUT, path, "vocab 400");
    unlink(path);
    /* fewer than seq_len + 1 tokens */
    n = make_shard(shard_buf, 20240520, 1, 8, 8, 0, 500);
    write_tmp(path, shard_buf, n);
    m = model(ZB_DATA_SHARDS, path, 8, 500);
    expect_open_error(&m, ZB_EINPUT, path, "seq_len + 1 = 9");
    unlink(path);
}
END_TEST

START_TEST(test_missing_and_empty_path) {
    zb_model m = model(ZB_DATA_TEXT, "/nonexistent/zb/corpus.txt", 8, 256);
    expect_open_error(&m, ZB_EINPUT, "/nonexistent/zb/corpus.txt", "cannot open");
    m = model(ZB_DATA_SHARDS, "", 8, 256);
    expect_open_error(&m, ZB_EINPUT, "no data file given", NULL);
}
END_TEST

/* An empty text path is the built-in corpus: models/data/corpus.txt's
 * bytes, batch for batch. */
START_TEST(test_empty_path_is_builtin) {
    zb_model a = model(ZB_DATA_TEXT, "", 16, 256);
    zb_model b = model(ZB_DATA_TEXT, "models/data/corpus.txt", 16, 256);
    zb_data *da, *db;
    zb_err err;
    ck_assert_int_eq(zb_data_open(&a, &da, &err), ZB_OK);
    ck_assert_int_eq(zb_data_open(&b, &db, &err), ZB_OK);
    ck_assert_uint_eq(zb_data_tokens(da), zb_data_tokens(db));
    int ta[16], ga[16], tb[16], gb[16];
    for (int step = 0; step < 5; step++) {
        ck_assert_int_eq(zb_data_batch(da, step, 1, ta, ga, &err), ZB_OK);
        ck_assert_int_eq(zb_data_batch(db, step, 1, tb, gb, &err), ZB_OK);
        ck_assert_mem_eq(ta, tb, sizeof ta);
        ck_assert_mem_eq(ga, gb, sizeof ga);
    }
    zb_data_free(da);
    zb_data_free(db);
}
END_TEST

/* Same inputs, same batch (also from a second open); other steps differ;
 * every offset of a tiny file is reachable and none beyond. */
START_TEST(test_determinism) {
    zb_model m = model(ZB_DATA_TEXT, "models/data/corpus.txt", 32, 256);
    zb_data *d1, *d2;
    zb_err err;
    ck_assert_int_eq(zb_data_open(&m, &d1, &err), ZB_OK);
    ck_assert_int_eq(zb_data_open(&m, &d2, &err), ZB_OK);
    ck_assert_uint_gt(zb_data_tokens(d1), 200 * 1024);
    int a[32], at[32], b[32], bt[32];
    int differ_step = 0, differ_seq = 0;
    for (int step = 0; step < 10; step++) {
        zb_data_batch(d1, step, 3, a, at, &err);
        zb_data_batch(d2, step, 3, b, bt, &err);
        ck_assert_mem_eq(a, b, sizeof a);
        ck_assert_mem_eq(at, bt, sizeof at);
        zb_data_batch(d1, step + 1, 3, b, bt, &err);
        differ_step += memcmp(a, b, sizeof a) != 0;
        zb_data_batch(d1, step, 4, b, bt, &err);
        differ_seq += memcmp(a, b, sizeof a) != 0;
    }
    ck_assert_int_eq(differ_step, 10);
    ck_assert_int_eq(differ_seq, 10);
    /* another seed gives other batches */
    m.train.seed = 43;
    zb_data *d3;
    ck_assert_int_eq(zb_data_open(&m, &d3, &err), ZB_OK);
    zb_data_batch(d1, 0, 0, a, at, &err);
    zb_data_batch(d3, 0, 0, b, bt, &err);
    ck_assert(memcmp(a, b, sizeof a) != 0);
    /* out of range sequence */
    ck_assert_int_eq(zb_data_batch(d1, 0, 8, a, at, &err), ZB_ERUNTIME);
    zb_data_free(d1);
    zb_data_free(d2);
    zb_data_free(d3);

    char path[64];
    write_tmp(path, "abcdef", 6); /* seq_len 4: offsets 0 and 1 only */
    m = model(ZB_DATA_TEXT, path, 4, 256);
    ck_assert_int_eq(zb_data_open(&m, &d1, &err), ZB_OK);
    int seen[2] = {0, 0};
    for (int step = 0; step < 50; step++) {
        zb_data_batch(d1, step, step % 8, a, at, &err);
        int off = a[0] - 'a';
        ck_assert(off == 0 || off == 1);
        seen[off]++;
    }
    ck_assert(seen[0] > 0 && seen[1] > 0);
    zb_data_free(d1);
    unlink(path);
}
END_TEST

/* DP rank d, microbatch j holds global sequences (d*m + j)*mb + i. */
START_TEST(test_microbatch_mapping) {
    zb_model m = model(ZB_DATA_TEXT, "models/data/corpus.txt", 16, 256);
    m.train.global_batch = 12; /* dp 2 x m 3 x micro_batch 2 */
    zb_data *d;
    zb_err err;
    ck_assert_int_eq(zb_data_open(&m, &d, &err), ZB_OK);
    int tok[2 * 16], tgt[2 * 16], one[16], onet[16];
    for (int dp = 0; dp < 2; dp++)
        for (int j = 0; j < 3; j++) {
            ck_assert_int_eq(zb_data_microbatch(d, 5, dp, j, 3, 2, tok, tgt, &err), ZB_OK);
            for (int i = 0; i < 2; i++) {
                zb_data_batch(d, 5, (dp * 3 + j) * 2 + i, one, onet, &err);
                ck_assert_mem_eq(tok + i * 16, one, sizeof one);
                ck_assert_mem_eq(tgt + i * 16, onet, sizeof onet);
            }
        }
    zb_data_free(d);
}
END_TEST

/* The shipped corpus: ASCII text with a header line naming its generator. */
/* order: sequential reads llm.c's unshuffled windows: global batch b of
 * G sequences of T tokens starts at token b*G*T, sequence i at +i*T, and
 * the batches wrap around after (count-1)/(G*T) of them; DP ranks read
 * consecutive slices. The validation source is sequential too. */
START_TEST(test_sequential_order) {
    unsigned char text[300];
    for (int i = 0; i < 300; i++) text[i] = (unsigned char)(i % 251);
    char path[64];
    write_tmp(path, text, sizeof text);
    zb_model m = model(ZB_DATA_TEXT, path, 8, 256);   /* G = 8: 64 per batch */
    m.train.data_sequential = true;
    zb_data *d;
    zb_err err;
    ck_assert_msg(zb_data_open(&m, &d, &err) == ZB_OK, "%s", err.msg);
    int tok[8], tgt[8];
    int n_batches = (300 - 1) / 64;   /* 4 */
    for (int step = 0; step < 9; step++)
        for (int seq = 0; seq < 8; seq++) {
            ck_assert(zb_data_batch(d, step, seq, tok, tgt, &err) == ZB_OK);
            int at = ((step % n_batches) * 8 + seq) * 8;
            for (int t = 0; t < 8; t++) {
                ck_assert_int_eq(tok[t], text[at + t]);
                ck_assert_int_eq(tgt[t], text[at + t + 1]);
            }
        }
    /* dp 2 x m 2 x micro_batch 2: rank 1 holds sequences 4..7 */
    int mt[16], mg[16];
    ck_assert(zb_data_microbatch(d, 1, 1, 0, 2, 2, mt, mg, &err) == ZB_OK);
    ck_assert_int_eq(mt[0], text[(8 + 4) * 8]);
    zb_data_free(d);
    /* validation: sequential even when training is random */
    m.train.data_sequential = false;
    snprintf(m.train.val_path, sizeof m.train.val_path, "%s", path);
    ck_assert_msg(zb_data_open_val(&m, &d, &err) == ZB_OK, "%s", err.msg);
    ck_assert(zb_data_batch(d, 1, 3, tok, tgt, &err) == ZB_OK);
    ck_assert_int_eq(tok[0], text[(8 + 3) * 8]);
    zb_data_free(d);
    /* fewer than G*T + 1 tokens cannot hold one sequential batch */
    m.arch.seq_len = 40;
    m.train.data_sequential = true;
    expect_open_error(&m, ZB_EINPUT, "fewer than one sequential batch", "321");
    unlink(path);
}
END_TEST

START_TEST(test_builtin_corpus) {
    FILE *f = fopen("models/data/corpus.txt", "rb");
    ck_assert_ptr_nonnull(f);
    char line[256];
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    ck_assert_ptr_nonnull(strstr(line, "make_corpus.py"));
    int c;
    long n = 0;
    while ((c = fgetc(f)) != EOF) {
        ck_assert(c == '\n' || (c >= 32 && c < 127));
        n++;
    }
    fclose(f);
    ck_assert(n > 200 * 1024 && n < 600 * 1024);
}
END_TEST

static Suite *data_suite(void) {
    Suite *s = suite_create("data");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_text_tokens_and_targets);
    tcase_add_test(tc, test_text_needs_byte_vocab);
    tcase_add_test(tc, test_shard_ok);
    tcase_add_test(tc, test_shard_errors);
    tcase_add_test(tc, test_missing_and_empty_path);
    tcase_add_test(tc, test_determinism);
    tcase_add_test(tc, test_microbatch_mapping);
    tcase_add_test(tc, test_builtin_corpus);
    tcase_add_test(tc, test_sequential_order);
    tcase_add_test(tc, test_empty_path_is_builtin);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(data_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
