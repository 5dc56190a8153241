/* blas_env.c - OpenBLAS's kernel choice and threads (see blas_env.h). */
#include "executor/host/blas_env.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define ZB_X86 1
#endif

/* OpenBLAS's own entry points (cblas.h declares them in most builds, but
 * not all; the prototypes are stable). */
char *openblas_get_corename(void);
char *openblas_get_config(void);
void openblas_set_num_threads(int n);

#ifdef ZB_X86
/* XCR0: which register state the OS saves on a context switch. */
static uint64_t xgetbv0(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}
#endif

void zb_cpu_detect(zb_cpu_features *f) {
    memset(f, 0, sizeof *f);
#ifdef ZB_X86
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return;
    /* vendor string in ebx, edx, ecx: "AuthenticAMD", "HygonGenuine" */
    f->amd = (b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u) ||
             (b == 0x6f677948u && d == 0x6e65476eu && c == 0x656e6975u);
    if (!__get_cpuid(1, &a, &b, &c, &d)) return;
    int fam = (a >> 8) & 0xf, mod = (a >> 4) & 0xf;
    f->family = fam == 0xf ? fam + (int)((a >> 20) & 0xff) : fam;
    f->model = fam == 0x6 || fam == 0xf ? mod + (int)(((a >> 16) & 0xf) << 4) : mod;
    f->sse3 = c & (1u << 0);
    f->ssse3 = c & (1u << 9);
    f->sse42 = c & (1u << 20);
    bool osxsave = c & (1u << 27), fma = c & (1u << 12);
    uint64_t xcr0 = osxsave ? xgetbv0() : 0;
    bool os_avx = (xcr0 & 0x6) == 0x6, os_avx512 = (xcr0 & 0xE0) == 0xE0;
    f->avx = os_avx && (c & (1u << 28));
    f->fma = f->avx && fma;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return;
    f->avx2 = f->avx && (b & (1u << 5));
    f->avx512 = f->avx2 && os_avx512 && (b & (1u << 16)) && (b & (1u << 17)) &&
                (b & (1u << 30)) && (b & (1u << 31));
    if (f->avx512 && __get_cpuid_count(7, 1, &a, &b, &c, &d))
        f->avx512_bf16 = a & (1u << 5);
#endif
}

const char *zb_blas_core_for(const zb_cpu_features *f) {
    if (f->avx512)
        return f->avx512_bf16 && !f->amd && f->family == 6 && f->model == 0x55
                   ? "Cooperlake" : "SkylakeX";
    if (f->avx2 && f->fma) return f->amd ? "Zen" : "Haswell";
    if (f->avx) return "Sandybridge";
    if (f->sse42) return "Nehalem";
    if (f->ssse3) return "Core2";
    return "Prescott";
}

int zb_blas_core_level(const char *core) {
    static const struct { const char *name; int level; } known[] = {
        {"prescott", 0}, {"core2", 0}, {"penryn", 0}, {"dunnington", 0},
        {"nehalem", 0}, {"atom", 0}, {"opteron", 0}, {"opteron_sse3", 0},
        {"barcelona", 0}, {"bobcat", 0}, {"nano", 0}, {"katmai", 0},
        {"coppermine", 0}, {"northwood", 0}, {"banias", 0}, {"athlon", 0},
        {"sandybridge", 1}, {"bulldozer", 1}, {"piledriver", 1},
        {"steamroller", 1},
        {"haswell", 2}, {"zen", 2}, {"excavator", 2},
        {"skylakex", 3}, {"cooperlake", 3}, {"sapphirerapids", 3},
    };
    if (!core) return -1;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!strcasecmp(core, known[i].name)) return known[i].level;
    return -1;
}

const char *zb_blas_better_core(const char *detected, const zb_cpu_features *f) {
    int have = zb_blas_core_level(detected);
    const char *best = zb_blas_core_for(f);
    if (have < 0 || zb_blas_core_level(best) <= have) return NULL;
    return best;
}

static bool can_switch(void) {
    const char *cfg = openblas_get_config();
    return cfg && strstr(cfg, "DYNAMIC_ARCH");
}

bool zb_blas_env_prepare(void) {
    if (getenv("OPENBLAS_CORETYPE") || !can_switch()) return false;
    zb_cpu_features f;
    zb_cpu_detect(&f);
    const char *core = openblas_get_corename();
    const char *want = zb_blas_better_core(core, &f);
    if (!want) return false;
    if (setenv("ZB_BLAS_DETECTED", core, 1) != 0) return false;
    return setenv("OPENBLAS_CORETYPE", want, 1) == 0;
}

/* -DZB_BLAS_SETTLE_THREADS=N builds the alternative measured against it
 * (OpenBLAS threading its own GEMMs; benchmarks only). */
#ifndef ZB_BLAS_SETTLE_THREADS
#define ZB_BLAS_SETTLE_THREADS 1
#endif
void zb_blas_settle(void) { openblas_set_num_threads(ZB_BLAS_SETTLE_THREADS); }

/* "OpenBLAS 0.3.21" from the build configuration string. */
static void version(char *buf, size_t cap) {
    const char *cfg = openblas_get_config();
    int n = 0, words = 0;
    while (cfg && cfg[n] && !(cfg[n] == ' ' && ++words == 2)) n++;
    snprintf(buf, cap, "%.*s", n, cfg ? cfg : "OpenBLAS");
}

void zb_blas_describe(char *buf, size_t cap) {
    char ver[64];
    version(ver, sizeof ver);
    zb_cpu_features f;
    zb_cpu_detect(&f);
    const char *core = openblas_get_corename();
    const char *user = getenv("OPENBLAS_CORETYPE");
    const char *was = getenv("ZB_BLAS_DETECTED");
    const char *better = zb_blas_better_core(core, &f);
    if (was && user && !strcasecmp(user, core))
        snprintf(buf, cap, "%s %s kernels (chosen by zbrun: OpenBLAS detected "
                 "%s on this CPU)", ver, core, was);
    else if (better && user)
        snprintf(buf, cap, "%s %s kernels (OPENBLAS_CORETYPE=%s; this CPU "
                 "runs %s: unset it or set that for speed)", ver, core, user,
                 better);
    else if (better && !can_switch())
        snprintf(buf, cap, "%s %s kernels (this CPU runs %s, but this "
                 "OpenBLAS build cannot switch: use a DYNAMIC_ARCH build)",
                 ver, core, better);
    else
        snprintf(buf, cap, "%s %s kernels", ver, core);
}
