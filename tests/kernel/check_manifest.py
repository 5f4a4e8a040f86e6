#!/usr/bin/env python3
"""check_manifest.py DUMP - the manifest DUMP.json agrees with
`btrace-bpf report --stats DUMP` and with the file itself (size, SHA-256).
Prints what differs and exits 1; exits 0 silently when everything agrees.
$BTRACE_BPF is the tool (default build/btrace-bpf)."""
import hashlib
import json
import os
import re
import subprocess
import sys


def secs(ns):
    """ns as report prints seconds: microseconds, truncated."""
    return "%d.%06d" % (ns // 10**9, (ns % 10**9) // 1000)


def human(b):
    """cmd_report.c's human(): 12 B, 41.6 KiB, ..."""
    units = ["B", "KiB", "MiB", "GiB", "TiB"]
    v, i = float(b), 0
    while v >= 1024 and i < 4:
        v /= 1024
        i += 1
    return "%d B" % b if i == 0 else "%.1f %s" % (v, units[i])


def main():
    dump = sys.argv[1]
    tool = os.environ.get("BTRACE_BPF", "build/btrace-bpf")
    m = json.load(open(dump + ".json"))
    st = subprocess.run([tool, "report", "--stats", dump], capture_output=True, text=True, check=True).stdout
    bad = []

    def want(what, got, exp):
        if str(got) != str(exp):
            bad.append("%s: manifest %s, expected %s" % (what, got, exp))

    def grab(rx, n=1):
        mm = re.search(rx, st, re.M)
        if not mm:
            bad.append("report --stats has no line matching %r" % rx)
            return [None] * n
        return mm.groups()

    data = open(dump, "rb").read()
    want("file_size", m["file_size"], len(data))
    want("sha256", m["sha256"], hashlib.sha256(data).hexdigest())
    want("dump", m["dump"], os.path.basename(dump))
    want("btrace_manifest", m["btrace_manifest"], 1)
    host, kernel, ncpus, pid = grab(r"^host:\s+(.*), kernel (\S+), (\d+) CPUs, recorder pid (\d+)$", 4)
    want("host", m["host"], host)
    want("kernel", m["kernel"], kernel)
    want("ncpus", m["ncpus"], ncpus)
    want("recorder.pid", m["recorder"]["pid"], pid)
    reason, seq = grab(r"^created: .*, reason (\S+), dump #(\d+)", 2)
    want("reason", m["reason"], reason)
    want("dump_seq", m["dump_seq"], seq)
    size, = grab(r"^format: .*?, ([0-9.]+ \S+) file, ")
    want("file size (human)", human(m["file_size"]), size)
    ntasks, nprobes = grab(r"^tables:\s+(\d+) tasks, (\d+) probes$", 2)
    want("tables.tasks", m["tables"]["tasks"], ntasks)
    want("tables.probes", m["tables"]["probes"], nprobes)
    events, blocks = grab(r"^events:\s+(\d+) in (\d+) blocks$", 2)
    want("events.total", m["events"]["total"], events)
    want("buffer.blocks_stored", m["buffer"]["blocks_stored"], blocks)
    if int(events):
        a, b = grab(r"^window:\s+(\S+) \.\. (\S+) ", 2)
        want("time_range.first_ns", secs(m["time_range"]["first_ns"]), a)
        want("time_range.last_ns", secs(m["time_range"]["last_ns"]), b)
        a, b, n = grab(r"^latest continuous window: (\S+) \.\. (\S+) \(\S+ s, (\d+) events\)$", 3)
        want("continuous_window.start_ns", secs(m["continuous_window"]["start_ns"]), a)
        want("continuous_window.end_ns", secs(m["continuous_window"]["end_ns"]), b)
        want("continuous_window.events", m["continuous_window"]["events"], n)
    tot = grab(r"^total\s+(\d+(?:\s+\d+)+)$")[0]
    if tot:
        cols = tot.split()
        groups = ["sched", "irq", "power", "syscalls", "uprobe", "stacks"]
        want("events by group (sum)", sum(m["events"]["by_group"].values()), cols[0])
        for i, g in enumerate(groups):
            want("events.by_group." + g, m["events"]["by_group"][g], cols[1 + i])
        want("losses.ring_buffer_drops (table)", m["losses"]["ring_buffer_drops"], cols[1 + len(groups)])
    L = m["losses"]
    want("ring_buffer_drops", L["ring_buffer_drops"], grab(r"ring-buffer reservation failures: (\d+)$")[0])
    if L["ring_buffer_submitted"] is not None:
        want("ring_buffer_submitted", L["ring_buffer_submitted"], grab(r"ring-buffer events submitted: (\d+)$")[0])
    g, mi, du = grab(r"seq gaps: (\d+) gaps, (\d+) events missing, (\d+) duplicates$", 3)
    want("seq_gaps", L["seq_gaps"], g)
    want("seq_missing", L["seq_missing"], mi)
    want("seq_duplicates", L["seq_duplicates"], du)
    r, lo, bu, em = grab(r"dump read: (\d+) blocks read, (\d+) lost .*, (\d+) busy .*, (\d+) never used$", 4)
    want("blocks_read", L["blocks_read"], r)
    want("blocks_lost", L["blocks_lost"], lo)
    want("blocks_busy", L["blocks_busy"], bu)
    want("blocks_empty", L["blocks_empty"], em)
    w, rj, dr = grab(r"buffer entries \(event batches\): (\d+) written, (\d+) rejected .*, (\d+) dropped", 3)
    want("buffer_entries_written", L["buffer_entries_written"], w)
    want("buffer_entries_rejected", L["buffer_entries_rejected"], rj)
    want("buffer_entries_dropped", L["buffer_entries_dropped"], dr)
    de, drj = grab(r"drain: (\d+) events written into the buffer, (\d+) rejected$", 2)
    want("drain_events", L["drain_events"], de)
    want("drain_rejected", L["drain_rejected"], drj)
    if bad:
        print("%s: manifest disagrees:\n  %s" % (dump, "\n  ".join(bad)))
        sys.exit(1)


main()
