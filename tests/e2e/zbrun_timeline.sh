#!/bin/bash
# zbrun_timeline.sh - zbrun --svg (docs/zbrun.md, "Timeline picture"):
#   - the SVG parses as XML (python3's parser);
#   - planned and executed panels share one time axis: the same tick labels
#     under both, counting 0, d, 2d, ... with d 1, 2 or 5 x 10^k ms, and
#     every box inside the axis (nothing left of its 0);
#   - one step-time definition: the planned title's step is the report's
#     predicted_step_s, the executed title's step is the drawn step's
#     time_s and its mean step the report's step_s, which is also the
#     table's "mean step" (to the printed digits);
#   - receive waits (red strips) and gradient sync + optimizer boxes are
#     drawn, one sync box per pipeline rank in each panel, and the legend
#     names every mark;
#   - the end of a step is drawn as a wait (a red strip) until the last
#     rank's passes end: no sync + optimizer box starts before that.
# Usage (from anywhere): BIN=bin bash tests/e2e/zbrun_timeline.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$BIN/zbplan" models/tiny.yaml -q --dp 1 --tp 1 --pp 2 --schedule zb-h1 -o "$tmp/plan.yaml"
"$BIN/zbrun" "$tmp/plan.yaml" --steps 3 --threads 1 --report "$tmp/r.yaml" --svg "$tmp/t.svg" >"$tmp/out"
python3 - "$tmp" <<'PY' || { echo "zbrun_timeline.sh: FAIL"; exit 1; }
import math, re, sys, yaml, xml.dom.minidom
tmp = sys.argv[1]
rep = yaml.safe_load(open(f"{tmp}/r.yaml"))
svg = xml.dom.minidom.parse(f"{tmp}/t.svg")
texts = [t.firstChild.data for t in svg.getElementsByTagName("text") if t.firstChild]
titles = [t.firstChild.data for t in svg.getElementsByTagName("title")]
sm = rep["summary"]
planned = [t for t in texts if t.startswith("planned: ")]
executed = [t for t in texts if t.startswith("executed, ")]
assert len(planned) == 1 and len(executed) == 1, (planned, executed)
m = re.match(r"planned: step ([\d.]+) ms \(predicted\)", planned[0])
assert m and m.group(1) == "%.1f" % (1e3 * sm["predicted_step_s"]), (planned, sm)
m = re.match(r"executed, step (\d+): step ([\d.]+) ms; mean step ([\d.]+) ms", executed[0])
assert m, executed
step = int(m.group(1))
drawn = [s for s in rep["steps"] if s["step"] == step][0]
assert m.group(2) == "%.1f" % (1e3 * drawn["time_s"]), (m.group(2), drawn)
assert m.group(3) == "%.1f" % (1e3 * sm["step_s"]), (m.group(3), sm)
table = re.search(r"^mean step ([\d.]+) ms", open(f"{tmp}/out").read(), re.M)
assert table and abs(float(table.group(1)) - 1e3 * sm["step_s"]) < 0.0006, table
# one shared axis with round ticks
ticks = {}
for t in svg.getElementsByTagName("text"):
    if t.getAttribute("font-size") == "10" and t.firstChild:
        ticks.setdefault(t.getAttribute("y"), []).append(t.firstChild.data)
assert len(ticks) == 2, ticks
a, b = ticks.values()
assert a == b, (a, b)
vals = [float(x.split()[0]) for x in a]
d = vals[1] - vals[0]
assert vals[0] == 0 and all(abs(v - i * d) < 1e-9 for i, v in enumerate(vals)), vals
mant = d / 10 ** math.floor(math.log10(d))
assert any(abs(mant - k) < 1e-9 for k in (1, 2, 5)), d
assert a[-1].endswith(" ms"), a
tmax = vals[-1]
for t in titles:
    m = re.search(r": ([\d.]+)-([\d.]+) ms$", t)
    if m:
        assert float(m.group(2)) <= tmax + 1e-3, (t, tmax)
# nothing starts left of the axis' 0 (receive waits included)
x0 = min(float(l.getAttribute("x1")) for l in svg.getElementsByTagName("line"))
for r in svg.getElementsByTagName("rect"):
    if r.getElementsByTagName("title"):
        assert float(r.getAttribute("x")) >= x0 - 1e-6, (r.toxml(), x0)
pp = rep["plan"]["pp"]
assert sum(t.startswith("gradient sync + optimizer: ") for t in titles) == pp, titles
assert sum(t.startswith("predicted gradient sync + optimizer: ") for t in titles) == pp
assert any(t.startswith("receive wait: ") for t in titles), "no receive wait drawn"
for k in ("F (forward)", "B (input grad)", "W (weight grad)", "BW (fused backward)",
          "gradient sync + optimizer", "wait: receive, step end"):
    assert k in texts, k
assert any(t.startswith("idle, not receiving") for t in texts)
# the step's end is a wait until the last rank's passes end, not
# "optimizer": no sync + optimizer box starts before the last pass of its
# panel ends (planned: a red wait strip on each rank that ends early)
cut = max(i for i, t in enumerate(titles) if t.startswith("predicted gradient sync"))
def span(t):
    m = re.search(r": ([\d.]+)-([\d.]+) ms$", t)
    return float(m.group(1)), float(m.group(2))
for part, sync in ((titles[:cut + 1], "predicted gradient sync + optimizer: "),
                   (titles[cut + 1:], "gradient sync + optimizer: ")):
    last = max(span(t)[1] for t in part if re.match(r"^(F|B|W|BW)\d", t))
    for t in part:
        if t.startswith(sync):
            assert span(t)[0] >= last - 2e-3, (t, last)
assert any(t.startswith("predicted step-end wait for the last rank's passes: ")
           for t in titles[:cut + 1]), "no planned step-end wait"
PY
echo "zbrun_timeline.sh: ok"
