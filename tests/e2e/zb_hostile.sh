#!/bin/bash
# zb_hostile.sh - hostile and careless inputs (issue "hostile inputs and
# faults"): each case must end with the right exit status and one clear
# line, never a crash, a hang or silently wrong numbers.
#   - every tests/bad/plans/NAME.yaml: zbrun exits 2 printing exactly NAME.err
# Usage (from anywhere): BIN=bin bash tests/e2e/zb_hostile.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0 checks=0
ok() { checks=$((checks + 1)); }
bad() { checks=$((checks + 1)); fails=$((fails + 1)); echo "FAIL: $*"; }

[ -x "$BIN/zbplan" ] && [ -x "$BIN/zbrun" ] || { echo "zb_hostile.sh: build $BIN first"; exit 1; }
. tests/e2e/lib/hold.sh

# run PROG ARGS...: rc, $tmp/out, $tmp/err (killed after 120 s: a hang fails)
run() {
    rc=0
    timeout -s KILL 120 "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
}
# expect RC REGEX WHAT: the last run exited RC with one stderr line matching REGEX
expect() {
    local lines
    lines=$(wc -l <"$tmp/err")
    if [ "$rc" -eq "$1" ] && [ "$lines" -eq 1 ] && grep -Eq -- "$2" "$tmp/err"; then ok
    else bad "$3: exit $rc (want $1), stderr: $(head -c 400 "$tmp/err")"; fi
}

# ---- the bad-plan corpus -------------------------------------------------
for y in tests/bad/plans/*.yaml; do
    run "$BIN/zbrun" "$y" --steps 1 --threads 1 -q
    if [ "$rc" -eq 2 ] && diff -q "$tmp/err" "${y%.yaml}.err" >/dev/null; then ok
    else bad "$y: exit $rc, stderr: $(cat "$tmp/err")"; fi
done

# ---- zbplan's inputs and outputs ----------------------------------------
mkdir "$tmp/adir"
run "$BIN/zbplan" "$tmp/adir" -q
expect 2 "^zbplan: cannot read '$tmp/adir': Is a directory$" "a folder as the model"
run "$BIN/zbplan" plans/tiny.yaml -q -o "$tmp/p.yaml"
expect 2 "^plans/tiny.yaml:1:1: this is a plan.*run it with zbrun" "a plan given to zbplan"
cp models/tiny.yaml "$tmp/m.yaml"
ln -s m.yaml "$tmp/mlink.yaml"
for o in m.yaml mlink.yaml; do
    run "$BIN/zbplan" "$tmp/m.yaml" -q -o "$tmp/$o"
    expect 2 "would overwrite the model" "-o $o over the model"
    cmp -s models/tiny.yaml "$tmp/m.yaml" && ok || bad "-o $o changed the model"
done
# a multi-line value quoted in a message still makes one line (found by fuzz_model)
printf 'Story 1.\n\nLate at night,\nJack lived near the forest.\n' >"$tmp/story.yaml"
run "$BIN/zbplan" "$tmp/story.yaml" -q -o "$tmp/p.yaml"
expect 2 "^$tmp/story.yaml:1:1: the top level must be a mapping" "a text file as the model"
# a symbolic link is followed: the link stays, its target gets the plan
ln -s target.yaml "$tmp/link.yaml"
run "$BIN/zbplan" models/tiny.yaml -q -o "$tmp/link.yaml"
[ "$rc" -eq 0 ] && [ -L "$tmp/link.yaml" ] && grep -q '^schedule:' "$tmp/target.yaml" &&
    ok || bad "-o through a symbolic link: rc $rc, link kept? target written?"
# not a regular file (a FIFO here; /dev/null alike): written through, kept
mkfifo "$tmp/fifo"
cat "$tmp/fifo" >"$tmp/fifo.out" &
reader=$!
run "$BIN/zbplan" models/tiny.yaml -q -o "$tmp/fifo"
# the writer has closed the FIFO: the reader gets its end of file; a
# zbplan that never opened it leaves the reader blocked: end it
[ "$rc" -eq 0 ] || kill "$reader" 2>/dev/null
wait "$reader" 2>/dev/null || true
[ "$rc" -eq 0 ] && [ -p "$tmp/fifo" ] && grep -q '^schedule:' "$tmp/fifo.out" &&
    ok || bad "-o to a FIFO: rc $rc, still a FIFO? plan read through it?"
run "$BIN/zbplan" models/tiny.yaml -q -o "$tmp/adir"
[ "$rc" -ne 0 ] && [ -d "$tmp/adir" ] && grep -q "Is a directory" "$tmp/err" &&
    ok || bad "-o to a folder: rc $rc $(cat "$tmp/err")"

# ---- a plan whose costs no longer belong to its model or device --------
"$BIN/zbplan" models/tiny.yaml -q --pp 2 -o "$tmp/good.yaml"
sed 's/^  hidden: 64$/  hidden: 128/' "$tmp/good.yaml" >"$tmp/hidden.yaml"
sed 's/^    memory_gib: .*/    memory_gib: 0.000001/' "$tmp/good.yaml" >"$tmp/memory.yaml"
for f in hidden memory; do
    cmp -s "$tmp/good.yaml" "$tmp/$f.yaml" && bad "sed did not change $f"
    run "$BIN/zbrun" "$tmp/$f.yaml" --steps 1 --threads 1 -q
    expect 2 "^$tmp/$f.yaml:[0-9]+:[0-9]+: .*re-run zbplan" "hand-edited $f"
