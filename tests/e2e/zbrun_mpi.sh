#!/bin/bash
# zbrun_mpi.sh - zbrun with one process per rank under mpirun (Open MPI),
# CPU backend, MPI transport, against the threaded run of the same plan:
#   0. the MPI transport's own test under mpirun -np 3 (bitwise fixed-order
#      all-reduces, tagged messages, size mismatch);
#   1. layouts of 4 ranks: pp 4 with every schedule, dp 2 x pp 2,
#      tp 2 x pp 2, dp 2 x tp 2: under `mpirun -np 4` the loss of each of 5
#      steps is within 1e-5 relative of the threaded run (and of the
#      single-rank run), and the final parameters (a checkpoint after the
#      last step) equal the threaded run's within 1e-5 relative to each
#      rank file's largest magnitude (the fixed-order sums make them
#      bitwise equal in practice); only rank 0 prints the step lines;
#      one layout also writes report, trace and SVG from rank 0, covering
#      every rank;
#   1b. --export under mpirun writes the same bytes as the threaded run;
#   2. a world size that does not match the plan: every rank exits 2 and
#      exactly one line names both numbers;
#   3. kill -9 of one rank mid-run: mpirun and every other rank exit
#      non-zero within 30 s; --resume under mpirun then prints the same
#      steps as an uninterrupted run;
#   3b. the same under `mpirun --enable-recovery` (the launcher leaves the
#      survivors running): rank 0's transport gives up after
#      ZB_COMM_TIMEOUT_S=3 naming rank 1, well within 30 s;
#   4. a checkpoint of another layout is refused on resume: exit 2;
#   5. a NaN loss (every rank reaches the verdict): the job exits non-zero
#      and one line names the step and the rank;
#   6. --backend cuda under mpirun -np 2 (and torchrun-style) where no CUDA
#      device is visible or CUDA is not built: every rank exits 2, one line.
# Skipped (exit 0, "skipped: ...") when zbrun was built without MPI or
# mpirun is missing.
# Usage (from anywhere): BIN=bin bash tests/e2e/zbrun_mpi.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin}
. tests/e2e/lib/hold.sh
STEPS=5
tmp=$(mktemp -d)
bg=
cleanup() {
    if [ -n "$bg" ]; then kill -9 "$bg" 2>/dev/null || true; fi
    rm -rf "$tmp"
}
trap cleanup EXIT
fails=0
bad() { fails=$((fails + 1)); echo "FAIL: $*"; }

[ -x "$BIN/zbplan" ] && [ -x "$BIN/zbrun" ] || { echo "zbrun_mpi.sh: build $BIN/zbplan and $BIN/zbrun first"; exit 1; }
if ! command -v mpirun >/dev/null; then echo "zbrun_mpi.sh: skipped: no mpirun"; exit 0; fi
if OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=1 "$BIN/zbrun" /nonexistent.yaml 2>&1 |
    grep -q "built without MPI"; then
    echo "zbrun_mpi.sh: skipped: zbrun built without MPI"; exit 0
fi
# Under `make asan`, processes started by mpirun keep every ASan and UBSan
# check but not LeakSanitizer: Open MPI leaves allocations at exit in
# plugins it has unloaded, which no suppression can name (zb's own code is
# leak-checked by the unit tests and the threaded runs here).
MPIRUN=(env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
        mpirun --allow-run-as-root --oversubscribe --bind-to none -x ASAN_OPTIONS)

# ---- 0. the transport itself (tests/mpi/test_transport_mpi.c) -------------
tt="${MPI_TESTS_DIR:-build/mpi}/test_transport_mpi"
if [ -x "$tt" ]; then
    "${MPIRUN[@]}" -np 3 "$tt" >"$tmp/tt.out" 2>&1 && echo "  $(grep test_transport_mpi "$tmp/tt.out")" ||
        bad "MPI transport test: $(grep -m3 -E 'FAIL|rank' "$tmp/tt.out")"
else
    bad "$tt not built (make $tt)"
fi

