#!/usr/bin/env bash
# replan.sh - profile, then replan (make bench): plan the tiny model with the
# analytic cost model, run it with `zbrun --profile`, plan again with
# `zbplan --profile`, run that plan, and compare each plan's predicted step
# time with what was measured. Target: the replanned prediction within 10%
# of the measured step time on the machine that made the profile. Numbers,
# not pass/fail: this machine is shared and noisy (the load is printed).
set -euo pipefail
BIN=${BIN:-bin}
MODEL=${MODEL:-models/tiny.yaml}
STEPS=${STEPS:-8}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

field() { # report.yaml key -> value under summary
    sed -n "s/^  $2: //p" "$1" | head -1
}

echo "load: $(uptime | sed 's/.*load average: //')"
printf '%-4s %-8s %-10s %12s %12s %8s\n' pp schedule costs "predicted s" "measured s" error
for pp in 1 2 4; do
    sched=zb-h1
    [ "$pp" = 1 ] && sched=1f1b
    "$BIN/zbplan" "$MODEL" --pp "$pp" --schedule "$sched" -q -o "$out/a.yaml"
    "$BIN/zbrun" "$out/a.yaml" --steps "$STEPS" --threads 1 -q --profile "$out/prof.yaml" --report "$out/ra.yaml"
    "$BIN/zbplan" "$MODEL" --pp "$pp" --schedule "$sched" --profile "$out/prof.yaml" -q -o "$out/b.yaml"
    "$BIN/zbrun" "$out/b.yaml" --steps "$STEPS" --threads 1 -q --report "$out/rb.yaml"
    for k in a b; do
        pred=$(field "$out/r$k.yaml" predicted_step_s)
        meas=$(field "$out/r$k.yaml" step_s)
        costs=analytic
        [ "$k" = b ] && costs=profile
        python3 -c "import sys; p, m = float(sys.argv[1]), float(sys.argv[2]); print(f'{sys.argv[3]:<4} {sys.argv[4]:<8} {sys.argv[5]:<10} {p:12.4f} {m:12.4f} {100 * (p - m) / m:+7.1f}%')" \
            "$pred" "$meas" "$pp" "$sched" "$costs"
    done
done
echo "(pp ranks are threads; more ranks than cores ($(nproc)) time-share, which no profile of pass times can predict)"
