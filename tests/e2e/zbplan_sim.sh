#!/bin/bash
# zbplan_sim.sh - end-to-end checks of `zbplan sim` beyond the CLI basics
# (tests/e2e/zbplan_cli.sh):
#   - `--solver ilp --format json` prints JSON only: issue 19's command,
#     where GLPK printed "Constructing initial basis..." before the JSON;
#   - --export / --import (PyTorch's compute-only CSV): export -> import ->
#     export is byte-identical and the imported order simulates to the same
#     span; bad files, deadlocks and memory-limit violations exit 2 with one
#     line naming the file and line, or the rank and action;
#   - --costs FILE: one row per rank with the option values gives the same
#     output as the options, for every schedule; per-rank costs time 1F1B
#     as computed by hand; bad files exit 2 naming file and line.
# Usage (from anywhere): BIN=bin bash tests/e2e/zbplan_sim.sh
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

[ -x "$Z" ] || { echo "zbplan_sim.sh: $Z not found"; exit 1; }

# ---- GLPK silent: stdout is exactly one JSON document ---------------------
if "$Z" sim --schedule zb-auto --stages 6 --microbatches 11 --cost-f 1308 \
    --cost-b 1570 --cost-w 2174 --cost-comm 278 --mem-f 1000 --mem-w 270 \
    --mem-limit 3000 --solver ilp --time-limit 10 --format json \
    >"$tmp/ilp.json" 2>"$tmp/err"; then
    if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["solver"].startswith("ilp")' \
        "$tmp/ilp.json" 2>"$tmp/perr"; then ok
    else bad "sim --solver ilp --format json: stdout is not one JSON document: $(head -c 200 "$tmp/ilp.json") $(cat "$tmp/perr")"; fi
else
    bad "sim --solver ilp exited $?: $(cat "$tmp/err")"
fi

# ---- PyTorch CSV round trip ----------------------------------------------
for sched in zb-v zb-h1 1f1b zb-auto-v; do
    args=(--stages 4 --microbatches 7 --cost-f 1 --cost-b 2 --cost-w 1 --cost-comm 0.1 --mem-limit 4)
    if "$Z" sim --schedule "$sched" "${args[@]}" --export "$tmp/a.csv" --format json >"$tmp/a.json" &&
       "$Z" sim --import "$tmp/a.csv" "${args[@]}" --export "$tmp/b.csv" --format json >"$tmp/b.json" &&
       cmp -s "$tmp/a.csv" "$tmp/b.csv" &&
       python3 -c 'import json,sys; a,b=(json.load(open(f)) for f in sys.argv[1:]); assert a["max_span"]==b["max_span"] and a["stages"]==b["stages"]' "$tmp/a.json" "$tmp/b.json"
    then ok; else bad "sim $sched: CSV export -> import -> export not identical"; fi
done

# ---- bad imports: exit 2, one line ---------------------------------------
expect_import_error() { # file-content expected-substring [extra args]
    printf '%b' "$1" >"$tmp/bad.csv"
    local out rc
    out=$("$Z" sim --import "$tmp/bad.csv" "${@:3}" 2>&1 >/dev/null); rc=$?
    if [ "$rc" = 2 ] && [ "$(grep -c '' <<<"$out")" = 1 ] && grep -qF "$2" <<<"$out"; then ok
    else bad "import '$1': exit $rc, '$out', expected '$2'"; fi
}
expect_import_error '0F0,0I0,0W0\r\n0F0,q\r\n' "bad.csv:2:5: bad action 'q'"
expect_import_error '0F0,0W0,0I0\n' "rank 0: action 1 (W mb 0 chunk 0): deadlock"
expect_import_error '0F0,0F1,0I0,0W0,0I1,0W1\n' "rank 0: action 1 (F mb 1 chunk 0): memory 2 over the limit 1.5" --mem-limit 1.5
expect_import_error '0F0,0I0,0W0\n' "give --schedule or --import" --schedule zb-v
"$Z" sim --import "$tmp/nope.csv" >/dev/null 2>&1; [ $? = 2 ] && ok || bad "sim --import of a missing file: not exit 2"

# ---- --costs: per-stage costs ---------------------------------------------
printf '# F,B,W,comm,mem_f,mem_w\n1032,2482,1712,180,1000,846\n\n 1032, 2482, 1712, 180, 1000, 846\n1032,2482,1712,180,1000,846\n' >"$tmp/u.csv"
flags=(--cost-f 1032 --cost-b 2482 --cost-w 1712 --cost-comm 180 --mem-f 1000 --mem-w 846)
for sched in gpipe 1f1b interleaved zb-h1 zb-h2 zb-v zb-auto zb-2p zb-auto-v v-half v-min; do
    common=(--schedule "$sched" --stages 3 --microbatches 6 --mem-limit 3000 --format json)
    "$Z" sim "${common[@]}" --costs "$tmp/u.csv" >"$tmp/c1.json" 2>&1
    "$Z" sim "${common[@]}" "${flags[@]}" >"$tmp/c2.json" 2>&1
    if python3 -c 'import json,sys; a,b=(json.load(open(f)) for f in sys.argv[1:]); [x.pop("solve",None) for x in (a,b)]; assert a==b' "$tmp/c1.json" "$tmp/c2.json" 2>/dev/null
    then ok; else bad "sim $sched --costs (uniform rows) differs from the options: $(head -c 300 "$tmp/c1.json")"; fi
