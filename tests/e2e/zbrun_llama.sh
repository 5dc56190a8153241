#!/bin/bash
# zbrun_llama.sh - models/tiny-llama.yaml (GQA, SwiGLU, RMSNorm, RoPE, no
# biases, untied head) trained end to end on the CPU:
#   - the single-rank run's loss falls (20 steps: the last at least 1.0
#     below the first, every step finite);
#   - every schedule zbplan offers at pp 2 and at pp 4 (those it plans;
#     at least 8 at each), tp 2 and dp 2 print the single-rank run's 4
#     step losses within 1e-5 relative (fp32);
#   - tp 4 (kv_heads 2) is refused in one line naming kv_heads, exit 2;
#   - one layout (tp 2 x pp 2) under `mpirun -np 4` gives the same losses
#     (skipped when zbrun was built without MPI or mpirun is missing).
# Usage (from anywhere): BIN=bin bash tests/e2e/zbrun_llama.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin}
M=models/tiny-llama.yaml
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() { fails=$((fails + 1)); echo "FAIL: $*"; }

[ -x "$BIN/zbplan" ] && [ -x "$BIN/zbrun" ] || { echo "zbrun_llama.sh: build $BIN/zbplan and $BIN/zbrun first"; exit 1; }

# the 4 step losses of two runs' outputs agree within 1e-5 (relative)
same_losses() {
    python3 - "$1" "$2" <<'EOF'
import sys
def losses(path):
    return [float(l.split()[3]) for l in open(path) if l.startswith("step ")]
a, b = losses(sys.argv[1]), losses(sys.argv[2])
assert len(a) == len(b) == 4, (a, b)
assert all(abs(x - y) <= 1e-5 * abs(x) for x, y in zip(a, b)), (a, b)
EOF
}

# ---- single rank: the loss falls; its first 4 steps are the reference ----
"$BIN/zbplan" "$M" -o "$tmp/pp1.yaml" -q --pp 1 --dp 1 --tp 1 --schedule 1f1b
"$BIN/zbrun" "$tmp/pp1.yaml" --steps 20 --threads 1 >"$tmp/long.out" 2>"$tmp/err" ||
    bad "single-rank run exited $?: $(cat "$tmp/err")"
python3 - "$tmp/long.out" <<'EOF' || bad "single-rank loss did not fall: $(grep '^loss' "$tmp/long.out")"
import math, sys
loss = [float(l.split()[3]) for l in open(sys.argv[1]) if l.startswith("step ")]
assert len(loss) == 20 and all(math.isfinite(x) for x in loss), loss
assert loss[-1] < loss[0] - 1.0, loss
EOF
"$BIN/zbrun" "$tmp/pp1.yaml" --steps 4 --threads 1 >"$tmp/ref.out" 2>&1 || bad "reference run failed"

# ---- every schedule zbplan plans at pp 2 and pp 4 -------------------------
scheds=$("$BIN/zbplan" --help 2>&1 | sed -n 's/^Schedules: //p')
[ -n "$scheds" ] || bad "no schedule list in zbplan --help"
for pp in 2 4; do
    ran=0
    for s in $scheds; do
        "$BIN/zbplan" "$M" -o "$tmp/s.yaml" -q --pp $pp --dp 1 --tp 1 --schedule "$s" \
            2>/dev/null || continue # not offered for this split
        ran=$((ran + 1))
        if "$BIN/zbrun" "$tmp/s.yaml" --steps 4 --threads 1 >"$tmp/s.out" 2>&1; then
            same_losses "$tmp/ref.out" "$tmp/s.out" || bad "pp $pp $s: losses differ from one rank's"
        else
            bad "pp $pp $s: zbrun failed: $(tail -1 "$tmp/s.out")"
        fi
    done
    echo "pp $pp: $ran schedules"
    [ "$ran" -ge 8 ] || bad "pp $pp: only $ran schedules planned"
done

# ---- tp 2, dp 2 -----------------------------------------------------------
for lay in "--tp 2 --dp 1" "--dp 2 --tp 1"; do
    # shellcheck disable=SC2086
    "$BIN/zbplan" "$M" -o "$tmp/l.yaml" -q --pp 1 $lay --schedule 1f1b
    "$BIN/zbrun" "$tmp/l.yaml" --steps 4 --threads 1 >"$tmp/l.out" 2>&1 ||
        bad "$lay: zbrun failed: $(tail -1 "$tmp/l.out")"
    same_losses "$tmp/ref.out" "$tmp/l.out" || bad "$lay: losses differ from one rank's"
done

# ---- tp must divide kv_heads ----------------------------------------------
if "$BIN/zbplan" "$M" -o "$tmp/tp4.yaml" -q --pp 1 --dp 1 --tp 4 --schedule 1f1b 2>"$tmp/err"; then
    rc=0; "$BIN/zbrun" "$tmp/tp4.yaml" --steps 1 --threads 1 >/dev/null 2>"$tmp/err" || rc=$?
else
    rc=$?
fi
[ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "kv_heads" "$tmp/err" ||
    bad "tp 4 over 2 kv heads: rc $rc $(cat "$tmp/err")"

# ---- one layout under mpirun ------------------------------------------------
if ! command -v mpirun >/dev/null; then
    echo "mpirun: skipped (no mpirun)"
elif OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=1 "$BIN/zbrun" /nonexistent.yaml 2>&1 |
    grep -q "built without MPI"; then
    echo "mpirun: skipped (zbrun built without MPI)"
else
    "$BIN/zbplan" "$M" -o "$tmp/m.yaml" -q --pp 2 --dp 1 --tp 2 --schedule zb-h1
    env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
        mpirun --allow-run-as-root --oversubscribe --bind-to none -x ASAN_OPTIONS \
        -np 4 "$BIN/zbrun" "$tmp/m.yaml" --steps 4 --threads 1 >"$tmp/m.out" 2>&1 ||
        bad "mpirun -np 4: $(tail -3 "$tmp/m.out")"
    same_losses "$tmp/ref.out" "$tmp/m.out" || bad "mpirun tp 2 x pp 2: losses differ from one rank's"
fi

[ "$fails" -eq 0 ] && echo "zbrun_llama.sh: ok" || { echo "zbrun_llama.sh: $fails failure(s)"; exit 1; }
