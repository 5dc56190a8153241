#!/bin/bash
# zbrun_dry_run.sh - zbrun --dry-run and --resume=auto (docs/zbrun.md):
#   - --dry-run checks and prints what would run (ranks, steps, outputs,
#     checkpoints), exit 0, trains nothing and creates no output (report,
#     metrics, TensorBoard folder, picture);
#   - --dry-run refuses what the run would refuse, exit 2 with one line: a
#     model given as a plan, a data file that is missing, an output in a
#     missing folder, a resume whose checkpoint has other steps;
#   - plain --resume with no checkpoint is refused (exit 2, one line naming
#     --resume=auto), where it used to start from step 1 silently;
#   - --resume=auto with no checkpoint starts at step 1 and says so; the
#     same command after a stop (SIGTERM while held after step 2,
#     lib/hold.sh) resumes after step 2 and ends at the same loss as an
#     uninterrupted run; --dry-run then says it would resume after step 2;
#   - the stopped run's printed resume command keeps --checkpoint-every;
#   - --resume=VALUE other than auto: exit 2.
# Usage (from anywhere): BIN=bin bash tests/e2e/zbrun_dry_run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin}
. tests/e2e/lib/hold.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() { fails=$((fails + 1)); echo "FAIL: $*"; }
expect2() { # what, regex, then the command
    local what=$1 re=$2; shift 2
    set +e; "$@" >"$tmp/o" 2>"$tmp/e"; local rc=$?; set -e
    [ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/e")" -eq 1 ] || { bad "$what: rc $rc: $(cat "$tmp/e")"; return; }
    grep -qE "$re" "$tmp/e" || bad "$what: '$(cat "$tmp/e")' does not match '$re'"
    ! grep -q '^step 1/' "$tmp/o" || bad "$what: trained"
}

"$BIN/zbplan" models/tiny.yaml -q --dp 1 --tp 1 --pp 2 --schedule 1f1b -o "$tmp/plan.yaml"
P=("$BIN/zbrun" "$tmp/plan.yaml" --steps 4 --threads 1)

# a dry run: exit 0, says what would run, writes nothing
"${P[@]}" --dry-run --report "$tmp/r.yaml" --metrics "$tmp/m.jsonl" --svg "$tmp/t.svg" \
    --tensorboard "$tmp/tb" >"$tmp/dry" 2>&1 || bad "--dry-run exited $?: $(cat "$tmp/dry")"
for want in "^dry run: plan, data, memory, outputs and checkpoint folder checked$" \
            "^would train steps 1\.\.4$" "^would run 2 ranks as threads of this process$" \
            "^would write --report $tmp/r.yaml$" "^would write --tensorboard $tmp/tb$" \
            "^nothing trained \(--dry-run\)$"; do
    grep -qE "$want" "$tmp/dry" || bad "--dry-run: no line '$want' in: $(cat "$tmp/dry")"
done
! grep -q '^step ' "$tmp/dry" || bad "--dry-run trained"
for f in r.yaml m.jsonl t.svg tb; do [ ! -e "$tmp/$f" ] || bad "--dry-run created $f"; done

expect2 "dry run of a model" "this is a model, not a plan" \
    "$BIN/zbrun" models/tiny.yaml --dry-run
expect2 "dry run, missing data" "nope.txt" \
    "${P[@]}" --dry-run --set training.data.path="$tmp/nope.txt"
expect2 "dry run, output folder missing" "^zbrun: --report $tmp/no/r.yaml: cannot create" \
    "${P[@]}" --dry-run --report "$tmp/no/r.yaml"

# plain --resume with nothing to resume from is refused
expect2 "--resume without a checkpoint" \
    "^zbrun: --resume: no checkpoint in $tmp/ck/ .*--resume=auto" \
    "${P[@]}" --resume --checkpoint-dir "$tmp/ck" --checkpoint-every 1
expect2 "--resume=yes" "^zbrun: --resume takes no value or =auto, got '--resume=yes'$" \
    "${P[@]}" --resume=yes

# --resume=auto: fresh, stopped after step 2, rerun unchanged: resumed
"${P[@]}" >"$tmp/full" || bad "uninterrupted run exited $?"
A=("${P[@]}" --resume=auto --checkpoint-dir "$tmp/ck" --checkpoint-every 1)
start_held 2 "$tmp/a1" "$tmp/a1.err" "${A[@]}"
if wait_held 2 "$tmp/a1.err" "$held_pid"; then
    kill -TERM "$held_pid"
    set +e; wait "$held_pid"; rc=$?; set -e
    [ "$rc" -eq 143 ] || bad "the held run exited $rc after SIGTERM, want 143"
else
    bad "the --resume=auto run was never held after step 2"
fi
grep -q "^resume=auto: no checkpoint in $tmp/ck/, starting at step 1$" "$tmp/a1" ||
    bad "--resume=auto, fresh: $(head -5 "$tmp/a1")"
# the printed resume command keeps --checkpoint-every
grep -qx "zbrun: checkpoint of step 2 saved; resume with: zbrun $tmp/plan.yaml --resume --checkpoint-dir $tmp/ck --checkpoint-every 1 --steps 4" "$tmp/a1.err" ||
    bad "printed resume command: $(grep 'resume with' "$tmp/a1.err")"
"${A[@]}" --dry-run >"$tmp/dry2" || bad "dry run after the stop exited $?"
grep -q "^would resume after step 2 from $tmp/ck/ and train steps 3\.\.4$" "$tmp/dry2" ||
    bad "dry run after the stop: $(cat "$tmp/dry2")"
expect2 "dry run, the checkpoint's steps differ" \
    "ck/latest.yaml: the checkpoint belongs to a run of 4 steps, this one has 6" \
    "${A[@]}" --dry-run --steps 6
"${A[@]}" >"$tmp/a2" || bad "the rerun exited $?"
grep -q "^resumed after step 2 from $tmp/ck" "$tmp/a2" || bad "the rerun did not resume: $(head -5 "$tmp/a2")"
last() { grep '^step 4/4 ' "$1" | awk '{print $4}'; }
[ -n "$(last "$tmp/full")" ] && [ "$(last "$tmp/a2")" = "$(last "$tmp/full")" ] ||
    bad "resumed final loss '$(last "$tmp/a2")' != uninterrupted '$(last "$tmp/full")'"

[ "$fails" -eq 0 ] && echo "zbrun_dry_run.sh: ok" || { echo "zbrun_dry_run.sh: $fails failure(s)"; exit 1; }
