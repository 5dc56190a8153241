#!/usr/bin/env bash
# postval.sh - optimizer post-validation at the step boundary (make bench):
# the same plan run with ZB_POSTVAL=0 (the synchronous step: the world
# check's all-reduce, then AdamW) and ZB_POSTVAL=1 (every rank whose own
# numbers allow it takes AdamW before that all-reduce), interleaved
# (0 1 0 1 ..., PAIRS pairs) so that load changes hit both alike, at pp 2
# and pp 4, schedules 1f1b and zb-h1, one thread per rank. The model is wide
# and shallow with few tokens per microbatch (one 512-wide layer per stage
# at pp 4, 16 tokens), so that a stage's AdamW is several passes long, and
# its embeddings are untied (tied, the first and last ranks meet in the
# embedding-gradient all-reduce before the optimizer, and the last rank
# waits there instead). Prints medians over the runs of each run's mean
# step time (its first step left out) and, per rank, of its step-boundary
# idle time, the part of it spent waiting for the verdict (the world
# all-reduce of norm and loss) and its busy time (report.yaml's
# boundary_idle_s, verdict_wait_s, boundary_busy_s), and the ratio
# ZB_POSTVAL=1 / ZB_POSTVAL=0. Clipping is off (grad_clip: 0): with the
# default 1.0 a stage whose own gradient norm is above it (the head's, early
# in training) may not speculate. Numbers, not pass/fail: the
# machine may be shared, so the load average is printed beside them.
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

# stats.py R0... -- R1...: medians of step_s and per-rank boundary times
cat >"$out/stats.py" <<'PY'
import statistics as st, sys, yaml
cut = sys.argv.index("--")
runs = [[yaml.safe_load(open(p)) for p in ps]
        for ps in (sys.argv[1:cut], sys.argv[cut + 1:])]
med = lambda xs: st.median(xs)
step = [med([r["summary"]["step_s"] for r in rs]) * 1e3 for rs in runs]
world = len(runs[0][0]["ranks"])
def rank(rs, key, g):
    return med([r["ranks"][g][key] for r in rs]) * 1e3
idle = [[rank(rs, "boundary_idle_s", g) for g in range(world)] for rs in runs]
busy = [[rank(rs, "boundary_busy_s", g) for g in range(world)] for rs in runs]
verd = [[rank(rs, "verdict_wait_s", g) for g in range(world)] for rs in runs]
ratio = lambda a, b: f"{b / a:.2f}" if a > 0 else "-"
print(f"  step ms         {step[0]:9.2f} {step[1]:9.2f}   {ratio(step[0], step[1]):>5}")
for g in range(world):
    print(f"  rank {g} idle ms  {idle[0][g]:9.2f} {idle[1][g]:9.2f}   "
          f"{ratio(idle[0][g], idle[1][g]):>5}   verdict wait {verd[0][g]:6.2f} -> "
          f"{verd[1][g]:6.2f}, busy {busy[0][g]:6.2f} -> {busy[1][g]:6.2f}")
si = [sum(x) for x in idle]
print(f"  idle, all ranks {si[0]:9.2f} {si[1]:9.2f}   {ratio(si[0], si[1]):>5}")
PY

echo "load: $(uptime | sed 's/.*load average: //'), $(nproc) cores; $PAIRS pairs of $STEPS-step runs"
echo "medians:        ZB_POSTVAL=0  =1   ratio 1/0"
for pp in 2 4; do
    for sched in 1f1b zb-h1; do
        "$BIN/zbplan" "$out/wide.yaml" --pp "$pp" --dp 1 --tp 1 --schedule "$sched" -q -o "$out/plan.yaml"
        r0=() r1=()
        for i in $(seq "$PAIRS"); do
            for pv in 0 1; do
                ZB_POSTVAL=$pv "$BIN/zbrun" "$out/plan.yaml" --steps "$STEPS" --threads 1 -q \
                    --report "$out/r$pv.$i.yaml" >/dev/null
            done
            r0+=("$out/r0.$i.yaml") r1+=("$out/r1.$i.yaml")
        done
        echo "pp $pp $sched:"
        python3 "$out/stats.py" "${r0[@]}" -- "${r1[@]}"
    done
done
echo "load at the end: $(uptime | sed 's/.*load average: //')"