# models/tiny.yaml made cheaper per step (8 layers for pp 4 with 2 chunks);
# the data path becomes absolute as the copy lives elsewhere
python3 - models/tiny.yaml "$tmp/model.yaml" <<'PY'
import os, sys, yaml
m = yaml.safe_load(open(sys.argv[1]))
m["model"].update(layers=8, hidden=32, seq_len=32)
m["model"].pop("ffn_hidden", None)
d = m["training"]["data"]
d["path"] = os.path.abspath(os.path.join(os.path.dirname(sys.argv[1]), d["path"]))
yaml.safe_dump(m, open(sys.argv[2], "w"))
PY

# compare.py THREADED_DIR MPI_DIR REF_REPORT: reports' losses and the
# checkpoint rank files of the last step
cat >"$tmp/compare.py" <<'PY'
import array, glob, os, sys, yaml
a, b, ref = sys.argv[1], sys.argv[2], sys.argv[3]
def losses(path):
    return [s["loss"] for s in yaml.safe_load(open(path))["steps"]]
la, lb, lr = losses(a + "/report.yaml"), losses(b + "/report.yaml"), losses(ref)
assert len(la) == len(lb) == len(lr) == 5, (len(la), len(lb), len(lr))
for k, (x, y, z) in enumerate(zip(la, lb, lr)):
    assert abs(x - y) <= 1e-5 * abs(x), ("step", k + 1, "threaded", x, "mpi", y)
    assert abs(z - y) <= 1e-5 * abs(z), ("step", k + 1, "single rank", z, "mpi", y)
fa = sorted(glob.glob(a + "/ck/step-*/rank-*.bin"))
fb = sorted(glob.glob(b + "/ck/step-*/rank-*.bin"))
assert fa and [os.path.relpath(f, a) for f in fa] == [os.path.relpath(f, b) for f in fb], (fa, fb)
same = 0
for x, y in zip(fa, fb):
    da, db = open(x, "rb").read(), open(y, "rb").read()
    if da == db:
        same += 1
        continue
    assert len(da) == len(db) and da[:24] == db[:24], (x, y, "headers or sizes differ")
    n = (len(da) - 24) // 4
    va, vb = array.array("f", da[24:24 + 4 * n]), array.array("f", db[24:24 + 4 * n])
    scale = max(abs(v) for v in va) or 1.0
    worst = max(abs(p - q) for p, q in zip(va, vb))
    assert worst <= 1e-5 * scale, (y, "largest difference", worst, "scale", scale)
print(f"5 losses equal, {len(fa)} rank files ({same} bitwise)")
PY

"$BIN/zbplan" "$tmp/model.yaml" -o "$tmp/ref.yaml" -q --pp 1 --dp 1 --tp 1 --schedule 1f1b
"$BIN/zbrun" "$tmp/ref.yaml" --steps $STEPS --threads 1 -q --report "$tmp/ref-report.yaml" ||
    { echo "single-rank run failed"; exit 1; }

# ---- 1. layouts: threaded against mpirun -np 4 ------------------------------
# case NAME ZBPLAN_ARGS...
case_layout() {
    local name=$1; shift
    local d="$tmp/$name"
    mkdir -p "$d/thr" "$d/mpi"
    if ! "$BIN/zbplan" "$tmp/model.yaml" -o "$d/plan.yaml" -q "$@" 2>"$d/plan.err"; then
        echo "  $name: skipped: zbplan: $(head -c 100 "$d/plan.err")"
        return 0
    fi
    local args=("$d/plan.yaml" --steps $STEPS --threads 1 --checkpoint-every $STEPS)
    "$BIN/zbrun" "${args[@]}" --report "$d/thr/report.yaml" --checkpoint-dir "$d/thr/ck" \
        >"$d/thr/out" 2>&1 || { bad "$name: threaded run failed: $(tail -1 "$d/thr/out")"; return 0; }
    "${MPIRUN[@]}" -np 4 "$BIN/zbrun" "${args[@]}" --report "$d/mpi/report.yaml" \
        --checkpoint-dir "$d/mpi/ck" "${extra[@]}" >"$d/mpi/out" 2>"$d/mpi/err" ||
        { bad "$name: mpirun -np 4 failed: $(grep zbrun "$d/mpi/err" | head -3)"; return 0; }
    [ "$(grep -c '^step ' "$d/mpi/out")" -eq $STEPS ] || bad "$name: $(grep -c '^step ' "$d/mpi/out") step lines under mpirun, want $STEPS (rank 0 only)"
    grep -q "^launch: Open MPI, 4 processes" "$d/mpi/out" || bad "$name: no launch line"
    if r=$(python3 "$tmp/compare.py" "$d/thr" "$d/mpi" "$tmp/ref-report.yaml" 2>&1); then
        echo "  $name: $r"
    else
        bad "$name: mpirun differs from threads: $(echo "$r" | tail -1)"
    fi
}

