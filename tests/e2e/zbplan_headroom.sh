#!/bin/bash
# zbplan_headroom.sh - the default plan leaves the documented headroom
# (docs/cost-model.md section 6, docs/model-format.md cluster keys):
#   - every shipped model's default plan (zbplan MODEL, no options) and
#     every plan in plans/ predicts a peak per device (every pipeline
#     rank, workspace included) of at most device memory x (1 - 10%), or
#     x (1 - its own margin) for a model file that sets one and says why
#     in a comment (llama3-405b: 5%, the published run's layout);
#   - zbplan's memory line says the 10% margin;
#   - cluster.memory_margin_pct in a model file sets it (the plan keeps it
#     under 80% at 20, and records the key, which zbrun reads),
#     --set cluster.memory_margin_pct and --mem-margin win over it, and
#     a value out of 0..99 is one line naming file:line, exit 2.
# Usage (from anywhere): BIN=bin bash tests/e2e/zbplan_headroom.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() { fails=$((fails + 1)); echo "FAIL: $*"; }

under() { # plan, margin % (default: the plan's own, else 10): the plan's
          # peak per rank against the device
    python3 - "$1" "${2:-}" <<'PY'
import sys, yaml
p = yaml.safe_load(open(sys.argv[1]))
mem = p["cluster"]["device"]["memory_gib"] * 2**30
pct = float(sys.argv[2] or p["cluster"].get("memory_margin_pct", 10))
limit = mem * (1 - pct / 100)
peak = max(r["peak_mem_bytes"] for r in p["prediction"]["ranks"])
ok = peak <= limit
print(f"{sys.argv[1]}: peak {peak / 2**30:.2f} GiB of {mem / 2**30:.2f} GiB "
      f"({100 * (1 - peak / mem):.1f}% free, limit {limit / 2**30:.2f}): {'ok' if ok else 'OVER'}")
sys.exit(0 if ok else 1)
PY
}

for model in models/*.yaml; do
    name=$(basename "$model" .yaml)
    "$BIN/zbplan" "$model" -q -o "$tmp/$name.yaml" || { bad "$model does not plan"; continue; }
    under "$tmp/$name.yaml" >"$tmp/u" || bad "default plan: $(cat "$tmp/u")"
    # a model file that sets its own margin says why, and keeps at least 5%
    if grep -q "^  memory_margin_pct:" "$model"; then
        pct=$(sed -n 's/^  memory_margin_pct: *//p' "$model")
        grep -q "^  #.*margin" "$model" && [ "${pct%%.*}" -ge 5 ] ||
            bad "$model sets memory_margin_pct $pct without saying why"
        grep -q "memory_margin_pct: $pct" "$tmp/$name.yaml" || bad "$name: the plan lacks the file's margin"
    else
        under "$tmp/$name.yaml" 10 >"$tmp/u" || bad "default plan at 10%: $(cat "$tmp/u")"
        grep -q "memory_margin_pct" "$tmp/$name.yaml" && bad "$name: the default margin written"
    fi
done
for plan in plans/*.yaml; do
    under "$plan" >"$tmp/u" || bad "shipped plan: $(cat "$tmp/u")"
done

out=$("$BIN/zbplan" models/zb-6.2b.yaml --top 1 -o "$tmp/a.yaml")
grep -q "^memory: 80.00 GiB per device, 10% safety margin: a plan may use 72.00 GiB$" <<<"$out" ||
    bad "memory line: $(grep '^memory' <<<"$out")"

sed 's/^cluster:$/cluster:\n  memory_margin_pct: 20/' models/zb-6.2b.yaml >"$tmp/m20.yaml"
grep -q "memory_margin_pct: 20" "$tmp/m20.yaml" || bad "models/zb-6.2b.yaml has no 'cluster:' line"
out=$("$BIN/zbplan" "$tmp/m20.yaml" --top 1 -o "$tmp/b.yaml")
grep -q "20% safety margin: a plan may use 64.00 GiB" <<<"$out" || bad "file margin 20: $(grep '^memory' <<<"$out")"
under "$tmp/b.yaml" 20 >"$tmp/u" || bad "file margin 20: $(cat "$tmp/u")"
grep -q "memory_margin_pct: 20" "$tmp/b.yaml" || bad "the plan does not record memory_margin_pct 20"
"$BIN/zbplan" models/tiny.yaml --pp 2 --set cluster.memory_margin_pct=20 -q -o "$tmp/t.yaml"
"$BIN/zbrun" "$tmp/t.yaml" --dry-run >"$tmp/o" 2>&1 || bad "zbrun does not take a plan with the key: $(cat "$tmp/o")"
out=$("$BIN/zbplan" "$tmp/m20.yaml" --mem-margin 5 --top 1 -o "$tmp/c.yaml")
grep -q "5% safety margin: a plan may use 76.00 GiB" <<<"$out" || bad "--mem-margin over the file: $(grep '^memory' <<<"$out")"
out=$("$BIN/zbplan" models/zb-6.2b.yaml --set cluster.memory_margin_pct=15 --top 1 -o "$tmp/d.yaml")
grep -q "15% safety margin: a plan may use 68.00 GiB" <<<"$out" || bad "--set margin 15: $(grep '^memory' <<<"$out")"

sed 's/^cluster:$/cluster:\n  memory_margin_pct: 150/' models/zb-6.2b.yaml >"$tmp/bad.yaml"
set +e
"$BIN/zbplan" "$tmp/bad.yaml" -o "$tmp/x.yaml" >/dev/null 2>"$tmp/e"
rc=$?
set -e
[ "$rc" = 2 ] && [ "$(wc -l <"$tmp/e")" = 1 ] && grep -q "^$tmp/bad.yaml:[0-9]*:[0-9]*: .*memory_margin_pct" "$tmp/e" ||
    bad "margin 150: rc $rc: $(cat "$tmp/e")"

if [ "$fails" -ne 0 ]; then echo "zbplan_headroom.sh: $fails failure(s)"; exit 1; fi
echo "zbplan_headroom.sh: ok"
