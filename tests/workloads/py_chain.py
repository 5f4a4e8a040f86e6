# py_chain.py - a Python program whose time runs in hot(), called as a -> b -> hot,
# for tests/kernel/test_python_frames.sh. Argument: milliseconds of CPU time
# to run (CPU, not wall: under load it gets as many samples as on a quiet machine).
import sys
import time


def hot(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def b(n):
    return hot(n)


def a(end):
    while time.process_time() < end:
        b(20000)


def main():
    ms = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    a(time.process_time() + ms / 1000.0)


main()
