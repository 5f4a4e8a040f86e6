#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_pprof.py - check a `btrace-bpf convert -f pprof` profile against
`btrace-bpf report --profile` of the same dump (used by
tests/unit/test_export_stacks.c and tests/kernel/test_convert.sh).

  check_pprof.py PROFILE REPORT [--offcpu] [--proto tests/pprof/profile.proto]

PROFILE is decoded (gunzipped) with `protoc --decode=perftools.profiles.Profile`
against tests/pprof/profile.proto. REPORT is report --profile's output (with
--offcpu: report --profile --offcpu). Checks, each "ok"/"FAIL": the profile
is well formed as pprof reads it (every index of the string table, every
location, function and mapping id resolves, ids are not 0, one value per
sample type, the period type and period; no mapping but the first without a
location: go tool pprof drops those as it reads, so only the file shows them); per process (label pid) the total
weight equals the report's, the samples under a "[stack lost]" root equal
its "N with a stack lost", and every function the report lists has the same
self and total share (one decimal, as printed; names without symbol
versions; a label's total is the report's only where the label is all the
sample has). Exit 1 if any fails.
"""
import gzip
import os
import re
import subprocess
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from protoc_text import one as first, parse_text  # noqa: E402


def one(m, f, d=0):
    return first(m, f, d)


failures = 0
LABELS = ("[stack lost]", "[no stack]")
SYM_VERSION = re.compile(r"@@?[A-Z][A-Za-z0-9_.]*$")
NAME_MAX_SHOWN = 1024  # report shows a name's first 1024 bytes (report_stacks.c); pprof has it whole


def shown(name):
    """A name as report --profile shows it: a long C++ name (LLVM's run past 1 KiB) is cut."""
    b = name.encode("utf-8", "surrogateescape")
    return b[:NAME_MAX_SHOWN].decode("utf-8", "replace") if len(b) > NAME_MAX_SHOWN else name


def result(ok, name, why=""):
    global failures
    if ok:
        print("ok - " + name)
    else:
        failures += 1
        print("FAIL - " + name + (": " + why if why else ""))


def decode(path, proto):
    with open(path, "rb") as f:
        data = f.read()
    result(data[:2] == b"\x1f\x8b", "the profile is gzipped, as pprof readers expect")
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    pdir, pname = os.path.split(os.path.abspath(proto))
    p = subprocess.run(["protoc", "-I", pdir, "--decode=perftools.profiles.Profile", pname], input=data,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode:
        result(False, "protoc decodes the profile", p.stderr.decode(errors="replace")[:500])
        return None
    text = p.stdout.decode("utf-8", "replace")
    unknown = [l for l in text.splitlines() if l.strip()[:1].isdigit()]
    result(not unknown, "protoc decodes the profile (%d bytes), no unknown field" % len(data), "; ".join(unknown[:3]))
    return parse_text(text.splitlines())


def report_rows(path):
    """{pid: (total, lost, {name: (self%, total%)})} from report --profile."""
    procs, cur = {}, None
    for line in open(path, encoding="utf-8", errors="replace"):
        m = re.match(r"process (\d+) \(.*\): (\d+) [^,(]+\(.*?\)(?:, (\d+) with a stack lost)?", line)
        if m:
            cur = {}
            procs[int(m.group(1))] = (int(m.group(2)), int(m.group(3) or 0), cur)
            continue
        m = re.match(r"\s+([0-9.]+)%\s+([0-9.]+)%  (.*)$", line.rstrip("\n"))
        if m and cur is not None:
            cur[SYM_VERSION.sub("", m.group(3))] = (m.group(1), m.group(2))
    return procs


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    prof_path, rep_path = argv[1], argv[2]
    offcpu = "--offcpu" in argv
    proto = argv[argv.index("--proto") + 1] if "--proto" in argv else "tests/pprof/profile.proto"
    prof = decode(prof_path, proto)
    if prof is None:
        return 1
    strs = prof.get("string_table", [])
    bad = []
    s = lambda i: strs[i] if 0 <= i < len(strs) else bad.append("string index %d" % i) or "?"
    if not strs or strs[0] != "":
        bad.append("string_table[0] is not empty")
    types = [(s(one(v, "type")), s(one(v, "unit"))) for v in prof.get("sample_type", [])]
    want = [("blocks", "count"), ("off_cpu", "microseconds")] if offcpu else \
        [("samples", "count"), ("cpu", "nanoseconds")]
    result(types == want, "sample types %s" % want, str(types))
    pt = prof.get("period_type", [{}])[0]
    result((s(one(pt, "type")), s(one(pt, "unit"))) == want[1] and one(prof, "period") > 0,
           "period type %s, period %d" % (want[1], one(prof, "period")))
    # a Python frame's function has the file "[py]"; report names it "NAME [py]"
    funcs = {one(f, "id"): s(one(f, "name")) + (" [py]" if s(one(f, "filename", 0)) == "[py]" else "")
             for f in prof.get("function", [])}
    maps = {one(m, "id"): m for m in prof.get("mapping", [])}
    locs = {}
    for l in prof.get("location", []):
        if one(l, "mapping_id") not in maps:
            bad.append("location %d: mapping %d" % (one(l, "id"), one(l, "mapping_id")))
        names = []
        for ln in l.get("line", []):
            if one(ln, "function_id") not in funcs:
                bad.append("location %d: function %d" % (one(l, "id"), one(ln, "function_id")))
            names.append(funcs.get(one(ln, "function_id"), "?"))
        locs[one(l, "id")] = names
    if 0 in funcs or 0 in locs or 0 in maps:
        bad.append("an id 0")
    for m in maps.values():
        s(one(m, "filename")), s(one(m, "build_id"))
    # go tool pprof drops unused mappings as it reads, so only the file
    # itself shows them: every mapping but the first (the main binary, or
    # the anonymous one) is some location's
    used = {one(l, "mapping_id") for l in prof.get("location", [])}
    mids = [one(m, "id") for m in prof.get("mapping", [])]
    unused = [s(one(maps[i], "filename")) or "(no file)" for i in mids[1:] if i not in used]
    result(not unused, "%d mappings, each a location's (but the first)" % len(mids), "unused: " + ", ".join(unused[:8]))
    period = one(prof, "period")
    per = defaultdict(lambda: [0, 0, defaultdict(int), defaultdict(int)])  # weight, lost, self, total
    for smp in prof.get("sample", []):
        vals = smp.get("value", [])
        if len(vals) != len(types):
            bad.append("a sample with %d values" % len(vals))
            continue
        if not offcpu and vals[1] != vals[0] * period:
            bad.append("cpu time %d of %d samples at period %d" % (vals[1], vals[0], period))
        w = vals[1] if offcpu else vals[0]
        lab = {s(one(l, "key")): (one(l, "num"), s(one(l, "str"))) for l in smp.get("label", [])}
        if not {"pid", "tid", "comm"} <= set(lab):
            bad.append("labels %s" % sorted(lab))
        pid = lab.get("pid", (0, ""))[0]
        ids = smp.get("location_id", [])
        if not ids or any(i not in locs for i in ids):
            bad.append("sample locations %s" % ids)
            continue
        # leaf first; each location's lines innermost first
        names = [shown(n) for i in ids for n in locs[i]]
        p = per[pid]
        p[0] += w
        if names and names[-1] == "[stack lost]":
            p[1] += w
            if len(names) > 1:
                names = names[:-1]  # report lists the label only when it is all there is
        p[2][names[0]] += w
        for n in set(names):
            p[3][n] += w
    result(not bad, "every string, mapping, location and function reference resolves; values per sample type",
           "; ".join(bad[:5]))
    rep = report_rows(rep_path)
    result(sorted(rep) == sorted(per), "processes: %s" % sorted(rep), "profile has %s" % sorted(per))
    for pid, (tot, lost, rows) in sorted(rep.items()):
        p = per.get(pid, [0, 0, {}, {}])
        result(p[0] == tot and p[1] == lost, "process %d: %d %s, %d with a stack lost" %
               (pid, tot, "off-CPU us" if offcpu else "samples", lost), "profile: %d, %d" % (p[0], p[1]))
        diff = []
        for name, (sf, tt) in rows.items():
            got = ("%.1f" % (100.0 * p[2].get(name, 0) / p[0]), "%.1f" % (100.0 * p[3].get(name, 0) / p[0])) \
                if p[0] else ("0.0", "0.0")
            if got != (sf, tt):
                diff.append("%s: report %s%%/%s%%, profile %s%%/%s%%" % (name, sf, tt, got[0], got[1]))
        result(rows and not diff, "process %d: self and total of the report's %d functions" % (pid, len(rows)),
               "; ".join(diff[:4]))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
