#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Storm watcher benchmark: detection latency, false positives, and what thpd costs while calm.

A benchmark, not a test: it prints one table with the figures beside their targets and exits 0
whatever they are. It exits 1 when the benchmark itself could not run to the end, and 77
("skipped") where the stack cannot run (not root, no systemd).

How to run (as root):

    meson setup build && ninja -C build
    meson test --benchmark -C build --verbose            # runs bench-daemon.py and this
    PYTHONPATH=tests /usr/bin/python3 -B bench/bench-storm.py --thpd build/src/daemon/thpd --thpd-ctl build/src/ctl/thpd-ctl
    PYTHONPATH=tests /usr/bin/python3 -B bench/bench-storm.py ... --fp-minutes 1 --idle-seconds 10 --reps 1   # smoke run

The full run takes about 16 minutes: 10 for the false positives, 2 for the recorded storm
replayed, the rest the latency and calm runs.

Set-up (the harness package tests/thpdtest/ and its storm module, imported unchanged)
    A private systemd --user manager with its own session bus (thpdtest.Stack), and each thpd
    --user on a fresh scratch sysfs tree (kernel defaults, no policy; Action=log). Signals are
    followed with thpd-ctl --user monitor --json, read by a thread here that stamps each line
    on receipt (CLOCK_MONOTONIC).

