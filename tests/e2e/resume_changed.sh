#!/bin/bash
# resume_changed.sh - nothing silently wrong on resume (issue 29, section
# 4). Each case failed with the zb before that issue:
#   - --resume --resume-changed (documented for --steps and the seed) with
#     another training.global_batch, data file or data order: refused,
#     exit 2, the line naming the field; --steps alone still accepted;
#   - the --steps refusal names the first step left whose learning rate
#     differs, with both values (it said "from step 3 would be 0.0012
#     instead of 0.0012" in the warm-up, where the two agree).
# Usage (from anywhere): BIN=bin bash tests/e2e/resume_changed.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BIN=${BIN:-bin}
case "$BIN" in /*) ;; *) BIN=$ROOT/$BIN ;; esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0 checks=0
ok() { checks=$((checks + 1)); }
bad() { checks=$((checks + 1)); fails=$((fails + 1)); echo "FAIL: $*"; }

[ -x "$BIN/zbplan" ] && [ -x "$BIN/zbrun" ] || { echo "resume_changed.sh: build $BIN first"; exit 1; }

run() {
    rc=0
    timeout -s KILL 120 "$BIN/zbrun" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
}
expect() {
    if [ "$rc" -eq "$1" ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] &&
        grep -Eq -- "$2" "$tmp/err" && ! grep -q '^step ' "$tmp/out"; then ok
    else bad "$3: exit $rc (want $1), stderr: $(head -c 400 "$tmp/err")"; fi
}

cd "$tmp"
cp "$ROOT/models/data/corpus.txt" other.txt
cat >m.yaml <<YAML
model: {layers: 2, hidden: 16, heads: 2, seq_len: 16, vocab: 256}
training:
  global_batch: 4
  micro_batch: 1
  steps: 100
  optimizer: {lr: 2.0e-3, schedule: cosine, warmup_steps: 5}
cluster: {nodes: 1, devices_per_node: 2, device: cpu}
YAML
P=(--pp 2 --schedule 1f1b -q)
"$BIN/zbplan" m.yaml "${P[@]}" -o p.yaml &&
    "$BIN/zbplan" m.yaml "${P[@]}" --set training.global_batch=8 -o p8.yaml ||
    { echo "FAIL: zbplan"; exit 1; }
A=(--threads 1 -q --checkpoint-dir ck --resume)
"$BIN/zbrun" p.yaml --threads 1 -q --steps 2 --checkpoint-every 2 --checkpoint-dir ck ||
    { echo "FAIL: the first run"; exit 1; }

# ---- what --resume-changed does not cover ----------------------------------
run p8.yaml "${A[@]}" --steps 4 --resume-changed
expect 2 "^ck/latest.yaml: the checkpoint was trained with training.global_batch 4, the plan has 8" "another global_batch"
run p.yaml "${A[@]}" --steps 4 --resume-changed --set training.data.path="$tmp/other.txt"
expect 2 "^ck/latest.yaml: the checkpoint was trained on training.data.path '\(the built-in corpus\)', the plan reads '.*other.txt'" "another data file"
run p.yaml "${A[@]}" --steps 4 --resume-changed --set training.data.order=sequential
expect 2 "^ck/latest.yaml: the checkpoint was trained with training.data.order random, the plan has sequential" "another data order"
run p.yaml "${A[@]}" --steps 4 --resume-changed
[ "$rc" -eq 0 ] && ok || bad "--resume-changed with --steps only: exit $rc $(cat "$tmp/err")"

# ---- the learning-rate message -----------------------------------------------
# the checkpoint is of a run of 2 steps (the run above saved none); 101
# steps: in the warm-up (steps 3 to 5) both schedules give the same rate,
# they first differ at step 6
run p.yaml "${A[@]}" --steps 101
expect 2 "run of 2 steps, this one has 101: the learning rate first differs at step 6: [0-9.e-]+ instead of [0-9.e-]+ \(pass --steps 2" "the learning-rate message"
a=$(grep -o 'step 6: [0-9.e-]* instead of [0-9.e-]*' "$tmp/err" | awk '{print $3, $6}')
# shellcheck disable=SC2086
[ -n "$a" ] && [ "$(echo $a | awk '{print ($1 != $2)}')" = 1 ] && ok ||
    bad "the two learning rates printed are equal: $a"

echo "resume_changed.sh: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
