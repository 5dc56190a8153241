#!/bin/bash
# zbrun_vocab.sh - vocabulary parallelism (issue 32) trained end to end on
# models/tiny.yaml (threads, cpu):
#   - zbplan --vocab-parallel 1 and 2 with 1f1b at pp 2 and 4, v-half at
#     pp 4, 1f1b at pp 2 x dp 2, 1f1b at pp 2 x tp 2 and pp 4 x tp 2 and
#     v-half at pp 4 x tp 2 (the vocabulary sharded over pp x tp): zbrun's
#     step losses and grad norms equal those of the pp 1 run without it
#     (1e-5 relative);
#   - the same with the cuda backend's host copies and padded logits on
#     the cpu (test hooks ZB_VOCAB_HOST_MIRRORS=1, ZB_LOGITS_ALIGN=128);
#   - a checkpoint of such a run resumes to the same losses;
#   - from llm.c initial weights (model init:) pp 4 vocab 2 gives pp 1's;
#   - pp 2 x dp 2 and pp 2 x tp 2 under mpirun -np 4 (skipped without
#     mpirun or MPI);
#   - what zbrun does not run yet is refused in one line naming the plan,
#     exit 2: a validation set.
# Usage (from anywhere): BIN=bin bash tests/e2e/zbrun_vocab.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() { fails=$((fails + 1)); echo "FAIL: $*"; }

[ -x "$BIN/zbplan" ] && [ -x "$BIN/zbrun" ] || { echo "zbrun_vocab.sh: build $BIN/zbplan and $BIN/zbrun first"; exit 1; }

. tests/e2e/lib/losses.sh

plan() { # out schedule pp dp tp vocab
    "$BIN/zbplan" models/tiny.yaml -o "$1" -q --schedule "$2" --pp "$3" --dp "$4" --tp "$5" \
        --vocab-parallel "$6" || bad "zbplan $*"
}
run() { # plan out [args]
    local p=$1 o=$2
    shift 2
    "$BIN/zbrun" "$p" --steps 4 --threads 1 "$@" >"$o" 2>&1 || bad "zbrun $p $*: $(tail -1 "$o")"
}

plan "$tmp/ref.yaml" 1f1b 1 1 1 none
run "$tmp/ref.yaml" "$tmp/ref.out"
for v in 1 2; do
    for cfg in "1f1b 2 1 1" "1f1b 4 1 1" "v-half 4 1 1" "1f1b 2 2 1" "1f1b 2 1 2" "1f1b 4 1 2" "v-half 4 1 2"; do
        set -- $cfg
        name="$1-pp$2-dp$3-v$v"
        [ "$4" = 1 ] || name="$1-pp$2-tp$4-v$v"
        plan "$tmp/$name.yaml" "$1" "$2" "$3" "$4" $v
        grep -q "^  vocab_parallel: $v\$" "$tmp/$name.yaml" || bad "$name: the plan has no vocab_parallel $v"
        run "$tmp/$name.yaml" "$tmp/$name.out"
        same_losses "$tmp/ref.out" "$tmp/$name.out" || bad "$name: losses differ from pp 1's"
    done
done

# ---- the cuda backend's memory orchestration, on the cpu: host mirrors of
# the statistics and the sums with their to_host/from_host copies
# (ZB_VOCAB_HOST_MIRRORS=1) and the logits' stride padded to 128 as the cuda
# ops pad it: the layouts of tests/cuda/share_gpu.sh and one with tp 2
for name in 1f1b-pp4-dp1-v1 v-half-pp4-dp1-v2 1f1b-pp2-tp2-v2; do
    ZB_VOCAB_HOST_MIRRORS=1 ZB_LOGITS_ALIGN=128 run "$tmp/$name.yaml" "$tmp/$name-mirrors.out"
    same_losses "$tmp/ref.out" "$tmp/$name-mirrors.out" || bad "$name with host mirrors: losses differ from pp 1's"
done

