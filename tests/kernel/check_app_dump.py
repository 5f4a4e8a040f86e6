#!/usr/bin/env python3
"""Check the application events of a dump (from `btrace-bpf report` text).

usage: check_app_dump.py REPORT_TXT THREADS EVENTS [--exact|--suffix]

Each app_stress thread t writes stamp(t, i, check) for i = 0..EVENTS-1.
--exact: every stamp present exactly once, in per-thread order by time,
         with the right check value, and as many batch slices/counters.
--suffix: (the buffer was overwritten) per thread, what is retained is
         untorn, unique and in order; prints how many were retained.
Exit 0 if all checks pass; prints the first problems otherwise.
"""
import re
import sys

STAMP = re.compile(r"-(\d+)\s+\[(\d+)\]\s+([\d.]+): app_instant: stamp arg1=(-?\d+) arg2=(-?\d+) arg3=(-?\d+)")


def main():
    path, nthreads, nevents = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    mode = sys.argv[4] if len(sys.argv) > 4 else "--exact"
    per = {}
    tids = {}
    errors = []
    begins = ends = counters = 0
    with open(path) as f:
        for line in f:
            if "app_" not in line:
                continue
            if "app_begin: batch" in line:
                begins += 1
            elif "app_end:" in line:
                ends += 1
            elif "app_counter: progress" in line:
                counters += 1
            m = STAMP.search(line)
            if not m:
                continue
            tid, t, i, chk = int(m.group(1)), int(m.group(4)), int(m.group(5)), int(m.group(6))
            want = ((i * 2654435761) & 0xFFFFFFFFFFFFFFFF) ^ t
            if want >= 1 << 63:
                want -= 1 << 64
            if chk != want or not 0 <= t < nthreads or not 0 <= i < nevents:
                errors.append("torn or foreign stamp: " + line.strip())
                continue
            if tids.setdefault(t, tid) != tid:
                errors.append("thread %d seen with two tids" % t)
            per.setdefault(t, []).append(i)
    total = 0
    for t in range(nthreads):
        seq = per.get(t, [])
        total += len(seq)
        if len(set(seq)) != len(seq):
            errors.append("thread %d: duplicate stamps" % t)
        if seq != sorted(seq):
            errors.append("thread %d: stamps out of order in time" % t)
        if mode == "--exact" and seq != list(range(nevents)):
            missing = sorted(set(range(nevents)) - set(seq))
            errors.append("thread %d: %d of %d stamps (first missing %s)" % (t, len(seq), nevents, missing[:3]))
    if mode == "--exact":
        slices = nthreads * ((nevents + 15) // 16)
        if (begins, ends, counters) != (slices, slices, slices):
            errors.append("slices/counters %d/%d/%d, expected %d each" % (begins, ends, counters, slices))
    print("stamps %d of %d (%d threads), begin %d end %d counter %d" % (total, nthreads * nevents, len(per), begins,
                                                                          ends, counters))
    for e in errors[:10]:
        print("ERROR:", e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
