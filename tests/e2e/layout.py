#!/usr/bin/env python3
"""layout.py TREE [BUILD] - the house rules of a source tree (executor/,
planner/, common/), as their README.md files state them.

A room is a folder of the tree; a unit is one concept, x.c and x.h (or x.cu)
counted together. Checked:
  - every room is named in the tree's rule and has a README.md whose first
    line says "room/: what it is"; it holds at most MAX_FILES source files;
    only the tree's leaf files sit outside a room;
  - a file includes (and its object calls into) only its own room, the
    rooms the rule lets it include and the leaf files, and outside the tree
    includes only what the rule lists;
  - no circle of includes between units (A -> B when a file of A includes
    a file of B, headers and sources of a unit as one); no circle of calls
    between object files (from the objects under BUILD, nm: A -> B when
    A's object uses a symbol B's object defines); no circle of rooms by
    both kinds of edges together.
Exit 1 naming every failure, else one line "ok".
"""
import os
import re
import subprocess
import sys

MAX_FILES = 20
SRC_EXT = (".c", ".h", ".cu", ".cuh", ".S")

# tree -> (rooms in order, what each room may include of its tree, leaf
# files outside a room (the "base" unit every room may include), what the
# tree may include outside itself: prefixes of paths)
SPECS = {
    "executor": {
        "allowed": {
            "run":    {"report", "state", "stage", "comm", "host"},
            "report": set(),
            "state":  {"stage", "comm", "host"},
            "stage":  {"comm", "host"},
            "comm":   {"host"},
            "host":   set(),
        },
        "leaves": {"base.h", "base.c"},
        "outside": ("common/", "kernels/", "planner/cost/plan_fit.h"),
    },
    "planner": {
        "allowed": {
            # above the registry, every schedule is reached through it
            "cli":       {"search", "registry", "cost"},
            "search":    {"registry", "cost"},
            "registry":  {"ilp", "auto", "schedules"},
            "ilp":       {"auto", "schedules"},
            "auto":      {"schedules"},
            "schedules": set(),
            "cost":      set(),
        },
        "leaves": {"par.h", "par.c"},
        "outside": ("common/", "kernels/"),
    },
    "common": {
        "allowed": {},
        "leaves": None,          # a flat tree: every file is a leaf unit
        "outside": (),
    },
}

INC_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def tree_files(tree, spec, fails):
    """path -> room ('' for a leaf file of the tree)."""
    files = {}
    for f in sorted(os.listdir(tree)):
        p = os.path.join(tree, f)
        if os.path.isdir(p):
            if f not in spec["allowed"]:
                fails.append(f"{tree}/{f}/ is not a room named in {tree}/README.md")
                continue
            srcs = [g for g in sorted(os.listdir(p)) if g.endswith(SRC_EXT)]
            if len(srcs) > MAX_FILES:
                fails.append(f"{tree}/{f}/ holds {len(srcs)} source files (at most {MAX_FILES})")
            for g in srcs:
                files[os.path.join(p, g)] = f
            readme = os.path.join(p, "README.md")
            if not os.path.isfile(readme) or not open(readme).readline().startswith(f + "/: "):
                fails.append(f"{tree}/{f}/README.md: first line must say '{f}/: what it is'")
        elif f.endswith(SRC_EXT):
            if spec["leaves"] is not None and f not in spec["leaves"]:
                fails.append(f"{tree}/{f}: source outside a room (only "
                             f"{', '.join(sorted(spec['leaves']))} may be)")
            files[p] = ""
    for r in spec["allowed"]:
        if not os.path.isdir(os.path.join(tree, r)):
            fails.append(f"{tree}/{r}/ missing")
    if spec["allowed"] and not os.path.isfile(os.path.join(tree, "README.md")):
        fails.append(f"{tree}/README.md missing")
    return files


def unit(path):
    return path.rsplit(".", 1)[0]


