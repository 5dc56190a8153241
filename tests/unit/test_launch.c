/* test_launch.c - launcher detection (launch.h) over fake environments:
 * Open MPI, Slurm (inside and outside a job step), PMI, torchrun-style,
 * none, the precedence between them, and malformed values. */
#include <check.h>
#include <string.h>

#include "executor/comm/launch.h"

/* A fake environment: NULL-terminated "NAME=value" strings. */
static const char *fake_get(const char *name, void *ctx) {
    const char **env = ctx;
    size_t n = strlen(name);
    for (; *env; env++)
        if (!strncmp(*env, name, n) && (*env)[n] == '=') return *env + n + 1;
    return NULL;
}

static zb_status detect(const char **env, zb_launch *l, zb_err *err) {
    return zb_launch_detect(fake_get, (void *)env, l, err);
}

START_TEST(test_none) {
    const char *env[] = {"HOME=/root", "SLURM_PROCID=0", "SLURM_NTASKS=4", NULL};
    zb_launch l;
    zb_err err;
    /* a batch script's shell has SLURM_PROCID but is no job step */
    ck_assert_int_eq(detect(env, &l, &err), ZB_OK);
    ck_assert_int_eq(l.kind, ZB_LAUNCH_NONE);
    ck_assert_int_eq(l.rank, 0);
    ck_assert_int_eq(l.world, 1);
    ck_assert(l.comm_timeout_s == ZB_COMM_TIMEOUT_DEFAULT_S);
    ck_assert(l.bootstrap_timeout_s == ZB_BOOTSTRAP_TIMEOUT_DEFAULT_S);
    ck_assert(!zb_launch_is_mpi(&l));
}
END_TEST

START_TEST(test_ompi) {
    const char *env[] = {"OMPI_COMM_WORLD_RANK=3", "OMPI_COMM_WORLD_SIZE=8",
                         "OMPI_COMM_WORLD_LOCAL_RANK=1",
                         "OMPI_COMM_WORLD_LOCAL_SIZE=2",
                         /* mpirun inside a Slurm step: Open MPI wins */
                         "SLURM_PROCID=0", "SLURM_NTASKS=1", "SLURM_STEP_ID=0",
                         "RANK=5", "WORLD_SIZE=6", NULL};
    zb_launch l;
    zb_err err;
    ck_assert_msg(detect(env, &l, &err) == ZB_OK, "%s", err.msg);
    ck_assert_int_eq(l.kind, ZB_LAUNCH_OMPI);
    ck_assert_int_eq(l.rank, 3);
    ck_assert_int_eq(l.world, 8);
    ck_assert_int_eq(l.local_rank, 1);
    ck_assert_int_eq(l.local_size, 2);
    ck_assert(zb_launch_is_mpi(&l));
    ck_assert_str_eq(zb_launcher_name(l.kind), "Open MPI");
    ck_assert_str_eq(zb_launch_world_var(l.kind), "OMPI_COMM_WORLD_SIZE");
}
END_TEST

START_TEST(test_slurm) {
    const char *env[] = {"SLURM_PROCID=5", "SLURM_NTASKS=16", "SLURM_LOCALID=1",
                         "SLURM_STEPID=2", "PMI_RANK=9", "PMI_SIZE=10", NULL};
    zb_launch l;
    zb_err err;
    ck_assert_msg(detect(env, &l, &err) == ZB_OK, "%s", err.msg);
    ck_assert_int_eq(l.kind, ZB_LAUNCH_SLURM);
    ck_assert_int_eq(l.rank, 5);
    ck_assert_int_eq(l.world, 16);
    ck_assert_int_eq(l.local_rank, 1);
    ck_assert_int_eq(l.local_size, 0);   /* unknown */
    ck_assert(zb_launch_is_mpi(&l));
}
END_TEST