Phase 1, detection latency (scratch procfs)
    storm.FakeKernel rewrites the scratch vmstat and pressure/memory every 20 ms. After a
    quiet spell of a random length (so the onset falls anywhere in the watcher's window), it
    switches to storm.COMPACTION_STORM at t0: 40 compaction stalls/s, 95 % of them
    failing, PSI memory "some" 30 %. Latency is the receipt of StormDetected minus t0, so it
    includes StormAfter=; the table gives it and the part beyond StormAfter=, which is what
    the target (under 3 s) is about. Two configurations:
      - the default thresholds (Window=1s, StormAfter=3s, SampleInterval=1s);
      - the floor: Window=1s, StormAfter=0, SampleInterval=100ms.
    A scratch file cannot carry a PSI trigger, so every configuration sets IdlePollInterval=
    (250 ms; 100 ms for the floor) to stand in for the trigger's wake-up. On the real kernel the
    trigger wakes thpd once tasks stall on memory for 0.2 % of a 2 s window (4 ms) and the
    first window starts then; here windows run continuously, so a window that began before t0
    can already count as hot, and the part beyond StormAfter= can be negative.

Phase 1b, the recorded storm (scratch procfs, default thresholds, Action=mitigate)
    tests/data/storm/recorded-storm.txt, the real direct-compaction storm of
    tools/storm-trace-workloads.py storm (its header says how and where), is played into the
    scratch procfs at its own pace, counters interpolated between its 1 Hz samples every 20 ms,
    from 20 s (plus a random fraction of a second) before the onset its header names. Measured:
    StormDetected and the Applied signal that wrote defrag=defer, each minus the onset (target:
    both under 5 s), and, from the trace itself, when the PSI trigger's level was reached. The
    same IdlePollInterval=250ms stands in for the trigger.

Phase 2, false positives (real /proc, default thresholds, --fp-minutes, default 10)
    thpd --procfs=/proc: a real PSI trigger wakes it. Meanwhile an ordinary workload runs on
    both CPUs, as child processes of this one (killed by PID at the end):
      - memory: a long-lived resident set of --fp-resident-percent of MemTotal (default 50 %,
        a database's buffer pool; at least 6 GiB stay available), and churn beside it: map
        64 MiB-1 GiB, madvise(MADV_HUGEPAGE) half of the time (as a JVM or jemalloc would),
        touch every 4 KiB, hold up to a second, unmap; never below 4 GiB available;
      - page cache: write a 2 GiB file once, read it again and again, rewrite a 256 MiB file
        with fsync every few rounds;
      - a compile loop: ninja clean + ninja -j2 of thpd itself in a private build directory
        (skipped when meson or a C compiler is missing).
    Counted: StormDetected signals (target 0); how often the PSI trigger woke thpd and how
    often it went idle again (its debug log); the kernel's counters over the run, and the
    worst 10 s of them next to the default thresholds.

Phase 3, cost while calm (real /proc, default thresholds, --idle-seconds, default 60)
    A fresh thpd on the real /proc, left alone for 7 s (thpd trims its heap 5 s after its last
    apply), then the voluntary + nonvoluntary context switches of every thread and its CPU
    time over --idle-seconds: each wakeup costs at least one switch (target: none). PSI
    wake-ups in that window (real memory pressure from elsewhere on the machine) are listed.
    For comparison, the same on the scratch procfs, where thpd falls back to looking every
    IdlePollInterval= (default 10 s).
"""

import argparse
import json
import mmap
import os
import platform
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.dont_write_bytecode = True
SOURCE_ROOT = Path(__file__).resolve().parent.parent

import thpdtest  # noqa: E402
from thpdtest import storm  # noqa: E402
from benchlib import context_switches, cpu_ticks, percentile, render, switches_between  # noqa: E402

SKIP = 77
TARGET_BEYOND_STORM_AFTER = 3.0
QUIET_BEFORE_IDLE = 7.0
MIB = 1024 * 1024
PAGE = 4096
# On a disk file system: page cache on tmpfs would be shmem, which without swap cannot be
# reclaimed.
WORK_DIR = Path('/var/tmp')

# (label, [Storm] settings, StormAfter in s, Window in s, share of --reps)
LATENCY_CONFIGS = (
    ('default thresholds', {'IdlePollInterval': '250ms'}, 3.0, 1.0, 0.5),
    ('floor: Window=1s, StormAfter=0, SampleInterval=100ms',
     {'Window': '1s', 'StormAfter': '0', 'SampleInterval': '100ms', 'IdlePollInterval': '100ms'}, 0.0, 1.0, 1.0),
)
# The default thresholds, for the worst-window comparison (storm-classify.h).
DEFAULT_FAILS_PER_SEC = 10.0
DEFAULT_STALLS_PER_SEC = 1.0
DEFAULT_FAIL_RATIO = 0.5
DEFAULT_PRESSURE_PERCENT = 10.0
DEFAULT_WINDOW = 1
# The PSI trigger's level (STORM_WAKE_PERCENT in storm-classify.h): 0.2 % of a 2 s window.
WAKE_STALL_USEC = 4_000
WAKE_WINDOW = 2.0
TRACE = SOURCE_ROOT / 'tests' / 'data' / 'storm' / 'recorded-storm.txt'
TARGET_FROM_ONSET = 5.0
REPLAY_BEFORE_ONSET = 20.0


class BenchError(Exception):
    """The benchmark could not measure what it set out to."""


def kernel_counters():
    vmstat = dict(line.split() for line in Path('/proc/vmstat').read_text().splitlines())
    psi = Path('/proc/pressure/memory')
    some = int(psi.read_text().splitlines()[0].rsplit('total=', 1)[1]) if psi.exists() else 0
    counters = {k: int(vmstat.get(k, 0)) for k in ('compact_stall', 'compact_fail', 'compact_success',
                                                   'thp_fault_alloc', 'thp_fault_fallback')}
    counters.update(time=time.monotonic(), psi_some_usec=some)
    return counters


def kill_with_parent():
    """preexec_fn: the child dies with this process."""
    import ctypes
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def load_trace(path):
    """(rows as dicts of the columns, the storm onset in trace seconds) of a recorded trace."""
    header, rows, onset = None, [], None
    for line in path.read_text().splitlines():
        if line.startswith('#'):
            m = re.search(r'onset at t_ms=(\d+)', line)
            if m:
                onset = int(m.group(1)) / 1000
        elif line:
            if header is None:
                header = line.split()
            else:
                rows.append(dict(zip(header, (int(v) for v in line.split()))))
    if onset is None:
        raise BenchError(f'{path} names no onset ("onset at t_ms=")')
    return rows, onset


def trace_wake(rows, onset):
    """Seconds after the onset at which the trace's memory "some" stall over the last 2 s first
    reached the PSI trigger's level, at the trace's 1 s resolution; None if never."""
    for i, row in enumerate(rows):
        t = row['t_ms'] / 1000
        if t < onset:
            continue
        earlier = [r for r in rows[:i] if t - r['t_ms'] / 1000 <= WAKE_WINDOW + 0.1]
        if earlier and row['psi_memory_some_usec'] - earlier[0]['psi_memory_some_usec'] >= WAKE_STALL_USEC:
            return t - onset
    return None


class TraceReplay:
    """Plays a recorded trace into a scratch procfs at its own pace: like storm.FakeKernel,
    every 20 ms, with each counter interpolated between the trace's 1 s samples, and khugepaged
    and kcompactd0 as fake kernel threads with the trace's CPU times. start() writes the sample
    at trace time begin, and returns the CLOCK_MONOTONIC time that stands for it."""

    TICK = 0.02
    THREADS = {storm.KHUGEPAGED_PID: ('khugepaged', 'khugepaged_cpu_usec'),
               storm.KCOMPACTD_PID: ('kcompactd0', 'kcompactd_cpu_usec')}

    def __init__(self, procfs, rows, begin):
        self.procfs = Path(procfs)
        self.rows = rows
        self.begin = begin
        self.started = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        (self.procfs / 'pressure').mkdir(exist_ok=True)

    def start(self):
        self.started = time.monotonic()
        self._write(self.begin)
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        if self._thread.ident is not None:
            self._thread.join()

    def _run(self):
        while not self._stop.wait(self.TICK):
            self._write(self.begin + time.monotonic() - self.started)

    def _at(self, t):
        """The trace's counters at trace time t, interpolated; the last sample after its end."""
        ms = t * 1000
        for a, b in zip(self.rows, self.rows[1:]):
            if a['t_ms'] <= ms < b['t_ms']:
                f = (ms - a['t_ms']) / (b['t_ms'] - a['t_ms'])
                return {k: a[k] + (b[k] - a[k]) * f for k in a}
        return self.rows[-1] if ms >= self.rows[-1]['t_ms'] else self.rows[0]

    def _write(self, t):
        v = self._at(t)
        vmstat = [f'{name} {int(v[name])}\n' for name in thpdtest.VMSTAT_COUNTERS if name in v]
        vmstat.append(f'allocstall_normal {int(v["allocstall"])}\n')
        storm.FakeKernel._replace(self.procfs / 'vmstat', ''.join(vmstat))
        storm.FakeKernel._replace(self.procfs / 'pressure' / 'memory',
                                       f'some avg10=0.00 avg60=0.00 avg300=0.00 total={int(v["psi_memory_some_usec"])}\n'
                                       f'full avg10=0.00 avg60=0.00 avg300=0.00 total={int(v["psi_memory_full_usec"])}\n')
        for pid, (comm, column) in self.THREADS.items():
            directory = self.procfs / str(pid)
            directory.mkdir(exist_ok=True)
            ticks = int(v[column] * storm.CLK_TCK / 1e6)
            storm.FakeKernel._replace(
                directory / 'stat',
                f'{pid} ({comm}) S 2 0 0 0 -1 {storm.KTHREAD_FLAGS} 0 0 0 0 0 {ticks} 0 0 20 0 1 0 27 0 0 '
                '18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 17 1 0 0 0\n')
            storm.FakeKernel._replace(directory / 'comm', f'{comm}\n')


class Run:
    """One thpd with its scratch tree, fake kernel (scratch procfs only) and signal monitor."""

    def __init__(self, daemon, monitor, fake):
        self.daemon, self.monitor, self.fake = daemon, monitor, fake

    def close(self):
        self.monitor.close()
        if self.daemon.running:
            self.daemon.stop()
        self.daemon.close()
        if self.fake:
            self.fake.stop()


class Bench:

    def __init__(self, args):
        self.args = args
        self.dir = Path(tempfile.mkdtemp(prefix='thpd-bench-storm-', dir=WORK_DIR))
        self.stack = None
        self.runs = 0
        self.workers = []

    def close(self):
        for proc in self.workers:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        if self.stack:
            self.stack.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def start_stack(self):
        self.stack = thpdtest.Stack()
        self.stack.start()

    def start_thpd(self, settings, real_procfs=False, log_level='info', play=None):
        """play: procfs -> a started fake kernel for the scratch procfs (storm.FakeKernel
        by default)."""
        self.runs += 1
        d = self.dir / f'run-{self.runs}'
        kernel = thpdtest.ScratchKernel(d / 'kernel')
        fake = None if real_procfs else (play or (lambda procfs: storm.FakeKernel(procfs).start()))(kernel.procfs)
        (d / 'policy.d').mkdir()
        config = d / 'thpd.conf'
        config.write_text('[Storm]\n' + ''.join(f'{k}={v}\n' for k, v in settings.items()))
        argv = [str(self.args.thpd), '--user', f'--sysfs={kernel.sysfs}',
                f'--procfs={"/proc" if real_procfs else kernel.procfs}', f'--runtime-dir={d / "run"}',
                f'--policy-dir={d / "policy.d"}', f'--config={config}', f'--log-level={log_level}']
        daemon = thpdtest.Thpd(argv, self.stack.env, d / 'thpd.log', d / 'notify')
        try:
            daemon.wait_ready()
            monitor = storm.SignalMonitor(self.stack.env, str(self.args.thpd_ctl))
        except BaseException:
            daemon.close()
            if fake:
                fake.stop()
            raise
        return Run(daemon, monitor, fake)

    # Phase 1b

    def trace_phase(self):
        rows, onset = load_trace(TRACE)
        reps = max(1, round(self.args.reps * 0.3))
        detected, mitigated = [], []
        print(f'latency, {TRACE.name} replayed at the defaults: {reps} run(s) ...', flush=True)
        for _ in range(reps):
            begin = onset - REPLAY_BEFORE_ONSET - random.uniform(0, 1)
            run = self.start_thpd({'Action': 'mitigate', 'IdlePollInterval': '250ms'},
                                  play=lambda procfs: TraceReplay(procfs, rows, begin).start())
            try:
                at_onset = run.fake.started + (onset - begin)
                event = run.monitor.wait_for('StormDetected', timeout=REPLAY_BEFORE_ONSET + 30)
                if event['kind'] != 'direct-compaction':
                    raise BenchError(f'StormDetected for {event["kind"]}, expected direct-compaction')
                if event['received'] < at_onset:
                    raise BenchError(f'StormDetected {at_onset - event["received"]:.1f} s before the onset')
                applied = run.monitor.wait_for('Applied', timeout=5)
                if applied['changes'] != [{'knob': 'defrag', 'old': 'madvise', 'new': 'defer',
                                           'reason': 'storm mitigation'}]:
                    raise BenchError(f'unexpected mitigation: {applied["changes"]}')
                detected.append(event['received'] - at_onset)
                mitigated.append(applied['received'] - at_onset)
            finally:
                run.close()
        return dict(detected=detected, mitigated=mitigated, wake=trace_wake(rows, onset))

    # Phase 1

    def latency_phase(self):
        results = []
        for label, settings, storm_after, window, share in LATENCY_CONFIGS:
            reps = max(1, round(self.args.reps * share))
            samples = []
            print(f'latency, {label}: {reps} run(s) ...', flush=True)
            for _ in range(reps):
                run = self.start_thpd(settings)
                try:
                    time.sleep(1.0 + random.uniform(0, window))
                    onset = run.fake.set_shape(storm.COMPACTION_STORM)
                    event = run.monitor.wait_for('StormDetected', timeout=storm_after + 3 * window + 15)
                    if event['kind'] != 'direct-compaction':
                        raise BenchError(f'StormDetected for {event["kind"]}, expected direct-compaction')
                    samples.append(event['received'] - onset)
                finally:
                    run.close()
            results.append((label, storm_after, samples))
        return results

    # Phase 2

    def start_worker(self, kind):
        with open(self.dir / f'worker-{kind}.log', 'w') as log:
            proc = subprocess.Popen([sys.executable, '-B', __file__, '--worker', kind, '--work-dir', str(self.dir),
                                     f'--fp-resident-percent={self.args.fp_resident_percent}'],
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
                                    preexec_fn=kill_with_parent)
        self.workers.append(proc)
        return proc

    def false_positive_phase(self):
        seconds = self.args.fp_minutes * 60
        run = self.start_thpd({}, real_procfs=True, log_level='debug')
        try:
            kinds = ('memory', 'cache', 'compile')
            workers = [self.start_worker(kind) for kind in kinds]
            samples = [kernel_counters()]
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))
                samples.append(kernel_counters())
            alive = [kind for kind, w in zip(kinds, workers) if w.poll() is None]
            for w in workers:
                if w.poll() is None:
                    w.kill()
                w.wait()
            detected = run.monitor.named('StormDetected')
            state = self.stack.run('busctl', '--user', 'get-property', storm.BUS_NAME, storm.BUS_PATH,
                                   storm.INTERFACE, 'StormState').stdout.split()[-1].strip('"')
            log = run.daemon.log()
        finally:
            run.close()
        worker_logs = {kind: (self.dir / f'worker-{kind}.log').read_text().strip()
                       for kind in ('memory', 'cache', 'compile')}
        return dict(seconds=seconds, detected=detected, state=state, samples=samples, alive=alive,
                    wakes=len(re.findall(r'^Memory pressure above', log, re.MULTILINE)),
                    idles=len(re.findall(r'^Storm watcher idle again', log, re.MULTILINE)),
                    trigger='No PSI trigger' not in log, worker_logs=worker_logs)

    # Phase 3

    def idle_phase(self, real_procfs):
        run = self.start_thpd({}, real_procfs=real_procfs, log_level='debug')
        try:
            time.sleep(QUIET_BEFORE_IDLE)
            pid = run.daemon.pid
            log_before = len(run.daemon.log())
            before = (time.monotonic(), context_switches(pid), cpu_ticks(pid))
            time.sleep(self.args.idle_seconds)
            after = (time.monotonic(), context_switches(pid), cpu_ticks(pid))
            log_lines = run.daemon.log()[log_before:].splitlines()
            trigger = 'No PSI trigger' not in run.daemon.log()
        finally:
            run.close()
        switches = switches_between(before[1], after[1])
        return dict(seconds=after[0] - before[0], switches=switches, threads=len(after[1]),
                    ticks=after[2] - before[2], wakes=[l for l in log_lines if l.startswith('Memory pressure above')],
                    trigger=trigger)


