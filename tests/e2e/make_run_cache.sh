#!/bin/bash
# make_run_cache.sh - `make run`'s measurements cached by content (issue
# 29, section 4), through `make print-VAR` and `make -n` (nothing is built
# or measured). Failed with the Makefile before that issue, which keyed the
# cache by the model's file name and date:
#   - another model of the same name (elsewhere/tiny.yaml, 4 layers and
#     older than the cache) gets other cache files than models/tiny.yaml;
#     the same bytes under another folder share them;
#   - the calibration and the profile are written under a temporary name
#     and renamed only when their command succeeded (a Ctrl-C leaves no
#     one-step profile for the next `make run`).
set -euo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "make_run_cache.sh: FAIL: $*"; exit 1; }
pv() { make --no-print-directory "$@" | sed 's/^[A-Z_]*=//'; }

mkdir "$tmp/elsewhere" "$tmp/same"
sed 's/^  layers: 8$/  layers: 4/' models/tiny.yaml >"$tmp/elsewhere/tiny.yaml"
cmp -s models/tiny.yaml "$tmp/elsewhere/tiny.yaml" && fail "the copy did not change"
cp models/tiny.yaml "$tmp/same/tiny.yaml"
touch -d 2020-01-01 "$tmp/elsewhere/tiny.yaml" "$tmp/same/tiny.yaml"
for v in RUN_CALIB RUN_PROF; do
    here=$(pv print-$v)
    other=$(pv MODEL="$tmp/elsewhere/tiny.yaml" print-$v)
    same=$(pv MODEL="$tmp/same/tiny.yaml" print-$v)
    [ "$here" != "$other" ] || fail "$v: another tiny.yaml shares $here"
    [ "$here" = "$same" ] || fail "$v: the same bytes elsewhere: $same, not $here"
done
calib=$(pv print-RUN_CALIB)
prof=$(pv print-RUN_PROF)
make -n -s "$prof" >"$tmp/n" 2>&1 || fail "make -n $prof: $(cat "$tmp/n")"
grep -q -- "-o $calib.tmp && mv $calib.tmp $calib" "$tmp/n" ||
    fail "the calibration is not written under a temporary name: $(grep calibrate "$tmp/n")"
grep -q -- "--profile $prof.tmp && mv $prof.tmp $prof" "$tmp/n" ||
    fail "the profile is not written under a temporary name: $(grep -- --profile "$tmp/n")"
echo "make_run_cache.sh: ok"
