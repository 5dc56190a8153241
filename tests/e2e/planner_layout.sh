#!/bin/bash
# planner_layout.sh - the planner's house rules (planner/README.md), checked
# by tests/e2e/layout.py:
#   - every room (planner/*/) has a README.md whose first line says what it
#     is, and holds at most 20 source files; only par.c/par.h sit outside;
#   - includes and calls run downward only: cli/ -> search/ -> registry/ ->
#     ilp/ -> auto/ -> schedules/ -> par.h, cost/ beside the schedule rooms;
#     cli/ and search/ reach the schedules only through registry/;
#   - no circle of includes (x.c and x.h as one unit), of calls between
#     object files (nm on $BUILD/planner) or of rooms; the same for common/.
# Then the check itself is checked: copies of planner/ where a generator
# includes the registry, where two units include each other, and where a
# room grows past 20 files, must each fail.
# Usage (from anywhere, after make): BUILD=build bash tests/e2e/planner_layout.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
python3 tests/e2e/layout.py planner "$BUILD"
python3 tests/e2e/layout.py common "$BUILD"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
root=$(pwd)
expect_fail() {   # expect_fail WHAT PATTERN: layout.py on $tmp/t must fail naming PATTERN
    local out rc=0
    out=$(cd "$tmp/t" && python3 "$root/tests/e2e/layout.py" planner "$root/$BUILD" 2>&1) || rc=$?
    if [ "$rc" -ne 1 ] || ! grep -q -- "$2" <<<"$out"; then
        echo "FAIL: planner_layout.sh: $1 not caught (rc $rc):"; echo "$out"; exit 1
    fi
    echo "planner_layout.sh: $1 caught"
}
fresh() { rm -rf "$tmp/t"; mkdir -p "$tmp/t"; cp -r planner "$tmp/t/"; }

fresh   # a generator that includes the registry: upward, and a circle
sed -i '0,/#include "planner\/schedules\/build.h"/s//#include "planner\/schedules\/build.h"\n#include "planner\/registry\/registry.h"/' \
    "$tmp/t/planner/schedules/gpipe.c"
grep -q 'planner/registry/registry.h' "$tmp/t/planner/schedules/gpipe.c"
expect_fail "a generator including the registry" "schedules includes planner/registry/registry.h"
expect_fail "the circle of rooms it makes" "circle of rooms: .*registry"

fresh   # two units of one room that include each other
sed -i 's|^#include "common/zb_schedule.h"|#include "common/zb_schedule.h"\n#include "planner/schedules/vblock_search.h"|' \
    "$tmp/t/planner/schedules/vreorder.h"
expect_fail "a circle of includes inside a room" "circle of includes between units: .*vblock_search.*vreorder"

fresh   # a room of 21 source files
for i in $(seq 1 21); do echo "/* filler */" > "$tmp/t/planner/cost/filler_$i.h"; done
expect_fail "a room past 20 files" "holds .* source files (at most 20)"
echo "planner_layout.sh: ok"