# Workers of phase 2, run as "bench-storm.py --worker KIND"

def meminfo(name):
    for line in Path('/proc/meminfo').read_text().splitlines():
        if line.startswith(name + ':'):
            return int(line.split()[1]) * 1024
    return 0


def worker_memory(work_dir, resident_percent):
    # A long-lived resident set (a database's buffer pool, a JVM heap) that leaves the page
    # cache and the churn below less room, so the kernel reclaims and compacts as it would on
    # a busy server.
    resident = int(meminfo('MemTotal') * resident_percent / 100) // MIB * MIB
    resident = max(0, min(resident, meminfo('MemAvailable') - 6144 * MIB))
    held = mmap.mmap(-1, resident, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS) if resident else None
    for offset in range(0, resident, PAGE):
        held[offset] = 1
    print(f'resident set {resident // MIB} MiB', file=sys.stderr, flush=True)
    rng = random.Random(1)
    for n in range(sys.maxsize):
        size = rng.choice((64, 128, 256, 512, 1024)) * MIB
        if meminfo('MemAvailable') < size + 4096 * MIB:
            time.sleep(1)
            continue
        m = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        if rng.random() < 0.5:
            m.madvise(mmap.MADV_HUGEPAGE)
        for offset in range(0, size, PAGE):
            m[offset] = 1
        time.sleep(rng.uniform(0, 1))
        m.close()
        if n % 100 == 99:
            print(f'{n + 1} allocations', file=sys.stderr, flush=True)


