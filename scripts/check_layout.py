#!/usr/bin/env python3
"""check_layout.py - the shape of user/: no cycles, no folder reaching upward.

Two graphs of the files under user/:
  includes  a file -> each header it includes with #include "..." (resolved
            as the compiler does: the file's own folder, then every user/
            folder on the include path; headers outside user/ are ignored);
  symbols   an object -> each object defining a symbol it uses (nm over
            build/user/**/*.o; skipped with a note when nothing is built).
Checks, one TAP line each:
  - no cycle in either graph (a file never needs itself through others);
  - every edge goes down or sideways in LAYERS: a folder uses only folders
    listed before it (and itself), never one that uses it;
  - record's five subsystems (SIBLINGS) never use each other: record
    composes them;
  - every C file under user/, bpf/ and tests/progs/ is named in
    docs/architecture.md (the map a newcomer reads must not miss a file).
Usage: scripts/check_layout.py [ROOT]   (exit status 1 on a failure)
"""
import os
import re
import subprocess
import sys

# Bottom first. A path belongs to the first layer with a prefix it starts with.
LAYERS = [
    ("util", ("user/util.",        # strict parsing, error strings, clocks
              "user/log.",         # diagnostics with a severity (bt_err, bt_warn, ...)
              "user/version.h",    # the version (VERSION, mk/dist.mk)
              "user/atomic_file.", # whole files written atomically
              "user/json_str.",    # UTF-8 checks, JSON string literals
              "user/commands.h")), # the subcommands' prototypes (main calls, folders define)
    ("lib", ("user/lib/",)),       # libbtrace: block buffer, in-process API
    ("coldtier", ("user/coldtier/",)), # compressed blocks behind the buffer (lz4/zstd)
    ("dump", ("user/dump/",)),     # dump format, writer, reader, event names
    ("probes", ("user/probes/",)), # kernel features, probe specs, ELF/DWARF, attaching
    # record's five subsystems: none uses another, record composes them.
    ("ctl", ("user/ctl/",)),       # control socket, `ctl`, --config files, sd_notify
    ("triggers", ("user/triggers/",)), # trigger thread and its BPF programs
    ("stacks", ("user/stacks/",)), # stack table, mapping capture, symbolization
    ("apps", ("user/apps/",)),     # in-process tracing: registry, reader, app-func watch
    ("dumpdir", ("user/dumpdir/",)), # dump directory: quota, rotation, --on-dump
    ("record", ("user/record/",)), # the composer: loader, drain, tasks, recorder
    ("report", ("user/report/",)), # `report`
    ("export", ("user/export/",)), # `convert`: Perfetto, JSON
    ("main", ("user/",)),          # main.c
]

# Layers side by side: none of them may use another (record composes them).
SIBLINGS = ("ctl", "triggers", "stacks", "apps", "dumpdir")

# The page that must name every C file (its table, one line per file).
ARCHITECTURE = "docs/architecture.md"
MAPPED_DIRS = ("user", "bpf", os.path.join("tests", "progs"))

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer(path):
    for i, (_, prefixes) in enumerate(LAYERS):
        if path.startswith(prefixes):
            return i
    raise SystemExit("check_layout: %s is in no layer" % path)


def sources(root):
    out = []
    for d, _, files in os.walk(os.path.join(root, "user")):
        for f in files:
            if f.endswith((".c", ".h")):
                out.append(os.path.relpath(os.path.join(d, f), root))
    return sorted(out)


def include_graph(root, files):
    dirs = sorted({os.path.dirname(f) for f in files})
    have = set(files)
    g = {f: set() for f in files}
    for f in files:
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for name in INCLUDE.findall(text):
            for d in [os.path.dirname(f)] + dirs:
                cand = os.path.normpath(os.path.join(d, name))
                if cand in have:
                    g[f].add(cand)
                    break
    return g


