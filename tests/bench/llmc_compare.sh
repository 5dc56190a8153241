#!/usr/bin/env bash
# llmc_compare.sh - zbrun against llm.c's CPU trainer (train_gpt2.c) on the
# same model and batch, side by side (numbers, not pass/fail).
#
# Model: 8 layers, hidden 128, 4 heads, vocab 256, seq 64, tied embeddings;
# batch 4 x 64 tokens, pp 1. For 1 and 2 threads: median ms/step over the
# steps after the first, llm.c then zbrun, REPS times alternating; the
# ratio is llm.c's ms/step over zbrun's (zbrun's tokens/s over llm.c's).
#
#   LLMC_DIR=/path/to/llm.c tests/bench/llmc_compare.sh
#
# LLMC_DIR is an llm.c checkout; nothing is fetched from the network. Its
# train_gpt2 is built with llm.c's own Makefile when missing, and its inputs
# (gpt2_124M.bin as a random-init checkpoint of this model, and the
# tiny_shakespeare token shards holding models/data/corpus.txt) are written
# by tests/bench/llmc_inputs.py when missing; zbrun then trains on the same
# shard. Without LLMC_DIR only zbrun's figures are printed (on the built-in
# corpus). zbrun runs with no environment variable of its own set (llm.c
# with OMP_WAIT_POLICY unset, as its README runs it).
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin}
REPS=${REPS:-2}
STEPS=${STEPS:-40}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

data_kind=text
data_path=$PWD/models/data/corpus.txt
if [ -n "${LLMC_DIR:-}" ]; then
    shard=$LLMC_DIR/dev/data/tinyshakespeare/tiny_shakespeare_train.bin
    [ -f "$LLMC_DIR/gpt2_124M.bin" ] && [ -f "$shard" ] ||
        python3 tests/bench/llmc_inputs.py "$LLMC_DIR" models/data/corpus.txt
    [ -x "$LLMC_DIR/train_gpt2" ] || make -C "$LLMC_DIR" train_gpt2 >/dev/null
    data_kind=shards
    data_path=$shard
fi

cat >"$tmp/model.yaml" <<YAML
name: llmc-compare
model: {layers: 8, hidden: 128, heads: 4, seq_len: 64, vocab: 256, tied_embeddings: true}
training:
  global_batch: 4
  micro_batch: 4
  steps: $((STEPS + 1))
  precision: fp32
  data: {kind: $data_kind, path: $data_path}
  optimizer: {lr: 1.0e-4, min_lr: 1.0e-4, warmup_steps: 0, schedule: constant}
cluster: {nodes: 1, devices_per_node: 1, device: cpu}
YAML
"$BIN/zbplan" "$tmp/model.yaml" --dp 1 --tp 1 --pp 1 -q -o "$tmp/plan.yaml"

median() { python3 -c 'import statistics,sys; v=[float(x) for x in sys.stdin.read().split()]; print(f"{statistics.median(v):.2f}" if v else "nan")'; }

zbrun_ms() { # threads -> ms/step of each step after the first, one per line
    env -u OMP_WAIT_POLICY "$BIN/zbrun" "$tmp/plan.yaml" --threads "$1" -q \
        --report "$tmp/r.yaml"
    python3 -c 'import sys,yaml; [print(s["time_s"]*1e3) for s in yaml.safe_load(open(sys.argv[1]))["steps"][1:]]' "$tmp/r.yaml"
}

llmc_ms() { # threads -> ms/step of steps 1..40 (train_gpt2 runs 0..40)
    (cd "$LLMC_DIR" && env -u OMP_WAIT_POLICY OMP_NUM_THREADS="$1" ./train_gpt2) |
        sed -n 's/^step \([0-9]*\): .*(took \([0-9.]*\) ms)$/\1 \2/p' | awk '$1 > 0 {print $2}'
}

echo "llm.c comparison: 8 layers, hidden 128, 4 heads, vocab 256, batch 4 x 64, pp 1"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
"$BIN/zbrun" "$tmp/plan.yaml" --steps 1 | grep '^blas:' || true
printf '%-8s %14s %14s %12s %16s\n' threads "llm.c ms/step" "zbrun ms/step" "zbrun speed" "zbrun tokens/s"
for t in 1 2; do
    : >"$tmp/z.$t"; : >"$tmp/l.$t"
    for _ in $(seq "$REPS"); do
        [ -z "${LLMC_DIR:-}" ] || llmc_ms "$t" >>"$tmp/l.$t"
        zbrun_ms "$t" >>"$tmp/z.$t"
    done
    z=$(median <"$tmp/z.$t")
    if [ -n "${LLMC_DIR:-}" ]; then
        l=$(median <"$tmp/l.$t")
        ratio=$(python3 -c "print(f'{$l / $z:.2f}x')")
    else
        l="-"; ratio="-"
    fi
    printf '%-8s %14s %14s %12s %16.0f\n' "$t" "$l" "$z" "$ratio" "$(python3 -c "print(256e3 / $z)")"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
[ -n "${LLMC_DIR:-}" ] || echo "(set LLMC_DIR to an llm.c checkout to run llm.c beside zbrun)"
