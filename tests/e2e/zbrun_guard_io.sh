#!/bin/bash
# zbrun_guard_io.sh - zbrun's files and streams against a hostile user
# (issue 20, round 3); each case fails with the zbrun before that round:
#   - outputs over inputs: --report/--trace/--svg/--export/--profile naming
#     the plan (also through a link or a hard link), the data file or the
#     init checkpoint: exit 2 before step 1, the input unchanged;
#   - outputs checked before step 1: --export/--profile into a missing
#     folder or onto a folder, --report '', two outputs on one file
#     (--report a --trace ./a);
#   - the data path is a FIFO: exit 2 at once, no hang;
#   - stdout a pipe closed by its reader (| head -1): the run stops like
#     SIGTERM (exit 141), keeps its checkpoint and writes its report;
#   - stdout closed (>&-): the lock file does not become fd 1, the step
#     lines do not land in it;
#   - NaN or Inf in an llm.c init checkpoint: exit 2 naming the file, the
#     tensor and the element;
#   - messages: --report /dev/full names the path; the resume hint quotes
#     a checkpoint folder with a space; an uncreatable checkpoint folder is
#     exit 2.
# Usage (from anywhere): BIN=bin bash tests/e2e/zbrun_guard_io.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BIN=${BIN:-bin}
case "$BIN" in /*) ;; *) BIN=$ROOT/$BIN ;; esac
. "$ROOT/tests/e2e/lib/hold.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0 checks=0
ok() { checks=$((checks + 1)); }
bad() { checks=$((checks + 1)); fails=$((fails + 1)); echo "FAIL: $*"; }

[ -x "$BIN/zbplan" ] && [ -x "$BIN/zbrun" ] || { echo "zbrun_guard_io.sh: build $BIN first"; exit 1; }

# run ARGS...: zbrun with a 60 s limit (a hang fails); rc, $tmp/out, $tmp/err
run() {
    rc=0
    timeout -s KILL 60 "$BIN/zbrun" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
}
# expect RC REGEX WHAT: exit RC, one stderr line matching REGEX, no step ran
expect() {
    if [ "$rc" -eq "$1" ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] &&
        grep -Eq -- "$2" "$tmp/err" && ! grep -q '^step ' "$tmp/out"; then ok
    else bad "$3: exit $rc (want $1), stderr: $(head -c 400 "$tmp/err")"; fi
}

cd "$tmp"
python3 "$ROOT/tests/bench/llmc_gen.py" ckpt init.bin --layers 2 --hidden 16 \
    --heads 2 --vocab 256 --padded-vocab 256 --max-seq 16
cp "$ROOT/models/data/corpus.txt" corpus.txt
model() { # FILE INIT_LINE: a micro model (steps take milliseconds)
    cat >"$1" <<YAML
model: {layers: 2, hidden: 16, heads: 2, seq_len: 16, vocab: 256$2}
training:
  global_batch: 4
  micro_batch: 1
  steps: 3
  data: {kind: text, path: corpus.txt}
  optimizer: {lr: 1.0e-3, schedule: constant}
cluster: {nodes: 1, devices_per_node: 2, device: cpu}
YAML
}
model m.yaml ""
model mi.yaml ", init: init.bin"
"$BIN/zbplan" m.yaml --pp 2 -q -o p.yaml
"$BIN/zbplan" mi.yaml --pp 2 -q -o pi.yaml
A=(--threads 1 --steps 2)

# ---- outputs over inputs ----------------------------------------------------
cp p.yaml keep.yaml
ln -s p.yaml plink.yaml
ln p.yaml phard.yaml
for o in "--report p.yaml" "--trace plink.yaml" "--svg phard.yaml" \
         "--profile ./p.yaml" "--export $tmp/p.yaml"; do
    # shellcheck disable=SC2086
    run p.yaml "${A[@]}" $o
    expect 2 "^zbrun: ${o%% *} .* would overwrite the plan p.yaml$" "$o"
    cmp -s p.yaml keep.yaml && ok || bad "$o changed the plan"
done
cp corpus.txt corpus.keep
run p.yaml "${A[@]}" --trace corpus.txt
expect 2 "^zbrun: --trace corpus.txt would overwrite the data file" "--trace over the data"
cmp -s corpus.txt corpus.keep && ok || bad "--trace changed the data file"
cp init.bin init.keep
run pi.yaml "${A[@]}" --export init.bin
expect 2 "^zbrun: --export init.bin would overwrite the init checkpoint" "--export over the init"
cmp -s init.bin init.keep && ok || bad "--export changed the init checkpoint"

# ---- outputs checked before step 1 ------------------------------------------
mkdir adir
run p.yaml "${A[@]}" --export nodir/x.bin
expect 2 "^zbrun: --export nodir/x.bin: cannot create: No such file" "--export into a missing folder"
run p.yaml "${A[@]}" --profile nodir/x.yaml
expect 2 "^zbrun: --profile nodir/x.yaml: cannot create: No such file" "--profile into a missing folder"
run p.yaml "${A[@]}" --export adir
expect 2 "^zbrun: --export adir: is a folder" "--export onto a folder"
run p.yaml "${A[@]}" --profile adir
expect 2 "^zbrun: --profile adir: is a folder" "--profile onto a folder"
run p.yaml "${A[@]}" --report ''
expect 2 "^zbrun: --report: the file name is empty" "--report ''"
run p.yaml "${A[@]}" --report a --trace ./a
expect 2 "^zbrun: --report a and --trace ./a name the same file" "--report a --trace ./a"
run p.yaml "${A[@]}" --svg out.svg --profile "$tmp/adir/../out.svg"
expect 2 "^zbrun: --svg out.svg and --profile .* name the same file" "--svg and --profile through a/.."
[ ! -e a ] && [ ! -e out.svg ] && ok || bad "a refused run left an output behind"

# ---- a FIFO as the data file: refused, no hang ------------------------------
mkfifo fifo
sed 's#path: corpus.txt#path: fifo#' m.yaml >mf.yaml
"$BIN/zbplan" mf.yaml --pp 2 -q -o pf.yaml
run pf.yaml "${A[@]}"
expect 2 "training.data.path '.*fifo' is not a regular file \(a FIFO\)" "data path a FIFO"

# ---- stdout a pipe whose reader goes away -----------------------------------
rm -rf ck
"$BIN/zbrun" p.yaml --threads 1 --steps 400 --checkpoint-every 1000 --checkpoint-dir ck \
    --report pipe.yaml 2>"$tmp/err" | head -1 >/dev/null
rc=${PIPESTATUS[0]}
if [ "$rc" -eq 141 ] && grep -q "stopped by SIGPIPE" "$tmp/err" && [ -s pipe.yaml ] &&
    grep -q '^step: [0-9]' ck/latest.yaml; then ok
else bad "| head -1: exit $rc (want 141, report and checkpoint kept): $(cat "$tmp/err")"; fi

# ---- stdout closed ----------------------------------------------------------
rm -rf ck
rc=0; "$BIN/zbrun" p.yaml "${A[@]}" --checkpoint-every 1 --checkpoint-dir ck >&- 2>"$tmp/err" || rc=$?
[ "$rc" -eq 0 ] && ! grep -q '^step ' ck/.lock && [ "$(wc -c <ck/.lock)" -lt 20 ] && ok ||
    bad ">&-: exit $rc, lock file: $(head -c 200 ck/.lock)"

# ---- NaN / Inf in an llm.c init checkpoint ----------------------------------
# element 5 of layer 1's ln1b: after wte (256x16), wpe (16x16), ln1w (2x16),
# ln1b layer 0 (16)
off=$((1024 + 4 * (256 * 16 + 16 * 16 + 2 * 16 + 16 + 5)))
for v in nan inf; do
    cp init.keep init.bin
    python3 - "$off" "$v" <<'PY'
import struct, sys
with open("init.bin", "r+b") as f:
    f.seek(int(sys.argv[1])); f.write(struct.pack("<f", float(sys.argv[2])))
PY
    run pi.yaml "${A[@]}"
    expect 2 "^init.bin: tensor .* of layer 1 holds (NaN|\+Inf) at element 5" "$v in the init checkpoint"
done
cp init.keep init.bin

# ---- messages ---------------------------------------------------------------
run p.yaml "${A[@]}" --report /dev/full
[ "$rc" -eq 1 ] && grep -q "^zbrun: cannot write '/dev/full': No space left" "$tmp/err" && ok ||
    bad "--report /dev/full: exit $rc, $(cat "$tmp/err")"
: >afile
run p.yaml "${A[@]}" --checkpoint-every 1 --checkpoint-dir afile/ck
expect 2 "^zbrun: cannot create checkpoint folder 'afile/ck'" "an uncreatable checkpoint folder"
# held after step 1 until the signal: it cannot end first (lib/hold.sh)
start_held 1 "$tmp/out" "$tmp/err" "$BIN/zbrun" p.yaml --threads 1 --steps 100000 \
    --checkpoint-every 100000 --checkpoint-dir "my ck" -q
wait_held 1 "$tmp/err" "$held_pid" || bad "resume hint with a space: never held"
kill -INT "$held_pid"
rc=0; wait "$held_pid" || rc=$?
[ "$rc" -eq 130 ] && grep -q "stopped by SIGINT after step 1 of 100000" "$tmp/err" &&
    grep -q -- "--resume --checkpoint-dir 'my ck' --checkpoint-every 100000 --steps 100000$" "$tmp/err" && ok ||
    bad "resume hint with a space: exit $rc, $(cat "$tmp/err")"

echo "zbrun_guard_io.sh: $((checks - fails))/$checks checks passed"
[ "$fails" -eq 0 ]