# ---- checkpoint after step 2, resume to step 4 -----------------------------
p="$tmp/1f1b-pp2-dp1-v2.yaml"
"$BIN/zbrun" "$p" --steps 2 --threads 1 --checkpoint-every 2 --checkpoint-dir "$tmp/ck" \
    >"$tmp/ck2.out" 2>&1 || bad "vocab run with checkpoints failed: $(tail -1 "$tmp/ck2.out")"
run "$p" "$tmp/resume.out" --checkpoint-dir "$tmp/ck" --resume --resume-changed
grep -q '^step 3/4 ' "$tmp/resume.out" && ! grep -q '^step 1/4 ' "$tmp/resume.out" ||
    bad "resume did not start at step 3"
same_losses "$tmp/ref.out" "$tmp/resume.out" 3 || bad "resumed vocab run: losses differ from pp 1's"

# ---- from llm.c initial weights (model init:): the shards load their rows
python3 tests/bench/llmc_gen.py ckpt "$tmp/ck.bin" --layers 8 --hidden 64 --heads 4 \
    --vocab 256 --padded-vocab 256 --max-seq 64 >/dev/null || bad "llmc_gen failed"
sed -e "s#^model:#model:\n  init: $tmp/ck.bin#" -e "s#data/corpus.txt#$PWD/models/data/corpus.txt#" \
    models/tiny.yaml >"$tmp/init.yaml"
"$BIN/zbplan" "$tmp/init.yaml" -o "$tmp/init1.yaml" -q --pp 1 --dp 1 --tp 1 --schedule 1f1b || bad "zbplan init pp 1"
"$BIN/zbplan" "$tmp/init.yaml" -o "$tmp/init4.yaml" -q --pp 4 --dp 1 --tp 1 --schedule 1f1b \
    --vocab-parallel 2 || bad "zbplan init pp 4 vocab 2"
run "$tmp/init1.yaml" "$tmp/init1.out"
run "$tmp/init4.yaml" "$tmp/init4.out"
same_losses "$tmp/init1.out" "$tmp/init4.out" || bad "from llm.c weights: vocab 2 losses differ from pp 1's"
cmp -s <(grep '^step 1/' "$tmp/init1.out" | cut -d' ' -f4) <(grep '^step 1/' "$tmp/ref.out" | cut -d' ' -f4) &&
    bad "init: the llm.c weights were not used (the seeded run's first loss)"

# ---- one process per rank (mpirun -np 4): the same losses ------------------
if command -v mpirun >/dev/null &&
    ! OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=1 "$BIN/zbrun" /nonexistent.yaml 2>&1 |
        grep -q "built without MPI"; then
    for name in 1f1b-pp2-dp2-v1 1f1b-pp2-tp2-v2; do
        env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
            mpirun --allow-run-as-root --oversubscribe --bind-to none -x ASAN_OPTIONS -np 4 \
            "$BIN/zbrun" "$tmp/$name.yaml" --steps 4 --threads 1 >"$tmp/mpi-$name.out" 2>&1 ||
            bad "vocab $name under mpirun failed: $(tail -1 "$tmp/mpi-$name.out")"
        same_losses "$tmp/ref.out" "$tmp/mpi-$name.out" || bad "vocab $name under mpirun: losses differ from pp 1's"
    done
else
    echo "zbrun_vocab.sh: mpirun part skipped (no mpirun, or zbrun without MPI)"
fi

# ---- refused: one line naming the plan, exit 2 -----------------------------
refused() { # plan expected-words [args]
    local p=$1 want=$2 rc=0
    shift 2
    "$BIN/zbrun" "$p" --steps 2 --threads 1 "$@" >"$tmp/r.out" 2>&1 || rc=$?
    [ $rc = 2 ] || bad "$p $*: exit $rc, want 2"
    local last
    last=$(tail -1 "$tmp/r.out")
    [[ $last == "$p: "*"$want"* ]] || bad "$p $*: '$last' does not name the plan and '$want'"
}
refused "$tmp/1f1b-pp2-dp1-v1.yaml" "training.val" --set "training.val.path=$PWD/models/data/corpus.txt"

[ $fails = 0 ] && echo "zbrun_vocab.sh: ok" || { echo "zbrun_vocab.sh: $fails failed"; exit 1; }
