#!/bin/bash
# zbplan_levers.sh - --levers' table over every shipped model (docs/zbplan.md,
# "Memory levers"):
#   - no two rows of the top 5 are the same but for the levers column (same
#     dp, tp, pp, v, micro-batch, m, schedule, step time and memory): a
#     lever that changes nothing there (ZeRO-1 at dp 1, selective recompute
#     under fused attention) is shown once, without it;
#   - no row has sequence parallelism at tp 1 or ZeRO-1 at dp 1;
#   - with and without --levers, no two rows of the top 5 are equal in
#     every printed number but for the schedule's name (schedules giving a
#     layout the same step and peak are one row, "(= zb-1p, ...)").
# Usage (from anywhere): BIN=bin bash tests/e2e/zbplan_levers.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() { fails=$((fails + 1)); echo "FAIL: $*"; }

for model in models/*.yaml; do
    name=$(basename "$model" .yaml)
    # tiny models plan for 4 cores, whatever this machine has
    "$BIN/zbplan" "$model" --levers --top 5 --cores 4 -o "$tmp/p.yaml" >"$tmp/o" 2>"$tmp/e" ||
        { bad "$name: $(cat "$tmp/e")"; continue; }
    awk '$1 ~ /^[0-9]+$/ && NF >= 16' "$tmp/o" >"$tmp/rows"
    [ "$(wc -l <"$tmp/rows")" -ge 2 ] || { bad "$name: $(wc -l <"$tmp/rows") rows"; continue; }
    # columns: # dp tp pp v mb m schedule solver step tokens/s MFU bubble mem headroom levers
    dups=$(awk '{print $2, $3, $4, $5, $6, $7, $8, $10, $14}' "$tmp/rows" | sort | uniq -d)
    [ -z "$dups" ] || bad "$name: rows the same but for the levers: $dups
$(cat "$tmp/rows")"
    awk '$3 == 1 && $16 ~ /\+sp/ {print "SP at tp 1: " $0} $2 == 1 && $16 ~ /\+z1/ {print "ZeRO-1 at dp 1: " $0}' \
        "$tmp/rows" >"$tmp/odd"
    [ ! -s "$tmp/odd" ] || bad "$name: $(cat "$tmp/odd")"
    # every printed number but the schedule and solver names
    dups=$(awk '{print $2, $3, $4, $5, $6, $7, $10, $11, $12, $13, $14, $15, $16}' "$tmp/rows" | sort | uniq -d)
    [ -z "$dups" ] || bad "$name --levers: rows equal but for the schedule: $dups"
    "$BIN/zbplan" "$model" --top 5 --cores 4 -o "$tmp/p.yaml" >"$tmp/o" 2>"$tmp/e" ||
        { bad "$name: $(cat "$tmp/e")"; continue; }
    awk '$1 ~ /^[0-9]+$/ && NF >= 15' "$tmp/o" >"$tmp/rows"
    dups=$(awk '{print $2, $3, $4, $5, $6, $7, $10, $11, $12, $13, $14, $15}' "$tmp/rows" | sort | uniq -d)
    [ -z "$dups" ] || bad "$name: rows equal but for the schedule: $dups
$(cat "$tmp/rows")"
done

if [ "$fails" -ne 0 ]; then echo "zbplan_levers.sh: $fails failure(s)"; exit 1; fi
echo "zbplan_levers.sh: ok"