def symbol_graph(root):
    objs = []
    for d, _, files in os.walk(os.path.join(root, "build", "user")):
        objs += [os.path.join(d, f) for f in files if f.endswith(".o")]
    if not objs:
        return None
    defined, used = {}, {}
    for o in sorted(objs):
        src = "user/" + os.path.relpath(o, os.path.join(root, "build", "user"))[:-2] + ".c"
        if not os.path.exists(os.path.join(root, src)):
            continue  # a stale object of a file that moved
        res = subprocess.run(["nm", "--defined-only", "-g", o], capture_output=True, text=True, check=True)
        for line in res.stdout.splitlines():
            parts = line.split()
            if len(parts) == 3:
                defined.setdefault(parts[2], src)
        res = subprocess.run(["nm", "-u", o], capture_output=True, text=True, check=True)
        used[src] = {line.split()[-1] for line in res.stdout.splitlines() if line.strip()}
    g = {}
    for src, syms in used.items():
        g[src] = {defined[s] for s in syms if s in defined and defined[s] != src}
    return g


def find_cycle(g):
    """A list of nodes forming a cycle, or None (iterative DFS)."""
    state = {}
    for start in sorted(g):
        if state.get(start):
            continue
        stack = [(start, iter(sorted(g[start])))]
        path = [start]
        state[start] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[node] = 2
                stack.pop()
                path.pop()
                continue
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if not state.get(nxt):
                state[nxt] = 1
                stack.append((nxt, iter(sorted(g.get(nxt, ())))))
                path.append(nxt)
    return None


def upward(g):
    bad = []
    for a in sorted(g):
        for b in sorted(g[a]):
            if layer(b) > layer(a):
                bad.append("%s -> %s (%s uses %s)" % (a, b, LAYERS[layer(a)][0], LAYERS[layer(b)][0]))
    return bad


def across_siblings(g):
    bad = []
    for a in sorted(g):
        for b in sorted(g[a]):
            la, lb = LAYERS[layer(a)][0], LAYERS[layer(b)][0]
            if la != lb and la in SIBLINGS and lb in SIBLINGS:
                bad.append("%s -> %s (%s uses %s)" % (a, b, la, lb))
    return bad


def unmapped(root):
    """C files the architecture page does not name (by file name)."""
    try:
        with open(os.path.join(root, ARCHITECTURE), encoding="utf-8") as fh:
            text = fh.read()
    except OSError:
        return None
    named = set(re.findall(r"[A-Za-z0-9_.]+\.c\b", text))
    missing = []
    for top in MAPPED_DIRS:
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if f.endswith(".c") and f not in named:
                    missing.append(os.path.relpath(os.path.join(d, f), root))
    return sorted(missing)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    files = sources(root)
    n, failed = 0, 0

    def check(ok, name, detail=()):
        nonlocal n, failed
        n += 1
        print("%s %d - %s" % ("ok" if ok else "not ok", n, name))
        for d in detail:
            print("#   " + d)
        failed += not ok

    inc = include_graph(root, files)
    cyc = find_cycle(inc)
    check(cyc is None, "no include cycle among %d files of user/" % len(files), [" -> ".join(cyc)] if cyc else [])
    bad = upward(inc)
    check(not bad, "no include reaches up a layer (%s)" % " < ".join(l[0] for l in LAYERS), bad)
    bad = across_siblings(inc)
    check(not bad, "record's subsystems include none of each other (%s)" % ", ".join(SIBLINGS), bad)
    missing = unmapped(root)
    if missing is None:
        check(False, "%s exists" % ARCHITECTURE)
    else:
        check(not missing, "%s names every C file under %s" % (ARCHITECTURE, ", ".join(MAPPED_DIRS)),
              ["not named: " + m for m in missing])
    sym = symbol_graph(root)
    if sym is None:
        print("ok %d - symbol graph # SKIP nothing built (make first)" % (n + 1))
        n += 1
    else:
        cyc = find_cycle(sym)
        check(cyc is None, "no cycle of files using each other's functions (%d objects)" % len(sym),
              [" -> ".join(cyc)] if cyc else [])
        bad = upward(sym)
        check(not bad, "no function call reaches up a layer", bad)
        bad = across_siblings(sym)
        check(not bad, "record's subsystems call none of each other", bad)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