extra=()
for s in gpipe 1f1b interleaved zb-h1 zb-h2 zb-v zb-auto zb-1p zb-2p zb-auto-v; do
    case_layout "pp4-$s" --pp 4 --dp 1 --tp 1 --schedule "$s"
done
case_layout dp2xpp2 --pp 2 --dp 2 --tp 1 --schedule zb-h1
case_layout tp2xpp2 --pp 2 --dp 1 --tp 2 --schedule 1f1b
extra=(--trace "$tmp/dp2xtp2/mpi/trace.json" --svg "$tmp/dp2xtp2/mpi/timeline.svg")
case_layout dp2xtp2 --pp 1 --dp 2 --tp 2 --schedule 1f1b
extra=()
python3 - "$tmp/dp2xtp2/mpi/report.yaml" "$tmp/dp2xtp2/mpi/trace.json" <<'PY' || bad "report/trace of the mpirun run do not cover every rank"
import json, sys, yaml
rep = yaml.safe_load(open(sys.argv[1]))
assert rep["run"]["ranks"] == 4 and len(rep["ranks"]) == 4
assert all(r["busy_s"] > 0 and r["static_bytes"] > 0 and r["act_peak_bytes"] > 0 for r in rep["ranks"])
ev = [e for e in json.load(open(sys.argv[2]))["traceEvents"] if e["ph"] == "X"]
comp = [e for e in ev if "rank" in e["args"]]
assert {e["args"]["rank"] for e in comp} == {0, 1, 2, 3}, {e["args"]["rank"] for e in comp}
# transfers and step tails (no rank argument: their row is the rank's) of
# every rank, gathered from the other processes
tails = [e for e in ev if e.get("cat") == "step"]
assert len({(e["pid"], e["tid"]) for e in tails}) == 4 and all(e["ts"] > 0 for e in tails), tails
PY
[ -s "$tmp/dp2xtp2/mpi/timeline.svg" ] || bad "no SVG from the mpirun run"

# ---- 1b. --export gathers every rank's weights to rank 0 -------------------
# the llm.c checkpoint written under mpirun -np 4 is byte-identical to the
# threaded run's (tp 2 x pp 2: every rank holds a different shard)
eargs=("$tmp/tp2xpp2/plan.yaml" --steps 2 --threads 1 -q)
"$BIN/zbrun" "${eargs[@]}" --export "$tmp/thr.bin" 2>"$tmp/exp.err" &&
"${MPIRUN[@]}" -np 4 "$BIN/zbrun" "${eargs[@]}" --export "$tmp/mpi.bin" 2>>"$tmp/exp.err" &&
    cmp -s "$tmp/thr.bin" "$tmp/mpi.bin" && echo "  --export: mpirun equals threads, $(stat -c %s "$tmp/mpi.bin") bytes" ||
    bad "--export under mpirun differs from the threaded export: $(grep zbrun "$tmp/exp.err" | head -2)"

# ---- 2. wrong world size: every rank exits 2, one line ---------------------
"${MPIRUN[@]}" -np 2 bash -c '"$0" "$1" --steps 1 >/dev/null; echo $? >"$2.$OMPI_COMM_WORLD_RANK"' \
    "$BIN/zbrun" "$tmp/pp4-1f1b/plan.yaml" "$tmp/rc" 2>"$tmp/world.err" || true
