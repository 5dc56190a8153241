#!/bin/bash
# executor_layout.sh - the executor's house rules (executor/README.md),
# checked by tests/e2e/layout.py:
#   - every room (executor/*/) has a README.md whose first line says what it
#     is, and holds at most 20 source files; only base.h/base.c sit outside;
#   - includes and calls run downward only: run/ -> report/, state/ ->
#     stage/ -> comm/ -> host/ -> base.h; report/ and state/ not into each
#     other; base.h includes no room; of the planner only cost/plan_fit.h;
#   - no circle of includes (x.c and x.h as one unit), of calls between
#     object files (nm on $BUILD/executor) or of rooms.
# Usage (from anywhere, after make): BUILD=build bash tests/e2e/executor_layout.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 tests/e2e/layout.py executor "${BUILD:-build}"
