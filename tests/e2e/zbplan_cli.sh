#!/bin/bash
# zbplan_cli.sh - end-to-end checks of the zbplan command line:
#   - `zbplan sim` JSON parses, and 1F1B / ZB-H1 match their closed forms
#     (computed here, not taken from zbplan);
#   - `--schedule all` accounts for every schedule zbplan knows;
#   - bad arguments exit 2 with one line on stderr;
#   - every tests/bad/models/NAME.yaml exits 2 printing exactly NAME.err
#     and writes no plan;
#   - planning models/tiny.yaml writes a version 1 plan.
# Usage (from anywhere): BIN=bin bash tests/e2e/zbplan_cli.sh
set -u
cd "$(dirname "$0")/../.." || exit 1
BIN=${BIN:-bin}
Z="$BIN/zbplan"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
checks=0

ok() { checks=$((checks + 1)); }
bad() { checks=$((checks + 1)); fails=$((fails + 1)); echo "FAIL: $*"; }

[ -x "$Z" ] || { echo "zbplan_cli.sh: $Z not found"; exit 1; }

# ---- sim: JSON and closed forms ------------------------------------------
# p m F B W: 1F1B longest rank span = last end = (p-1+m)(F+B+W), bubble (p-1)/(p-1+m), rank 0
# keeps min(p, m) microbatches of activations (X = 1 by default).
for c in "4 8 1 2 1" "3 5 0.5 1.25 0.75" "8 16 1 1 1" "1 4 2 3 1" "6 2 1 1 1"; do
    # shellcheck disable=SC2086  # word splitting wanted
    set -- $c
    if "$Z" sim --schedule 1f1b --stages "$1" --microbatches "$2" --cost-f "$3" \
        --cost-b "$4" --cost-w "$5" --format json >"$tmp/sim.json" 2>"$tmp/err"; then
        if python3 - "$tmp/sim.json" "$@" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
p, m = int(sys.argv[2]), int(sys.argv[3])
F, B, W = map(float, sys.argv[4:7])
want = (p - 1 + m) * (F + B + W)
assert d["schedule"] == "1f1b" and d["p"] == p and d["m"] == m and d["v"] == 1, d
assert abs(d["max_span"] - want) <= 1e-9 * want, (d["max_span"], want)
assert abs(d["last_end"] - want) <= 1e-9 * want, (d["last_end"], want)
assert abs(d["bubble_rate"] - (p - 1) / (p - 1 + m)) <= 1e-9, d["bubble_rate"]
st = d["stages"]
assert [s["rank"] for s in st] == list(range(p)), st
for s in st:
    assert set(s) == {"rank", "span", "busy", "bubble", "peak_mem"}, s
    assert abs(s["busy"] - m * (F + B + W)) <= 1e-9 * s["busy"], s
assert abs(st[0]["peak_mem"] - min(p, m)) <= 1e-9, st[0]
assert isinstance(d["solver"], str)
EOF
        then ok; else bad "sim 1f1b $c: JSON or closed form"; fi
    else
        bad "sim 1f1b $c exited $?: $(cat "$tmp/err")"
    fi
done

# ZB-H1 at F = B = W = 1: longest span 3m + (p-1) (Qi et al. 2024, section 3).
for c in "4 8" "4 12" "8 24"; do
    # shellcheck disable=SC2086  # word splitting wanted
    set -- $c
    mk=$("$Z" sim --schedule zb-h1 --stages "$1" --microbatches "$2" --format json |
         python3 -c 'import json,sys; print(json.load(sys.stdin)["max_span"])')
    want=$((3 * $2 + $1 - 1))
    if python3 -c "import sys; sys.exit(abs($mk - $want) > 1e-9)" 2>/dev/null; then ok
    else bad "sim zb-h1 p=$1 m=$2: max_span $mk, closed form $want"; fi
done

# ---- sim --schedule all: every schedule is listed or skipped -------------
known=$("$Z" sim --schedule no-such --stages 2 --microbatches 2 2>&1 |
        sed -n 's/.*must be one of \(.*\), all; got.*/\1/p' | tr -d ' ' | tr ',' '\n' | sort)