def worker_cache(work_dir):
    big = work_dir / 'cache-read.bin'
    block = os.urandom(MIB)
    with open(big, 'wb') as f:
        for _ in range(2048):
            f.write(block)
    buf = bytearray(MIB)
    for round_ in range(sys.maxsize):
        with open(big, 'rb', buffering=0) as f:
            while f.readinto(buf):
                pass
        if round_ % 3 == 0:
            small = work_dir / 'cache-write.bin'
            with open(small, 'wb') as f:
                for _ in range(256):
                    f.write(block)
                f.flush()
                os.fsync(f.fileno())
            small.unlink()


def worker_compile(work_dir):
    if not shutil.which('meson') or not shutil.which('ninja') or not shutil.which('cc'):
        print('compile loop skipped: meson, ninja or cc missing', file=sys.stderr)
        return
    build = work_dir / 'compile'
    setup = subprocess.run(['meson', 'setup', str(build), str(SOURCE_ROOT), '-Dtests=false'],
                           capture_output=True, text=True, check=False)
    if setup.returncode != 0:
        print(f'compile loop skipped: meson setup failed:\n{setup.stdout[-2000:]}{setup.stderr[-2000:]}',
              file=sys.stderr)
        return
    for n in range(sys.maxsize):
        subprocess.run(['ninja', '-C', str(build), '-t', 'clean'], capture_output=True, check=False)
        done = subprocess.run(['ninja', '-C', str(build), '-j2'], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            print(f'build {n} failed:\n{done.stdout[-2000:]}', file=sys.stderr)
            return
        print(f'build {n} done', file=sys.stderr, flush=True)


# Report

def worst_window(samples, seconds):
    """The seconds-long span (by 1 s samples) with the most compaction stalls: its figures."""
    best = None
    for i in range(len(samples) - seconds):
        a, b = samples[i], samples[i + seconds]
        dt = b['time'] - a['time']
        stalls = b['compact_stall'] - a['compact_stall']
        fail = b['compact_fail'] - a['compact_fail']
        done = fail + b['compact_success'] - a['compact_success']
        psi = 100 * (b['psi_some_usec'] - a['psi_some_usec']) / (dt * 1e6)
        figures = (stalls / dt, fail / done if done else 0.0, psi)
        if best is None or (figures[0], figures[2]) > (best[0], best[2]):
            best = figures
    return best


def report(args, latency, trace, fp, idle_real, idle_poll):
    tck = os.sysconf('SC_CLK_TCK')
    rows = [('measurement', 'measured', 'target', 'result')]

    for what, samples in (('detected', trace['detected']), ('mitigated (defrag=defer written)', trace['mitigated'])):
        rows.append((f'recorded storm replayed at the defaults: {what}, after the onset',
                     f'n={len(samples)}  min {min(samples):.2f}  median {percentile(samples, 50):.2f}  '
                     f'max {max(samples):.2f} s', f'< {TARGET_FROM_ONSET:g} s',
                     'PASS' if max(samples) < TARGET_FROM_ONSET else 'MISS'))
    rows.append(('  PSI trigger level (4 ms of 2 s) reached in the trace, after the onset',
                 'never' if trace['wake'] is None else f'{trace["wake"]:.0f} s (1 s resolution)', '', ''))

    for label, storm_after, samples in latency:
        beyond = [s - storm_after for s in samples]
        measured = (f'n={len(samples)}  min {min(samples):.2f}  median {percentile(samples, 50):.2f}  '
                    f'max {max(samples):.2f} s')
        rows.append((f'detection latency, {label} (StormAfter={storm_after:g}s)', measured, '', ''))
        rows.append(('  of which beyond StormAfter=', f'min {min(beyond):.2f}  median {percentile(beyond, 50):.2f}  '
                     f'max {max(beyond):.2f} s', f'< {TARGET_BEYOND_STORM_AFTER:g} s',
                     'PASS' if max(beyond) < TARGET_BEYOND_STORM_AFTER else 'MISS'))

    if fp:
        minutes = fp['seconds'] / 60
        rows.append((f'false positives, {minutes:g} min ordinary workload, real /proc, defaults',
                     f'{len(fp["detected"])} StormDetected (StormState at the end: {fp["state"]})', '0',
                     'PASS' if not fp['detected'] else 'MISS'))
        rows.append(('  PSI trigger wake-ups / back to idle', f'{fp["wakes"]} / {fp["idles"]}'
                     + ('' if fp['trigger'] else ' (no PSI trigger: polled)'), '', ''))
        first, last = fp['samples'][0], fp['samples'][-1]
        dt = last['time'] - first['time']
        rows.append(('  kernel over the run', f'{last["compact_stall"] - first["compact_stall"]} compaction stalls '
                     f'({last["compact_fail"] - first["compact_fail"]} failed), '
                     f'{last["thp_fault_alloc"] - first["thp_fault_alloc"]} THP faults '
                     f'({last["thp_fault_fallback"] - first["thp_fault_fallback"]} fell back), PSI memory some '
                     f'{100 * (last["psi_some_usec"] - first["psi_some_usec"]) / (dt * 1e6):.2f}%', '', ''))
        worst = worst_window(fp['samples'], DEFAULT_WINDOW)
        if worst:
            rows.append((f'  worst {DEFAULT_WINDOW} s of it (thresholds: failing >{DEFAULT_FAIL_RATIO:g} and '
                         f'{DEFAULT_FAILS_PER_SEC:g} failed/s, or {DEFAULT_STALLS_PER_SEC:g} stalls/s with '
                         f'{DEFAULT_PRESSURE_PERCENT:g}% PSI)',
                         f'{worst[0]:.1f} stalls/s, {100 * worst[1]:.0f}% failed, PSI some {worst[2]:.2f}%', '', ''))

    for label, idle, target in (('real /proc, PSI trigger', idle_real, True),
                                ('scratch procfs, polling every 10s', idle_poll, False)):
        if not idle:
            continue
        mode = 'PSI trigger' if idle['trigger'] else 'polling'
        rows.append((f'wakeups while calm, {label} ({idle["seconds"]:.0f} s, {idle["threads"]} thread(s), {mode})',
                     f'{idle["switches"]} context switches', '0' if target else '(reference)',
                     ('PASS' if idle['switches'] == 0 else 'MISS') if target else ''))
        rows.append(('  CPU time while calm', f'{idle["ticks"] * 1000 / tck:.0f} ms', '', ''))

    print()
    print(render(rows))
    print()
    cpus = os.cpu_count()
    version = subprocess.run([str(args.thpd), '--version'], capture_output=True, text=True, check=False)
    commit = subprocess.run(['git', '-C', str(SOURCE_ROOT), 'describe', '--always', '--dirty'],
                            capture_output=True, text=True, check=False)
    print(f'kernel: {platform.release()}; CPUs: {cpus}; load average at the end: '
          f'{" ".join(Path("/proc/loadavg").read_text().split()[:3])}')
    print(f'thpd: {version.stdout.strip()} ({args.thpd}), source {commit.stdout.strip() or "?"}')
    for label, storm_after, samples in latency:
        print(f'latency samples, {label}: ' + ', '.join(f'{s:.2f}' for s in samples))
    print(f'recorded storm ({TRACE.name}), detected: ' + ', '.join(f'{s:.2f}' for s in trace['detected'])
          + '; mitigated: ' + ', '.join(f'{s:.2f}' for s in trace['mitigated']))
    if fp:
        for event in fp['detected']:
            print(f'false positive: {json.dumps(event)}')
        if len(fp['alive']) < 3:
            print(f'note: workers still running at the end: {fp["alive"]}')
        for kind, text in fp['worker_logs'].items():
            lines = text.splitlines()
            if lines:
                print(f'worker {kind}: {lines[-1]}' + (f' ({len(lines)} lines)' if len(lines) > 1 else ''))
    if idle_real:
        for line in idle_real['wakes']:
            print(f'PSI wake-up while calm (real memory pressure elsewhere on the machine): {line}')


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    build = SOURCE_ROOT / 'build' / 'src'
    parser.add_argument('--thpd', type=Path, default=Path(os.environ.get('THPD_BIN') or build / 'daemon' / 'thpd'))
    parser.add_argument('--thpd-ctl', type=Path, default=Path(os.environ.get('THPD_CTL_BIN') or build / 'ctl' / 'thpd-ctl'))
    parser.add_argument('--reps', type=int, default=10,
                        help='latency runs of the floor configuration; half as many with the defaults, '
                             'a third with the recorded storm (default 10)')
    parser.add_argument('--fp-minutes', type=float, default=10.0,
                        help='false-positive run length, 0 to skip (default 10)')
    parser.add_argument('--fp-resident-percent', type=float, default=50.0,
                        help='long-lived memory of the workload, in %% of MemTotal; at least 6 GiB stay '
                             'available (default 50)')
    parser.add_argument('--idle-seconds', type=float, default=60.0, help='calm window (default 60)')
    parser.add_argument('--worker', choices=('memory', 'cache', 'compile'), help=argparse.SUPPRESS)
    parser.add_argument('--work-dir', type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.reps < 1 or args.fp_minutes < 0 or args.idle_seconds <= 0:
        parser.error('--reps must be at least 1, --fp-minutes not negative, --idle-seconds positive')
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        if args.worker == 'memory':
            worker_memory(args.work_dir, args.fp_resident_percent)
        else:
            {'cache': worker_cache, 'compile': worker_compile}[args.worker](args.work_dir)
        return 0

    reason = thpdtest.stack_unavailable_reason()
    for exe in (args.thpd, args.thpd_ctl):
        if reason is None and not os.access(exe, os.X_OK):
            reason = f'{exe} is not an executable; build thpd or pass --thpd/--thpd-ctl'
    if reason:
        print(f'bench-storm: skipped: {reason}', file=sys.stderr)
        return SKIP
    real_psi = Path('/proc/pressure/memory').exists()
    if not real_psi:
        print('bench-storm: /proc has no PSI: the real-/proc phases show the polling fallback', file=sys.stderr)

    bench = Bench(args)
    fp = idle_real = idle_poll = None
    try:
        bench.start_stack()
        latency = bench.latency_phase()
        trace = bench.trace_phase()
        if args.fp_minutes > 0:
            print(f'false positives: {args.fp_minutes:g} min of ordinary workload ...', flush=True)
            fp = bench.false_positive_phase()
        print(f'calm: {args.idle_seconds:g} s on the real /proc, then on the scratch procfs ...', flush=True)
        idle_real = bench.idle_phase(real_procfs=True)
        idle_poll = bench.idle_phase(real_procfs=False)
    except (BenchError, AssertionError, RuntimeError, OSError) as e:
        print(f'bench-storm: failed: {e}', file=sys.stderr)
        return 1
    finally:
        bench.close()
    report(args, latency, trace, fp, idle_real, idle_poll)
    return 0


if __name__ == '__main__':
    sys.exit(main())
