#!/bin/bash
# pytorch_csv.sh - PyTorch's own schedule CSVs (tests/pytorch/, written by
# tests/pytorch/gen_csv.py with torch's _dump_csv; README.md there names
# the torch version) against zbplan:
#   - every fixture imports into `zbplan sim` and exports back to the same
#     cells (PyTorch's idle cells aside, which zb skips);
#   - on uniform costs (F = B = W = 1, M_B 1, M_W 1/2 per rank) the zb
#     schedule of the same name or alias (DualPipeV, ZBVZeroBubble,
#     Interleaved1F1B, InterleavedZeroBubble) is never longer than
#     PyTorch's order and never holds more activation memory;
#   - Schedule1F1B's order (PyTorch 2.15 _get_pipeline_order: the last rank
#     skips F0 and runs F m) is refused with one line naming the gap;
#   - the comparison can fail: zb's gpipe against PyTorch's 1F1B-interleaved
#     order is found longer.
# Usage: BIN=bin bash tests/e2e/pytorch_csv.sh   (from the repository root)
set -uo pipefail
BIN=${BIN:-bin}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0 checks=0
ok() { checks=$((checks + 1)); }
bad() { checks=$((checks + 1)); fails=$((fails + 1)); echo "FAIL: $*"; }
costs=(--cost-f 1 --cost-b 1 --cost-w 1 --mem-f 1 --mem-w 0.5 --format json)

# "span peak" of a zbplan sim JSON on stdin
span_peak() {
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["max_span"], max(s["peak_mem"] for s in d["stages"]))'
}

# The same cells, idle ones dropped: file a (PyTorch's) and b (zb's export)
same_cells() {
    python3 - "$1" "$2" <<'EOF'
import sys
rows = [[[c for c in line.split(",") if c] for line in open(f, newline="").read().split("\r\n") if line]
        for f in sys.argv[1:]]
sys.exit(0 if rows[0] == rows[1] else 1)
EOF
}

# zb's schedule (name) at p, m is not longer and not larger than PyTorch's
# order f: exit 0, or 1 with the two "span peak" pairs on stdout
not_worse() { # f name p m
    local theirs ours
    theirs=$("$BIN/zbplan" sim --import "$1" "${costs[@]}" | span_peak) || return 2
    ours=$("$BIN/zbplan" sim --schedule "$2" --stages "$3" --microbatches "$4" "${costs[@]}" | span_peak) || return 2
    python3 -c 'import sys; t=list(map(float,sys.argv[1].split())); o=list(map(float,sys.argv[2].split())); sys.exit(0 if o[0] <= t[0] + 1e-9 and o[1] <= t[1] + 1e-9 else 1)' "$theirs" "$ours" ||
        { echo "PyTorch $theirs, zb $ours"; return 1; }
}

n=0
for f in tests/pytorch/*.csv; do
    b=$(basename "$f" .csv)
    stem=${b%_p*}; p=${b#*_p}; p=${p%_m*}; m=${b#*_m}
    case $stem in
        dualpipev) name=DualPipeV ;;
        zbv) name=ZBVZeroBubble ;;
        izb) name=InterleavedZeroBubble ;;
        interleaved) name=Interleaved1F1B ;;
        1f1b)
            out=$("$BIN/zbplan" sim --import "$f" 2>&1); rc=$?
            if [ $rc = 2 ] && [ "$(grep -c '' <<<"$out")" = 1 ] &&
               grep -q "missing F of mb $m chunk 0" <<<"$out"; then ok
            else bad "$b: expected the one-line refusal of F$m, got exit $rc: $out"; fi
            continue ;;
        *) bad "$b: no zb schedule named for fixture stem '$stem'"; continue ;;
    esac
    n=$((n + 1))
    "$BIN/zbplan" sim --import "$f" --export "$tmp/$b.csv" >"$tmp/$b.out" 2>&1 &&
        same_cells "$f" "$tmp/$b.csv" && ok || bad "$b: import then export changed the cells: $(tail -1 "$tmp/$b.out")"
    why=$(not_worse "$f" "$name" "$p" "$m") && ok || bad "$b: zb's $name is worse than PyTorch's order at p $p m $m: $why"
done
[ "$n" -ge 14 ] && ok || bad "only $n fixtures compared"

# the comparison can fail
why=$(not_worse tests/pytorch/interleaved_p4_m8.csv gpipe 4 8)
[ $? = 1 ] && ok || bad "gpipe was not found longer than PyTorch's Interleaved1F1B at p 4 m 8 ($why)"

# the alias: InterleavedZeroBubble is zb-v
"$BIN/zbplan" sim --schedule interleavedzerobubble --stages 2 --microbatches 4 | grep -q '^schedule zb-v ' &&
    ok || bad "InterleavedZeroBubble is not zb-v"

[ "$fails" = 0 ] && echo "pytorch_csv.sh: $checks checks, 0 failed" ||
    { echo "pytorch_csv.sh: $checks checks, $fails failed"; exit 1; }
