# SPDX-License-Identifier: LGPL-2.1-or-later
"""Integration-test harness: thpd against a real systemd manager, on a scratch kernel tree.

A package in tests/thpdtest/, imported as "thpdtest" by the integration and real-kernel tests,
bench/ and tools/try-thpd.py with tests/ on PYTHONPATH (meson's test and benchmark environments
and tools/run.sh set it; by hand, PYTHONPATH=tests from the top of the tree). Beside this module:
thpdtest.storm, the kernel's side of a scratch procfs for the storm tests (FakeKernel) and a
reader of thpd's signals (SignalMonitor); thpdtest.thp_fragment, a program the real-kernel storm
test and bench/outcomes run by path to fragment memory (its meminfo() is imported too).

The pieces, usable on their own or through ThpdTestCase:

Stack
    A private systemd --user manager with its own session bus, in a private mount namespace
    (systemd refuses to run as a user instance unless /run/systemd/system exists, which must
    not be created on the host). Units are started with systemd-run --user, so thpd sees the
    same Manager API and signals it sees from PID 1 in production.

    The bus is the manager's own dbus.socket/dbus.service, written into the stack's
    XDG_CONFIG_HOME: a user manager connects to the session bus only while those two units
    run, so a dbus-daemon started beside it would never see org.freedesktop.systemd1 (and
    the stock dbus.socket would unlink its socket and take $XDG_RUNTIME_DIR/bus over).

    The manager is moved into a cgroup of its own first. A user manager started in the
    host's /init.scope takes "/" as its cgroup root, so two stacks running at once (two test
    runs on one machine) would share /app.slice/NAME.service, and stopping a unit in one would
    kill the other's processes. Teardown stops the manager with SIGTERM (it stops its units),
    kills whatever is left in that cgroup, and removes it. A test that needs a process outside
    any unit makes a cgroup beside the manager's (make_cgroup()): the runner's own cgroup may be
    a unit's, /init.scope where PID 1 is not systemd or a login session's scope.

ScratchKernel
    A sysfs tree with kernel/mm/transparent_hugepage (kernel defaults, shown the way the kernel
    shows them: "always [madvise] never") and the 2 MiB hugetlb pool, plus a procfs tree with
    sys/vm/compact_memory and vmstat. A plain file keeps what was written last (the bare word),
    unlike sysfs, which re-renders the brackets; read_knob() accepts both.

Thpd
    One daemon process (THPD_BIN) on a scratch tree, with NOTIFY_SOCKET pointing at a datagram
    socket owned by the harness, so tests wait for READY=1 and can read STATUS=. Its stdout and
    stderr go to a file that ThpdTestCase prints when a test fails.

ThpdTestCase
    unittest base class: one Stack per test class, and per test a fresh scratch kernel, policy
    directory, runtime directory and config file. Helpers write policies, start the daemon and
    units (stopped again in cleanup), and wait for knob values.

Steady state
    After every scenario, each daemon still running must settle: within a generous deadline
    there is an idle window (STEADY_WINDOW seconds) in which it wakes at most once and sends
    no D-Bus message. Wakeups are counted from the kernel (voluntary context switches of all
    its threads), messages by a bus monitor (BecomeMonitor). A daemon that loops with the
    systemd manager, or polls, never gets such a window. A test class that cannot offer one
    sets steady_state_check = False and says why.

Environment: THPD_BIN (the daemon; the class is skipped without it), THPD_CTL_BIN (thpd-ctl,
for tests that use it). Run a file directly as root, e.g.
    PYTHONPATH=tests THPD_BIN=build/src/daemon/thpd
        /usr/bin/python3 -B tests/integration/test_daemon.py -v
or through "meson test --suite integration".
"""

import contextlib
import ctypes
import os
import pwd
import re
import shlex
import shutil
import signal
import socket
import threading
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

DEFAULT_TIMEOUT = 10.0
POLL_INTERVAL = 0.02
STOP_TIMEOUT = 10.0
CGROUP_ROOT = Path('/sys/fs/cgroup')
MANAGER_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'


