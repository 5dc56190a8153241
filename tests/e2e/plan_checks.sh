#!/bin/bash
# plan_checks.sh - zbplan refuses what zbrun would refuse, and profiles
# that contradict themselves (issue 29, section 4). Failed with the zb
# before that issue:
#   - a device peak of 1e-20 TFLOPS: zbplan wrote a plan (exit 0) whose
#     pass times (7e16 s) zbrun's plan reader refuses; now exit 2, no plan;
#   - a profile whose pass times do not fit in the spans it reports, or
#     that has a time without samples: accepted; now exit 2 naming it.
# Usage (from anywhere): BIN=bin bash tests/e2e/plan_checks.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BIN=${BIN:-bin}
case "$BIN" in /*) ;; *) BIN=$ROOT/$BIN ;; esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0 checks=0
ok() { checks=$((checks + 1)); }
bad() { checks=$((checks + 1)); fails=$((fails + 1)); echo "FAIL: $*"; }
run() { rc=0; timeout -s KILL 120 "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?; }
expect() {
    if [ "$rc" -eq "$1" ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] &&
        grep -Eq -- "$2" "$tmp/err"; then ok
    else bad "$3: exit $rc (want $1), stderr: $(head -c 400 "$tmp/err")"; fi
}
[ -x "$BIN/zbplan" ] && [ -x "$BIN/zbrun" ] || { echo "plan_checks.sh: build $BIN first"; exit 1; }
cd "$tmp"
cat >m.yaml <<YAML
model: {layers: 2, hidden: 16, heads: 2, seq_len: 16, vocab: 256}
training:
  global_batch: 4
  micro_batch: 1
  steps: 3
  optimizer: {lr: 1.0e-3, schedule: constant}
cluster: {nodes: 1, devices_per_node: 2, device: cpu}
YAML

# ---- a device peak zbrun's plan reader would refuse ------------------------
sed 's/device: cpu}/device: {name: cpu, peak_bf16_tflops: 1e-20, peak_fp32_tflops: 1e-20, memory_gib: 16}}/' \
    m.yaml >peak.yaml
run "$BIN/zbplan" peak.yaml --pp 2 -q -o peak.plan
expect 2 "^zbplan: the plan would be refused by zbrun \(plan:[0-9]+:[0-9]+: 't_[fbw]' must be <= 1e\+15" "a 1e-20 TFLOPS peak"
[ ! -e peak.plan ] && ok || bad "a plan zbrun refuses was written"

# ---- a profile that contradicts itself ---------------------------------------
"$BIN/zbplan" m.yaml --pp 2 -q -o p.yaml && "$BIN/zbrun" p.yaml --threads 1 --steps 3 -q --profile prof.yaml ||
    { echo "FAIL: profiling run"; exit 1; }
run "$BIN/zbplan" m.yaml --pp 2 -q --profile prof.yaml -o out.yaml
[ "$rc" -eq 0 ] && ok || bad "zbrun's own profile refused: $(cat "$tmp/err")"
sed 's/pipeline_s: [0-9.e-]*,/pipeline_s: 1e-09,/' prof.yaml >short.yaml
run "$BIN/zbplan" m.yaml --pp 2 -q --profile short.yaml -o out.yaml
expect 2 "^(zbplan: )?short.yaml:[0-9]+:[0-9]+: the passes take .* more than pp 2 x pipeline_s 1e-09 s allows" "passes longer than the spans"
sed '0,/samples_f: [0-9]*/s//samples_f: 0/' prof.yaml >nosamples.yaml
run "$BIN/zbplan" m.yaml --pp 2 -q --profile nosamples.yaml -o out.yaml
expect 2 "^(zbplan: )?nosamples.yaml:[0-9]+:[0-9]+: vstage 0: t_f .* over samples_f 0" "a time without samples"

echo "plan_checks.sh: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