for r in 0 1; do
    [ "$(cat "$tmp/rc.$r" 2>/dev/null)" = 2 ] || bad "wrong world size: rank $r exited $(cat "$tmp/rc.$r" 2>/dev/null || echo '?'), want 2"
done
[ "$(grep -c . "$tmp/world.err")" -eq 1 ] && grep -q "launched as 2 processes.* = 4 ranks" "$tmp/world.err" ||
    bad "wrong world size: want one line naming 2 and 4, got: $(cat "$tmp/world.err")"

# ---- 3. kill -9 of one rank, then resume -----------------------------------
"$BIN/zbplan" "$tmp/model.yaml" -o "$tmp/kill.yaml" -q --pp 2 --dp 1 --tp 1 --schedule zb-h1
KSTEPS=60
kargs=("$tmp/kill.yaml" --steps $KSTEPS --threads 1)
"$BIN/zbrun" "${kargs[@]}" >"$tmp/full.out" 2>&1 || bad "uninterrupted run failed"
# both ranks held after step 3 (lib/hold.sh) until rank 1 is killed: the
# run cannot end first, however fast or loaded this machine is
ZB_TEST_HOLD=3 "${MPIRUN[@]}" -x ZB_TEST_HOLD -np 2 \
    bash -c 'echo $$ >"$0.$OMPI_COMM_WORLD_RANK"; exec "$@"' "$tmp/pid" \
    "$BIN/zbrun" "${kargs[@]}" --checkpoint-every 1 --checkpoint-dir "$tmp/kck" \
    >"$tmp/killed.out" 2>"$tmp/killed.err" &
bg=$!
wait_held 3 "$tmp/killed.err" "$bg" 0 && wait_held 3 "$tmp/killed.err" "$bg" 1 ||
    bad "kill -9 of rank 1: the ranks were never held after step 3"
victim=$(cat "$tmp/pid.1" 2>/dev/null || true)
[ -n "$victim" ] && kill -9 "$victim" 2>/dev/null || bad "could not kill rank 1"
t0=$(date +%s.%N)
status=0
for _ in $(seq 1 1200); do kill -0 "$bg" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$bg" 2>/dev/null; then
    bad "mpirun still running 120 s after kill -9 of rank 1"
    kill -9 "$bg" 2>/dev/null || true
fi
wait "$bg" || status=$?
bg=
took=$(python3 -c "import time; print(f'{time.time() - $t0:.1f}')")
[ "$status" -ne 0 ] || bad "mpirun exited 0 after a rank was killed"
# a live process, not a zombie waiting for a parent that does not reap it
alive() { [ -r "/proc/$1/stat" ] && ! awk '{exit $3 == "Z" ? 0 : 1}' "/proc/$1/stat" 2>/dev/null; }
survivor=$(cat "$tmp/pid.0" 2>/dev/null || true)
for _ in $(seq 1 50); do alive "$survivor" || break; sleep 0.1; done
[ -n "$survivor" ] && ! alive "$survivor" || bad "rank 0 (pid $survivor) still alive after the kill: $(cat /proc/$survivor/stat 2>/dev/null)"
grep -q "^step $KSTEPS/" "$tmp/killed.out" && bad "the run finished before the kill"
echo "  kill -9 of rank 1: mpirun exited $status after ${took} s, rank 0 gone"
"${MPIRUN[@]}" -np 2 "$BIN/zbrun" "${kargs[@]}" --checkpoint-every 1 --checkpoint-dir "$tmp/kck" \
    --resume >"$tmp/resumed.out" 2>"$tmp/resumed.err" || bad "resumed run failed: $(grep zbrun "$tmp/resumed.err" | head -2)"
python3 - "$tmp/full.out" "$tmp/resumed.out" "$KSTEPS" <<'PY' || bad "resumed run differs from the uninterrupted one"
import re, sys
def steps(path):
    out = {}
    for line in open(path):
        m = re.match(r"^step (\d+)/\d+ (loss \S+ lr \S+ grad_norm \S+) ", line)
        if m:
            out[int(m.group(1))] = m.group(2)
    return out