def wait_until(predicate, timeout=DEFAULT_TIMEOUT, message='condition'):
    """Polls predicate every 20 ms until it returns something true, and returns that.

    On timeout raises AssertionError with message (a string, or a callable giving one, so the
    message can show the state at the time of failure)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            text = message() if callable(message) else message
            raise AssertionError(f'timed out after {timeout:g} s waiting for: {text}')
        time.sleep(POLL_INTERVAL)


def wakeups(pid):
    """How often the process has gone to sleep so far: the voluntary context switches of all
    its threads. An idle event loop adds one per wakeup."""
    total = 0
    for status in Path(f'/proc/{pid}/task').glob('*/status'):
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            for line in status.read_text().splitlines():
                if line.startswith('voluntary_ctxt_switches:'):
                    total += int(line.split()[1])
    return total


class BusMonitor:
    """Counts the messages one bus connection sends, using the bus's BecomeMonitor. Messages
    sent after the constructor returns are counted: the bus installs the monitor before it
    replies."""

    def __init__(self, address, sender):
        from gi.repository import Gio, GLib
        flags = (Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT |
                 Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION)
        self.sender = sender
        self._lock = threading.Lock()
        self._messages = []
        self._connection = Gio.DBusConnection.new_for_address_sync(address, flags, None, None)
        self._connection.add_filter(self._filter)
        self._connection.call_sync('org.freedesktop.DBus', '/org/freedesktop/DBus',
                                   'org.freedesktop.DBus.Monitoring', 'BecomeMonitor',
                                   GLib.Variant('(asu)', ([f"sender='{sender}'"], 0)), None,
                                   Gio.DBusCallFlags.NONE, -1, None)

    def _filter(self, connection, message, incoming):
        # Runs in GDBus's worker thread; no main loop is needed. Only the bus's replies go on
        # to GDBus (BecomeMonitor waits for one): it would answer monitored method calls, and a
        # monitor that sends anything is disconnected.
        from gi.repository import Gio
        if not incoming:
            return message
        if message.get_sender() == self.sender:
            with self._lock:
                self._messages.append(f'{message.get_message_type().value_nick} '
                                      f'{message.get_interface()}.{message.get_member()}')
        if (message.get_sender() == 'org.freedesktop.DBus' and message.get_message_type() in
                (Gio.DBusMessageType.METHOD_RETURN, Gio.DBusMessageType.ERROR)):
            return message
        return None

    def messages(self):
        with self._lock:
            return list(self._messages)

    def close(self):
        self._connection.close_sync(None)


def bus_owner(address, name):
    """The unique name owning name on the bus at address, or None."""
    proc = subprocess.run(['busctl', f'--address={address}', 'call', 'org.freedesktop.DBus',
                           '/org/freedesktop/DBus', 'org.freedesktop.DBus', 'GetNameOwner', 's', name],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return None
    return proc.stdout.split()[1].strip('"')


STEADY_WINDOW = 2.0
STEADY_DEADLINE = 30.0


def idle_window(pid, monitor, window=STEADY_WINDOW):
    """Wakeups and messages of one window."""
    first_messages = len(monitor.messages())
    before = wakeups(pid)
    time.sleep(window)
    return wakeups(pid) - before, monitor.messages()[first_messages:]


def assert_settles(pid, address, name='org.thpd1', window=STEADY_WINDOW, deadline=STEADY_DEADLINE,
                   max_wakeups=1):
    """Waits for an idle window of the daemon (see "Steady state" above); returns its wakeups.

    The daemon must own name on the bus at address. Raises AssertionError with the last
    window's figures when none came before the deadline."""
    owner = bus_owner(address, name)
    if owner is None:
        raise AssertionError(f'{name} has no owner on {address}')
    monitor = BusMonitor(address, owner)
    try:
        last = None
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            count, messages = idle_window(pid, monitor, window)
            if count <= max_wakeups and not messages:
                return count
            last = (count, messages)
        raise AssertionError(f'thpd (PID {pid}) never settled within {deadline:g} s: its last '
                             f'{window:g} s window had {last[0]} wakeups and sent {len(last[1])} '
                             f'D-Bus messages {last[1][:10]}')
    finally:
        monitor.close()


def _tail(text, lines=60):
    return '\n'.join(text.splitlines()[-lines:])


def _read_text(path):
    try:
        return Path(path).read_text(errors='replace')
    except FileNotFoundError:
        return ''


def find_systemd():
    for candidate in ('/usr/lib/systemd/systemd', '/lib/systemd/systemd'):
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which('systemd')


