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

summarise() { # report.yaml -> "median_step_s tokens_per_step measured_bubble predicted_bubble"
    python3 - "$1" <<'PY'
import re, statistics, sys
text = open(sys.argv[1]).read()
times = [float(t) for t in re.findall(r"time_s: ([0-9.eE+-]+)", text)][1:]
num = lambda key: float(re.search(r"\n  %s: ([0-9.eE+-]+)" % key, text).group(1))
step = statistics.median(times)
tokens = num("tokens_per_s") * num("step_s")
print(f"{step:.6f} {tokens:.0f} {num('bubble_rate'):.4f} {num('predicted_bubble_rate'):.4f} {num('predicted_tokens_per_s'):.0f}")
PY
}

printf '%-12s %3s %2s %12s %12s %10s %10s\n' schedule pp v "tokens/s" "pred tok/s" "bubble" "pred bub"
for pp in 2 4; do
    for s in gpipe 1f1b interleaved zb-h1 zb-h2 zb-v zb-1p zb-2p zb-auto-v; do
        plan="$out/$s-$pp.yaml"
        if ! "$BIN/zbplan" "$MODEL" --dp 1 --tp 1 --pp "$pp" --schedule "$s" -q -o "$plan" 2>"$out/err"; then
            printf '%-12s %3s    (not applicable: %s)\n' "$s" "$pp" "$(head -c 60 "$out/err")"
            continue
        fi
        v=$(awk '/^  chunks:/ {print $2}' "$plan")
        "$BIN/zbrun" "$plan" --steps "$STEPS" -q --report "$out/r.yaml"
        read -r step tokens bub pbub ptok < <(summarise "$out/r.yaml")
        tps=$(python3 -c "print(f'{$tokens / $step:.0f}')")
        printf '%-12s %3s %2s %12s %12s %9.1f%% %9.1f%%\n' "$s" "$pp" "$v" "$tps" "$ptok" \
            "$(python3 -c "print($bub*100)")" "$(python3 -c "print($pbub*100)")"
    done
done
echo "(measured on $(nproc) cores; with more pipeline ranks than cores the ranks time-share and the measured bubble includes that)"
