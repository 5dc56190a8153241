#!/bin/bash
# mpi_world.sh - a world past the old 64-rank cap across processes: the
# micro model (tests/models/micro.yaml) as dp 16 x pp 8 = 128 processes
# under `mpirun --oversubscribe -np 128`, 3 steps, against the same plan
# with 128 rank threads (per-step losses and gradient norms must print the
# same digits). A benchmark, not part of `make test`: on a 2-core machine
# the 128 processes take minutes to start (measured on the 2-core, shared
# development box: 155 s wall, ~70 MB PSS per process, ~9 GB in all).
# NP=N picks another world (a multiple of 8: dp N/8 x pp 8; the micro
# model's global batch 64 needs N/8 to divide 64).
# Usage: BIN=bin bash tests/bench/mpi_world.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin}
NP=${NP:-128}
command -v mpirun >/dev/null || { echo "mpi_world.sh: skipped: no mpirun"; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$BIN/zbplan" tests/models/micro.yaml --dp $((NP / 8)) --tp 1 --pp 8 --schedule 1f1b -q -o "$tmp/plan.yaml" ||
    { echo "mpi_world.sh: FAIL: zbplan"; exit 1; }
"$BIN/zbrun" "$tmp/plan.yaml" --steps 3 --threads 1 >"$tmp/thr.out" 2>&1 ||
    { echo "mpi_world.sh: FAIL: $NP threads: $(tail -1 "$tmp/thr.out")"; exit 1; }
t0=$(date +%s.%N)
# MPI_Init of 128 oversubscribed processes outlasts the default 20 s watchdog
ZB_COMM_TIMEOUT_S=${ZB_COMM_TIMEOUT_S:-600} timeout 1200 mpirun --allow-run-as-root --oversubscribe \
    --bind-to none -x ZB_COMM_TIMEOUT_S -np "$NP" "$BIN/zbrun" "$tmp/plan.yaml" --steps 3 --threads 1 \
    >"$tmp/mpi.out" 2>"$tmp/mpi.err" || { echo "mpi_world.sh: FAIL: mpirun -np $NP: $(grep zbrun "$tmp/mpi.err" | head -2)"; exit 1; }
wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.0f", b-a}')
key() { awk '/^step [0-9]+\/3 loss /{print $2, $4, $8}' "$1"; }
if [ "$(key "$tmp/thr.out")" = "$(key "$tmp/mpi.out")" ] && [ "$(key "$tmp/mpi.out" | wc -l)" -eq 3 ]; then
    echo "mpi_world.sh: $NP processes = $NP threads (3 steps, losses and norms), mpirun wall ${wall} s"
else
    echo "mpi_world.sh: FAIL: $NP processes differ from threads"; paste <(key "$tmp/thr.out") <(key "$tmp/mpi.out"); exit 1
fi
