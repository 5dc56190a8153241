#!/bin/bash
# zbrun_mpi_agree.sh - the processes of one mpirun job given different
# plans, options or inputs (issue 20, round 3); each case failed with the
# zbrun before that round (a double free, silent different losses, a
# timeout blaming rank 0, MPI_ERR_TRUNCATE, or one bare "Exit code: 2"):
#   - rank 1 with another schedule, lr, seed, micro_batch or --steps than
#     rank 0: every rank exits 2 with one line naming the difference, no
#     step runs;
#   - the plan or the data file missing on rank 1 only: rank 1 prints its
#     line (rank, host, file), rank 0 says rank 1 failed; both exit 2;
#   - missing on every rank: one line (rank 0's), as before;
#   - the same plan on both: runs (exit 0).
# Skipped (exit 0, "skipped: ...") without mpirun or without MPI in zbrun.
# Usage (from anywhere): BIN=bin bash tests/e2e/zbrun_mpi_agree.sh
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

[ -x "$BIN/zbplan" ] && [ -x "$BIN/zbrun" ] || { echo "zbrun_mpi_agree.sh: build $BIN first"; exit 1; }
if ! command -v mpirun >/dev/null; then echo "zbrun_mpi_agree.sh: skipped: no mpirun"; exit 0; fi
if OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=1 "$BIN/zbrun" /nonexistent.yaml 2>&1 |
    grep -q "built without MPI"; then
    echo "zbrun_mpi_agree.sh: skipped: zbrun built without MPI"; exit 0
fi
# LeakSanitizer off under mpirun: see zbrun_mpi.sh
MPIRUN=(env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
        ZB_COMM_TIMEOUT_S=20 mpirun --allow-run-as-root --oversubscribe --bind-to none
        -x ASAN_OPTIONS -x ZB_COMM_TIMEOUT_S)

cd "$tmp"
cp "$ROOT/models/data/corpus.txt" corpus.txt
model() { # FILE SCHEDULE LR SEED MICRO_BATCH DATA
    cat >"$1.yaml" <<YAML
model: {layers: 2, hidden: 16, heads: 2, seq_len: 16, vocab: 256}
training:
  global_batch: 4
  micro_batch: $5
  steps: 3
  seed: $4
  data: {kind: text, path: $6}
  optimizer: {lr: $3, schedule: constant}
cluster: {nodes: 1, devices_per_node: 2, device: cpu}
YAML
    "$BIN/zbplan" "$1.yaml" --pp 2 --schedule "$2" -q -o "$1.plan"
}
model base 1f1b 1.0e-3 7 1 corpus.txt
model sched zb-h1 1.0e-3 7 1 corpus.txt
model lr 1f1b 2.0e-3 7 1 corpus.txt
model seed 1f1b 1.0e-3 8 1 corpus.txt
model mb 1f1b 1.0e-3 7 2 corpus.txt
model nodata 1f1b 1.0e-3 7 1 corpus.txt
sed -i "s#path: .*corpus.txt#path: $tmp/gone.txt#" nodata.plan

# job PLAN0 PLAN1 [ARGS1...]: rank 0 runs PLAN0, rank 1 PLAN1 (with ARGS1
# appended); rc, $tmp/out, $tmp/err (zbrun's lines only), $tmp/rc.R
job() {
    local p0=$1 p1=$2
    shift 2
    rm -f rc.0 rc.1
    rc=0
    timeout -s KILL 120 "${MPIRUN[@]}" -np 2 bash -c \
        'if [ "$OMPI_COMM_WORLD_RANK" = 0 ]; then p=$1; shift 2; else p=$2; shift 2; set -- "$@" $EXTRA1; fi
         "$0" "$p" --threads 1 --steps 3 -q "$@"; r=$?; echo $r >rc.$OMPI_COMM_WORLD_RANK; exit $r' \
        "$BIN/zbrun" "$p0" "$p1" >"$tmp/out" 2>"$tmp/all.err" || rc=$?
    grep '^zbrun:' "$tmp/all.err" >"$tmp/err"
}
# expect_both REGEX0 REGEX1 WHAT: both ranks exited 2; one zbrun line
# from each, matching; no step ran
expect_both() {
    if [ "$(cat rc.0 2>/dev/null)" = 2 ] && [ "$(cat rc.1 2>/dev/null)" = 2 ] &&
        [ "$(wc -l <"$tmp/err")" -eq 2 ] && grep -Eq -- "$1" "$tmp/err" &&
        grep -Eq -- "$2" "$tmp/err" && ! grep -q '^step ' "$tmp/out"; then ok
    else bad "$3: exit $(cat rc.0 2>/dev/null)/$(cat rc.1 2>/dev/null) (want 2/2), zbrun lines: $(head -c 600 "$tmp/all.err")"; fi
}

job base.plan base.plan
[ "$rc" -eq 0 ] && ok || bad "the same plan on both ranks: rc $rc $(head -c 300 "$tmp/all.err")"

for c in "sched:schedule 1f1b vs zb-h1" "lr:lr 0.001 vs 0.002" "seed:seed 7 vs 8" \
         "mb:plan fingerprint"; do
    f=${c%%:*} want=${c#*:}
    job base.plan "$f.plan"
    expect_both "^zbrun: rank 0: rank 1's plan or options differ from rank 0's: $want" \
        "^zbrun: rank 1: rank 1's plan or options differ from rank 0's: $want" "rank 1 given $f.plan"
done
EXTRA1="--steps 4" job base.plan base.plan
expect_both "^zbrun: rank 0: .*: steps 3 vs 4" "^zbrun: rank 1: .*: steps 3 vs 4" "rank 1 given --steps 4"

job base.plan gone.plan
expect_both "^zbrun: rank 1 \(host [^)]+\): gone.plan: cannot open" \
    "^zbrun: rank 0: rank 1 \(host [^)]+\) could not start" "the plan missing on rank 1"
job base.plan nodata.plan
expect_both "^zbrun: rank 1 \(host [^)]+\): nodata.plan:[0-9]+:[0-9]+: training.data.path '.*gone.txt' not found" \
    "^zbrun: rank 0: rank 1 \(host [^)]+\) could not start" "the data missing on rank 1"
job gone.plan gone.plan
if [ "$(cat rc.0 2>/dev/null)" = 2 ] && [ "$(cat rc.1 2>/dev/null)" = 2 ] &&
    [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "^zbrun: gone.plan: cannot open" "$tmp/err"; then ok
else bad "the plan missing on every rank: $(head -c 400 "$tmp/all.err")"; fi

echo "zbrun_mpi_agree.sh: $((checks - fails))/$checks checks passed"
[ "$fails" -eq 0 ]
