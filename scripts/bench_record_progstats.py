#!/usr/bin/env python3
"""bench_record_progstats.py - per-program run counts and run time of the BPF
programs held by some processes (helper of scripts/bench_record.sh).

    bench_record_progstats.py PID...

Reads /proc/PID/fdinfo of every bpf-prog file descriptor of each PID (the
kernel fills run_cnt and run_time_ns while the sysctl
kernel.bpf_stats_enabled is 1) and names the programs with
`bpftool prog show -j`. Prints one line per program:

    PID TRACEPOINT RUN_CNT RUN_TIME_NS NAME

TRACEPOINT is the name with the recorder's "handle_" or the floor's
"empty_GROUP__" prefix taken off, so the two can be joined.
"""
import json
import os
import re
import subprocess
import sys


def prog_names():
    try:
        out = subprocess.run(["bpftool", "prog", "show", "-j"], capture_output=True,
                             text=True, check=True).stdout
        return {p["id"]: p.get("name", "?") for p in json.loads(out)}
    except (OSError, subprocess.CalledProcessError, ValueError):
        return {}


def tracepoint(name):
    m = re.match(r"empty_[a-z]+__(.+)$", name)
    if m:
        return m.group(1)
    if name.startswith("handle_"):
        return name[len("handle_"):]
    return name


def main(pids):
    names = prog_names()
    for pid in pids:
        fddir = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(fddir)
        except OSError as e:
            print(f"bench_record_progstats: {fddir}: {e.strerror}", file=sys.stderr)
            continue
        for fd in fds:
            try:
                if os.readlink(f"{fddir}/{fd}") != "anon_inode:bpf-prog":
                    continue
                with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                    info = dict(line.split(":", 1) for line in f if ":" in line)
            except OSError:
                continue
            prog_id = int(info.get("prog_id", "0").strip() or 0)
            cnt = int(info.get("run_cnt", "0").strip() or 0)
            ns = int(info.get("run_time_ns", "0").strip() or 0)
            name = names.get(prog_id, f"id{prog_id}")
            print(pid, tracepoint(name), cnt, ns, name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
