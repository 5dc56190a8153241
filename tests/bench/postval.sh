#!/usr/bin/env bash
# postval.sh - optimizer post-validation at the step boundary (make bench):
# the same plan run with ZB_POSTVAL=0 (the synchronous step: the world
# check's all-reduce, then AdamW), ZB_POSTVAL=1 (every rank whose own
# numbers allow it takes AdamW before that all-reduce) and ZB_POSTVAL=auto
# (the default: only ranks whose last wait for the verdict was longer than
# twice their AdamW), interleaved (0 1 auto 0 1 auto ..., PAIRS rounds) so
# that load changes hit all alike, at pp 2 and pp 4, schedules 1f1b and
# zb-h1, one thread per rank. The model is wide and shallow with few tokens
# per microbatch (one 512-wide layer per stage at pp 4, 16 tokens), so that
# a stage's AdamW (about 8 ms at pp 4 here) is about as long as a pass, and
# its embeddings are untied (tied, the first and last ranks meet in the
# embedding-gradient all-reduce before the optimizer, and the last rank
# waits there instead). Prints medians over the runs of each run's mean step
# time (its first step left out; with the range over the runs) and, per
# rank, of its step-boundary idle time, the part of it spent waiting for the
# verdict (the world all-reduce of norm and loss) and its busy time
# (report.yaml's boundary_idle_s, verdict_wait_s, boundary_busy_s), and the
# ratios to ZB_POSTVAL=0. Clipping is off (grad_clip: 0): with the default
# 1.0 a stage whose own gradient norm is above it (the head's, early in
# training) may not speculate. Numbers, not pass/fail: the machine may be
# shared, so the load average is printed beside them.
set -euo pipefail
BIN=${BIN:-bin}
STEPS=${STEPS:-8}
PAIRS=${PAIRS:-5}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
corpus=$(cd "$(dirname "$0")/../../models/data" && pwd)/corpus.txt

cat >"$out/wide.yaml" <<EOF
name: wide
model:
  layers: 4
  hidden: 512
  heads: 8
  seq_len: 16
  vocab: 256
  tied_embeddings: false
training:
  global_batch: 8
  micro_batch: 1
  steps: $STEPS
  seed: 1234
  precision: fp32
  recompute: none
  data:
    kind: text
    path: $corpus
  optimizer:
    lr: 1.0e-3
    min_lr: 1.0e-4
    warmup_steps: 2
    schedule: cosine
    grad_clip: 0
cluster:
  nodes: 1
  devices_per_node: 16
  device: cpu
EOF

# stats.py R0... -- R1... -- Rauto...: medians of step_s and per-rank
# boundary times, one column per ZB_POSTVAL mode, ratios to mode 0
cat >"$out/stats.py" <<'PY'
import statistics as st, sys, yaml
groups, cur = [], []
for a in sys.argv[1:] + ["--"]:
    if a == "--":
        groups.append([yaml.safe_load(open(p)) for p in cur])
        cur = []
    else:
        cur.append(a)
med = st.median
world = len(groups[0][0]["ranks"])
def col(key, g=None):
    if g is None:
        return [med([r["summary"][key] for r in rs]) * 1e3 for rs in groups]
    return [med([r["ranks"][g][key] for r in rs]) * 1e3 for rs in groups]
def row(name, v, extra=""):
    ratios = " ".join(f"{x / v[0]:5.2f}" if v[0] > 0 else "    -" for x in v[1:])
    print(f"  {name:<16}" + "".join(f"{x:9.2f}" for x in v) + f"   {ratios}{extra}")
spread = [[r["summary"]["step_s"] * 1e3 for r in rs] for rs in groups]
row("step ms", col("step_s"), "   runs " + " / ".join(f"{min(x):.0f}-{max(x):.0f}" for x in spread))
for g in range(world):
    verd, busy = col("verdict_wait_s", g), col("boundary_busy_s", g)
    row(f"rank {g} idle ms", col("boundary_idle_s", g),
        "   verdict wait " + " / ".join(f"{x:.2f}" for x in verd) +
        ", busy " + " / ".join(f"{x:.2f}" for x in busy))
idle = [sum(x) for x in zip(*[col("boundary_idle_s", g) for g in range(world)])]
row("idle, all ranks", idle)
PY

modes="0 1 auto"
echo "load: $(uptime | sed 's/.*load average: //'), $(nproc) cores; $PAIRS rounds of $STEPS-step runs"
echo "medians, ZB_POSTVAL=    0        1     auto   ratios 1/0 auto/0 (verdict wait, busy: 0 / 1 / auto)"
for pp in 2 4; do
    for sched in 1f1b zb-h1; do
        "$BIN/zbplan" "$out/wide.yaml" --pp "$pp" --dp 1 --tp 1 --schedule "$sched" -q -o "$out/plan.yaml"
        for i in $(seq "$PAIRS"); do
            for pv in $modes; do
                ZB_POSTVAL=$pv "$BIN/zbrun" "$out/plan.yaml" --steps "$STEPS" --threads 1 -q \
                    --report "$out/r$pv.$i.yaml" >/dev/null
            done
        done
        args=()
        for pv in $modes; do
            [ ${#args[@]} -eq 0 ] || args+=(--)
            for i in $(seq "$PAIRS"); do args+=("$out/r$pv.$i.yaml"); done
        done
        echo "pp $pp $sched:"
        python3 "$out/stats.py" "${args[@]}"
    done
done
echo "load at the end: $(uptime | sed 's/.*load average: //')"