def include_edges(tree, spec, files, fails):
    edges = set()
    for p, room in files.items():
        for i in INC_RE.findall(open(p, errors="replace").read()):
            if not i.startswith(tree + "/"):
                if "/" in i and not i.startswith(spec["outside"]) and not i.startswith("version.h"):
                    fails.append(f"{p}: includes {i}, outside what {tree}/ may include")
                continue
            if i not in files:
                fails.append(f"{p}: includes {i}, which does not exist")
                continue
            to = files[i]
            if to and to != room and to not in spec["allowed"].get(room, set()):
                fails.append(f"{p}: {room or 'leaf'} includes {i} ({to}): against the rule")
            if not room and to:
                fails.append(f"{p}: a leaf file includes {i} ({to})")
            if unit(p) != unit(i):
                edges.add((unit(p), unit(i)))
    return edges


def call_edges(build, files, fails):
    """A -> B when A's object uses a symbol B's object defines (objects of
    today's sources only; .cu objects only where the CUDA backend is built)."""
    objs = {}
    for p in sorted(files):
        if p.endswith((".c", ".S")):
            o = os.path.join(build, p.rsplit(".", 1)[0] + ".o")
        elif p.endswith(".cu"):
            o = os.path.join(build, p + ".o")
            if not os.path.exists(o):
                continue
        else:
            continue
        if not os.path.exists(o):
            fails.append(f"{o}: missing: build first (make)")
            continue
        objs[o] = unit(p)
    defs, uses = {}, {}
    for o in objs:
        out = subprocess.run(["nm", "-g", o], capture_output=True, text=True, check=True).stdout
        d, u = set(), set()
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == "U":
                u.add(parts[1])
            elif len(parts) == 3 and parts[1] in "TDBRVWCG":
                d.add(parts[2])
        defs[o], uses[o] = d, u
    owner = {s: o for o, d in defs.items() for s in d}
    edges = set()
    for o in objs:
        for s in uses[o]:
            if s in owner and objs[owner[s]] != objs[o]:
                edges.add((objs[o], objs[owner[s]]))
    return edges, len(objs)


def circles(nodes, edges):
    """Strongly connected components with more than one node."""
    graph = {v: [] for v in nodes}
    for a, b in edges:
        graph.setdefault(a, []).append(b)
        graph.setdefault(b, [])
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in SPECS:
        print(f"usage: layout.py {'|'.join(SPECS)} [BUILD]", file=sys.stderr)
        return 2
    tree, build = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "build")
    spec = SPECS[tree]
    fails = []
    files = tree_files(tree, spec, fails)
    inc = include_edges(tree, spec, files, fails)
    calls, nobj = call_edges(build, files, fails)
    units = {unit(p) for p in files}
    for c in circles(units, inc):
        fails.append("circle of includes between units: " + " -> ".join(c))
    for c in circles(units, calls):
        fails.append("circle of calls between files: " + " -> ".join(c))
    room_of = {unit(p): (files[p] or "leaf") for p in files}
    for a, b in sorted(calls):
        ra, rb = room_of[a], room_of[b]
        if ra != rb and rb != "leaf" and rb not in spec["allowed"].get(ra, set()):
            fails.append(f"{a}: {ra} calls into {b} ({rb}): against the rule")
    room_edges = {(room_of[a], room_of[b]) for a, b in inc | calls
                  if room_of[a] != room_of[b]}
    for c in circles(set(room_of.values()), room_edges):
        fails.append("circle of rooms: " + " -> ".join(c))
    for f in fails:
        print("FAIL:", f)
    rooms = len(spec["allowed"])
    if fails:
        print(f"layout.py {tree}: {len(files)} files in {rooms} rooms, {nobj} objects, "
              f"{len(fails)} failure(s)")
        return 1
    print(f"layout.py {tree}: ok ({len(files)} files, {len(units)} units in {rooms} rooms, "
          f"{nobj} objects, no circle)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
