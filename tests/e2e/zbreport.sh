#!/bin/bash
# zbreport.sh - the schedule comparison end to end:
#   - two schedules planned and run 3 steps each; zbreport prints one row
#     per report named by its file (or --label), with its schedule and
#     layout, the measured and predicted bubbles and step times equal to the
#     reports' (to the printed precision), and a note that 3-step runs are
#     too short to rank schedules; it writes an SVG that parses as XML with
#     two bubble and two step-time bars per report, each with its value
#     printed, round ticks, a colour key, the note, one measured timeline
#     box per compute action of each report's timeline and one planned box
#     per action of its plan;
#   - the trace of the zb-h1 run has send and recv events, one per transfer
#     of the lowered program per kept step;
#   - a report names its plan by path and content hash; after the plan file
#     is overwritten zbreport warns and draws no planned rows;
#   - --diff of two plans: the schedule's name and actions and the predicted
#     step time (with its relative change) differ, the model does not;
#     a plan with itself: no differences;
#   - bad input: a plan given as a report, a missing file, no argument and
#     an unknown option, --diff of a report or of one file, exit 2 with one
#     line on stderr.
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
"$BIN/zbreport" "$tmp/1f1b.yaml" "$tmp/zb-h1.yaml" --label one --label two >"$tmp/lab" ||
    bad "zbreport --label exited $?"
awk 'NR==2 || NR==3 {print $1 " " $2}' "$tmp/lab" | tr '\n' ' ' | grep -qx 'one 1f1b two zb-h1 ' ||
    bad "--label rows: $(head -3 "$tmp/lab")"
python3 - "$tmp" <<'PY' || bad "table or picture does not match the reports"
import re, sys, xml.dom.minidom, yaml
tmp = sys.argv[1]
out = open(f"{tmp}/out").read().splitlines()
assert out[0].split()[:2] == ["run", "schedule"], out[0]
rows = {l.split()[0]: l for l in out[1:3]}
boxes = 0
for s in ("1f1b", "zb-h1"):
    rep = yaml.safe_load(open(f"{tmp}/{s}.yaml"))
    line = rows[s].split()
    assert line[1] == s and line[2] == "1/1/2/1", line
    m = re.search(r"^\S+\s+\S+\s+\S+\s+([\d.]+) \(\s*([\d.]+)\)\s+\S+\s+([\d.]+) \(\s*([\d.]+)\)", rows[s])
    sm = rep["summary"]
    assert abs(float(m.group(1)) - 100 * sm["bubble_rate"]) <= 0.051, (m.group(1), sm)
    assert abs(float(m.group(2)) - 100 * sm["predicted_bubble_rate"]) <= 0.051
    assert abs(float(m.group(3)) - 1e3 * sm["step_s"]) <= 0.0051, (m.group(3), sm)
    assert abs(float(m.group(4)) - 1e3 * sm["predicted_step_s"]) <= 0.0051, (m.group(4), sm)
    boxes += sum(len(r["actions"]) for r in rep["timeline"])
note = [l for l in out if l.startswith("note: ")]
assert len(note) == 1 and "a run of 3 steps is too short to rank schedules" in note[0], note
svg = xml.dom.minidom.parse(f"{tmp}/cmp.svg")
titles = [t.firstChild.data for t in svg.getElementsByTagName("title")]
texts = [t.firstChild.data for t in svg.getElementsByTagName("text") if t.firstChild]
bars = [t for t in titles if " predicted " in t or " measured " in t]
acts = [t for t in titles if re.match(r"^(F|B|W|BW)\d+(\.c\d+)?: ", t)]
plans = [t for t in titles if re.match(r"^plan (F|B|W|BW)\d+(\.c\d+)?: ", t)]
assert len(bars) == 8, bars   # bubble and step time, predicted and measured
assert len(acts) == boxes, (len(acts), boxes)
assert len(plans) == boxes, (len(plans), boxes)   # one step planned, one measured
for b in bars:   # every bar's value is printed beside it
    v = float(b.split()[-2])
    assert any(t in ("%.1f" % v, "%.1f%%" % v) for t in texts), b
for k in ("predicted (plan)", "measured (run)", "F", "B", "W", "BW", "bubble rate", "step time (ms)"):
    assert k in texts, k
assert any(t.startswith("note: a run of 3 steps") for t in texts), "note not drawn"
# the step's end is drawn as a wait: each rank done early waits until the
# last pass of its panel ends (the planned 1f1b has such ranks)
ends = [t for t in titles if "step-end wait for the last rank's passes: " in t]
assert any(t.startswith("plan step-end wait") for t in ends), ends
assert any(t.startswith("step-end wait: a rank done") for t in texts), "no wait in the key"
last = max(float(t.split("-")[-1].split()[0]) for t in plans + acts)
for t in ends:
    assert float(t.split("-")[-1].split()[0]) <= last + 1e-3, (t, last)
# round ticks: each axis (tick labels on one line, from one x) counts 0,
# d, 2d, ... with d 1, 2 or 5 x 10^k
import collections, math
axes = collections.defaultdict(list)
for t in svg.getElementsByTagName("text"):
    if t.getAttribute("font-size") == "10" and t.getAttribute("text-anchor") and t.firstChild:
        axes[t.getAttribute("y")].append(float(t.firstChild.data.split()[0]))
