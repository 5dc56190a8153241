#!/bin/bash
# zbrun_blas.sh - OpenBLAS kernel choice end to end (executor/host/blas_env.h):
#   - a value the user sets is kept, and the blas: line says what the CPU
#     would run instead: zbrun's own choice from cpuid (zb_blas_core_for),
#     read here from that line, never OpenBLAS's detection on this machine
#     (the two may differ: OpenBLAS 0.3.21 runs Cooperlake on an AMD EPYC
#     with AVX512-BF16, zbrun asks for SkylakeX there);
#   - a stand-in for a virtualised CPU: a preloaded library makes
#     openblas_get_corename() answer "Prescott" (OpenBLAS's fallback) while
#     OPENBLAS_CORETYPE is unset; zbrun must switch to that same choice, say
#     so on its blas: line, and train bitwise as a run given
#     OPENBLAS_CORETYPE=<that kernel> by hand.
# The switch part is skipped (with a line) where zbrun's choice is no
# better than Prescott (a CPU without AVX). Holds with OPENBLAS_CORETYPE
# set or unset in the caller's environment.
# Usage (from anywhere): BIN=bin bash tests/e2e/zbrun_blas.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() { fails=$((fails + 1)); echo "FAIL: $*"; }

"$BIN/zbplan" models/tiny.yaml -q --dp 1 --tp 1 --pp 1 -o "$tmp/plan.yaml"
OPENBLAS_CORETYPE=Prescott "$BIN/zbrun" "$tmp/plan.yaml" --steps 1 --threads 1 >"$tmp/user.out"
user=$(grep '^blas: ' "$tmp/user.out")
grep -q "^blas: OpenBLAS .* Prescott kernels" <<<"$user" || bad "user value not kept: $user"
core=$(sed -n 's/.*(OPENBLAS_CORETYPE=Prescott; this CPU runs \([A-Za-z0-9]*\):.*/\1/p' <<<"$user")
if [ -z "$core" ]; then
    grep -q "(OPENBLAS_CORETYPE" <<<"$user" && bad "user value line unreadable: $user"
    [ "$fails" -eq 0 ] || exit 1
    echo "zbrun_blas.sh: switch skipped: zbrun's choice on this CPU is no better than Prescott ($user)"
    exit 0
fi
case "$core" in
    Sandybridge|Haswell|Zen|SkylakeX|Cooperlake) ;;
    *) bad "zbrun's choice '$core' is not a kernel it may choose ($user)" ;;
esac

cat >"$tmp/fake.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
/* OpenBLAS's fallback answer unless a core type was asked for */
char *openblas_get_corename(void) {
    char *(*real)(void) = (char *(*)(void))dlsym(RTLD_NEXT, "openblas_get_corename");
    return getenv("OPENBLAS_CORETYPE") || !real ? real() : (char *)"Prescott";
}
C
cc -shared -fPIC -o "$tmp/fake.so" "$tmp/fake.c" -ldl

# (an ASan build wants its runtime first; the stand-in is harmless)
env -u OPENBLAS_CORETYPE LD_PRELOAD="$tmp/fake.so" \
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" "$BIN/zbrun" "$tmp/plan.yaml" \
    --steps 3 --threads 1 >"$tmp/switched.out"
grep -q "^blas: OpenBLAS .* $core kernels (chosen by zbrun: OpenBLAS detected Prescott on this CPU)" \
    "$tmp/switched.out" || bad "no switch: $(grep '^blas' "$tmp/switched.out")"
OPENBLAS_CORETYPE=$core "$BIN/zbrun" "$tmp/plan.yaml" --steps 3 --threads 1 >"$tmp/byhand.out"
[ "$(grep '^step ' "$tmp/switched.out" | cut -d' ' -f1-8)" = \
  "$(grep '^step ' "$tmp/byhand.out" | cut -d' ' -f1-8)" ] || bad "switched run differs from OPENBLAS_CORETYPE=$core"

[ "$fails" -eq 0 ] && echo "zbrun_blas.sh: ok" || { echo "zbrun_blas.sh: $fails failure(s)"; exit 1; }
