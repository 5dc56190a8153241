# hold.sh - sourced by the e2e scripts that act on a running zbrun: the run
# is held where the test acts (ZB_TEST_HOLD, docs/zbrun.md), so the outcome
# never depends on how fast this machine is.
#
#   start_held N OUT ERR CMD [ARGS...]
#       CMD in the background with ZB_TEST_HOLD=N and SIGINT and SIGTERM at
#       their defaults (a script's background job, or a CI runner, may start
#       with them ignored, and zbrun keeps a signal ignored that it was
#       started with); stdout to OUT, stderr to ERR; sets held_pid.
#       Under mpirun pass `-x ZB_TEST_HOLD` so the ranks see it.
#   wait_held N ERR PID [RANK]
#       until ERR says that RANK (default 0) is held after step N: true; or
#       PID ended first, or 600 s went by (a hang, not a slow machine):
#       false, after saying why.

start_held() {
    local n=$1 out=$2 err=$3
    shift 3
    ZB_TEST_HOLD=$n env --default-signal=INT,TERM "$@" >"$out" 2>"$err" &
    held_pid=$!
}

wait_held() {
    local n=$1 err=$2 pid=$3 rank=${4:-0} i
    for i in $(seq 6000); do
        grep -q "rank $rank: held after step $n " "$err" 2>/dev/null && return 0
        if ! kill -0 "$pid" 2>/dev/null; then
            grep -q "rank $rank: held after step $n " "$err" 2>/dev/null && return 0
            echo "wait_held: the run ended before rank $rank was held after step $n: $(tail -3 "$err")"
            return 1
        fi
        sleep 0.1
    done
    echo "wait_held: rank $rank not held after step $n within 600 s"
    return 1
}
