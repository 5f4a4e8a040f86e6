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
  - no pair of C files including each other's headers (a.c or a.h includes
    b.h and b.c or b.h includes a.h): the file cycle check misses it, as
    a.c and a.h are two files, but the two modules need each other;
  - every edge goes down or sideways in LAYERS: a folder uses only folders
    listed before it (and itself), never one that uses it;
  - record's six subsystems (SIBLINGS) never use each other: record
    composes them; nor do the output formats (FORMATS): convert composes them;
  - no folder under user/ holds more than MAX_C_FILES C files;
  - every C file under user/, bpf/ and tests/progs/ is named in
    docs/architecture.md (the map a newcomer reads must not miss a file);
  - every function docs/architecture.md names exists: `file.c: func` in
    that file, `func()` and `bt_...`-style names somewhere in user/ or bpf/
    (a renamed function must not leave the map pointing nowhere);
  - every path docs/architecture.md names (user/..., bpf/..., tests/...) exists
    (a moved file must not leave the map pointing to its old folder).
Usage: scripts/check_layout.py [ROOT]   (exit status 1 on a failure)
"""
import os
import re
import subprocess
import sys

# Bottom first. A path belongs to the first layer with a prefix it starts with.
LAYERS = [
    ("util", ("user/util/",        # the base layer: parsing, errors, clocks, logging,
                                   # hash maps, per-thread tables, atomic files, JSON strings
              "user/version.h",    # the version (VERSION, mk/dist.mk)
              "user/commands.h")), # the subcommands' prototypes (main calls, folders define)
    ("lib", ("user/lib/",)),       # libbtrace: block buffer, in-process API
    ("coldtier", ("user/coldtier/",)), # compressed blocks behind the buffer (lz4/zstd)
    ("dump", ("user/dump/",)),     # the dump format and its coding: events, stacks, names, sections
    ("dumpread", ("user/dumpread/",)), # the validating reader, filters, analysis
    ("dumpwrite", ("user/dumpwrite/",)), # the writer and the manifest (read back)
    ("probes", ("user/probes/",)), # kernel features, probe specs, ELF/DWARF, attaching
    # record's six subsystems: none uses another, record composes them.
    ("ctl", ("user/ctl/",)),       # control socket, `ctl`, --config files, sd_notify
    ("triggers", ("user/triggers/",)), # trigger thread and its BPF programs
    ("stacks", ("user/stacks/",)), # stack table, mapping capture, symbolization
    ("apps", ("user/apps/",)),     # in-process tracing: registry, reader, app-func watch
    ("dumpdir", ("user/dumpdir/",)), # dump directory: quota, rotation, --on-dump
    ("handover", ("user/handover/",)), # the buffer in a memfd that outlives the recorder
    ("record", ("user/record/",)), # the composer: loader, drain, tasks, recorder
    ("report", ("user/report/",)), # `report`
    ("export", ("user/export/",)), # what every output format shares: pre-pass, names, losses, sinks
    # the output formats: none uses another, convert composes them.
    ("perfetto", ("user/perfetto/",)), # Perfetto protobuf traces
    ("json", ("user/json/",)),     # Chrome JSON traces
    ("pprof", ("user/pprof/",)),   # pprof profiles
    ("convert", ("user/convert/",)), # `convert`: a dump to a file in one of the formats
    ("main", ("user/",)),          # main.c
]

# Layers side by side: none of them may use another (record composes them).
SIBLINGS = ("ctl", "triggers", "stacks", "apps", "dumpdir", "handover")
FORMATS = ("perfetto", "json", "pprof")

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
    srcs = {}
    for o in sorted(objs):
        src = "user/" + os.path.relpath(o, os.path.join(root, "build", "user"))[:-2] + ".c"
        if os.path.exists(os.path.join(root, src)):
            srcs[o] = src  # else a stale object of a file that moved
    # Two nm runs over every object (-A: "object:..." per line), not two
    # per object: 340 runs took minutes on a loaded machine.
    defined, used = {}, {src: set() for src in srcs.values()}
    objs = sorted(srcs)
    res = subprocess.run(["nm", "-A", "--defined-only", "-g"] + objs, capture_output=True, text=True, check=True)
    for line in res.stdout.splitlines():
        obj, _, rest = line.partition(":")
        parts = rest.split()
        if obj in srcs and len(parts) == 3:
            defined.setdefault(parts[2], srcs[obj])
    res = subprocess.run(["nm", "-A", "-u"] + objs, capture_output=True, text=True, check=True)
    for line in res.stdout.splitlines():
        obj, _, rest = line.partition(":")
        if obj in srcs and rest.strip():
            used[srcs[obj]].add(rest.split()[-1])
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


def include_pairs(g):
    """Pairs of modules (x.c with its x.h) that include each other's headers."""
    cfiles = {f[:-2] for f in g if f.endswith(".c")}
    mods = {}
    for a, bs in g.items():
        ma = a[:-2]
        for b in bs:
            mb = b[:-2]
            if ma != mb and ma in cfiles and mb in cfiles:
                mods.setdefault(ma, set()).add(mb)
    return ["%s.c and %s.c include each other's headers" % (a, b)
            for a in sorted(mods) for b in sorted(mods[a]) if a < b and a in mods.get(b, ())]


