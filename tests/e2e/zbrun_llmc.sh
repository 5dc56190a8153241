#!/bin/bash
# zbrun_llmc.sh - llm.c checkpoints through the command line:
#   - a model file naming a checkpoint (model.init) without shapes plans with
#     the checkpoint's shapes;
#   - a shape that differs from the checkpoint's: zbplan exits 2 with one
#     line naming both values; a plan whose checkpoint was replaced by one of
#     another shape: zbrun exits 2 the same way, before any step;
#   - zbrun --export writes a checkpoint (fp32 v3; bf16 v5 for a bf16 plan)
#     that loads again as a model's init, with the same shapes and size;
#   - the validation loss is on the step lines, first at step 0.
# Usage (from anywhere): BIN=bin bash tests/e2e/zbrun_llmc.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BIN=${BIN:-$ROOT/bin}
case "$BIN" in /*) ;; *) BIN=$ROOT/$BIN ;; esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() { fails=$((fails + 1)); echo "FAIL: $*"; }
GEN="python3 $ROOT/tests/bench/llmc_gen.py"
cd "$tmp"
$GEN ckpt ck.bin --layers 2 --hidden 16 --heads 2 --vocab 125 --padded-vocab 128 --max-seq 32
$GEN ckpt other.bin --layers 3 --hidden 16 --heads 2 --vocab 125 --padded-vocab 128 --max-seq 32
$GEN shard train.bin "$ROOT/models/data/corpus.txt" --end 0.9
$GEN shard val.bin "$ROOT/models/data/corpus.txt" --start 0.9

model() { # FILE PRECISION EXTRA_MODEL_LINE
    cat >"$1" <<YAML
model:
  init: ck.bin
$3
  seq_len: 16
training:
  global_batch: 4
  micro_batch: 1
  precision: $2
  data: {kind: shards, path: train.bin, order: sequential}
  val: {kind: shards, path: val.bin, every: 2, batches: 2}
  optimizer: {lr: 1.0e-4, beta2: 0.999, weight_decay: 0, grad_clip: 0, schedule: constant}
cluster: {nodes: 1, devices_per_node: 2, device: cpu}
YAML
}

model m.yaml fp32 ""
"$BIN/zbplan" m.yaml --dp 1 --tp 1 --pp 2 -q -o plan.yaml
grep -q "layers: 2" plan.yaml || bad "the plan does not take layers from the checkpoint"
grep -q "vocab: 125" plan.yaml || bad "the plan does not take vocab from the checkpoint"

model bad.yaml fp32 "  layers: 3"
rc=0; "$BIN/zbplan" bad.yaml -q -o x.yaml 2>err || rc=$?
[ "$rc" = 2 ] || bad "zbplan: layers mismatch exits $rc, want 2"
[ "$(wc -l <err)" = 1 ] || bad "zbplan: mismatch message is not one line: $(cat err)"
grep -q "bad.yaml:3:11: 'layers' is 3 but the checkpoint ck.bin has L = 2" err ||
    bad "zbplan: mismatch message: $(cat err)"

"$BIN/zbrun" plan.yaml --steps 4 --export out.bin >out 2>err || bad "zbrun --export failed: $(cat err)"
head -1 <(grep "^step" out) | grep -q "^step 0/4 val_loss" || bad "no step-0 validation line: $(head -3 out)"
grep -q "^step 2/4 .* val_loss" out || bad "no val_loss on step 2's line"
grep -q "^step 3/4 .* val_loss" out && bad "val_loss on step 3's line (every 2)"
cmp -s <(head -c 1024 ck.bin) <(head -c 1024 out.bin) || bad "exported header differs"
[ "$(stat -c %s out.bin)" = "$(stat -c %s ck.bin)" ] || bad "exported size differs"
cmp -s ck.bin out.bin && bad "4 steps of training left the weights unchanged"
sed 's/init: ck.bin/init: out.bin/' m.yaml >again.yaml
"$BIN/zbplan" again.yaml -q -o again.plan.yaml 2>err || bad "the export does not load: $(cat err)"

model b.yaml bf16 ""
"$BIN/zbplan" b.yaml --dp 1 --tp 2 --pp 1 -q -o bplan.yaml
"$BIN/zbrun" bplan.yaml --steps 1 -q --export out16.bin 2>err || bad "bf16 export failed: $(cat err)"
python3 - <<'PY' || bad "bf16 export is not version 5 of half the size"
import os, struct
h = struct.unpack("<8i", open("out16.bin", "rb").read(32))
assert h[1] == 5, h
assert os.path.getsize("out16.bin") - 1024 == (os.path.getsize("ck.bin") - 1024) // 2
PY

cp other.bin ck.bin   # the plan's checkpoint now has 3 layers
rc=0; "$BIN/zbrun" plan.yaml --steps 1 >out 2>err || rc=$?
[ "$rc" = 2 ] || bad "zbrun: changed checkpoint exits $rc, want 2"
[ "$(wc -l <err)" = 1 ] || bad "zbrun: message is not one line: $(cat err)"
grep -q "'layers' is 2 but the checkpoint ck.bin has L = 3" err || bad "zbrun: message: $(cat err)"
grep -q "^step" out && bad "zbrun computed steps with a mismatched checkpoint"

[ "$fails" = 0 ] && echo "zbrun_llmc.sh: ok" || { echo "zbrun_llmc.sh: $fails failed"; exit 1; }