def stack_unavailable_reason():
    """Why a Stack cannot run here, or None."""
    if os.geteuid() != 0:
        return 'needs root (a private mount namespace for systemd --user)'
    if not find_systemd():
        return 'systemd is not installed'
    for tool in ('unshare', 'dbus-daemon', 'systemd-run', 'systemctl', 'busctl'):
        if not shutil.which(tool):
            return f'{tool} is not installed'
    probe = subprocess.run(['unshare', '--mount', '--propagation', 'private', 'true'],
                           capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        return f'cannot create a mount namespace: {probe.stderr.strip()}'
    return None


def cgroup_hierarchies():
    """Mount points of the hierarchies systemd tracks processes in (cgroup v2, and the v1
    name=systemd hierarchy in hybrid mode)."""
    if (CGROUP_ROOT / 'cgroup.procs').exists():
        return [CGROUP_ROOT]
    return [CGROUP_ROOT / h for h in ('unified', 'systemd') if (CGROUP_ROOT / h / 'cgroup.procs').exists()]


def process_unit(pid):
    """The unit thpd names for a process: what procfs_parse_cgroup_unit() (src/core/procfs-parse.c)
    reads in /proc/PID/cgroup, the deepest component of the cgroup v2 path ("0::/...") that
    ends in .service or .scope; None when there is none or no v2 line. For a test that cannot
    put a process where it wants (a cgroup tree it may not write) and must expect what the
    process's real cgroup says."""
    for line in Path(f'/proc/{pid}/cgroup').read_text().splitlines():
        if line.startswith('0::/'):
            units = [c for c in line[len('0::/'):].split('/') if c.endswith(('.service', '.scope'))]
            return units[-1] if units else None
    return None


def _process_state(pid):
    """The one-letter state from /proc/PID/stat ("S", "R", "T", ...), or None."""
    try:
        stat = Path(f'/proc/{pid}/stat').read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return stat.rsplit(')', 1)[1].split()[0]


def _cgroup_pids(top):
    pids = set()
    for dirpath, _, _ in os.walk(top):
        with contextlib.suppress(FileNotFoundError):
            pids.update(int(pid) for pid in Path(dirpath, 'cgroup.procs').read_text().split())
    return pids


def _remove_cgroup_tree(top):
    for dirpath, _, _ in os.walk(top, topdown=False):
        with contextlib.suppress(FileNotFoundError):
            os.rmdir(dirpath)


# The session bus of the stack, started by the manager like a login session's bus. Written
# here rather than relying on the distribution's user units (Debian ships them only with
# dbus-user-session).
_DBUS_SOCKET_UNIT = """\
[Unit]
Description=Session bus socket of the test stack

[Socket]
ListenStream=%t/bus
"""

_DBUS_SERVICE_UNIT = """\
[Unit]
Description=Session bus of the test stack
Requires=dbus.socket

[Service]
ExecStart={dbus_daemon} {config} --address=systemd: --nofork --nopidfile --systemd-activation
"""

# The session bus configuration plus a rule that lets every uid connect (a session bus admits
# only its owner), for tests of what an unprivileged caller may do.
_OPEN_BUS_CONFIG = """\
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <include>{session_conf}</include>
  <policy context="default">
    <allow user="*"/>
  </policy>
</busconfig>
"""


def _session_bus_config():
    for candidate in ('/usr/share/dbus-1/session.conf', '/etc/dbus-1/session.conf'):
        if os.path.exists(candidate):
            return candidate
    raise RuntimeError('no session.conf for dbus-daemon')


# What client_env() leaves out besides LC_* and THPD_*.
_CLIENT_ENV_UNSET = ('NOTIFY_SOCKET', 'LANGUAGE', 'SYSTEMD_COLORS', 'NO_COLOR', 'COLUMNS', 'LINES')


def client_env(**settings):
    """The runner's environment for thpd, thpd-ctl and busctl, updated by settings.

    The tests read what these print, so nothing of the runner's own environment that changes
    it comes through: the locale is C.UTF-8 (thpd-ctl draws ASCII under LC_ALL=C), and
    colours, the terminal width and thpd's own variables are unset. A test of another locale,
    colours or width sets them itself."""
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(('LC_', 'THPD_')) and name not in _CLIENT_ENV_UNSET}
    env['LANG'] = 'C.UTF-8'
    env.update(settings)
    return env


