# SPDX-License-Identifier: LGPL-2.1-or-later
"""The kernel's side of a scratch procfs for the storm watcher, and thpd's storm signals.

FakeKernel plays the kernel's side of the scratch procfs (thpdtest.ScratchKernel): from a thread
it rewrites vmstat, pressure/memory and the stat files of fake kernel threads every 20 ms, each
counter advancing at the rate of the current Shape, and each file replaced atomically as the
kernel would present it. SignalMonitor records thpd's signals through thpd-ctl monitor --json.

Used by tests/integration/test_storm.py and bench/bench-storm.py.
"""

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import thpdtest

BUS_NAME = 'org.thpd1'
BUS_PATH = '/org/thpd1'
INTERFACE = 'org.thpd1.Manager'

CLK_TCK = os.sysconf('SC_CLK_TCK')
PF_KTHREAD = 0x00200000
# What the kernel shows for khugepaged (PF_KTHREAD | PF_NOFREEZE | PF_RANDOMIZE) and for an
# ordinary process (PF_RANDOMIZE | PF_FORKNOEXEC).
KTHREAD_FLAGS = 0x00608040
PROCESS_FLAGS = 0x00400040
KHUGEPAGED_PID = 47
KCOMPACTD_PID = 46


class Shape:
    """What the fake kernel shows per second: vmstat counter increments, the share of wall time
    PSI memory "some"/"full" count as stalled, and the CPU share of each fake thread (by pid)."""

    def __init__(self, rates=None, psi_some=0.0, psi_full=0.0, cpu=None):
        self.rates = dict(rates or {})
        self.psi_some = psi_some
        self.psi_full = psi_full
        self.cpu = dict(cpu or {})


CALM = Shape()
# Direct compaction as outcomes-measured.md §2 saw it on fragmented memory, made steady: faults
# stall in compaction that nearly always fails, fall back to reclaim, and tasks wait on memory.
COMPACTION_STORM = Shape(rates={
    'compact_stall': 40, 'compact_fail': 38, 'compact_success': 2,
    'compact_migrate_scanned': 30000, 'compact_free_scanned': 120000,
    'thp_fault_alloc': 30, 'thp_fault_fallback': 10, 'allocstall_normal': 12,
}, psi_some=0.30, psi_full=0.08)


