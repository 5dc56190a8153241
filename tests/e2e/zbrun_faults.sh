#!/bin/bash
# zbrun_faults.sh - zbrun under faults: nothing silently wrong, nothing
# destroyed, never a hang.
#   1. kill -9 at random moments, FAULT_TRIALS times (default 20; 5 for a
#      sanitizer build unless set): resuming (--resume=auto: a kill before
#      the first checkpoint starts fresh) gives rank files bit-identical
#      to those of an uninterrupted run (parameters and AdamW moments);
#   2. damaged checkpoints (truncations, byte flips in header, data and
#      trailer, a zeroed block, a missing rank file) are all refused with
#      exit 2 and one line naming the file, before any step runs;
#   3. memory limits (ulimit -v) at 5 levels: each run ends within 60 s,
#      with exit 0 or a message;
#   4. disk full (a 1 MiB tmpfs, when this user may mount one; otherwise
#      reported as skipped): the checkpoint fails with a message naming the
#      file and errno, the previous checkpoint still resumes and an existing
#      report is untouched.
# Usage (from anywhere): BIN=bin [FAULT_TRIALS=N] bash tests/e2e/zbrun_faults.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin}
case "$BIN" in *asan*) default_trials=5 ;; *) default_trials=20 ;; esac
TRIALS=${FAULT_TRIALS:-$default_trials}
STEPS=12
tmp=$(mktemp -d)
mnt=
pid=
cleanup() {
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
    [ -n "$mnt" ] && umount "$mnt" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
fails=0 checks=0
ok() { checks=$((checks + 1)); }
bad() { checks=$((checks + 1)); fails=$((fails + 1)); echo "FAIL: $*"; }

[ -x "$BIN/zbplan" ] && [ -x "$BIN/zbrun" ] || { echo "zbrun_faults.sh: build $BIN first"; exit 1; }

# a cheap model: the faults need many runs, not a big one
python3 - models/tiny.yaml "$tmp/model.yaml" <<'EOF'
import os, sys, yaml
m = yaml.safe_load(open(sys.argv[1]))
m["model"].update(layers=4, hidden=32, seq_len=32)
m["model"].pop("ffn_hidden", None)
d = m["training"]["data"]
d["path"] = os.path.abspath(os.path.join(os.path.dirname(sys.argv[1]), d["path"]))
yaml.safe_dump(m, open(sys.argv[2], "w"))
EOF
plan="$tmp/plan.yaml"
"$BIN/zbplan" "$tmp/model.yaml" -o "$plan" -q --pp 2 --schedule zb-h1 || exit 1
zbrun() { timeout -s KILL 120 "$BIN/zbrun" "$plan" --threads 1 "$@"; }

# reference: uninterrupted, checkpointed only at the end
ref="$tmp/ref"
start=$(date +%s%N)
zbrun --steps $STEPS --checkpoint-every $STEPS --checkpoint-dir "$ref" -q ||
    { echo "zbrun_faults.sh: the uninterrupted run failed"; exit 1; }
run_ms=$(( ($(date +%s%N) - start) / 1000000 ))
last=$(printf 'step-%08d' $STEPS)

# same_as_ref DIR: DIR's final rank files equal the reference's, bit for bit
same_as_ref() {
    for f in "$ref/$last"/rank-*.bin; do
        cmp -s "$f" "$1/$last/$(basename "$f")" || return 1
    done
}

# ---- 1. kill -9 at random points, then resume -------------------------------
RANDOM=${FAULT_SEED:-11}
for t in $(seq "$TRIALS"); do
    ck="$tmp/kill$t"
    # a random moment in (a bit more than) one whole run
    delay=$(( RANDOM % (run_ms + 200) ))
    "$BIN/zbrun" "$plan" --threads 1 --steps $STEPS --checkpoint-every 1 \
        --checkpoint-dir "$ck" -q >/dev/null 2>&1 &
    pid=$!
    sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    pid=
    if zbrun --steps $STEPS --checkpoint-every 1 --checkpoint-dir "$ck" --resume=auto -q \
        >"$tmp/out" 2>"$tmp/err" && same_as_ref "$ck"; then ok
    else bad "trial $t (kill after $delay ms): resume differs or failed: $(cat "$tmp/err")"; fi
    rm -rf "$ck"
done

# a kill during the first checkpoint leaves a step folder and no latest.yaml:
# --resume=auto starts fresh over it (the same final weights), --resume
# alone is refused (nothing to resume), one line, exit 2
ck="$tmp/unfinished"
mkdir -p "$ck/step-00000001"
head -c 100 "$ref/$last/rank-00000.bin" >"$ck/step-00000001/rank-00000.bin"
rc=0; zbrun --steps $STEPS --checkpoint-every 1 --checkpoint-dir "$ck" --resume -q \
    >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && ok ||
    bad "--resume over an unfinished first checkpoint: exit $rc, $(cat "$tmp/err")"
if zbrun --steps $STEPS --checkpoint-every 1 --checkpoint-dir "$ck" --resume=auto -q \
    >"$tmp/out" 2>"$tmp/err" && same_as_ref "$ck"; then ok
else bad "--resume=auto over an unfinished first checkpoint: $(cat "$tmp/err")"; fi
rm -rf "$ck"

# ---- 2. damaged checkpoints -------------------------------------------------
# damage NAME CMD...: copy the reference, run CMD with $f = a rank file
# of the copy ($f and $size are set only then: quote them in CMD)
damage() {
    local name=$1
    shift
    local ck="$tmp/dmg"
    rm -rf "$ck"
    cp -r "$ref" "$ck"
    f="$ck/$last/rank-00001.bin"
    size=$(stat -c %s "$f")
    "$@"
    zbrun --steps $((STEPS + 2)) --checkpoint-dir "$ck" --resume --resume-changed -q \
        >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] &&
        grep -q "rank-00001.bin" "$tmp/err" && ! grep -q '^step ' "$tmp/out"; then ok
    else bad "$name: exit $rc, $(cat "$tmp/err")"; fi
}
flip() {   # flip one byte at offset $1
    local b
    b=$(od -An -tu1 -j "$1" -N1 "$f" | tr -d ' ')
    printf "$(printf '\\%03o' $(( (b ^ 0x5a) & 255 )))" |
        dd of="$f" bs=1 seek="$1" conv=notrunc status=none
}
damage "truncated to 0 bytes" eval 'truncate -s 0 "$f"'
damage "truncated to half" eval 'truncate -s $((size / 2)) "$f"'
damage "one byte short" eval 'truncate -s $((size - 1)) "$f"'
damage "one byte more" eval 'printf x >>"$f"'
damage "flip in the magic" flip 3
damage "flip in the header" flip 12
damage "flip in the data (first block)" flip 100
damage "flip in the data (middle)" eval 'flip $((size / 2))'
damage "flip in the trailer" eval 'flip $((size - 40))'
damage "flip in the last byte" eval 'flip $((size - 1))'
damage "zeroed 4 KiB block" eval 'dd if=/dev/zero of="$f" bs=4096 seek=10 count=1 conv=notrunc status=none'
damage "missing rank file" eval 'rm -f "$f"'

