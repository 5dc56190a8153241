#!/bin/bash
# zbrun_train.sh - end-to-end training on the default example:
#   - zbplan plans models/tiny.yaml, zbrun trains it; the loss must fall
#     (last step at least 0.5 below the first, every step finite) and every
#     step line has the documented fields;
#   - a pipeline layout (pp 2, zb-v) prints the same losses as the
#     single-rank layout step by step;
#   - --report, --trace and --svg files exist and parse: the report as
#     YAML with one entry per step and per pipeline rank, the trace as JSON
#     with an "X" event per compute action of the kept steps, the SVG as XML
#     with both panels;
#   - recompute selective and full give recompute none's step lines and
#     exported weights bit for bit at pp 1, pp 4 zb-v, tp 2 (vocabulary 257:
#     a padded row) and dp 2 x pp 2, and print no note that recompute is
#     not executed;
#   - optimizer post-validation: stepping before the world check and rolling
#     back (ZB_POSTVAL=1, every rank whose own numbers allow it) gives the
#     synchronous step's (ZB_POSTVAL=0) step lines and exported weights
#     bit for bit, with steps that clip and steps that do not, and a NaN
#     stops both with the same message and exit status.
# Ranks run one OpenMP thread each (--threads 1) except in the pp 2 run,
# which uses the default (cores / ranks): tiny shapes gain nothing from more
# threads and a busy machine makes them much slower.
# Usage (from anywhere): BIN=bin bash tests/e2e/zbrun_train.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() { fails=$((fails + 1)); echo "FAIL: $*"; }

[ -x "$BIN/zbplan" ] && [ -x "$BIN/zbrun" ] || { echo "zbrun_train.sh: build $BIN/zbplan and $BIN/zbrun first"; exit 1; }

"$BIN/zbplan" models/tiny.yaml -o "$tmp/plan.yaml" -q
"$BIN/zbplan" models/tiny.yaml -o "$tmp/pp1.yaml" -q --pp 1 --dp 1 --tp 1 --schedule 1f1b
"$BIN/zbplan" models/tiny.yaml -o "$tmp/pp2.yaml" -q --pp 2 --dp 1 --tp 1 --schedule zb-v

# the 4 step losses of two runs' outputs agree within 1e-5 (relative)
same_losses() {
    python3 - "$1" "$2" <<'EOF'
import sys
def losses(path):
    return [float(l.split()[3]) for l in open(path) if l.startswith("step ")]
a, b = losses(sys.argv[1]), losses(sys.argv[2])
assert len(a) == len(b) == 4, (a, b)
assert all(abs(x - y) <= 1e-5 * abs(x) for x, y in zip(a, b)), (a, b)
EOF
}

# ---- the loss falls -------------------------------------------------------
"$BIN/zbrun" "$tmp/plan.yaml" --steps 20 --threads 1 --report "$tmp/report.yaml" \
    --trace "$tmp/trace.json" --svg "$tmp/timeline.svg" >"$tmp/out" 2>"$tmp/err" ||
    bad "zbrun exited $?: $(cat "$tmp/err")"
python3 - "$tmp/out" <<'EOF' || bad "step lines: $(grep -c '^step ' "$tmp/out") lines, loss did not fall"
import math, re, sys
pat = re.compile(r"^step (\d+)/20 loss (\S+) lr (\S+) grad_norm (\S+) "
                 r"tokens_per_s (\S+) ms (\S+) elapsed_s (\S+) eta_s (\S+)$")
steps = [pat.match(l) for l in open(sys.argv[1]) if l.startswith("step ")]
assert len(steps) == 20 and all(steps), "20 well-formed step lines"
assert [int(m.group(1)) for m in steps] == list(range(1, 21))
loss = [float(m.group(2)) for m in steps]
assert all(math.isfinite(x) for x in loss)
assert loss[-1] < loss[0] - 0.5, loss
assert all(float(m.group(5)) > 0 and float(m.group(6)) > 0 for m in steps)
EOF

# ---- same losses in another layout ----------------------------------------
"$BIN/zbrun" "$tmp/pp1.yaml" --steps 4 --threads 1 >"$tmp/pp1.out" 2>&1 || bad "pp1 run failed"
"$BIN/zbrun" "$tmp/pp2.yaml" --steps 4 >"$tmp/pp2.out" 2>&1 || bad "pp2 run failed"
same_losses "$tmp/pp1.out" "$tmp/pp2.out" || bad "pp 1 and pp 2 (zb-v) losses differ"

# ---- v-half and v-min (forced with --schedule) train like zb-v -------------
for s in v-half v-min; do
    "$BIN/zbplan" models/tiny.yaml -o "$tmp/$s.yaml" -q --pp 2 --dp 1 --tp 1 --schedule $s ||
        bad "zbplan --schedule $s failed"
    "$BIN/zbrun" "$tmp/$s.yaml" --steps 4 >"$tmp/$s.out" 2>&1 || bad "$s run failed"
    same_losses "$tmp/pp2.out" "$tmp/$s.out" || bad "$s losses differ from zb-v's"
done

# ---- the files --------------------------------------------------------------
for f in report.yaml trace.json timeline.svg; do
    [ -s "$tmp/$f" ] || bad "$f missing or empty"
