#!/usr/bin/env python3
"""vs_authors_v.py - zb-auto-v against the Zero Bubble authors' V schedulers.

A benchmark, not a test: it needs the authors' code, a git checkout of
sail-sg/zero-bubble-pipeline-parallelism (main branch), whose scheduler
files it reads with `git show` and runs with a stub for their one megatron
import (nothing of theirs is copied into zb). Their orders are converted to
PyTorch's compute-only CSV and re-simulated by `zbplan sim --import`, so
every span below is zb's simulator's longest rank span and every peak its
memory rule.

Authors' schedulers (per-chunk costs, as they take them):
  zbv-FB     zbv.PipelineGraph.try_v_schedule(fill_f=F, fill_b=B) for the 4
             combinations (ZB-V; main branch), with max_mem = the limit;
  zbv-best   the best of the four (their create_schedule);
  v-auto     v_auto_schedule.schedule (building blocks, max_mem in chunk
             activations: floor(limit / M_B per chunk));
  v-half, v-min  zbv_greedy's fixed patterns (their memory is what it is);
             also checked to be the very orders `zbplan sim --schedule
             v-half` / `v-min` export (a count is printed).
Instances: seeded, P 3..16, M P..8P, per-rank F in [0.5, 2], B in [F, 3F],
W in [0.3F, 2F], comm in [0, 0.3F] (x1000, integers), M_B 1000 per rank,
M_W a fraction in [0.1, 0.9] of it. Memory limits per rank: the zb peak of
the authors' V-Min order, of V-Half, P, 1.5P and 2P activations (x1000).
At each limit every authors' order whose zb peak fits is compared with
`zbplan sim --schedule zb-auto-v --mem-limit L`; a loss is zb-auto-v
longer by more than 1e-9 relative.

VAUTO_SWEEP=1 instead sweeps v_auto_schedule's own memory settings (see
sweep_main; issue 33).

Usage: python3 tests/bench/vs_authors_v.py AUTHORS_GIT_DIR [N [SEED]]
       (ZBPLAN=bin/zbplan by default; VAUTO_MAX_P=P runs v-auto only up to
       p = P, it takes minutes per instance above p 8). Prints one line per loss and a
table of wins/ties/losses per scheduler and limit; exit 1 on any loss.
"""
import contextlib
import io
import json
import os
import random
import subprocess
import sys
import tempfile
import types

SCHED = "megatron/core/pipeline_parallel/zerobubble/scheduler/"
ZBPLAN = os.environ.get("ZBPLAN", "bin/zbplan")
# v_auto_schedule searches hundreds of building blocks in Python: minutes
# per instance above p 8; VAUTO_MAX_P bounds where it runs.
VAUTO_MAX_P = int(os.environ.get("VAUTO_MAX_P", "16"))


def load_authors(gitdir):
    """Their zbv, zbv_greedy and v_auto_schedule modules, graph stubbed."""
    graph = types.ModuleType("graph_stub")
    graph.ScheduledNode = object
    graph.F, graph.B, graph.W, graph.FuncType = "F", "B", "W", object
    name = "megatron.core.pipeline_parallel.zerobubble.scheduler.graph"
    parts = name.split(".")
    for i in range(1, len(parts)):
        sys.modules.setdefault(".".join(parts[:i]), types.ModuleType(parts[i - 1]))
    sys.modules[name] = graph
    mods = {}
    for m in ("zbv", "zbv_greedy", "v_auto_schedule"):
        src = subprocess.run(["git", "--git-dir", gitdir, "show", "HEAD:" + SCHED + m + ".py"],
                             check=True, capture_output=True, text=True).stdout
        mod = types.ModuleType(m)
        exec(compile(src, m + ".py", "exec"), mod.__dict__)
        mods[m] = mod
    return mods


def csv_of(p, ranks):
    """ranks[r]: list of (cat 0/1/2, our chunk, mb) -> CSV text."""
    rows = []
    for r, acts in enumerate(ranks):
        cells = []
        for cat, chunk, mb in acts:
            stage = r if chunk == 0 else 2 * p - 1 - r
            cells.append("%d%s%d" % (stage, "FIW"[cat], mb))
        rows.append(",".join(cells))
    return "\r\n".join(rows) + "\r\n"


def zbv_order(mods, inst, limit, fill_f, fill_b):
    p, m, c = inst["p"], inst["m"], inst["chunk"]
    g = mods["zbv"].PipelineGraph(p, m, c["f"], c["b"], c["w"], c["comm"],
                                  c["mb"], c["mw"] - c["mb"], -c["mw"], max_mem=limit)
    sched, _, _ = g.try_v_schedule(fill_f=fill_f, fill_b=fill_b)
    # their B/W chunk index counts from the end of the V
    return [[(cat, ch if cat == 0 else 1 - ch, mb) for cat, ch, mb in s] for s in sched]