full, resumed, total = steps(sys.argv[1]), steps(sys.argv[2]), int(sys.argv[3])
m = re.search(r"^resumed after step (\d+) ", open(sys.argv[2]).read(), re.M)
assert m, "no 'resumed after step' line"
k = int(m.group(1))
assert 1 <= k < total, k
assert sorted(resumed) == list(range(k + 1, total + 1)), sorted(resumed)
for s in resumed:
    assert resumed[s] == full[s], (s, resumed[s], full[s])
print(f"  resumed under mpirun after step {k}: steps {k + 1}..{total} equal")
PY

# ---- 3b. a dead peer the launcher does not clean up after -----------------
# With --enable-recovery mpirun leaves the survivors running; the MPI
# transport's own timeout (ZB_COMM_TIMEOUT_S) must end rank 0, naming rank 1.
if "${MPIRUN[@]}" --enable-recovery -np 1 true >/dev/null 2>&1; then
    # both ranks held after step 3; rank 1 killed there, then rank 0 let go:
    # its next exchange with rank 1 must time out
    ZB_TEST_HOLD=3 ZB_COMM_TIMEOUT_S=3 "${MPIRUN[@]}" --enable-recovery \
        -x ZB_COMM_TIMEOUT_S -x ZB_TEST_HOLD -np 2 \
        bash -c 'echo $$ >"$0.$OMPI_COMM_WORLD_RANK"; exec "$@"' "$tmp/rpid" \
        "$BIN/zbrun" "${kargs[@]}" >"$tmp/rec.out" 2>"$tmp/rec.err" &
    bg=$!
    wait_held 3 "$tmp/rec.err" "$bg" 0 && wait_held 3 "$tmp/rec.err" "$bg" 1 ||
        bad "recovery run: the ranks were never held after step 3"
    kill -9 "$(cat "$tmp/rpid.1")" 2>/dev/null || bad "could not kill rank 1 (recovery run)"
    t0=$(date +%s.%N)
    survivor=$(cat "$tmp/rpid.0")
    kill -USR1 "$survivor" 2>/dev/null || bad "could not let rank 0 go on (recovery run)"
    for _ in $(seq 1 1200); do alive "$survivor" || break; sleep 0.1; done
    took=$(python3 -c "import time; print(f'{time.time() - $t0:.1f}')")
    if alive "$survivor"; then bad "rank 0 still running 120 s after rank 1 died (no launcher clean-up)"; fi
    grep -q "zbrun: rank 0: waited 3 s for .*rank 1" "$tmp/rec.err" ||
        bad "rank 0 did not name rank 1 on its timeout: $(grep zbrun "$tmp/rec.err" | head -2)"
    for _ in $(seq 1 100); do kill -0 "$bg" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$bg" 2>/dev/null || true
    wait "$bg" 2>/dev/null || true
    bg=
    echo "  kill -9 of rank 1, no launcher clean-up: rank 0 gave up after ${took} s"
else
    echo "  dead peer without launcher clean-up: skipped: mpirun has no --enable-recovery"
fi

# ---- 4. resume with another layout: exit 2 ---------------------------------
"${MPIRUN[@]}" -np 4 bash -c '"$0" "$1" --steps 2 --resume --checkpoint-dir "$2" >/dev/null; echo $? >"$3.$OMPI_COMM_WORLD_RANK"' \
    "$BIN/zbrun" "$tmp/pp4-1f1b/plan.yaml" "$tmp/kck" "$tmp/lrc" 2>"$tmp/layout.err" || true
for r in 0 1 2 3; do
    [ "$(cat "$tmp/lrc.$r" 2>/dev/null)" = 2 ] || bad "resume with another layout: rank $r exited $(cat "$tmp/lrc.$r" 2>/dev/null || echo '?'), want 2"
done
[ "$(grep -c . "$tmp/layout.err")" -eq 1 ] && grep -q "does not match the plan" "$tmp/layout.err" ||
    bad "resume with another layout: want one line, got: $(cat "$tmp/layout.err")"

