#!/usr/bin/env bash
# plans/ is what `make plans` makes from models/ with this zbplan: every
# shipped plan is regenerated into a temporary folder and must be identical
# (run `make plans` after changing the planner). tests/unit/test_plan.c
# checks that each one passes the plan reader.
set -euo pipefail
BIN=${BIN:-bin}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/plans"
cp plans/make_plans.sh "$tmp/plans/"
ln -s "$PWD/models" "$tmp/models"
case "$BIN" in /*) ;; *) BIN="$PWD/$BIN" ;; esac
BIN="$BIN" bash "$tmp/plans/make_plans.sh" >/dev/null
fail=0
for f in plans/*.yaml; do
    if ! cmp -s "$f" "$tmp/$f"; then
        echo "FAIL: $f differs from what zbplan makes now (run make plans):"
        diff "$f" "$tmp/$f" | head -5
        fail=1
    fi
done
n=$(ls plans/*.yaml | wc -l)
[ "$(ls "$tmp"/plans/*.yaml | wc -l)" -eq "$n" ] || { echo "FAIL: plan count differs"; fail=1; }
[ $fail -eq 0 ] && echo "zbplan_plans.sh: $n shipped plans up to date"
exit $fail
