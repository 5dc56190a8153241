#!/bin/bash
# zbrun_tensorboard.sh - zbrun --tensorboard DIR (docs/zbrun.md, "Metrics
# while training"):
#   - an independent reader written here (TFRecord framing, CRC32C computed
#     bit by bit in Python, masked as TensorFlow masks it; the Event and
#     Summary protobufs decoded field by field) reads every record back:
#     every CRC holds, the first event is file_version "brain.Event:2", then
#     one event per --metrics record with the same step, wall time and
#     values (as float32), val/loss exactly when the record has val_loss;
#   - one damaged byte is found by the reader (the test can fail);
#   - with the tensorboard Python package installed, TensorBoard's own
#     EventAccumulator loads the folder and sees the same scalars (skipped
#     with a message otherwise);
#   - a folder that cannot be made (its parent missing) is exit 2, one line,
#     nothing trained.
# Usage (from anywhere): BIN=bin bash tests/e2e/zbrun_tensorboard.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() { fails=$((fails + 1)); echo "FAIL: $*"; }

corpus=$PWD/models/data/corpus.txt
sed -e "s#path: data/corpus.txt.*#path: $corpus\n  val: {path: $corpus, every: 2}#" \
    models/tiny.yaml >"$tmp/model.yaml"
"$BIN/zbplan" "$tmp/model.yaml" -q --dp 1 --tp 1 --pp 2 --schedule 1f1b -o "$tmp/plan.yaml"
"$BIN/zbrun" "$tmp/plan.yaml" --steps 5 --threads 1 -q --metrics "$tmp/m.jsonl" \
    --tensorboard "$tmp/tb" || bad "zbrun --tensorboard exited $?"

cat >"$tmp/reader.py" <<'PY'
import json, struct, sys, glob

def crc32c(data):   # Castagnoli, reflected polynomial 0x82F63B78, bit by bit
    c = 0xFFFFFFFF
    for b in data:
        c ^= b
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
    return c ^ 0xFFFFFFFF

def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF

def records(raw):
    at = 0
    while at < len(raw):
        head = raw[at:at + 8]
        n, = struct.unpack("<Q", head)
        hcrc, = struct.unpack("<I", raw[at + 8:at + 12])
        assert hcrc == masked(head), f"length CRC at byte {at}"
        data = raw[at + 12:at + 12 + n]
        dcrc, = struct.unpack("<I", raw[at + 12 + n:at + 16 + n])
        assert len(data) == n and dcrc == masked(data), f"data CRC at byte {at}"
        yield data
        at += 16 + n

def fields(buf):   # protobuf wire format: (field number, value)
    at = 0
    def varint():
        nonlocal at
        v = shift = 0
        while True:
            b = buf[at]; at += 1
            v |= (b & 0x7F) << shift; shift += 7
            if not b & 0x80: return v
    while at < len(buf):
        key = varint(); num, wire = key >> 3, key & 7
        if wire == 0: yield num, varint()
        elif wire == 1: yield num, buf[at:at + 8]; at += 8
        elif wire == 5: yield num, buf[at:at + 4]; at += 4
        elif wire == 2:
            n = varint(); yield num, buf[at:at + n]; at += n
        else: raise ValueError(f"wire type {wire}")

def event(data):
    e = {"values": {}}
    for num, v in fields(data):
        if num == 1: e["wall_time"], = struct.unpack("<d", v)
        elif num == 2: e["step"] = v
        elif num == 3: e["file_version"] = v.decode()
        elif num == 5:
            for snum, sv in fields(v):
                assert snum == 1, snum
                d = dict(fields(sv))
                e["values"][d[1].decode()], = struct.unpack("<f", d[2])
    return e

def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]

tb, metrics = sys.argv[1], sys.argv[2]
files = glob.glob(f"{tb}/events.out.tfevents.*")
assert len(files) == 1, files
evs = [event(d) for d in records(open(files[0], "rb").read())]
assert evs[0].get("file_version") == "brain.Event:2", evs[0]
recs = [json.loads(l) for l in open(metrics)]
assert len(evs) == 1 + len(recs), (len(evs), len(recs))
names = {"train/loss": "loss", "train/lr": "lr", "train/grad_norm": "grad_norm",
         "train/tokens_per_s": "tokens_per_s", "train/step_ms": "step_ms",
         "train/mfu": "mfu", "train/tokens_seen": "tokens_seen", "val/loss": "val_loss"}
for e, r in zip(evs[1:], recs):
    assert e["step"] == r["step"], (e, r)
    assert abs(e["wall_time"] - r["timestamp"]) < 0.002, (e["wall_time"], r["timestamp"])
    want = {t: f32(r[k]) for t, k in names.items() if k in r and (k != "tokens_seen" or "loss" in r)}
    if "loss" in r:
        want["train/mem_bytes_max"] = f32(max(r["mem_bytes"]))
    assert e["values"] == want, (r["step"], e["values"], want)
print(len(evs))
PY
n=$(python3 "$tmp/reader.py" "$tmp/tb" "$tmp/m.jsonl") || bad "the event file does not read back as the metrics"
[ "${n:-0}" -eq 7 ] || bad "want 7 events (version, evaluation, 5 steps), got '$n'"

# the reader finds one damaged byte
mkdir "$tmp/dmg"
f=$(ls "$tmp"/tb/events.out.tfevents.*)
python3 - "$f" "$tmp/dmg/$(basename "$f")" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[len(b) // 2] ^= 0x10
open(sys.argv[2], "wb").write(b)
PY
if python3 "$tmp/reader.py" "$tmp/dmg" "$tmp/m.jsonl" >/dev/null 2>&1; then
    bad "the reader accepted a damaged event file"
fi

# TensorBoard's own reader, where it is installed
if python3 -c "import tensorboard" 2>/dev/null; then
    python3 - "$tmp/tb" "$tmp/m.jsonl" <<'PY' || bad "TensorBoard's EventAccumulator does not read the file"
import json, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator(sys.argv[1]); acc.Reload()
tags = acc.Tags()["scalars"]
assert "train/loss" in tags and "val/loss" in tags, tags
recs = [json.loads(l) for l in open(sys.argv[2])]
loss = [(s.step, s.value) for s in acc.Scalars("train/loss")]
want = [(r["step"], r["loss"]) for r in recs if "loss" in r]
assert [s for s, _ in loss] == [s for s, _ in want], (loss, want)
assert all(abs(a - b) < 1e-6 * abs(b) for (_, a), (_, b) in zip(loss, want)), (loss, want)
val = [s.step for s in acc.Scalars("val/loss")]
assert val == [r["step"] for r in recs if "val_loss" in r], val
PY
else
    echo "zbrun_tensorboard.sh: skipped TensorBoard's own reader: python3 has no 'tensorboard' package (pip install tensorboard)"
fi

set +e
"$BIN/zbrun" "$tmp/plan.yaml" --steps 2 --tensorboard "$tmp/no/tb" >"$tmp/o" 2>"$tmp/e"; rc=$?
set -e
[ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/e")" -eq 1 ] &&
    grep -q "^zbrun: --tensorboard $tmp/no/tb: cannot create: No such file" "$tmp/e" ||
    bad "missing parent: rc $rc: $(cat "$tmp/e")"
! grep -q '^step 1/' "$tmp/o" || bad "missing parent: trained before failing"

[ "$fails" -eq 0 ] && echo "zbrun_tensorboard.sh: ok" || { echo "zbrun_tensorboard.sh: $fails failure(s)"; exit 1; }
