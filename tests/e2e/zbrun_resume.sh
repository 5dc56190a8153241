#!/bin/bash
# zbrun_resume.sh - a run killed with SIGKILL and resumed prints the same
# numbers as a run never interrupted:
#   1. an uninterrupted run of a pp 2 plan (zb-h1) for STEPS steps;
#   2. the same run with --checkpoint-every 1, killed (kill -9) as soon as
#      it printed step KILL_AT; it must really be killed (status 137, no
#      last step line);
#   3. --resume: continues after the newest complete checkpoint (>= 1 step
#      done), and every step it prints has the same loss, lr and grad norm
#      (to the printed digits) as the uninterrupted run; the checkpoint
#      folder then holds the index and one step folder only.
# Usage (from anywhere): BIN=bin bash tests/e2e/zbrun_resume.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin}
STEPS=${STEPS:-150}   # margin after KILL_AT for fast machines
KILL_AT=${KILL_AT:-4}
tmp=$(mktemp -d)
pid=
cleanup() {
    if [ -n "$pid" ]; then kill -9 "$pid" 2>/dev/null || true; fi
    rm -rf "$tmp"
}
trap cleanup EXIT
fails=0
bad() { fails=$((fails + 1)); echo "FAIL: $*"; }

[ -x "$BIN/zbplan" ] && [ -x "$BIN/zbrun" ] || { echo "zbrun_resume.sh: build $BIN/zbplan and $BIN/zbrun first"; exit 1; }

# models/tiny.yaml made cheaper per step (the kill needs time to land, not a
# big model); the data path becomes absolute as the copy lives elsewhere
python3 - models/tiny.yaml "$tmp/model.yaml" <<'EOF'
import os, sys, yaml
m = yaml.safe_load(open(sys.argv[1]))
m["model"].update(layers=4, hidden=32, seq_len=32)
m["model"].pop("ffn_hidden", None)
d = m["training"]["data"]
d["path"] = os.path.abspath(os.path.join(os.path.dirname(sys.argv[1]), d["path"]))
yaml.safe_dump(m, open(sys.argv[2], "w"))
EOF
plan="$tmp/plan.yaml"
"$BIN/zbplan" "$tmp/model.yaml" -o "$plan" -q --pp 2 --schedule zb-h1
ck="$tmp/ck"
run_args=("$plan" --steps "$STEPS" --threads 1)

# 1. uninterrupted
"$BIN/zbrun" "${run_args[@]}" >"$tmp/full.out" 2>"$tmp/full.err" ||
    { echo "uninterrupted run failed: $(cat "$tmp/full.err")"; exit 1; }

# 2. killed after step KILL_AT
"$BIN/zbrun" "${run_args[@]}" --checkpoint-every 1 --checkpoint-dir "$ck" \
    >"$tmp/killed.out" 2>"$tmp/killed.err" &
pid=$!
for _ in $(seq 1 3000); do   # up to a minute
    grep -q "^step $KILL_AT/" "$tmp/killed.out" 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.02
done
status=0
exec 3>&2 2>/dev/null   # keep bash's "Killed" job notice out of the log
kill -9 "$pid" || true
wait "$pid" || status=$?
exec 2>&3 3>&-
pid=
[ "$status" -eq 137 ] || bad "the run was not killed by SIGKILL (status $status)"
grep -q "^step $STEPS/$STEPS " "$tmp/killed.out" && bad "the run finished before the kill (raise STEPS)"
[ -f "$ck/latest.yaml" ] || bad "no checkpoint index after the kill"

# 3. resume
"$BIN/zbrun" "${run_args[@]}" --checkpoint-every 1 --checkpoint-dir "$ck" --resume \
    >"$tmp/resumed.out" 2>"$tmp/resumed.err" || bad "resumed run failed: $(cat "$tmp/resumed.err")"
python3 - "$tmp/full.out" "$tmp/resumed.out" "$STEPS" <<'EOF' || bad "resumed run differs from the uninterrupted one"
import re, sys
def steps(path):
    out = {}
    for line in open(path):
        m = re.match(r"^step (\d+)/\d+ (loss \S+ lr \S+ grad_norm \S+) ", line)
        if m:
            out[int(m.group(1))] = m.group(2)
    return out
full, resumed, total = steps(sys.argv[1]), steps(sys.argv[2]), int(sys.argv[3])
text = open(sys.argv[2]).read()
m = re.search(r"^resumed after step (\d+) ", text, re.M)
assert m, "no 'resumed after step' line"
k = int(m.group(1))
assert 1 <= k < total, k
assert sorted(resumed) == list(range(k + 1, total + 1)), sorted(resumed)
for s in resumed:
    assert resumed[s] == full[s], (s, resumed[s], full[s])
print(f"resumed after step {k}: steps {k + 1}..{total} equal")
EOF
left=$(cd "$ck" && ls)
[ "$left" = "$(printf 'latest.yaml\nstep-%08d' "$STEPS")" ] || bad "checkpoint folder holds: $left"

if [ "$fails" -ne 0 ]; then
    echo "zbrun_resume.sh: $fails check(s) failed"
    exit 1
fi
echo "zbrun_resume.sh: ok"
