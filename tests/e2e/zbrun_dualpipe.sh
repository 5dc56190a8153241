#!/bin/bash
# zbrun_dualpipe.sh - DualPipeV planned and run end to end:
#   - zbplan --schedule dualpipev writes overlapped F&B steps (F3.0&BW1.1)
#     at pp 2 and pp 4 on models/tiny.yaml, and zbrun trains them with the
#     step losses of 1F1B at the same pp (the two passes of an overlapped
#     step run one after the other on the CPU backend);
#   - the trace has one compute event per pass (two per overlapped step);
#   - pp 4 under mpirun -np 4 (one process per rank) gives the same losses
#     (skipped without mpirun or MPI);
#   - PyTorch's ScheduleDualPipeV CSVs (tests/pytorch/, overlapped cells
#     "(0F3;3B1)OVERLAP_F_B") import, export to the same bytes, equal zb's
#     own dualpipev export, and simulate to the same span;
#   - DualPipeV and ZBVZeroBubble (PyTorch's names) are dualpipev and zb-v,
#     and both --help texts list every schedule;
#   - a plan whose overlapped step is not an F then a B or BW, or whose
#     step waits for itself, is refused with a one-line error naming the
#     file, line and action, exit status 2.
# Usage (from anywhere): BIN=bin bash tests/e2e/zbrun_dualpipe.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() { fails=$((fails + 1)); echo "FAIL: $*"; }

[ -x "$BIN/zbplan" ] && [ -x "$BIN/zbrun" ] || { echo "zbrun_dualpipe.sh: build $BIN/zbplan and $BIN/zbrun first"; exit 1; }

. tests/e2e/lib/losses.sh

for pp in 2 4; do
    "$BIN/zbplan" models/tiny.yaml -o "$tmp/f1b$pp.yaml" -q --pp $pp --dp 1 --tp 1 --schedule 1f1b ||
        bad "zbplan 1f1b pp $pp failed"
    "$BIN/zbplan" models/tiny.yaml -o "$tmp/dpv$pp.yaml" -q --pp $pp --dp 1 --tp 1 --schedule dualpipev ||
        bad "zbplan dualpipev pp $pp failed"
    grep -q 'F[0-9]*\.[01]&BW[0-9]*\.[01]' "$tmp/dpv$pp.yaml" || bad "pp $pp: no overlapped step in the plan"
    "$BIN/zbrun" "$tmp/f1b$pp.yaml" --steps 4 --threads 1 >"$tmp/f1b$pp.out" 2>&1 || bad "1f1b pp $pp run failed"
    "$BIN/zbrun" "$tmp/dpv$pp.yaml" --steps 4 --threads 1 --trace "$tmp/dpv$pp.json" \
        >"$tmp/dpv$pp.out" 2>&1 || bad "dualpipev pp $pp run failed: $(tail -1 "$tmp/dpv$pp.out")"
    same_losses "$tmp/f1b$pp.out" "$tmp/dpv$pp.out" || bad "pp $pp: dualpipev losses differ from 1f1b's"
    python3 - "$tmp/dpv$pp.yaml" "$tmp/dpv$pp.json" <<'PY' || bad "pp $pp: trace events do not match the plan's passes"
import json, sys, yaml
plan = yaml.safe_load(open(sys.argv[1]))
passes = sum(len(t.split("&")) for r in plan["schedule"]["ranks"] for t in r)
ev = [e for e in json.load(open(sys.argv[2]))["traceEvents"]
      if e["ph"] == "X" and e["cat"] in ("F", "B", "W", "BW")]
steps = {e["args"]["step"] for e in ev}
assert len(ev) == len(steps) * passes, (len(ev), len(steps), passes)
PY
done

# ---- one process per rank (mpirun -np 4): the same losses ------------------
if command -v mpirun >/dev/null &&
    ! OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=1 "$BIN/zbrun" /nonexistent.yaml 2>&1 |
        grep -q "built without MPI"; then
    env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
        mpirun --allow-run-as-root --oversubscribe --bind-to none -x ASAN_OPTIONS -np 4 \
        "$BIN/zbrun" "$tmp/dpv4.yaml" --steps 4 --threads 1 >"$tmp/mpi4.out" 2>&1 ||
        bad "dualpipev pp 4 under mpirun failed: $(tail -1 "$tmp/mpi4.out")"
    same_losses "$tmp/f1b4.out" "$tmp/mpi4.out" || bad "dualpipev pp 4 under mpirun: losses differ from 1f1b's"
else
    echo "zbrun_dualpipe.sh: mpirun part skipped (no mpirun, or zbrun without MPI)"
fi

