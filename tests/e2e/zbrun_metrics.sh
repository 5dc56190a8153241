#!/bin/bash
# zbrun_metrics.sh - zbrun --metrics (docs/zbrun.md, "Metrics while training"):
#   - JSON Lines: every line parses with python3's json on its own, one per
#     step plus the evaluation before step 1, and each step's numbers equal
#     the step line zbrun printed (to the printed digits); val_loss exactly
#     on the steps an evaluation was due (every 2 steps and the last);
#   - CSV (by extension, and by --metrics-format csv): a header and one row
#     per record, the same losses bit for bit as the JSON run (runs repeat);
#   - each record's timestamp (Unix seconds, within the run, in order),
#     tokens_seen (steps x global_batch x seq_len), mfu (the plan's FLOPs
#     over the step's time) and mem_bytes per rank (rising to the report's
#     measured peak);
#   - --log-every N prints every N-th step line, those with a validation
#     loss and the last;
#   - --resume appends to the file: one header, each step once;
#   - checked before step 1 like the other outputs: a missing folder, a
#     folder, the same file as --report, a bad --metrics-format and
#     --metrics-format without --metrics are exit 2 with nothing trained.
# Usage (from anywhere): BIN=bin bash tests/e2e/zbrun_metrics.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() { fails=$((fails + 1)); echo "FAIL: $*"; }

corpus=$PWD/models/data/corpus.txt
sed -e "s#path: data/corpus.txt.*#path: $corpus\n  val: {path: $corpus, every: 2}#" \
    models/tiny.yaml >"$tmp/model.yaml"
grep -q 'val: {path' "$tmp/model.yaml" || { echo "zbrun_metrics.sh: could not add val to the model"; exit 1; }
"$BIN/zbplan" "$tmp/model.yaml" -q --dp 1 --tp 1 --pp 2 --schedule 1f1b -o "$tmp/plan.yaml"

t0=$(date +%s.%N)
"$BIN/zbrun" "$tmp/plan.yaml" --steps 5 --threads 1 --metrics "$tmp/m.jsonl" \
    --report "$tmp/rep.yaml" >"$tmp/out" || bad "zbrun --metrics exited $?"
t1=$(date +%s.%N)
"$BIN/zbrun" "$tmp/plan.yaml" --steps 5 --threads 1 -q --metrics "$tmp/m.csv" || bad "csv run exited $?"
"$BIN/zbrun" "$tmp/plan.yaml" --steps 5 --threads 1 -q --metrics "$tmp/m.txt" \
    --metrics-format csv || bad "--metrics-format csv run exited $?"
python3 - "$tmp" "$t0" "$t1" <<'PY' || bad "metrics do not match the printed steps"
import csv, json, math, re, sys, yaml
tmp, t0, t1 = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
recs = [json.loads(l) for l in open(f"{tmp}/m.jsonl")]   # each line on its own
printed = {}
for l in open(f"{tmp}/out"):
    if l.startswith("step ") and " loss " in l:
        w = l.split()
        d = dict(zip(w[2::2], w[3::2]))
        printed[int(w[1].split("/")[0])] = d
    m = re.match(r"step (\d+)/\d+ val_loss (\S+)$", l)
    if m:
        printed[int(m.group(1))] = {"val_loss": m.group(2)}
assert [r["step"] for r in recs] == [0, 1, 2, 3, 4, 5], [r["step"] for r in recs]
assert set(recs[0]) == {"step", "steps", "val_loss", "timestamp", "tokens_seen"}, recs[0]
# timestamps: Unix seconds within the run, in order; tokens: 16 x 64 a step
plan = yaml.safe_load(open(f"{tmp}/plan.yaml"))
tok = plan["training"]["global_batch"] * plan["model"]["seq_len"]
stamps = [r["timestamp"] for r in recs]
assert t0 <= stamps[0] and stamps == sorted(stamps) and stamps[-1] <= t1, (t0, stamps, t1)
assert [r["tokens_seen"] for r in recs] == [tok * r["step"] for r in recs], recs
# mfu: the plan's FLOPs over the step's time; memory per rank: the
# report's measured peak by the last step (a running maximum)
pred = plan["prediction"]
rep = yaml.safe_load(open(f"{tmp}/rep.yaml"))
for r in recs[1:]:
    want = pred["mfu"] * pred["step_s"] / (r["step_ms"] / 1e3)
    assert abs(r["mfu"] - want) <= 1e-9 * want, (r["mfu"], want)
    assert len(r["mem_bytes"]) == 2 and all(m > 0 for m in r["mem_bytes"]), r
    assert all(a <= b for a, b in zip(recs[1]["mem_bytes"], r["mem_bytes"])), r
last = {x["rank"]: x["static_bytes"] + x["act_peak_bytes"] for x in rep["ranks"]}
assert recs[-1]["mem_bytes"] == [last[0], last[1]], (recs[-1]["mem_bytes"], last)
fmt = {"loss": "%.6f", "lr": "%.6e", "grad_norm": "%.6f", "tokens_per_s": "%.1f",
       "val_loss": "%.6f"}
