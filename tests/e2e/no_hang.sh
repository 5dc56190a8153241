#!/bin/bash
# no_hang.sh - no input makes zb hang (issue 29, section 3). Each case hung
# (or ran for minutes) with the zb before that issue; here a case that does
# not end within a generous limit fails (the limit catches a hang, it does
# not time anything):
#   - a 5 MB model of 300,000 keys (the duplicate-key check was quadratic):
#     read, and refused for its unknown key, exit 2;
#   - inputs that are not regular files: `zbplan sim --costs /dev/zero`,
#     a FIFO as --costs, as the model, as zbrun's plan: exit 2 at once;
#   - an output FIFO nobody reads: zbplan -o gives up (exit 1, after at
#     most 10 s); zbrun --report, held there, ends on SIGTERM (exit 1);
#     zbrun --metrics (opened before step 1) is an error at once;
#     while zbrun waits there, /proc/PID/comm (what ps and top show) is
#     zbrun, not "exe" after its re-execution (section 4);
#   - SIGTERM during a long validation pass (a million batches): the pass
#     ends at the batch in progress, no step runs, exit 143, report kept.
# Usage (from anywhere): BIN=bin bash tests/e2e/no_hang.sh
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

[ -x "$BIN/zbplan" ] && [ -x "$BIN/zbrun" ] || { echo "no_hang.sh: build $BIN first"; exit 1; }

# run PROG ARGS...: with a 90 s limit (137: it hung); rc, $tmp/out, $tmp/err
run() {
    rc=0
    timeout -s KILL 90 "$@" >"$tmp/out" 2>"$tmp/err" </dev/null || rc=$?
}
expect() {
    if [ "$rc" -eq "$1" ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] &&
        grep -Eq -- "$2" "$tmp/err"; then ok
    else bad "$3: exit $rc (want $1), stderr: $(head -c 400 "$tmp/err")"; fi
}

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

# ---- 300,000 keys: linear --------------------------------------------------
python3 - <<'PY'
with open("big.yaml", "w") as f:
    f.write(open("m.yaml").read())
    f.write("extra:\n")
    for i in range(300000):
        f.write("  key%d: %d\n" % (i, i))
    f.write("  key7: 7\n")
PY
run "$BIN/zbplan" big.yaml -q -o out.yaml
expect 2 "^big.yaml:300009:3: duplicate key 'key7'" "300,000 keys"

# ---- inputs that are not regular files -------------------------------------
mkfifo fifo
S=(sim --schedule 1f1b --stages 2 --microbatches 4)
run "$BIN/zbplan" "${S[@]}" --costs /dev/zero
expect 2 "^zbplan: /dev/zero: a character device, not a regular file" "sim --costs /dev/zero"
run "$BIN/zbplan" "${S[@]}" --costs fifo
expect 2 "^zbplan: fifo: a FIFO, not a regular file" "sim --costs a FIFO"
run "$BIN/zbplan" fifo -q -o out.yaml
expect 2 "^zbplan: cannot read 'fifo': a FIFO, not a regular file" "a FIFO as the model"
run "$BIN/zbrun" fifo
expect 2 "cannot read 'fifo': a FIFO, not a regular file" "a FIFO as the plan"
run "$BIN/zbplan" m.yaml --pp 2 -q --profile fifo -o out.yaml
expect 2 "cannot read 'fifo': a FIFO, not a regular file" "a FIFO as --profile"

# ---- an output FIFO nobody reads -------------------------------------------
run "$BIN/zbplan" m.yaml --pp 2 -q -o fifo
expect 1 "^zbplan: cannot write '.*fifo': a FIFO that nobody reads" "zbplan -o a FIFO with no reader"
# --metrics, opened before step 1 and written in place: a FIFO nobody
# reads is an error at once (it blocked in open(2) before)
run "$BIN/zbrun" p.yaml --steps 2 --threads 1 -q --metrics fifo
expect 1 "^zbrun: --metrics fifo: a FIFO that nobody reads" "--metrics a FIFO with no reader"
# zbrun: held at the FIFO after its last step (the metrics file shows that
# step), then SIGTERM
timeout -s KILL 90 "$BIN/zbrun" p.yaml --steps 2 --threads 1 -q --metrics m.jsonl \
    --report fifo >"$tmp/out" 2>"$tmp/err" &
pid=$!
until grep -q '"step": 2' m.jsonl 2>/dev/null || ! kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
zb=$(pgrep -P "$pid")   # zbrun, the child of timeout
name=$(cat "/proc/$zb/comm" 2>/dev/null)
kill -TERM "$zb" 2>/dev/null
rc=0; wait "$pid" || rc=$?
expect 1 "^zbrun: cannot write '.*fifo': stopped by a signal while waiting for a reader" \
    "zbrun --report a FIFO with no reader, SIGTERM"
[ "$name" = zbrun ] && ok || bad "zbrun's process name: '$name' (want zbrun; it re-executes itself)"

# ---- SIGTERM in a long validation pass (a million batches before step 1) --
cp "$ROOT/models/data/corpus.txt" corpus.txt
sed 's/^  steps: 3$/  steps: 3\n  val: {path: corpus.txt, batches: 1000000}/' m.yaml >v.yaml
"$BIN/zbplan" v.yaml --pp 2 -q -o vp.yaml || bad "zbplan v.yaml"
timeout -s KILL 90 "$BIN/zbrun" vp.yaml --threads 1 --report vr.yaml >"$tmp/out" 2>"$tmp/err" &
pid=$!
# the header is printed once the handlers are in place: the pass follows
until grep -q '^zbrun vp.yaml' "$tmp/out" 2>/dev/null || ! kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
kill -TERM "$(pgrep -P "$pid")" 2>/dev/null
rc=0; wait "$pid" || rc=$?
expect 143 "^zbrun: stopped by SIGTERM in the validation pass before step 1 of 3" "SIGTERM in a long validation pass"
! grep -q '^step ' "$tmp/out" && [ -s vr.yaml ] && ok ||
    bad "SIGTERM in the validation pass: a step ran, or no report: $(grep -c '^step ' "$tmp/out")"

echo "no_hang.sh: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
