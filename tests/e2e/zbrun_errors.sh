#!/bin/bash
# zbrun_errors.sh - zbrun refuses bad input before computing anything:
#   - bad plans made from a good one (truncated, wrong version, unknown key,
#     a rank's action list missing a pass, a missing file) exit 2 with
#     exactly one line on stderr of the form "FILE:LINE[:COL]: ..." (the
#     missing file: "FILE: ..."), and print no step line;
#   - bad command lines (unknown option, bad numbers, no plan, two plans,
#     --backend cuda without CUDA or without a device, an unknown backend) exit 2 with
#     one "zbrun: ..." line on stderr;
#   - --help exits 0.
# Usage (from anywhere): BIN=bin bash tests/e2e/zbrun_errors.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() { fails=$((fails + 1)); echo "FAIL: $*"; }

[ -x "$BIN/zbplan" ] && [ -x "$BIN/zbrun" ] || { echo "zbrun_errors.sh: build $BIN/zbplan and $BIN/zbrun first"; exit 1; }

good="$tmp/good.yaml"
"$BIN/zbplan" models/tiny.yaml -o "$good" -q --pp 2 --schedule 1f1b

# run zbrun ARGS...; sets rc, and the files out/err
run() {
    rc=0
    "$BIN/zbrun" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
}

# expect_plan_error FILE REGEX: exit 2, one stderr line starting "FILE:LINE"
# and matching REGEX, no training output.
expect_plan_error() {
    local file=$1 want=$2
    run "$file" --steps 1 --threads 1
    local lines
    lines=$(wc -l <"$tmp/err")
    if [ "$rc" -eq 2 ] && [ "$lines" -eq 1 ] &&
        grep -Eq "^$file:[0-9]+(:[0-9]+)?: " "$tmp/err" &&
        grep -Eq "$want" "$tmp/err" && ! grep -q '^step ' "$tmp/out"; then :
    else
        bad "$(basename "$file"): rc $rc, $lines line(s): $(cat "$tmp/err")"
    fi
}

# A good plan runs (the corruptions below are what make the others fail).
run "$good" --steps 1 --threads 1
[ "$rc" -eq 0 ] && grep -q '^step 1/1 ' "$tmp/out" || bad "good plan: rc $rc $(cat "$tmp/err")"

# truncated in the middle of the schedule
n=$(grep -n '^schedule:' "$good" | cut -d: -f1)
head -n $((n + 4)) "$good" | head -c -5 >"$tmp/truncated.yaml"
expect_plan_error "$tmp/truncated.yaml" '.'

# wrong version
sed 's/^version: 1$/version: 99/' "$good" >"$tmp/version.yaml"
expect_plan_error "$tmp/version.yaml" 'version'

# unknown key at the top
{ cat "$good"; echo "bogus_key: 1"; } >"$tmp/unknown.yaml"
expect_plan_error "$tmp/unknown.yaml" "bogus_key"

# rank 0's action list loses the backward (B or BW) of microbatch 0
python3 - "$good" "$tmp/missing.yaml" <<'EOF'
import re, sys
text = open(sys.argv[1]).read().split("\n")
for i, line in enumerate(text):
    if re.match(r"^\s*- \[", line):          # first rank's flow list
        text[i] = re.sub(r"\bBW?0, ", "", line, count=1)
        assert text[i] != line, line
        break
else:
    raise SystemExit("no action list found")
open(sys.argv[2], "w").write("\n".join(text))
EOF
expect_plan_error "$tmp/missing.yaml" '.'

