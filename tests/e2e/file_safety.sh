#!/bin/bash
# file_safety.sh - one way to write an output file (issue 29, section 2;
# common/zb_files.h, docs/zbrun.md "Files"). Each case failed with the
# zb before that issue:
#   - zbrun --report/--trace/--svg/--profile/--export onto a rank file of
#     another run's checkpoint folder: exit 2 before step 1, file unchanged;
#   - zbreport -o over its own input; zbplan sim --export over its --costs;
#     zbplan -o over the --profile it reads; zbplan calibrate -o over the
#     model: exit 2, the input unchanged;
#   - a checkpoint .lock that is a symbolic link: refused, what it names
#     unchanged; a step folder that is a link: not written through;
#   - --metrics to a file that fails on write (/dev/full): the report and
#     the other outputs are still written (exit 1 naming the metrics file).
# Usage (from anywhere): BIN=bin bash tests/e2e/file_safety.sh
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

[ -x "$BIN/zbplan" ] && [ -x "$BIN/zbrun" ] && [ -x "$BIN/zbreport" ] ||
    { echo "file_safety.sh: build $BIN first"; exit 1; }

# run PROG ARGS...: with a 120 s limit (a hang fails); rc, $tmp/out, $tmp/err
run() {
    rc=0
    timeout -s KILL 120 "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
}
# expect RC REGEX WHAT: exit RC and one stderr line matching REGEX
expect() {
    if [ "$rc" -eq "$1" ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] &&
        grep -Eq -- "$2" "$tmp/err"; then ok
    else bad "$3: exit $rc (want $1), stderr: $(head -c 400 "$tmp/err")"; fi
}
# same FILE COPY WHAT: FILE still holds COPY's bytes
same() { cmp -s "$1" "$2" && ok || bad "$3 changed $1"; }

cd "$tmp"
cat >m.yaml <<YAML
model: {layers: 2, hidden: 16, heads: 2, seq_len: 16, vocab: 256}
training:
  global_batch: 4
  micro_batch: 1
  steps: 3
  optimizer: {lr: 1.0e-3, schedule: constant}
cluster: {nodes: 1, devices_per_node: 2, device: cpu}
YAML
"$BIN/zbplan" m.yaml --pp 2 -q -o p.yaml || { echo "FAIL: zbplan"; exit 1; }
A=(--threads 1 --steps 2 -q)

# ---- zbrun outputs into another run's checkpoint folder ---------------------
"$BIN/zbrun" p.yaml "${A[@]}" --checkpoint-every 2 --checkpoint-dir ck >/dev/null ||
    { echo "FAIL: a run with checkpoints"; exit 1; }
rankf=ck/step-00000002/rank-00000.bin
cp "$rankf" rank.keep
for o in --report --trace --svg --profile --export; do
    run "$BIN/zbrun" p.yaml "${A[@]}" "$o" "$rankf"
    expect 2 "^zbrun: $o $rankf: is inside a checkpoint folder" "$o onto a checkpoint's rank file"
    same "$rankf" rank.keep "$o"
done
run "$BIN/zbrun" p.yaml "${A[@]}" --report ck/r.yaml
expect 2 "^zbrun: --report ck/r.yaml: is inside a checkpoint folder" "--report into a checkpoint folder"
# this run's own checkpoint folder, before it holds anything
mkdir mine
run "$BIN/zbrun" p.yaml "${A[@]}" --checkpoint-every 1 --checkpoint-dir mine --trace mine/t.json
expect 2 "^zbrun: --trace mine/t.json: is inside the checkpoint folder mine" "--trace into its own checkpoint folder"

# ---- zbreport -o over its input ---------------------------------------------
"$BIN/zbrun" p.yaml "${A[@]}" --report r.yaml || { echo "FAIL: a run with --report"; exit 1; }
cp r.yaml r.keep
ln -s r.yaml rlink.yaml
for o in r.yaml ./r.yaml rlink.yaml; do
    run "$BIN/zbreport" r.yaml -o "$o"
    expect 2 "^zbreport: -o $o would overwrite the report r.yaml" "zbreport -o $o over its input"
    same r.yaml r.keep "zbreport -o $o"
