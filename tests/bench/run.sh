#!/usr/bin/env bash
# Executor benchmark (make bench): tokens/s of the default model on the CPU
# for each schedule, with measured and predicted bubble rates side by side.
# Step times are medians over the steps after the first (warm-up). Numbers,
# not pass/fail: this machine is shared and noisy.
set -euo pipefail
BIN=${BIN:-bin}
MODEL=${MODEL:-models/tiny.yaml}
STEPS=${STEPS:-12}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

summarise() { # report.yaml -> "median_step_s tokens_per_step bubble pred_bubble pred_tok/s replayed stalled"
    python3 - "$1" <<'PY'
import statistics, sys, yaml
r = yaml.safe_load(open(sys.argv[1]))
s = r["summary"]
step = statistics.median([x["time_s"] for x in r["steps"]][1:] or [s["step_s"]])
tokens = s["tokens_per_s"] * s["step_s"]
busy = sum(x["busy_s"] for x in r["ranks"])
stall = sum(x.get("stall_s", 0) for x in r["ranks"])
print(f"{step:.6f} {tokens:.0f} {s['bubble_rate']:.4f} {s['predicted_bubble_rate']:.4f} "
      f"{s['predicted_tokens_per_s']:.0f} {s.get('replayed_bubble_rate', -1):.4f} "
      f"{stall / busy if busy else 0:.4f}")
PY
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
echo "replayed: the schedule simulated with the measured pass times; stalled: share"
echo "of pass time the rank threads were off their cores (other processes)"
printf '%-12s %3s %2s %12s %12s %10s %10s %10s %8s\n' schedule pp v "tokens/s" "pred tok/s" "bubble" "pred bub" "replayed" "stalled"
for pp in 2 4; do
    for s in gpipe 1f1b interleaved zb-h1 zb-h2 zb-v zb-1p zb-2p zb-auto-v; do
        plan="$out/$s-$pp.yaml"
        if ! "$BIN/zbplan" "$MODEL" --dp 1 --tp 1 --pp "$pp" --schedule "$s" -q -o "$plan" 2>"$out/err"; then
            printf '%-12s %3s    (not applicable: %s)\n' "$s" "$pp" "$(head -c 60 "$out/err")"
            continue
        fi
        v=$(awk '/^  chunks:/ {print $2}' "$plan")
        "$BIN/zbrun" "$plan" --steps "$STEPS" -q --report "$out/r.yaml"
        read -r step tokens bub pbub ptok rep stall < <(summarise "$out/r.yaml")
        tps=$(python3 -c "print(f'{$tokens / $step:.0f}')")
        printf '%-12s %3s %2s %12s %12s %9.1f%% %9.1f%% %9.1f%% %7.0f%%\n' "$s" "$pp" "$v" "$tps" "$ptok" \
            "$(python3 -c "print($bub*100)")" "$(python3 -c "print($pbub*100)")" \
            "$(python3 -c "print($rep*100)")" "$(python3 -c "print($stall*100)")"
    done
done
echo "(measured on $(nproc) cores; with more pipeline ranks than cores the ranks time-share and the measured bubble includes that)"
