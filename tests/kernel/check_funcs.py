#!/usr/bin/env python3
"""check_funcs.py REPORT APPLOG MODE - the function trace of app_funcs in a
`btrace-bpf report -p PID` text, against what app_funcs printed (APPLOG).

MODE after: every call of every phase present exactly once, balanced and
nested per thread, names right; the nap lines up with the kernel's
sched_switch of its thread (within 1 ms, on one clock), and the function
records with the clock values they carry (see the nap check's comment). MODE mid: the same for the phases that
had ended (a dump taken while the program ran)."""
import os, re
import sys
from collections import defaultdict

rep, applog, mode = sys.argv[1], sys.argv[2], sys.argv[3]
LINE = re.compile(r'^\s*(.*?)-(\d+)\s+\[(\d+)\]\s+(\d+)\.(\d+): (\w+): (.*)$')
errors = []


def err(msg):
    errors.append(msg)


info = {'pool': {}, 'nap': None, 'fib': None, 'killed': None}
for l in open(applog):
    f = l.split()
    if not f:
        continue
    if f[0] == 'fib':
        info['fib'] = int(f[1])
    elif f[0] == 'pool':
        info['pool'][int(f[1])] = int(f[2])
    elif f[0] == 'nap':
        info['nap'] = (int(f[1]), int(f[2]), int(f[3]))
    elif f[0] == 'killed':
        info['killed'] = (int(f[1]), int(f[2]))

ev = defaultdict(list)     # tid -> [(ts_us, kind, name, depth)]
switches = []              # (ts_us, prev, next)
for l in open(rep):
    m = LINE.match(l)
    if not m:
        continue
    tid, ts = int(m.group(2)), int(m.group(4)) * 1000000 + int(m.group(5))
    kind, rest = m.group(6), m.group(7)
    if kind in ('func_entry', 'func_exit'):
        name = rest.lstrip(' ')
        depth = (len(rest) - len(name)) // 2
        ev[tid].append((ts, kind, name, depth))
    elif kind == 'sched_switch':
        p = re.search(r'prev_pid=(\d+).*next_pid=(\d+)', rest)
        if p:
            switches.append((ts, int(p.group(1)), int(p.group(2))))


def calls(tid):
    """Per name: complete calls, and a nesting check."""
    stack, n = [], defaultdict(int)
    last = 0
    for ts, kind, name, depth in ev[tid]:
        if ts < last:
            err(f'tid {tid}: time goes back at {ts}')
        last = ts
        if kind == 'func_entry':
            if depth != len(stack):
                err(f'tid {tid}: entry of {name} shown at depth {depth}, is {len(stack)}')
            stack.append(name)
        else:
            if not stack and name == 'main':
                continue  # entered before the recorder attached
            if not stack or stack[-1] != name:
                err(f'tid {tid}: exit of {name} does not close {stack[-1] if stack else "nothing"}')
                return n
            stack.pop()
            if depth != len(stack):
                err(f'tid {tid}: exit of {name} shown at depth {depth}, is {len(stack)}')
            n[name] += 1
    return n


def expect(tid, name, want):
    got = calls(tid).get(name, 0)
    if got != want:
        err(f'tid {tid}: {got} calls of {name}, expected {want}')


# fib: main's thread; exactly 21891 calls, 20 deep below run_all, which
# is at 1 when main's entry was recorded (the program writes from its
# first call when a recorder listens as it starts), else at 0
fib = info['fib']
expect(fib, 'fib', 21891)
maxd = max((d for ts, k, nm, d in ev[fib] if nm == 'fib'), default=-1)
main_in = any(k == 'func_entry' and nm == 'main' for ts, k, nm, d in ev[fib])
if maxd != 20 + main_in:
    err(f'fib: deepest call at depth {maxd}, expected {20 + main_in} (main {"at 0" if main_in else "not entered"})')
if len(info['pool']) != 16:
    err(f'{len(info["pool"])} pool threads in the log')
for tid, k in info['pool'].items():
    expect(tid, 'pool_leaf', k)
    expect(tid, 'pool_work', 1)
    expect(tid, 'pool_thread', 1)
    if len(ev[tid]) != 2 * (k + 2):
        err(f'pool tid {tid}: {len(ev[tid])} records, expected {2 * (k + 2)}')