[ -n "$known" ] && ok || bad "could not read the schedule names from the error"
for pm in "4 8" "4 6" "2 1"; do
    # shellcheck disable=SC2086  # word splitting wanted
    set -- $pm
    got=$("$Z" sim --schedule all --stages "$1" --microbatches "$2" --mem-limit 4 --format json |
          python3 -c '
import json, sys
d = json.load(sys.stdin)
names = [s["schedule"] for s in d["schedules"]] + [s["schedule"] for s in d["skipped"]]
for s in d["skipped"]: assert s["reason"], s
print("\n".join(sorted(names)))')
    [ "$got" = "$known" ] && ok || bad "sim all p=$1 m=$2 JSON lists [$got], expected [$known]"
    table=$("$Z" sim --schedule all --stages "$1" --microbatches "$2" --mem-limit 4)
    for n in $known; do
        if printf '%s\n' "$table" | grep -q "^$n "; then ok
        else bad "sim all p=$1 m=$2 table lacks $n"; fi
    done
done

# ---- bad arguments: exit 2, one line on stderr, nothing on stdout --------
expect_usage_error() {
    "$Z" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    lines=$(wc -l <"$tmp/err")
    if [ $rc -eq 2 ] && [ "$lines" -eq 1 ] && [ ! -s "$tmp/out" ] &&
       grep -q '^zbplan: ' "$tmp/err"; then ok
    else bad "zbplan $*: rc $rc, $lines stderr line(s): $(cat "$tmp/err")"; fi
}
expect_usage_error sim --schedule 1f1b --stages x --microbatches 4
expect_usage_error sim --schedule 1f1b --stages 4 --microbatches 0
expect_usage_error sim --schedule 1f1b --stages 4
expect_usage_error sim --schedule 1f1b --stages 4 --microbatches 4 --cost-f -1
expect_usage_error sim --schedule 1f1b --stages 4 --microbatches 4 --format xml
expect_usage_error sim --schedule 1f1b --stages 4 --microbatches 4 --bogus
expect_usage_error sim --schedule nope --stages 4 --microbatches 4
expect_usage_error sim --schedule interleaved --stages 4 --microbatches 6
expect_usage_error
expect_usage_error models/tiny.yaml --pp x
expect_usage_error models/tiny.yaml --pp
expect_usage_error models/tiny.yaml --bogus
expect_usage_error models/tiny.yaml --tp 3
expect_usage_error models/tiny.yaml --solver magic
expect_usage_error models/tiny.yaml --schedule zb-x
expect_usage_error models/tiny.yaml --micro-batch 3
expect_usage_error models/tiny.yaml models/tiny.yaml
# calibrate: writes a model whose device zbplan reads; bad arguments exit 2
if "$Z" calibrate --model models/tiny.yaml -o "$tmp/cal.yaml" --n 64 --reps 1 -q &&
   "$Z" "$tmp/cal.yaml" --pp 2 -q -o "$tmp/cal_plan.yaml" &&
   python3 - "$tmp/cal.yaml" <<'PY'
import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))["cluster"]["device"]
assert d["name"] == "cpu" and d["peak_fp32_tflops"] > 0 and d["memory_bandwidth_gbps"] > 0
assert 0 < d["gemm_efficiency"] <= 1 and 4 <= d["gemm_tile"] <= 128
assert 0 < d["attention_efficiency"] <= 1
PY
then ok; else bad "calibrate --model did not give a plannable model"; fi
if "$Z" calibrate -o "$tmp/dev.yaml" --n 64 --reps 1 -q &&
   grep -q '^device: {name: cpu, peak_bf16_tflops: ' "$tmp/dev.yaml"; then ok