# ---- 3. memory limits: an answer within 60 s --------------------------------
for kb in 100000 400000 800000 1600000 4000000; do
    start=$(date +%s)
    ( ulimit -v $kb; timeout -s KILL 60 "$BIN/zbrun" plans/tiny.yaml --steps 2 -q ) \
        >"$tmp/out" 2>"$tmp/err"
    rc=$?
    secs=$(( $(date +%s) - start ))
    if [ "$rc" -ne 137 ] && { [ "$rc" -eq 0 ] || [ -s "$tmp/err" ]; }; then ok
    else bad "ulimit -v $kb: exit $rc after $secs s, $(head -c 300 "$tmp/err")"; fi
done

# ---- 4. disk full -----------------------------------------------------------
mnt="$tmp/full"
mkdir -p "$mnt"
ckbytes=$(du -sb "$ref/$last" | cut -f1)
if mount -t tmpfs -o size=$((ckbytes * 3 / 2 + 65536)) tmpfs "$mnt" 2>/dev/null; then
    echo previous >"$mnt/report.yaml"
    zbrun --steps 4 --checkpoint-every 2 --checkpoint-dir "$mnt/ck" \
        --report "$mnt/report.yaml" -q >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ "$rc" -eq 1 ] && grep -q "rank-0000[01].bin.*No space left on device" "$tmp/err" &&
        grep -q '^step: 2$' "$mnt/ck/latest.yaml" && [ "$(cat "$mnt/report.yaml")" = previous ]; then ok
    else bad "disk full: exit $rc, $(cat "$tmp/err"), index: $(grep step: "$mnt/ck/latest.yaml")"; fi
    cp -r "$mnt/ck" "$tmp/after_full"
    zbrun --steps 4 --checkpoint-dir "$tmp/after_full" --resume -q >"$tmp/out" 2>"$tmp/err" &&
        ok || bad "the checkpoint before the disk filled does not resume: $(cat "$tmp/err")"
    umount "$mnt"
else
    echo "zbrun_faults.sh: disk full: skipped: cannot mount a tmpfs here"
fi
mnt=

echo "zbrun_faults.sh: $((checks - fails))/$checks checks passed ($TRIALS kill trials)"
[ "$fails" -eq 0 ]
