#!/usr/bin/env bash
# zbplan_llama.sh - Llama-shaped models end to end: the three Llama 3 model
# files plan, zbplan prints their exact parameter counts and the plans
# record them; a plan whose count no longer matches its shapes is refused;
# zbrun trains a Llama-shaped plan and refuses its llm.c export in one line
# (exit 2).
# Usage (repository root): BIN=bin bash tests/e2e/zbplan_llama.sh
set -euo pipefail
BIN=${BIN:-bin}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() { fails=$((fails + 1)); echo "FAIL: $*"; }

for pair in 8b:8,030,261,248:8030261248 70b:70,553,706,496:70553706496 \
            405b:405,853,388,800:405853388800; do
    IFS=: read -r n commas plain <<<"$pair"
    if "$BIN/zbplan" "models/llama3-$n.yaml" -o "$tmp/$n.yaml" >"$tmp/out" 2>&1; then
        grep -q "^model: $commas parameters; " "$tmp/out" || bad "llama3-$n: no parameter line: $(head -3 "$tmp/out")"
        grep -q "^  params: $plain\$" "$tmp/$n.yaml" || bad "llama3-$n: plan does not record params $plain"
        grep -q "^  kv_heads: 8\$" "$tmp/$n.yaml" || bad "llama3-$n: plan lacks kv_heads"
    else
        bad "llama3-$n does not plan: $(tail -1 "$tmp/out")"
    fi
done

# shapes change by --set (the model files state no params); a forced tp must
# divide kv_heads
"$BIN/zbplan" models/llama3-8b.yaml --set model.layers=16 -o "$tmp/l16.yaml" >"$tmp/out" 2>&1 ||
    bad "--set model.layers=16: $(tail -1 "$tmp/out")"
grep -q "^model: 4,540,469,248 parameters; 16 layers" "$tmp/out" || bad "16 layers: $(sed -n 2p "$tmp/out")"
rc=0; "$BIN/zbplan" models/llama3-8b.yaml --set model.kv_heads=4 --tp 8 -q -o "$tmp/x.yaml" 2>"$tmp/err" || rc=$?
[ "$rc" -eq 2 ] && grep -q "^zbplan: --tp 8 must divide kv_heads (4)\$" "$tmp/err" || bad "tp vs kv_heads: rc $rc $(cat "$tmp/err")"

# a GPT-2 model prints no parameter line and its plan no block keys
"$BIN/zbplan" models/tiny.yaml -o "$tmp/tiny.yaml" >"$tmp/out" 2>&1
grep -q "^model: " "$tmp/out" && bad "tiny printed a model line"
grep -q "params:\|kv_heads:" "$tmp/tiny.yaml" && bad "tiny's plan has block keys"

# params edited in the plan: refused naming the key, exit 2
sed 's/^  params: 8030261248$/  params: 8030261249/' "$tmp/8b.yaml" >"$tmp/edited.yaml"
rc=0; "$BIN/zbrun" "$tmp/edited.yaml" >/dev/null 2>"$tmp/err" || rc=$?
[ "$rc" -eq 2 ] && grep -q "'params' is 8030261249 but the model's shapes give 8030261248" "$tmp/err" ||
    bad "edited params: rc $rc $(cat "$tmp/err")"

# zbrun trains a Llama-shaped plan (small enough for this host): the loss
# falls; an llm.c export of one is refused in one line, exit 2
"$BIN/zbplan" models/tiny.yaml --set model.arch=llama --set model.kv_heads=2 \
    --set training.steps=4 -q -o "$tmp/tl.yaml"
rc=0; "$BIN/zbrun" "$tmp/tl.yaml" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" -eq 0 ] || bad "zbrun on a Llama plan exited $rc: $(cat "$tmp/err")"
read -r l0 l1 < <(sed -n 's/^loss \([0-9.]*\) -> \([0-9.]*\) over steps.*/\1 \2/p' "$tmp/out")
awk -v a="${l0:-0}" -v b="${l1:-0}" 'BEGIN { exit !(b > 0 && b < a) }' ||
    bad "Llama plan's loss did not fall: ${l0:-?} -> ${l1:-?}"
"$BIN/zbplan" models/tiny.yaml --set model.arch=llama --set model.kv_heads=2 \
    --set model.tied_embeddings=true --set training.steps=1 -q -o "$tmp/tt.yaml"
rc=0; "$BIN/zbrun" "$tmp/tt.yaml" --export "$tmp/x.bin" >/dev/null 2>"$tmp/err" || rc=$?
[ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] &&
    grep -q "^zbrun: --export: llm.c checkpoints hold GPT-2 blocks only; this model's blocks are Llama-shaped$" "$tmp/err" ||
    bad "Llama export: rc $rc $(cat "$tmp/err")"
[ -e "$tmp/x.bin" ] && bad "a refused export left $tmp/x.bin"

[ "$fails" -eq 0 ] && echo "zbplan_llama.sh: ok" || { echo "zbplan_llama.sh: $fails failure(s)"; exit 1; }