else bad "calibrate without a model: $(cat "$tmp/dev.yaml" 2>/dev/null)"; fi
expect_usage_error calibrate --reps 0
expect_usage_error calibrate --bogus
rc=0; "$Z" calibrate --model "$tmp/missing.yaml" -o "$tmp/x.yaml" >/dev/null 2>"$tmp/err" || rc=$?
[ $rc -eq 2 ] && grep -q 'missing.yaml' "$tmp/err" && [ ! -e "$tmp/x.yaml" ] && ok || bad "calibrate missing model: rc $rc $(cat "$tmp/err")"
rc=0; "$Z" calibrate --model tests/bad/models/$(ls tests/bad/models | grep -m1 yaml) -o "$tmp/x.yaml" >/dev/null 2>"$tmp/err" || rc=$?
[ $rc -eq 2 ] && grep -q '^tests/bad/models/.*:[0-9]*:[0-9]*: ' "$tmp/err" && ok || bad "calibrate bad model: rc $rc $(cat "$tmp/err")"
# forced values that cannot apply: exit 2, naming the condition and option
expect_usage_error models/tiny.yaml --pp 4 --schedule interleaved --chunks 4 -o "$tmp/na.yaml"
grep -q 'needs pp x chunks = 16 virtual stages, but the model has 8 layers.*lower --chunks or --pp' "$tmp/err" && ok || bad "chunks message: $(cat "$tmp/err")"
expect_usage_error models/tiny.yaml --pp 4 --schedule interleaved --chunks 2 --micro-batch 8 -o "$tmp/na.yaml"
grep -q 'divisible by stages.*change --pp, --micro-batch or --chunks' "$tmp/err" && ok || bad "m % p message: $(cat "$tmp/err")"
expect_usage_error models/tiny.yaml --pp 8 --schedule zb-v -o "$tmp/na.yaml"
grep -q 'lower --pp$' "$tmp/err" && ok || bad "zb-v message: $(cat "$tmp/err")"
[ ! -e "$tmp/na.yaml" ] && ok || bad "a plan was written for an inapplicable schedule"
if [ "$(grep -c '' <<<"$("$Z" sim --schedule 1f1b --stages x --microbatches 4 2>&1)")" = 1 ] &&
   [ "$("$Z" sim --schedule 1f1b --stages x --microbatches 4 2>&1)" = \
     "zbplan: --stages must be a positive integer, got 'x'" ]; then ok
else bad "--stages x message"; fi

# ---- bad model files: exactly the expected line, exit 2, no plan ---------
nbad=0
for f in tests/bad/models/*.yaml; do
    [ -e "$f" ] || continue
    nbad=$((nbad + 1))
    want="${f%.yaml}.err"
    [ -f "$want" ] || { bad "$f has no $(basename "$want")"; continue; }
    rm -f "$tmp/bad_plan.yaml"
    "$Z" "$f" -o "$tmp/bad_plan.yaml" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ $rc -ne 2 ]; then bad "$f: exit $rc, expected 2"; continue; fi
    if ! cmp -s <(cat "$tmp/err") <(cat "$want"; [ -n "$(tail -c1 "$want")" ] && echo); then
        bad "$f: printed '$(cat "$tmp/err")', expected '$(cat "$want")'"; continue
    fi
    if [ -e "$tmp/bad_plan.yaml" ]; then bad "$f: wrote a plan"; continue; fi
    ok
done

# ---- planning tiny ---------------------------------------------------------
if "$Z" models/tiny.yaml -o "$tmp/tiny.yaml" >"$tmp/out" 2>"$tmp/err" &&
   [ -f "$tmp/tiny.yaml" ] && grep -qx 'version: 1' "$tmp/tiny.yaml"; then ok
else bad "planning models/tiny.yaml: $(cat "$tmp/err")"; fi
if "$Z" models/tiny.yaml -q --dp 1 --tp 1 --pp 4 --schedule zb-h1 -o "$tmp/t4.yaml" >"$tmp/out" 2>&1 &&
   [ ! -s "$tmp/out" ] && grep -qx 'version: 1' "$tmp/t4.yaml" &&
   grep -qx '  pp: 4' "$tmp/t4.yaml" && grep -qx '  name: zb-h1' "$tmp/t4.yaml"; then ok
else bad "zbplan -q --pp 4 --schedule zb-h1: $(cat "$tmp/out")"; fi
if "$Z" models/tiny.yaml --pp 4 --compare -o "$tmp/c.yaml" >"$tmp/out" 2>&1 &&
   grep -q 'all schedules for' "$tmp/out"; then ok
else bad "zbplan --compare: $(cat "$tmp/out")"; fi
"$Z" --help >"$tmp/out" 2>&1 && grep -q '^usage: zbplan' "$tmp/out" && ok || bad "zbplan --help"
"$Z" sim --help >"$tmp/out" 2>&1 && grep -q '^usage: zbplan sim' "$tmp/out" && ok || bad "zbplan sim --help"

echo "zbplan_cli.sh: $checks checks, $fails failed ($nbad bad model files)"
[ $fails -eq 0 ]