class Stack:
    """A systemd --user manager and its session bus; see the module docstring.

    Use as a context manager, or call start() and close() (close() is safe after a failed or
    partial start).

    allow_other_users: let every uid connect to the session bus, and make the bus socket
    reachable for them (the stack's directories become 0711), so that a test can run a client
    as another user (setpriv --reuid=65534 ...)."""

    def __init__(self, allow_other_users=False):
        self.allow_other_users = allow_other_users
        self.dir = None
        self.manager = None
        self.cgroup_name = None
        self.units = set()
        self._log = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def runtime_dir(self):
        return self.dir / 'runtime'

    @property
    def bus_address(self):
        return f'unix:path={self.runtime_dir}/bus'

    @property
    def log_path(self):
        return self.dir / 'manager.log'

    @property
    def env(self):
        """Environment for clients of this stack (systemctl --user, busctl --user, thpd --user):
        client_env() on this stack's bus."""
        return client_env(XDG_RUNTIME_DIR=str(self.runtime_dir), DBUS_SESSION_BUS_ADDRESS=self.bus_address)

    def start(self, timeout=DEFAULT_TIMEOUT):
        self.dir = Path(tempfile.mkdtemp(prefix='thpd-stack-'))
        self.runtime_dir.mkdir(mode=0o700)
        unit_dir = self.dir / 'config' / 'systemd' / 'user'
        (unit_dir / 'sockets.target.wants').mkdir(parents=True)
        (unit_dir / 'dbus.socket').write_text(_DBUS_SOCKET_UNIT)
        config = '--session'
        if self.allow_other_users:
            bus_config = self.dir / 'bus.conf'
            bus_config.write_text(_OPEN_BUS_CONFIG.format(session_conf=_session_bus_config()))
            config = f'--config-file={bus_config}'
            self.dir.chmod(0o711)
            self.runtime_dir.chmod(0o711)
        (unit_dir / 'dbus.service').write_text(
            _DBUS_SERVICE_UNIT.format(dbus_daemon=shutil.which('dbus-daemon'), config=config))
        (unit_dir / 'sockets.target.wants' / 'dbus.socket').symlink_to('../dbus.socket')

        cgroup_procs = self._make_cgroup()
        env = {
            'PATH': MANAGER_PATH,
            'HOME': str(self.dir),
            'LANG': 'C.UTF-8',
            'XDG_RUNTIME_DIR': str(self.runtime_dir),
            'XDG_CONFIG_HOME': str(self.dir / 'config'),
            'XDG_DATA_HOME': str(self.dir / 'data'),
            'DBUS_SESSION_BUS_ADDRESS': self.bus_address,
            'SYSTEMD_LOG_TARGET': 'console',
        }
        script = ('for p; do echo $$ > "$p"; done; '
                  'mount -t tmpfs tmpfs /run/systemd && mkdir /run/systemd/system && '
                  f'exec {shlex.quote(find_systemd())} --user')
        self._log = open(self.log_path, 'wb')
        self.manager = subprocess.Popen(
            ['unshare', '--mount', '--propagation', 'private', 'sh', '-c', script, 'sh', *cgroup_procs],
            env=env, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT)
        wait_until(self._manager_answers, timeout,
                   lambda: f'systemd --user on {self.bus_address}; its log:\n{_tail(_read_text(self.log_path))}')

    def _make_cgroup(self):
        """Creates NAME/init.scope in each hierarchy; returns the cgroup.procs files to join.

        A cgroup tree that cannot be written (a container) leaves the manager where it is:
        the stack still works, it is just not isolated from another stack."""
        name = self.dir.name
        procs = []
        try:
            for hierarchy in cgroup_hierarchies():
                scope = hierarchy / name / 'init.scope'
                scope.mkdir(parents=True)
                procs.append(str(scope / 'cgroup.procs'))
        except OSError as e:
            print(f'thpdtest: not isolating systemd --user in a cgroup: {e}', file=sys.stderr)
            self._remove_cgroup(name)
            return []
        self.cgroup_name = name
        return procs

    def make_cgroup(self, leaf):
        """Creates LEAF beside the manager's init.scope, in each hierarchy of the stack's own
        cgroup: a cgroup of no unit, as neither it nor a parent ends in .service or .scope
        (whatever cgroup the test runner sits in, /init.scope or a login session's scope).
        Returns the cgroup.procs files a process joins, or [] when the stack has no cgroup of
        its own (see _make_cgroup). Removed, and whatever runs in it killed, with the stack."""
        if self.cgroup_name is None:
            return []
        procs = []
        for hierarchy in cgroup_hierarchies():
            cgroup = hierarchy / self.cgroup_name / leaf
            cgroup.mkdir(exist_ok=True)
            procs.append(cgroup / 'cgroup.procs')
        return procs

    def _manager_answers(self):
        if self.manager.poll() is not None:
            raise RuntimeError(f'systemd --user exited with status {self.manager.returncode}:\n'
                               f'{_tail(_read_text(self.log_path))}')
        ping = subprocess.run(
            ['busctl', '--user', '--auto-start=no', 'call', 'org.freedesktop.systemd1',
             '/org/freedesktop/systemd1', 'org.freedesktop.DBus.Peer', 'Ping'],
            env=self.env, capture_output=True, check=False)
        return ping.returncode == 0

    def close(self):
        if self.manager is not None:
            if self.manager.poll() is None:
                self.manager.send_signal(signal.SIGTERM)
                try:
                    self.manager.wait(STOP_TIMEOUT)
                except subprocess.TimeoutExpired:
                    self.manager.kill()
                    self.manager.wait()
            self.manager = None
        if self._log is not None:
            self._log.close()
            self._log = None
        if self.cgroup_name is not None:
            self._kill_cgroup()
            self._remove_cgroup(self.cgroup_name)
            self.cgroup_name = None
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None
        self.units.clear()

    def _kill_cgroup(self):
        """Kills what the manager left behind (nothing, unless it had to be SIGKILLed)."""
        for hierarchy in cgroup_hierarchies():
            top = hierarchy / self.cgroup_name

            def emptied():
                pids = _cgroup_pids(top)
                for pid in pids:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                return not pids

            wait_until(emptied, STOP_TIMEOUT, f'the processes in {top} to die')

    @staticmethod
    def _remove_cgroup(name):
        """Removes NAME from every hierarchy (the manager may have created it in v1 controller
        hierarchies too)."""
        hierarchies = list(CGROUP_ROOT.iterdir()) if CGROUP_ROOT.is_dir() else []
        for top in [CGROUP_ROOT / name, *(h / name for h in hierarchies)]:
            if top.is_dir():
                _remove_cgroup_tree(top)

    def run(self, *argv, check=True):
        """Runs a client command (systemctl --user ...) against this stack."""
        proc = subprocess.run(argv, env=self.env, capture_output=True, text=True, check=False)
        if check and proc.returncode != 0:
            raise AssertionError(f'{" ".join(argv)} failed with status {proc.returncode}: '
                                 f'{proc.stderr.strip()}')
        return proc

    def start_unit(self, name, *cmd, properties=()):
        """Starts a transient service running cmd (default: sleep infinity); returns once its
        start job is done. The unit is garbage-collected when it stops, even if it failed."""
        argv = ['systemd-run', '--user', '--quiet', '--collect', f'--unit={name}']
        for prop in properties:
            argv.append(f'--property={prop}')
        argv += ['--', *(cmd or ('sleep', 'infinity'))]
        self.units.add(name)
        self.run(*argv)

    def stop_unit(self, name):
        """Stops a unit; returns once its stop job is done."""
        self.run('systemctl', '--user', 'stop', name)

    def unit_state(self, name):
        """ActiveState of a unit: "active", "inactive" (also for an unknown unit), ..."""
        return self.run('systemctl', '--user', 'show', '--property=ActiveState', '--value', name).stdout.strip()

    def stop_all_units(self):
        """Stops every unit started through this stack that still runs."""
        for name in sorted(self.units):
            if self.unit_state(name) not in ('inactive', 'failed'):
                self.stop_unit(name)
        self.units.clear()


