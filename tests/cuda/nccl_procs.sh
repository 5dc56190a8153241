#!/bin/bash
# nccl_procs.sh - on a GPU machine: NCCL across 2 processes bootstrapped by
# zbrun's bootstrap, once under `mpirun -np 2` (unique id over MPI) and once
# torchrun-style (over TCP on 127.0.0.1). With 2+ GPUs each process gets
# its own; with one GPU NCCL (up to 2.29) refuses two ranks on it and the
# program says so (skipped). Then zbrun itself, one process per rank:
# `mpirun -np 2 bin/zbrun <tiny pp 2 plan> --backend cuda` and the same
# torchrun-style, each against the threaded CPU run of the plan (per-step
# losses: step 1 within 1e-5 relative, all 10 steps within 5e-3, the
# thresholds of scripts/gpu-check), and against the threaded CUDA run on
# the same 2 GPUs (printed); skipped with fewer than 2 GPUs (NCCL wants one
# per process). Exit 0 ok, 77 skipped, 1 failed.
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
echo "== zbrun --backend cuda, 2 processes (tiny pp 2) vs the threaded runs"
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
    ngpu=$(echo "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | grep -c .)
fi
if [ "${ngpu:-0}" -lt 2 ]; then
    echo "skipped: zbrun across processes needs 2 GPUs (one per process), ${ngpu:-0} visible"; note 77
elif [ ! -x bin/zbrun ] || [ ! -x bin/zbplan ]; then
    echo "FAIL: build bin/zbrun and bin/zbplan first (make all cuda)"; note 1
else
    tmp=$(mktemp -d)
    losses() { awk '/^step [0-9]+\/[0-9]+ loss /{print $4}' "$1"; }
    # "first worst" relative differences of two runs' 10 step losses
    diffs() {
        paste <(losses "$1") <(losses "$2") |
            awk 'function abs(x){return x<0?-x:x} {e=abs($2-$1)/abs($1); if(NR==1)f=e; if(e>w||e!=e)w=e; n++}
                 END{if(n!=10)print "nan nan"; else printf "%.2e %.2e\n", f, w}'
    }
    zargs=("$tmp/plan.yaml" --steps 10 --threads 1)
    if ! bin/zbplan models/tiny.yaml --pp 2 --dp 1 --tp 1 --schedule zb-h1 -q -o "$tmp/plan.yaml"; then
        echo "FAIL: zbplan"; note 1
    else
        bin/zbrun "${zargs[@]}" --backend cpu >"$tmp/cpu.log" 2>&1 || echo "FAIL: threaded cpu run: $(tail -1 "$tmp/cpu.log")"
        bin/zbrun "${zargs[@]}" --backend cuda >"$tmp/thr.log" 2>&1 || echo "FAIL: threaded cuda run: $(tail -1 "$tmp/thr.log")"
        port=$((29500 + RANDOM % 1000))
        tenv=(WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port)
        if command -v mpirun >/dev/null; then
            timeout 300 mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 \
                bin/zbrun "${zargs[@]}" --backend cuda >"$tmp/mpirun.log" 2>&1
            echo "mpirun: exit $?"
        fi
        env "${tenv[@]}" RANK=1 LOCAL_RANK=1 timeout 300 bin/zbrun "${zargs[@]}" --backend cuda >/dev/null 2>"$tmp/torchrun1.err" &
        other=$!
        env "${tenv[@]}" RANK=0 LOCAL_RANK=0 timeout 300 bin/zbrun "${zargs[@]}" --backend cuda >"$tmp/torchrun.log" 2>&1
        echo "torchrun-style: exit $? (rank 0)"; wait "$other" || echo "torchrun-style rank 1: exit $?: $(cat "$tmp/torchrun1.err")"
        for run in mpirun torchrun; do
            [ -f "$tmp/$run.log" ] || { echo "$run: skipped: no mpirun"; note 77; continue; }
            grep -q "NCCL transport" "$tmp/$run.log" || { echo "FAIL: $run: no 'NCCL transport' launch line:"; tail -5 "$tmp/$run.log"; note 1; continue; }
            read -r f w <<<"$(diffs "$tmp/cpu.log" "$tmp/$run.log")"
            read -r tf tw <<<"$(diffs "$tmp/thr.log" "$tmp/$run.log")"
            if awk -v f="$f" -v w="$w" 'BEGIN{exit !(f<=1e-5 && w<=5e-3)}'; then
                echo "$run: losses vs threaded cpu: step 1 $f, max $w (<=1e-5, <=5e-3) ok; vs threaded cuda: step 1 $tf, max $tw"; note 0
            else
                echo "FAIL: $run: losses vs threaded cpu: step 1 $f, max $w (want <=1e-5, <=5e-3); vs threaded cuda: $tf $tw"
                tail -5 "$tmp/$run.log"; note 1
            fi
        done
    fi
    rm -rf "$tmp"
fi
case $rc_all in
    0) echo "nccl_procs.sh: ok" ;;
    77) echo "nccl_procs.sh: skipped (see above)" ;;
    *) echo "nccl_procs.sh: FAILED" ;;
esac
exit "$rc_all"
