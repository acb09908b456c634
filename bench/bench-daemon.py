#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Daemon benchmark: how fast thpd reacts to a unit start, and what it costs while busy and idle.

A benchmark, not a test: it prints tables with the figures beside their targets and exits 0
whatever they are. It exits 1 when the benchmark itself could not run to the end, and 77
("skipped") where the stack cannot run (not root, no systemd, no python3-gi). Without gamemoded
the memory phase prints thpd's figures alone.

How to run (as root, with Debian's /usr/bin/python3, which has python3-gi):

    meson setup build && ninja -C build
    meson test --benchmark -C build            # the full run, about two minutes
    PYTHONPATH=tests /usr/bin/python3 -B bench/bench-daemon.py --thpd build/src/daemon/thpd
    PYTHONPATH=tests /usr/bin/python3 -B bench/bench-daemon.py --thpd build/src/daemon/thpd \\
        --cycles 20 --resource-cycles 50 --idle-seconds 5       # a smoke run
    PYTHONPATH=tests /usr/bin/python3 -B bench/bench-daemon.py --thpd build/src/daemon/thpd --memory-only  # phase 4 alone

Plain "meson test" does not run it. The defaults are the figures of the daemon issue: 200
latency cycles, 1,000 resource cycles, 60 s idle. The machine should be otherwise quiet: on a
small machine other work shows up directly in the latency percentiles (the load average is
printed with the results).

Set-up (the harness package tests/thpdtest/, imported unchanged)
    A private systemd --user manager with its own session bus (thpdtest.Stack), and thpd --user
    on a scratch sysfs tree at kernel defaults (enabled and defrag "madvise") with one policy,
    Units=thpd-bench.service, Enabled=never, Defrag=never. thpd-bench.service is a real unit
    file (ExecStart=/bin/sleep infinity) in the stack's user unit directory; this process starts
    and stops it with StartUnit/StopUnit(..., "replace") on the manager's D-Bus API, as
    systemctl does. The scratch knobs are plain files in $TMPDIR, so a write costs what a small
    file write costs there, not what the kernel's sysfs store handler costs. thpd gets the real
    /proc when it has pressure/memory (--procfs=auto): production-like, so the storm watcher can
    use a PSI trigger instead of polling; thpd only reads it, as the policy has no hugetlb pool.
    In every phase thpd gets the Environment= of units/thpd.service.in, as systemd would give it.
    This process runs at --nice -20 so that it gets the CPU promptly when an event arrives; that
    can only delay thpd, never speed it up.

Phase 1, latency (--cycles, default 200), thpd at --log-level=debug
    This process calls Subscribe() and follows JobNew/JobRemoved in a GLib main loop; the same
    loop watches the scratch "enabled" and "defrag" files and thpd's log file with inotify (libc
    inotify_init1/inotify_add_watch through ctypes). All stamps are CLOCK_MONOTONIC in this
    process.
      - JobNew is stamped on receipt: by a GDBus filter, which runs in GDBus's reader thread as
        soon as the message is read off the socket. thpd reads its own copy of the same
        broadcast; the interval therefore starts when the signal reaches a reader, which is the
        moment the issue asks about. (Stamping when the main loop dispatches the signal is
        printed too: it is later, and sometimes after thpd has already finished.)
      - The verified write: thpd sets a knob with open(O_TRUNC)+write+close and then reads it
        back. On the knob file that is IN_CLOSE_WRITE followed by IN_CLOSE_NOWRITE; the stamp
        is that IN_CLOSE_NOWRITE (thpd's read-back). This process reads the knobs only after
        both knobs were seen verified, to check their values.
    Rows:
      - JobNew -> enabled write verified: the headline (target: p99 under 5 ms);
      - JobNew -> all policy knobs verified (defrag is written after enabled);
      - StartUnit call -> enabled verified: an upper bound that adds systemd's own work before
        it emits JobNew, and is immune to a late JobNew stamp;
      - thpd's own view, from its debug log ("UNIT: job N queued" when it handles JobNew,
        "enabled: madvise -> never (...)" after the verified write; stamped when inotify reports
        the line, as the log has no timestamps): how many cycles thpd logged the job before the
        reader thread here had stamped JobNew (the interval then understates by that lead,
        and a negative interval is possible), the delivery skew, and thpd's own processing;
      - StopUnit call -> enabled restored, for information.
    Each cycle waits for the start job to finish and both knobs to read "never", then stops the
    unit and waits for the stop job and the baseline on both knobs, then lets the loop idle for
    --settle-ms, so cycles never overlap. Percentiles are nearest-rank (p99 of 200 samples is
    the 198th smallest).

