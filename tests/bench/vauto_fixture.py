#!/usr/bin/env python3
"""vauto_fixture.py - writes tests/authors/vauto_sweep.txt, the Zero Bubble
authors' v_auto_schedule spans over the sweep of vs_authors_v.py
(VAUTO_SWEEP=1, seeds 1 and 2, 30 instances each), for
tests/unit/test_zb_auto_v_authors.c.

Each case: p, m, per-rank costs F B W (comm per transfer), M_B and M_W per
rank, the memory limit per rank, and the span `zbplan sim --import` gives
the authors' order (their code runs as in vs_authors_v.py: read with
`git show` from a checkout of sail-sg/zero-bubble-pipeline-parallelism,
nothing of it copied into zb). All integers.

Usage: python3 tests/bench/vauto_fixture.py AUTHORS_GIT_DIR > tests/authors/vauto_sweep.txt
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vs_authors_v as va  # noqa: E402

SEEDS = (1, 2)
N = 30


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    gitdir = sys.argv[1]
    commit = subprocess.run(["git", "--git-dir", gitdir, "rev-parse", "HEAD"], check=True,
                            capture_output=True, text=True).stdout.strip()
    mods = va.load_authors(gitdir)
    print("# v_auto_schedule spans (zb's simulator) over vs_authors_v.py's VAUTO_SWEEP")
    print("# sail-sg/zero-bubble-pipeline-parallelism %s, seeds %s, %d instances each" %
          (commit, " ".join(map(str, SEEDS)), N))
    print("# seed instance p m f b w comm mb mw limit span")
    with tempfile.TemporaryDirectory() as tmp:
        for seed in SEEDS:
            for i, inst, limit, span in va.sweep_cases(mods, N, seed, tmp):
                k = inst["rank"]
                print("%d %d %d %d %d %d %d %d %d %d %d %d" %
                      (seed, i, inst["p"], inst["m"], k["f"], k["b"], k["w"], k["comm"],
                       k["mb"], k["mw"], limit, span))
                sys.stdout.flush()


if __name__ == "__main__":
    main()