# ---- 5. a NaN loss: every rank stops, one line ----------------------------
python3 - "$tmp/model.yaml" "$tmp/nan-model.yaml" <<'PY'
import sys, yaml
m = yaml.safe_load(open(sys.argv[1]))
m["training"]["optimizer"].update(lr=1e30, grad_clip=0, warmup_steps=0)
yaml.safe_dump(m, open(sys.argv[2], "w"))
PY
"$BIN/zbplan" "$tmp/nan-model.yaml" -o "$tmp/nan.yaml" -q --pp 2 --dp 2 --tp 1 --schedule 1f1b
status=0
"${MPIRUN[@]}" -np 4 "$BIN/zbrun" "$tmp/nan.yaml" --steps 6 --threads 1 -q >/dev/null 2>"$tmp/nan.err" || status=$?
[ "$status" -ne 0 ] || bad "a NaN loss under mpirun exited 0"
[ "$(grep -c '^zbrun:' "$tmp/nan.err")" -eq 1 ] && grep -q "^zbrun: step [0-9]* rank [0-3]: loss is \(nan\|inf\)" "$tmp/nan.err" ||
    bad "a NaN loss under mpirun: want one 'step N rank R: loss is nan' line, got: $(grep zbrun "$tmp/nan.err")"

# ---- 6. --backend cuda, one process per rank, where it cannot run ----------
# Without a visible device (or in a CPU-only build) every rank exits 2 and
# exactly one line says why, under mpirun and torchrun-style alike (on a
# GPU machine tests/cuda/nccl_procs.sh runs the real thing).
cuda_why='no CUDA device visible\|built without CUDA'
"${MPIRUN[@]}" -np 2 bash -c '"$0" "$1" --steps 1 --backend cuda >/dev/null; echo $? >"$2.$OMPI_COMM_WORLD_RANK"' \
    "$BIN/zbrun" "$tmp/kill.yaml" "$tmp/crc" 2>"$tmp/cuda.err" || true
if grep -q "$cuda_why" "$tmp/cuda.err"; then
    for r in 0 1; do
        [ "$(cat "$tmp/crc.$r" 2>/dev/null)" = 2 ] || bad "cuda under mpirun without a device: rank $r exited $(cat "$tmp/crc.$r" 2>/dev/null || echo '?'), want 2"
    done
    [ "$(grep -c . "$tmp/cuda.err")" -eq 1 ] ||
        bad "cuda under mpirun without a device: want one line, got: $(cat "$tmp/cuda.err")"
    port=$((29500 + RANDOM % 1000))
    tr_env=(WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port)
    env "${tr_env[@]}" RANK=1 LOCAL_RANK=1 "$BIN/zbrun" "$tmp/kill.yaml" --backend cuda >/dev/null 2>"$tmp/tcuda1.err" &
    other=$!
    rc0=0; env "${tr_env[@]}" RANK=0 LOCAL_RANK=0 "$BIN/zbrun" "$tmp/kill.yaml" --backend cuda >/dev/null 2>"$tmp/tcuda0.err" || rc0=$?
    rc1=0; wait "$other" || rc1=$?
    [ "$rc0" = 2 ] && [ "$rc1" = 2 ] && [ "$(cat "$tmp/tcuda0.err" "$tmp/tcuda1.err" | grep -c .)" -eq 1 ] &&
        grep -q "$cuda_why" "$tmp/tcuda0.err" ||
        bad "cuda torchrun-style without a device: exits $rc0 $rc1, want 2 2 and one line, got: $(cat "$tmp/tcuda0.err" "$tmp/tcuda1.err")"
    echo "  --backend cuda, 2 processes, no device: every rank exits 2, one line (mpirun, torchrun-style)"
else
    echo "  --backend cuda under mpirun: skipped: a CUDA device is visible (tests/cuda/nccl_procs.sh runs it)"
fi

if [ "$fails" -ne 0 ]; then
    echo "zbrun_mpi.sh: $fails check(s) failed"
    exit 1
fi
echo "zbrun_mpi.sh: ok"
