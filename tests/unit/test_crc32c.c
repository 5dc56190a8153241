/* test_crc32c.c - CRC32C and the checksummed stream of checkpoint rank
 * files (executor/state/crc32c.h): the standard check value, incremental use,
 * a write/read round trip across block boundaries, and that any flipped
 * byte, truncation or trailing byte is refused as bad input. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "executor/state/crc32c.h"

START_TEST(check_value) {
    /* the CRC-32C check value of "123456789" (RFC 3720, iSCSI) */
    ck_assert_uint_eq(zb_crc32c(0, "123456789", 9), 0xE3069283u);
    uint32_t c = zb_crc32c(0, "1234", 4);
    ck_assert_uint_eq(zb_crc32c(c, "56789", 5), 0xE3069283u);
    ck_assert_uint_eq(zb_crc32c(0, "", 0), 0);
}
END_TEST

/* head[16] + n data bytes through the writer into a memory file. */
static char *make_file(size_t n, size_t *len) {
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    ck_assert_ptr_nonnull(f);
    char head[16] = "HEAD-0123456789";
    fwrite(head, 1, sizeof head, f);
    zb_crc_writer *w;
    FILE *s;
    zb_err err;
    ck_assert_int_eq(zb_crc_writer_open(f, "mem", &w, &s, &err), ZB_OK);
    for (size_t i = 0; i < n; i++) fputc((int)(i * 7 % 251), s);
    ck_assert_int_eq(zb_crc_writer_finish(w, true, zb_crc32c(0, head, 16), &err), ZB_OK);
    fclose(f);
    return buf;
}

/* Read file[len] back: status, and the data must be i*7 % 251 again. */
static zb_status read_back(const char *file, size_t len, size_t n, zb_err *err) {
    char path[] = "/tmp/zb_test_crc_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w+b");
    ck_assert_ptr_nonnull(f);
    fwrite(file, 1, len, f);
    rewind(f);
    char head[16];
    ck_assert_int_eq(fread(head, 1, 16, f), 16);
    FILE *s;
    uint64_t got;
    zb_status st = zb_crc_reader_open(f, path, head, 16, &s, &got, err);
    if (st == ZB_OK) {
        ck_assert_uint_eq(got, n);
        for (size_t i = 0; i < n; i++) ck_assert_int_eq(fgetc(s), (int)(i * 7 % 251));
        ck_assert_int_eq(fgetc(s), EOF);
        fclose(s);
    }
    fclose(f);
    unlink(path);
    return st;
}

START_TEST(round_trip_and_damage) {
    size_t sizes[] = {0, 1, ZB_CRC_BLOCK - 1, ZB_CRC_BLOCK, 2 * ZB_CRC_BLOCK + 5};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k], len;
        char *file = make_file(n, &len);
        zb_err err;
        ck_assert_msg(read_back(file, len, n, &err) == ZB_OK, "%s", err.msg);
        /* every 997th byte flipped in turn: header, data and trailer */
        for (size_t at = 0; at < len; at += 997) {
            file[at] ^= 0x10;
            ck_assert_int_eq(read_back(file, len, n, &err), ZB_EINPUT);
            ck_assert_ptr_nonnull(strstr(err.msg, "damaged checkpoint"));
            file[at] ^= 0x10;
        }
        ck_assert_int_eq(read_back(file, len - 1, n, &err), ZB_EINPUT);
        char *longer = malloc(len + 1);
        memcpy(longer, file, len);
        longer[len] = 'x';
        ck_assert_int_eq(read_back(longer, len + 1, n, &err), ZB_EINPUT);
        free(longer);
        free(file);
    }
}
END_TEST

int main(void) {
    Suite *su = suite_create("crc32c");
    TCase *tc = tcase_create("crc32c");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, check_value);
    tcase_add_test(tc, round_trip_and_damage);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