assert len(axes) == 2, axes   # bars (two charts on one line) and timelines
for y, vals in axes.items():
    for chart in ([vals] if len(set(vals)) == len(vals) else [vals[:vals.index(0, 1)], vals[vals.index(0, 1):]]):
        d = chart[1] - chart[0]
        assert chart[0] == 0 and all(abs(chart[i] - i * d) < 1e-9 for i in range(len(chart))), chart
        m = d / 10 ** math.floor(math.log10(d))
        assert any(abs(m - k) < 1e-9 for k in (1, 2, 5)), (d, chart)
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
expect2 "--label count" "$BIN/zbreport" "$tmp/1f1b.yaml" "$tmp/zb-h1.yaml" --label one
# a picture that cannot be created: refused before any report is read
# (docs/files.md), exit 2, the asked-for path named (not a temporary
# file), nothing left behind
set +e; "$BIN/zbreport" "$tmp/1f1b.yaml" -o "$tmp/nodir/x.svg" >/dev/null 2>"$tmp/e"; rc=$?; set -e
[ "$rc" -eq 2 ] || bad "unwritable picture: rc $rc (want 2)"
grep -qx "zbreport: -o $tmp/nodir/x.svg: cannot create: No such file or directory" "$tmp/e" ||
    bad "unwritable picture: $(cat "$tmp/e")"
# a report names the plan it ran: path and content hash (FNV-1a 64 of the
# file's bytes, computed here independently); a plan overwritten since is
# not drawn, and zbreport says so
python3 - "$tmp" <<'PY' || bad "the report does not name its plan by content hash"
import sys, yaml
tmp = sys.argv[1]
run = yaml.safe_load(open(f"{tmp}/zb-h1.yaml"))["run"]
h = 14695981039346656037
for b in open(run["plan_path"], "rb").read():
    h = ((h ^ b) * 1099511628211) & (2**64 - 1)
assert run["plan_path"] == f"{tmp}/zb-h1.plan.yaml" and run["plan_hash"] == "%016x" % h, run
PY
cp "$tmp/zb-h1.plan.yaml" "$tmp/keep.yaml"
"$BIN/zbplan" models/tiny.yaml -q --dp 1 --tp 1 --pp 2 --schedule 1f1b -o "$tmp/zb-h1.plan.yaml"
"$BIN/zbreport" "$tmp/zb-h1.yaml" -o "$tmp/changed.svg" >/dev/null 2>"$tmp/e" || bad "zbreport, plan changed: exit $?"
grep -qx "zbreport: warning: $tmp/zb-h1.yaml: the plan on disk ($tmp/zb-h1.plan.yaml, content hash [0-9a-f]\{16\}) is not the one that ran ([0-9a-f]\{16\}); its planned rows are not drawn" "$tmp/e" ||
    bad "plan changed: stderr '$(cat "$tmp/e")'"
! grep -q '<title>plan ' "$tmp/changed.svg" || bad "plan changed: the wrong plan was drawn"
cp "$tmp/keep.yaml" "$tmp/zb-h1.plan.yaml"
"$BIN/zbreport" "$tmp/zb-h1.yaml" -o "$tmp/same.svg" >/dev/null 2>"$tmp/e" || bad "zbreport: exit $?"
[ ! -s "$tmp/e" ] && grep -q '<title>plan ' "$tmp/same.svg" || bad "plan restored: not drawn: $(cat "$tmp/e")"

# --diff: what differs between two plans and their predictions
"$BIN/zbreport" --diff "$tmp/1f1b.plan.yaml" "$tmp/zb-h1.plan.yaml" >"$tmp/diff" || bad "--diff exited $?"
python3 - "$tmp" <<'PY' || bad "--diff: $(cat "$tmp/diff")"
import sys, yaml
tmp = sys.argv[1]
out = open(f"{tmp}/diff").read().splitlines()
a, b = (yaml.safe_load(open(f"{tmp}/{s}.plan.yaml")) for s in ("1f1b", "zb-h1"))
assert out[0].startswith(f"plans: {tmp}/1f1b.plan.yaml (content hash "), out[0]
assert "schedule.name: 1f1b -> zb-h1" in out, out
pa, pb = a["prediction"]["step_s"], b["prediction"]["step_s"]
want = "prediction.step_s: %r -> %r (%+.1f%%)" % (pa, pb, 100 * (pb - pa) / pa)
assert any(l.startswith("prediction.step_s: ") for l in out), out
line = [l for l in out if l.startswith("prediction.step_s: ")][0]
assert line.endswith("(%+.1f%%)" % (100 * (pb - pa) / pa)), (line, want)
assert any(l.startswith("schedule.ranks[0]: %d -> %d items, first difference at " %
           (len(a["schedule"]["ranks"][0]), len(b["schedule"]["ranks"][0]))) for l in out), out
assert "model.layers" not in "".join(out), out   # same model: not listed
n = int(out[-1].split()[0])
assert n == len(out) - 2, (n, len(out))
PY
"$BIN/zbreport" --diff "$tmp/1f1b.plan.yaml" "$tmp/1f1b.plan.yaml" | tail -1 | grep -qx "no differences" ||
    bad "--diff of a plan with itself"
expect2 "--diff of a report" "$BIN/zbreport" --diff "$tmp/1f1b.plan.yaml" "$tmp/1f1b.yaml"
grep -q "^zbreport: $tmp/1f1b.yaml:" "$tmp/e" || bad "--diff of a report: $(cat "$tmp/e")"
expect2 "--diff of one plan" "$BIN/zbreport" --diff "$tmp/1f1b.plan.yaml"

"$BIN/zbreport" --help | grep -q '^usage: zbreport' || bad "--help"
"$BIN/zbreport" --version | grep -q '^zbreport ' || bad "--version"

[ "$fails" -eq 0 ] && echo "zbreport.sh: ok" || { echo "zbreport.sh: $fails failure(s)"; exit 1; }
