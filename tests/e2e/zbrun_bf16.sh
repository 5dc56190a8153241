#!/bin/bash
# zbrun_bf16.sh - bf16 activation storage through the whole run (the CPU
# test hook ZB_ACT_BF16=1, docs/zbrun.md "The CUDA backend": the CPU stores
# activations as the CUDA backend does under precision bf16): at pp 4
# zb-v (half-size messages between ranks, the V turn on one rank), tp 2 x
# pp 2 (TP sums in fp32, then cast), 3 steps of models/tiny.yaml:
#   - every step's loss within 1e-3 relative of the fp32 run's, and not
#     all equal (the bf16 path really ran);
#   - the same bf16 run twice gives the same step lines;
#   - each rank's activation peak (report.yaml) is at most 0.6 of the fp32
#     run's, and its static bytes 18/16 of fp32's (the GEMMs' bf16 copy of
#     the weights).
# Usage (from anywhere): BIN=bin bash tests/e2e/zbrun_bf16.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
checks=0
ok() { checks=$((checks + 1)); }
bad() { checks=$((checks + 1)); fails=$((fails + 1)); echo "FAIL: $*"; }

run() { # name, bf16 0|1, out
    ZB_ACT_BF16=$2 "$BIN/zbrun" "$tmp/$1.yaml" --steps 3 --threads 1 \
        --report "$tmp/$3.yaml" > "$tmp/$3.out" 2>&1 ||
        { bad "$1 bf16=$2: zbrun exited $?: $(tail -1 "$tmp/$3.out")"; return 1; }
}

layout() { # name, then zbplan options
    local n=$1; shift
    "$BIN/zbplan" models/tiny.yaml -o "$tmp/$n.yaml" -q "$@"
    run "$n" 0 "$n.f" && run "$n" 1 "$n.b" && run "$n" 1 "$n.b2" || return 0
    if diff <(grep '^step' "$tmp/$n.b.out" | cut -d' ' -f1-8) \
            <(grep '^step' "$tmp/$n.b2.out" | cut -d' ' -f1-8) > /dev/null; then
        ok
    else
        bad "$n: two bf16 runs differ"
    fi
    python3 - "$tmp/$n.f" "$tmp/$n.b" <<'PY' && ok || bad "$n: bf16 vs fp32"
import sys, yaml
f, b = sys.argv[1], sys.argv[2]
def losses(p):
    return [float(l.split()[3]) for l in open(p + ".out") if l.startswith("step ")]
lf, lb = losses(f), losses(b)
assert len(lf) == len(lb) == 3, (lf, lb)
rel = [abs(x - y) / x for x, y in zip(lf, lb)]
assert max(rel) < 1e-3 and max(rel) > 0, rel
rf, rb = yaml.safe_load(open(f + ".yaml")), yaml.safe_load(open(b + ".yaml"))
assert len(rf["ranks"]) == len(rb["ranks"]) > 0
for kf, kb in zip(rf["ranks"], rb["ranks"]):
    af, ab = kf["act_peak_bytes"], kb["act_peak_bytes"]
    assert 0 < ab <= 0.6 * af, (kf["rank"], ab, af)
    # static: fp32 params, grads, AdamW m, v (16 B), + the bf16 copy (2 B)
    assert kb["static_bytes"] == kf["static_bytes"] * 18 / 16, kb
PY
}

layout pp4zbv --pp 4 --dp 1 --tp 1 --schedule zb-v
layout tp2pp2 --pp 2 --dp 1 --tp 2 --schedule 1f1b
if [ "$fails" -ne 0 ]; then echo "zbrun_bf16.sh: $fails of $checks checks failed"; exit 1; fi
echo "zbrun_bf16.sh: ok ($checks checks)"
