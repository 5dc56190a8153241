#!/bin/bash
# docs_drift.sh - the program output shown in docs/ and README.md is what the
# programs print now: scripts/refresh-docs --check regenerates every block
# marked "<!-- refresh-docs: COMMAND -->" and fails on any difference; and
# every command line shown in their code blocks runs: scripts/refresh-docs
# --commands runs each zbplan, zbrun and zbreport line (but those of blocks
# marked "skip: REASON") and fails on any that exits non-zero.
# Also checks that the check can fail: in a scratch copy of the docs with
# one generated line changed, --check exits 1 and names the file, and a
# refresh there restores the line.
# Usage (from anywhere): BIN=bin bash tests/e2e/docs_drift.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x bin/zbplan ] || { echo "docs_drift.sh: build bin/zbplan first (make)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() { fails=$((fails + 1)); echo "FAIL: $*"; }

scripts/refresh-docs --check >"$tmp/drift" 2>&1 ||
    bad "docs drifted from the programs (run scripts/refresh-docs):
$(cat "$tmp/drift")"

scripts/refresh-docs --commands >"$tmp/cmds" 2>&1 ||
    bad "a command line shown in the docs fails:
$(grep -v ': ok: ' "$tmp/cmds")"
n=$(grep -c ': ok: ' "$tmp/cmds" || true)
[ "$n" -ge 8 ] || bad "only $n command lines ran: $(cat "$tmp/cmds")"

# the check can fail: a copy with one generated line altered
mkdir -p "$tmp/repo/scripts"
cp -r docs README.md "$tmp/repo/"
cp scripts/refresh-docs "$tmp/repo/scripts/"
for d in bin models plans tests; do ln -s "$PWD/$d" "$tmp/repo/$d"; done
grep -q '^wrote plan.yaml: ' "$tmp/repo/docs/zbplan.md" || bad "no generated 'wrote plan.yaml' line in docs/zbplan.md"
sed -i 's/^wrote plan.yaml: dp [0-9]*/wrote plan.yaml: dp 999/' "$tmp/repo/docs/zbplan.md"
set +e; "$tmp/repo/scripts/refresh-docs" --check >"$tmp/out" 2>&1; rc=$?; set -e
[ "$rc" -eq 1 ] || bad "--check on an altered doc exited $rc, not 1"
grep -q '^-wrote plan.yaml: dp 999' "$tmp/out" || bad "--check did not show the altered line: $(head -5 "$tmp/out")"
"$tmp/repo/scripts/refresh-docs" >/dev/null
diff docs/zbplan.md "$tmp/repo/docs/zbplan.md" >&2 || bad "refresh did not restore docs/zbplan.md"
# ... and the commands' run can fail: a shown command with a mistyped option
sed -i 's/^bin\/zbplan models\/tiny.yaml --pp 4 --compare /bin\/zbplan models\/tiny.yaml --pp 4 --comparee /' "$tmp/repo/README.md"
line=$(grep -n -- '--comparee' "$tmp/repo/README.md" | cut -d: -f1)
[ -n "$line" ] || bad "README.md shows no 'bin/zbplan models/tiny.yaml --pp 4 --compare' to alter"
set +e; "$tmp/repo/scripts/refresh-docs" --commands >"$tmp/out" 2>&1; rc=$?; set -e
[ "$rc" -eq 1 ] || bad "--commands with a mistyped option exited $rc, not 1"
grep -q "^README.md:$line: 'bin/zbplan models/tiny.yaml --pp 4 --comparee' exited 2: .*--comparee" "$tmp/out" ||
    bad "--commands did not name the failing line: $(grep -v ': ok: ' "$tmp/out")"

[ "$fails" -eq 0 ] && echo "docs_drift.sh: ok" || { echo "docs_drift.sh: $fails failure(s)"; exit 1; }
