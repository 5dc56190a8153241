#!/bin/bash
# share_gpu.sh - on a GPU machine: zbrun --backend cuda with every rank on
# ONE GPU (ZB_CUDA_SHARE=1: threads over the device-local transport)
# against --backend cpu, fp32, the tiny model, 5 steps, for
#   pp 4 with 1f1b, zb-v and zb-auto-v; tp 2; dp 2; tp 2 x pp 2; with a
#   vocabulary of 300 (padded logits), pp 2 and tp 2; vocabulary
#   parallelism (the vocabulary sharded over the pipeline): pp 4 1f1b
#   variant 1, pp 4 v-half variant 2.
# Each layout passes when step 1's loss is within 1e-5 relative of the CPU
# run's and every step's within 1e-4 (the CUDA backend's fp32 target).
# One line per layout: "share_gpu.sh: NAME: step1 E1, max E: ok" (or
# FAIL); scripts/gpu-check puts them in its table.
# Exit 0 all passed; 77 "skipped: no CUDA device" (no driver/device here);
# 1 a layout failed or the driver answers with an error.
# Usage (after make all cuda): bash tests/cuda/share_gpu.sh
# SHARE_GPU_LAYOUTS="NAME ..." runs only the layouts named (e.g.
# "pp4-vocab1 pp4-vhalf-vocab2"); unset: all.
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin}
STEPS=5
. tests/cuda/device.sh
zb_cuda_devices; case $? in
    77) echo "share_gpu.sh: skipped: no CUDA device"; exit 77 ;;
    1) echo "share_gpu.sh: FAIL: $ZB_DEV_ERR"; exit 1 ;;
esac
tmp=${SHARE_GPU_OUT:-$(mktemp -d)}
mkdir -p "$tmp"
failed=0
ran=0
losses() { awk '/^step [0-9]+\/[0-9]+ loss /{print $4}' "$1"; }
# "first worst" relative differences of two runs' step losses
diffs() {
    paste <(losses "$1") <(losses "$2") |
        awk -v n0=$STEPS 'function abs(x){return x<0?-x:x} {e=abs($2-$1)/abs($1); if(NR==1)f=e; if(e>w||e!=e)w=e; n++}
             END{if(n!=n0)print "nan nan"; else printf "%.2e %.2e\n", f, w}'
}
# layout NAME ZBPLAN_ARGS...
layout() {
    local name=$1; shift
    [ -z "${SHARE_GPU_LAYOUTS:-}" ] || [[ " $SHARE_GPU_LAYOUTS " == *" $name "* ]] || return 0
    ran=$((ran + 1))
    local d="$tmp/$name"
    mkdir -p "$d"
    if ! "$BIN/zbplan" "${MODEL:-models/tiny.yaml}" -q -o "$d/plan.yaml" "$@" 2>"$d/plan.err"; then
        echo "share_gpu.sh: $name: FAIL: zbplan: $(head -1 "$d/plan.err")"; failed=1; return
    fi
    local z=("$d/plan.yaml" --steps $STEPS)
    local rc1=0 rc2=0
    timeout 120 "$BIN/zbrun" "${z[@]}" --backend cpu >"$d/cpu.log" 2>&1 || rc1=$?
    ZB_CUDA_SHARE=1 timeout 120 "$BIN/zbrun" "${z[@]}" --backend cuda >"$d/cuda.log" 2>&1 || rc2=$?
    if [ $rc1 -ne 0 ] || [ $rc2 -ne 0 ]; then
        echo "share_gpu.sh: $name: FAIL: exit cpu $rc1, cuda $rc2: $(cat "$d/cuda.log" "$d/cpu.log" | grep -m1 zbrun)"
        failed=1; return
    fi
    local f w
    read -r f w <<<"$(diffs "$d/cpu.log" "$d/cuda.log")"
    if awk -v f="$f" -v w="$w" 'BEGIN{exit !(f<=1e-5 && w<=1e-4)}'; then
        echo "share_gpu.sh: $name: step1 $f, max $w: ok"
    else
        echo "share_gpu.sh: $name: step1 $f, max $w: FAIL (want <=1e-5, <=1e-4)"; failed=1
    fi
}
layout pp4-1f1b      --pp 4 --dp 1 --tp 1 --schedule 1f1b
layout pp4-zb-v      --pp 4 --dp 1 --tp 1 --schedule zb-v
layout pp4-zb-auto-v --pp 4 --dp 1 --tp 1 --schedule zb-auto-v
layout tp2           --pp 1 --dp 1 --tp 2 --schedule 1f1b
layout dp2           --pp 1 --dp 2 --tp 1 --schedule 1f1b
layout tp2xpp2       --pp 2 --dp 1 --tp 2 --schedule 1f1b
# a vocabulary of 300: the CUDA ops pad the logits' row stride to 384
# columns (the CPU does not pad); added after the first GPU runs, not yet
# run on one
sed -e 's/^  vocab: .*/  vocab: 300/' -e "s#path: data/corpus.txt#path: $PWD/models/data/corpus.txt#" \
    models/tiny.yaml >"$tmp/tiny-v300.yaml"
MODEL=$tmp/tiny-v300.yaml layout pp2-vocab300 --pp 2 --dp 1 --tp 1 --schedule 1f1b
MODEL=$tmp/tiny-v300.yaml layout tp2-vocab300 --pp 1 --dp 1 --tp 2 --schedule 1f1b
layout pp4-vocab1       --pp 4 --dp 1 --tp 1 --schedule 1f1b --vocab-parallel 1
layout pp4-vhalf-vocab2 --pp 4 --dp 1 --tp 1 --schedule v-half --vocab-parallel 2
[ -n "${SHARE_GPU_OUT:-}" ] || rm -rf "$tmp"
[ $ran -gt 0 ] || { echo "share_gpu.sh: FAIL: no layout named in SHARE_GPU_LAYOUTS=$SHARE_GPU_LAYOUTS"; failed=1; }
[ $failed = 0 ] && echo "share_gpu.sh: ok" || echo "share_gpu.sh: FAILED"
exit $failed
