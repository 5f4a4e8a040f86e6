#!/usr/bin/env python3
"""check_trigger_latency.py CTL DIR NAME N BOUND_S - fire `ctl trigger NAME`
N times, one after the other; after each, wait for the dump file to appear
in DIR (files are renamed into place whole) and take, from the dump's
`report --stats`, when the dump was asked for (the hit's delay over). The
trigger-to-file latency is the file's appearance (CLOCK_BOOTTIME, polled
every 2 ms) minus that. Prints one line per dump and the median and
maximum; exits 1 if any dump took longer than BOUND_S or never came.
$BTRACE_BPF is the tool (default build/btrace-bpf)."""
import os
import re
import subprocess
import sys
import time


def boottime():
    return time.clock_gettime(time.CLOCK_BOOTTIME)


def dumps(d):
    return {f for f in os.listdir(d) if f.endswith(".btd")} if os.path.isdir(d) else set()


def main():
    ctl, d, name, n, bound = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
    tool = os.environ.get("BTRACE_BPF", "build/btrace-bpf")
    lat, bad = [], 0
    for i in range(n):
        before = dumps(d)
        t0 = boottime()
        subprocess.run([tool, "ctl", "--ctl", ctl, "trigger", name], check=True, capture_output=True)
        new, seen = set(), None
        while not new and boottime() - t0 < 30:
            new = dumps(d) - before
            if new:
                seen = boottime()
                break
            time.sleep(0.002)
        if not new:
            print("# dump %d: no file within 30 s" % (i + 1))
            bad += 1
            continue
        f = os.path.join(d, sorted(new)[0])
        st = subprocess.run([tool, "report", "--stats", f], capture_output=True, text=True).stdout
        m = re.search(r"dump asked for at ([0-9.]+)", st)
        if not m:
            print("# dump %d: %s names no trigger hit" % (i + 1, f))
            bad += 1
            continue
        ms = (seen - float(m.group(1))) * 1e3
        lat.append(ms)
        print("# dump %d: on disk %.1f ms after it was asked for (%.1f ms after `ctl trigger` started)" %
              (i + 1, ms, (seen - t0) * 1e3))
        if ms > bound * 1e3:
            bad += 1
        time.sleep(0.3)  # the next trigger is not merged into this dump
    if lat:
        s = sorted(lat)
        print("# latency: median %.1f ms, max %.1f ms over %d dumps (bound %.0f ms)" %
              (s[len(s) // 2], s[-1], len(s), bound * 1e3))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
