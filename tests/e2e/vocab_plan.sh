#!/bin/bash
# vocab_plan.sh - zbplan --vocab-parallel (docs/zbplan.md): the issue's
# plans (tiny, pp 4, 1f1b and v-half, variants 1 and 2) are written with
# parallel.vocab_parallel and S/T on every rank, read back by zbplan's own
# check; bad values are one-line errors with exit 2.
set -u
BIN="${BIN:-bin}"
Z="$BIN/zbplan"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
checks=0
fails=0
ok() { checks=$((checks + 1)); }
bad() { checks=$((checks + 1)); fails=$((fails + 1)); echo "FAIL: $*"; }

for sched in 1f1b v-half; do
    for vp in 1 2; do
        out=$("$Z" models/tiny.yaml --pp 4 --cores 4 --schedule "$sched" \
              --vocab-parallel "$vp" -o "$tmp/p.yaml" 2>&1); rc=$?
        s=$(grep -c '^  - \[.*S0.*T0.*S7.*T7' "$tmp/p.yaml" 2>/dev/null)
        if [ "$rc" = 0 ] && grep -qx "  vocab_parallel: $vp" "$tmp/p.yaml" &&
           [ "$s" = 4 ] && grep -q "^vocab:" "$tmp/p.yaml" &&
           grep -q "vocab-parallel $vp\$" <<<"$out"; then ok
        else bad "$sched vocab $vp: exit $rc, $s lists with S/T: $out"; fi
    done
done
# none writes what it always wrote
"$Z" models/tiny.yaml --pp 4 --cores 4 --schedule zb-h1 -q -o "$tmp/a.yaml"
"$Z" models/tiny.yaml --pp 4 --cores 4 --schedule zb-h1 --vocab-parallel none -q -o "$tmp/b.yaml"
if cmp -s "$tmp/a.yaml" "$tmp/b.yaml" && ! grep -q "vocab_parallel\|S0" "$tmp/a.yaml"; then ok
else bad "--vocab-parallel none changed the plan"; fi

expect_error() { # expected-substring args...
    local want=$1 out rc; shift
    out=$("$Z" "$@" -o "$tmp/e.yaml" 2>&1 >/dev/null); rc=$?
    if [ "$rc" = 2 ] && [ "$(grep -c '' <<<"$out")" = 1 ] && grep -qF -- "$want" <<<"$out"; then ok
    else bad "zbplan $*: exit $rc, '$out', expected '$want'"; fi
}
expect_error "--vocab-parallel must be one of none, 1, 2, auto; got '3'" models/tiny.yaml --vocab-parallel 3
expect_error "--vocab-parallel 2 needs --pp >= 2" models/tiny.yaml --pp 1 --vocab-parallel 2

echo "vocab_plan.sh: $checks checks, $fails failed"
[ "$fails" = 0 ]
