#!/bin/bash
# executor_layout.sh - the executor's house rules (executor/README.md):
#   - every room (executor/*/) has a README.md whose first line says what it
#     is, and holds at most 15 source files;
#   - includes run downward only: run/ -> report/, state/ -> stage/ ->
#     comm/ -> host/ -> base.h; report/ and state/ not into each other;
#     base.h includes no room;
#   - no circle of files: no executor object file calls (through any chain of
#     other executor object files) back into itself (nm on the built objects
#     under $BUILD/executor), and no circle of includes.
# Usage (from anywhere, after make): BUILD=build bash tests/e2e/executor_layout.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
python3 - "$BUILD" <<'PY'
import os, re, subprocess, sys
build = sys.argv[1]
rooms = ["run", "report", "state", "stage", "comm", "host"]
allowed = {                      # what each room may include besides itself
    "run":    {"report", "state", "stage", "comm", "host", "base"},
    "report": {"base"},
    "state":  {"stage", "comm", "host", "base"},
    "stage":  {"comm", "host", "base"},
    "comm":   {"host", "base"},
    "host":   {"base"},
    "base":   set(),
}
fails = []
src_ext = (".c", ".h", ".cu", ".cuh", ".S")
files = {}                       # path -> room
for f in os.listdir("executor"):
    p = os.path.join("executor", f)
    if os.path.isdir(p):
        if f not in rooms:
            fails.append(f"executor/{f}/ is not a room named in executor/README.md")
            continue
        n = 0
        for g in sorted(os.listdir(p)):
            if g.endswith(src_ext):
                files[os.path.join(p, g)] = f
                n += 1
        if n > 15:
            fails.append(f"executor/{f}/ holds {n} source files (at most 15)")
        readme = os.path.join(p, "README.md")
        if not os.path.isfile(readme) or not open(readme).readline().startswith(f + "/: "):
            fails.append(f"executor/{f}/README.md: first line must say '{f}/: what it is'")
    elif f.endswith(src_ext):
        if f not in ("base.h", "base.c"):
            fails.append(f"executor/{f}: source outside a room (only base.h/base.c may be)")
        files[p] = "base"
for r in rooms:
    if not os.path.isdir(os.path.join("executor", r)):
        fails.append(f"executor/{r}/ missing")

inc_re = re.compile(r'^\s*#\s*include\s+"(executor/[^"]+)"', re.M)
inc_graph = {}
for p, room in files.items():
    incs = inc_re.findall(open(p, errors="replace").read())
    inc_graph[p] = [i for i in incs if i in files]
    for i in incs:
        if i not in files:
            fails.append(f"{p}: includes {i}, which does not exist")
            continue
        to = files[i]
        if to != room and to not in allowed[room]:
            fails.append(f"{p}: {room} includes {i} ({to}): against the rule")

def cycles(graph):
    """Strongly connected components with more than one node (or a self loop)."""
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]
    def visit(v):
        index[v] = low[v] = n[0]; n[0] += 1; stack.append(v); on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v: break
            if len(comp) > 1: out.append(sorted(comp))
    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index: visit(v)
    return out

for c in cycles(inc_graph):
    fails.append("circle of includes: " + " -> ".join(c))

# calls between object files: A -> B when A uses a symbol B defines
# (the objects of today's sources only: a build folder may keep stale ones;
# .cu objects exist only where the CUDA backend is built)
objs = []
for p in sorted(files):
    if p.endswith((".c", ".S")):
        o = os.path.join(build, p.rsplit(".", 1)[0] + ".o")
    elif p.endswith(".cu"):
        o = os.path.join(build, p + ".o")
        if not os.path.exists(o): continue
    else:
        continue
    if not os.path.exists(o):
        fails.append(f"{o}: missing: build first (make)")
        continue
    objs.append(o)
defs, uses = {}, {}
for o in objs:
    out = subprocess.run(["nm", "-g", o], capture_output=True, text=True, check=True).stdout
    d, u = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U": u.add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBRVWCG": d.add(parts[2])
    defs[o], uses[o] = d, u
owner = {s: o for o, d in defs.items() for s in d}
call_graph = {o: sorted({owner[s] for s in uses[o] if s in owner and owner[s] != o}) for o in objs}
for c in cycles(call_graph):
    fails.append("circle of calls between files: " + " <-> ".join(os.path.relpath(x, build) for x in c))

for f in fails:
    print("FAIL:", f)
print(f"executor_layout.sh: {len(files)} files in {len(rooms)} rooms, "
      f"{len(objs)} objects, {len(fails)} failure(s)" if fails else
      f"executor_layout.sh: ok ({len(files)} files in {len(rooms)} rooms + base, {len(objs)} objects, no circle)")
sys.exit(1 if fails else 0)
PY