START_TEST(test_pmi) {
    const char *env[] = {"PMI_RANK=2", "PMI_SIZE=4", "MPI_LOCALRANKID=0",
                         "MPI_LOCALNRANKS=2", NULL};
    zb_launch l;
    zb_err err;
    ck_assert_msg(detect(env, &l, &err) == ZB_OK, "%s", err.msg);
    ck_assert_int_eq(l.kind, ZB_LAUNCH_PMI);
    ck_assert_int_eq(l.rank, 2);
    ck_assert_int_eq(l.world, 4);
    ck_assert_int_eq(l.local_rank, 0);
    ck_assert_int_eq(l.local_size, 2);
    const char *bare[] = {"PMI_RANK=1", "PMI_SIZE=2", NULL};
    ck_assert_msg(detect(bare, &l, &err) == ZB_OK, "%s", err.msg);
    ck_assert_int_eq(l.local_rank, 0);   /* not given: 0 */
}
END_TEST

START_TEST(test_torchrun) {
    const char *env[] = {"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1",
                         "LOCAL_WORLD_SIZE=2", "MASTER_ADDR=10.0.0.7",
                         "MASTER_PORT=29500", "ZB_BOOTSTRAP_TIMEOUT_S=2.5",
                         "ZB_COMM_TIMEOUT_S=7", NULL};
    zb_launch l;
    zb_err err;
    ck_assert_msg(detect(env, &l, &err) == ZB_OK, "%s", err.msg);
    ck_assert_int_eq(l.kind, ZB_LAUNCH_TORCHRUN);
    ck_assert_int_eq(l.rank, 1);
    ck_assert_int_eq(l.world, 2);
    ck_assert_int_eq(l.local_rank, 1);
    ck_assert_str_eq(l.master_addr, "10.0.0.7");
    ck_assert_int_eq(l.master_port, 29500);
    ck_assert(l.bootstrap_timeout_s == 2.5);
    ck_assert(l.comm_timeout_s == 7);
    ck_assert(!zb_launch_is_mpi(&l));
}
END_TEST

/* One bad environment: detection fails with ZB_EINPUT naming `word`. */
static void expect_bad(const char **env, const char *word) {
    zb_launch l;
    zb_err err = {{0}};
    ck_assert_int_eq(detect(env, &l, &err), ZB_EINPUT);
    ck_assert_msg(strstr(err.msg, word), "'%s' does not name %s", err.msg, word);
}

START_TEST(test_malformed) {
    const char *e1[] = {"OMPI_COMM_WORLD_RANK=x", "OMPI_COMM_WORLD_SIZE=2", NULL};
    expect_bad(e1, "OMPI_COMM_WORLD_RANK='x'");
    const char *e2[] = {"OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_SIZE=2", NULL};
    expect_bad(e2, "0..1");
    const char *e3[] = {"SLURM_PROCID=0", "SLURM_NTASKS=0", "SLURM_STEP_ID=1", NULL};
    expect_bad(e3, "SLURM_NTASKS");
    const char *e4[] = {"RANK=0", "WORLD_SIZE=2", "MASTER_PORT=1", NULL};
    expect_bad(e4, "MASTER_ADDR");
    const char *e5[] = {"RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=h", NULL};
    expect_bad(e5, "MASTER_PORT");
    const char *e6[] = {"RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=h",
                        "MASTER_PORT=70000", NULL};
    expect_bad(e6, "MASTER_PORT");
    const char *e7[] = {"PMI_RANK=0", "PMI_SIZE=2", "MPI_LOCALRANKID=-1", NULL};
    expect_bad(e7, "MPI_LOCALRANKID");
    const char *e8[] = {"ZB_COMM_TIMEOUT_S=0", NULL};
    expect_bad(e8, "ZB_COMM_TIMEOUT_S");
}
END_TEST

static Suite *launch_suite(void) {
    Suite *s = suite_create("launch");
    TCase *tc = tcase_create("env");
    tcase_add_test(tc, test_none);
    tcase_add_test(tc, test_ompi);
    tcase_add_test(tc, test_slurm);
    tcase_add_test(tc, test_pmi);
    tcase_add_test(tc, test_torchrun);
    tcase_add_test(tc, test_malformed);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(launch_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
