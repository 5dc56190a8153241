#!/bin/bash
# zbplan_sim.sh - end-to-end checks of `zbplan sim` beyond the CLI basics
# (tests/e2e/zbplan_cli.sh):
#   - `--solver ilp --format json` prints JSON only: issue 19's command,
#     where GLPK printed "Constructing initial basis..." before the JSON.
# Usage (from anywhere): BIN=bin bash tests/e2e/zbplan_sim.sh
set -u
cd "$(dirname "$0")/../.." || exit 1
BIN=${BIN:-bin}
Z="$BIN/zbplan"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
checks=0

ok() { checks=$((checks + 1)); }
bad() { checks=$((checks + 1)); fails=$((fails + 1)); echo "FAIL: $*"; }

[ -x "$Z" ] || { echo "zbplan_sim.sh: $Z not found"; exit 1; }

# ---- GLPK silent: stdout is exactly one JSON document ---------------------
if "$Z" sim --schedule zb-auto --stages 6 --microbatches 11 --cost-f 1308 \
    --cost-b 1570 --cost-w 2174 --cost-comm 278 --mem-f 1000 --mem-w 270 \
    --mem-limit 3000 --solver ilp --time-limit 10 --format json \
    >"$tmp/ilp.json" 2>"$tmp/err"; then
    if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["solver"].startswith("ilp")' \
        "$tmp/ilp.json" 2>"$tmp/perr"; then ok
    else bad "sim --solver ilp --format json: stdout is not one JSON document: $(head -c 200 "$tmp/ilp.json") $(cat "$tmp/perr")"; fi
else
    bad "sim --solver ilp exited $?: $(cat "$tmp/err")"
fi

echo "zbplan_sim.sh: $checks checks, $fails failed"
[ "$fails" = 0 ]
