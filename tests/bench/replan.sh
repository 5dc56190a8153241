#!/usr/bin/env bash
# replan.sh - calibrate, profile, then replan (make bench): measure this CPU
# once (`zbplan calibrate --model`), plan the tiny model with the cost model
# on it (analytic), run it with `zbrun --profile`, plan again with
# `zbplan --profile`, run that plan, and compare each plan's predicted step
# time with the median of REPS measured runs. zbrun gives each rank
# cores / ranks threads, which is what the planner assumes. Targets: the
# calibrated analytic prediction within 15% and the replanned one within
# 10% of the measured step on the machine that made them; the last row
# (schedule "search") is `make run`'s own flow, whose profiled prediction
# is the one `make run` prints. Numbers, not
# pass/fail: this machine may be shared and noisy (the load is printed;
# compare at a load below the core count).
set -euo pipefail
BIN=${BIN:-bin}
MODEL=${MODEL:-models/tiny.yaml}
STEPS=${STEPS:-8}
REPS=${REPS:-3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

field() { # report.yaml key -> value under summary
    sed -n "s/^  $2: //p" "$1" | head -1
}
# run PLAN TAG [zbrun options]: REPS runs; prints "predicted median runs"
runs() {
    local plan=$1 tag=$2; shift 2
    local ms=""
    for i in $(seq "$REPS"); do
        "$BIN/zbrun" "$plan" --steps "$STEPS" -q --report "$out/r$tag$i.yaml" "$@"
        ms="$ms $(field "$out/r$tag$i.yaml" step_s)"
        set -- # --profile only on the first run
    done
    echo "$(field "$out/r${tag}1.yaml" predicted_step_s)$ms"
}

"$BIN/zbplan" calibrate --model "$MODEL" -q -o "$out/cal.yaml"
echo "load: $(uptime | sed 's/.*load average: //'), $(nproc) cores, $REPS runs of $STEPS steps each"
printf '%-4s %-8s %-10s %12s %14s %8s  %s\n' pp schedule costs "predicted s" "measured s (median)" error runs
# the last row is `make run`'s flow: its pipeline depth, the schedule
# searched, the profile from the calibrated plan's run
run_pp=2
[ "$(nproc)" -ge 4 ] && run_pp=4
for case in 1:1f1b 2:zb-h1 4:zb-h1 "$run_pp:search"; do
    pp=${case%%:*} sched=${case#*:}
    force=(--schedule "$sched")
    [ "$sched" = search ] && force=()
    "$BIN/zbplan" "$out/cal.yaml" --dp 1 --tp 1 --pp "$pp" "${force[@]}" -q -o "$out/a.yaml"
    ra=$(runs "$out/a.yaml" a --profile "$out/prof.yaml")
    "$BIN/zbplan" "$out/cal.yaml" --dp 1 --tp 1 --pp "$pp" "${force[@]}" --profile "$out/prof.yaml" -q -o "$out/b.yaml"
    rb=$(runs "$out/b.yaml" b)
    for k in a b; do
        r=$ra
        costs=calibrated
        [ "$k" = b ] && { r=$rb; costs=profile; }
        python3 -c "
import sys, statistics
v = [float(x) for x in sys.argv[1].split()]
p, m = v[0], statistics.median(v[1:])
print(f'{sys.argv[2]:<4} {sys.argv[3]:<8} {sys.argv[4]:<10} {p:12.4f} {m:14.4f}   {100 * (p - m) / m:+7.1f}%  ' + ' '.join(f'{x:.4f}' for x in v[1:]))" \
            "$r" "$pp" "$sched" "$costs"
    done
done
echo "load at the end: $(uptime | sed 's/.*load average: //')"
echo "(pp ranks are threads with cores / ranks each; more ranks than cores time-share)"
