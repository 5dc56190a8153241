#!/bin/bash
# cli_agree.sh - the command lines behave as docs/ says (issue 22):
#   - a mistyped option gets the nearest one in all three programs and in
#     zbplan sim / calibrate; a missing file the nearest name in its folder;
#   - zbrun given a model file says so and names the zbplan command;
#   - zbplan --dp that leaves each data-parallel rank fewer sequences than
#     the model's micro_batch blames training.micro_batch;
#   - --quiet is -q in zbplan, calibrate and zbrun; --version answers after
#     sim and calibrate as for zbplan itself;
#   - calibrate --help names every measurement and option;
#   - an output that cannot be written is named as asked, not as its
#     temporary file;
#   - README's profile-then-replan commands replan the measured pipeline.
# Every error: exit 2 (bad input) with one line on stderr.
# Usage (from anywhere): BIN=bin bash tests/e2e/cli_agree.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() { fails=$((fails + 1)); echo "FAIL: $*"; }

# expect RC LINE-REGEX what -- command...: exit RC and stderr one line matching
expect() {
    local rc=$1 re=$2 what=$3; shift 4
    set +e; "$@" >"$tmp/o" 2>"$tmp/e"; local got=$?; set -e
    [ "$got" -eq "$rc" ] || { bad "$what: exit $got, want $rc ($(cat "$tmp/e"))"; return; }
    [ "$(wc -l <"$tmp/e")" -eq 1 ] || { bad "$what: stderr not one line: $(cat "$tmp/e")"; return; }
    grep -qE "$re" "$tmp/e" || bad "$what: stderr '$(cat "$tmp/e")' does not match '$re'"
}

"$BIN/zbplan" models/tiny.yaml -q --dp 1 --tp 1 --pp 2 --schedule 1f1b -o "$tmp/plan.yaml"

expect 2 "^zbrun: unknown option '--step'; did you mean '--steps'\? \(see zbrun --help\)$" \
    "zbrun --step" -- "$BIN/zbrun" "$tmp/plan.yaml" --step 3
expect 2 "did you mean '--steps'\?" "zbrun --step=3" -- "$BIN/zbrun" "$tmp/plan.yaml" --step=3
expect 2 "^zbrun: unknown option '--frobnicate' \(see zbrun --help\)$" \
    "far from every option: no guess" -- "$BIN/zbrun" "$tmp/plan.yaml" --frobnicate
expect 2 "^zbplan: unknown option '--micro-bach'; did you mean '--micro-batch'\?" \
    "zbplan --micro-bach" -- "$BIN/zbplan" models/tiny.yaml --micro-bach 2
expect 2 "did you mean '--stages'\? \(see zbplan sim --help\)" \
    "sim --stage" -- "$BIN/zbplan" sim --stage 3
expect 2 "did you mean '--reps'\? \(see zbplan calibrate --help\)" \
    "calibrate --rep" -- "$BIN/zbplan" calibrate --rep 3
expect 2 "did you mean '--svg'\?" "zbreport --sv" -- "$BIN/zbreport" --sv x.svg
expect 2 "^models/tiny\.yml: cannot open: No such file or directory \(did you mean 'models/tiny\.yaml'\?\)$" \
    "mistyped model path" -- "$BIN/zbplan" models/tiny.yml
cp "$tmp/plan.yaml" "$tmp/run-plan.yaml"
expect 2 "^$tmp/run-plan\.yml: cannot open: .*\(did you mean '$tmp/run-plan\.yaml'\?\)$" \
    "mistyped plan path" -- "$BIN/zbrun" "$tmp/run-plan.yml"
expect 2 "^models/tiny\.yaml:1:1: this is a model, not a plan; plan it first: zbplan models/tiny\.yaml -o plan\.yaml && zbrun plan\.yaml$" \
    "zbrun on a model" -- "$BIN/zbrun" models/tiny.yaml
expect 2 "^zbplan: --dp 16 leaves 1 sequence\(s\) of training\.global_batch 16 per data-parallel rank, which training\.micro_batch: 2 \(models/tiny\.yaml\) does not divide" \
    "--dp 16 on tiny" -- "$BIN/zbplan" models/tiny.yaml --dp 16 -o "$tmp/x.yaml"
expect 2 "^zbplan: --dp 3 does not divide training\.global_batch 16" \
    "--dp 3 on tiny" -- "$BIN/zbplan" models/tiny.yaml --dp 3 -o "$tmp/x.yaml"
[ ! -e "$tmp/x.yaml" ] || bad "a refused plan was written"
"$BIN/zbplan" models/tiny.yaml --dp 8 --micro-batch 1 --pp 1 -q -o "$tmp/x.yaml" ||
    bad "--dp 8 --micro-batch 1 refused"

# --quiet and --version alike everywhere
[ -z "$("$BIN/zbplan" models/tiny.yaml --quiet --pp 2 -o "$tmp/q.yaml")" ] || bad "zbplan --quiet printed"
[ -z "$("$BIN/zbrun" "$tmp/plan.yaml" --quiet --steps 1 --threads 1)" ] || bad "zbrun --quiet printed"
v=$("$BIN/zbplan" --version)
[ "$("$BIN/zbplan" sim --version)" = "$v" ] || bad "zbplan sim --version"
[ "$("$BIN/zbplan" calibrate --version)" = "$v" ] || bad "zbplan calibrate --version"
for w in LayerNorm GELU attention triad --reps --quiet --model --threads; do
    "$BIN/zbplan" calibrate --help | grep -q -- "$w" || bad "calibrate --help does not mention $w"
done
for w in ZB_CUDA_SHARE ZB_CUDA_SYNC --quiet; do
    "$BIN/zbrun" --help | grep -q -- "$w" || bad "zbrun --help does not mention $w"
done

# an unwritable output is named as asked, refused before planning (exit 2,
# docs/files.md)
expect 2 "^zbplan: -o $tmp/nodir/p\.yaml: cannot create: No such file or directory$" \
    "unwritable plan" -- "$BIN/zbplan" models/tiny.yaml --pp 2 -q -o "$tmp/nodir/p.yaml"

# README: profile, then replan the same pipeline into the plan that ran
mkdir -p "$tmp/out"
# (zbrun's default threads per rank, the planner's: a profile covers only
# candidates with the threads per rank it ran with)
"$BIN/zbrun" "$tmp/plan.yaml" --steps 2 -q --profile "$tmp/out/profile.yaml"
"$BIN/zbplan" models/tiny.yaml --dp 1 --tp 1 --pp 2 --profile "$tmp/out/profile.yaml" -o "$tmp/out/plan.yaml" >"$tmp/o"
grep -qE "^wrote $tmp/out/plan\.yaml: dp 1 tp 1 pp 2 .*costs measured" "$tmp/o" ||
    bad "replan: $(tail -1 "$tmp/o")"
grep -q 'bin/zbplan models/tiny.yaml --dp 1 --tp 1 --pp 2 --profile out/profile.yaml -o out/plan.yaml' README.md ||
    bad "README's replan command is not the one tested here"

[ "$fails" -eq 0 ] && echo "cli_agree.sh: ok" || { echo "cli_agree.sh: $fails failure(s)"; exit 1; }