# Kernel rendering of the word knobs: every word in kernel order, the current one bracketed.
KERNEL_WORDS = {
    'enabled': ('always', 'madvise', 'never'),
    'defrag': ('always', 'defer', 'defer+madvise', 'madvise', 'never'),
    'shmem_enabled': ('always', 'within_size', 'advise', 'never', 'deny', 'force'),
}
MTHP_WORDS = ('always', 'inherit', 'madvise', 'never')
MTHP_SHMEM_WORDS = ('always', 'inherit', 'within_size', 'advise', 'never')

# A machine with kernel defaults (kernel-facts §1): the Debian kernel boots with enabled=madvise.
THP_DEFAULTS = {
    'enabled': 'madvise',
    'defrag': 'madvise',
    'shmem_enabled': 'never',
    'use_zero_page': '1',
    'shrink_underused': '1',
    'hpage_pmd_size': '2097152',
    'khugepaged/defrag': '1',
    'khugepaged/pages_to_scan': '4096',
    'khugepaged/scan_sleep_millisecs': '10000',
    'khugepaged/alloc_sleep_millisecs': '60000',
    'khugepaged/max_ptes_none': '511',
    'khugepaged/max_ptes_swap': '64',
    'khugepaged/max_ptes_shared': '256',
    'khugepaged/pages_collapsed': '0',
    'khugepaged/full_scans': '0',
    'hugepages-64kB/enabled': 'never',
    'hugepages-2048kB/enabled': 'inherit',
    'hugepages-64kB/shmem_enabled': 'never',
    'hugepages-2048kB/shmem_enabled': 'inherit',
}

# The per-size counters of hugepages-<N>kB/stats/ as kernel 6.18 has them (kernel-facts "Since
# 6.10"), each size starting at 0.
SIZE_STATS_COUNTERS = (
    'anon_fault_alloc', 'anon_fault_fallback', 'anon_fault_fallback_charge', 'nr_anon',
    'nr_anon_partially_mapped', 'split', 'split_failed', 'split_deferred', 'shmem_alloc',
    'shmem_fallback', 'shmem_fallback_charge', 'swpout', 'swpout_fallback', 'zswpout', 'swpin',
    'swpin_fallback', 'swpin_fallback_charge',
)
SIZE_STATS_SIZES_KB = (64, 2048)

VMSTAT_COUNTERS = (
    'compact_stall', 'compact_fail', 'compact_success', 'compact_migrate_scanned',
    'compact_free_scanned', 'compact_daemon_wake', 'thp_fault_alloc', 'thp_fault_fallback',
    'thp_collapse_alloc', 'thp_collapse_alloc_failed', 'allocstall_dma32', 'allocstall_normal',
    'allocstall_movable',
)


def render_knob(name, value):
    """What the kernel shows for a knob set to value: "always [madvise] never" for a word."""
    if name.startswith('hugepages-'):
        words = MTHP_SHMEM_WORDS if name.endswith('/shmem_enabled') else MTHP_WORDS
    else:
        words = KERNEL_WORDS.get(name)
    if words is None:
        return f'{value}\n'
    if value not in words:
        raise ValueError(f'{name} has no value {value!r}')
    return ' '.join(f'[{w}]' if w == value else w for w in words) + '\n'