# ---- PyTorch's CSVs (tests/pytorch/README.md) round-trip --------------------
for f in tests/pytorch/dualpipev_p2_m4.csv tests/pytorch/dualpipev_p3_m6.csv; do
    b=$(basename "$f" .csv)
    "$BIN/zbplan" sim --import "$f" --export "$tmp/$b.csv" >"$tmp/$b.out" 2>&1 ||
        bad "$b: import failed: $(tail -1 "$tmp/$b.out")"
    cmp -s "$f" "$tmp/$b.csv" || bad "$b: import then export changed the bytes"
    p=${b#dualpipev_p}; p=${p%_m*}; m=${b#*_m}
    "$BIN/zbplan" sim --schedule dualpipev --stages "$p" --microbatches "$m" \
        --export "$tmp/$b.zb.csv" >/dev/null || bad "$b: zbplan sim dualpipev failed"
    cmp -s "$f" "$tmp/$b.zb.csv" || bad "$b: zb's dualpipev differs from PyTorch's"
    # the imported order scores as zb's own
    a=$("$BIN/zbplan" sim --import "$f" --fb-overlap 0.5 | sed -n 2p)
    z=$("$BIN/zbplan" sim --schedule dualpipev --stages "$p" --microbatches "$m" --fb-overlap 0.5 | sed -n 2p)
    [ -n "$a" ] && [ "$a" = "$z" ] || bad "$b: imported span '$a', zb's '$z'"
done

f=tests/pytorch/zbv_p2_m3.csv
"$BIN/zbplan" sim --import "$f" --export "$tmp/zbv.csv" >/dev/null || bad "zbv_p2_m3: import failed"
sed 's/^,//' "$f" | cmp -s - "$tmp/zbv.csv" || bad "zbv_p2_m3: import then export changed more than the idle cell"
"$BIN/zbplan" sim --schedule ZBVZeroBubble --stages 2 --microbatches 3 --export "$tmp/zbv.zb.csv" >/dev/null
cmp -s "$tmp/zbv.csv" "$tmp/zbv.zb.csv" || bad "zbv_p2_m3: zb-v differs from PyTorch's ZBV"

# ---- names: PyTorch's, any case; --help lists every schedule ----------------
a=$("$BIN/zbplan" sim --schedule DualPipeV --stages 3 --microbatches 7 --format json) || bad "sim DualPipeV failed"
z=$("$BIN/zbplan" sim --schedule dualpipev --stages 3 --microbatches 7 --format json)
[ "$a" = "$z" ] || bad "DualPipeV and dualpipev differ"
"$BIN/zbplan" sim --schedule ZBVZeroBubble --stages 2 --microbatches 4 | grep -q '^schedule zb-v ' ||
    bad "ZBVZeroBubble is not zb-v"
for cmd in "" sim; do
    "$BIN/zbplan" $cmd --help | grep -q '^Schedules: .* dualpipev v-half v-min dualpipe$' ||
        bad "zbplan $cmd --help does not list every schedule"
done

# ---- bad overlapped steps ----------------------------------------------------
refused() { # plan, expected text
    local out rc=0
    out=$("$BIN/zbrun" "$1" --steps 1 --threads 1 2>&1) || rc=$?
    [ "$rc" = 2 ] || bad "$(basename "$1"): exit $rc, want 2"
    [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || bad "$(basename "$1"): not one line: $out"
    case "$out" in *"$2"*) ;; *) bad "$(basename "$1"): got '$out', want '$2'" ;; esac
}
sed 's/F3\.0&BW1\.1/F3.0\&W1.1/' "$tmp/dpv2.yaml" >"$tmp/w.yaml"
refused "$tmp/w.yaml" "bad overlapped step 'F3.0&W1.1' (expected an F, '&', then a B or BW"
sed 's/F3\.0&BW1\.1/F3.0\&BW1.9/' "$tmp/dpv2.yaml" >"$tmp/range.yaml"
refused "$tmp/range.yaml" "action 'F3.0&BW1.9' out of range"
# rank 1 runs F7.0 and BW7.0 as one step: the backward waits, through the
# V's turn on rank 0, for the step's own forward (a deadlock)
python3 - "$tmp/dpv2.yaml" "$tmp/self.yaml" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
lines = t.split("\n")
i = [k for k, l in enumerate(lines) if l.startswith("  ranks:")][0] + 2   # rank 1's list
acts = lines[i][len("  - ["):-1].split(", ")
f = acts.index("F7.0&BW5.1")
acts[f] = "F7.0&BW7.0"
b = acts.index("B7.0")
acts[b] = "BW5.1"
acts.remove("W7.0")
lines[i] = "  - [" + ", ".join(acts) + "]"
open(sys.argv[2], "w").write("\n".join(lines))
PY
refused "$tmp/self.yaml" "deadlock"

[ "$fails" = 0 ] && echo "zbrun_dualpipe.sh: ok (dualpipev at pp 2 and 4 trains with 1f1b's losses)" || { echo "zbrun_dualpipe.sh: $fails failure(s)"; exit 1; }