done
# what does not shape the costs may still be edited
sed 's/^  steps: 30$/  steps: 1/' "$tmp/good.yaml" >"$tmp/steps.yaml"
run "$BIN/zbrun" "$tmp/steps.yaml" --threads 1 -q
[ "$rc" -eq 0 ] && ok || bad "edited steps refused: $(cat "$tmp/err")"

# ---- bounded work: refused at once, saying the limit ----------------------
run "$BIN/zbplan" sim --schedule zb-h1 --stages 1024 --microbatches 1048576
expect 2 "^zbplan: schedule too large: .*the limit is" "sim of 1024 x 1048576"
run "$BIN/zbplan" sim --schedule 1f1b --stages 4 --microbatches 8 --cost-f 1e308
expect 2 "^zbplan: sim: costs too large" "sim with costs of 1e308"
sed 's/^  layers: 8.*/  layers: 100000/' models/tiny.yaml >"$tmp/deep.yaml"
run "$BIN/zbplan" "$tmp/deep.yaml" --pp 2000 -q -o "$tmp/deep_plan.yaml"
expect 2 "^zbplan: splitting 100000 layers into 2000 .*limit" "100000 layers on pp 2000"
sed 's/^  global_batch: 16 .*/  global_batch: 16777216/; s/^  micro_batch: 2.*/  micro_batch: auto/' \
    models/tiny.yaml >"$tmp/batch.yaml"
grep -q 'global_batch: 16777216' "$tmp/batch.yaml" || bad "sed did not change global_batch"
run "$BIN/zbplan" "$tmp/batch.yaml" -q -o "$tmp/batch_plan.yaml"
size=$(stat -c %s "$tmp/batch_plan.yaml" 2>/dev/null || echo 0)
# a plan, or a clear refusal; never minutes, never hundreds of MB
if { [ "$rc" -eq 0 ] && [ "$size" -lt 67108864 ]; } || { [ "$rc" -ne 0 ] && [ -s "$tmp/err" ]; }; then ok
else bad "global_batch 16777216: rc $rc, plan $size bytes"; fi

