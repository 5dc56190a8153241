#!/bin/bash
# zb_hostile.sh - hostile and careless inputs (issue "hostile inputs and
# faults"): each case must end with the right exit status and one clear
# line, never a crash, a hang or silently wrong numbers.
#   - every tests/bad/plans/NAME.yaml: zbrun exits 2 printing exactly NAME.err
# Usage (from anywhere): BIN=bin bash tests/e2e/zb_hostile.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0 checks=0
ok() { checks=$((checks + 1)); }
bad() { checks=$((checks + 1)); fails=$((fails + 1)); echo "FAIL: $*"; }

[ -x "$BIN/zbplan" ] && [ -x "$BIN/zbrun" ] || { echo "zb_hostile.sh: build $BIN first"; exit 1; }

# run PROG ARGS...: rc, $tmp/out, $tmp/err (killed after 120 s: a hang fails)
run() {
    rc=0
    timeout -s KILL 120 "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
}
# expect RC REGEX WHAT: the last run exited RC with one stderr line matching REGEX
expect() {
    local lines
    lines=$(wc -l <"$tmp/err")
    if [ "$rc" -eq "$1" ] && [ "$lines" -eq 1 ] && grep -Eq -- "$2" "$tmp/err"; then ok
    else bad "$3: exit $rc (want $1), stderr: $(head -c 400 "$tmp/err")"; fi
}

# ---- the bad-plan corpus -------------------------------------------------
for y in tests/bad/plans/*.yaml; do
    run "$BIN/zbrun" "$y" --steps 1 --threads 1 -q
    if [ "$rc" -eq 2 ] && diff -q "$tmp/err" "${y%.yaml}.err" >/dev/null; then ok
    else bad "$y: exit $rc, stderr: $(cat "$tmp/err")"; fi
done

echo "zb_hostile.sh: $((checks - fails))/$checks checks passed"
[ "$fails" -eq 0 ]
