#!/bin/bash
# make_plans.sh - regenerate plans/<model>.yaml for every models/*.yaml with
# zbplan (run from the repository root; `make plans` does this).
#
#   BIN=bin bash plans/make_plans.sh
#
# Every model gets the best plan of the full search, except tiny (and its
# Llama twin tiny-llama, pinned the same way): its plan is
# what `zbrun plans/tiny.yaml` runs on the CPU in the tests and examples, so
# it is pinned to 4 pipeline ranks (threads) with the hand-made ZB-H1
# schedule: deterministic (no solver heuristics involved), splits B and W
# (so the executor runs every pass kind), and quick; planned for 4 cores
# (--cores 4: one thread per rank), so the plan does not depend on the
# machine that makes it. tiny-vocab (32k vocabulary) is pinned to the
# same 4 ranks with 1F1B, the naive placement vocabulary parallelism is
# measured against (issue 32).
set -euo pipefail
cd "$(dirname "$0")/.."
ZBPLAN="${BIN:-bin}/zbplan"
[ -x "$ZBPLAN" ] || { echo "make_plans.sh: $ZBPLAN not found (run make)" >&2; exit 1; }

args_for() {
    case "$1" in
        tiny|tiny-llama) echo "--dp 1 --tp 1 --pp 4 --schedule zb-h1 --cores 4" ;;
        tiny-vocab) echo "--dp 1 --tp 1 --pp 4 --schedule 1f1b --cores 4" ;;
        *) echo "" ;;
    esac
}

status=0
for model in models/*.yaml; do
    name=$(basename "$model" .yaml)
    out="plans/$name.yaml"
    # shellcheck disable=SC2046
    if "$ZBPLAN" "$model" -q -o "$out" $(args_for "$name"); then
        echo "plans: $out"
    else
        echo "plans: FAILED for $model" >&2
        status=1
    fi
done
exit $status
