/* test_tensorboard.c - the TensorBoard event writer (executor/report/
 * tensorboard.h): Event protobufs against bytes worked out by hand from the
 * protobuf wire format (a file-version event; a summary with a two-byte
 * varint step), a buffer too small, and a written file read back record by
 * record: lengths, masked CRC32Cs, the records' bytes, one per step and one
 * for the evaluation; a folder whose parent is missing is bad input. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "executor/report/tensorboard.h"
#include "executor/state/crc32c.h"

START_TEST(file_version_event) {
    uint8_t buf[64];
    size_t n = zb_tb_event(buf, sizeof buf, 1.5, 3, "brain.Event:2", NULL, NULL, 0);
    const uint8_t want[] = {0x09, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f,   /* wall_time 1.5 */
                            0x10, 0x03,                            /* step 3 */
                            0x1a, 13, 'b', 'r', 'a', 'i', 'n', '.', 'E', 'v', 'e',
                            'n', 't', ':', '2'};                   /* file_version */
    ck_assert_uint_eq(n, sizeof want);
    ck_assert_mem_eq(buf, want, sizeof want);
    ck_assert_uint_eq(zb_tb_event(buf, 20, 1.5, 3, "brain.Event:2", NULL, NULL, 0), 0);
}
END_TEST

START_TEST(summary_event) {
    uint8_t buf[64];
    const char *tags[] = {"a"};
    float v[] = {1.0f};
    size_t n = zb_tb_event(buf, sizeof buf, 0.0, 300, NULL, tags, v, 1);
    const uint8_t want[] = {0x09, 0, 0, 0, 0, 0, 0, 0, 0,     /* wall_time 0 */
                            0x10, 0xac, 0x02,                  /* step 300 */
                            0x2a, 10,                          /* summary */
                            0x0a, 8,                           /* value */
                            0x0a, 1, 'a',                      /* tag */
                            0x15, 0, 0, 0x80, 0x3f};           /* simple_value 1 */
    ck_assert_uint_eq(n, sizeof want);
    ck_assert_mem_eq(buf, want, sizeof want);
}
END_TEST

static uint32_t masked(const void *p, size_t n) {
    uint32_t c = zb_crc32c(0, p, n);
    return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

static uint64_t le(const uint8_t *p, int bytes) {
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

START_TEST(file_round_trip) {
    char dir[] = "/tmp/zb_tb_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char sub[64];
    snprintf(sub, sizeof sub, "%s/tb", dir);
    zb_tb t;
    zb_err err;
    ck_assert_int_eq(zb_tb_open(&t, sub, zb_crc32c, &err), ZB_OK);   /* creates tb */
    double mem[2] = {100, 300};
    zb_step_info eval = {.step = 0, .steps = 2, .val_loss = 5.5, .eval_only = true,
                         .unix_s = 10};
    zb_step_info s1 = {.step = 1, .steps = 2, .loss = 5.25, .lr = 1e-3, .val_loss = NAN,
                       .unix_s = 11, .world = 2, .mem_bytes = mem, .tokens_seen = 64};
    zb_tb_step(&t, &eval);
    zb_tb_step(&t, &s1);
    ck_assert_int_eq(zb_tb_close(&t, &err), ZB_OK);
    FILE *f = fopen(t.path, "rb");
    ck_assert_ptr_nonnull(f);
    uint8_t raw[4096];
    size_t len = fread(raw, 1, sizeof raw, f), at = 0;
    fclose(f);
    int records = 0;
    while (at < len) {
        ck_assert_uint_ge(len - at, 16);
        uint64_t n = le(raw + at, 8);
        ck_assert_uint_eq(le(raw + at + 8, 4), masked(raw + at, 8));
        ck_assert_uint_le(at + 16 + n, len);
        ck_assert_uint_eq(le(raw + at + 12 + n, 4), masked(raw + at + 12, n));
        if (records == 2) {   /* the step's event, re-encoded */
            uint8_t want[512];
            const char *tags[] = {"train/loss", "train/lr", "train/grad_norm",
                                  "train/tokens_per_s", "train/step_ms", "train/mfu",
                                  "train/tokens_seen", "train/mem_bytes_max"};
            float v[] = {5.25f, 1e-3f, 0, 0, 0, 0, 64, 300};
            size_t wn = zb_tb_event(want, sizeof want, 11, 1, NULL, tags, v, 8);
            ck_assert_uint_eq(n, wn);
            ck_assert_mem_eq(raw + at + 12, want, wn);
        }
        at += 16 + n;
        records++;
    }
    ck_assert_int_eq(records, 3);   /* file version, evaluation, step */
    unlink(t.path);
    rmdir(sub);
    rmdir(dir);
}
END_TEST

START_TEST(missing_parent) {
    zb_tb t;
    zb_err err;
    ck_assert_int_eq(zb_tb_open(&t, "/nonexistent-zb/tb", zb_crc32c, &err), ZB_EINPUT);
    ck_assert_msg(!strncmp(err.msg, "--tensorboard /nonexistent-zb/tb: cannot create: ", 49),
                  "%s", err.msg);
    ck_assert_int_eq(zb_tb_close(&t, &err), ZB_OK);
}
END_TEST

int main(void) {
    Suite *s = suite_create("tensorboard");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, file_version_event);
    tcase_add_test(tc, summary_event);
    tcase_add_test(tc, file_round_trip);
    tcase_add_test(tc, missing_parent);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