Phase 2, resources (--resource-cycles, default 1000), a fresh thpd at its default log level
    VmRSS, VmHWM, RssAnon and RssFile from /proc/PID/status, Pss from smaps_rollup, and
    utime+stime (fields 14 and 15 of /proc/PID/stat: CLK_TCK ticks, so CPU time has that
    resolution) after READY=1 and a second of quiet, then every 100 cycles. "VmRSS growth"
    compares cycle 100 with the last, so warm-up (hash tables, malloc arenas, the bus) is not
    taken for a leak. Context switches are voluntary + nonvoluntary over /proc/PID/task/*/status
    (every thread).

Phase 3, idle (--idle-seconds, default 60), the same thpd
    After 7 s of quiet (thpd trims its heap 5 s after its last apply), with no unit changing and this process only listening, the
    context switches of every thpd thread and its CPU time are read before and after. A daemon
    asleep in epoll_wait has none; each wakeup costs at least one voluntary switch. thpd's armed
    timers are listed (timerfds in /proc/PID/fdinfo), and what its log says about the storm
    watcher (PSI trigger or polling). If a wakeup is counted, the bus signals seen while idle
    are listed and thpd is traced afterwards (strace -f -tt for --strace-seconds; never during
    the measured window, where ptrace stops would count as switches).

Phase 4, memory (--memory-cycles, default 100), fresh daemons, each alone on the bus
    What thpd costs the machine, beside gamemoded (Debian package gamemode), a daemon on the same
    stack (C, sd-bus, inih). A fresh thpd at its default log level runs --memory-cycles start/stop
    cycles, then 7 s of quiet (its heap trim); if the unit has an Environment=, a second fresh
    thpd runs without it, for comparison. Then gamemoded runs in the foreground on the same private session bus (it finds
    the bus as thpd --user does, through DBUS_SESSION_BUS_ADDRESS) and is measured 7 s after it
    owns com.feralinteractive.GameMode, with no client. Only one of them runs at a time.
    Printed: /proc/PID/smaps summed per object and ELF segment (bench/smaps.py: text, rodata,
    relro, data, bss; [heap], [stack], [anon]), Rss, Pss and Private_Dirty for thpd and gamemoded
    side by side; then Private_Dirty, Pss, Rss and Anonymous from smaps_rollup and the thread
    count of each. Private_Dirty (pages only this process maps and that cannot be dropped) is
    what the daemon costs on its own; Pss also shares out library pages among whatever else
    maps them, so it depends on the rest of the machine. The target: thpd's Private_Dirty at or
    below gamemoded's in the same run.

The harness (thpdtest.Thpd) empties the notification socket from a thread, as systemd would:
thpd sends STATUS= on every change, and with ten datagrams unread (net.unix.max_dgram_qlen)
its sd_notify() would block.
"""

import argparse
import os
import platform
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.dont_write_bytecode = True
SOURCE_ROOT = Path(__file__).resolve().parent.parent

import smaps  # noqa: E402
import thpdtest  # noqa: E402
from benchlib import (IN_CLOSE_NOWRITE, IN_CLOSE_WRITE, IN_MODIFY, Inotify, context_switches,  # noqa: E402
                      cpu_ticks, percentile, render, switches_between)

SKIP = 77

UNIT = 'thpd-bench.service'
UNIT_FILE = """\
[Unit]
Description=thpd benchmark workload

[Service]
ExecStart=/bin/sleep infinity
"""
POLICY = f"""\
[Policy]
Description=thpd benchmark
Units={UNIT}
[TransparentHugePages]
Enabled=never
Defrag=never
"""
KNOBS = ('enabled', 'defrag')
BASELINE = {'enabled': 'madvise', 'defrag': 'madvise'}
APPLIED = {'enabled': 'never', 'defrag': 'never'}

SYSTEMD = 'org.freedesktop.systemd1'
SYSTEMD_PATH = '/org/freedesktop/systemd1'
SYSTEMD_MANAGER = 'org.freedesktop.systemd1.Manager'

TARGET_P99_MS = 5.0
TARGET_RSS_KIB = 4 * 1024
CYCLE_TIMEOUT = 10.0
CHECKPOINT_EVERY = 100
# thpd hands freed heap back to the kernel 5 s after its last apply (TRIM_DELAY_USEC in
# src/daemon/manager.c): that wakeup belongs to the activity before the idle window, not to it.
QUIET_BEFORE_IDLE = 7.0

UNIT_TEMPLATE = SOURCE_ROOT / 'units' / 'thpd.service.in'
GAMEMODE_NAME = 'com.feralinteractive.GameMode'
READY_TIMEOUT = 30.0

class BenchError(Exception):
    """The benchmark could not measure what it set out to."""


def now_ns():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def read_status(pid):
    """/proc/PID/status as {field: kB or count}, for the numeric fields we use."""
    fields = {}
    for line in Path(f'/proc/{pid}/status').read_text().splitlines():
        key, _, value = line.partition(':')
        if key in ('VmRSS', 'VmHWM', 'RssAnon', 'RssFile', 'RssShmem', 'Threads'):
            fields[key] = int(value.split()[0])
    return fields


def read_pss(pid):
    """Proportional set size in kB: shared library pages divided among the processes mapping them."""
    for line in Path(f'/proc/{pid}/smaps_rollup').read_text().splitlines():
        if line.startswith('Pss:'):
            return int(line.split()[1])
    return None


def armed_timers(pid):
    """Descriptions of thpd's timerfds that are armed now."""
    armed = []
    for fd in Path(f'/proc/{pid}/fd').iterdir():
        try:
            if os.readlink(fd) != 'anon_inode:[timerfd]':
                continue
            text = (Path(f'/proc/{pid}/fdinfo') / fd.name).read_text()
            info = dict(line.split(':', 1) for line in text.splitlines() if ':' in line)
        except FileNotFoundError:
            continue
        value = info.get('it_value', '').strip()
        if value and value.replace(' ', '') != '(0,0)':
            armed.append(f'fd {fd.name} clockid {info.get("clockid", "?").strip()} it_value {value} '
                         f'it_interval {info.get("it_interval", "?").strip()}')
    return armed


def ms(ns):
    return ns / 1e6


def unit_environment():
    """The Environment= assignments of thpd.service, which systemd gives the daemon."""
    env = {}
    for line in UNIT_TEMPLATE.read_text().splitlines():
        if line.startswith('Environment='):
            for assignment in shlex.split(line[len('Environment='):]):
                key, _, value = assignment.partition('=')
                env[key] = value
    return env


def loadavg():
    return ' '.join(Path('/proc/loadavg').read_text().split()[:3])


def memory_figures(label, pid):
    return {'label': label, 'mappings': smaps.by_mapping(pid), 'rollup': smaps.rollup(pid),
            'threads': smaps.threads(pid), 'loadavg': loadavg()}


class Bench:
    def __init__(self, args):
        # Imported here so that a machine without them is "skipped", not a traceback.
        from gi.repository import Gio, GLib

        self.args = args
        self.Gio = Gio
        self.GLib = GLib
        self.context = GLib.MainContext.default()
        self.tmp = Path(tempfile.mkdtemp(prefix='thpd-bench-'))
        self.stack = thpdtest.Stack()
        self.thpd = None
        self.inotify = None
        self.sources = []
        self.error = None
        self.log_offset = 0
        self.log_tail = b''
        self.bus = None
        self.signal_ids = []
        self.signals_seen = []
        self.job_receipts = {}   # job path -> t, written by GDBus's worker thread
        self.reset_phase()

    # ----- set-up and tear-down

    def start_stack(self):
        self.stack.start()
        # Stack.start() writes the manager's XDG_CONFIG_HOME there (see thpdtest.Stack).
        unit_dir = self.stack.dir / 'config' / 'systemd' / 'user'
        (unit_dir / UNIT).write_text(UNIT_FILE)
        Gio = self.Gio
        self.bus = Gio.DBusConnection.new_for_address_sync(
            self.stack.bus_address,
            Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION,
            None, None)
        self.bus.add_filter(self.on_message_received)
        self.manager_call_sync('Reload', timeout_ms=30000)
        self.manager_call_sync('Subscribe')
        for name, handler in (('JobNew', self.on_job_new), ('JobRemoved', self.on_job_removed)):
            self.signal_ids.append(self.bus.signal_subscribe(None, SYSTEMD_MANAGER, name, SYSTEMD_PATH, None,
                                                             Gio.DBusSignalFlags.NONE, handler))

    def manager_call_sync(self, method, *args, timeout_ms=10000):
        params = self.GLib.Variant('(ss)', args) if args else None
        return self.bus.call_sync(SYSTEMD, SYSTEMD_PATH, SYSTEMD_MANAGER, method, params, None,
                                  self.Gio.DBusCallFlags.NONE, timeout_ms, None)

    def start_thpd(self, name, log_level, env=None):
        """A fresh daemon on a fresh scratch tree, watched by a fresh inotify descriptor; env is
        added to the stack's environment (by default the unit's, see unit_environment())."""
        self.stop_thpd()
        root = self.tmp / name
        root.mkdir()
        self.kernel = thpdtest.ScratchKernel(root / 'kernel')
        policy_dir = root / 'policy.d'
        policy_dir.mkdir(mode=0o755)
        (policy_dir / 'bench.conf').write_text(POLICY)
        (policy_dir / 'bench.conf').chmod(0o644)
        config = root / 'thpd.conf'
        config.write_text('[Daemon]\n')
        procfs = '/proc' if self.args.procfs == 'real' else self.kernel.procfs
        argv = [str(self.args.thpd), '--user', f'--sysfs={self.kernel.sysfs}', f'--procfs={procfs}',
                f'--runtime-dir={root / "run"}', f'--policy-dir={policy_dir}', f'--config={config}']
        if log_level:
            argv.append(f'--log-level={log_level}')
        env = unit_environment() if env is None else env
        self.thpd = thpdtest.Thpd(argv, dict(self.stack.env, **env), root / 'thpd.log', root / 'notify')
        self.thpd.wait_ready()

        self.log_offset = 0
        self.log_tail = b''
        self.inotify = Inotify()
        for knob in KNOBS:
            self.inotify.add(self.kernel.knob_path(knob), knob, IN_CLOSE_WRITE | IN_CLOSE_NOWRITE)
        self.inotify.add(self.thpd.log_path, 'log', IN_MODIFY)
        GLib = self.GLib
        self.sources = [
            GLib.unix_fd_add_full(GLib.PRIORITY_DEFAULT, self.inotify.fd, GLib.IOCondition.IN, self.on_inotify),
        ]
        self.read_log()
        self.check_knobs(BASELINE, 'after READY=1')

    def stop_thpd(self):
        for source in self.sources:
            self.GLib.source_remove(source)
        self.sources = []
        if self.inotify is not None:
            self.inotify.close()
            self.inotify = None
        thpd, self.thpd = self.thpd, None
        if thpd is not None:
            try:
                if thpd.running:
                    thpd.stop()
            finally:
                thpd.close()

    def close(self):
        try:
            if self.thpd is not None and self.thpd.running:
                self.stop_unit_quietly()
        finally:
            try:
                self.stop_thpd()
            except AssertionError as e:
                print(f'bench-daemon: while cleaning up: {e}', file=sys.stderr)
            finally:
                if self.bus is not None:
                    for sid in self.signal_ids:
                        self.bus.signal_unsubscribe(sid)
                    self.bus.close_sync(None)
                self.stack.close()
                shutil.rmtree(self.tmp, ignore_errors=True)

    def stop_unit_quietly(self):
        try:
            self.manager_call_sync('StopUnit', UNIT, 'replace')
        except self.GLib.Error:
            pass

    # ----- the main loop

    def run_until(self, predicate, timeout, what):
        timed_out = []

        def on_timeout():
            timed_out.append(True)
            return False

        source = self.GLib.timeout_add(int(timeout * 1000), on_timeout)
        try:
            while not predicate():
                if self.error is not None:
                    raise self.error
                if timed_out:
                    raise BenchError(f'timed out after {timeout:g} s waiting for {what}; thpd log:\n'
                                     f'{thpdtest._tail(self.thpd.log(), 20) if self.thpd else ""}')
                if self.thpd is not None and not self.thpd.running:
                    raise BenchError(f'thpd exited with status {self.thpd.process.returncode}:\n'
                                     f'{thpdtest._tail(self.thpd.log(), 20)}')
                self.context.iteration(True)
        finally:
            if not timed_out:
                self.GLib.source_remove(source)

    def run_for(self, seconds):
        done = []

        def on_timeout():
            done.append(True)
            return False

        self.GLib.timeout_add(int(seconds * 1000), on_timeout)
        while not done:
            self.context.iteration(True)

    # ----- event handlers: stamp first, then look

    def reset_phase(self):
        self.phase = {
            'job_new': {},       # job path -> (t, id)
            'job_removed': {},   # job path -> (t, result)
            'write': {},         # knob -> t of the first IN_CLOSE_WRITE
            'verified': {},      # knob -> t of the first read-back after a write
            'log_queued': {},    # job id -> t
            'log_set': {},       # knob -> t
        }
        self.pending_verify = set()

    def on_message_received(self, connection, message, incoming):
        """GDBus filter: runs in GDBus's worker thread as soon as a message is read off the socket,
        before the main loop dispatches it; this is where JobNew is stamped."""
        if (incoming and message.get_member() == 'JobNew' and message.get_interface() == SYSTEMD_MANAGER):
            t = now_ns()
            _, job_path, unit = message.get_body().unpack()
            if unit == UNIT:
                self.job_receipts[job_path] = t
        return message

    def on_job_new(self, connection, sender, path, interface, signal_name, params):
        t = now_ns()
        job_id, job_path, unit = params.unpack()
        if unit != UNIT:
            return
        self.phase['job_new'].setdefault(job_path, (self.job_receipts.get(job_path, t), job_id, t))

    def on_job_removed(self, connection, sender, path, interface, signal_name, params):
        t = now_ns()
        _, job_path, unit, result = params.unpack()
        if unit == UNIT:
            self.phase['job_removed'].setdefault(job_path, (t, result))

    def on_any_signal(self, connection, sender, path, interface, signal_name, params):
        self.signals_seen.append((now_ns(), f'{interface}.{signal_name}', path))

    def on_inotify(self, fd, condition):
        t = now_ns()
        for name, mask in self.inotify.read():
            if name == 'log':
                self.read_log(t)
            elif mask & IN_CLOSE_WRITE:
                self.phase['write'].setdefault(name, t)
                self.pending_verify.add(name)
            elif mask & IN_CLOSE_NOWRITE and name in self.pending_verify:
                self.pending_verify.discard(name)
                self.phase['verified'].setdefault(name, t)
        return True

    def read_log(self, t=None):
        with open(self.thpd.log_path, 'rb') as f:
            f.seek(self.log_offset)
            data = f.read()
        self.log_offset += len(data)
        *lines, self.log_tail = (self.log_tail + data).split(b'\n')
        if t is None:
            return
        for raw in lines:
            line = raw.decode(errors='replace')
            prefix = f'{UNIT}: job '
            if line.startswith(prefix) and line.endswith(' queued'):
                self.phase['log_queued'].setdefault(int(line[len(prefix):-len(' queued')]), t)
            for knob in KNOBS:
                if line.startswith(f'{knob}: {BASELINE[knob]} -> {APPLIED[knob]} '):
                    self.phase['log_set'].setdefault(knob, t)

    # ----- one start/stop cycle

    def call_async(self, method):
        reply = []

        def on_reply(connection, result):
            t = now_ns()
            try:
                reply.append((t, connection.call_finish(result).unpack()[0]))
            except self.GLib.Error as e:
                self.error = BenchError(f'{method} {UNIT} failed: {e.message}')

        t = now_ns()
        self.bus.call(SYSTEMD, SYSTEMD_PATH, SYSTEMD_MANAGER, method, self.GLib.Variant('(ss)', (UNIT, 'replace')),
                      self.GLib.VariantType('(o)'), self.Gio.DBusCallFlags.NONE, -1, None, on_reply)
        return t, reply

    def check_knobs(self, expected, when):
        have = {k: self.kernel.read_knob(k) for k in KNOBS}
        if have != expected:
            raise BenchError(f'knobs {when}: expected {expected}, have {have}; thpd log:\n'
                             f'{thpdtest._tail(self.thpd.log(), 20)}')

    def transition(self, method, expected):
        """Calls StartUnit or StopUnit; returns the phase record once the job finished and both
        knobs were written, verified by thpd and read back here as expected."""
        what = f'{method} {UNIT}'
        self.reset_phase()
        t_call, reply = self.call_async(method)
        phase = self.phase

        def done():
            return (reply and reply[0][1] in phase['job_removed'] and
                    all(k in phase['verified'] for k in KNOBS))

        self.run_until(done, CYCLE_TIMEOUT, f'{what}: its job to finish and thpd to set {expected}')
        job_path = reply[0][1]
        if phase['job_removed'][job_path][1] != 'done':
            raise BenchError(f'{what}: job {job_path} finished with "{phase["job_removed"][job_path][1]}"')
        if job_path not in phase['job_new']:
            raise BenchError(f'{what}: no JobNew signal was seen for {job_path}')
        self.check_knobs(expected, f'after {what}')
        phase['t_call'] = t_call
        phase['job_path'] = job_path
        return phase

    def cycle(self):
        start = self.transition('StartUnit', APPLIED)
        stop = self.transition('StopUnit', BASELINE)
        if self.args.settle_ms:
            self.run_for(self.args.settle_ms / 1000)
        return start, stop

    # ----- the phases

    def latency_phase(self):
        self.start_thpd('latency', 'debug')
        samples = {key: [] for key in ('jobnew_enabled', 'jobnew_all', 'call_enabled', 'loop_enabled', 'skew',
                                       'thpd_work', 'stop_enabled')}
        missing_log = ahead = 0
        for _ in range(self.args.cycles):
            start, stop = self.cycle()
            t_job, job_id, t_loop = start['job_new'][start['job_path']]
            verified = start['verified']
            samples['jobnew_enabled'].append(verified['enabled'] - t_job)
            samples['jobnew_all'].append(max(verified.values()) - t_job)
            samples['call_enabled'].append(verified['enabled'] - start['t_call'])
            samples['loop_enabled'].append(verified['enabled'] - t_loop)
            samples['stop_enabled'].append(stop['verified']['enabled'] - stop['t_call'])
            t_queued = start['log_queued'].get(job_id)
            t_set = start['log_set'].get('enabled')
            if t_queued is None or t_set is None:
                missing_log += 1
            else:
                ahead += t_queued <= t_job
                samples['skew'].append(t_queued - t_job)
                samples['thpd_work'].append(t_set - t_queued)
        self.stop_thpd()
        return samples, missing_log, ahead

    def snapshot(self):
        pid = self.thpd.pid
        return {'status': read_status(pid), 'pss': read_pss(pid), 'ticks': cpu_ticks(pid),
                'switches': context_switches(pid), 't': time.monotonic()}

    def resource_phase(self):
        self.start_thpd('resources', None)
        self.run_for(1.0)
        ready = self.snapshot()
        checkpoints = []
        for i in range(1, self.args.resource_cycles + 1):
            self.cycle()
            if i % CHECKPOINT_EVERY == 0 or i == self.args.resource_cycles:
                checkpoints.append((i, self.snapshot()))
        return ready, checkpoints

    def idle_phase(self):
        self.run_for(QUIET_BEFORE_IDLE)
        timers = armed_timers(self.thpd.pid)
        # Every signal on the bus, to tell bus traffic from a timer if thpd wakes up; only now,
        # so the cycles do not pay for it.
        self.signals_seen = []
        sid = self.bus.signal_subscribe(None, None, None, None, None, self.Gio.DBusSignalFlags.NONE,
                                        self.on_any_signal)
        before = self.snapshot()
        self.run_for(self.args.idle_seconds)
        after = self.snapshot()
        self.bus.signal_unsubscribe(sid)
        signals = list(self.signals_seen)
        # Whatever thpd says about its storm watcher tells whether it may poll while idle.
        storm_lines = [line for line in self.thpd.log().splitlines() if 'PSI' in line or 'storm' in line.lower()]
        trace = None
        if switches_between(before['switches'], after['switches']) > 0 and self.args.strace_seconds > 0:
            trace = self.trace()
        return before, after, timers, signals, trace, storm_lines

    def memory_phase(self):
        """Each daemon alone on the stack's bus, one after the other; see the module docstring."""
        # A freshly linked binary's pages stay dirty in the page cache until writeback, and smaps
        # counts them as the process's Private_Dirty.
        for exe in (self.args.thpd, shutil.which('gamemoded')):
            if exe:
                fd = os.open(exe, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
        runs = []
        env = unit_environment()
        variants = [('thpd', env)]
        if env:
            variants.append(('thpd, bare environment', {}))
        for label, extra in variants:
            self.start_thpd(f'memory-{len(runs)}', None, extra)
            for _ in range(self.args.memory_cycles):
                self.cycle()
            self.run_for(QUIET_BEFORE_IDLE)
            runs.append(memory_figures(label, self.thpd.pid))
            self.stop_thpd()
        gamemoded, why_not = self.measure_gamemoded()
        return env, runs, gamemoded, why_not

    def measure_gamemoded(self):
        """gamemoded in the foreground on the stack's session bus, as thpd --user runs; measured
        after the same quiet time once it owns its name. (figures or None, why not)"""
        exe = shutil.which('gamemoded')
        if exe is None:
            return None, 'gamemoded is not installed (Debian: apt-get install gamemode)'
        log_path = self.tmp / 'gamemoded.log'
        with open(log_path, 'wb') as log:
            proc = subprocess.Popen([exe], env=self.stack.env, stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT)
        try:
            def owns_name():
                if proc.poll() is not None:
                    raise BenchError(f'gamemoded exited with status {proc.returncode}:\n'
                                     f'{thpdtest._tail(log_path.read_text(errors="replace"), 20)}')
                return thpdtest.bus_owner(self.stack.bus_address, GAMEMODE_NAME) is not None

            thpdtest.wait_until(owns_name, READY_TIMEOUT, f'gamemoded to own {GAMEMODE_NAME}')
            self.run_for(QUIET_BEFORE_IDLE)
            version = subprocess.run([exe, '-v'], capture_output=True, text=True, check=False)
            figures = memory_figures('gamemoded', proc.pid)
            figures['version'] = version.stdout.strip().splitlines()[0] if version.stdout.strip() else '?'
            return figures, None
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def trace(self):
        if not shutil.which('strace'):
            return 'strace is not installed'
        out = self.tmp / 'strace.txt'
        proc = subprocess.Popen(['strace', '-f', '-tt', '-p', str(self.thpd.pid), '-o', str(out)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.run_for(self.args.strace_seconds)
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        text = out.read_text(errors='replace') if out.exists() else proc.stderr.read().decode(errors='replace')
        lines = text.splitlines()
        return (f'{len(lines)} line(s) in {self.args.strace_seconds:g} s:\n' + '\n'.join(lines[:60]) +
                ('\n...' if len(lines) > 60 else ''))


def machine_facts(thpd):
    cpus = os.cpu_count()
    model = '?'
    try:
        for line in Path('/proc/cpuinfo').read_text().splitlines():
            if line.startswith('model name'):
                model = line.split(':', 1)[1].strip()
                break
    except OSError:
        pass
    systemd = subprocess.run(['systemctl', '--version'], capture_output=True, text=True, check=False)
    version = subprocess.run([str(thpd), '--version'], capture_output=True, text=True, check=False)
    commit = subprocess.run(['git', '-C', str(SOURCE_ROOT), 'describe', '--always', '--dirty'],
                            capture_output=True, text=True, check=False)
    virt = subprocess.run(['systemd-detect-virt'], capture_output=True, text=True, check=False)
    return [
        ('kernel', platform.release()),
        ('load average', ' '.join(Path('/proc/loadavg').read_text().split()[:3]) + ' (at the end)'),
        ('CPUs', f'{cpus} x {model}'),
        ('virtualization', virt.stdout.strip() or 'none detected'),
        ('systemd', systemd.stdout.splitlines()[0] if systemd.stdout else '?'),
        ('thpd', f'{version.stdout.strip()} ({thpd}), source {commit.stdout.strip() or "?"}'),
        ('CLK_TCK', str(os.sysconf('SC_CLK_TCK'))),
    ]


def mib(kib):
    return f'{kib / 1024:.2f} MiB'


def report(args, latency, resources, idle):
    samples, missing_log, ahead = latency
    ready, checkpoints = resources
    before, after, timers, signals, trace, storm_lines = idle
    tck = os.sysconf('SC_CLK_TCK')
    n = args.cycles
    rows = [('measurement', 'measured', 'target', 'result')]

    def lat(label, key, target=None):
        s = samples[key]
        if not s:
            rows.append((label, 'no samples', '', ''))
            return
        p50, p90, p99, top = (ms(percentile(s, p)) for p in (50, 90, 99, 100))
        measured = f'p50 {p50:.3f}  p90 {p90:.3f}  p99 {p99:.3f}  max {top:.3f} ms'
        if min(s) < 0:
            measured += f'  ({sum(x < 0 for x in s)} negative)'
        if target is None:
            rows.append((label, measured, '', ''))
        else:
            rows.append((label, measured, f'p99 < {target:g} ms', 'PASS' if p99 < target else 'MISS'))

    lat(f'JobNew -> enabled write verified ({n} cycles)', 'jobnew_enabled', TARGET_P99_MS)
    lat('JobNew -> all policy knobs verified', 'jobnew_all')
    lat('StartUnit call -> enabled verified (upper bound)', 'call_enabled')
    lat('JobNew handled in the main loop -> enabled verified', 'loop_enabled')
    rows.append(('cycles where thpd logged the job before JobNew got here', f'{ahead} of {n}', '', ''))
    lat('thpd log: JobNew here -> thpd logs "job N queued"', 'skew')
    lat('thpd log: "job N queued" -> "enabled: ... -> never"', 'thpd_work')
    lat('StopUnit call -> enabled restored', 'stop_enabled')

    last_i, last = checkpoints[-1]
    first_i, first = checkpoints[0]
    peak = max(s['status']['VmHWM'] for s in (ready, last))
    def rss(snapshot):
        st = snapshot['status']
        return f'{mib(st["VmRSS"])} (anon {st["RssAnon"]} kB, file {st["RssFile"]} kB)'

    rows.append(('VmRSS after READY=1', rss(ready), '', ''))
    rows.append((f'VmRSS after {last_i} cycles', rss(last), f'< {mib(TARGET_RSS_KIB)}',
                 'PASS' if last['status']['VmRSS'] < TARGET_RSS_KIB else 'MISS'))
    rows.append((f'Pss after {last_i} cycles', mib(last['pss']), '', ''))
    rows.append(('VmHWM (peak RSS)', mib(peak), f'< {mib(TARGET_RSS_KIB)}',
                 'PASS' if peak < TARGET_RSS_KIB else 'MISS'))
    growth = last['status']['VmRSS'] - first['status']['VmRSS']
    rows.append((f'VmRSS growth, cycle {first_i} -> {last_i}', f'{growth:+d} kB', '', ''))
    ticks = last['ticks'] - ready['ticks']
    cycles = last_i
    rows.append((f'CPU time, {cycles} start/stop cycles', f'{ticks * 1000 / tck:.0f} ms '
                 f'({ticks * 1e6 / tck / cycles:.0f} us/cycle)', '', ''))
    sw = switches_between(ready['switches'], last['switches'])
    rows.append((f'context switches, {cycles} cycles', f'{sw} ({sw / cycles:.1f}/cycle)', '', ''))

    idle_sw = switches_between(before['switches'], after['switches'])
    idle_s = after['t'] - before['t']
    rows.append((f'wakeups while idle ({idle_s:.0f} s, {len(after["switches"])} thread(s))',
                 f'{idle_sw} context switches', '0', 'PASS' if idle_sw == 0 else 'MISS'))
    idle_ticks = after['ticks'] - before['ticks']
    rows.append(('CPU time while idle', f'{idle_ticks * 1000 / tck:.0f} ms', '', ''))
    rows.append(('VmRSS after idle', mib(after['status']['VmRSS']), f'< {mib(TARGET_RSS_KIB)}',
                 'PASS' if after['status']['VmRSS'] < TARGET_RSS_KIB else 'MISS'))
    rows.append(('armed timers while idle', str(len(timers)), '', ''))

    print()
    print(render(rows))
    print()
    for key, value in machine_facts(args.thpd):
        print(f'{key}: {value}')
    print(f'procfs given to thpd: {"/proc (real)" if args.procfs == "real" else "the scratch tree"}')
    if missing_log:
        print(f'note: {missing_log} cycle(s) lacked thpd\'s debug lines; the thpd-log rows exclude them')
    print('VmRSS/RssAnon (kB) by cycle: ' + ', '.join(
        f'{i}: {c["status"]["VmRSS"]}/{c["status"]["RssAnon"]}' for i, c in [(0, ready), *checkpoints]))
    for t in timers:
        print(f'armed timer: {t}')
    for line in storm_lines:
        print(f'thpd log: {line}')
    if idle_sw:
        print(f'\nIdle wakeups: {idle_sw}. Bus signals this process saw while idle: {len(signals)}')
        for t, member, path in signals[:20]:
            print(f'  {ms(t - signals[0][0]):10.3f} ms  {member} {path}')
        if trace:
            print(f'strace -f -tt -p {{thpd}} after the idle window: {trace}')


def kb(n):
    return f'{n:,} kB'


def report_memory(args, memory):
    env, runs, gamemoded, why_not = memory
    thpd = runs[0]
    columns = [thpd] + ([gamemoded] if gamemoded else [])
    names = set()
    for c in columns:
        names.update(n for n, row in c['mappings'].items() if row['Rss'])

    def order(name):
        return (-max(c['mappings'].get(name, {}).get('Private_Dirty', 0) for c in columns),
                -max(c['mappings'].get(name, {}).get('Rss', 0) for c in columns), name)

    header = ['mapping (kB)']
    for c in columns:
        header += [f'{c["label"]}: Rss', 'Pss', 'Private_Dirty']
    rows = [header]
    for name in sorted(names, key=order):
        row = [name]
        for c in columns:
            m = c['mappings'].get(name)
            row += [m[f] for f in smaps.FIELDS] if m else ['-', '-', '-']
        rows.append(row)
    total = ['total']
    for c in columns:
        total += [sum(m[f] for m in c['mappings'].values()) for f in smaps.FIELDS]
    rows.append(total)

    print()
    print(f'Memory by mapping: each daemon alone on the private bus; thpd after {args.memory_cycles} '
          f'start/stop cycles, each after {QUIET_BEFORE_IDLE:g} s quiet')
    print(render(rows, right=set(range(1, len(header)))))

    print()
    rows = [('daemon', 'Private_Dirty', 'Pss', 'Rss', 'Anonymous', 'threads', 'load average')]
    for c in runs + ([gamemoded] if gamemoded else []):
        r = c['rollup']
        rows.append((c['label'], kb(r['Private_Dirty']), kb(r['Pss']), kb(r['Rss']), kb(r['Anonymous']),
                     c['threads'], c['loadavg']))
    print(render(rows, right={1, 2, 3, 4, 5}))
    if env:
        print(f'thpd: with the Environment= of {UNIT_TEMPLATE.relative_to(SOURCE_ROOT)}, as systemd runs it: ' +
              ' '.join(f'{k}={v}' for k, v in env.items()))
    if gamemoded:
        mine, theirs = thpd['rollup']['Private_Dirty'], gamemoded['rollup']['Private_Dirty']
        print(f'gamemoded: {gamemoded["version"]}')
        print(f'target: thpd Private_Dirty <= gamemoded\'s in the same run: {kb(mine)} vs {kb(theirs)} '
              f'({mine - theirs:+d} kB): {"PASS" if mine <= theirs else "MISS"}')
    else:
        print(f'no comparison: {why_not}')


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    default_thpd = os.environ.get('THPD_BIN') or str(SOURCE_ROOT / 'build' / 'src' / 'daemon' / 'thpd')
    parser.add_argument('--thpd', type=Path, default=Path(default_thpd),
                        help='the daemon (default: $THPD_BIN, else build/src/daemon/thpd)')
    parser.add_argument('--cycles', type=int, default=200, help='latency cycles (default 200)')
    parser.add_argument('--resource-cycles', type=int, default=1000, help='resource cycles (default 1000)')
    parser.add_argument('--idle-seconds', type=float, default=60.0, help='idle window (default 60)')
    parser.add_argument('--settle-ms', type=float, default=20.0,
                        help='quiet time after each cycle (default 20)')
    parser.add_argument('--procfs', choices=('auto', 'real', 'scratch'), default='auto',
                        help='procfs for thpd: the real /proc (read only: the policy has no pool) or the '
                             'scratch tree; auto: /proc when it has pressure/memory (default)')
    parser.add_argument('--nice', type=int, default=-20,
                        help='niceness of this process, the observer (default -20)')
    parser.add_argument('--strace-seconds', type=float, default=10.0,
                        help='how long to trace thpd when idle wakeups were seen (default 10, 0: never)')
    parser.add_argument('--memory-cycles', type=int, default=100,
                        help='start/stop cycles before thpd\'s memory is measured (default 100)')
    parser.add_argument('--memory-only', action='store_true',
                        help='run only the memory phase (thpd beside gamemoded), about a minute')
    args = parser.parse_args(argv)
    if args.procfs == 'auto':
        args.procfs = 'real' if Path('/proc/pressure/memory').exists() else 'scratch'
    if args.cycles < 1 or args.resource_cycles < 1 or args.idle_seconds <= 0 or args.memory_cycles < 0:
        parser.error('--cycles and --resource-cycles must be at least 1, --idle-seconds positive, '
                     '--memory-cycles not negative')
    return args


def main(argv=None):
    args = parse_args(argv)
    reason = thpdtest.stack_unavailable_reason()
    if reason is None and not os.access(args.thpd, os.X_OK):
        reason = f'{args.thpd} is not an executable; build thpd or pass --thpd'
    if reason is None:
        try:
            from gi.repository import Gio  # noqa: F401
        except ImportError as e:
            reason = f'{e} (use /usr/bin/python3 with python3-gi)'
    if reason:
        print(f'bench-daemon: skipped: {reason}', file=sys.stderr)
        return SKIP

    if args.nice is not None:
        try:
            os.setpriority(os.PRIO_PROCESS, 0, args.nice)
        except OSError as e:
            print(f'bench-daemon: cannot set niceness {args.nice} ({e}); stamps may lag', file=sys.stderr)
    bench = Bench(args)
    try:
        bench.start_stack()
        if not args.memory_only:
            print(f'latency: {args.cycles} start/stop cycles ...', flush=True)
            latency = bench.latency_phase()
            print(f'resources: {args.resource_cycles} start/stop cycles ...', flush=True)
            resources = bench.resource_phase()
            print(f'idle: {args.idle_seconds:g} s ...', flush=True)
            idle = bench.idle_phase()
        print(f'memory: thpd after {args.memory_cycles} start/stop cycles, then gamemoded ...', flush=True)
        memory = bench.memory_phase()
    except (BenchError, AssertionError, RuntimeError, OSError) as e:
        print(f'bench-daemon: failed: {e}', file=sys.stderr)
        return 1
    finally:
        bench.close()
    if not args.memory_only:
        report(args, latency, resources, idle)
    report_memory(args, memory)
    return 0


if __name__ == '__main__':
    sys.exit(main())
