#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_gopprof.py - read a `btrace-bpf convert -f pprof` profile with the
real client, `go tool pprof` (Debian's golang-go), and check what a user sees
(used by tests/unit/test_export_stacks.c and tests/kernel/test_convert.sh).

  check_gopprof.py PROFILE [--file NAME | --no-file] [--processes N]
                   [--roots N] [--no-mapping NAME]... [--comment REGEX]...
                   [--top NAME]...

Always: go tool pprof -raw and -top read it; every mapping it lists, and
every mapping of the file itself (decoded by protoc: go drops unused ones as
it reads), is used by a location of some sample (a -p profile carries only
its own); every
function "[unknown] (LIB)" has its locations in LIB's mapping only (one
function per library, never one "[unknown]" shared by all); every sample
has the labels pid, tid, process ("NAME (PID)") and thread. --file: -top's
header says "File: NAME" (the profile's own binary); --no-file: no File line
(a profile of several processes has no main binary). --processes: as many
distinct process labels. --roots: every sample's root frame is its process
("NAME (PID)", convert --process-root), N of them. --no-mapping: no mapping
of that base name. --comment: a comment (a loss count) matches, in -raw and
above -top. --top: -top has a row of that function. Exit 1 if any check fails, 77 if go is not installed.
"""
import gzip
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from protoc_text import one, parse_text  # noqa: E402

failures = 0


def result(ok, name, why=""):
    global failures
    print(("ok - " if ok else "FAIL - ") + name + ("" if ok or not why else ": " + why))
    failures += 0 if ok else 1


def pprof(args, path):
    env = dict(os.environ)
    env.setdefault("HOME", "/tmp")  # go wants a cache directory
    env["PPROF_BINARY_PATH"] = "/nonexistent"  # read the profile as it is, no local binaries
    p = subprocess.run(["go", "tool", "pprof"] + args + [path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=env)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def parse_raw(text):
    """(comments, samples [(locs, {label: value})], locations {id: (mapping, [names])}, mappings {id: file})"""
    comments, samples, locs, maps = [], [], {}, {}
    part, cur = None, None
    for line in text.splitlines():
        if line.startswith("Comment: "):
            comments.append(line[len("Comment: "):])
            continue
        if line in ("Samples:", "Locations", "Mappings"):
            part = line
            continue
        if part == "Samples:":
            m = re.match(r"^\s+\d+\s+\d+: ([\d ]+)$", line)
            if m:
                samples.append(([int(v) for v in m.group(1).split()], {}))
            elif samples and line.strip():
                for k, v in re.findall(r"(\w+):\[(.*?)\](?= \w+:\[|$)", line.strip()):
                    samples[-1][1][k] = v
        elif part == "Locations":
            m = re.match(r"^\s+(\d+): 0x[0-9a-f]+ M=(\d+) (.*) \S*:\d+ s=\d+(?:\(.*\))?$", line)
            if m:
                cur = int(m.group(1))
                locs[cur] = (int(m.group(2)), [m.group(3)])
            else:
                m = re.match(r"^\s+(.*) \S*:\d+ s=\d+(?:\(.*\))?$", line)
                if m and cur is not None:
                    locs[cur][1].append(m.group(1))
        elif part == "Mappings":
            m = re.match(r"^(\d+): 0x[0-9a-f]+/0x[0-9a-f]+/0x[0-9a-f]+ (\S*)", line)
            if m:
                maps[int(m.group(1))] = m.group(2)
    return comments, samples, locs, maps


def file_mappings(path):
    """The file's own mappings ({id: file}) and the ids locations use, by
    protoc: go tool pprof drops unused mappings as it reads (None without protoc)."""
    proto = os.path.join(os.path.dirname(os.path.abspath(__file__)), "profile.proto")
    if not shutil.which("protoc"):
        return None
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    p = subprocess.run(["protoc", "-I", os.path.dirname(proto), "--decode=perftools.profiles.Profile",
                        "profile.proto"], input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode:
        return None
    prof = parse_text(p.stdout.decode("utf-8", "replace").splitlines())
    strs = prof.get("string_table", [])
    name = lambda i: strs[i] if 0 <= i < len(strs) else "?"
    maps = {one(m, "id"): name(one(m, "filename", 0)) for m in prof.get("mapping", [])}
    return maps, [one(m, "id") for m in prof.get("mapping", [])], {one(l, "mapping_id", 0) for l in prof.get("location", [])}


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    path, args = argv[1], argv[2:]
    if not shutil.which("go"):
        print("SKIP - go not installed (scripts/install-deps.sh installs golang-go)")
        return 77
    opt = lambda name: args[args.index(name) + 1] if name in args else None
    many = lambda name: [args[i + 1] for i, a in enumerate(args) if a == name]

    rc, raw, err = pprof(["-raw"], path)
    result(rc == 0 and "Samples:" in raw, "go tool pprof -raw reads it", err.strip()[:300])
    rc, top, err = pprof(["-top"], path)
    result(rc == 0 and "flat%" in top, "go tool pprof -top reads it", err.strip()[:300])
    if failures:
        return 1
    comments, samples, locs, maps = parse_raw(raw)
    header = top.split("flat%")[0]

    used = {locs[l][0] for s in samples for l in s[0] if l in locs}
    unused = sorted(maps[m] or "(no file)" for m in maps if m not in used and m != 1)
    result(not unused, "%d mappings, each used by a sample (but the first, the main one)" % len(maps),
           "unused: " + ", ".join(unused[:10]))
    own = file_mappings(path)
    if own:
        fmaps, order, fused = own
        unused = [fmaps[i] or "(no file)" for i in order[1:] if i not in fused]
        result(not unused, "the file's %d mappings, each a location's (but the first)" % len(order),
               "unused: " + ", ".join(unused[:10]))
        maps.update({-i: f for i, f in fmaps.items()})  # --no-mapping: neither go's nor the file's
    bad = []
    for lid, (mid, names) in locs.items():
        for n in names:
            m = re.match(r"^\[unknown\] \((.*)\)$", n)
            if m and m.group(1) not in ("kernel", "anonymous") and \
                    os.path.basename(maps.get(mid, "")) != m.group(1):
                bad.append("%s at location %d in %s" % (n, lid, maps.get(mid)))
            if n == "[unknown]":
                bad.append("a bare [unknown] at location %d" % lid)
    nunk = len({n for _, names in locs.values() for n in names if n.startswith("[unknown] (")})
    result(not bad, "%d [unknown] functions, each in its own library's mapping" % nunk, "; ".join(bad[:5]))
    nolabel = [i for i, s in enumerate(samples) if not all(k in s[1] for k in ("pid", "tid", "process", "thread"))
               or not s[1]["process"].endswith(" (%s)" % s[1]["pid"])]
    result(samples and not nolabel, "%d samples, each with pid, tid, process \"NAME (PID)\" and thread labels"
           % len(samples), "sample %s: %s" % (nolabel[:1], samples[nolabel[0]][1] if nolabel else ""))

    fileline = re.search(r"^File: (.*)$", header, re.M)
    if opt("--file"):
        result(fileline and fileline.group(1) == opt("--file"), "-top says File: %s" % opt("--file"),
               fileline.group(0) if fileline else "no File line")
    if "--no-file" in args:
        result(not fileline, "-top says no File (several processes: no main binary)",
               fileline.group(0) if fileline else "")
    procs = {s[1].get("process") for s in samples}
    if opt("--processes"):
        result(len(procs) == int(opt("--processes")), "%s processes by the process label" % opt("--processes"),
               ", ".join(sorted(map(str, procs))))
    if opt("--roots"):
        roots, wrong = set(), []
        for locids, lab in samples:
            root = locs.get(locids[-1], (0, ["?"]))[1][-1]
            roots.add(root)
            if root != lab.get("process"):
                wrong.append("%s under %s" % (lab.get("process"), root))
        result(not wrong and len(roots) == int(opt("--roots")),
               "every sample's root frame is its process, %s roots" % opt("--roots"),
               "%d roots; %s" % (len(roots), "; ".join(wrong[:3])))
    for name in many("--no-mapping"):
        result(all(os.path.basename(f) != name for f in maps.values()), "no mapping of %s" % name)
    rows = [l.split(None, 5)[5] for l in top.split("flat%", 1)[1].splitlines()[1:] if len(l.split(None, 5)) == 6]
    for name in many("--top"):
        result(rows.count(name) == 1, "-top has one row %s" % name, "rows: " + ", ".join(rows[:12]))
    for rx in many("--comment"):
        result(any(re.search(rx, c) for c in comments) and re.search(rx, header, re.M),
               "a comment matches /%s/ (-raw and -top)" % rx, "; ".join(comments[:5]))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