for r in recs:
    p = printed[r["step"]]
    for k, f in fmt.items():
        if k in p or k in r:
            assert f % r[k] == p[k], (r["step"], k, r.get(k), p.get(k))
    if r["step"] > 0:
        assert "%.3f" % r["step_ms"] == p["ms"], (r, p)
        assert r["steps"] == 5
    # val_loss exactly when due: before step 1, every 2 steps, the last
    assert ("val_loss" in r) == (r["step"] in (0, 2, 4, 5)), r
for name in ("m.csv", "m.txt"):
    rows = list(csv.DictReader(open(f"{tmp}/{name}")))
    assert [int(x["step"]) for x in rows] == [0, 1, 2, 3, 4, 5], name
    for x, r in zip(rows, recs):
        assert (x["loss"] == "") == (r["step"] == 0), (name, x)
        if r["step"] > 0:
            assert float(x["loss"]) == r["loss"] and float(x["lr"]) == r["lr"], (name, x, r)
        assert (x["val_loss"] != "") == ("val_loss" in r), (name, x)
        assert int(x["tokens_seen"]) == tok * int(x["step"]) and float(x["timestamp"]) > t0 - 1, x
        assert (x["mem_bytes_rank1"] != "") == (x["mfu"] != "") == (r["step"] > 0), (name, x)
PY

# --log-every 2 over 5 steps: step lines on 2 and 4 (also the evaluations'),
# and the last; the evaluation before step 1 as always
"$BIN/zbrun" "$tmp/plan.yaml" --steps 5 --threads 1 --log-every 2 \
    --set training.val.every=3 >"$tmp/every" || bad "--log-every run exited $?"
got=$(grep -oE '^step [0-9]+/' "$tmp/every" | tr -dc '0-9\n' | tr '\n' ' ')
[ "$got" = "0 2 3 4 5 " ] || bad "--log-every 2, val every 3: step lines '$got', want '0 2 3 4 5 '"

# --resume appends: 3 steps with checkpoints, then resumed to 5 in the same
# file (CSV: one header), each training step once, in order
"$BIN/zbrun" "$tmp/plan.yaml" --steps 3 --threads 1 -q --metrics "$tmp/r.csv" \
    --checkpoint-every 1 --checkpoint-dir "$tmp/ck" || bad "run before resume exited $?"
"$BIN/zbrun" "$tmp/plan.yaml" --steps 5 --threads 1 -q --metrics "$tmp/r.csv" \
    --checkpoint-every 1 --checkpoint-dir "$tmp/ck" --resume --resume-changed || bad "resumed run exited $?"
python3 - "$tmp/r.csv" <<'PY' || bad "resumed metrics: $(cat "$tmp/r.csv")"
import csv, sys
lines = open(sys.argv[1]).read().splitlines()
assert sum(l.startswith("step,") for l in lines) == 1, lines
rows = list(csv.DictReader(lines))
train = [int(r["step"]) for r in rows if r["loss"]]
assert train == [1, 2, 3, 4, 5], train
PY

# checked before step 1
expect2() { # what, regex, then the command
    local what=$1 re=$2; shift 2
    set +e; "$@" >"$tmp/o" 2>"$tmp/e"; local rc=$?; set -e
    [ "$rc" -eq 2 ] || { bad "$what: exit $rc ($(cat "$tmp/e"))"; return; }
    grep -qE "$re" "$tmp/e" || bad "$what: $(cat "$tmp/e")"
    ! grep -q '^step 1/' "$tmp/o" || bad "$what: trained before failing"
}
expect2 "missing folder" "^zbrun: --metrics $tmp/nodir/m.jsonl: cannot create: No such file" \
    "$BIN/zbrun" "$tmp/plan.yaml" --steps 2 --metrics "$tmp/nodir/m.jsonl"
expect2 "a folder" "^zbrun: --metrics $tmp: is a folder" \
    "$BIN/zbrun" "$tmp/plan.yaml" --steps 2 --metrics "$tmp"
expect2 "same file as --report" "^zbrun: --report .* and --metrics .* name the same file" \
    "$BIN/zbrun" "$tmp/plan.yaml" --steps 2 --metrics "$tmp/r.yaml" --report "$tmp/r.yaml"
expect2 "bad format" "^zbrun: --metrics-format must be jsonl or csv, got 'xml'" \
    "$BIN/zbrun" "$tmp/plan.yaml" --metrics "$tmp/m2" --metrics-format xml
expect2 "format alone" "^zbrun: --metrics-format needs --metrics FILE" \
    "$BIN/zbrun" "$tmp/plan.yaml" --metrics-format csv

[ "$fails" -eq 0 ] && echo "zbrun_metrics.sh: ok" || { echo "zbrun_metrics.sh: $fails failure(s)"; exit 1; }
