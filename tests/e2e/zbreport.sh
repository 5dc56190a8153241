#!/bin/bash
# zbreport.sh - the schedule comparison end to end:
#   - two schedules planned and run 3 steps each; zbreport prints one row
#     per report with its schedule and layout, the measured and predicted
#     bubbles equal to the reports' (to the printed precision), and writes
#     an SVG that parses as XML with two bars per report and one timeline
#     box per compute action of each report's timeline;
#   - the trace of the zb-h1 run has send and recv events, one per transfer
#     of the lowered program per kept step;
#   - bad input: a plan given as a report, a missing file, no argument and
#     an unknown option exit 2 with one line on stderr.
# Usage (from anywhere): BIN=bin bash tests/e2e/zbreport.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() { fails=$((fails + 1)); echo "FAIL: $*"; }

[ -x "$BIN/zbreport" ] || { echo "zbreport.sh: build $BIN/zbreport first"; exit 1; }

for s in 1f1b zb-h1; do
    "$BIN/zbplan" models/tiny.yaml -q --dp 1 --tp 1 --pp 2 --schedule $s -o "$tmp/$s.plan.yaml"
    "$BIN/zbrun" "$tmp/$s.plan.yaml" --steps 3 --threads 1 -q --report "$tmp/$s.yaml" \
        --trace "$tmp/$s.json" || bad "zbrun $s exited $?"
done

"$BIN/zbreport" "$tmp/1f1b.yaml" "$tmp/zb-h1.yaml" -o "$tmp/cmp.svg" >"$tmp/out" 2>"$tmp/err" ||
    bad "zbreport exited $?: $(cat "$tmp/err")"
python3 - "$tmp" <<'PY' || bad "table or picture does not match the reports"
import re, sys, xml.dom.minidom, yaml
tmp = sys.argv[1]
out = open(f"{tmp}/out").read().splitlines()
rows = {l.split()[0]: l for l in out[1:3]}
boxes = 0
for s in ("1f1b", "zb-h1"):
    rep = yaml.safe_load(open(f"{tmp}/{s}.yaml"))
    line = rows[s].split()
    assert line[1] == "1/1/2/1", line
    m = re.search(r"^\S+\s+\S+\s+([\d.]+) \(\s*([\d.]+)\)", rows[s])
    assert abs(float(m.group(1)) - 100 * rep["summary"]["bubble_rate"]) <= 0.051, (m.group(1), rep["summary"])
    assert abs(float(m.group(2)) - 100 * rep["summary"]["predicted_bubble_rate"]) <= 0.051
    boxes += sum(len(r["actions"]) for r in rep["timeline"])
svg = xml.dom.minidom.parse(f"{tmp}/cmp.svg")
titles = [t.firstChild.data for t in svg.getElementsByTagName("title")]
bars = [t for t in titles if " predicted " in t or " measured " in t]
acts = [t for t in titles if re.match(r"^(F|B|W|BW)\d+(\.c\d+)?: ", t)]
assert len(bars) == 4, bars
assert len(acts) == boxes, (len(acts), boxes)
PY

python3 - "$tmp" <<'PY' || bad "trace send/recv events"
import json, sys
t = json.load(open(f"{sys.argv[1]}/zb-h1.json"))["traceEvents"]
steps = {e["args"]["step"] for e in t if e.get("cat") in ("F", "B", "W")}
send = [e for e in t if e.get("cat") == "send"]
recv = [e for e in t if e.get("cat") == "recv"]
m = 8   # tiny: 16 sequences / micro 2; pp 2: each rank sends and receives m
assert len(send) == len(recv) == 2 * m * len(steps), (len(send), len(recv), steps)
assert all(e["dur"] >= 0 for e in send + recv)
PY

# ---- bad input ---------------------------------------------------------------
expect2() { # what, then the command
    local what=$1; shift
    set +e; "$@" >"$tmp/o" 2>"$tmp/e"; local rc=$?; set -e
    [ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/e")" -eq 1 ] || bad "$what: rc $rc, stderr: $(cat "$tmp/e")"
}
expect2 "a plan as a report" "$BIN/zbreport" "$tmp/zb-h1.plan.yaml"
grep -q "zb-h1.plan.yaml:1:1: not a zbrun report" "$tmp/e" || bad "plan as report: $(cat "$tmp/e")"
expect2 "a missing file" "$BIN/zbreport" "$tmp/nope.yaml"
grep -q "nope.yaml" "$tmp/e" || bad "missing file not named: $(cat "$tmp/e")"
expect2 "no argument" "$BIN/zbreport"
expect2 "unknown option" "$BIN/zbreport" --bogus "$tmp/1f1b.yaml"
# a picture that cannot be written: exit 1, the asked-for path named (not a
# temporary file), nothing left behind
set +e; "$BIN/zbreport" "$tmp/1f1b.yaml" -o "$tmp/nodir/x.svg" >/dev/null 2>"$tmp/e"; rc=$?; set -e
[ "$rc" -eq 1 ] || bad "unwritable picture: rc $rc (want 1)"
grep -qx "zbreport: cannot create '$tmp/nodir/x.svg': No such file or directory" "$tmp/e" ||
    bad "unwritable picture: $(cat "$tmp/e")"
"$BIN/zbreport" --help | grep -q '^usage: zbreport' || bad "--help"
"$BIN/zbreport" --version | grep -q '^zbreport ' || bad "--version"

[ "$fails" -eq 0 ] && echo "zbreport.sh: ok" || { echo "zbreport.sh: $fails failure(s)"; exit 1; }
