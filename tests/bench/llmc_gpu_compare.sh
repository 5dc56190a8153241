#!/usr/bin/env bash
# llmc_gpu_compare.sh - zbrun --backend cuda against llm.c's train_gpt2cu
# on one GPU, side by side (numbers, not pass/fail): GPT-2 124M from
# scratch, bf16, micro-batch 8 x 1024 tokens, 2 micro-batches (16384
# tokens) a step, STEPS steps (default 30), both on the bytes of
# models/data/corpus.txt (one token each, as llm.c token shards). Prints
# each side's median ms/step over the steps after the first, tokens/s, and
# the ratio (zb's tokens/s over llm.c's). docs/gpu-results.md has a run.
#
#   LLMC_DIR=/path/to/llm.c tests/bench/llmc_gpu_compare.sh
#
# LLMC_DIR is an llm.c checkout (nothing is fetched). Its train_gpt2.cu is
# built into a temporary folder with nvcc -O3 for the GPU's architecture,
# without cuDNN (llm.c's own attention kernels, like zb's bf16 path), with
# tests/bench/llmc_cuda13.h force-included (CUDA 13's cudaMemAdvise);
# llm.c runs without recompute (-r 0), no evaluation or sampling. Needs
# bin/zbrun built with CUDA, nvcc and a GPU.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin}
STEPS=${STEPS:-30}
[ -n "${LLMC_DIR:-}" ] || { echo "llmc_gpu_compare.sh: set LLMC_DIR to an llm.c checkout"; exit 2; }
[ -f "$LLMC_DIR/train_gpt2.cu" ] || { echo "llmc_gpu_compare.sh: $LLMC_DIR/train_gpt2.cu: not found"; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

python3 - "$tmp" models/data/corpus.txt <<'PY'
import array, struct, sys
d, corpus = sys.argv[1], open(sys.argv[2], "rb").read()
for name, toks in (("train.bin", corpus), ("val.bin", corpus[:65536])):
    head = [0] * 256
    head[0], head[1], head[2] = 20240520, 1, len(toks)
    with open(f"{d}/{name}", "wb") as f:
        f.write(struct.pack("<256i", *head))
        f.write(array.array("H", toks).tobytes())
PY

cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
nvcc --threads=0 --use_fast_math -std=c++17 -O3 -gencode "arch=compute_$cc,code=sm_$cc" \
    -include "$PWD/tests/bench/llmc_cuda13.h" -I"$LLMC_DIR" "$LLMC_DIR/train_gpt2.cu" \
    -lcublas -lcublasLt -o "$tmp/train_gpt2cu"

# llm.c prints "step    N/M | loss ... | 47.69 ms | ..."
(cd "$tmp" && ./train_gpt2cu -i train.bin -j val.bin -e d12 -b 8 -t 1024 -d 16384 \
    -x "$STEPS" -v 100000 -s 0 -h 0 -l 6e-4 -u 10 -r 0) >"$tmp/llmc.log" 2>&1 ||
    { tail -20 "$tmp/llmc.log"; exit 1; }
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
llmc_ms=$(awk -F'|' '/^step/ {split($5, a, " "); print a[1]}' "$tmp/llmc.log" | tail -n +2 | median)

sed -e 's/^ *global_batch: .*/  global_batch: 16/' -e 's/^ *devices_per_node: .*/  devices_per_node: 1/' \
    -e 's/^ *device: .*/  device: h200/' -e 's/^ *warmup_steps: .*/    warmup_steps: 10/' \
    models/gpt2-124m.yaml |
    awk -v d="  data: {kind: shards, path: $tmp/train.bin}" '/^  data:/ {next} {print} /^training:/ {print d}' \
    >"$tmp/gpt2.yaml"
"$BIN/zbplan" "$tmp/gpt2.yaml" --pp 1 --dp 1 --tp 1 --micro-batch 8 --schedule 1f1b -q -o "$tmp/plan.yaml"
"$BIN/zbrun" "$tmp/plan.yaml" --backend cuda --steps "$STEPS" >"$tmp/zb.log" 2>&1 ||
    { tail -20 "$tmp/zb.log"; exit 1; }
zb_ms=$(awk '/^step [0-9]+\/[0-9]+ loss / {for (i = 1; i < NF; i++) if ($i == "ms") print $(i + 1)}' "$tmp/zb.log" |
    tail -n +2 | median)

awk -v z="$zb_ms" -v l="$llmc_ms" 'BEGIN {
    printf "GPT-2 124M bf16, 16384 tokens a step, median over steps 2..: llm.c %.2f ms (%.0f tokens/s), zb %.2f ms (%.0f tokens/s); zb/llm.c throughput %.2f\n",
        l, 16384000 / l, z, 16384000 / z, l / z }'
