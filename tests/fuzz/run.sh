#!/bin/bash
# run.sh - `make fuzz`: run each libFuzzer target of build-fuzz/ for
# FUZZ_SECONDS seconds on its seeds; new inputs go to build-fuzz/corpus/T
# (the seeds in the repository are not changed). Exits 1 at the first
# target that finds a crash, leak, sanitizer report or timeout; the input
# is then in build-fuzz/crash-* (or leak-*, timeout-*).
set -uo pipefail
cd "$(dirname "$0")/../.."
secs=${FUZZ_SECONDS:-60}
out=build-fuzz
seeds() {
    case $1 in
    model) echo models tests/bad/models ;;
    plan) echo plans tests/bad/plans tests/fuzz/ckpt_plan.yaml ;;
    data) echo tests/fuzz/corpus/data ;;
    checkpoint) echo tests/fuzz/corpus/checkpoint ;;
    esac
}
for t in ${FUZZ_TARGETS:-model plan data checkpoint}; do
    mkdir -p "$out/corpus/$t"
    # seeds as files (libFuzzer would also walk models/data's big corpus)
    list=()
    for s in $(seeds "$t"); do
        if [ -d "$s" ]; then list+=("$s"/*.yaml "$s"/*.bin); else list+=("$s"); fi
    done
    mkdir -p "$out/seeds/$t"
    for f in "${list[@]}"; do [ -f "$f" ] && cp "$f" "$out/seeds/$t/"; done
    "$out/fuzz_$t" -max_total_time="$secs" -max_len=65536 -timeout=20 \
        -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$out/" \
        "$out/corpus/$t" "$out/seeds/$t" >"$out/fuzz_$t.log" 2>&1
    rc=$?
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$out/fuzz_$t.log" | grep -o '[0-9]*$')
    if [ "$rc" -ne 0 ]; then
        grep -E 'ERROR|SUMMARY|Test unit written' "$out/fuzz_$t.log" | head -5
        echo "fuzz_$t: FAILED after ${runs:-?} inputs (log: $out/fuzz_$t.log)"
        exit 1
    fi
    echo "fuzz_$t: ${runs:-?} inputs in $secs s, no crash (corpus $(ls "$out/corpus/$t" | wc -l) files)"
done
