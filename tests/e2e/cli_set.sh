#!/bin/bash
# cli_set.sh - --set KEY=VALUE overrides (zbplan on the model file, zbrun on
# the plan's run options; docs/zbplan.md, docs/zbrun.md):
#   - zbplan --set changes the planned model: the plan holds the new
#     global_batch and layers, and equals (but for its name) the plan of a
#     model file edited the same way; a mapping VALUE merges key by key
#     (training.optimizer={lr: ...} keeps the file's warmup_steps);
#   - errors: a bad value, an unknown key (with did-you-mean), a combination
#     the model rejects, no '=', a key under a scalar, YAML that does not
#     parse: exit 2, one line "zbplan: --set KEY=VALUE: ...", no plan
#     written; an error in the file itself still names file:line:col;
#   - zbrun --set training.optimizer.lr changes the learning rate the steps
#     print; a key that shapes the plan (model.layers) is refused, naming
#     zbplan; a bad value is "zbrun: --set ...: ...".
# Usage (from anywhere): BIN=bin bash tests/e2e/cli_set.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() { fails=$((fails + 1)); echo "FAIL: $*"; }

expect2() { # regex, what, then the command
    local re=$1 what=$2; shift 2
    set +e; "$@" >"$tmp/o" 2>"$tmp/e"; local rc=$?; set -e
    [ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/e")" -eq 1 ] || { bad "$what: rc $rc: $(cat "$tmp/e")"; return; }
    grep -qE "$re" "$tmp/e" || bad "$what: '$(cat "$tmp/e")' does not match '$re'"
}

P="$BIN/zbplan models/tiny.yaml --pp 2 --schedule 1f1b -q"
$P --set training.global_batch=32 --set model.layers=4 -o "$tmp/set.yaml"
sed -e 's/global_batch: 16 /global_batch: 32 /' -e 's/layers: 8$/layers: 4/' models/tiny.yaml >"$tmp/edited.yaml"
sed -i "s#path: data/corpus.txt#path: $PWD/models/data/corpus.txt#" "$tmp/edited.yaml"
"$BIN/zbplan" "$tmp/edited.yaml" --pp 2 --schedule 1f1b -q -o "$tmp/edit.yaml"
python3 - "$tmp" <<'PY' || bad "--set plan differs from the edited model's"
import sys, yaml, os
t = sys.argv[1]
a, b = (yaml.safe_load(open(f"{t}/{n}.yaml")) for n in ("set", "edit"))
assert a["training"]["global_batch"] == 32 and a["model"]["layers"] == 4, (a["training"], a["model"])
for p in (a, b):
    p["training"]["data"]["path"] = os.path.realpath(p["training"]["data"]["path"])
assert a == b, [k for k in a if a[k] != b[k]]
PY

# a mapping merges key by key: {lr: ...} keeps min_lr, warmup_steps, schedule
$P --set 'training.optimizer={lr: 1e-3, beta2: 0.99}' -o "$tmp/map.yaml"
$P --set training.optimizer.lr=1e-3 --set training.optimizer.beta2=0.99 -o "$tmp/keys.yaml"
python3 - "$tmp" <<'PY' || bad "--set training.optimizer={...} did not merge key by key"
import sys, yaml
t = sys.argv[1]
a, b = (yaml.safe_load(open(f"{t}/{n}.yaml"))["training"]["optimizer"] for n in ("map", "keys"))
assert a == b, (a, b)
assert a["warmup_steps"] == 5 and a["min_lr"] == 3.0e-4 and a["schedule"] == "cosine", a
PY
expect2 "^zbplan: --set training.optimizer=\{lr: abc\}: 'lr' must be a number, got 'abc'$" \
    "bad value in a merged mapping" $P --set 'training.optimizer={lr: abc}' -o "$tmp/x.yaml"

expect2 "^zbplan: --set training.global_batch=abc: 'global_batch' must be an integer, got 'abc'$" \
    "bad value" $P --set training.global_batch=abc -o "$tmp/x.yaml"
expect2 "^zbplan: --set model.layerz=4: unknown key 'layerz' in 'model' \(did you mean 'layers'\?\)$" \
    "unknown key" $P --set model.layerz=4 -o "$tmp/x.yaml"
expect2 "^zbplan: --set training.global_batch=17: 'micro_batch' \(2\) must divide 'global_batch' \(17\)$" \
    "rejected combination" $P --set training.global_batch=17 -o "$tmp/x.yaml"
expect2 "^zbplan: --set training.global_batch=15: .micro_batch. \(2\) must divide" \
    "second override blamed" $P --set model.layers=4 --set training.global_batch=15 --set training.micro_batch=3 -o "$tmp/x.yaml"
expect2 "^zbplan: --set model: want KEY=VALUE" "no =" $P --set model -o "$tmp/x.yaml"
expect2 "^zbplan: --set model.layers.x=3: 'model.layers' is not a mapping \(models/tiny.yaml:5\), so it has no key 'x'$" \
    "key under a scalar" $P --set model.layers.x=3 -o "$tmp/x.yaml"
expect2 "^zbplan: --set model.layers=\[1: value:.*YAML syntax error" "bad YAML" $P --set 'model.layers=[1' -o "$tmp/x.yaml"
expect2 "^zbplan: unknown option '--sett'; did you mean '--set'\?" "--sett" $P --sett model.layers=4
[ ! -e "$tmp/x.yaml" ] || bad "a refused plan was written"
printf 'name: x\nmodel: {layers: two}\n' >"$tmp/badfile.yaml"
expect2 "^$tmp/badfile.yaml:2:" "file error keeps its place" "$BIN/zbplan" "$tmp/badfile.yaml" --set model.layers=2

# zbrun: run options only
"$BIN/zbrun" "$tmp/set.yaml" --steps 6 --threads 1 --set training.optimizer.lr=1e-2 \
    --set training.optimizer.warmup_steps=0 --set training.optimizer.schedule=constant >"$tmp/run" ||
    bad "zbrun --set exited $?"
n=$(grep -c '^step [0-9]*/6 .* lr 1.000000e-02 ' "$tmp/run" || true)
[ "$n" -eq 6 ] || bad "zbrun --set lr: $n of 6 steps at lr 1e-2: $(grep '^step' "$tmp/run" | head -2)"
expect2 "^zbrun: --set model.layers=3: zbrun changes only run options .*replan with zbplan" \
    "zbrun model key" "$BIN/zbrun" "$tmp/set.yaml" --set model.layers=3
expect2 "^zbrun: --set training.optimizer.lr=abc: 'lr' must be a number, got 'abc'$" \
    "zbrun bad value" "$BIN/zbrun" "$tmp/set.yaml" --set training.optimizer.lr=abc

[ "$fails" -eq 0 ] && echo "cli_set.sh: ok" || { echo "cli_set.sh: $fails failure(s)"; exit 1; }