done

# ---- zbplan sim --export over its --costs -----------------------------------
printf '1,1,1,0,1,0.5\n1,1,1,0,1,0.5\n' >costs.csv
cp costs.csv costs.keep
run "$BIN/zbplan" sim --schedule 1f1b --stages 2 --microbatches 4 --costs costs.csv --export costs.csv
expect 2 "^zbplan: --export costs.csv would overwrite the --costs file costs.csv" "sim --export over --costs"
same costs.csv costs.keep "sim --export"

# ---- zbplan -o over the profile it reads ------------------------------------
"$BIN/zbrun" p.yaml "${A[@]}" --profile prof.yaml || { echo "FAIL: a run with --profile"; exit 1; }
cp prof.yaml prof.keep
run "$BIN/zbplan" m.yaml --pp 2 -q --profile prof.yaml -o prof.yaml
expect 2 "^zbplan: -o prof.yaml would overwrite the profile prof.yaml" "zbplan -o over --profile"
same prof.yaml prof.keep "zbplan -o"

# ---- zbplan calibrate -o over the model -------------------------------------
cp m.yaml m.keep
run "$BIN/zbplan" calibrate --model m.yaml -o ./m.yaml --reps 1 --n 16 -q
expect 2 "^zbplan: -o ./m.yaml would overwrite the model m.yaml" "calibrate -o over the model"
same m.yaml m.keep "calibrate -o"

# ---- a checkpoint .lock or step folder that is a symbolic link --------------
echo precious >victim
cp victim victim.keep
mkdir cl
ln -s ../victim cl/.lock
run "$BIN/zbrun" p.yaml "${A[@]}" --checkpoint-every 1 --checkpoint-dir cl
expect 2 "^zbrun: cannot use checkpoint folder 'cl': cl/.lock is not a regular file" ".lock a symbolic link"
same victim victim.keep ".lock through a link"
mkdir cs elsewhere
echo mine >elsewhere/rank-00000.bin
ln -s ../elsewhere cs/step-00000001
run "$BIN/zbrun" p.yaml "${A[@]}" --checkpoint-every 1 --checkpoint-dir cs --overwrite-checkpoints
[ "$rc" -ne 0 ] && [ "$(ls elsewhere)" = rank-00000.bin ] &&
    [ "$(cat elsewhere/rank-00000.bin)" = mine ] && ok ||
    bad "a step folder that is a link: exit $rc, elsewhere/ holds: $(ls elsewhere)"
# a link left as another step's folder is removed, not emptied
rm -rf cs && mkdir cs
ln -s ../elsewhere cs/step-00000009
run "$BIN/zbrun" p.yaml "${A[@]}" --checkpoint-every 1 --checkpoint-dir cs --overwrite-checkpoints
[ "$rc" -eq 0 ] && [ "$(cat elsewhere/rank-00000.bin)" = mine ] && [ ! -e cs/step-00000009 ] && ok ||
    bad "a link as an old step folder: exit $rc, elsewhere/ holds: $(ls elsewhere)"

# ---- --metrics that fails on write loses no other output --------------------
run "$BIN/zbrun" p.yaml "${A[@]}" --metrics /dev/full --report rf.yaml --trace tf.json
[ "$rc" -eq 1 ] && grep -q "metrics.*/dev/full\|/dev/full.*No space" "$tmp/err" &&
    [ -s rf.yaml ] && [ -s tf.json ] && ok ||
    bad "--metrics /dev/full: exit $rc (want 1), report written? $(ls rf.yaml tf.json 2>&1) $(head -c 300 "$tmp/err")"

echo "file_safety.sh: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