# a plan that does not exist: "FILE: ..." and exit 2
run "$tmp/nope.yaml"
[ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "nope.yaml" "$tmp/err" ||
    bad "missing plan: rc $rc $(cat "$tmp/err")"

# data: a file that does not exist, a file shorter than one sequence; each a
# one-line error naming the file (the plan's key for a missing one), exit 2,
# nothing trained. An empty text path trains on the built-in corpus with the
# same losses as models/data/corpus.txt; a relative path is also looked for
# beside the plan.
expect_data_error() {
    local file=$1 want=$2
    run "$file" --steps 1 --threads 1
    [ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q -- "$want" "$tmp/err" &&
        ! grep -q '^step ' "$tmp/out" || bad "$(basename "$file"): rc $rc $(cat "$tmp/err")"
}
sed 's|^    path: .*corpus.txt$|    path: ""|' "$good" >"$tmp/nodata.yaml"
run "$tmp/nodata.yaml" --steps 2 --threads 1
cp "$tmp/out" "$tmp/builtin.out"
run "$good" --steps 2 --threads 1
[ "$rc" -eq 0 ] && [ "$(grep '^step' "$tmp/builtin.out" | cut -d' ' -f1-4)" = \
    "$(grep '^step' "$tmp/out" | cut -d' ' -f1-4)" ] || bad "empty text path: not the built-in corpus"
sed "s|^    path: .*corpus.txt$|    path: $tmp/absent.txt|" "$good" >"$tmp/absent.yaml"
expect_data_error "$tmp/absent.yaml" "absent.yaml:[0-9]*:[0-9]*: training.data.path '$tmp/absent.txt' not found"
mkdir -p "$tmp/d" && cp models/data/corpus.txt "$tmp/d/c.txt"
sed "s|^    path: .*corpus.txt$|    path: d/c.txt|" "$good" >"$tmp/beside.yaml"
run "$tmp/beside.yaml" --steps 1 --threads 1
[ "$rc" -eq 0 ] || bad "a path relative to the plan's folder: rc $rc $(cat "$tmp/err")"
printf 'too short' >"$tmp/short.txt"
sed "s|^    path: .*corpus.txt$|    path: $tmp/short.txt|" "$good" >"$tmp/short.yaml"
expect_data_error "$tmp/short.yaml" "$tmp/short.txt"

# a bf16 plan runs in fp32 on the cpu backend, and zbrun says so (the
# fingerprint would refuse the hand-edited precision: drop it)
sed -e 's/^  precision: fp32$/  precision: bf16/' -e '/^fingerprint:/d' "$good" >"$tmp/bf16.yaml"
run "$tmp/bf16.yaml" --steps 1 --threads 1
[ "$rc" -eq 0 ] && grep -q '^note: the cpu backend computes in fp32' "$tmp/out" ||
    bad "bf16 plan: rc $rc, no fp32 note: $(head -3 "$tmp/out")"
run "$good" --steps 1 --threads 1
! grep -q '^note: the cpu backend computes in fp32' "$tmp/out" || bad "fp32 plan printed the fp32 note"

# ---- command lines ----------------------------------------------------------
expect_usage_error() {
    run "$@"
    if [ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q '^zbrun: ' "$tmp/err" &&
        ! grep -q '^step ' "$tmp/out"; then :
    else bad "zbrun $*: rc $rc: $(cat "$tmp/err")"; fi
}
expect_usage_error "$good" --bogus
expect_usage_error "$good" --steps 0
expect_usage_error "$good" --steps x
expect_usage_error "$good" --threads -1
expect_usage_error "$good" --checkpoint-every
expect_usage_error "$good" --backend tpu
expect_usage_error
expect_usage_error "$good" "$good"
expect_usage_error "$good" --backend cuda
grep -Eq 'built without CUDA|no CUDA device visible' "$tmp/err" ||
    bad "--backend cuda message: $(cat "$tmp/err")"
run "$good" --backend auto --steps 1 --threads 1 -q
[ "$rc" -eq 0 ] && [ ! -s "$tmp/out" ] || bad "--backend auto -q: rc $rc, output: $(cat "$tmp/out")"
# auto says what it chose (cpu here: no CUDA device, or no CUDA in the build)
run "$good" --backend auto --steps 1 --threads 1
[ "$rc" -eq 0 ] && grep -Eq '^backend auto: (cpu|cuda) \(' "$tmp/out" ||
    bad "--backend auto did not print its choice: $(head -3 "$tmp/out")"
run --help
[ "$rc" -eq 0 ] && grep -q '^usage: zbrun PLAN' "$tmp/out" || bad "--help: rc $rc"

if [ "$fails" -ne 0 ]; then
    echo "zbrun_errors.sh: $fails check(s) failed"
    exit 1
fi
echo "zbrun_errors.sh: ok"
