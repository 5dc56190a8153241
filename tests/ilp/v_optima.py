#!/usr/bin/env python3
"""v_optima.py - writes tests/ilp/v_optima.txt: the V ILP's optimum
(planner/ilp/ilp_v.c) on the small instances of the sweep of
tests/unit/test_zb_auto_v_ilp.c, solved once with a generous time limit so
that the test never depends on how fast GLPK runs.

The instances are those the V ILP sweep of test_zb_auto_v_ref.c drew
before (the same xorshift generator and seed, the same draws): per-rank
F in [500, 2000], B in [F, 3F], W in [0.3F, 2F], T_comm in [0, 0.3F],
M_B 1000, M_W in [100, 900]; shapes (p, m) cycling through (2, 2), (2, 3),
(3, 2), (2, 4), (3, 3); every limit from 1000 (one microbatch) to p M_B in
steps of 250 (half a chunk activation). Each case runs

  zbplan sim --schedule zb-auto-v --stages P --microbatches M
             --cost-f F --cost-b B --cost-w W --cost-comm C
             --mem-f 1000 --mem-w MW --mem-limit L --format json
             [--solver ilp --time-limit T]

(per rank costs, split over the two chunks as the test splits them) and
records zb-auto-v's span when the fixture was written, GLPK's span and
bound, and whether it proved optimality (relative gap <= 1e-4, zbplan
sim's mip_gap).

Usage: python3 tests/ilp/v_optima.py [-j JOBS] [-t SECONDS] [-n INSTANCES]
           [--skip K] [--zbplan bin/zbplan] [--redo OLD.txt] > tests/ilp/v_optima.txt

--skip K leaves out the first K instances (-n 20 --skip 10: ten more
instances beside the file's ten).

--redo OLD.txt keeps OLD's proven cases as they are (and every case's
zb-auto-v span, the one from when OLD was written) and solves only its
unproven ones again, with the time limit given.
"""
import argparse
import concurrent.futures as cf
import json
import subprocess
import sys

MASK = (1 << 64) - 1
SHAPES = ((2, 2), (2, 3), (3, 2), (2, 4), (3, 3))


class Xorshift:
    """The generator of test_zb_auto_v_ref.c (xorshift64, 53-bit draws)."""

    def __init__(self, state=0x9E3779B97F4A7C15):
        self.x = state

    def urand(self):
        x = self.x
        x ^= (x << 13) & MASK
        x ^= x >> 7
        x ^= (x << 17) & MASK
        self.x = x
        return (x >> 11) / 9007199254740992.0


def instances(n):
    rng = Xorshift()
    for it in range(n):
        p, m = SHAPES[it % len(SHAPES)]
        f = 500 + 1500 * rng.urand()
        b = f * (1 + 2 * rng.urand())
        w = f * (0.3 + 1.7 * rng.urand())
        comm = 0.3 * f * rng.urand()
        mw = 1000 * (0.1 + 0.8 * rng.urand())
        yield it, p, m, f, b, w, comm, mw


def sim(zbplan, p, m, f, b, w, comm, mw, limit, ilp_s):
    cmd = [zbplan, "sim", "--schedule", "zb-auto-v", "--stages", str(p),
           "--microbatches", str(m), "--cost-f", repr(f), "--cost-b", repr(b),
           "--cost-w", repr(w), "--cost-comm", repr(comm), "--mem-f", "1000",
           "--mem-w", repr(mw), "--mem-limit", repr(float(limit)), "--format", "json"]
    if ilp_s:
        cmd += ["--solver", "ilp", "--time-limit", repr(float(ilp_s))]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def one_case(zbplan, ilp_s, case, old):
    it, p, m, f, b, w, comm, mw, limit = case
    prev = old.get((it, limit))
    if prev and prev.split()[-1] == "1":
        return prev
    heur = (float(prev.split()[9]) if prev else
            sim(zbplan, p, m, f, b, w, comm, mw, limit, 0)["max_span"])
    solve = sim(zbplan, p, m, f, b, w, comm, mw, limit, ilp_s)["solve"]
    return "%d %d %d %r %r %r %r %r %d %r %r %r %d" % (
        it, p, m, f, b, w, comm, mw, limit, heur, solve["max_span"], solve["bound"],
        1 if solve["optimal"] else 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-j", type=int, default=1, help="cases solved at once")
    ap.add_argument("-t", type=float, default=120, help="GLPK time limit per case, s")
    ap.add_argument("-n", type=int, default=10, help="instances")
    ap.add_argument("--skip", type=int, default=0, help="leave out the first SKIP instances")
    ap.add_argument("--zbplan", default="bin/zbplan")
    ap.add_argument("--redo", help="an earlier output: solve only its unproven cases")
    a = ap.parse_args()
    old = {}
    if a.redo:
        with open(a.redo) as f:
            for line in f:
                if not line.startswith("#") and line.strip():
                    x = line.split()
                    old[(int(x[0]), int(x[8]))] = line.rstrip("\n")
    cases = [(it, p, m, f, b, w, comm, mw, limit)
             for it, p, m, f, b, w, comm, mw in instances(a.n) if it >= a.skip
             for limit in range(1000, 1000 * p + 1, 250)]
    print("# V ILP optima (zbplan sim --schedule zb-auto-v --solver ilp, time limit %g s)" % a.t)
    print("# written by: python3 tests/ilp/v_optima.py %s" % " ".join(sys.argv[1:]))
    print("# instance p m f b w comm mw limit heur ilp bound proven")
    with cf.ThreadPoolExecutor(max_workers=a.j) as ex:
        for line in ex.map(lambda c: one_case(a.zbplan, a.t, c, old), cases):
            print(line, flush=True)


if __name__ == "__main__":
    sys.exit(main())
