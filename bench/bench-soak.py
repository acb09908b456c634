#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Churn soak: thousands of start/stop cycles across many units whose policies overlap with
different values, in random order and partly concurrent, checking all along that no knob is ever
looser than the strictest policy of the units that are running, and that thpd ends exactly at
the baseline and idle.

A benchmark, not a test: it prints one table and exits 0 when the run completed, whatever the
figures. It exits 1 when the benchmark could not run to the end or a check failed (a knob looser
than a running unit's policy, a wrong end state), and 77 ("skipped") where the stack cannot run.

How to run (as root, Debian's /usr/bin/python3):

    meson test --benchmark -C build --verbose soak          # 5,000 cycles, a few minutes
    PYTHONPATH=tests /usr/bin/python3 -B bench/bench-soak.py --thpd build/src/daemon/thpd --ctl build/src/ctl/thpd-ctl \\
        --cycles 200                                          # a smoke run

Set-up
    A private systemd --user manager with its own session bus (thpdtest.Stack, tests/thpdtest/)
    and thpd --user on a scratch sysfs tree at kernel defaults. 50 unit files soak-00.service ..
    soak-49.service (ExecStart=sleep infinity) each with ExecStartPre=-thpd-ctl --user await %n,
    the start-order guarantee thpd ships for Redis: once "systemctl start" returns, the unit's
    policy is applied. Five policies match overlapping tens of units (each unit is matched by two)
    with different values for enabled, defrag and khugepaged/defrag, some looser than the baseline.

The churn
    --workers threads (default 4) take random units and start them if they are stopped or stop
    them if they run, with systemctl --user, until --cycles starts and as many stops are done; at
    most 4 units run at once, so that policies come and go and the knobs keep moving. A unit is
    "covered" from the return of its start until its stop is issued.

The check
    An inotify watch on every knob file sees each write thpd makes. After each one, and after
    every start, the knob is read under the same lock that guards the covered set; it must be at
    least as strict as the strictest value any covered unit's policies ask for. At the end, with
    all units stopped, every knob must read its baseline exactly, and thpd must settle (a 10 s
    window with at most one wakeup and no D-Bus message).

Figures: cycles per second, thpd's CPU time per cycle, its VmRSS after start and every 1,000
cycles, its writes per cycle, and the idle window at the end.
"""

import argparse
import os
import random
import select
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import thpdtest
from benchlib import IN_CLOSE_WRITE, Inotify, cpu_ticks, render

SKIP = 77
UNITS = 50
# Few units run at once, so that policies come and go and the knobs keep moving.
MAX_RUNNING = 4
CHECKPOINT_EVERY = 1000

# Strictest first, as in thpd.policy(5).
STRICTNESS = {
    'enabled': ['never', 'madvise', 'always'],
    'defrag': ['never', 'defer', 'madvise', 'defer+madvise', 'always'],
    'khugepaged/defrag': ['0', '1'],
}
BASELINE = {'enabled': 'madvise', 'defrag': 'madvise', 'khugepaged/defrag': '1'}

# Policy i matches soak-(2i)?.service and soak-(2i+1)?.service, i.e. 20 units; with five of them
# every unit is matched by two (the tens wrap around).
POLICIES = [
    {'enabled': 'never'},
    {'enabled': 'madvise', 'defrag': 'defer'},
    {'enabled': 'always', 'defrag': 'never'},
    {'defrag': 'defer+madvise', 'khugepaged/defrag': '0'},
    {'enabled': 'madvise', 'defrag': 'always', 'khugepaged/defrag': '1'},
]
SECTION = {'enabled': ('TransparentHugePages', 'Enabled'), 'defrag': ('TransparentHugePages', 'Defrag'),
           'khugepaged/defrag': ('Khugepaged', 'Defrag')}


class SoakError(Exception):
    """The soak could not run, or a check failed."""


def unit_name(i):
    return f'soak-{i:02d}.service'


def policies_of(i):
    tens = i // 10
    return [p for p in range(len(POLICIES)) if tens in ((2 * p) % 5, (2 * p + 1) % 5)]


def policy_text(p):
    tens = ((2 * p) % 5, (2 * p + 1) % 5)
    sections = {}
    for knob, value in POLICIES[p].items():
        section, key = SECTION[knob]
        sections.setdefault(section, []).append(f'{key}={value}')
    body = ''.join(f'[{s}]\n' + '\n'.join(lines) + '\n' for s, lines in sections.items())
    return f'[Policy]\nUnits=soak-{tens[0]}?.service soak-{tens[1]}?.service\n{body}'


def looser(knob, value, than):
    order = STRICTNESS[knob]
    return order.index(value) > order.index(than)


class Soak:
    def __init__(self, args):
        self.args = args
        self.tmp = Path(tempfile.mkdtemp(prefix='thpd-soak-'))
        self.stack = thpdtest.Stack()
        self.thpd = None
        self.lock = threading.Lock()
        self.covered = set()
        self.busy = set()
        self.starts = 0
        self.stops = 0
        self.checks = 0
        self.writes = 0
        self.violations = []
        self.checkpoints = []
        self.done = threading.Event()
        self.failure = None

    def setup(self):
        self.stack.start()
        unit_dir = self.stack.dir / 'config' / 'systemd' / 'user'
        for i in range(UNITS):
            (unit_dir / unit_name(i)).write_text(
                '[Service]\n'
                f'ExecStartPre=-{self.args.ctl} --user await %n\n'
                'ExecStart=/bin/sleep infinity\n')
        self.stack.run('systemctl', '--user', 'daemon-reload')

        self.kernel = thpdtest.ScratchKernel(self.tmp / 'kernel')
        policy_dir = self.tmp / 'policy.d'
        policy_dir.mkdir(mode=0o755)
        for p in range(len(POLICIES)):
            path = policy_dir / f'soak-{p}.conf'
            path.write_text(policy_text(p))
            path.chmod(0o644)
        config = self.tmp / 'thpd.conf'
        config.write_text('[Daemon]\n')
        argv = [str(self.args.thpd), '--user', f'--sysfs={self.kernel.sysfs}', f'--procfs={self.kernel.procfs}',
                f'--runtime-dir={self.tmp / "run"}', f'--policy-dir={policy_dir}', f'--config={config}']
        self.thpd = thpdtest.Thpd(argv, self.stack.env, self.tmp / 'thpd.log', self.tmp / 'notify')
        self.thpd.wait_ready()
        for knob, value in BASELINE.items():
            if self.kernel.read_knob(knob) != value:
                raise SoakError(f'{knob} reads {self.kernel.read_knob(knob)} after READY=1, expected {value}')

    def close(self):
        self.done.set()
        if self.thpd is not None:
            if self.thpd.running:
                self.thpd.stop()
            self.thpd.close()
        self.stack.close()

    # ----- the check

    def required(self):
        """The strictest value any covered unit's policies ask for, per knob (caller holds the lock)."""
        want = {}
        for i in self.covered:
            for p in policies_of(i):
                for knob, value in POLICIES[p].items():
                    if knob not in want or looser(knob, want[knob], value):
                        want[knob] = value
        return want

    def check(self, when):
        with self.lock:
            self.checks += 1
            for knob, value in self.required().items():
                have = self.kernel.read_knob(knob)
                if looser(knob, have, value):
                    self.violations.append(f'{when}: {knob} reads {have}, a covered unit needs {value} '
                                           f'(covered: {sorted(unit_name(i) for i in self.covered)})')

    def watch(self):
        inotify = Inotify()
        try:
            for knob in STRICTNESS:
                inotify.add(self.kernel.knob_path(knob), knob, IN_CLOSE_WRITE)
            while not self.done.is_set():
                ready, _, _ = select.select([inotify.fd], [], [], 0.2)
                if not ready:
                    continue
                events = inotify.read()
                self.writes += len(events)
                if events:
                    self.check('after a write to ' + ', '.join(sorted({name for name, _ in events})))
        except Exception as e:  # noqa: BLE001 (reported by the main thread)
            self.failure = e
        finally:
            inotify.close()

    # ----- the churn

    def systemctl(self, verb, unit):
        proc = subprocess.run(['systemctl', '--user', verb, unit], env=self.stack.env,
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise SoakError(f'systemctl --user {verb} {unit}: {proc.stderr.strip()}')

    def take(self, rng):
        """A random idle unit and whether to start it, or None once the cycles are done."""
        while True:
            with self.lock:
                startable = self.starts < self.args.cycles and len(self.covered) + len(self.busy) < MAX_RUNNING
                candidates = [i for i in range(UNITS) if i not in self.busy and (startable or i in self.covered)]
                if candidates:
                    i = rng.choice(candidates)
                    self.busy.add(i)
                    if i in self.covered:
                        self.covered.discard(i)
                        return i, False
                    self.starts += 1
                    return i, True
                if self.starts >= self.args.cycles and not self.covered and not self.busy:
                    return None
            # Every candidate is in another worker's hands for the moment.
            time.sleep(0.001)

    def worker(self, seed):
        rng = random.Random(seed)
        try:
            while self.failure is None:
                picked = self.take(rng)
                if picked is None:
                    return
                i, start = picked
                if start:
                    self.systemctl('start', unit_name(i))
                    with self.lock:
                        self.covered.add(i)
                    self.check(f'after starting {unit_name(i)}')
                else:
                    self.systemctl('stop', unit_name(i))
                    with self.lock:
                        self.stops += 1
                        stops = self.stops
                    if stops % CHECKPOINT_EVERY == 0:
                        self.checkpoint(stops)
                with self.lock:
                    self.busy.discard(i)
        except Exception as e:  # noqa: BLE001 (reported by the main thread)
            self.failure = e

    def checkpoint(self, cycles):
        status = Path(f'/proc/{self.thpd.pid}/status').read_text()
        rss = next(int(line.split()[1]) for line in status.splitlines() if line.startswith('VmRSS:'))
        self.checkpoints.append((cycles, rss, cpu_ticks(self.thpd.pid), time.monotonic()))

    def run(self):
        watcher = threading.Thread(target=self.watch, daemon=True)
        watcher.start()
        self.checkpoint(0)
        rng = random.Random(self.args.seed)
        workers = [threading.Thread(target=self.worker, args=(rng.random(),), daemon=True)
                   for _ in range(self.args.workers)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        if self.failure is not None:
            raise SoakError(f'the churn stopped: {self.failure}')
        if not self.checkpoints or self.checkpoints[-1][0] != self.stops:
            self.checkpoint(self.stops)
        thpdtest.wait_until(lambda: all(self.kernel.read_knob(k) == v for k, v in BASELINE.items()), 30,
                            lambda: f'the baseline at the end, have '
                                    f'{ {k: self.kernel.read_knob(k) for k in BASELINE} }')
        self.done.set()
        watcher.join()
        if self.failure is not None:
            raise SoakError(f'the knob watch failed: {self.failure}')
        idle = thpdtest.assert_settles(self.thpd.pid, self.thpd.bus_address, window=10.0, deadline=60.0)
        return idle


def report(args, soak, idle):
    first, last = soak.checkpoints[0], soak.checkpoints[-1]
    cycles = last[0] - first[0]
    seconds = last[3] - first[3]
    ticks = os.sysconf('SC_CLK_TCK')
    rows = [('measurement', 'measured', 'target', 'result'),
            ('start/stop cycles (50 units, 5 overlapping policies)', f'{cycles:,} in {seconds:.0f} s '
             f'({cycles / seconds:.1f}/s, {args.workers} workers)', f'{args.cycles:,}',
             'PASS' if cycles == args.cycles else 'MISS'),
            ('knob checks (after every write and every start)', f'{soak.checks:,}', '', ''),
            ('knob writes seen', f'{soak.writes:,} ({soak.writes / max(cycles, 1):.2f} per cycle)', '', ''),
            ('checks that found a knob looser than a running unit needs', str(len(soak.violations)), '0',
             'PASS' if not soak.violations else 'FAIL'),
            ('thpd CPU per cycle', f'{(last[2] - first[2]) / ticks / max(cycles, 1) * 1000:.2f} ms', '', '')]
    for c, rss, _, _ in soak.checkpoints:
        rows.append((f'thpd VmRSS after {c:,} cycles', f'{rss / 1024:.2f} MiB', '', ''))
    rows.append(('thpd VmRSS growth over the soak', f'{last[1] - first[1]:+d} kB', '', ''))
    rows.append(('end state', 'every knob at its baseline', 'baseline', 'PASS'))
    rows.append(('thpd wakeups in a 10 s window after the soak', str(idle), '<= 1', 'PASS' if idle <= 1 else 'FAIL'))
    print(render(rows))
    for v in soak.violations[:10]:
        print(f'  {v}')


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--thpd', required=True, type=Path)
    parser.add_argument('--ctl', required=True, type=Path)
    parser.add_argument('--cycles', type=int, default=5000)
    parser.add_argument('--workers', type=int, default=4)
    parser.add_argument('--seed', type=int, default=9)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    reason = thpdtest.stack_unavailable_reason()
    for exe in (args.thpd, args.ctl):
        if reason is None and not os.access(exe, os.X_OK):
            reason = f'{exe} is not an executable'
    if reason:
        print(f'bench-soak: skipped: {reason}', file=sys.stderr)
        return SKIP
    args.thpd, args.ctl = args.thpd.resolve(), args.ctl.resolve()
    soak = Soak(args)
    try:
        soak.setup()
        print(f'soak: {args.cycles} start/stop cycles across {UNITS} units ...', flush=True)
        idle = soak.run()
    except (SoakError, AssertionError, RuntimeError, OSError) as e:
        print(f'bench-soak: failed: {e}', file=sys.stderr)
        if soak.thpd is not None:
            print(thpdtest._tail(soak.thpd.log(), 30), file=sys.stderr)
        return 1
    finally:
        soak.close()
    report(args, soak, idle)
    return 1 if soak.violations else 0


if __name__ == '__main__':
    sys.exit(main())
