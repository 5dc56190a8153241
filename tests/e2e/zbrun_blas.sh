#!/bin/bash
# zbrun_blas.sh - OpenBLAS kernel choice end to end (executor/host/blas_env.h):
#   - a stand-in for a virtualised CPU: a preloaded library makes
#     openblas_get_corename() answer "Prescott" (OpenBLAS's fallback) while
#     OPENBLAS_CORETYPE is unset; zbrun must switch to the best kernel the
#     CPU runs, say so on its blas: line, and train bitwise as a run given
#     OPENBLAS_CORETYPE=<that kernel> by hand;
#   - a value the user sets is kept, and the blas: line says what the CPU
#     would run instead.
# Skipped (exit 0 with a line) on CPUs without AVX, where Prescott-class
# kernels are the best anyway.
# Usage (from anywhere): BIN=bin bash tests/e2e/zbrun_blas.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() { fails=$((fails + 1)); echo "FAIL: $*"; }

"$BIN/zbplan" models/tiny.yaml -q --dp 1 --tp 1 --pp 1 -o "$tmp/plan.yaml"
line=$(env -u OPENBLAS_CORETYPE "$BIN/zbrun" "$tmp/plan.yaml" --steps 1 --threads 1 | grep '^blas: ')
core=$(sed -n 's/^blas: OpenBLAS [^ ]* \([A-Za-z0-9]*\) kernels.*/\1/p' <<<"$line")
case "$core" in
    Sandybridge|Haswell|Zen|SkylakeX|Cooperlake|SapphireRapids) ;;
    *) echo "zbrun_blas.sh: skipped: OpenBLAS runs '$core' here ($line)"; exit 0 ;;
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

OPENBLAS_CORETYPE=Prescott "$BIN/zbrun" "$tmp/plan.yaml" --steps 1 --threads 1 >"$tmp/user.out"
grep -q "^blas: OpenBLAS .* Prescott kernels (OPENBLAS_CORETYPE=Prescott; this CPU runs [A-Za-z]*" \
    "$tmp/user.out" || bad "user value: $(grep '^blas' "$tmp/user.out")"

[ "$fails" -eq 0 ] && echo "zbrun_blas.sh: ok" || { echo "zbrun_blas.sh: $fails failure(s)"; exit 1; }
