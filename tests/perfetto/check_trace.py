#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_trace.py - check a `btrace-bpf convert` output (used by
tests/unit/test_export.c and tests/kernel/test_convert.sh).

  check_trace.py perfetto FILE [--proto tests/perfetto/perfetto_subset.proto] [options]
  check_trace.py json FILE [options]
  check_trace.py text FILE [--proto PROTO]   protoc's text of a Perfetto trace,
                        interned track event names written out in place

Options:
  --expect NAME=N,...   events per dump event type (sched_switch=10,uprobe=3,...);
                        types not listed must be absent
  --gaps N              seq gaps the dump has (LOST slices expected)
  --uprobe-slices N     matched uprobe entry/return pairs expected
  --uretprobe-slices N  slices of functions probed with %return alone (drawn
                        from the duration each return carries)
  --unmatched N         uprobe events flagged unmatched (an entry or return
                        whose partner was asked for but is not there)
  --app-slices N        matched application BEGIN/END pairs expected
  --func-slices N       function calls (-finstrument-functions) drawn as slices
  --func-open N         calls open at the dump's end: closed there and marked
  --begun-before N      calls and app slices open at the window's start: drawn
                        from it (before every other event of their track),
                        marked begun_before_window
  --switch-chain        every sched_switch's prev_pid is its CPU's previous
                        next_pid (trace processor's mismatched_sched_switch_tids)
  --tree-tids A,B,...   (perfetto) the ProcessTree lists exactly these threads
  --closed-at-exit N    calls and app slices open at their thread's exit: they
                        end exactly at one of its sched_process_exit events
  --closed-at-last N    calls and app slices open on a thread that died without
                        its exit in the dump: closed at its last event (marked
                        closed_at_thread_last_event), no event of the thread after
  --func-deep-markers N slices standing for the calls below 511 open ones
                        (trace processor keeps 512 levels; an END whose category
                        differs from its BEGIN's, or a BEGIN below 512 open
                        slices, fails the nesting check as the importer would)
  --app-gaps N          per-thread seq gaps of application events (LOST instants)
  --triggers N          trigger hits that caused the dump (N = 0 or 1): an instant
                        "trigger ..." on the global "triggers" track and one on
                        the thread it names (JSON: cat btrace_trigger, metadata.trigger)
  --chart-begun-before N (with --stacks) call chart frames of threads' first
                        samples drawn from the window's start (begun_before_window)
  --stacks-lost N       (with --stacks) samples whose stack is lost or missing:
                        their callstack starts with a labelled frame
  --offcpu-blocks N     (json, with --stacks) off-CPU samples expected
  --stacks N            CPU samples (PerfSample packets) expected: each
                        names a callstack interned earlier on its sequence (the
                        sequence cleared first), every frame, function name and
                        mapping it uses is interned; the call chart slices nest
  --stack-func NAME     (perfetto) NAME is a function of some sampled callstack
                        and a call chart slice
  --offcpu-func NAME    (perfetto) an off-CPU slice "blocked in NAME" exists
  --src-line FUNC:FILE  (perfetto, with --stacks; repeatable) a frame of FUNC in
                        a sampled callstack is at a line > 0 of a source path
                        whose last part is FILE
  --inlined FUNC        (perfetto, with --stacks; repeatable) FUNC is an inlined
                        call in a sampled callstack (a frame at the mapping and
                        rel_pc of the frame below it, another function: not
                        recursion) and a call chart slice
  --counts              print the counts found (NAME=N,...) and exit 0
  --same-sched-as FILE  (perfetto) the sched_switch events, with prev_* of
                        compact ones inferred as Perfetto's importer does (from
                        the CPU's previous switch), equal FILE's

Perfetto output is decoded with `protoc --decode=perfetto.protos.Trace PROTO`
(a .gz file is gunzipped first). Checks, each printed as "ok"/"FAIL" with a
reason: event counts per type; every tid in an event has a name in the
ProcessTree; event timestamps never decrease per CPU; uprobe slices nest per
thread track (every end closes the innermost open begin, none left open:
trace_processor would give it dur -1); application events on
their thread's "app events" track, counters on counter tracks under a
process track, a LOST instant per per-thread app seq gap; the importer's
rules for TrackDescriptors (one thread descriptor per tid and one process
descriptor per pid, else tid/pid reuse splits them; a uuid re-described
identically; parents described, no cycle) and uprobe/app events on a named
child track that resolves to a thread;
clock snapshot with BOOTTIME and REALTIME; the loss counters (dump info
annotations, FtraceStats at start and end, a LOST slice per gap, lost_events
on the bundles of CPUs with gaps). JSON output: the same counts (cat split
on ','), thread names from "M" events for every thread used, CPU run slices
that never overlap per CPU, uprobe/syscall slices that nest per thread, loss
counters in "metadata" and a btrace_loss slice per gap, application B/E
pairs that match per thread (no B without its E: a slice open at the dump's
end or at its thread's exit is an X, as trace_processor would otherwise
leave it at dur -1) and a btrace_app_loss instant per app gap. Exit 1 if
any fails.
"""
import gzip
import json
import math
import os
import re
import subprocess
import sys
from collections import defaultdict

EVENT_TYPES = [
    "sched_switch", "sched_wakeup", "sched_wakeup_new", "sched_waking", "sched_migrate_task",
    "sched_process_fork", "sched_process_exec", "sched_process_exit", "task_rename",
    "irq_handler_entry", "irq_handler_exit", "softirq_entry", "softirq_exit", "cpu_frequency",
    "cpu_idle", "sys_enter", "sys_exit", "uprobe", "uretprobe", "usdt",
    "app_instant", "app_begin", "app_end", "app_counter", "func_entry", "func_exit",
]
CPU_PID = 0x7FFF0000
LOSS_KEYS = ["loss.rb_drops", "loss.seq_gaps", "loss.seq_missing", "loss.buffer_entries_rejected",
             "loss.dump_blocks_lost", "loss.dump_blocks_busy", "loss.drain_rejected"]

MAX_SLICE_DEPTH = 512  # trace processor's open slices per track
failures = 0


def result(ok, name, why=""):
    global failures
    if ok:
        print("ok - %s" % name)
    else:
        failures += 1
        print("FAIL - %s%s" % (name, (": " + why) if why else ""))


# protoc's text format: tests/protoc_text.py
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from protoc_text import one, parse_text, unquote  # noqa: E402


def decode_perfetto(path, proto):
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    pdir, pname = os.path.split(os.path.abspath(proto))
    p = subprocess.run(["protoc", "-I", pdir, "--decode=perfetto.protos.Trace", pname], input=data,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        result(False, "protoc decodes the trace", p.stderr.decode(errors="replace")[:2000])
        return None
    result(True, "protoc decodes the trace (%d bytes)" % len(data))
    text = p.stdout.decode("utf-8", "surrogateescape")
    # Unknown fields print as "NUMBER: value": a writer/schema mismatch.
    unknown = [l for l in text.splitlines() if l.strip()[:1].isdigit()]
    result(not unknown, "no fields unknown to the schema", "; ".join(unknown[:5]))
    trace = parse_text(text.splitlines())
    resolve_interned(trace)
    return trace


def resolved_text(path, proto):
    """The trace as protoc's text with every interned track event name,
    category and annotation name written out in place (re-encoded and
    decoded again, so fields are in number order as if never interned):
    for tests that look for an event's fields in the text."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    pdir, pname = os.path.split(os.path.abspath(proto))
    proto_args = ["protoc", "-I", pdir, pname]
    p = subprocess.run(proto_args[:-1] + ["--decode=perfetto.protos.Trace", pname], input=data,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        sys.stderr.write(p.stderr.decode(errors="replace"))
        return None
    lines = p.stdout.decode("utf-8", "surrogateescape").splitlines()
    tables, out, i = {}, [], 0
    quote = lambda v: '"%s"' % v.replace("\\", "\\\\").replace('"', '\\"')
    while i < len(lines):
        j = i + 1
        while j < len(lines) and lines[j] != "}":
            j += 1
        block = lines[i:j + 1]
        msg = parse_text(block)
        pk = (msg.get("packet") or [{}])[0]
        seq = one(pk, "trusted_packet_sequence_id", 0)
        if one(pk, "sequence_flags", 0) & 1:
            tables[seq] = defaultdict(dict)
        t = tables.get(seq, defaultdict(dict))
        for idata in pk.get("interned_data", []):
            for kind in ("event_categories", "event_names", "debug_annotation_names"):
                for e in idata.get(kind, []):
                    t[kind][one(e, "iid")] = one(e, "name", "")
        ctx = []
        for l in block:
            st = l.strip()
            if st.endswith("{"):
                ctx.append(st[:-1].strip())
            elif st == "}":
                ctx.pop()
            else:
                k, _, v = st.partition(": ")
                ind = l[:len(l) - len(l.lstrip())]
                if ctx and ctx[-1] == "track_event" and k == "category_iids":
                    l = ind + "categories: " + quote(t["event_categories"].get(int(v), "?"))
                elif ctx and ctx[-1] == "track_event" and k == "name_iid":
                    l = ind + "name: " + quote(t["event_names"].get(int(v), "?"))
                elif ctx and ctx[-1] == "debug_annotations" and k == "name_iid":
                    l = ind + "name: " + quote(t["debug_annotation_names"].get(int(v), "?"))
            out.append(l)
        i = j + 1
    p = subprocess.run(proto_args[:-1] + ["--encode=perfetto.protos.Trace", pname],
                       input="\n".join(out).encode("utf-8", "surrogateescape"), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if p.returncode != 0:
        sys.stderr.write(p.stderr.decode(errors="replace"))
        return None
    p = subprocess.run(proto_args[:-1] + ["--decode=perfetto.protos.Trace", pname], input=p.stdout,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p.stdout.decode("utf-8", "surrogateescape") if p.returncode == 0 else None


def resolve_interned(trace):
    """Replays the importer's interning for TrackEvents: an iid (category,
    event name, debug annotation name, callstack) means what the InternedData
    of its sequence said since the sequence was last cleared, in a packet
    flagged as needing that state. The names are filled in (categories,
    name) so that the checks below read interned and plain events alike."""
    tables, bad, used = {}, [], 0
    for pk in trace.get("packet", []):
        seq = one(pk, "trusted_packet_sequence_id", 0)
        flags = one(pk, "sequence_flags", 0)
        if flags & 1:
            tables[seq] = {"event_categories": {}, "event_names": {}, "debug_annotation_names": {}, "cs": set()}
        t = tables.get(seq)
        for idata in pk.get("interned_data", []):
            if t is None:
                bad.append("interned data on sequence %s before it was cleared" % seq)
                continue
            for kind in ("event_categories", "event_names", "debug_annotation_names"):
                for e in idata.get(kind, []):
                    t[kind][one(e, "iid")] = one(e, "name", "")
            for cs in idata.get("callstacks", []):
                t["cs"].add(one(cs, "iid"))

        def look(kind, iid):
            if t is None or not flags & 2 or iid not in t[kind]:
                bad.append("%s iid %s unresolved on sequence %s (flags %s)" % (kind, iid, seq, flags))
                return "?"
            return t[kind][iid]
        for te in pk.get("track_event", []):
            if te.get("category_iids"):
                used += 1
                te["categories"] = [look("event_categories", i) for i in te["category_iids"]]
            if te.get("name_iid"):
                used += 1
                te["name"] = [look("event_names", one(te, "name_iid"))]
            for a in te.get("debug_annotations", []):
                if a.get("name_iid"):
                    a["name"] = [look("debug_annotation_names", one(a, "name_iid"))]
            cs = one(te, "callstack_iid")
            if cs is not None and (t is None or not flags & 2 or cs not in t["cs"]):
                bad.append("callstack iid %s of a track event unresolved on sequence %s" % (cs, seq))
    if used or bad:
        result(not bad, "interned track event names, categories, annotation names and callstacks resolve "
               "on their sequence", "; ".join(bad[:5]))


TID_FIELDS = {
    "sched_switch": ["prev_pid", "next_pid"],
    "sched_wakeup": ["pid"], "sched_wakeup_new": ["pid"], "sched_waking": ["pid"],
    "sched_migrate_task": ["pid"], "sched_process_fork": ["parent_pid", "child_pid"],
    "sched_process_exec": ["pid"], "sched_process_exit": ["pid"], "task_rename": ["pid"],
}


def check_same_sched(trace, other_path, proto):
    other = decode_perfetto(other_path, proto)
    if other is None:
        return
    a, b = sched_switches(trace), sched_switches(other)
    diff = []
    for cpu in sorted(set(a) | set(b), key=lambda c: (c is None, c)):
        x, y = a.get(cpu, []), b.get(cpu, [])
        if x != y:
            n = next((i for i, (p, q) in enumerate(zip(x, y)) if p != q), min(len(x), len(y)))
            diff.append("cpu %s: %d vs %d switches, first difference at #%d: %s vs %s" %
                        (cpu, len(x), len(y), n, x[n] if n < len(x) else None, y[n] if n < len(y) else None))
    result(not diff, "sched_switch events as the importer infers them equal %s's" % other_path, "; ".join(diff[:3]))


def check_perfetto(trace, expect, gaps, uprobe_slices, print_counts, app_slices=None, app_gaps=None, opt={}):
    packets = trace.get("packet", [])
    counts = defaultdict(int)
    names = {}
    tgids = {}
    comm_names = {}
    used_tids = set()     # tids the importer makes tracks for
    payload_tids = set()  # tids named only inside events (wakeup, fork, ...)
    last_ts = {}
    mono_bad = []
    tracks = {}
    track_events = []
    info = None
    fstats = {}
    lost_cpus = set()
    clocks = set()
    uts = None
    exits = defaultdict(set)  # tid -> times of its sched_process_exit
    sched_last = {}  # tid -> (kind, time) of its last ftrace event

    described = defaultdict(list)  # uuid -> every TrackDescriptor given for it
    for idx, pk in enumerate(packets):
        for td in pk.get("track_descriptor", []):
            described[one(td, "uuid")].append(td)
        for pt in pk.get("process_tree", []):
            for t in pt.get("threads", []):
                names[one(t, "tid")] = one(t, "name", "")
                tgids[one(t, "tid")] = one(t, "tgid", 0)
            for pr in pt.get("processes", []):
                cmd = pr.get("cmdline", [])
                names.setdefault(one(pr, "pid"), cmd[0] if cmd else "")
        for cs in pk.get("clock_snapshot", []):
            for c in cs.get("clocks", []):
                clocks.add(one(c, "clock_id"))
        for si in pk.get("system_info", []):
            uts = one(si, "utsname")
        for fs in pk.get("ftrace_stats", []):
            fstats[one(fs, "phase")] = fs
        for td in pk.get("track_descriptor", []):
            tracks[one(td, "uuid")] = td
            th = one(td, "thread")
            if th is not None:
                used_tids.add(one(th, "tid"))
        for te in pk.get("track_event", []):
            track_events.append((one(pk, "timestamp", 0), idx, te))
        for b in pk.get("ftrace_events", []):
            cpu = one(b, "cpu")
            if one(b, "lost_events"):
                lost_cpus.add(cpu)
            tss = []
            for ev in b.get("event", []):
                ts = one(ev, "timestamp")
                tss.append(ts)
                used_tids.add(one(ev, "pid"))
                kinds = [k for k in ev.keys() if k in EVENT_TYPES]
                if len(kinds) != 1:
                    result(False, "ftrace event has one known type", str(dict(ev))[:300])
                    continue
                k = kinds[0]
                counts[k] += 1
                body = ev[k][0]
                if k == "sched_process_exit":
                    exits[one(ev, "pid")].add(ts)
                if ts >= sched_last.get(one(ev, "pid"), (None, -1))[1]:
                    sched_last[one(ev, "pid")] = (k, ts)
                for f in TID_FIELDS.get(k, []):
                    payload_tids.add(one(body, f))
                if k == "sched_switch":
                    # the importer names threads from these too
                    used_tids.add(one(body, "prev_pid"))
                    used_tids.add(one(body, "next_pid"))
                    comm_names[one(body, "prev_pid")] = one(body, "prev_comm", "")
                    comm_names[one(body, "next_pid")] = one(body, "next_comm", "")
            cs = one(b, "compact_sched")
            if cs is not None:
                acc = 0
                n = len(cs.get("switch_timestamp", []))
                for f in ("switch_prev_state", "switch_next_pid", "switch_next_prio", "switch_next_comm_index"):
                    if len(cs.get(f, [])) != n:
                        result(False, "compact_sched arrays have equal lengths", f)
                interned = cs.get("intern_table", [])
                for d, pid, ci in zip(cs.get("switch_timestamp", []), cs.get("switch_next_pid", []),
                                      cs.get("switch_next_comm_index", [])):
                    acc += d
                    tss.append(acc)
                    used_tids.add(pid)
                    if ci >= len(interned):
                        result(False, "compact comm index in the intern table", str(ci))
                    else:
                        comm_names[pid] = interned[ci]
                counts["sched_switch"] += n
            tss.sort()  # compact and full events of one bundle are merged by time
            for ts in tss:
                if cpu in last_ts and ts < last_ts[cpu]:
                    mono_bad.append("cpu %s: %s after %s" % (cpu, ts, last_ts[cpu]))
                last_ts[cpu] = ts

    check_track_tree(tracks, described)

    # uprobe and application events from track events
    loss_slices = 0
    unmatched = 0
    app_loss = 0
    app_bad = []
    for ts, idx, te in track_events:
        cats = te.get("categories", [])
        typ = one(te, "type")
        name = one(te, "name", "")
        td = tracks.get(one(te, "track_uuid"), {})
        if typ == "TYPE_COUNTER":
            counts["app_counter"] += 1
            parent = tracks.get(one(td, "parent_uuid"), {})
            if one(td, "counter") is None or one(parent, "process") is None:
                app_bad.append("counter event on track %s: not a counter track under a process track" %
                               one(te, "track_uuid"))
            continue
        if "app" in cats:
            if typ == "TYPE_SLICE_BEGIN":
                counts["app_begin"] += 1
            elif typ == "TYPE_SLICE_END":
                counts["app_end"] += 1
            elif name.endswith("(begin, no end)"):
                counts["app_begin"] += 1
            elif name == "end (no begin)":
                counts["app_end"] += 1
            else:
                counts["app_instant"] += 1
            if thread_of(tracks, one(te, "track_uuid")) is None or one(td, "name") != "app events":
                app_bad.append("app event %r on track %s: not an app events track of a thread" %
                               (name, one(te, "track_uuid")))
            continue
        if "func" in cats:
            counts["func_exit" if typ == "TYPE_SLICE_END" else "func_entry"] += 1
            if thread_of(tracks, one(te, "track_uuid")) is None or one(td, "name") != "functions":
                app_bad.append("function event %r on track %s: not a functions track of a thread" %
                               (name, one(te, "track_uuid")))
            continue
        if "btrace" in cats and typ == "TYPE_INSTANT" and name.startswith("LOST ") and \
                one(td, "name") == "app events":
            app_loss += 1
            continue
        if ("uprobe" in cats or "uretprobe" in cats or "usdt" in cats) and (thread_of(tracks, one(te, "track_uuid")) is None or
                                                     one(td, "name") != "uprobes"):
            app_bad.append("uprobe event %r on track %s: not a uprobes track of a thread" %
                           (name, one(te, "track_uuid")))
        if ("uprobe" in cats or "uretprobe" in cats) and \
                any(one(a, "name") == "unmatched" for a in te.get("debug_annotations", [])):
            unmatched += 1
        if "uprobe" in cats:
            # an entry (matched: the begin; alone or of a function probed
            # without %return: an instant), or a return (matched: the end)
            if typ == "TYPE_SLICE_BEGIN":
                counts["uprobe"] += 1
            elif typ == "TYPE_SLICE_END":
                counts["uretprobe"] += 1
            elif name.endswith("(return, no entry)"):
                counts["uretprobe"] += 1
            else:
                counts["uprobe"] += 1
        elif "uretprobe" in cats:
            # a return of a function probed with %return alone: the end of
            # its slice (the begin is drawn from its duration), or an instant
            if typ != "TYPE_SLICE_BEGIN":
                counts["uretprobe"] += 1
        elif "usdt" in cats:
            counts["usdt"] += 1
        elif "btrace" in cats and typ == "TYPE_SLICE_BEGIN" and name.startswith("LOST "):
            loss_slices += 1
        if name == "dump info":
            info = {one(a, "name"): a for a in te.get("debug_annotations", [])}


    # Every thread with a track is named: by the ProcessTree, or (a thread
    # whose process the dump does not know) by the sched_switch comms.
    unnamed = sorted(t for t in used_tids if t not in (None, 0) and not names.get(t) and not comm_names.get(t))
    result(not unnamed, "every tid with a track has a name (%d tids, %d in the ProcessTree)" %
           (len(used_tids - {0, None}), len(names)), "unnamed: %s" % unnamed[:20])
    orphans = sorted(t for t, g in tgids.items() if not g)
    result(not orphans, "no ProcessTree thread without its process (the importer would file it under pid 0)",
           str(orphans[:20]))
    nameless = sorted(t for t in (used_tids | payload_tids) - {0, None} if t in names and not names[t])
    result(not nameless, "no empty names in the ProcessTree", str(nameless[:20]))
    result(not mono_bad, "timestamps never decrease per CPU (%d CPUs)" % len(last_ts), "; ".join(mono_bad[:5]))

    # nesting per track
    bad = []
    stacks = defaultdict(list)
    pairs = 0
    rpairs = 0
    apairs = 0
    fpairs = 0
    fclosed = 0
    fexit = 0  # function calls closed at their thread's exit (convert counts them as open too)
    too_deep = 0
    fa_events = [(t, te) for t, _, te in track_events if {"func", "app"} & set(te.get("categories", []))]
    last_event_ts = max((t for t, _ in fa_events), default=0)
    first_ts = {}  # track -> its first event
    for t, te in fa_events:
        u = one(te, "track_uuid")
        first_ts[u] = min(first_ts.get(u, t), t)
    ebefore = 0
    eclosed = 0
    elast = 0
    last_closed = []  # (tid, ts) of slices closed at a dead thread's last event
    for ts, idx, te in sorted(track_events, key=lambda x: (x[0], x[1])):
        uuid = one(te, "track_uuid")
        typ = one(te, "type")
        cats = te.get("categories", [])
        if uuid not in tracks:
            bad.append("event on undescribed track %s" % uuid)
        # trace processor keeps 512 open slices a track: a deeper BEGIN (or
        # instant) is dropped, and the END meant for it closes its parent
        if typ in ("TYPE_SLICE_BEGIN", "TYPE_INSTANT") and len(stacks[uuid]) >= MAX_SLICE_DEPTH:
            bad.append("%s at depth %d on %s at %s: trace processor drops it" %
                       (typ, len(stacks[uuid]), uuid, ts))
        if typ == "TYPE_SLICE_BEGIN":
            anns = {one(a, "name") for a in te.get("debug_annotations", [])}
            # a call or app slice open at the dump's end (or its thread's
            # exit) is closed there; one open at the window's start drawn
            # from it, before every other event of its track
            is_open = ("open" if "open_at_dump_end" in anns else "exit" if "closed_at_thread_exit" in anns
                       else "last" if "closed_at_thread_last_event" in anns else "")
            if "begun_before_window" in anns and {"func", "app"} & set(cats):
                ebefore += 1
                counts["func_entry" if "func" in cats else "app_begin"] -= 1  # its entry is not in the window
                if ts > first_ts.get(uuid, ts):
                    bad.append("slice begun before the window at %s after the first event %s of %s" %
                               (ts, first_ts[uuid], uuid))
            stacks[uuid].append((ts, is_open, cats, "begun_before_window" in anns))
        elif typ == "TYPE_SLICE_END":
            if not stacks[uuid]:
                bad.append("end without begin at %s on %s" % (ts, uuid))
            elif cats and cats != stacks[uuid][-1][2]:
                # the importer matches an END to the open BEGIN by category:
                # this END is dropped and the slice never ends (dur -1)
                bad.append("END of category %s at %s on %s does not match its BEGIN's %s" %
                           (cats, ts, uuid, stacks[uuid][-1][2]))
            else:
                b, is_open, _, before = stacks[uuid].pop()
                if b > ts:
                    bad.append("slice ends before it begins (%s > %s)" % (b, ts))
                if is_open == "open":
                    fclosed += "func" in cats
                    if ts < last_event_ts:
                        bad.append("slice open at the dump's end closed at %s (last event %s) on %s" %
                                   (ts, last_event_ts, uuid))
                elif is_open == "exit":
                    eclosed += 1
                    fexit += "func" in cats
                    tid = (thread_of(tracks, uuid) or (None, None))[1]
                    if ts not in exits.get(tid, ()):
                        bad.append("slice closed_at_thread_exit ends at %s, not at an exit of tid %s (%s)" %
                                   (ts, tid, sorted(exits.get(tid, ()))[:3]))
                elif is_open == "last":
                    elast += 1
                    fexit += "func" in cats
                    last_closed.append(((thread_of(tracks, uuid) or (None, None))[1], ts))
                marker = any(one(a, "name") == "calls_not_drawn" for a in te.get("debug_annotations", []))
                too_deep += marker
                if is_open:
                    counts["func_exit" if "func" in cats else "app_end"] -= 1  # closed: no exit in the dump
                elif "func" in cats and not marker and not before:
                    fpairs += 1
                if "uprobe" in cats:
                    pairs += 1
                if "uretprobe" in cats:
                    rpairs += 1
                if "app" in cats and not is_open and not before:
                    apairs += 1
    if print_counts:
        print(",".join("%s=%d" % (k, counts[k]) for k in EVENT_TYPES if counts[k]))
        return
    check_counts(counts, expect)
    # every slice ends (an open one would have dur -1 in trace processor)
    left = {u: s for u, s in stacks.items() if s}
    if left:
        bad.append("slices never ended on tracks %s" % list(left)[:5])
    result(not bad, "track event slices nest on every track (%d uprobe slices, %d app slices)" % (pairs, apairs),
           "; ".join(bad[:5]))
    if uprobe_slices is not None:
        result(pairs == uprobe_slices, "uprobe slices: %d" % uprobe_slices, "found %d" % pairs)
    if opt.get("uretprobe_slices") is not None:
        result(rpairs == opt["uretprobe_slices"], "slices of %%return-only probes: %d" % opt["uretprobe_slices"],
               "found %d" % rpairs)
    if opt.get("unmatched") is not None:
        result(unmatched == opt["unmatched"], "uprobe events flagged unmatched: %d" % opt["unmatched"],
               "found %d" % unmatched)
    if app_slices is not None:
        result(apairs == app_slices, "app slices: %d" % app_slices, "found %d" % apairs)
    if opt.get("func_slices") is not None:
        result(fpairs == opt["func_slices"], "function calls drawn: %d" % opt["func_slices"], "found %d" % fpairs)
    if opt.get("func_deep_markers") is not None:
        result(too_deep == opt["func_deep_markers"], "depth markers (calls below 511 levels): %d" %
               opt["func_deep_markers"], "found %d" % too_deep)
    if opt.get("func_open") is not None:
        result(fclosed + fexit == opt["func_open"],
               "calls open at the dump's end, closed there (or at their thread's exit): %d" % opt["func_open"],
               "found %d + %d at an exit" % (fclosed, fexit))
    if opt.get("begun_before") is not None:
        result(ebefore == opt["begun_before"], "calls and app slices drawn from the window's start: %d" %
               opt["begun_before"], "found %d" % ebefore)
    if opt.get("closed_at_exit") is not None:
        result(eclosed == opt["closed_at_exit"], "calls and app slices closed at their thread's exit: %d" %
               opt["closed_at_exit"], "found %d" % eclosed)
    # closed at a dead thread's last event: at an event of the thread (a
    # switch to or from it, its ftrace event, a BEGIN or instant on its
    # tracks, or an END there that is not one of these closings), and
    # nothing of the thread after it
    after = []
    if last_closed:
        dead = {tid for tid, _ in last_closed}
        moments = defaultdict(set)
        for sws in sched_switches(trace).values():
            for sw in sws:
                for tid in (sw[1], sw[4]) if len(sw) > 4 else ():
                    if tid in dead:
                        moments[tid].add(sw[0])
        for tid in dead:
            if tid in sched_last:
                moments[tid].add(sched_last[tid][1])
        closings = defaultdict(int)
        for tid, cts in last_closed:
            closings[(tid, cts)] += 1
        ends = defaultdict(int)
        for t, _, te in track_events:
            tid = (thread_of(tracks, one(te, "track_uuid")) or (0, 0))[1]
            if tid not in dead:
                continue
            if one(te, "type") == "TYPE_SLICE_END":
                ends[(tid, t)] += 1
            else:
                moments[tid].add(t)
        for (tid, t), n in ends.items():
            if n > closings.get((tid, t), 0):
                moments[tid].add(t)
        for tid, cts in set(last_closed):
            later = [t for t in moments[tid] if t > cts]
            if later:
                after.append("tid %s closed at %s, its event at %s" % (tid, cts, min(later)))
            elif cts not in moments[tid]:
                after.append("tid %s closed at %s, not at an event of it (last %s)" %
                             (tid, cts, max(moments[tid], default=None)))
    result(not after, "slices closed at a dead thread's last event: at one, none of its events after",
           "; ".join(after[:3]))
    if opt.get("closed_at_last") is not None:
        result(elast == opt["closed_at_last"], "calls and app slices closed at a dead thread's last event: %d" %
               opt["closed_at_last"], "found %d" % elast)
    result(not app_bad, "application events on their tracks", "; ".join(app_bad[:5]))
    if app_gaps is not None:
        result(app_loss == app_gaps, "a LOST instant per app per-thread seq gap (%d)" % app_gaps,
               "found %d" % app_loss)
        if info is not None and "loss.app_seq_gaps" in info:
            g = one(info["loss.app_seq_gaps"], "uint_value", 0)
            result(g == app_gaps, "dump info loss.app_seq_gaps = %d" % app_gaps, "found %s" % g)

    result(6 in clocks and 1 in clocks, "clock snapshot has BOOTTIME and REALTIME", str(clocks))
    result(uts is not None and one(uts, "sysname") == "Linux" and bool(one(uts, "release")),
           "system info has the kernel release", str(uts))
    result(info is not None and all(k in info for k in LOSS_KEYS), "dump info carries the loss counters",
           "missing: %s" % ([k for k in LOSS_KEYS if not info or k not in info]))
    result("START_OF_TRACE" in fstats and "END_OF_TRACE" in fstats, "FtraceStats at start and end",
           str(list(fstats)))
    if gaps is not None:
        result(loss_slices == gaps, "a LOST slice per seq gap (%d)" % gaps, "found %d" % loss_slices)
        if gaps:
            result(bool(lost_cpus), "bundles after gaps have lost_events", "none")
        if info is not None:
            g = one(info["loss.seq_gaps"], "uint_value", 0)
            result(g == gaps, "dump info loss.seq_gaps = %d" % gaps, "found %s" % g)


def thread_of(tracks, uuid, depth=0):
    """(pid, tid) of the thread a track belongs to, as trace_processor
    resolves it: its own ThreadDescriptor, else its parent's; None if the
    track is not a thread's."""
    td = tracks.get(uuid)
    if td is None or depth > 32:
        return None
    th = one(td, "thread")
    if th is not None:
        return (one(th, "pid"), one(th, "tid"))
    if one(td, "process") is not None:
        return None
    parent = one(td, "parent_uuid")
    return thread_of(tracks, parent, depth + 1) if parent else None


def check_track_tree(tracks, described):
    """trace_processor's rules for TrackDescriptors (TrackEventTracker):
    - a second thread descriptor for a tid (another uuid) is taken as tid
      reuse: the thread is split in two; the same for a second process
      descriptor of a pid (pid reuse);
    - a uuid described again must describe the same track (parent, pid, tid,
      counter), else the later one is an error;
    - a ThreadDescriptor needs pid and tid;
    - a parent must be described, and the hierarchy must have no cycle."""
    bad = []
    by_tid = defaultdict(set)
    by_pid = defaultdict(set)
    for uuid, tds in described.items():
        def key(td):
            th, pr = one(td, "thread"), one(td, "process")
            return (one(td, "parent_uuid"), th and (one(th, "pid"), one(th, "tid")), pr and one(pr, "pid"),
                    one(td, "counter") is not None)
        if len(set(key(td) for td in tds)) > 1:
            bad.append("track %s described twice as different tracks: %s" % (uuid, [key(td) for td in tds][:2]))
        td = tds[0]
        th = one(td, "thread")
        if th is not None:
            if one(th, "pid") is None or one(th, "tid") is None:
                bad.append("track %s: ThreadDescriptor without pid or tid" % uuid)
            by_tid[one(th, "tid")].add(uuid)
        pr = one(td, "process")
        if pr is not None and th is None:
            by_pid[one(pr, "pid")].add(uuid)
        parent, seen = one(td, "parent_uuid"), {uuid}
        while parent:
            if parent not in tracks:
                bad.append("track %s: parent %s not described" % (uuid, parent))
                break
            if parent in seen:
                bad.append("track %s: parent cycle" % uuid)
                break
            seen.add(parent)
            parent = one(tracks[parent], "parent_uuid")
    reuse = ["tid %s: %d thread descriptors" % (t, len(u)) for t, u in sorted(by_tid.items()) if len(u) > 1]
    reuse += ["pid %s: %d process descriptors" % (p, len(u)) for p, u in sorted(by_pid.items()) if len(u) > 1]
    result(not reuse, "one thread descriptor per tid, one process descriptor per pid (%d threads, %d processes; "
           "a second one is tid/pid reuse to the importer)" % (len(by_tid), len(by_pid)), "; ".join(reuse[:5]))
    result(not bad, "track descriptors form a valid tree (%d tracks)" % len(tracks), "; ".join(bad[:5]))


def sched_switches(trace):
    """Per CPU, the switches as the importer sees them: compact ones get
    prev_pid/prev_prio from the CPU's previous switch (none: skipped)."""
    per_cpu = defaultdict(list)
    for pk in trace.get("packet", []):
        for b in pk.get("ftrace_events", []):
            cpu = one(b, "cpu")
            for ev in b.get("event", []):
                sw = one(ev, "sched_switch")
                if sw is not None:
                    per_cpu[cpu].append((one(ev, "timestamp"), 1, (one(sw, "prev_pid"), one(sw, "prev_prio"),
                                         one(sw, "prev_state"), one(sw, "next_pid"), one(sw, "next_prio"))))
            cs = one(b, "compact_sched")
            if cs is not None:
                acc = 0
                for d, st, pid, prio in zip(cs.get("switch_timestamp", []), cs.get("switch_prev_state", []),
                                            cs.get("switch_next_pid", []), cs.get("switch_next_prio", [])):
                    acc += d
                    per_cpu[cpu].append((acc, 0, (st, pid, prio)))
    out = {}
    for cpu, evs in per_cpu.items():
        evs.sort(key=lambda e: (e[0], e[1]))  # the importer's order: by time
        last = None
        res = []
        for ts, full, data in evs:
            if full:
                res.append((ts,) + data)
                last = (data[3], data[4])
            else:
                st, pid, prio = data
                res.append((ts, last[0], last[1], st, pid, prio) if last else (ts, "skipped"))
                last = (pid, prio)
        out[cpu] = res
    return out


def check_switch_chain(trace):
    # trace_processor's mismatched_sched_switch_tids: a full switch whose
    # prev_pid is not the CPU's previous next_pid (an import error)
    bad = []
    n = 0
    for cpu, evs in sched_switches(trace).items():
        last = None
        for e in evs:
            if len(e) != 6:
                continue
            n += 1
            if last is not None and e[1] != last:
                bad.append("cpu %s at %s: prev_pid %s after next_pid %s" % (cpu, e[0], e[1], last))
            last = e[4]
    result(not bad, "every switch's prev_pid is its CPU's previous next_pid (%d switches)" % n,
           "; ".join(bad[:5]))


def check_counts(counts, expect):
    if expect is None:
        return
    bad = []
    for k in EVENT_TYPES:
        if counts.get(k, 0) != expect.get(k, 0):
            bad.append("%s: %d, dump has %d" % (k, counts.get(k, 0), expect.get(k, 0)))
    total = sum(expect.values())
    result(not bad, "event counts per type equal the dump's (%d events, %d types)" %
           (total, len([k for k in expect if expect[k]])), "; ".join(bad))


class Num(float):
    """A JSON number that keeps its text (the checks below read the digits)."""
    def __new__(cls, text):
        v = float.__new__(cls, text)
        v.text = text
        return v


def llround(x):
    return math.floor(x + 0.5) if x >= 0 else -math.floor(-x + 0.5)


def us_text_ns(t):
    """Exact ns of a microsecond text with at most 3 decimals, else None."""
    m = re.match(r"^(\d+)(?:\.(\d{1,3}))?$", t)
    return int(m.group(1)) * 1000 + int((m.group(2) or "").ljust(3, "0")) if m else None


def check_json_numbers(evs, samples):
    """Timestamps exact to the ns in the shortest form ("7000001", ".25", never
    ".000" or ".250"); a duration read by every kind of reader ends at the
    same place: trace processor at ts_ns + llround(dur * 1000); Chrome at
    ts + dur in doubles, and speedscope at (ts - base) + dur, base its
    thread's first ts (speedscope's import subtracts it): both that end's
    double only where dur is exactly b - a. In the shortest such text (of
    the exact short decimal, then 15 to 17 significant digits). Where b - a
    is not the duration to the ns (ts past 2^42 us, 51 days after boot) only
    Chrome's and trace processor's, in the shortest "%.kf"."""
    bad_ts, bad_dur, ndur = [], [], 0
    base = {}
    for e in evs:
        if "ts" in e and e.get("ph") in ("B", "E", "X"):
            k = (e.get("pid"), e.get("tid"))
            v = float(getattr(e["ts"], "text", None) or str(e["ts"]))
            base[k] = min(base.get(k, v), v)
    for e in list(evs) + list(samples):
        if "ts" not in e:
            continue
        t = getattr(e["ts"], "text", None) or str(e["ts"])
        ns = us_text_ns(t)
        if ns is None or re.search(r"\.\d*0$", t):
            bad_ts.append(t)
            continue
        if "dur" not in e:
            continue
        ndur += 1
        dt = getattr(e["dur"], "text", None) or str(e["dur"])
        x = float(dt)
        end_ns = ns + llround(x * 1000.0)
        a, b = ns / 1000.0, end_ns / 1000.0
        o = base.get((e.get("pid"), e.get("tid")), a)
        d = b - a
        f = (end_ns - ns) % 1000
        k0 = 0 if not f else 3 if f % 10 else 2 if f % 100 else 1
        if a + d == b and llround(d * 1000.0) == end_ns - ns:
            # b - a is the duration to the ns: it, exactly, for speedscope too
            if x != d or (a - o) + x != b - o:
                bad_dur.append("ts %s dur %s: not b - a (%r): speedscope ends at %r + base, not %r" %
                               (t, dt, d, (a - o) + x, b - o))
                continue
            cands = ["%.*f" % (k0, d)] + ["%.*g" % (k, d) for k in (15, 16, 17)]
            ok = lambda c: float(c) == d
        else:
            # ts past 2^42 us (doubles ~1 ns apart) or a slice longer than the
            # time since boot: Chrome's and trace processor's ends only, from
            # a text within half an ulp of b - a and half a ns of the duration
            # (none where those do not meet: trace processor's then)
            u = math.ulp(b)
            dn = (end_ns - ns) / 1000.0
            lo, hi = max(d - u / 2, dn - 0.0005), min(d + u / 2, dn + 0.0005)
            mid = (lo + hi) / 2
            ok = lambda c: a + float(c) == b and llround(float(c) * 1000.0) == end_ns - ns
            cands = ["%.*f" % (k, mid) for k in range(k0, 13)]
            if not any(ok(c) for c in cands):
                ok = lambda c: True
                cands = ["%.*f" % (k0, dn)]
            elif a + x != b:
                bad_dur.append("ts %s dur %s: Chrome ends at %r, trace processor at %d ns" % (t, dt, a + x, end_ns))
                continue
        for c in cands:
            if ok(c):
                if len(c) < len(dt):
                    bad_dur.append("ts %s dur %s: %s says the same" % (t, dt, c))
                break
    result(not bad_ts, "timestamps exact to the ns in the shortest form (%d)" % (len(evs) + len(samples)),
           ", ".join(bad_ts[:5]))
    result(not bad_dur, "durations end where every reader agrees, in the shortest text (%d)" % ndur,
           "; ".join(bad_dur[:3]))


def check_json_speedscope(doc):
    """speedscope's reading of the sampling members, replayed (its Chrome
    trace import, 1.25): where "samples" and "stackFrames" are there it
    draws them and none of the slices, so an empty list opened a blank page;
    per (pid, tid) in the list's order it weighs each sample by the time to
    the next (the last: 0; a negative weight aborts the import). So: no
    empty sampling members; per thread, times never go back; every thread
    with a sample ends on a weight-0 "not_sampled" (else its last sample,
    and a thread with one sample, counted nothing)."""
    if "samples" not in doc and "stackFrames" not in doc:
        result(True, "speedscope: no sampling members, the slices are drawn")
        return
    samples = doc.get("samples") or []
    result(bool(samples), "speedscope: the sampling members hold %d samples" % len(samples),
           "empty: speedscope opens a blank page")
    per = defaultdict(list)
    for smp in samples:
        per[(smp.get("pid"), smp.get("tid"))].append(smp)
    back, unclosed, kinds, short = [], [], defaultdict(int), []
    for k, lst in per.items():
        for a, b in zip(lst, lst[1:]):
            if float(b["ts"]) < float(a["ts"]):
                back.append("%s: %s then %s" % (k, a["ts"], b["ts"]))
            # an off-CPU block at its start: the thread's next sample (its
            # closer at the wakeup, or later) no sooner than its end
            if a.get("name") == "offcpu" and float(b["ts"]) < float(a["ts"]) + int(a["weight"]) - 1:
                short.append("%s: offcpu at %s for %s us, next at %s" % (k, a["ts"], a["weight"], b["ts"]))
        if lst[-1].get("name") != "not_sampled" or lst[-1].get("weight") != 0 or "sf" in lst[-1]:
            unclosed.append("%s ends on %s at %s" % (k, lst[-1].get("name"), lst[-1].get("ts")))
        for smp in lst:
            kinds[smp.get("name")] += 1
    result(not back, "speedscope: each thread's samples in time order (%d threads)" % len(per), "; ".join(back[:3]))
    result(not unclosed, "speedscope: each thread's samples end on a not_sampled of weight 0 (%d closers)" %
           kinds["not_sampled"], "; ".join(unclosed[:3]))
    result(not short, "speedscope: off-CPU blocks drawn from their start for their length (%d)" % kinds["offcpu"],
           "; ".join(short[:3]))


def check_json(path, expect, gaps, uprobe_slices, print_counts, app_slices=None, app_gaps=None, opt={}):
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    try:
        doc = json.loads(data.decode("utf-8"), parse_float=Num)
    except (ValueError, UnicodeDecodeError) as e:
        result(False, "the JSON parses", str(e))
        return
    evs = doc.get("traceEvents")
    result(isinstance(evs, list), "the JSON parses, traceEvents is a list (%d events)" % len(evs or []))
    if not isinstance(evs, list):
        return
    check_json_numbers(evs, doc.get("samples") or [])
    check_json_speedscope(doc)
    counts = defaultdict(int)
    tnames = {}
    pnames = {}
    used = set()
    loss = 0
    app_loss = 0
    app_stacks = defaultdict(list)  # (pid, tid) -> open B events
    app_pairs = 0
    app_bad = []
    cpu_runs = defaultdict(list)
    thread_slices = defaultdict(list)
    bad = []
    # trace_processor's JSON importer: a thread is (pid, tid); the same tid
    # under another pid starts a new thread (tid reuse), and a thread or
    # process has one name (a second "M" name replaces the first)
    tid_pids = defaultdict(set)
    name_clash = []
    for e in evs:
        ph = e.get("ph")
        for k in ("ph", "name", "pid"):
            if k not in e:
                bad.append("event without %s: %s" % (k, e))
        if "tid" in e and "pid" in e and (ph not in ("C", "M") or e["name"] == "thread_name"):
            tid_pids[e["tid"]].add(e["pid"])
        if ph == "M":
            if e["name"] == "thread_name":
                old = tnames.get(e["tid"])
                if old is not None and old != e["args"]["name"]:
                    name_clash.append("thread %s: %r and %r" % (e["tid"], old, e["args"]["name"]))
                tnames[e["tid"]] = e["args"]["name"]
            elif e["name"] == "process_name":
                old = pnames.get(e["pid"])
                if old is not None and old != e["args"]["name"]:
                    name_clash.append("process %s: %r and %r" % (e["pid"], old, e["args"]["name"]))
                pnames[e["pid"]] = e["args"]["name"]
            continue
        if "ts" not in e or not isinstance(e["ts"], (int, float)):
            bad.append("event without a numeric ts: %s" % e)
            continue
        for c in (e.get("cat") or "").split(","):
            if c in EVENT_TYPES:
                counts[c] += 1
        if e.get("cat") == "btrace_loss":
            loss += 1
        if e.get("cat") == "btrace_app_loss":
            app_loss += 1
        if ph in ("B", "E"):
            key = (e["pid"], e.get("tid"))
            if ph == "B":
                app_stacks[key].append(e)
            elif not app_stacks[key]:
                app_bad.append("E without B: %s" % e)
            else:
                b = app_stacks[key].pop()
                app_pairs += 1
                if b["ts"] > e["ts"] or b["name"] != e["name"]:
                    app_bad.append("E %s closes B %s" % (e, b))
        if "tid" in e and ph != "C":
            used.add(e["tid"])
        if ph == "X":
            if e.get("dur", -1) < 0:
                bad.append("X without dur: %s" % e)
            if e["pid"] == CPU_PID and e["tid"] < CPU_PID + 0x2000:
                cpu_runs[e["tid"]].append((e["ts"], e["ts"] + e["dur"]))
            elif e["pid"] != CPU_PID:
                thread_slices[e["tid"]].append((e["ts"], -e["dur"], e["name"]))
    result(not bad, "every event has ph, name, pid, ts", "; ".join(str(b) for b in bad[:3]))
    result(not name_clash, "one name per thread and per process (%d threads)" % len(tnames),
           "; ".join(name_clash[:5]))
    split = sorted("tid %s under pids %s" % (t, sorted(p)) for t, p in tid_pids.items() if len(p) > 1)
    result(not split, "every tid under one pid (the importer splits a tid seen under two)", "; ".join(split[:5]))
    unnamed = sorted(t for t in used if not tnames.get(t) and t != 0)
    result(not unnamed, "every thread has a thread_name (%d threads)" % len(used), "unnamed: %s" % unnamed[:20])
    overlap = []
    # ts + dur added in floating point, as Chrome, speedscope and trace
    # processor do: a run that ends where the next begins must not end an
    # ulp after it (drawn as a staircase)
    eps = 5e-4
    for tid, runs in cpu_runs.items():
        runs.sort()
        for (a0, a1), (b0, b1) in zip(runs, runs[1:]):
            if b0 < a1:
                overlap.append("cpu track %d: run at %s starts before %s" % (tid - CPU_PID, b0, a1))
    result(not overlap, "CPU run slices never overlap (%d CPUs)" % len(cpu_runs), "; ".join(overlap[:5]))
    nest = []
    for tid, sl in thread_slices.items():
        sl.sort()
        stack = []
        for ts, ndur, name in sl:
            end = ts - ndur
            while stack and stack[-1][0] <= ts + eps:
                stack.pop()
            if stack and end > stack[-1][0] + eps:
                nest.append("tid %d: %s [%s, %s] overlaps %s ending %s" % (tid, name, ts, end, stack[-1][1],
                                                                            stack[-1][0]))
            stack.append((end, name))
    result(not nest, "slices nest on every thread (%d threads)" % len(thread_slices), "; ".join(nest[:5]))
    if uprobe_slices is not None:
        n = sum(1 for e in evs if e.get("cat") == "uprobe,uretprobe")
        result(n == uprobe_slices, "uprobe slices: %d" % uprobe_slices, "found %d" % n)
    if opt.get("uretprobe_slices") is not None:
        n = sum(1 for e in evs if e.get("cat") == "uretprobe" and e.get("ph") == "X")
        result(n == opt["uretprobe_slices"], "slices of %%return-only probes: %d" % opt["uretprobe_slices"],
               "found %d" % n)
    if opt.get("func_slices") is not None:
        n = sum(1 for e in evs if e.get("cat") == "func_entry,func_exit" and e.get("ph") == "X")
        result(n == opt["func_slices"], "function calls drawn: %d" % opt["func_slices"], "found %d" % n)
    if opt.get("func_deep_markers") is not None:
        result(too_deep == opt["func_deep_markers"], "depth markers (calls below 511 levels): %d" %
               opt["func_deep_markers"], "found %d" % too_deep)
    if opt.get("func_open") is not None:
        fo = [e for e in evs if e.get("cat") == "func_entry" and e.get("ph") == "X"]
        end = max((e["ts"] + e.get("dur", 0) for e in evs if "ts" in e and e.get("ph") != "M"), default=0)
        # open at the dump's end: lasting to it; or closed at the thread's exit
        ok = all(((e.get("args") or {}).get("open_at_dump_end") and e["ts"] + e["dur"] >= end - 1e-3) or
                 (e.get("args") or {}).get("closed_at_thread_exit") or
                 (e.get("args") or {}).get("closed_at_thread_last_event") for e in fo)
        result(len(fo) == opt["func_open"] and ok,
               "calls open at the dump's end, lasting to it: %d" % opt["func_open"],
               "found %d: %s" % (len(fo), fo[:2]))
    # calls and slices open at the window's start: from it (no event of the
    # thread before it); closed at a thread's exit: end at its exit instant
    first = min((e["ts"] for e in evs if e.get("ph") not in ("M", None) and "ts" in e and e.get("pid") != CPU_PID),
                default=0)
    tid_exits = defaultdict(set)
    for e in evs:
        if e.get("cat") == "sched_process_exit":
            tid_exits[e.get("tid")].add(e["ts"])
    before = [e for e in evs if (e.get("args") or {}).get("begun_before_window")]
    wrong = [e for e in before if e.get("ph") != "X" or e["ts"] > first]
    atexit = [e for e in evs if (e.get("args") or {}).get("closed_at_thread_exit")]
    wrong += [e for e in atexit if e.get("ph") != "X" or
              not any(abs(e["ts"] + e["dur"] - t) < 1e-3 for t in tid_exits.get(e.get("tid"), ()))]
    result(not wrong, "slices begun before the window start at it, those closed at a thread's exit end there",
           "; ".join(str(e) for e in wrong[:3]))
    # closed at the last event of a thread that died without its exit in
    # the dump: they end exactly at the thread's last moment in the trace
    # (its own events, and its runs on the CPU tracks)
    atlast = [e for e in evs if (e.get("args") or {}).get("closed_at_thread_last_event")]
    tid_last = defaultdict(float)
    for e in evs:
        a = e.get("args") or {}
        if e.get("ph") in ("M", None) or "ts" not in e or a.get("closed_at_thread_last_event"):
            continue
        tid = a.get("tid") if e.get("pid") == CPU_PID else e.get("tid")
        if tid is not None:
            tid_last[tid] = max(tid_last[tid], e["ts"] + (e.get("dur", 0) if e.get("ph") == "X" else 0))
    late = [e for e in atlast if e.get("ph") != "X" or abs(e["ts"] + e["dur"] - tid_last[e.get("tid")]) > 1e-3]
    result(not late, "slices closed at a dead thread's last event end there, none of its events after",
           "; ".join(str(e) for e in late[:3]))
    if opt.get("closed_at_last") is not None:
        result(len(atlast) == opt["closed_at_last"], "calls and app slices closed at a dead thread's last event: %d" %
               opt["closed_at_last"], "found %d" % len(atlast))
    if opt.get("begun_before") is not None:
        result(len(before) == opt["begun_before"], "calls and app slices drawn from the window's start: %d" %
               opt["begun_before"], "found %d" % len(before))
    if opt.get("closed_at_exit") is not None:
        result(len(atexit) == opt["closed_at_exit"], "calls and app slices closed at their thread's exit: %d" %
               opt["closed_at_exit"], "found %d" % len(atexit))
    if opt.get("unmatched") is not None:
        n = sum(1 for e in evs if e.get("cat") in ("uprobe", "uretprobe") and (e.get("args") or {}).get("unmatched"))
        result(n == opt["unmatched"], "uprobe events flagged unmatched: %d" % opt["unmatched"], "found %d" % n)
    for key, st in app_stacks.items():
        app_bad += ["B never ended: %s" % b for b in st]
    result(not app_bad, "application B/E match per thread (%d pairs)" % app_pairs, "; ".join(app_bad[:5]))
    if app_slices is not None:
        result(app_pairs == app_slices, "app slices: %d" % app_slices, "found %d" % app_pairs)
    md = doc.get("metadata", {})
    if app_gaps is not None:
        result(app_loss == app_gaps, "a btrace_app_loss instant per app per-thread seq gap (%d)" % app_gaps,
               "found %d" % app_loss)
        if "loss.app_seq_gaps" in md:
            result(md["loss.app_seq_gaps"] == app_gaps, "metadata loss.app_seq_gaps = %d" % app_gaps,
                   "found %s" % md["loss.app_seq_gaps"])
    result(all(k in md for k in LOSS_KEYS), "metadata carries the loss counters",
           "missing: %s" % [k for k in LOSS_KEYS if k not in md])
    if gaps is not None:
        result(loss == gaps, "a btrace_loss slice per seq gap (%d)" % gaps, "found %d" % loss)
        result(md.get("loss.seq_gaps") == gaps, "metadata loss.seq_gaps = %d" % gaps,
               "found %s" % md.get("loss.seq_gaps"))


def check_perfetto_triggers(trace, n):
    tracks, on_global, on_thread, bad = {}, 0, 0, []
    for pk in trace.get("packet", []):
        for td in pk.get("track_descriptor", []):
            tracks[one(td, "uuid")] = td
    for pk in trace.get("packet", []):
        for te in pk.get("track_event", []):
            name = one(te, "name", "")
            if not name.startswith("trigger ") or one(te, "type") != "TYPE_INSTANT":
                continue
            td = tracks.get(one(te, "track_uuid"), {})
            ann = {one(a, "name"): a for a in te.get("debug_annotations", [])}
            if one(td, "name") == "btrace-bpf: triggers":
                on_global += 1
            elif one(td, "name") == "trigger" and one(tracks.get(one(td, "parent_uuid"), {}), "thread") is not None:
                # a child track of the thread's own (one descriptor per tid)
                tid = one(one(tracks[one(td, "parent_uuid")], "thread"), "tid")
                if "tid" in ann and one(ann["tid"], "uint_value") != tid:
                    bad.append("instant of tid %s on the track of tid %s" % (one(ann["tid"], "uint_value"), tid))
                on_thread += 1
            else:
                bad.append("trigger instant on track %s" % one(td, "name"))
            for k in ("trigger", "condition", "value"):
                if k not in ann:
                    bad.append("trigger instant without %s" % k)
    result(on_global == n and on_thread == n and not bad,
           "trigger instants: %d on the triggers track and %d on the thread" % (n, n),
           "found %d and %d; %s" % (on_global, on_thread, "; ".join(bad[:3])))


def check_json_stacks(path, nsamples, nlost=None, noffcpu=None):
    """The sampling members (catapult's and speedscope's): every sample names
    a frame of stackFrames whose parents resolve without a cycle; the CPU
    samples (and off-CPU blocks) as many as the dump has; lost stacks under a
    labelled root."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    doc = json.loads(data.decode("utf-8"))
    frames, samples = doc.get("stackFrames", {}), doc.get("samples", [])
    bad, roots = [], {}

    def root_of(sf):
        seen = set()
        k = str(sf)
        while k in frames and "parent" in frames[k]:
            if k in seen:
                return None
            seen.add(k)
            k = frames[k]["parent"]
        return frames[k]["name"] if k in frames else None
    counts = defaultdict(int)
    for smp in samples:
        counts[smp.get("name")] += 1
        if smp.get("name") == "not_sampled":  # speedscope's closer: no stack (check_json_speedscope)
            continue
        r = root_of(smp.get("sf"))
        if r is None:
            bad.append("sample at %s: frame %s unresolved" % (smp.get("ts"), smp.get("sf")))
        elif smp.get("name") == "cpu_sample" and r in LABELS:
            counts["lost"] += 1
    result(not bad, "json stacks: every sample's frame and its parents resolve (%d frames)" % len(frames),
           "; ".join(bad[:3]))
    result(counts["cpu_sample"] == nsamples, "json stacks: %d CPU samples (want %d)" % (counts["cpu_sample"], nsamples))
    if noffcpu is not None:
        result(counts["offcpu"] == noffcpu, "json stacks: %d off-CPU blocks" % noffcpu, "found %d" % counts["offcpu"])
    if nlost is not None:
        result(counts["lost"] == nlost, "json stacks: %d samples under a lost-stack label" % nlost,
               "found %d" % counts["lost"])


def check_json_triggers(path, n):
    with open(path) as f:
        doc = json.load(f)
    evs = [e for e in doc.get("traceEvents", []) if e.get("cat") == "btrace_trigger"]
    names = {(e.get("pid"), e.get("tid")): e.get("args", {}).get("name") for e in doc.get("traceEvents", [])
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    glob = [e for e in evs if names.get((e.get("pid"), e.get("tid"))) == "triggers"]
    thr = [e for e in evs if e not in glob and e.get("tid") == e.get("args", {}).get("tid")]
    md = doc.get("metadata", {}).get("trigger")
    result(len(glob) == n and len(thr) == n and len(evs) == 2 * n and (md is not None) == (n > 0),
           "trigger instants: %d on the triggers thread, %d on the thread, metadata.trigger" % (n, n),
           "found %d, %d of %d; metadata %s" % (len(glob), len(thr), len(evs), md))


LABELS = ("[stack lost]", "[no stack]")
SYM_VERSION = re.compile(r"@@?[A-Z][A-Za-z0-9_.]*$")


def check_perfetto_stacks(trace, nsamples, func=None, offcpu_func=None, src_line=None, inlined=None, nlost=None,
                          chart_before=None):
    packets = trace.get("packet", [])
    names, frames, stacks, maps, srcs = {}, {}, {}, set(), {}
    mpaths, kmaps = {}, []
    hex_ids = []
    cleared = set()
    samples = bad = labelled = 0
    why = []
    sampled = []  # (ts, tid, seq, callstack iid) of each CPU sample
    for pk in packets:
        seq = one(pk, "trusted_packet_sequence_id", 0)
        flags = one(pk, "sequence_flags", 0)
        if flags & 1:
            cleared.add(seq)
            names.setdefault(seq, {}), frames.setdefault(seq, {}), stacks.setdefault(seq, {})
            srcs.setdefault(seq, {})
        for idata in pk.get("interned_data", []):
            if seq not in cleared:
                bad += 1
                why.append("interned data before the sequence was cleared")
            for fn in idata.get("function_names", []):
                names[seq][one(fn, "iid")] = one(fn, "str", "")
            for sp in idata.get("source_paths", []):
                srcs[seq][one(sp, "iid")] = one(sp, "str", "")
            for b in idata.get("build_ids", []):
                # trace processor reads them as the note's raw bytes
                if re.fullmatch("[0-9a-fA-F]{16,}", one(b, "str", "")):
                    hex_ids.append(one(b, "str", ""))
            for mp in idata.get("mapping_paths", []):
                mpaths[(seq, one(mp, "iid"))] = one(mp, "str", "")
            for m in idata.get("mappings", []):
                maps.add((seq, one(m, "iid")))
                kmaps.append((seq, m))
            for fr in idata.get("frames", []):
                frames[seq][one(fr, "iid")] = (one(fr, "function_name_id"), one(fr, "mapping_id"), one(fr, "rel_pc"),
                                               one(fr, "source_path_iid"), one(fr, "line_number", 0))
            for cs in idata.get("callstacks", []):
                stacks[seq][one(cs, "iid")] = cs.get("frame_ids", [])
        for ps in pk.get("perf_sample", []):
            samples += 1
            iid = one(ps, "callstack_iid")
            sampled.append((one(pk, "timestamp", 0), one(ps, "tid", 0), seq, iid))
            fids = stacks.get(seq, {}).get(iid) or [None]
            fr = frames.get(seq, {}).get(fids[0])
            labelled += fr is not None and names[seq].get(fr[0]) in LABELS
            if not flags & 2 or seq not in cleared or iid not in stacks.get(seq, {}):
                bad += 1
                why.append("sample of callstack %s not interned on sequence %s" % (iid, seq))
    empty = [(seq, iid) for seq, st in stacks.items() for iid, fids in st.items() if not fids]
    # the importer counts an empty callstack as an error and drops its samples
    result(not empty, "stacks: no empty callstack", str(empty[:5]))
    # the importer keeps one frame per (mapping, rel_pc, name): the first
    # one's source line wins, so frames merged so must agree on it
    merged, clash = {}, []
    for seq, fr in frames.items():
        for fid, (nm, mp, pc, sp, ln) in fr.items():
            key = (seq, mp, pc, names[seq].get(nm))
            line = (srcs[seq].get(sp), ln)
            if merged.setdefault(key, line) != line:
                clash.append("%s at %s+%#x: %s and %s" % (key[3], mp, pc or 0, merged[key], line))
    result(not clash, "stacks: frames the importer merges by (mapping, rel_pc, name) carry one source line",
           "; ".join(clash[:3]))
    versioned = sorted(set(v for n in names.values() for v in n.values() if SYM_VERSION.search(v)))
    result(not versioned, "stacks: function names without a symbol version (@@GLIBC_...)", str(versioned[:5]))
    for seq, st in stacks.items():
        for iid, fids in st.items():
            for fid in fids:
                fr = frames[seq].get(fid)
                if fr is None or fr[0] not in names[seq] or (seq, fr[1]) not in maps:
                    bad += 1
                    why.append("callstack %s: frame %s, its name or mapping not interned" % (iid, fid))
                elif fr[3] is not None and fr[3] not in srcs[seq]:
                    # trace processor drops the frame, and so the callstack
                    bad += 1
                    why.append("callstack %s: frame %s: source path %s not interned" % (iid, fid, fr[3]))
    result(bad == 0, "stacks: every sample's callstack, frame, name, mapping and source path interned",
           "; ".join(why[:5]))
    result(not hex_ids, "stacks: build ids as raw bytes, not hex text", "; ".join(hex_ids[:3]))
    # the importer takes a mapping as the kernel's only as its own profiler
    # writes it (IsMagicalKernelMapping): path "kernel", 0..0, no build id
    odd = []
    for seq, m in kmaps:
        path = "/".join(mpaths.get((seq, i), "?") for i in m.get("path_string_ids", []))
        if "kernel" in path or "kallsyms" in path:
            if path != "kernel" or one(m, "start", 0) or one(m, "end", 0) or one(m, "build_id", 0):
                odd.append("%s %s..%s" % (path, one(m, "start", 0), one(m, "end", 0)))
    result(not odd, "stacks: the kernel's mapping is the one trace_processor takes as the kernel", "; ".join(odd[:3]))
    result(samples == nsamples, "stacks: %d CPU samples, each with a callstack (want %d)" % (samples, nsamples))
    if nlost is not None:
        result(labelled == nlost, "stacks: %d samples whose stack is lost or missing, labelled %s" % (nlost, LABELS),
               "found %d" % labelled)
    # call chart and off-CPU tracks
    tracks, tds = {}, {}
    for pk in packets:
        for td in pk.get("track_descriptor", []):
            tracks[one(td, "uuid")] = one(td, "name", "")
            tds[one(td, "uuid")] = td
    evs = []
    for idx, pk in enumerate(packets):
        for te in pk.get("track_event", []):
            evs.append((one(pk, "timestamp", 0), idx, te))
    evs.sort(key=lambda e: (e[0], e[1]))
    depth, chart_names, offcpu_names, nest_bad = defaultdict(int), set(), set(), []
    before, seen = 0, set()
    for ts, _, te in evs:
        tn = tracks.get(one(te, "track_uuid"), "")
        t = one(te, "type")
        if tn == "call chart (samples)":
            u = one(te, "track_uuid")
            # frames of a thread's first sample drawn from the window's
            # start: before anything else on the thread's chart
            if any(one(a, "name") == "begun_before_window" for a in te.get("debug_annotations", [])):
                before += 1
                if u in seen and depth[u] == 0:
                    nest_bad.append("chart slice begun before the window at %d after other slices of %x" % (ts, u))
            seen.add(u)
            if t == "TYPE_SLICE_BEGIN":
                depth[u] += 1
                chart_names.add(one(te, "name", ""))
            elif t == "TYPE_SLICE_END":
                depth[u] -= 1
                if depth[u] < 0:
                    nest_bad.append("end without begin on %x at %d" % (u, ts))
        elif tn == "off-CPU (stacks)" and t == "TYPE_SLICE_BEGIN":
            offcpu_names.add(one(te, "name", ""))
    open_left = [u for u, d in depth.items() if d]
    if chart_before is not None:
        result(before == chart_before, "stacks: %d call chart frames drawn from the window's start" % chart_before,
               "found %d" % before)
    check_chart_vs_samples(evs, tracks, tds, sampled, stacks, frames, names)
    result(not nest_bad and not open_left and (nsamples == 0 or chart_names),
           "stacks: call chart slices nest and all end (%d names)" % len(chart_names),
           "; ".join(nest_bad[:3]) + (" open at the end: %d tracks" % len(open_left) if open_left else ""))
    if func:
        in_stack = any(v == func for n in names.values() for v in n.values())
        result(in_stack and func in chart_names, "stacks: %s in a callstack and in the call chart" % func)
    if offcpu_func:
        result("blocked in " + offcpu_func in offcpu_names, "stacks: off-CPU slice blocked in %s" % offcpu_func,
               ", ".join(sorted(offcpu_names)[:10]))
    # frames of the sampled callstacks, bottom first: (name, path, line, inlined)
    used = []
    for seq, st in stacks.items():
        for fids in st.values():
            below = None
            for fid in fids:
                fr = frames[seq].get(fid)
                if fr is None:
                    continue
                inl = below is not None and below[1:3] == fr[1:3] and below[0] != fr[0]
                used.append((names[seq].get(fr[0], ""), srcs[seq].get(fr[3], ""), fr[4], inl))
                below = fr
    hint = "" if srcs_declared(trace) else " (the trace interns no source path)"
    for sl in src_line or []:
        fn, _, fname = sl.partition(":")
        seen = sorted(set("%s:%s" % (p, l) for n, p, l, _ in used if n == fn))
        result(any(n == fn and l > 0 and os.path.basename(p) == fname for n, p, l, _ in used),
               "stacks: a frame of %s at a line of %s" % (fn, fname), "%s at %s%s" % (fn, seen[:5], hint))
    for fn in inlined or []:
        frs = [i for n, _, _, i in used if n == fn]
        result(any(frs) and fn in chart_names, "stacks: %s inlined in a callstack and in the call chart" % fn,
               "%d frames named so, %d inlined; in the call chart: %s%s" %
               (len(frs), sum(frs), fn in chart_names, hint))


def check_chart_vs_samples(evs, tracks, tds, sampled, stacks, frames, names):
    """The call chart is drawn from the samples: right after a thread's
    sample, the chart slices open on its track are the sample's callstack,
    bottom first, name for name (an unnamed frame "[unknown] (PATH)" where
    the flame graph names it "[unknown]"; a label such as "[stack lost]" as
    the flame graph has it; past 511 levels the last is "[deeper frames]")."""
    chart_tid = {}
    for u, n in tracks.items():
        if n == "call chart (samples)":
            th = thread_of(tds, u)
            if th:
                chart_tid[u] = th[1]
    by_ts = defaultdict(list)
    for ts, tid, seq, iid in sampled:
        by_ts[ts].append((tid, seq, iid))
    open_, bad, checked, i = defaultdict(list), [], 0, 0
    for ts in sorted(by_ts):
        while i < len(evs) and evs[i][0] <= ts:
            te = evs[i][2]
            u = one(te, "track_uuid")
            if u in chart_tid:
                if one(te, "type") == "TYPE_SLICE_BEGIN":
                    open_[chart_tid[u]].append(one(te, "name", ""))
                elif one(te, "type") == "TYPE_SLICE_END" and open_[chart_tid[u]]:
                    open_[chart_tid[u]].pop()
            i += 1
        for tid, seq, iid in by_ts[ts]:
            want = [names.get(seq, {}).get(frames.get(seq, {}).get(f, (None,))[0], "?")
                    for f in stacks.get(seq, {}).get(iid, [])]
            if len(want) > 511:
                want = want[:510] + ["[deeper frames]"]
            got = open_[tid]
            checked += 1
            if len(got) != len(want) or any(g != w and not (w == "[unknown]" and g.startswith("[unknown] ("))
                                            for g, w in zip(got, want)):
                bad.append("tid %d at %d: chart %s, sample %s" % (tid, ts, [g[:40] for g in got[-4:]],
                                                                 [w[:40] for w in want[-4:]]))
    result(not bad, "stacks: the call chart at each of %d samples is the sample's callstack" % checked,
           "%d differ; %s" % (len(bad), "; ".join(bad[:3])))


def srcs_declared(trace):
    return any(idata.get("source_paths") for pk in trace.get("packet", []) for idata in pk.get("interned_data", []))


def main(argv):
    if len(argv) >= 3 and argv[1] == "text":
        text = resolved_text(argv[2], argv[4] if len(argv) > 4 and argv[3] == "--proto" else
                             "tests/perfetto/perfetto_subset.proto")
        if text is None:
            return 1
        sys.stdout.write(text)
        return 0
    if len(argv) < 3 or argv[1] not in ("perfetto", "json"):
        print(__doc__)
        return 2
    fmt, path = argv[1], argv[2]
    proto = "tests/perfetto/perfetto_subset.proto"
    expect = gaps = uprobe_slices = same = app_slices = app_gaps = triggers = None
    print_counts = False
    opt = {}
    nstacks = stack_func = offcpu_func = None
    src_line, inlined = [], []
    i = 3
    while i < len(argv):
        a = argv[i]
        if a == "--proto":
            proto = argv[i + 1]
            i += 2
        elif a == "--expect":
            expect = {}
            for kv in filter(None, argv[i + 1].split(",")):
                k, _, v = kv.partition("=")
                expect[k] = int(v)
            i += 2
        elif a == "--gaps":
            gaps = int(argv[i + 1])
            i += 2
        elif a == "--uprobe-slices":
            uprobe_slices = int(argv[i + 1])
            i += 2
        elif a == "--app-slices":
            app_slices = int(argv[i + 1])
            i += 2
        elif a == "--app-gaps":
            app_gaps = int(argv[i + 1])
            i += 2
        elif a == "--triggers":
            triggers = int(argv[i + 1])
            i += 2
        elif a == "--same-sched-as":
            same = argv[i + 1]
            i += 2
        elif a in ("--uretprobe-slices", "--unmatched", "--func-slices", "--func-open", "--func-deep-markers",
                   "--stacks-lost", "--offcpu-blocks", "--begun-before", "--closed-at-exit",
                   "--closed-at-last", "--chart-begun-before"):
            opt[a[2:].replace("-", "_")] = int(argv[i + 1])
            i += 2
        elif a == "--stacks":
            nstacks = int(argv[i + 1])
            i += 2
        elif a == "--stack-func":
            stack_func = argv[i + 1]
            i += 2
        elif a == "--offcpu-func":
            offcpu_func = argv[i + 1]
            i += 2
        elif a == "--src-line":
            src_line.append(argv[i + 1])
            i += 2
        elif a == "--inlined":
            inlined.append(argv[i + 1])
            i += 2
        elif a == "--counts":
            print_counts = True
            i += 1
        elif a == "--switch-chain":
            opt["switch_chain"] = True
            i += 1
        elif a == "--tree-tids":
            opt["tree_tids"] = sorted(int(t) for t in argv[i + 1].split(","))
            i += 2
        else:
            print("unknown option %s" % a)
            return 2
    if fmt == "perfetto":
        trace = decode_perfetto(path, proto)
        if trace is not None:
            check_perfetto(trace, expect, gaps, uprobe_slices, print_counts, app_slices, app_gaps, opt)
            if same:
                check_same_sched(trace, same, proto)
            if opt.get("switch_chain"):
                check_switch_chain(trace)
            if opt.get("tree_tids") is not None:
                tids = sorted(one(t, "tid") for pk in trace.get("packet", []) for pt in pk.get("process_tree", [])
                              for t in pt.get("threads", []))
                result(tids == opt["tree_tids"], "the ProcessTree lists only threads %s" % opt["tree_tids"],
                       "found %s" % tids[:20])
            if triggers is not None:
                check_perfetto_triggers(trace, triggers)
            if nstacks is not None:
                check_perfetto_stacks(trace, nstacks, stack_func, offcpu_func, src_line, inlined, opt.get("stacks_lost"),
                                      opt.get("chart_begun_before"))
    else:
        check_json(path, expect, gaps, uprobe_slices, print_counts, app_slices, app_gaps, opt)
        if nstacks is not None:
            check_json_stacks(path, nstacks, opt.get("stacks_lost"), opt.get("offcpu_blocks"))
        if triggers is not None:
            check_json_triggers(path, triggers)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