class FakeKernel:
    """The kernel's side of a scratch procfs; see the module docstring.

    threads: {pid: (comm, flags)} for the fake /proc/PID/stat files. start() writes every file
    once before returning, so a daemon started afterwards finds them all."""

    TICK = 0.02

    def __init__(self, procfs, threads=(), sysfs=None):
        self.procfs = Path(procfs)
        # With sysfs, a rate named "hugepages-64kB/anon_fault_fallback" advances that per-size
        # counter under sysfs's hugepages-64kB/stats/.
        self.sysfs = Path(sysfs) if sysfs is not None else None
        self.size_counters = {}
        self.counters = {name: 0.0 for name in thpdtest.VMSTAT_COUNTERS}
        # Counters a busy machine has been counting for a while: not 0, as after boot.
        self.counters.update(compact_stall=1200, compact_fail=900, compact_success=300, thp_fault_alloc=50000)
        self.psi_some_usec = 3_000_000.0
        self.psi_full_usec = 1_000_000.0
        self.threads = {pid: [comm, flags, 0.0] for pid, (comm, flags) in dict(threads).items()}
        self.shape = CALM
        self.onset = None
        self._last = None
        self._longest_gap = 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None
        (self.procfs / 'pressure').mkdir(exist_ok=True)

    def start(self):
        with self._lock:
            self._last = time.monotonic()
            self._write()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def set_shape(self, shape):
        """Switches to shape from now on; returns the onset (CLOCK_MONOTONIC), which is also
        when the first file showing it is in place."""
        with self._lock:
            self._advance()
            self.shape = shape
            self._write()
            self.onset = self._last
            self._longest_gap = 0.0
        return self.onset

    def staleness(self):
        """How far behind the clock the files have been at most since the last set_shape(), up to
        now. A rate thpd reads is off by at most this much of its window at each end: the real
        kernel computes its files as they are read, this thread only every TICK, later when the
        machine is loaded."""
        with self._lock:
            return max(self._longest_gap, time.monotonic() - self._last)

    def _run(self):
        while not self._stop.wait(self.TICK):
            with self._lock:
                counted_to = self._last
                self._advance()
                self._write()
                # Until this write landed, the files showed the counters as of counted_to.
                self._longest_gap = max(self._longest_gap, time.monotonic() - counted_to)

    def _advance(self):
        now = time.monotonic()
        dt = now - self._last
        self._last = now
        for name, rate in self.shape.rates.items():
            if '/' in name:
                self.size_counters[name] = self.size_counters.get(name, 0.0) + rate * dt
            else:
                self.counters[name] += rate * dt
        self.psi_some_usec += self.shape.psi_some * dt * 1e6
        self.psi_full_usec += self.shape.psi_full * dt * 1e6
        for pid, share in self.shape.cpu.items():
            self.threads[pid][2] += share * dt

    @staticmethod
    def _replace(path, text):
        tmp = path.with_name(f'.{path.name}.tmp')
        tmp.write_text(text)
        os.replace(tmp, path)

    def _write(self):
        vmstat = ['nr_free_pages 2049017\n', 'nr_anon_transparent_hugepages 12\n']
        vmstat += [f'{name} {int(value)}\n' for name, value in self.counters.items()]
        self._replace(self.procfs / 'vmstat', ''.join(vmstat))
        self._replace(self.procfs / 'pressure' / 'memory',
                      f'some avg10=0.00 avg60=0.00 avg300=0.00 total={int(self.psi_some_usec)}\n'
                      f'full avg10=0.00 avg60=0.00 avg300=0.00 total={int(self.psi_full_usec)}\n')
        for name, value in self.size_counters.items():
            size, counter = name.split('/')
            self._replace(self.sysfs / 'kernel/mm/transparent_hugepage' / size / 'stats' / counter, f'{int(value)}\n')
        for pid, (comm, flags, cpu) in self.threads.items():
            directory = self.procfs / str(pid)
            directory.mkdir(exist_ok=True)
            ticks = int(cpu * CLK_TCK)
            # Fields as proc_pid_stat(5): kernel threads have ppid 2 and their time as stime.
            self._replace(directory / 'stat',
                          f'{pid} ({comm}) S 2 0 0 0 -1 {flags} 0 0 0 0 0 {ticks} 0 0 20 0 1 0 27 0 0 '
                          '18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 17 1 0 0 0\n')
            self._replace(directory / 'comm', f'{comm}\n')


class SignalMonitor:
    """thpd-ctl --user monitor --json, read by a thread; every event gets "received", the
    CLOCK_MONOTONIC time this process read it."""

    def __init__(self, env, ctl):
        self.events = []
        self._arrived = threading.Condition()
        self._reader = None
        self.process = subprocess.Popen([ctl, '--user', 'monitor', '--json'], env=env, text=True,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        # thpd-ctl says so once its matches are in place: nothing after this line is missed.
        first = self.process.stderr.readline()
        if 'Following thpd' not in first:
            self.close()
            raise AssertionError(f'thpd-ctl monitor did not start: {first}{self.process.stderr.read()}')
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.process.stdout:
            event = json.loads(line)
            event['received'] = time.monotonic()
            with self._arrived:
                self.events.append(event)
                self._arrived.notify_all()

    def named(self, name, **fields):
        with self._arrived:
            return [e for e in self.events
                    if e['signal'] == name and all(e.get(k) == v for k, v in fields.items())]

    def wait_for(self, name, timeout=thpdtest.DEFAULT_TIMEOUT, **fields):
        """The first event called name whose fields match; waits for it if need be."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while True:
                found = self.named(name, **fields)
                if found:
                    return found[0]
                left = deadline - time.monotonic()
                if left <= 0 or self.process.poll() is not None:
                    raise AssertionError(f'no {name} {fields or ""} signal within {timeout:g} s; '
                                         f'seen: {[e["signal"] for e in self.events]}')
                self._arrived.wait(left)

    def close(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self._reader is not None:
            self._reader.join(5)
        self.process.stdout.close()
        self.process.stderr.close()
