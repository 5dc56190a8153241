# losses.sh - sourced by the e2e scripts that compare two zbrun runs of 4
# steps (zbrun_vocab.sh, zbrun_dualpipe.sh, zbrun_dualpipe_bidir.sh).
#
#   same_losses A B [FIRST]
#       the "step k/N loss X ... grad_norm Y" lines of outputs A and B:
#       both hold steps FIRST..4 (FIRST default 1; a resumed run starts
#       later) and none past 4, and each step's loss and grad norm agree
#       within 1e-5 relative; false (python's assertion on stderr) else.

same_losses() {
    python3 - "$1" "$2" "${3:-1}" <<'PY'
import sys
def losses(path):
    return {int(l.split()[1].split("/")[0]): (float(l.split()[3]), float(l.split()[7]))
            for l in open(path) if l.startswith("step ")}
a, b, first = losses(sys.argv[1]), losses(sys.argv[2]), int(sys.argv[3])
keys = range(first, 5)
assert all(k in a and k in b for k in keys) and max(a) == max(b) == 4, (a, b)
assert all(abs(x - y) <= 1e-5 * abs(x) for k in keys for x, y in zip(a[k], b[k])), (a, b)
PY
}
