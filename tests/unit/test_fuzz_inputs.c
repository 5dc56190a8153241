/* test_fuzz_inputs.c - random damage to a shipped model and plan: every
 * damaged file must either load or be refused as bad input (ZB_EINPUT) with
 * one line that starts with the file's name; never crash, never another
 * status. Deterministic (fixed seed); `make asan` runs it under the
 * sanitizers, which is where a reader's memory error would show. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/zb_model.h"
#include "common/zb_plan.h"

#define CASES 300

static unsigned long long rng_state = 0x9e3779b97f4a7c15ull;
static unsigned rnd(unsigned n) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (unsigned)(rng_state % n);
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s (run from the repository root)", path);
    static char buf[1 << 17];
    *len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[*len] = 0;
    char *copy = malloc(*len + 1);
    ck_assert_ptr_nonnull(copy);
    memcpy(copy, buf, *len + 1);
    return copy;
}

/* One random damage of text[len] into out (room for 2 len + 64). */
static size_t damage(const char *text, size_t len, char *out) {
    static const char pool[] = ":-[]{},# 0a\n\t'\"&*!|>";
    size_t at = rnd((unsigned)len), n = len;
    memcpy(out, text, len);
    switch (rnd(5)) {
    case 0: /* overwrite a byte */
        out[at] = pool[rnd(sizeof pool - 1)];
        break;
    case 1: /* truncate */
        n = at;
        break;
    case 2: { /* delete a run */
        size_t k = 1 + rnd(40);
        if (at + k > len) k = len - at;
        memmove(out + at, text + at + k, len - at - k);
        n = len - k;
        break;
    }
    case 3: { /* duplicate a run */
        size_t k = 1 + rnd(60);
        if (at + k > len) k = len - at;
        memcpy(out + at + k, text + at, len - at);
        n = len + k;
        break;
    }
    default: /* insert a digit string where a digit stands */
        out[at] = (char)('0' + rnd(10));
        break;
    }
    return n;
}

static void fuzz(const char *src, bool plan) {
    size_t len;
    char *text = slurp(src, &len), *buf = malloc(2 * len + 64);
    ck_assert_ptr_nonnull(buf);
    char path[64];
    snprintf(path, sizeof path, "/tmp/zb_fuzz_%d.yaml", (int)getpid());
    int ok = 0, refused = 0;
    for (int i = 0; i < CASES; i++) {
        size_t n = damage(text, len, buf);
        FILE *f = fopen(path, "wb");
        ck_assert_ptr_nonnull(f);
        fwrite(buf, 1, n, f);
        fclose(f);
        zb_err err = {{0}};
        zb_status st;
        if (plan) {
            zb_plan pl;
            st = zb_plan_read(path, &pl, &err);
            if (st == ZB_OK) zb_plan_free(&pl);
        } else {
            zb_model m;
            st = zb_model_load(path, &m, &err);
        }
        if (st == ZB_OK) { ok++; continue; }
        refused++;
        ck_assert_msg(st == ZB_EINPUT, "case %d: status %d: %s", i, st, err.msg);
        ck_assert_msg(strncmp(err.msg, path, strlen(path)) == 0 &&
                      err.msg[strlen(path)] == ':', "case %d: '%s'", i, err.msg);
        ck_assert_msg(strchr(err.msg, '\n') == NULL, "case %d: two lines", i);
    }
    /* the damage must be real: most files are refused, some survive
     * (a changed comment, a digit in a float) */
    ck_assert_int_gt(refused, CASES / 2);
    unlink(path);
    free(text);
    free(buf);
}

START_TEST(damaged_models) { fuzz("models/tiny.yaml", false); }
END_TEST

START_TEST(damaged_plans) { fuzz("plans/tiny.yaml", true); }
END_TEST

int main(void) {
    Suite *su = suite_create("fuzz_inputs");
    TCase *tc = tcase_create("damage");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, damaged_models);
    tcase_add_test(tc, damaged_plans);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
