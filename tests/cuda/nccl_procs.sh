#!/bin/bash
# nccl_procs.sh - on a GPU machine: NCCL across 2 processes bootstrapped by
# zbrun's bootstrap, once under `mpirun -np 2` (unique id over MPI) and once
# torchrun-style (over TCP on 127.0.0.1). With 2+ GPUs each process gets
# its own; with one GPU NCCL (up to 2.29) refuses two ranks on it and the
# program says so (skipped). Then zbrun itself, one process per rank, for
# each of zb-h1, zb-v and zb-auto-v (the V schedules interleave activations
# and gradients between the same two ranks: NCCL's ordered lanes must keep
# them apart): `mpirun -np P bin/zbrun <tiny pp P plan> --backend cuda`
# and the same torchrun-style (P = 4 with 4+ GPUs, else 2), each against
# the threaded CPU run of the plan (per-step losses: step 1 within 1e-5
# relative, all 10 steps within 5e-3, the thresholds of scripts/gpu-check),
# and against the threaded CUDA run on the same GPUs (NCCL threads; must
# also pass); skipped with fewer than 2 GPUs (NCCL wants one per process).
# No device: exit 77 ("skipped: no CUDA device"); a driver that answers
# with an error fails. Without mpirun its runs are left out and said so,
# and the threaded and torchrun-style results still decide. Exit 0 ok, 77
# skipped, 1 failed.
# Usage: make cuda && bash tests/cuda/nccl_procs.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
prog=${NCCL_PROCS:-build/cuda/nccl_procs}
[ -x "$prog" ] || { echo "nccl_procs.sh: build $prog first (make cuda)"; exit 1; }
. tests/cuda/device.sh
zb_cuda_devices; case $? in
    77) echo "nccl_procs.sh: skipped: no CUDA device"; exit 77 ;;
    1) echo "nccl_procs.sh: FAIL: $ZB_DEV_ERR"; exit 1 ;;
esac
ngpu=$ZB_NDEV
rc_all=0
no_mpi=0     # mpirun missing: its rows are not run, the others still report
note() { # combine: any failure 1, else any skip 77, else 0
    if [ "$1" -ne 0 ] && [ "$1" -ne 77 ]; then rc_all=1
    elif [ "$1" -eq 77 ] && [ "$rc_all" -eq 0 ]; then rc_all=77; fi
}
echo "== mpirun -np 2 (unique id over MPI)"
if command -v mpirun >/dev/null; then
    mpirun --allow-run-as-root --oversubscribe -np 2 "$prog"; note $?
else
    echo "not run: no mpirun (the other runs still count)"; no_mpi=1
fi
echo "== torchrun-style, 2 processes (unique id over TCP)"
port=$((29500 + RANDOM % 1000))
RANK=1 LOCAL_RANK=1 WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$prog" &
other=$!
RANK=0 LOCAL_RANK=0 WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$prog"; note $?
wait "$other"; note $?
np=2; [ "$ngpu" -ge 4 ] && np=4
echo "== zbrun --backend cuda, $np processes (tiny pp $np: zb-h1, zb-v, zb-auto-v) vs the threaded runs"
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
    one_schedule() { # SCHEDULE: plan, threaded cpu and cuda runs, mpirun and torchrun-style
        local sch=$1 d="$tmp/$1"
        mkdir -p "$d"
        local zargs=("$d/plan.yaml" --steps 10 --threads 1)
        if ! bin/zbplan models/tiny.yaml --pp $np --dp 1 --tp 1 --schedule "$sch" -q -o "$d/plan.yaml"; then
            echo "FAIL: $sch: zbplan"; note 1; return
        fi
        bin/zbrun "${zargs[@]}" --backend cpu >"$d/cpu.log" 2>&1 || { echo "FAIL: $sch: threaded cpu run: $(tail -1 "$d/cpu.log")"; note 1; return; }
        timeout 300 bin/zbrun "${zargs[@]}" --backend cuda >"$d/thr.log" 2>&1 || { echo "FAIL: $sch: threaded cuda run: $(tail -1 "$d/thr.log")"; note 1; }
        local port=$((29500 + RANDOM % 1000)) r other
        local tenv=(WORLD_SIZE=$np LOCAL_WORLD_SIZE=$np MASTER_ADDR=127.0.0.1 MASTER_PORT=$port)
        if command -v mpirun >/dev/null; then
            timeout 300 mpirun --allow-run-as-root --oversubscribe --bind-to none -np $np \
                bin/zbrun "${zargs[@]}" --backend cuda >"$d/mpirun.log" 2>&1
            echo "$sch mpirun: exit $?"
        fi
        local pids=()
        for ((r = 1; r < np; r++)); do
            env "${tenv[@]}" RANK=$r LOCAL_RANK=$r timeout 300 bin/zbrun "${zargs[@]}" --backend cuda >/dev/null 2>"$d/torchrun$r.err" &
            pids+=($!)
        done
        env "${tenv[@]}" RANK=0 LOCAL_RANK=0 timeout 300 bin/zbrun "${zargs[@]}" --backend cuda >"$d/torchrun.log" 2>&1
        echo "$sch torchrun-style: exit $? (rank 0)"
        for other in "${pids[@]}"; do wait "$other" || echo "$sch torchrun-style: a rank exited $?"; done
        for run in thr mpirun torchrun; do
            [ -f "$d/$run.log" ] || { echo "$sch $run: not run: no mpirun"; continue; }
            if [ $run != thr ] && ! grep -q "NCCL transport" "$d/$run.log"; then
                echo "FAIL: $sch $run: no 'NCCL transport' launch line:"; tail -5 "$d/$run.log"; note 1; continue
            fi
            read -r f w <<<"$(diffs "$d/cpu.log" "$d/$run.log")"
            if awk -v f="$f" -v w="$w" 'BEGIN{exit !(f<=1e-5 && w<=5e-3)}'; then
                echo "$sch $run: losses vs threaded cpu: step 1 $f, max $w (<=1e-5, <=5e-3) ok;"; note 0
            else
                echo "FAIL: $sch $run: losses vs threaded cpu: step 1 $f, max $w (want <=1e-5, <=5e-3)"
                tail -5 "$d/$run.log"; note 1
            fi
        done
    }
    for sch in zb-h1 zb-v zb-auto-v; do one_schedule "$sch"; done
    rm -rf "$tmp"
fi
case $rc_all in
    0) if [ "$no_mpi" = 1 ]; then echo "nccl_procs.sh: ok (threads and torchrun-style; mpirun not installed, its runs not made)"
       else echo "nccl_procs.sh: ok"; fi ;;
    77) echo "nccl_procs.sh: skipped (see above)" ;;
    *) echo "nccl_procs.sh: FAILED" ;;
esac
exit "$rc_all"
