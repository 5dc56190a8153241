#!/bin/bash
# make_compare.sh - `make compare` plans from this CPU's measurements, as
# `make run` does (docs/zbreport.md): through `make -n` (nothing is run or
# built), for a model with no cached measurements yet:
#   - the CPU is calibrated (zbplan calibrate --model MODEL) and the
#     calibrated plan profiled (zbrun --profile) before any schedule is
#     planned, into the same out/ files `make run` caches (named by a key
#     of the model's content, the machine and the version);
#   - every schedule is planned from the calibrated model with that profile
#     (zbplan out/calibrated-M --profile out/profile-ppP-M), not from the
#     raw model.
# Usage (from anywhere): bash tests/e2e/make_compare.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
m=$tmp/cmpcheck$$.yaml
cp models/tiny.yaml "$m"
make -n --no-print-directory compare MODEL="$m" RUN_PP=2 >"$tmp/n" 2>&1 ||
    { echo "make_compare.sh: FAIL: make -n compare: $(tail -3 "$tmp/n")"; exit 1; }
python3 - "$tmp/n" "$(basename "$m")" <<'PY' || { echo "make_compare.sh: FAIL"; exit 1; }
import re, sys
text = open(sys.argv[1]).read()
name = sys.argv[2]
# make run's cache names carry a key of the model's bytes, the machine and
# the version (out/calibrated-KEY-M): read the names make chose
mc = re.search(r"out/calibrated-[0-9a-f]+-" + re.escape(name), text)
mp = re.search(r"out/profile-pp2-[0-9a-f]+-" + re.escape(name), text)
assert mc and mp, text[-2000:]
calib, prof = mc.group(0), mp.group(0)
at_cal = text.find(f"zbplan calibrate --model ")
at_prof = text.find(f"--profile {prof}")   # the profiling run (into a .tmp, then renamed)
at_loop = text.find("for s in ")
assert 0 <= at_cal < at_prof < at_loop, (at_cal, at_prof, at_loop, text[-2000:])
loop = text[at_loop:]
assert f"zbplan {calib} --dp 1 --tp 1 --pp 2 --schedule $s" in loop, loop
assert f"--profile {prof}" in loop, loop
assert "zbplan " + sys.argv[1] not in loop, loop
PY
echo "make_compare.sh: ok"
