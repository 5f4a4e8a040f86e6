# py_sleep.py - a Python thread that blocks in napper() (time.sleep), called
# from outer(), for tests/kernel/test_python_frames.sh's off-CPU stacks.
import time


def napper():
    for _ in range(20):
        time.sleep(0.02)


def outer():
    napper()


outer()