# ---- zbrun: checked before the first step ---------------------------------
plan="$tmp/good.yaml"
run "$BIN/zbrun" "$plan" --steps 2 --threads 1 --report "$tmp/nodir/r.yaml" --trace "$tmp/t.json"
expect 2 "^zbrun: --report $tmp/nodir/r.yaml: cannot create" "--report into a missing folder"
grep -q '^step ' "$tmp/out" && bad "trained before refusing --report nodir/r.yaml" || ok
[ ! -e "$tmp/t.json" ] && ok || bad "wrote the trace although --report was refused"
run "$BIN/zbrun" "$plan" --steps 2 --threads 100000
expect 2 "^zbrun: --threads 100000 is too many" "--threads 100000"
: >"$tmp/file"
run "$BIN/zbrun" "$plan" --steps 2 --threads 1 --checkpoint-every 1 --checkpoint-dir "$tmp/file/ck"
[ "$rc" -ne 0 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && ! grep -q '^step ' "$tmp/out" &&
    ok || bad "checkpoint folder under a file: rc $rc, $(cat "$tmp/err")"
# an output that fails at the end: the others are still written, it is named
mkdir "$tmp/late"
start_held 1 "$tmp/out" "$tmp/err" "$BIN/zbrun" "$plan" --steps 30 --threads 1 \
    --report "$tmp/late/r.yaml" --trace "$tmp/late/t.json" --svg "$tmp/late/t.svg"
wait_held 1 "$tmp/err" "$held_pid" || bad "late output failure: never held"
mkdir "$tmp/late/r.yaml"   # the report's name becomes a folder mid-run
kill -USR1 "$held_pid" 2>/dev/null
rc=0; wait "$held_pid" || rc=$?
[ "$rc" -eq 1 ] && grep -q "^zbrun: cannot write .*r.yaml" "$tmp/err" && [ -s "$tmp/late/t.json" ] &&
    [ -s "$tmp/late/t.svg" ] && [ "$(grep -c '^step ' "$tmp/out")" -eq 30 ] &&
    ok || bad "late output failure: rc $rc, trace/svg written? $(cat "$tmp/err")"

# ---- checkpoint index fields and the folder lock -----------------------------
ck="$tmp/ck"
run "$BIN/zbrun" "$plan" --steps 4 --threads 1 --checkpoint-every 2 --checkpoint-dir "$ck" -q
[ "$rc" -eq 0 ] && ok || bad "checkpointed run: rc $rc $(cat "$tmp/err")"
run "$BIN/zbrun" "$plan" --steps 6 --threads 1 --checkpoint-dir "$ck" --resume -q
expect 2 "run of 4 steps, this one has 6: the learning rate .*--resume-changed" "resume with another --steps"
sed 's/^  seed: .*/  seed: 99/' "$plan" >"$tmp/seed.yaml"
run "$BIN/zbrun" "$tmp/seed.yaml" --steps 4 --threads 1 --checkpoint-dir "$ck" --resume -q
expect 2 "seed 1234, the plan has 99.*--resume-changed" "resume with another seed"
run "$BIN/zbrun" "$plan" --steps 6 --threads 1 --checkpoint-dir "$ck" --resume --resume-changed -q
[ "$rc" -eq 0 ] && ok || bad "--resume-changed: rc $rc $(cat "$tmp/err")"
exec 9>"$ck/.lock"
flock -n 9 || bad "could not take the lock for the test"
run "$BIN/zbrun" "$plan" --steps 2 --threads 1 --checkpoint-every 1 --checkpoint-dir "$ck" -q
expect 2 "^zbrun: checkpoint folder '$ck' is in use by another zbrun" "a second writer"
exec 9>&-

# ---- a loss that explodes without NaN --------------------------------------
sed 's/^    lr: .*/    lr: 50/; s/^    grad_clip: .*/    grad_clip: 0/' "$plan" >"$tmp/lr50.yaml"
run "$BIN/zbrun" "$tmp/lr50.yaml" --steps 30 --threads 1 -q
[ "$rc" -eq 1 ] && grep -Eq "^zbrun: step [0-9]+: loss .* more than 10 times|is (nan|inf)" "$tmp/err" &&
    ok || bad "lr 50: rc $rc, $(cat "$tmp/err")"

# ---- Ctrl-C and kill: stop after the step, checkpoint, say how to resume ------
# The run is held after step 3 (every rank waits there) until the signal:
# it stops after exactly that step, on any machine, idle or loaded.
for sig in INT TERM; do
    rm -rf "$tmp/sck"
    start_held 3 "$tmp/out" "$tmp/err" "$BIN/zbrun" "$plan" --steps 400 --threads 1 \
        --checkpoint-every 1000 --checkpoint-dir "$tmp/sck" --report "$tmp/sig.yaml"
    wait_held 3 "$tmp/err" "$held_pid" || bad "SIG$sig: never held after step 3"
    kill -s "$sig" "$held_pid"
    rc=0; wait "$held_pid" || rc=$?
    want=$([ "$sig" = INT ] && echo 130 || echo 143)
    last=$(grep -c '^step ' "$tmp/out")
    if [ "$rc" -eq "$want" ] && [ "$last" -eq 3 ] &&
        grep -q "stopped by SIG$sig after step 3 of 400" "$tmp/err" &&
        grep -q -- "--resume --checkpoint-dir $tmp/sck" "$tmp/err" &&
        grep -q "^step: $last$" "$tmp/sck/latest.yaml" && [ -s "$tmp/sig.yaml" ]; then ok
    else bad "SIG$sig: rc $rc (want $want), $last steps, $(cat "$tmp/err")"; fi
done

echo "zb_hostile.sh: $((checks - fails))/$checks checks passed"
[ "$fails" -eq 0 ]