def upward(g):
    bad = []
    for a in sorted(g):
        for b in sorted(g[a]):
            if layer(b) > layer(a):
                bad.append("%s -> %s (%s uses %s)" % (a, b, LAYERS[layer(a)][0], LAYERS[layer(b)][0]))
    return bad


def across_siblings(g, group=SIBLINGS):
    bad = []
    for a in sorted(g):
        for b in sorted(g[a]):
            la, lb = LAYERS[layer(a)][0], LAYERS[layer(b)][0]
            if la != lb and la in group and lb in group:
                bad.append("%s -> %s (%s uses %s)" % (a, b, la, lb))
    return bad


MAX_C_FILES = 15  # a folder past this is cut along its seams (issue 37)


def oversized(root):
    big = []
    for d, _, files in os.walk(os.path.join(root, "user")):
        n = sum(f.endswith(".c") for f in files)
        if n > MAX_C_FILES:
            big.append("%s: %d C files" % (os.path.relpath(d, root), n))
    return big


def read_doc(root):
    """The architecture page's text, None if it cannot be read."""
    try:
        with open(os.path.join(root, ARCHITECTURE), encoding="utf-8") as f:
            return f.read()
    except OSError:
        return None


def unmapped(root):
    """C files the architecture page does not name (by file name)."""
    text = read_doc(root)
    if text is None:
        return None
    named = set(re.findall(r"[A-Za-z0-9_.]+\.c\b", text))
    missing = []
    for top in MAPPED_DIRS:
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if f.endswith(".c") and f not in named:
                    missing.append(os.path.relpath(os.path.join(d, f), root))
    return sorted(missing)


DOC_FILE_FUNC = re.compile(r"`([\w/.-]+\.[ch]): (\w+)`")
DOC_CALL = re.compile(r"`(\w+)\(\)`")
DOC_NAME = re.compile(r"`((?:bt|btd|recorder|pf|jx)_\w+)`")


def stale_doc_names(root):
    """Functions the architecture page names that no longer exist."""
    doc = read_doc(root)
    if doc is None:
        return None
    text = {}
    for d in ("user", "bpf", os.path.join("tests", "progs")):
        for dirpath, _, files in os.walk(os.path.join(root, d)):
            for name in files:
                if name.endswith((".c", ".h")):
                    path = os.path.join(dirpath, name)
                    with open(path, errors="replace") as f:
                        text[os.path.relpath(path, root)] = f.read()
    everything = "\n".join(text.values())
    bad = []
    for file, func in DOC_FILE_FUNC.findall(doc):
        hits = [p for p in text if p == file or p.endswith("/" + file)]
        if not hits:
            bad.append("%s: no such file (for %s)" % (file, func))
        elif not any(re.search(r"\b%s\s*\(" % re.escape(func), text[p]) for p in hits):
            bad.append("%s: no function %s" % (file, func))
    for name in sorted(set(DOC_CALL.findall(doc)) | set(DOC_NAME.findall(doc))):
        if not re.search(r"\b%s\b" % re.escape(name), everything):
            bad.append("%s: named, found nowhere in user/, bpf/" % name)
    return bad


DOC_PATH = re.compile(r"(?<![\w/.-])((?:user|bpf|tests|scripts|docs|dist|debian|man|mk|bench)/[\w/.*-]+)")


def stale_doc_paths(root):
    """Paths the architecture page names that do not exist (NAME is a placeholder)."""
    doc = read_doc(root)
    if doc is None:
        return None
    bad = set()
    for p in DOC_PATH.findall(doc):
        p = p.rstrip(".")
        if "NAME" not in p and "*" not in p and not os.path.exists(os.path.join(root, p)):
            bad.add(p)
    return sorted(bad)


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
    bad = include_pairs(inc)
    check(not bad, "no two C files include each other's headers", bad)
    bad = upward(inc)
    check(not bad, "no include reaches up a layer (%s)" % " < ".join(l[0] for l in LAYERS), bad)
    bad = across_siblings(inc)
    check(not bad, "record's subsystems include none of each other (%s)" % ", ".join(SIBLINGS), bad)
    bad = across_siblings(inc, FORMATS)
    check(not bad, "the output formats include none of each other (%s)" % ", ".join(FORMATS), bad)
    big = oversized(root)
    check(not big, "no folder under user/ holds more than %d C files" % MAX_C_FILES, big)
    missing = unmapped(root)
    if missing is None:
        check(False, "%s exists" % ARCHITECTURE)
    else:
        check(not missing, "%s names every C file under %s" % (ARCHITECTURE, ", ".join(MAPPED_DIRS)),
              ["not named: " + m for m in missing])
    stale = stale_doc_names(root)
    if stale is not None:
        check(not stale, "every function %s names exists where it says" % ARCHITECTURE, stale)
    stale = stale_doc_paths(root)
    if stale is not None:
        check(not stale, "every path %s names exists" % ARCHITECTURE, ["no such path: " + p for p in stale])
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
        bad = across_siblings(sym, FORMATS)
        check(not bad, "the output formats call none of each other", bad)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
