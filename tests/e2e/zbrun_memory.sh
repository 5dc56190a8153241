#!/bin/bash
# zbrun_memory.sh - memory you can plan on (docs/cost-model.md 3.3):
#   - on the cpu device the planner's predicted peak per pipeline rank is
#     within 10% of what zbrun's stages allocate (report.yaml), for the
#     tiny model and a 12-layer variant, over schedules, pp, tp and dp;
#   - the same with recompute selective and full (pp 1, pp 2 zb-h1, pp 4
#     zb-v, tp 2), whose measured peaks fall: selective below none on every
#     pipeline rank, full at most selective, and below it on rank 0 (which
#     holds more than one microbatch between F and B);
#   - zbrun refuses at start-up, exit 2 and one line, a plan that cannot
#     fit the memory it may use (a GPU plan under ulimit -v 8 GiB, and
#     against MemAvailable on hosts with less than 200 GiB available),
#     saying it was made for another device;
#   - zbplan prints the capacity, the margin and each candidate's headroom,
#     and --mem-margin is checked (exit 2 when out of range).
# Usage (from anywhere): BIN=bin bash tests/e2e/zbrun_memory.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
checks=0
ok() { checks=$((checks + 1)); }
bad() { checks=$((checks + 1)); fails=$((fails + 1)); echo "FAIL: $*"; }

sed "s/^  layers: 8\b/  layers: 12/" models/tiny.yaml > "$tmp/tiny12.yaml"
sed -i "s|path: data/corpus.txt|path: $PWD/models/data/corpus.txt|" "$tmp/tiny12.yaml"
grep -q "layers: 12" "$tmp/tiny12.yaml" || { echo "FAIL: tiny12 not made"; exit 1; }
check() { # model, then zbplan options
    local m=$1; shift
    "$BIN/zbplan" "$m" "$@" -q -o "$tmp/p.yaml"
    "$BIN/zbrun" "$tmp/p.yaml" --steps 1 --threads 1 -q --report "$tmp/r.yaml" > /dev/null
    python3 - "$tmp/r.yaml" <<'PY' && ok || bad "$m $*: predicted vs measured memory"
import sys, yaml
r = yaml.safe_load(open(sys.argv[1]))
for k in r["pipeline_ranks"]:
    meas, pred = k["peak_mem_bytes"], k["predicted_peak_mem_bytes"]
    err = abs(pred - meas) / meas
    assert err <= 0.10, (k["pp_rank"], meas, pred, err)
PY
}
check models/tiny.yaml --pp 1
check models/tiny.yaml --pp 2 --schedule zb-h1
check models/tiny.yaml --pp 4 --schedule 1f1b
check models/tiny.yaml --pp 2 --schedule interleaved
check models/tiny.yaml --pp 2 --schedule zb-v
check models/tiny.yaml --pp 2 --tp 2 --schedule zb-h1
check models/tiny.yaml --dp 2 --pp 2 --schedule zb-h2
check "$tmp/tiny12.yaml" --pp 1
check "$tmp/tiny12.yaml" --pp 3 --schedule zb-h1

# recompute: predicted within 10% as above, and the measured peaks fall
check_rc() { # zbplan options
    for rc in none selective full; do
        check models/tiny.yaml "$@" --set training.recompute=$rc
        cp "$tmp/r.yaml" "$tmp/r_$rc.yaml"
    done
    python3 - "$tmp"/r_{none,selective,full}.yaml <<'PY' && ok || bad "recompute $*: measured peaks do not fall"
import sys, yaml
none, sel, full = ([k["peak_mem_bytes"] for k in yaml.safe_load(open(f))["pipeline_ranks"]]
                   for f in sys.argv[1:])
assert all(s < n for s, n in zip(sel, none)), (none, sel)
assert all(f <= s for f, s in zip(full, sel)), (sel, full)
assert len(full) == 1 or full[0] < sel[0], (sel, full)
PY
}
check_rc --pp 1
check_rc --pp 2 --schedule zb-h1
check_rc --pp 4 --schedule zb-v
check_rc --pp 2 --tp 2 --schedule zb-h1

# a GPU plan on the cpu backend: under an 8 GiB address-space limit, and
# (the sanitizer builds cannot start under ulimit -v) against MemAvailable
# where the host has less than the 235 GiB the plan needs
"$BIN/zbplan" models/gpt2-124m.yaml --dp 8 --tp 1 --pp 1 -q -o "$tmp/g.yaml"
refused() { # limit-words, then the command
    local want=$1; shift
    set +e
    out=$("$@" 2>&1)
    rc=$?
    set -e
    lines=$(printf '%s\n' "$out" | wc -l)
    if [ "$rc" = 2 ] && [ "$lines" = 1 ] &&
       grep -q "g.yaml: does not fit this host: 8 ranks need .* GiB of host memory (up to .* GiB per rank, plan made for h100-sxm) but .* GiB is available ($want)" <<<"$out"; then
        ok
    else
        bad "gpt2-124m plan ($want): rc $rc, $lines line(s): $out"
    fi
}
case "$BIN" in
    *asan*) echo "zbrun_memory.sh: the ulimit -v case skipped (sanitizer build)" ;;
    *) refused "ulimit -v" bash -c "ulimit -v $((8 * 1024 * 1024)); exec \"$BIN/zbrun\" \"$tmp/g.yaml\" --steps 1 --backend cpu" ;;
esac
avail_kb=$(sed -n 's/^MemAvailable: *\([0-9]*\) kB/\1/p' /proc/meminfo)
if [ -n "$avail_kb" ] && [ "$avail_kb" -lt $((200 * 1024 * 1024)) ]; then
    refused "MemAvailable" "$BIN/zbrun" "$tmp/g.yaml" --steps 1 --backend cpu
else
    echo "zbrun_memory.sh: the MemAvailable case skipped (this host has 200 GiB or more available)"
fi

out=$("$BIN/zbplan" models/gpt3-175b.yaml --top 2 -o "$tmp/q.yaml")
grep -q "memory: 80.00 GiB per device, 10% safety margin: a plan may use 72.00 GiB" <<<"$out" && ok || bad "capacity line: $out"
grep -q "headroom" <<<"$out" && ok || bad "headroom column: $out"
out=$("$BIN/zbplan" models/gpt3-175b.yaml --top 2 --mem-margin 20 -o "$tmp/q.yaml")
grep -q "20% safety margin: a plan may use 64.00 GiB" <<<"$out" && ok || bad "--mem-margin 20: $out"
set +e
"$BIN/zbplan" models/tiny.yaml --mem-margin 100 -o "$tmp/q.yaml" 2> "$tmp/err"
rc=$?
set -e
[ "$rc" = 2 ] && grep -q "mem-margin" "$tmp/err" && ok || bad "--mem-margin 100: rc $rc"

echo "zbrun_memory.sh: $checks checks, $fails failure(s)"
[ "$fails" = 0 ]