class ScratchKernel:
    """A scratch sysfs and procfs under root; see the module docstring."""

    def __init__(self, root, pool_sizes_kb=(2048,)):
        self.sysfs = Path(root) / 'sys'
        self.procfs = Path(root) / 'proc'
        for name, value in THP_DEFAULTS.items():
            path = self.knob_path(name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(render_knob(name, value))
        for size_kb in pool_sizes_kb:
            pool = self.sysfs / 'kernel/mm/hugepages' / f'hugepages-{size_kb}kB'
            pool.mkdir(parents=True)
            for field in ('nr_hugepages', 'free_hugepages', 'surplus_hugepages',
                          'resv_hugepages', 'nr_overcommit_hugepages'):
                (pool / field).write_text('0\n')
        for size_kb in SIZE_STATS_SIZES_KB:
            for counter in SIZE_STATS_COUNTERS:
                self.set_size_stat(size_kb, counter, 0)
        vm = self.procfs / 'sys' / 'vm'
        vm.mkdir(parents=True)
        (vm / 'compact_memory').write_text('')
        (self.procfs / 'vmstat').write_text(''.join(f'{c} 0\n' for c in VMSTAT_COUNTERS))

    def knob_path(self, name):
        """name as in the knob table: "enabled", "khugepaged/defrag", "hugepages-64kB/enabled"."""
        return self.sysfs / 'kernel/mm/transparent_hugepage' / name

    @staticmethod
    def _read_settled(path):
        """A kernel attribute is never empty; a plain file is, between thpd's O_TRUNC and its
        write. Reads again until the write has landed."""
        return wait_until(lambda: Path(path).read_text(), message=f'{path} to hold a value')

    def read_knob(self, name):
        """The current word or number, brackets or not."""
        content = self._read_settled(self.knob_path(name))
        match = re.search(r'\[([^\]]+)\]', content)
        return match.group(1) if match else content.strip()

    def set_knob(self, name, value):
        """Sets a knob the way the kernel would show it (for a test's starting point)."""
        self.knob_path(name).write_text(render_knob(name, value))

    def size_stat_path(self, size_kb, counter):
        return self.knob_path(f'hugepages-{size_kb}kB') / 'stats' / counter

    def set_size_stat(self, size_kb, counter, value):
        """Sets one per-size counter of hugepages-<N>kB/stats/, as the kernel would count it."""
        path = self.size_stat_path(size_kb, counter)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'{value}\n')

    def add_mthp_collapse(self, size_kb=64):
        """A "7.2-style" kernel, whose khugepaged also collapses to mTHP sizes: thpd finds it by
        this per-size counter (kernel-facts, "Since 6.10")."""
        stats = self.knob_path(f'hugepages-{size_kb}kB/stats')
        stats.mkdir(parents=True, exist_ok=True)
        (stats / 'collapse_exceed_none_pte').write_text('0\n')

    def set_cmdline(self, text):
        """The kernel command line thpd reads at start (<procfs>/cmdline)."""
        (self.procfs / 'cmdline').write_text(f'{text}\n')

    def pool_path(self, field='nr_hugepages', size_kb=2048):
        return self.sysfs / 'kernel/mm/hugepages' / f'hugepages-{size_kb}kB' / field

    def read_pool(self, field='nr_hugepages', size_kb=2048):
        return int(self._read_settled(self.pool_path(field, size_kb)))


PR_CAPBSET_DROP = 24
CAP_SYS_ADMIN = 21


def _drop_cap_sys_admin():
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_CAPBSET_DROP, CAP_SYS_ADMIN, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), 'prctl(PR_CAPBSET_DROP, CAP_SYS_ADMIN)')


class Thpd:
    """One thpd process; see the module docstring."""

    def __init__(self, argv, env, log_path, notify_path, cap_sys_admin=False):
        self.argv = list(argv)
        self.log_path = Path(log_path)
        self.notifications = []
        self.log_text = None
        self._notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._notify.bind(str(notify_path))
        # A reader thread empties the socket all the time: once its queue is full (10 datagrams)
        # the daemon would block in sd_notify(), as it never does under systemd.
        self._arrived = threading.Condition()
        self._reader = threading.Thread(target=self._read_notifications, daemon=True)
        self._reader.start()
        env = dict(env, NOTIFY_SOCKET=str(notify_path))
        self.bus_address = env.get('DBUS_SESSION_BUS_ADDRESS' if '--user' in self.argv
                                   else 'DBUS_SYSTEM_BUS_ADDRESS')
        # THPD_WRAPPER runs the daemon under a tool, e.g. valgrind with an error exit code, so
        # that leaks fail stop()'s exit status check.
        wrapper = shlex.split(os.environ.get('THPD_WRAPPER', ''))
        # thpd.service runs without CAP_SYS_ADMIN, and so does the daemon here unless a test
        # asks for it (an admin's opt-in, docs/drift.md): dropped from the bounding set, root
        # keeps every other capability across exec.
        with open(self.log_path, 'wb') as log:
            self.process = subprocess.Popen(wrapper + self.argv, env=env, stdin=subprocess.DEVNULL,
                                            stdout=log, stderr=subprocess.STDOUT,
                                            preexec_fn=None if cap_sys_admin else _drop_cap_sys_admin)

    @property
    def pid(self):
        return self.process.pid

    @property
    def running(self):
        return self.process.poll() is None

    @property
    def status(self):
        """The last STATUS= the daemon sent, or None."""
        self._drain(0)
        for fields in reversed(self.notifications):
            if 'STATUS' in fields:
                return fields['STATUS']
        return None

    def log(self):
        return self.log_text if self.log_text is not None else _read_text(self.log_path)

    def _read_notifications(self):
        while True:
            try:
                data = self._notify.recv(4096)
            except OSError:
                return
            if not data:
                return
            text = data.decode(errors='replace')
            with self._arrived:
                self.notifications.append(dict(line.split('=', 1) for line in text.splitlines() if '=' in line))
                self._arrived.notify_all()

    def _drain(self, timeout):
        """Waits up to timeout seconds for a new notification (the reader thread keeps them all)."""
        with self._arrived:
            seen = len(self.notifications)
            if timeout:
                self._arrived.wait_for(lambda: len(self.notifications) > seen, timeout)

    def _ready(self):
        self._drain(POLL_INTERVAL)
        if any(fields.get('READY') == '1' for fields in self.notifications):
            return True
        if not self.running:
            raise AssertionError(f'thpd exited with status {self.process.returncode} before READY=1:\n'
                                 f'{_tail(self.log())}')
        return False

    def wait_ready(self, timeout=DEFAULT_TIMEOUT):
        wait_until(self._ready, timeout, lambda: f'READY=1 from thpd; its log:\n{_tail(self.log())}')

    def wait_log(self, pattern, timeout=DEFAULT_TIMEOUT):
        """Waits for a log line matching the regular expression; returns the match."""
        regex = re.compile(pattern, re.MULTILINE)
        return wait_until(lambda: regex.search(self.log()), timeout,
                          lambda: f'a thpd log line matching {pattern!r}; its log:\n{_tail(self.log())}')

    def signal(self, signum):
        self.process.send_signal(signum)

    def stop(self, expect_status=0, timeout=STOP_TIMEOUT):
        """SIGTERM; waits for the exit and asserts its status."""
        self.process.send_signal(signal.SIGTERM)
        try:
            status = self.process.wait(timeout)
        except subprocess.TimeoutExpired as e:
            raise AssertionError(f'thpd did not exit within {timeout:g} s of SIGTERM:\n'
                                 f'{_tail(self.log())}') from e
        if expect_status is not None and status != expect_status:
            raise AssertionError(f'thpd exited with status {status}, expected {expect_status}:\n'
                                 f'{_tail(self.log())}')
        return status

    def kill(self):
        """SIGKILL, as a crash would."""
        self.process.kill()
        self.process.wait()

    def close(self):
        """Kills the daemon if it still runs and keeps its log in memory."""
        if self.running:
            self.kill()
        self._notify.shutdown(socket.SHUT_RDWR)
        self._reader.join()
        self._notify.close()
        if self.log_text is None:
            self.log_text = _read_text(self.log_path)