done
# p 2, m 1, 1F1B: F0 [0,1], comm 0.5, F1 [1.5,5.5], BW1 [5.5,16.5], comm 0.5,
# BW0 [17,22]: longest span 22 (rank 0), rank 1's 15
printf '1,2,3,0.5,1,1\n4,5,6,0.5,1,1\n' >"$tmp/r.csv"
if "$Z" sim --schedule 1f1b --stages 2 --microbatches 1 --costs "$tmp/r.csv" --format json |
   python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["max_span"]==22 and d["stages"][1]["span"]==15, d'
then ok; else bad "sim 1f1b --costs per rank: span not 22 / 15"; fi
expect_costs_error() { # content expected-substring
    printf '%b' "$1" >"$tmp/badc.csv"
    local out rc
    out=$("$Z" sim --schedule 1f1b --stages 2 --microbatches 2 --costs "$tmp/badc.csv" 2>&1 >/dev/null); rc=$?
    if [ "$rc" = 2 ] && [ "$(grep -c '' <<<"$out")" = 1 ] && grep -qF "$2" <<<"$out"; then ok
    else bad "costs '$1': exit $rc, '$out', expected '$2'"; fi
}
expect_costs_error '1,2,3\n1,2,3,0,1,1\n' "badc.csv:1: expected 6 comma-separated numbers"
expect_costs_error '1,2,3,0,1,1\n1,2,3,0,1,nan\n' "badc.csv:2: mem_w = nan: must be finite"
expect_costs_error '1,2,3,0,1,1,7\n1,2,3,0,1,1\n' "badc.csv:1: expected 8 comma-separated numbers (F, B, W, comm, mem_f, mem_w, S, T), got 7"
expect_costs_error '1,2,3,0,1,1,7,8,9\n' "badc.csv:1: more than 8 numbers"
expect_costs_error '1,2,3,0,1,1,7,8\n1,2,3,0,1,1\n' "badc.csv:2: 6 numbers, the first line has 8"
expect_costs_error '1,2,3,0,1,1,7,8\n1,2,3,0,1,1,7,9\n' "badc.csv:2: S, T = 7, 9 differ from the first line's 7, 8"

# Vocabulary passes (docs/schedules.md, "Vocabulary passes"): p = 2, m = 1,
# F = B = W = 1, S 0.5, T 1, comm 0.25, 1F1B (fused BW): r0 F0 [0,1]; r1 F0
# [1.25,2.25] S0 [2.25,2.75]; r0 S0 after X's broadcast [2.5,3]; C1 at
# 3.25: both T0 [3.25,4.25]; variant 1: r1 BW0 after C2 4.5 -> [4.5,6.5];
# r0 BW0 [6.75,8.75]; variant 2: r1 BW0 waits for C1 only but follows T0
# on its list: the same.
out=$("$Z" sim --schedule 1f1b --stages 2 --microbatches 1 --cost-comm 0.25 \
      --vocab-parallel 1 --cost-s 0.5 --cost-t 1 --mem-s 3 --timeline 2>&1); rc=$?
if [ "$rc" = 0 ] && grep -qx '     0 F0 0-1 S0 2.5-3 T0 3.25-4.25 BW0 6.75-8.75' <<<"$out" &&
   grep -qx '     1 F0 1.25-2.25 S0 2.25-2.75 T0 3.25-4.25 BW0 4.5-6.5' <<<"$out" &&
   grep -q 'vocab-parallel 1' <<<"$out" &&
   grep -qE '^ +0 +8.75 +4.5 +0.4857 +4$' <<<"$out"; then ok
else bad "vocab timeline: exit $rc: $out"; fi
printf '1,1,1,0.25,1,0.5,0.5,1\n1,1,1,0.25,1,0.5,0.5,1\n' >"$tmp/vc.csv"
out=$("$Z" sim --schedule 1f1b --stages 2 --microbatches 1 --costs "$tmp/vc.csv" \
      --vocab-parallel 1 --format json 2>&1); rc=$?
if [ "$rc" = 0 ] && grep -q '"max_span": 8.75' <<<"$out" && grep -q '"vocab_parallel": 1' <<<"$out"; then ok
else bad "vocab costs file: exit $rc: $out"; fi
expect_sim_error() { # expected-substring args...
    local want=$1 out rc; shift
    out=$("$Z" sim "$@" 2>&1 >/dev/null); rc=$?
    if [ "$rc" = 2 ] && [ "$(grep -c '' <<<"$out")" = 1 ] && grep -qF -- "$want" <<<"$out"; then ok
    else bad "sim $*: exit $rc, '$out', expected '$want'"; fi
}
expect_sim_error "needs at least 2 pipeline ranks" --schedule 1f1b --stages 1 --microbatches 2 --vocab-parallel 1
expect_sim_error "need --vocab-parallel 1 or 2" --schedule 1f1b --stages 2 --microbatches 2 --cost-t 1
expect_sim_error "--vocab-parallel must be one of none, 1, 2" --schedule 1f1b --stages 2 --microbatches 2 --vocab-parallel 3
expect_sim_error "has no vocabulary passes (S, T)" --schedule 1f1b --stages 2 --microbatches 2 --vocab-parallel 2 --export "$tmp/v.csv"
expect_costs_error '1,2,3,0,1,1\n' "badc.csv: 1 stages, but the schedule has 2"
expect_costs_error '# nothing\n' "badc.csv:1: no stages"

echo "zbplan_sim.sh: $checks checks, $fails failed"
[ "$fails" = 0 ]
