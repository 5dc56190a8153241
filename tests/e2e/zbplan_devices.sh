#!/bin/bash
# zbplan_devices.sh - device names everywhere a device is named
# (docs/model-format.md, "Device table"):
#   - --set cluster.device=NAME with the short names (h100, a100, h200,
#     b200, mi300x) in any case plans with the table entry: the plan's
#     device mapping has the entry's name and its datasheet numbers, and
#     equals the plan made with the full name;
#   - a model file's cluster.device: H100 plans as h100-sxm does;
#   - zbplan import --set cluster.device=MI300X writes a model that plans;
#   - an unknown name is one line, exit 2, listing every known name and
#     alias, and no plan is written.
# Usage (from anywhere): BIN=bin bash tests/e2e/zbplan_devices.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() { fails=$((fails + 1)); echo "FAIL: $*"; }

plan() { # out, then --set values
    local out=$1; shift
    "$BIN/zbplan" models/gpt2-124m.yaml --pp 1 --tp 1 --schedule 1f1b -q "$@" -o "$out"
}
# typed name, table name, bf16 TFLOPS, memory bytes
while read -r typed name bf16 mem; do
    plan "$tmp/a.yaml" --set "cluster.device=$typed" || { bad "$typed refused"; continue; }
    plan "$tmp/b.yaml" --set "cluster.device=$name"
    cmp -s "$tmp/a.yaml" "$tmp/b.yaml" || bad "$typed: plan differs from $name's"
    python3 - "$tmp/a.yaml" "$name" "$bf16" "$mem" <<'PY' || bad "$typed: plan's device"
import sys, yaml
p = yaml.safe_load(open(sys.argv[1]))
d = p["cluster"]["device"]
assert d["name"] == sys.argv[2], d
assert abs(d["peak_bf16_tflops"] - float(sys.argv[3])) < 1e-9, d
assert abs(d["memory_gib"] * 2**30 - float(sys.argv[4])) < 1, d
PY
done <<'T'
h100 h100-sxm 989 85899345920
H100 h100-sxm 989 85899345920
a100 a100-80gb 312 85899345920
A100 a100-80gb 312 85899345920
H200 h200 989 141000000000
b200 b200 2250 180000000000
B200 b200 2250 180000000000
mi300x mi300x 1307.4 192000000000
MI300X mi300x 1307.4 192000000000
T

sed 's/device: h100-sxm/device: H100/' models/gpt2-124m.yaml >"$tmp/upper.yaml"
grep -q "device: H100" "$tmp/upper.yaml" || bad "models/gpt2-124m.yaml names no h100-sxm"
"$BIN/zbplan" "$tmp/upper.yaml" --pp 1 --tp 1 --schedule 1f1b -q -o "$tmp/u.yaml"
plan "$tmp/f.yaml"
diff <(grep -v "^name:" "$tmp/u.yaml") <(grep -v "^name:" "$tmp/f.yaml") >/dev/null ||
    bad "device: H100 in a model file plans differently from h100-sxm"

"$BIN/zbplan" import tests/models/hf/mistral-7b/config.json --set cluster.device=MI300X \
    -o "$tmp/mistral.yaml" >/dev/null
grep -q "device: MI300X\|name: mi300x\|device: mi300x" "$tmp/mistral.yaml" || bad "import: $(grep device "$tmp/mistral.yaml")"
"$BIN/zbplan" "$tmp/mistral.yaml" -q -o "$tmp/m.yaml" || bad "imported MI300X model does not plan"

set +e
"$BIN/zbplan" models/gpt2-124m.yaml --set cluster.device=h300 -o "$tmp/x.yaml" >"$tmp/o" 2>"$tmp/e"
rc=$?
set -e
want="zbplan: --set cluster.device=h300: unknown device 'h300'; known (any case): a100-40gb, a100-80gb (or a100), h100-sxm (or h100), h200, b200, mi300x, cpu"
[ "$rc" = 2 ] && [ "$(cat "$tmp/e")" = "$want" ] || bad "unknown device: rc $rc: $(cat "$tmp/e")"
[ ! -e "$tmp/x.yaml" ] || bad "unknown device wrote a plan"

if [ "$fails" -ne 0 ]; then echo "zbplan_devices.sh: $fails failure(s)"; exit 1; fi
echo "zbplan_devices.sh: ok"
