#!/bin/bash
# zbrun_dualpipe_bidir.sh - DualPipe, bidirectional (schedule dualpipe, two
# model copies) planned and run end to end on models/tiny.yaml:
#   - zbplan --schedule DualPipe writes placement dual at pp 2 and pp 4,
#     each copy's stages listed, overlapped F&B steps in the lists;
#   - zbrun trains it (threads) with the step losses and grad norms of 1F1B
#     at the same pp;
#   - pp 4 under mpirun -np 4 (one process per rank) gives the same losses
#     (skipped without mpirun or MPI);
#   - odd pp is refused by zbplan (exit 2, one line), and a plan whose up
#     copy is split unlike its down copy is refused by zbrun (file, line).
# Usage (from anywhere): BIN=bin bash tests/e2e/zbrun_dualpipe_bidir.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() { fails=$((fails + 1)); echo "FAIL: $*"; }

[ -x "$BIN/zbplan" ] && [ -x "$BIN/zbrun" ] || { echo "zbrun_dualpipe_bidir.sh: build $BIN/zbplan and $BIN/zbrun first"; exit 1; }

. tests/e2e/lib/losses.sh

for pp in 2 4; do
    "$BIN/zbplan" models/tiny.yaml -o "$tmp/f1b$pp.yaml" -q --pp $pp --dp 1 --tp 1 --schedule 1f1b ||
        bad "zbplan 1f1b pp $pp failed"
    "$BIN/zbplan" models/tiny.yaml -o "$tmp/dp$pp.yaml" -q --pp $pp --dp 1 --tp 1 --schedule DualPipe ||
        bad "zbplan dualpipe pp $pp failed"
    grep -q '^  placement: dual$' "$tmp/dp$pp.yaml" || bad "pp $pp: the plan is not placement dual"
    grep -q 'F[0-9]*\.[01]&BW[0-9]*\.[01]' "$tmp/dp$pp.yaml" || bad "pp $pp: no overlapped step in the plan"
    [ "$(grep -c '^- {vstage: ' "$tmp/dp$pp.yaml")" = $((2 * pp)) ] || bad "pp $pp: not 2pp stages listed"
    "$BIN/zbrun" "$tmp/f1b$pp.yaml" --steps 4 --threads 1 >"$tmp/f1b$pp.out" 2>&1 || bad "1f1b pp $pp run failed"
    "$BIN/zbrun" "$tmp/dp$pp.yaml" --steps 4 --threads 1 >"$tmp/dp$pp.out" 2>&1 ||
        bad "dualpipe pp $pp run failed: $(tail -1 "$tmp/dp$pp.out")"
    same_losses "$tmp/f1b$pp.out" "$tmp/dp$pp.out" || bad "pp $pp: dualpipe losses differ from 1f1b's"
done

# ---- one process per rank (mpirun -np 4): the same losses ------------------
if command -v mpirun >/dev/null &&
    ! OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=1 "$BIN/zbrun" /nonexistent.yaml 2>&1 |
        grep -q "built without MPI"; then
    env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
        mpirun --allow-run-as-root --oversubscribe --bind-to none -x ASAN_OPTIONS -np 4 \
        "$BIN/zbrun" "$tmp/dp4.yaml" --steps 4 --threads 1 >"$tmp/mpi4.out" 2>&1 ||
        bad "dualpipe pp 4 under mpirun failed: $(tail -1 "$tmp/mpi4.out")"
    same_losses "$tmp/f1b4.out" "$tmp/mpi4.out" || bad "dualpipe pp 4 under mpirun: losses differ from 1f1b's"
else
    echo "zbrun_dualpipe_bidir.sh: mpirun part skipped (no mpirun, or zbrun without MPI)"
fi

# ---- refusals ------------------------------------------------------------------
set +e
out=$("$BIN/zbplan" models/tiny.yaml -o "$tmp/odd.yaml" -q --pp 3 --dp 1 --tp 1 --schedule dualpipe 2>&1); rc=$?
set -e
[ $rc = 2 ] && [ "$(grep -c '' <<<"$out")" = 1 ] && grep -q "dualpipe needs an even number of pipeline stages (p=3)" <<<"$out" ||
    bad "odd pp: exit $rc, '$out'"
# the up copy split unlike the down copy: vstage 4 of pp 4 takes 3 layers, 5 takes 1
python3 - "$tmp/dp4.yaml" "$tmp/skew.yaml" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
text = re.sub(r"(\{vstage: 4, .*?first_layer: 0, layers: )2", r"\g<1>3", text)
text = re.sub(r"(\{vstage: 5, .*?first_layer: )2, layers: 2", r"\g<1>3, layers: 1", text)
text = re.sub(r"\nfingerprint: .*", "", text)
open(sys.argv[2], "w").write(text)
PY
set +e
out=$("$BIN/zbrun" "$tmp/skew.yaml" --steps 1 2>&1); rc=$?
set -e
line=$(grep -n '^- {vstage: 4,' "$tmp/skew.yaml" | cut -d: -f1)
[ $rc = 2 ] && [ "$(grep -c '' <<<"$out")" = 1 ] &&
    grep -q "skew.yaml:$line:.*stage 4: the up copy must be split as the down copy" <<<"$out" ||
    bad "skewed up copy: exit $rc, '$out'"

[ "$fails" -eq 0 ] && echo "zbrun_dualpipe_bidir.sh: ok (dualpipe at pp 2 and 4 trains with 1f1b's losses)" ||
    { echo "zbrun_dualpipe_bidir.sh: $fails failure(s)"; exit 1; }