done
python3 - "$tmp/plan.yaml" "$tmp/report.yaml" "$tmp/trace.json" "$tmp/timeline.svg" <<'EOF' || bad "report/trace/svg do not parse or are incomplete"
import json, sys, yaml
import xml.etree.ElementTree as ET
plan = yaml.safe_load(open(sys.argv[1]))
pp = plan["parallel"]["pp"]
world = pp * plan["parallel"]["dp"] * plan["parallel"]["tp"]
actions = sum(len(r) for r in plan["schedule"]["ranks"]) * plan["parallel"]["dp"] * plan["parallel"]["tp"]
rep = yaml.safe_load(open(sys.argv[2]))
assert rep["report"] == 1
assert len(rep["steps"]) == 20 and rep["steps"][-1]["step"] == 20
assert len(rep["pipeline_ranks"]) == pp and len(rep["ranks"]) == world
for r in rep["pipeline_ranks"]:
    assert 0 <= r["bubble"] < 1 and r["busy_s"] > 0 and r["peak_mem_bytes"] > 0
assert rep["summary"]["tokens_per_s"] > 0 and rep["summary"]["mfu"] > 0
tr = json.load(open(sys.argv[3]))
allx = [e for e in tr["traceEvents"] if e["ph"] == "X"]
ev = [e for e in allx if e["cat"] in ("F", "B", "W", "BW")]
assert len(ev) == 2 * actions, (len(ev), actions)   # the last 2 steps are kept
tails = [e for e in allx if e["cat"] == "step"]     # one step end per rank and step
assert len(tails) == 2 * world and all(e["dur"] >= 0 for e in tails), len(tails)
assert {e["args"]["step"] for e in ev} == {19, 20}
assert all(e["dur"] >= 0 and e["ts"] >= 0 and 0 <= e["pid"] < pp for e in ev)
assert all(e["name"][0] in "FBW" for e in ev)
svg = ET.parse(sys.argv[4]).getroot()
text = " ".join(t.text or "" for t in svg.iter("{http://www.w3.org/2000/svg}text"))
assert "planned" in text and "executed" in text and "W (weight grad)" in text
EOF

# ---- recompute changes no bit ------------------------------------------------
rc_layout() { # name, then zbplan options
    local name=$1; shift
    for rc in none selective full; do
        "$BIN/zbplan" models/tiny.yaml -o "$tmp/rc.yaml" -q "$@" \
            --set training.recompute=$rc || bad "zbplan $name $rc failed"
        "$BIN/zbrun" "$tmp/rc.yaml" --steps 3 --threads 1 --export "$tmp/rc_$rc.bin" \
            >"$tmp/rc_$rc.out" 2>&1 || bad "$name recompute $rc run failed"
        grep '^step ' "$tmp/rc_$rc.out" | sed -E 's/ tokens_per_s.*//' >"$tmp/rc_$rc.steps" || true
    done
    [ "$(wc -l <"$tmp/rc_none.steps")" = 3 ] || bad "$name: no step lines"
    for rc in selective full; do
        cmp -s "$tmp/rc_none.steps" "$tmp/rc_$rc.steps" || bad "$name: recompute $rc changed the step lines"
        cmp -s "$tmp/rc_none.bin" "$tmp/rc_$rc.bin" || bad "$name: recompute $rc changed the weights"
        ! grep -q "recompute" "$tmp/rc_$rc.out" || bad "$name: a note about recompute: $(grep recompute "$tmp/rc_$rc.out")"
    done
}
rc_layout "pp 1" --pp 1 --dp 1 --tp 1 --schedule 1f1b
rc_layout "pp 4 zb-v" --pp 4 --dp 1 --tp 1 --schedule zb-v
rc_layout "tp 2" --pp 1 --dp 1 --tp 2 --set model.vocab=257
rc_layout "dp 2 x pp 2" --pp 2 --dp 2 --tp 1 --schedule zb-h1

# ---- post-validation: speculative steps and roll-backs change no bit -----
"$BIN/zbplan" models/tiny.yaml -o "$tmp/pv.yaml" -q --pp 2 --dp 2 --tp 1 \
    --set training.optimizer.grad_clip=2.2
for pv in 0 1; do
    ZB_POSTVAL=$pv "$BIN/zbrun" "$tmp/pv.yaml" --steps 6 --threads 1 \
        --export "$tmp/pv$pv.bin" >"$tmp/pv$pv.out" 2>&1 || bad "ZB_POSTVAL=$pv run failed"
    sed -E 's/ tokens_per_s.*//' "$tmp/pv$pv.out" | grep '^step ' >"$tmp/pv$pv.steps" || true
    set +e
    ZB_POSTVAL=$pv "$BIN/zbrun" "$tmp/pv.yaml" --steps 6 --threads 1 -q \
        --set training.optimizer.lr=1e30 >"$tmp/nan$pv.out" 2>&1
    echo "exit $?" >>"$tmp/nan$pv.out"
    set -e
done
python3 - "$tmp/pv0.steps" <<'EOF' || bad "post-validation: the steps do not both clip and not clip"
import sys
norms = [float(l.split()[7]) for l in open(sys.argv[1])]
assert len(norms) == 6 and min(norms) < 2.2 < max(norms), norms
EOF
cmp -s "$tmp/pv0.steps" "$tmp/pv1.steps" || bad "post-validation changed the step lines"
cmp -s "$tmp/pv0.bin" "$tmp/pv1.bin" || bad "post-validation changed the weights"
grep -q "loss is nan" "$tmp/nan0.out" && grep -q "^exit 1$" "$tmp/nan0.out" ||
    bad "lr 1e30 did not stop with a NaN loss: $(cat "$tmp/nan0.out")"
cmp -s "$tmp/nan0.out" "$tmp/nan1.out" || bad "post-validation changed the NaN stop"

if [ "$fails" -ne 0 ]; then
    echo "zbrun_train.sh: $fails check(s) failed"
    exit 1
fi
echo "zbrun_train.sh: ok"
