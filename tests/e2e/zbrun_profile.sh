#!/bin/bash
# zbrun_profile.sh - profile, then replan (functional; the accuracy is a
# benchmark, tests/bench/replan.sh):
#   - zbrun --profile writes a profile with one vstage row per virtual stage,
#     p2p, all-reduce and per-rank memory entries, beside the predictions;
#   - zbplan --profile marks the covered layout "measured", uses the
#     measured times in the plan (its stage times are not the analytic
#     ones) and says "analytic" for a micro-batch the profile does not cover;
#   - a missing or damaged profile is bad input: exit 2, one line naming it.
# Usage (from anywhere): BIN=bin bash tests/e2e/zbrun_profile.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
checks=0
ok() { checks=$((checks + 1)); }
bad() { checks=$((checks + 1)); fails=$((fails + 1)); echo "FAIL: $*"; }

"$BIN/zbplan" models/tiny.yaml --pp 2 --schedule zb-h1 -q -o "$tmp/a.yaml"
"$BIN/zbrun" "$tmp/a.yaml" --steps 3 --threads 1 -q --profile "$tmp/prof.yaml"
python3 - "$tmp/prof.yaml" <<'PY' && ok || bad "profile contents"
import sys, yaml
p = yaml.safe_load(open(sys.argv[1]))
assert p["profile"] == 1 and p["device"] == "cpu"
assert p["layout"]["pp"] == 2 and p["layout"]["micro_batch"] == 2
assert len(p["vstages"]) == 2
for r in p["vstages"]:
    for k in ("t_f", "t_b", "t_w"):
        assert r[k] > 0 and r["predicted_" + k] > 0, (k, r)
    assert r["samples_f"] > 0 and r["samples_bw"] == 0
assert p["vstages"][0]["embed"] and p["vstages"][1]["head"]
assert p["p2p"]["measured_s"] > 0 and p["p2p"]["bytes"] == 2 * 64 * 64 * 4
assert p["step"]["measured_s"] >= p["step"]["pipeline_s"] > 0
assert len(p["ranks"]) == 2 and all(r["peak_mem_bytes"] > 0 for r in p["ranks"])
assert p["allreduce"]["embedding_s"] > 0   # tied embedding over pp 2
PY

"$BIN/zbplan" models/tiny.yaml --pp 2 --schedule zb-h1 --profile "$tmp/prof.yaml" -o "$tmp/b.yaml" >"$tmp/out"
grep -q '^wrote .*costs measured$' "$tmp/out" && ok || bad "replan does not say measured: $(tail -1 "$tmp/out")"
python3 - "$tmp/a.yaml" "$tmp/b.yaml" "$tmp/prof.yaml" <<'PY' && ok || bad "replanned stage times are not the measured ones"
import sys, yaml
a, b, p = (yaml.safe_load(open(f)) for f in sys.argv[1:])
same = all(sb["layers"] == r["layers"] for sb, r in zip(b["stages"], p["vstages"]))
for sa, sb, r in zip(a["stages"], b["stages"], p["vstages"]):
    assert sa["t_f"] != sb["t_f"]
    # two rows, one extra part per row: the fit reproduces each row (when
    # the measured times did not move a layer to the other stage)
    if same:
        assert abs(sb["t_f"] - r["t_f"]) <= 1e-9 + 1e-6 * r["t_f"], (sb["t_f"], r["t_f"])
PY
"$BIN/zbplan" models/tiny.yaml --pp 2 --schedule zb-h1 --micro-batch 4 --profile "$tmp/prof.yaml" -o "$tmp/c.yaml" >"$tmp/out"
grep -q 'costs analytic$' "$tmp/out" && ok || bad "uncovered micro-batch not analytic: $(tail -1 "$tmp/out")"

expect_bad() {
    set +e
    "$BIN/zbplan" models/tiny.yaml --pp 2 --profile "$1" -o "$tmp/x.yaml" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    set -e
    if [ $rc -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "$2" "$tmp/err" &&
       [ ! -e "$tmp/x.yaml" ]; then ok
    else bad "profile $1: rc $rc: $(cat "$tmp/err")"; fi
}
expect_bad "$tmp/none.yaml" "none.yaml"
sed 's/^p2p: .*/p2p: {bytes: 1}/' "$tmp/prof.yaml" >"$tmp/broken.yaml"
expect_bad "$tmp/broken.yaml" "broken.yaml:[0-9]*:[0-9]*: .*measured_s"

echo "zbrun_profile.sh: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
