# py_split.py - a Python program whose CPU time splits 70/30 between two
# functions by construction (time, not call counts: each period of thread CPU
# time, 70% in seventy() then 30% in thirty()), for test_python_versions.sh's
# check on each CPython version. thirty() calls hashlib (native code under
# a Python frame). Argument: milliseconds of CPU time to run.
import hashlib
import random
import sys
import time

BUF = b"x" * 4096


def seventy(until):
    s = 0
    while time.thread_time() < until:
        for i in range(300):
            s += i * i
    return s


def thirty(until):
    h = hashlib.sha256()
    # 8 updates (32 KiB) between checks: 100 overran each period by up to
    # a millisecond on a CPU without SHA instructions, and seventy's share
    # read 64.5% there (a CI run)
    while time.thread_time() < until:
        for i in range(8):
            h.update(BUF)
    return h.digest()


def main():
    ms = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    end = time.thread_time() + ms / 1000.0
    t = time.thread_time()
    # Periods of 7-13 ms drawn at random: a fixed one (10 ms, stretched by
    # the loops' checks to ~10.2) locked onto 49 Hz sampling's 20.4 ms, and
    # each process showed the share of one phase (37% or 64% seventy).
    rng = random.Random(7)
    while t < end:
        p = rng.uniform(0.007, 0.013)
        seventy(t + 0.7 * p)
        thirty(t + p)
        t = time.thread_time()


main()
