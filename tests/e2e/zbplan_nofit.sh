#!/bin/bash
# zbplan_nofit.sh - "no candidate fits" says by how much and what to change
# (docs/zbplan.md, "When nothing fits"): GPT-2 1.5B on 1 x 2 A100-40GB at
# micro-batch 8 fits nowhere;
#   - exit 1, and under the error line the closest candidate's predicted
#     peak against what a plan may use (device memory less the margin),
#     over by the difference printed;
#   - one row per lever (recompute full, micro-batch 1, ZeRO-1, all levers,
#     more devices) with the option that makes the change; every row that
#     says "fits" is what zbplan then plans: the option added to the same
#     command plans (exit 0) with that peak and step as its #1.
# test_nofit.c checks the printed numbers against the cost model directly.
# Usage (from anywhere): BIN=bin bash tests/e2e/zbplan_nofit.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() { fails=$((fails + 1)); echo "FAIL: $*"; }

args=(models/gpt2-1.5b.yaml --set cluster.nodes=1 --set cluster.devices_per_node=2
      --set cluster.device=a100-40gb --micro-batch 8)
set +e
"$BIN/zbplan" "${args[@]}" -o "$tmp/p.yaml" >"$tmp/o" 2>"$tmp/e"
rc=$?
set -e
[ "$rc" = 1 ] || bad "exit $rc, not 1"
[ ! -e "$tmp/p.yaml" ] || bad "a plan was written"
head -1 "$tmp/e" | grep -q "^zbplan: no candidate fits: " || bad "first line: $(head -1 "$tmp/e")"
re='^zbplan: closest: dp [0-9]+ tp [0-9]+ pp [0-9]+ v [0-9]+ mb 8 [a-z0-9-]+ \[[a-z+]+\] needs ([0-9.]+) GiB per device; a plan may use 36.00 GiB \(40.00 GiB less the 10% margin\): ([0-9.]+) GiB over'
line=$(sed -n 2p "$tmp/e")
if [[ $line =~ $re ]]; then
    r=("${BASH_REMATCH[@]}")
    python3 -c "import sys; n, o = float(sys.argv[1]), float(sys.argv[2]); assert abs(n - 36 - o) < 0.011, (n, o)" \
        "${r[1]}" "${r[2]}" || bad "over is not need - limit: $line"
else
    bad "closest line: $line"
fi
grep -q "^zbplan: each change alone" "$tmp/e" || bad "no lever list: $(cat "$tmp/e")"
n=0
while IFS= read -r row; do
    what=${row:2:22}; change=${row:25:44}
    change=${change%% (*}; change=${change%% }; change=$(echo "$change" | sed 's/ *$//')
    rest=${row:70}
    n=$((n + 1))
    [[ $rest =~ ^fits:\ ([0-9.]+)\ GiB,\ step\ ([0-9.]+)\ s ]] || {
        [[ $rest =~ ^over:\ ([0-9.]+)\ GiB ]] || bad "row '$row'"; continue; }
    mem=${BASH_REMATCH[1]} step=${BASH_REMATCH[2]}
    # shellcheck disable=SC2086  # the change is options
    "$BIN/zbplan" "${args[@]}" $change --top 1 -o "$tmp/f.yaml" >"$tmp/fo" 2>"$tmp/fe" ||
        { bad "$what: '$change' does not plan: $(cat "$tmp/fe")"; continue; }
    got=$(awk '$1 == "1" && NF >= 15 {print $14, $10}' "$tmp/fo" | head -1)
    [ "$got" = "$mem $step" ] || bad "$what: '$change' plans '$got', the list said '$mem $step'"
done < <(grep '^  ' "$tmp/e")
[ "$n" = 5 ] || bad "$n lever rows, not 5: $(cat "$tmp/e")"
grep -q "^  recompute full  *--set training.recompute=full  *fits: " "$tmp/e" || bad "recompute full row"
grep -q "^  2 x the devices (4)  *--set cluster.nodes=2  *fits: " "$tmp/e" || bad "devices row"

if [ "$fails" -ne 0 ]; then echo "zbplan_nofit.sh: $fails failure(s)"; cat "$tmp/e"; exit 1; fi
echo "zbplan_nofit.sh: ok"
