#!/usr/bin/env bash
# MPI transport benchmark (make bench): the same plan run with its ranks as
# threads of one process (local transport) and as processes under
# `mpirun -np N` (MPI transport), on the CPU backend, for pp 2 and pp 4 of
# the default model. Runs alternate (threads, mpirun, threads, ...) ROUNDS
# times so that load changes hit both alike; step times are medians over
# every step after each run's first (warm-up). Prints tokens/s, measured
# bubble, and the MPI run's step time over the threaded one's: the cost of
# the MPI transport (target at pp 2: at most +10%). Numbers, not pass/fail:
# the machine is shared, so the load average is printed beside them.
set -euo pipefail
BIN=${BIN:-bin}
MODEL=${MODEL:-models/tiny.yaml}
STEPS=${STEPS:-12}
ROUNDS=${ROUNDS:-3}
SCHEDULE=${SCHEDULE:-1f1b}
if ! command -v mpirun >/dev/null; then echo "mpi bench: skipped: no mpirun"; exit 0; fi
if OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=1 "$BIN/zbrun" /nonexistent.yaml 2>&1 |
    grep -q "built without MPI"; then
    echo "mpi bench: skipped: zbrun built without MPI"; exit 0
fi
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# stats.py REPORT... -> "median_step_s tokens_per_step mean_bubble"
cat >"$out/stats.py" <<'PY'
import statistics, sys, yaml
times, bubbles, tokens = [], [], None
for path in sys.argv[1:]:
    r = yaml.safe_load(open(path))
    times += [s["time_s"] for s in r["steps"][1:]]
    bubbles.append(r["summary"]["bubble_rate"])
    tokens = r["summary"]["tokens_per_s"] * r["summary"]["step_s"]
print(f"{statistics.median(times):.6f} {tokens:.0f} {statistics.mean(bubbles):.4f}")
PY

echo "MPI transport against threads: $MODEL, $SCHEDULE, $STEPS steps x $ROUNDS rounds, 1 thread per rank"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
printf '%-4s %-8s %12s %12s %9s %14s\n' pp run "step ms" "tokens/s" bubble "vs threads"
for pp in 2 4; do
    plan="$out/pp$pp.yaml"
    "$BIN/zbplan" "$MODEL" --dp 1 --tp 1 --pp "$pp" --schedule "$SCHEDULE" -q -o "$plan"
    for k in $(seq 1 "$ROUNDS"); do
        "$BIN/zbrun" "$plan" --steps "$STEPS" --threads 1 -q --report "$out/thr-$pp-$k.yaml"
        "${MPIRUN[@]}" -np "$pp" "$BIN/zbrun" "$plan" --steps "$STEPS" --threads 1 -q \
            --report "$out/mpi-$pp-$k.yaml"
    done
    read -r ts tok tb < <(python3 "$out/stats.py" "$out"/thr-$pp-*.yaml)
    read -r ms _ mb < <(python3 "$out/stats.py" "$out"/mpi-$pp-*.yaml)
    python3 - "$pp" "$ts" "$ms" "$tok" "$tb" "$mb" <<'PY'
import sys
pp, ts, ms, tok, tb, mb = sys.argv[1], *map(float, sys.argv[2:])
print(f"{pp:<4} {'threads':<8} {ts*1e3:12.3f} {tok/ts:12.0f} {tb*100:8.1f}% {'':>14}")
print(f"{pp:<4} {'mpirun':<8} {ms*1e3:12.3f} {tok/ms:12.0f} {mb*100:8.1f}% {(ms/ts-1)*100:+13.1f}%")
PY
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores (shared machine: medians, not best runs; with more ranks than cores they time-share)"
