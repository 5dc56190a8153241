#!/usr/bin/env bash
# zbplan_import.sh - Hugging Face configs: `zbplan import` turns each of the
# four architectures' sample configs (tests/models/hf/, written from the
# published numbers) into a model file that loads with the exact parameter
# count and plans; `zbplan CONFIG.json` imports and plans in one go, --set
# applying on top; every tests/models/hf-bad/NAME.json exits 2 printing
# exactly NAME.err (one line naming the key).
# Usage (repository root): BIN=bin bash tests/e2e/zbplan_import.sh
set -euo pipefail
BIN=${BIN:-bin}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() { fails=$((fails + 1)); echo "FAIL: $*"; }

# name, parameters as published (Llama 3 8B; Mistral 7B v0.3; Qwen2.5 7B,
# with its Q/K/V biases; GPT-2 small), and the block kind
for row in llama3-8b:8030261248:Llama-shaped mistral-7b:7248023552:Llama-shaped \
           qwen2.5-7b:7615616512:Llama-shaped gpt2:124439808:GPT-2; do
    IFS=: read -r name params kind <<<"$row"
    cfg="tests/models/hf/$name/config.json"
    if ! "$BIN/zbplan" import "$cfg" -o "$tmp/$name.yaml" >"$tmp/out" 2>&1; then
        bad "import $name: $(cat "$tmp/out")"; continue
    fi
    grep -q "^wrote $tmp/$name.yaml: $name, $kind blocks, $params parameters" "$tmp/out" ||
        bad "import $name printed: $(cat "$tmp/out")"
    grep -q "^name: $name\$" "$tmp/$name.yaml" || bad "$name: model name not from the folder"
    "$BIN/zbplan" "$tmp/$name.yaml" -q -o "$tmp/$name-plan.yaml" 2>"$tmp/err" ||
        bad "the imported $name does not plan: $(cat "$tmp/err")"
    # import and plan in one go: the same plan
    "$BIN/zbplan" "$cfg" -q -o "$tmp/$name-direct.yaml" 2>"$tmp/err" ||
        bad "zbplan $cfg: $(cat "$tmp/err")"
    cmp -s "$tmp/$name-plan.yaml" "$tmp/$name-direct.yaml" ||
        bad "$name: zbplan CONFIG.json plans differently from import then plan"
done
grep -q "^  kv_heads: 4\$" "$tmp/qwen2.5-7b.yaml" || bad "qwen2.5-7b: kv_heads not 4"
grep -q "^  qkv_bias: true\$" "$tmp/qwen2.5-7b.yaml" || bad "qwen2.5-7b: no qkv_bias"
grep -q "qkv_bias" "$tmp/llama3-8b.yaml" && bad "llama3-8b: qkv_bias written"
grep -q "^  seq_len: 8192\$" "$tmp/qwen2.5-7b.yaml" || bad "qwen2.5-7b: seq_len not capped at 8192"
grep -q "^  rope_theta: 1000000\$" "$tmp/mistral-7b.yaml" || bad "mistral-7b: rope_theta"
grep -q "^  tied_embeddings: true\$" "$tmp/gpt2.yaml" || bad "gpt2: not tied"
grep -q "kv_heads\|mlp:" "$tmp/gpt2.yaml" && bad "gpt2: block keys written"

# JSON as tools write it: tab-indented, and minified (no spaces at all)
printf '{\n\t"architectures": ["GPT2LMHeadModel"],\n\t"n_embd": 768,\n\t"n_head": 12,\n\t"n_layer": 12,\n\t"n_positions": 1024,\n\t"vocab_size": 50257\n}\n' >"$tmp/tabs.json"
printf '{"architectures":["GPT2LMHeadModel"],"n_embd":768,"n_head":12,"n_layer":12,"n_positions":1024,"vocab_size":50257,"n_inner":null}' >"$tmp/min.json"
for j in tabs min; do
    "$BIN/zbplan" import "$tmp/$j.json" -o "$tmp/$j.yaml" >"$tmp/out" 2>&1 &&
        grep -q "GPT-2 blocks, 124439808 parameters" "$tmp/out" || bad "$j.json: $(cat "$tmp/out")"
done

# --set on the import and on the one-go plan
"$BIN/zbplan" import tests/models/hf/llama3-8b/config.json --set training.global_batch=64 \
    --set cluster.nodes=2 -o "$tmp/s.yaml" >/dev/null
grep -q "^  global_batch: 64\$" "$tmp/s.yaml" && grep -q "^  nodes: 2\$" "$tmp/s.yaml" ||
    bad "--set not applied by import"
rc=0; "$BIN/zbplan" tests/models/hf/gpt2/config.json --set model.kv_heads=5 -q -o "$tmp/x.yaml" \
    2>"$tmp/err" || rc=$?
[ "$rc" -eq 2 ] && grep -q "^zbplan: --set model.kv_heads=5: 'kv_heads' (5) must divide 'heads' (12)\$" "$tmp/err" ||
    bad "bad --set on a config: rc $rc $(cat "$tmp/err")"

# the bad configs
n=0
for f in tests/models/hf-bad/*.json; do
    n=$((n + 1))
    rc=0; "$BIN/zbplan" import "$f" -o "$tmp/x.yaml" >/dev/null 2>"$tmp/err" || rc=$?
    [ "$rc" -eq 2 ] || bad "$f: exit $rc, not 2"
    diff -q "$tmp/err" "${f%.json}.err" >/dev/null || bad "$f: $(cat "$tmp/err") (expected $(cat "${f%.json}.err"))"
    [ -e "$tmp/x.yaml" ] && bad "$f: wrote a model file anyway"
done
[ "$n" -ge 8 ] || bad "only $n bad configs"

[ "$fails" -eq 0 ] && echo "zbplan_import.sh: ok" || { echo "zbplan_import.sh: $fails failure(s)"; exit 1; }