class ThpdTestCase(unittest.TestCase):
    """Base class for tests of the daemon on a Stack; see the module docstring."""

    stack = None
    # Passed to Stack(): see there.
    stack_allows_other_users = False
    # See "Steady state" in the module docstring.
    steady_state_check = True
    # A class whose thpd_argv() starts a helper that needs CAP_SYS_ADMIN (unshare) and drops it
    # before thpd runs.
    keep_cap_sys_admin = False

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        reason = stack_unavailable_reason()
        if reason is None and not os.access(os.environ.get('THPD_BIN', ''), os.X_OK):
            reason = 'THPD_BIN does not name the thpd executable'
        if reason:
            raise unittest.SkipTest(reason)
        cls.stack = Stack(allow_other_users=cls.stack_allows_other_users)
        cls.addClassCleanup(cls.stack.close)
        cls.stack.start()

    def setUp(self):
        super().setUp()
        self.tmp = Path(tempfile.mkdtemp(prefix='thpd-test-'))
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.addCleanup(self.stack.stop_all_units)
        self.kernel = ScratchKernel(self.tmp / 'kernel')
        self.policy_dir = self.tmp / 'policy.d'
        self.policy_dir.mkdir(mode=0o755)
        self.runtime_dir = self.tmp / 'run'
        self.config_path = self.tmp / 'thpd.conf'
        self.write_config('')
        self.daemons = []

    def run(self, result=None):
        """Prints the daemons' logs of a test that failed."""
        if result is None:
            return super().run(result)
        problems = len(result.failures) + len(result.errors)
        outcome = super().run(result)
        if len(result.failures) + len(result.errors) > problems:
            for i, daemon in enumerate(self.__dict__.get('daemons', ())):
                print(f'\n----- {self.id()}: thpd #{i + 1}: {" ".join(daemon.argv)}\n{daemon.log()}'
                      f'----- end of thpd #{i + 1}', file=sys.stderr)
        return outcome

    def write_policy(self, name, text, directory=None):
        """Writes NAME in directory, policy.d by default (root-owned, 0644 whatever the umask, so
        that the daemon trusts it); returns its path."""
        path = (directory or self.policy_dir) / name
        path.write_text(text)
        path.chmod(0o644)
        return path

    def write_config(self, daemon_section):
        """Writes the daemon's config file: lines for its [Daemon] section."""
        self.config_path.write_text(f'[Daemon]\n{daemon_section}')

    def thpd_argv(self, *extra):
        return [os.environ['THPD_BIN'], '--user',
                f'--sysfs={self.kernel.sysfs}', f'--procfs={self.kernel.procfs}',
                f'--runtime-dir={self.runtime_dir}', f'--policy-dir={self.policy_dir}',
                f'--config={self.config_path}', '--log-level=debug', *extra]

    def start_thpd(self, *extra, wait_ready=True, cap_sys_admin=False):
        """Starts thpd with the test's trees (extra: more options) and waits for READY=1.
        cap_sys_admin: keep CAP_SYS_ADMIN, which thpd.service does not have."""
        n = len(self.daemons) + 1
        daemon = Thpd(self.thpd_argv(*extra), self.stack.env,
                      self.tmp / f'thpd-{n}.log', self.tmp / f'notify-{n}',
                      cap_sys_admin=cap_sys_admin or self.keep_cap_sys_admin)
        self.daemons.append(daemon)
        self.addCleanup(daemon.close)
        # Runs before daemon.close, after whatever the test cleans up once the daemon runs.
        if self.steady_state_check:
            self.addCleanup(self.assert_daemon_settles, daemon)
        if wait_ready:
            daemon.wait_ready()
        return daemon

    def assert_daemon_settles(self, daemon, **kwargs):
        """The steady-state check of one daemon; skipped for a daemon that has exited or is
        stopped (SIGSTOP) at the end of its scenario."""
        if not daemon.running or _process_state(daemon.pid) == 'T':
            return
        assert_settles(daemon.pid, daemon.bus_address, **kwargs)

    def start_unit(self, name, *cmd, properties=()):
        self.stack.start_unit(name, *cmd, properties=properties)

    def stop_unit(self, name):
        self.stack.stop_unit(name)

    def _describe(self, what):
        logs = ''.join(f'\nthpd #{i + 1} log:\n{_tail(d.log(), 20)}' for i, d in enumerate(self.daemons))
        return f'{what}{logs}'

    def read_knobs(self, names):
        return {name: self.kernel.read_knob(name) for name in names}

    def start_writer_outside_units(self, path, value):
        """A shell in a cgroup of no unit that writes value to path, then waits for its stdin to
        close; returns it and how thpd must name it. It is moved before it writes: the test
        runner's own cgroup may be a unit's (/init.scope where PID 1 is not systemd, a login
        session's scope), and a shell left there would be named by that unit. Where the test may
        not make a cgroup, the shell stays where it is, and thpd must name the unit its real
        cgroup maps to."""
        writer = subprocess.Popen(['/bin/sh', '-c', f'read go; echo {value} > {path}; read x'],
                                  stdin=subprocess.PIPE, text=True)
        self.addCleanup(writer.wait)
        self.addCleanup(writer.stdin.close)
        procs = self.stack.make_cgroup('outside-units')
        for cgroup_procs in procs:
            cgroup_procs.write_text(f'{writer.pid}\n')
        unit = process_unit(writer.pid)
        if procs:
            self.assertIsNone(unit, f'the writer was moved to a cgroup of no unit: {procs}')
            expected = f'sh, pid {writer.pid}'
        else:
            print(f'\n{self.id()}: cannot make a cgroup; the writer stays in {unit or "no unit"}', file=sys.stderr)
            expected = f'{unit} (sh, pid {writer.pid})' if unit else f'sh, pid {writer.pid}'
            session = re.fullmatch(r'session-(.+)\.scope', unit or '')
            if session:
                expected = f'{pwd.getpwuid(os.geteuid()).pw_name} in session {session.group(1)}: sh, pid {writer.pid}'
        writer.stdin.write('go\n')
        writer.stdin.flush()
        return writer, expected

    def wait_knobs(self, expected=(), /, timeout=DEFAULT_TIMEOUT, **knobs):
        """Waits until each knob reads its value, given as a mapping and/or keywords:
        wait_knobs({'khugepaged/defrag': '0'}, enabled='never')."""
        expected = dict(expected, **knobs)
        wait_until(lambda: self.read_knobs(expected) == expected, timeout,
                   lambda: self._describe(f'knobs {expected}, have {self.read_knobs(expected)}'))

    def assert_knobs(self, expected=(), /, **knobs):
        """Asserts each knob reads its value now (arguments as for wait_knobs)."""
        expected = dict(expected, **knobs)
        self.assertEqual(self.read_knobs(expected), expected, self._describe('knob values'))

    def wait_pool(self, pages, field='nr_hugepages', size_kb=2048, timeout=DEFAULT_TIMEOUT):
        wait_until(lambda: self.kernel.read_pool(field, size_kb) == pages, timeout,
                   lambda: self._describe(f'{field} of the {size_kb} kB pool == {pages}, '
                                          f'have {self.kernel.read_pool(field, size_kb)}'))

    # A policy whose only job is to show that the daemon has handled every unit event before it:
    # start its unit and wait for its knob to move, then stop it and wait for the knob to come
    # back. Unit signals arrive in order, so a test can then assert that something did NOT
    # change without sleeping and hoping. Write it before the daemon starts.
    BARRIER_UNIT = 'thpd-test-barrier.service'
    BARRIER_POLICY = f'[Policy]\nUnits={BARRIER_UNIT}\n[Khugepaged]\nDefrag=0\n'

    def add_barrier_policy(self):
        self.write_policy('zz-thpd-test-barrier.conf', self.BARRIER_POLICY)

    def barrier(self):
        before = self.kernel.read_knob('khugepaged/defrag')
        self.assertEqual(before, '1', 'the barrier needs khugepaged/defrag at its default, 1')
        self.start_unit(self.BARRIER_UNIT)
        self.wait_knobs({'khugepaged/defrag': '0'})
        self.stop_unit(self.BARRIER_UNIT)
        self.wait_knobs({'khugepaged/defrag': '1'})


def main():
    """unittest.main() that exits 77 (meson's "skipped") when every test was skipped."""
    program = unittest.main(exit=False, verbosity=2)
    result = program.result
    # A skip in setUpClass runs no test at all but still records one skip.
    if result.skipped and len(result.skipped) >= result.testsRun and result.wasSuccessful():
        sys.exit(77)
    sys.exit(0 if result.wasSuccessful() else 1)