def greedy_order(mods, inst, cfg):
    p, m, c = inst["p"], inst["m"], inst["chunk"]
    g = mods["zbv_greedy"].PipelineGraph(p, m, cfg, c["f"], c["b"], c["w"], c["comm"])
    pat = {"half": g.stable_pattern_v_half, "min": g.stable_pattern_v_min}[cfg](p)
    cost = [g.fbw_cost[x // 2] for x in range(6)]
    _, _, order = g.schedule_from_pattern(pat, m, cost, do_reorder=True)
    out = []
    for s in order:
        out.append([(t // 2, (t % 2) if t // 2 == 0 else 1 - t % 2, mb) for t, mb in s])
    return out


def vauto_order(mods, inst, limit):
    p, m, c = inst["p"], inst["m"], inst["chunk"]
    units = int(limit // c["mb"])
    with contextlib.redirect_stdout(io.StringIO()):
        res = mods["v_auto_schedule"].schedule(p, m, (c["f"], c["b"], c["w"], c["comm"]), units)
    out = []
    for s in res:
        out.append([({"F": 0, "B": 1, "W": 2}[n.type], int(n.chunk), n.minibatch) for n in s])
    return out


def zb_sim(args):
    r = subprocess.run([ZBPLAN, "sim"] + args + ["--format", "json"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip()
    d = json.loads(r.stdout)
    return (d["max_span"], max(s["peak_mem"] for s in d["stages"])), None


def cost_args(inst):
    k = inst["rank"]
    return ["--stages", str(inst["p"]), "--microbatches", str(inst["m"]),
            "--cost-f", str(k["f"]), "--cost-b", str(k["b"]), "--cost-w", str(k["w"]),
            "--cost-comm", str(k["comm"]), "--mem-f", str(k["mb"]), "--mem-w", str(k["mw"])]


def score(inst, order, tmp):
    path = os.path.join(tmp, "order.csv")
    with open(path, "w", newline="") as f:
        f.write(csv_of(inst["p"], order))
    args = cost_args(inst)
    res, err = zb_sim(["--import", path] + args[4:])
    if err:
        raise RuntimeError("zbplan rejected the authors' order: " + err)
    return res


def same_order(inst, cfg, order, tmp):
    """1 if `zbplan sim --schedule v-CFG` exports exactly their order."""
    path = os.path.join(tmp, "ours.csv")
    r = subprocess.run([ZBPLAN, "sim", "--schedule", "v-" + cfg, "--stages", str(inst["p"]),
                        "--microbatches", str(inst["m"]), "--export", path],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return 0
    with open(path, newline="") as f:
        return int(f.read() == csv_of(inst["p"], order))


def instance(rng):
    p = rng.randint(3, 16)
    m = rng.randint(p, 8 * p)
    f = rng.uniform(0.5, 2)
    b = rng.uniform(f, 3 * f)
    w = rng.uniform(0.3 * f, 2 * f)
    comm = rng.uniform(0, 0.3 * f)
    frac = rng.uniform(0.1, 0.9)
    # per rank, even integers so that a chunk's half is an integer too
    k = {"f": 2 * round(500 * f), "b": 2 * round(500 * b), "w": 2 * round(500 * w),
         "comm": round(1000 * comm), "mb": 1000, "mw": 2 * round(500 * frac)}
    chunk = {"f": k["f"] // 2, "b": k["b"] // 2, "w": k["w"] // 2, "comm": k["comm"],
             "mb": k["mb"] // 2, "mw": k["mw"] // 2}
    return {"p": p, "m": m, "rank": k, "chunk": chunk}


def candidates(mods, inst, limit, fixed):
    """name -> (span, peak) of the authors' orders built for this limit."""
    out = dict(fixed)
    best = None
    for ff in (True, False):
        for fb in (True, False):
            name = "zbv-%s%s" % ("F" if ff else "f", "B" if fb else "b")
            try:
                order = zbv_order(mods, inst, limit, ff, fb)
            except (AssertionError, IndexError, RecursionError):
                continue
            out[name] = score(inst, order, inst["tmp"])
            if best is None or out[name][0] < best[0]:
                best = out[name]
    if best:
        out["zbv-best"] = best
    try:
        if inst["p"] <= VAUTO_MAX_P:
            out["v-auto"] = score(inst, vauto_order(mods, inst, limit), inst["tmp"])
    except (AssertionError, AttributeError, TypeError, IndexError, KeyError, ValueError):
        pass
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    mods = load_authors(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 19
    rng = random.Random(seed)
    tally = {}
    same = {"min": 0, "half": 0}
    losses = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(n):
            inst = instance(rng)
            inst["tmp"] = tmp
            fixed = {}
            for cfg in ("min", "half"):
                try:
                    order = greedy_order(mods, inst, cfg)
                except (AssertionError, IndexError, KeyError):
                    continue
                fixed["v-" + cfg] = score(inst, order, tmp)
                same[cfg] += same_order(inst, cfg, order, tmp)
            p = inst["p"]
            levels = [("v-min-peak", fixed.get("v-min", (0, None))[1]),
                      ("v-half-peak", fixed.get("v-half", (0, None))[1]),
                      ("P", 1000 * p), ("1.5P", 1500 * p), ("2P", 2000 * p)]
            for lname, limit in levels:
                if limit is None:
                    continue
                ours, err = zb_sim(["--schedule", "zb-auto-v", "--mem-limit", "%.17g" % limit]
                                   + cost_args(inst))
                for name, (span, peak) in candidates(mods, inst, limit, fixed).items():
                    if peak > limit * (1 + 1e-9):
                        continue
                    key = (name, lname)
                    t = tally.setdefault(key, [0, 0, 0])
                    if ours is None or ours[0] > span * (1 + 1e-9):
                        t[2] += 1
                        losses += 1
                        print("LOSS #%d p %d m %d %s limit %s (%g): %s %g, zb-auto-v %s" %
                              (i, p, inst["m"], inst["rank"], lname, limit, name, span,
                               ours[0] if ours else err))
                    elif ours[0] < span * (1 - 1e-9):
                        t[0] += 1
                    else:
                        t[1] += 1
            sys.stdout.flush()
    print("%-10s %-12s %5s %5s %6s" % ("authors", "limit", "wins", "ties", "losses"))
    for (name, lname), (w, t, l) in sorted(tally.items()):
        print("%-10s %-12s %5d %5d %6d" % (name, lname, w, t, l))
    print("zb's v-min / v-half equal to the authors' order: %d / %d of %d" %
          (same["min"], same["half"], n))
    print("instances %d seed %d: %d losses" % (n, seed, losses))
    return 1 if losses else 0


def sweep_cases(mods, n, seed, tmp):
    """The sweep's cases: (instance number, instance, limit, v-auto's span)
    for every memory setting (p+1 .. 2p chunk activations of 500 per rank)
    of n instances redrawn to p 3..4, m p..3p, where v_auto_schedule gives
    an order whose zb peak fits the limit."""
    rng = random.Random(seed)
    for i in range(n):
        inst = instance(rng)
        p = inst["p"] = rng.randint(3, 4)
        inst["m"] = rng.randint(p, 3 * p)
        for units in range(p + 1, 2 * p + 1):
            limit = 500 * units
            try:
                span, peak = score(inst, vauto_order(mods, inst, limit), tmp)
            except (AssertionError, AttributeError, TypeError, IndexError, KeyError,
                    ValueError):
                continue
            if peak <= limit:
                yield i, inst, limit, span


def sweep_main():
    """VAUTO_SWEEP=1: v_auto_schedule alone at each of its memory settings
    (sweep_cases); one line per loss, then the count, the worst and the
    ratios zb-auto-v / v-auto."""
    mods = load_authors(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    cases = losses = 0
    worst = 0.0
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, inst, limit, span in sweep_cases(mods, n, seed, tmp):
            ours, err = zb_sim(["--schedule", "zb-auto-v", "--mem-limit", str(limit)]
                               + cost_args(inst))
            cases += 1
            ratios.append(ours[0] / span if ours else float("inf"))
            if ours is None or ours[0] > span * (1 + 1e-9):
                losses += 1
                worst = max(worst, ours[0] / span - 1 if ours else 1)
                print("LOSS #%d p %d m %d %s limit %d: v-auto %g, zb-auto-v %s" %
                      (i, inst["p"], inst["m"], inst["rank"], limit, span,
                       ours[0] if ours else err), flush=True)
    ratios.sort()
    print("sweep: %d cases, %d losses, worst %.2f %%" % (cases, losses, 100 * worst))
    if ratios:
        print("zb-auto-v / v-auto: median %.4f, min %.4f, max %.4f" %
              (ratios[len(ratios) // 2], ratios[0], ratios[-1]))
    return 1 if losses else 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(sweep_main() if os.environ.get("VAUTO_SWEEP") else main())
