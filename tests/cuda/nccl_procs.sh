#!/bin/bash
# nccl_procs.sh - on a GPU machine: NCCL across 2 processes bootstrapped by
# zbrun's bootstrap, once under `mpirun -np 2` (unique id over MPI) and once
# torchrun-style (over TCP on 127.0.0.1). With 2+ GPUs each process gets
# its own; with one GPU NCCL (up to 2.29) refuses two ranks on it and the
# program says so (skipped). Exit 0 ok, 77 skipped, 1 failed.
# Usage: make cuda && bash tests/cuda/nccl_procs.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
prog=${NCCL_PROCS:-build/cuda/nccl_procs}
[ -x "$prog" ] || { echo "nccl_procs.sh: build $prog first (make cuda)"; exit 1; }
rc_all=0
note() { # combine: any failure 1, else any skip 77, else 0
    if [ "$1" -ne 0 ] && [ "$1" -ne 77 ]; then rc_all=1
    elif [ "$1" -eq 77 ] && [ "$rc_all" -eq 0 ]; then rc_all=77; fi
}
echo "== mpirun -np 2 (unique id over MPI)"
if command -v mpirun >/dev/null; then
    mpirun --allow-run-as-root --oversubscribe -np 2 "$prog"; note $?
else
    echo "skipped: no mpirun"; note 77
fi
echo "== torchrun-style, 2 processes (unique id over TCP)"
port=$((29500 + RANDOM % 1000))
RANK=1 LOCAL_RANK=1 WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$prog" &
other=$!
RANK=0 LOCAL_RANK=0 WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$prog"; note $?
wait "$other"; note $?
case $rc_all in
    0) echo "nccl_procs.sh: ok" ;;
    77) echo "nccl_procs.sh: skipped (see above)" ;;
    *) echo "nccl_procs.sh: FAILED" ;;
esac
exit "$rc_all"
