# py_split.py - a Python program whose CPU time splits 70/30 between two
# functions by construction (time, not call counts: each 10 ms of thread CPU
# time, 7 in seventy() then 3 in thirty()), for test_python_versions.sh's
# check on each CPython version. thirty() calls hashlib (native code under
# a Python frame). Argument: milliseconds of CPU time to run.
import hashlib
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
    while time.thread_time() < until:
        for i in range(100):
            h.update(BUF)
    return h.digest()


def main():
    ms = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    end = time.thread_time() + ms / 1000.0
    t = time.thread_time()
    while t < end:
        seventy(t + 0.007)
        thirty(t + 0.010)
        t = time.thread_time()


main()
