#!/usr/bin/env bash
# Side by side with llm.c's CPU trainer (train_gpt2.c), on a random-init
# checkpoint and token shards written in llm.c's formats (llmc_gen.py):
#   LLMC_DIR=/path/to/llm.c tests/bench/llmc_check.sh
# Without LLMC_DIR it prints that it skipped and exits 0. llm.c's code is
# copied into a temporary folder, never into this repository; three lines
# of that copy change: its training loader does not shuffle (the loader
# then reads consecutive windows, as zbrun's `order: sequential`), and its
# two loss printfs show 9 decimals instead of 6.
# Checks, model L 4 C 64 NH 4 V 250 Vp 256 maxT 128, B 4, T 64:
#   - llm.c's step-0 validation loss (5 batches) equals zbrun's initial one
#     within 1e-5 relative;
#   - the training loss of each of the first 10 steps agrees within 1e-4
#     relative, at pp 1, pp 4, tp 2 and dp 2 x pp 2 (lr 1e-4, betas 0.9/0.999, eps 1e-8,
#     no weight decay, no clipping);
#   - llm.c loads the checkpoint zbrun exported after 10 steps (pp 4) and
#     its step-0 validation loss equals zbrun's after step 10 (1e-5).
# Exit status 1 when a check fails.
set -euo pipefail
if [ -z "${LLMC_DIR:-}" ]; then
    echo "llmc_check: skipped: set LLMC_DIR to an llm.c checkout (github.com/karpathy/llm.c)"
    exit 0
fi
[ -f "$LLMC_DIR/train_gpt2.c" ] || { echo "llmc_check: $LLMC_DIR/train_gpt2.c not found" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${BIN:-$ROOT/bin}
case "$BIN" in /*) ;; *) BIN=$PWD/$BIN ;; esac
GEN="python3 $ROOT/tests/bench/llmc_gen.py"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}

# ---- llm.c, patched copy ----
mkdir -p "$work/llmc"
if git -C "$LLMC_DIR" rev-parse HEAD >/dev/null 2>&1; then
    echo "llm.c at $(git -C "$LLMC_DIR" rev-parse HEAD)"
fi
cp -r "$LLMC_DIR/Makefile" "$LLMC_DIR/train_gpt2.c" "$LLMC_DIR/llmc" "$work/llmc/"
src="$work/llmc/train_gpt2.c"
sed -i 's/dataloader_init(&train_loader, train_tokens, B, T, 0, 1, 1);/dataloader_init(\&train_loader, train_tokens, B, T, 0, 1, 0);/' "$src"
sed -i 's/printf("val loss %f\\n", val_loss);/printf("val loss %.9f\\n", val_loss);/' "$src"
sed -i 's/printf("step %d: train loss %f (took/printf("step %d: train loss %.9f (took/' "$src"
n=$(diff "$LLMC_DIR/train_gpt2.c" "$src" | grep -c '^>' || true)
[ "$n" = 3 ] || { echo "llmc_check: patching train_gpt2.c changed $n lines, expected 3 (llm.c changed?)" >&2; exit 1; }
make -C "$work/llmc" train_gpt2 >"$work/make.log" 2>&1 || { cat "$work/make.log" >&2; exit 1; }

# ---- inputs ----
cd "$work"
$GEN ckpt ck.bin --layers 4 --hidden 64 --heads 4 --vocab 250 --padded-vocab 256 --max-seq 128 --seed 7
$GEN shard train.bin "$ROOT/models/data/corpus.txt" --end 0.9
$GEN shard val.bin "$ROOT/models/data/corpus.txt" --start 0.9
mkdir -p llmc/dev/data/tinyshakespeare
cp train.bin llmc/dev/data/tinyshakespeare/tiny_shakespeare_train.bin
cp val.bin llmc/dev/data/tinyshakespeare/tiny_shakespeare_val.bin

run_llmc() { # checkpoint -> llm.c's output
    cp "$1" llmc/gpt2_124M.bin
    (cd llmc && ./train_gpt2) >"$2"
}
run_llmc ck.bin llmc.out

cat > model.yaml <<'YAML'
name: llmc-check
model:
  init: ck.bin
  seq_len: 64
training:
  global_batch: 4
  micro_batch: 1
  steps: 10
  precision: fp32
  data: {kind: shards, path: train.bin, order: sequential}
  val: {kind: shards, path: val.bin, every: 10, batches: 5}
  optimizer: {lr: 1.0e-4, beta1: 0.9, beta2: 0.999, eps: 1.0e-8, weight_decay: 0,
              grad_clip: 0, warmup_steps: 0, schedule: constant}
cluster: {nodes: 1, devices_per_node: 4, device: cpu}
YAML
for layout in "1 1 1" "1 1 4" "1 2 1" "2 1 2"; do
    set -- $layout
    name="dp$1-tp$2-pp$3"
    "$BIN/zbplan" model.yaml --dp "$1" --tp "$2" --pp "$3" -q -o "$name.plan.yaml"
    extra=""
    [ "$name" = dp1-tp1-pp4 ] && extra="--export zb.bin"
    "$BIN/zbrun" "$name.plan.yaml" -q --report "$name.report.yaml" $extra
done
run_llmc zb.bin llmc_zb.out

python3 - <<'PY'
import re, sys, yaml
llmc = open("llmc.out").read()
val0 = float(re.findall(r"val loss ([0-9.]+)", llmc)[0])
train = {int(s): float(l) for s, l in re.findall(r"step (\d+): train loss ([0-9.]+)", llmc)}
val_zb = float(re.findall(r"val loss ([0-9.]+)", open("llmc_zb.out").read())[0])
rel = lambda a, b: abs(a - b) / abs(b)
ok = True
print("%-13s %14s %14s %10s" % ("layout", "llm.c", "zbrun", "rel diff"))
for name in ("dp1-tp1-pp1", "dp1-tp1-pp4", "dp1-tp2-pp1", "dp2-tp1-pp2"):
    r = yaml.safe_load(open(name + ".report.yaml"))
    print("%s: schedule %s, v %d, %d microbatches of %d" % (name, r["plan"]["schedule"],
          r["plan"]["v"], r["plan"]["microbatches"], r["plan"]["micro_batch"]))
    z0 = r["val"][0]["val_loss"]
    d = rel(z0, val0)
    ok &= d <= 1e-5
    print("%-13s %14.9f %14.9f %10.2e  %s val step 0" % (name, val0, z0, d, "ok" if d <= 1e-5 else "FAIL"))
    worst = 0.0
    for s in r["steps"][:10]:
        d = rel(s["loss"], train[s["step"] - 1])
        worst = max(worst, d)
        print("%-13s %14.9f %14.9f %10.2e  %s train step %d" % (name, train[s["step"] - 1], s["loss"], d,
              "ok" if d <= 1e-4 else "FAIL", s["step"]))
    ok &= worst <= 1e-4
    if name == "dp1-tp1-pp4":
        z10 = r["val"][-1]["val_loss"]
        d = rel(val_zb, z10)
        ok &= d <= 1e-5
        print("%-13s %14.9f %14.9f %10.2e  %s llm.c val of zbrun's export after step 10" % (
              name, val_zb, z10, d, "ok" if d <= 1e-5 else "FAIL"))
print("llmc_check:", "PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
PY