ktid, kn = info['killed']
# its thread function never returns: the leaf calls are complete, the
# thread function's entry stays open
expect(ktid, 'pool_leaf', kn)
# nap: its thread leaves the CPU inside nap() and comes back before nap returns
ntid, t0, t1 = info['nap']
expect(ntid, 'nap', 1)
nev = ev[ntid]
try:
    ne = next(ts for ts, k, nm, d in nev if nm == 'nap' and k == 'func_entry')
    nx = next(ts for ts, k, nm, d in nev if nm == 'nap' and k == 'func_exit')
    # now_ns() returns just before usleep, is entered again just after it
    before = max(ts for ts, k, nm, d in nev if nm == 'now_ns' and k == 'func_exit' and ts < nx - 10000)
    after = min(ts for ts, k, nm, d in nev if nm == 'now_ns' and k == 'func_entry' and ts > ne + 10000)
    # the switches inside the nap, found on the kernel's clock (t0..t1):
    # the records' own times may be off it (see below)
    t0u, t1u = t0 // 1000, t1 // 1000
    out = [ts for ts, p, n in switches if p == ntid and t0u - 1 <= ts <= t1u + 1]
    back = [ts for ts, p, n in switches if n == ntid and t0u - 1 <= ts <= t1u + 1]
    if not out or not back:
        err(f'nap tid {ntid}: no sched_switch away and back inside nap() ({t0u}..{t1u})')
    else:
        so, si = min(out), max(back)
        # Two questions, kept apart so each bound is sound on any CPU:
        # 1. The kernel's order, on one clock: t0/t1 are CLOCK_BOOTTIME as
        #    now_ns() read it around usleep, the clock of sched_switch, so
        #    no drift enters: the switch away follows t0 and the switch back
        #    precedes t1, by the code run between (syscall entry; ~10x
        #    longer under an emulated CPU, the kernel matrix's qemu TCG).
        # 2. The records on that timeline: a record is stamped in ticks
        #    (TSC) and placed by the rate calibrated over >= 1 s windows;
        #    the records of now_ns()'s return and next entry against the
        #    values it read measure the offset there (d0, d1: calibration
        #    pairs around the nap). Natively it is within 50 us. Under TCG
        #    the guest's TSC and BOOTTIME drift apart within a window (a
        #    record 4-7 ms off in CI): there the offset is only bounded by
        #    what a window can accumulate (2% of 1 s), and its change across
        #    the 20 ms nap by the rates' agreement (5%: 1 ms).
        #    Under TCG the host may also deschedule the vCPU's thread
        #    between the switch and the clock read, which the guest never
        #    sees as a switch (576 us seen with a second guest running):
        #    5 ms there, still an order and not a coincidence. This VM's
        #    own host does the same to it: 55-134 us on a quiet machine
        #    (2026-12-02, the same binaries that had passed at 50 before):
        #    1 ms natively, a twentieth of the nap.
        emulated = bool(os.environ.get('BT_TEST_EMULATED'))
        lim = 1000 if not emulated else 5000
        k_away, k_back = so - t0u, t1u - si
        if not (-1 <= k_away <= lim):
            err(f'nap: switched away {k_away} us after now_ns() read the clock (want 0..{lim}, kernel clock)')
        if not (-1 <= k_back <= lim):
            err(f'nap: switched back {k_back} us before now_ns() read the clock (want 0..{lim}, kernel clock)')
        #    The change d1 - d0 is the rate's drift less two real delays:
        #    t0 read to the exit record (at most k_away: the exit precedes
        #    the switch away) and the entry record to t1 read (at most
        #    k_back: the entry follows the switch back). Natively both are
        #    microseconds; under TCG a stall there is milliseconds (1.5 ms
        #    seen in CI), which the kernel clock measured, so it is allowed
        #    exactly and the drift bound stays the rates' agreement.
        d0, d1 = before - t0u, after - t1u
        #    A host's descheduling of the vCPU between the clock read and
        #    the record (55-134 us seen quietly, more in a loaded CI) lands
        #    in d0 or d1 unseen by the kernel: natively both bounds are that
        #    1 ms too, a twentieth of the nap and far below a wrong clock.
        off_lim = 1000 if not emulated else 20000
        drift_lim = 1000
        if not (abs(d0) <= off_lim and abs(d1) <= off_lim):
            err(f'nap: records {d0} and {d1} us off the clock values they carry (want within {off_lim})')
        stall = max(k_away, 0) + max(k_back, 0)
        if not (-stall - drift_lim <= d1 - d0 <= drift_lim):
            err(f'nap: the records drifted {d1 - d0} us from BOOTTIME across a 20 ms nap '
                f'(want {-stall - drift_lim}..{drift_lim}: {stall} us of it the kernel saw as delay)')
        print(f'# nap: kernel clock: away {k_away} us after t0, back {k_back} us before t1; '
              f'records off BOOTTIME by {d0} us before, {d1} us after (drift {d1 - d0} us)')
except (StopIteration, ValueError):
    err(f'nap tid {ntid}: records missing: {nev[:6]}')
# nothing but what the program calls
known = {'main', 'run_all', 'fib', 'pool_thread', 'pool_work', 'pool_leaf', 'nap_thread', 'nap', 'now_ns',
         'killed_thread', 'tick_thread', 'tick'}
names = {nm for t in ev for ts, k, nm, d in ev[t]}
if names - known:
    err(f'unexpected function names: {sorted(names - known)[:5]}')
for e in errors[:20]:
    print('# ' + e)
sys.exit(1 if errors else 0)
