# SPDX-License-Identifier: LGPL-2.1-or-later
"""System-test harness: thpd's .deb under a real PID-1 systemd in a booted systemd-nspawn container.

The pieces:

HostKnobs
    Every THP and hugetlb file the container can change on the host: all writable files under
    /sys/kernel/mm/transparent_hugepage (khugepaged/ and hugepages-*kB/ included) and every
    /sys/kernel/mm/hugepages/hugepages-*kB/nr_hugepages. snapshot() reads them, restore() writes
    back what differs (top-level files first: shmem_enabled before the per-size files that may
    "inherit" it), diff() names what differs.

ensure_rootfs()
    A root file system of the Debian suite SUITE (THPD_SYSTEM_SUITE: trixie, the current stable,
    unless it names another, such as bookworm or sid) made by mmdebstrap (systemd as init, dbus,
    polkitd, pkexec, libpam-systemd), cached under the build directory and keyed by what goes
    into it, the suite included. The package lists and the .debs of redis-server, postgresql,
    cockpit, sudo, tuned, sysfsutils and thpd's libraries stay in its apt cache, so "apt install
    redis-server" inside runs the real maintainer scripts without downloading anything.

Container
    One boot of a fresh overlay of that rootfs (mounted by start(), removed with its changes by
    remove()): systemd-nspawn -b with systemd as PID 1,
    --bind=/sys/kernel/mm (the real knobs, writable) unless asked for a read-only /sys.
    Commands run inside with nsenter into every namespace of the container's PID 1. stop()
    powers it off from inside and waits; if that fails it signals the nspawn process it started
    (never anything found by name). A rootfs whose systemd is 258 or later boots with a unified
    cgroup hierarchy: those versions refuse the hybrid one this host (systemd 252) gives them.

The container shares the host's network (--private-network would also give it a sysfs of its
own, where the bind of /sys/kernel/mm is read-only): Redis and PostgreSQL inside listen on the
host's loopback ports 6379 and 5432, so the layer cannot run beside a Redis or PostgreSQL on the
host, or beside a second run of itself.

The host has no systemd-machined and systemd is not its PID 1, hence --register=no --keep-unit
and nsenter instead of machinectl. --timezone=off keeps nspawn from bind-mounting the host's
/etc/localtime, which makes tzdata's postinst (pulled in by postgresql) fail.
"""

import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

MM = Path('/sys/kernel/mm')
THP = MM / 'transparent_hugepage'
HUGEPAGES = MM / 'hugepages'

SUITE = os.environ.get('THPD_SYSTEM_SUITE') or 'trixie'
# Options mmdebstrap passes to apt, per suite; they stay in the tree's apt configuration, so
# "apt-get update" inside works with them too. The registry's sid Release file is past its
# Valid-Until (stable suites' have none).
SUITE_APT_OPTIONS = {'sid': ['Acquire::Check-Valid-Until "false"']}
# Named where the suite's apt variant may leave them out: passwd for the scenarios' users
# (useradd, groupadd, chpasswd; bookworm's polkitd pulled it in through adduser, trixie's does
# not); mount, which sid no longer installs with util-linux, and without which PID 1's
# dev-hugepages.mount and sys-fs-fuse-connections.mount fail (exit 203) and the boot is
# "degraded".
ROOTFS_PACKAGES = ['systemd', 'systemd-sysv', 'dbus', 'polkitd', 'pkexec', 'libpam-systemd', 'passwd', 'mount']
# Downloaded into the rootfs' apt cache (installed by the tests, not by mmdebstrap).
# Cockpit (cockpit-ws, cockpit-system, cockpit-bridge) and sudo for the Cockpit scenario's admin.
# TuneD and sysfsutils for the scenarios of knobs written behind thpd's back.
CACHED_PACKAGES = ['redis-server', 'postgresql', 'libinih1', 'cockpit-ws', 'cockpit-system', 'cockpit-bridge', 'sudo',
                   'tuned', 'sysfsutils']
# dpkg's options, which mmdebstrap also leaves in the rootfs' /etc/dpkg/dpkg.cfg.d: no fsync for
# every file dpkg unpacks. The scenarios' "apt install"s of PostgreSQL, Cockpit and TuneD spent
# much of their time in it, and each container's files are thrown away after its scenario; the
# packages' maintainer scripts run all the same.
DPKG_OPTIONS = ['force-unsafe-io']
# Bump when the way the rootfs is made changes in a way its key does not show.
ROOTFS_FORMAT = 1

CONTAINER_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
BOOT_TIMEOUT = 120.0
STOP_TIMEOUT = 60.0
POLL_INTERVAL = 0.05


def log(message):
    print(f'[system] {message}', file=sys.stderr, flush=True)


def wait_until(predicate, timeout, message='condition', interval=POLL_INTERVAL):
    """Calls predicate until it returns something true and returns that; AssertionError with
    message (a string or a callable giving one) after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            text = message() if callable(message) else message
            raise AssertionError(f'timed out after {timeout:g} s waiting for: {text}')
        time.sleep(interval)


def knob_value(text):
    """The current value in sysfs' rendering: the bracketed word of "always [madvise] never",
    or the whole (stripped) text of a numeric file."""
    match = re.search(r'\[([^\]]+)\]', text)
    return match.group(1) if match else text.strip()


# --- the host's knobs -------------------------------------------------------------------------

class HostKnobs:
    def __init__(self, mm=MM):
        self.mm = Path(mm)

    def files(self):
        """Writable knob files, parents before children, as paths relative to mm."""
        found = []
        thp = self.mm / 'transparent_hugepage'
        if thp.is_dir():
            for path in sorted(thp.rglob('*'), key=lambda p: (len(p.relative_to(thp).parts), str(p))):
                if path.is_file() and path.stat().st_mode & 0o200:
                    found.append(path.relative_to(self.mm))
        for path in sorted((self.mm / 'hugepages').glob('hugepages-*kB/nr_hugepages')):
            found.append(path.relative_to(self.mm))
        return found

    def read(self, rel):
        return knob_value((self.mm / rel).read_text())

    def snapshot(self):
        values = {}
        for rel in self.files():
            with contextlib.suppress(OSError):
                values[str(rel)] = self.read(rel)
        return values

    def diff(self, snapshot):
        """{file: (recorded, now)} for every file whose value is not the recorded one."""
        now = self.snapshot()
        return {rel: (value, now.get(rel)) for rel, value in snapshot.items() if now.get(rel) != value}

    def restore(self, snapshot):
        """Writes back every value that differs; returns {file: (was, restored)}; files that
        cannot be written back are reported on stderr."""
        restored = {}
        for rel, value in snapshot.items():
            try:
                was = self.read(rel)
                if was == value:
                    continue
                (self.mm / rel).write_text(value)
                restored[rel] = (was, value)
            except OSError as error:
                log(f'could not restore {self.mm / rel} to {value}: {error}')
        # A pool shrinks fully but may grow short; report what did not come back.
        for rel, value in snapshot.items():
            with contextlib.suppress(OSError):
                if self.read(rel) != value:
                    log(f'{self.mm / rel} is {self.read(rel)}, not {value}, after restoring')
        return restored


# --- the end of a layer's run ----------------------------------------------------------------

def _interrupted(signum, frame):
    raise KeyboardInterrupt(f'signal {signum}')


def interrupt_on_signals():
    """SIGTERM and SIGHUP raise KeyboardInterrupt, so that a layer stopped from outside still
    stops its containers and puts the knobs back (main()'s finally)."""
    signal.signal(signal.SIGTERM, _interrupted)
    signal.signal(signal.SIGHUP, _interrupted)


def put_back(knobs, baseline):
    """After a layer's run: writes back every knob that differs from the baseline recorded
    before it; returns (and logs) what is still not back."""
    restored = knobs.restore(baseline)
    if restored:
        log(f'restored host knobs: {restored}')
    left = knobs.diff(baseline)
    if left:
        log(f'host knobs NOT back at their values: {left}')
    return left


def layer_status(result, left):
    """Writes "PASSED FAILED SKIPPED" to the file THPD_SYSTEM_COUNT names (tools/test.sh's
    table) and returns the layer's exit status: 1 if it was interrupted (result None), if a
    knob is not back (left) or a test failed; 0 otherwise."""
    count = os.environ.get('THPD_SYSTEM_COUNT')
    if count and result is not None:
        failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
        skipped = len(result.skipped)
        # A setUpClass that fails is an error with no test run.
        Path(count).write_text(f'{max(result.testsRun - failed - skipped, 0)} {failed} {skipped}\n')
    if result is None or left:
        return 1
    return 0 if result.wasSuccessful() else 1


# --- the cached root file system --------------------------------------------------------------

def rootfs_key():
    text = repr((ROOTFS_FORMAT, SUITE, SUITE_APT_OPTIONS.get(SUITE, []), DPKG_OPTIONS, ROOTFS_PACKAGES,
                 CACHED_PACKAGES))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def ensure_rootfs(cache_dir):
    """The cached rootfs under cache_dir, made first if it is not there (about a minute)."""
    cache_dir = Path(cache_dir)
    rootfs = cache_dir / f'rootfs-{rootfs_key()}'
    stamp = rootfs / '.thpd-system-test-rootfs'
    if stamp.exists():
        return rootfs
    cache_dir.mkdir(parents=True, exist_ok=True)
    partial = cache_dir / (rootfs.name + '.partial')
    shutil.rmtree(partial, ignore_errors=True)
    shutil.rmtree(rootfs, ignore_errors=True)
    download = ('chroot "$1" env DEBIAN_FRONTEND=noninteractive apt-get install -q -y '
                '--download-only ' + ' '.join(CACHED_PACKAGES))
    command = ['mmdebstrap', '--variant=apt', '--include=' + ','.join(ROOTFS_PACKAGES),
               '--skip=cleanup/apt/lists', '--skip=cleanup/apt/cache',
               *(f'--aptopt={option}' for option in SUITE_APT_OPTIONS.get(SUITE, [])),
               *(f'--dpkgopt={option}' for option in DPKG_OPTIONS),
               '--customize-hook=' + download, SUITE, str(partial)]
    log('making the rootfs: ' + ' '.join(command))
    start = time.monotonic()
    # One log per suite: tools/test.sh --full makes the suites' trees while other layers run.
    with open(cache_dir / f'mmdebstrap-{SUITE}.log', 'w') as output:
        proc = subprocess.run(command, stdout=output, stderr=subprocess.STDOUT, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f'mmdebstrap failed ({proc.returncode}); see {cache_dir / f"mmdebstrap-{SUITE}.log"}')
    (partial / stamp.name).write_text(f'{" ".join(command)}\n')
    partial.rename(rootfs)
    log(f'rootfs ready in {time.monotonic() - start:.1f} s: {rootfs}')
    return rootfs


def systemd_version(rootfs):
    """The major version of the systemd package installed in the rootfs."""
    proc = subprocess.run(['dpkg-query', f'--admindir={Path(rootfs) / "var/lib/dpkg"}', '-W',
                           '-f=${Version}', 'systemd'], capture_output=True, text=True, check=True)
    return int(re.match(r'(?:\d+:)?(\d+)', proc.stdout).group(1))


# --- one booted container ---------------------------------------------------------------------

def _children(pid):
    found = []
    for stat in Path('/proc').glob('[0-9]*/stat'):
        with contextlib.suppress(OSError, ValueError, IndexError):
            text = stat.read_text()
            # comm may hold spaces and parentheses: split after the last ')'.
            comm = text[text.index('(') + 1:text.rindex(')')]
            ppid = int(text[text.rindex(')') + 2:].split()[1])
            if ppid == pid:
                found.append((int(stat.parent.name), comm))
    return found


class CommandFailed(AssertionError):
    pass


class Container:
    """One boot. Use as a context manager, or call start() and stop()."""

    def __init__(self, rootfs, workdir, name, bind_mm=True, binds=()):
        self.rootfs = Path(rootfs)
        self.name = name
        # The container's root: an overlay of the rootfs, whose changes go to layers/upper.
        self.dir = Path(workdir) / name
        self.layers = Path(workdir) / f'{name}.layers'
        self.bind_mm = bind_mm
        # More --bind=HOST:INSIDE pairs: directories the host must share with the container.
        self.binds = list(binds)
        self.log_path = Path(workdir) / f'{name}.console.log'
        self.nspawn = None
        self.leader = None
        self.boot_seconds = None

    # -- life cycle

    def start(self):
        self.remove()
        for path in (self.dir, self.layers / 'upper', self.layers / 'work'):
            path.mkdir(parents=True)
        # An overlay rather than a copy of the rootfs (400 MB, its apt cache included): a copy
        # and its removal took 5 s per boot, and most boots change a few megabytes of it.
        subprocess.run(['mount', '-t', 'overlay', 'overlay', '-o',
                        f'lowerdir={self.rootfs},upperdir={self.layers / "upper"},workdir={self.layers / "work"}',
                        str(self.dir)], check=True)
        command = ['systemd-nspawn', '-D', str(self.dir), '-b', '--register=no', '--keep-unit',
                   '--console=passive', '--timezone=off', '-M', self.name]
        if self.bind_mm:
            command.append(f'--bind={MM}')
        command += [f'--bind={outside}:{inside}' for outside, inside in self.binds]
        env = dict(os.environ)
        if systemd_version(self.dir) >= 258:
            env['SYSTEMD_NSPAWN_UNIFIED_HIERARCHY'] = '1'
        start = time.monotonic()
        self._log_file = open(self.log_path, 'w')
        self.nspawn = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=self._log_file,
                                       stderr=subprocess.STDOUT, start_new_session=True, env=env)
        try:
            # nspawn's first child is a short-lived helper; PID 1 of the container is the child
            # named systemd.
            self.leader = wait_until(self._find_leader, BOOT_TIMEOUT,
                                     lambda: f'the container\'s systemd (see {self.log_path})')
            state = wait_until(self._system_state, BOOT_TIMEOUT, 'the container to finish booting')
        except BaseException:
            self.stop()
            raise
        self.boot_seconds = time.monotonic() - start
        if state != 'running':
            failed = self.run('systemctl', '--failed', '--no-legend', check=False).stdout
            log(f'{self.name}: booted "{state}"; failed units:\n{failed}')
        return self

    def _find_leader(self):
        if self.nspawn.poll() is not None:
            raise AssertionError(f'systemd-nspawn exited with {self.nspawn.returncode}:\n'
                                 + self.log_path.read_text(errors='replace')[-3000:])
        for pid, comm in _children(self.nspawn.pid):
            if comm == 'systemd':
                return pid
        return None

    def _system_state(self):
        proc = self.run('systemctl', 'is-system-running', check=False)
        state = proc.stdout.strip()
        return state if state in ('running', 'degraded') else None

    def stop(self):
        """Powers off from inside; the nspawn process is signalled only if that does not end
        it within STOP_TIMEOUT. Returns the nspawn exit status."""
        if self.nspawn is None:
            return None
        if self.nspawn.poll() is None and self.leader:
            # What "systemctl poweroff" does without logind, asked of PID 1 directly: a scenario
            # that kills the system bus leaves logind off it (systemd 257's does not reconnect),
            # and then "systemctl poweroff" waits for its bus activation to time out, twice.
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.run('systemctl', 'start', '--job-mode=replace-irreversibly', '--no-block', 'poweroff.target',
                         check=False, timeout=30)
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None and self.nspawn.poll() is None:
                log(f'{self.name}: still running after poweroff, sending {sig.name} to nspawn '
                    f'PID {self.nspawn.pid}')
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.nspawn.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.nspawn.wait(STOP_TIMEOUT)
                break
        self._log_file.close()
        status = self.nspawn.returncode
        self.nspawn = None
        self.leader = None
        return status

    def remove(self):
        """Unmounts the container's root (after stop()) and removes its changes."""
        if self.dir.is_mount():
            subprocess.run(['umount', str(self.dir)], check=True)
        shutil.rmtree(self.dir, ignore_errors=True)
        shutil.rmtree(self.layers, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # -- commands inside

    def command(self, *argv, user=None):
        prefix = ['nsenter', '-t', str(self.leader), '-a', 'env', '-i', f'PATH={CONTAINER_PATH}',
                  'LANG=C.UTF-8', 'SYSTEMD_PAGER=', 'SYSTEMD_COLORS=0', 'DEBIAN_FRONTEND=noninteractive']
        if user is not None:
            prefix += ['setpriv', f'--reuid={user}', f'--regid={user}', '--init-groups', '--']
        else:
            prefix += ['HOME=/root']
        return prefix + [str(a) for a in argv]

    def run(self, *argv, check=True, user=None, timeout=600, input=None):
        """Runs argv inside; returns the CompletedProcess (text). check: raise CommandFailed
        with the output on a non-zero exit."""
        proc = subprocess.run(self.command(*argv, user=user), capture_output=True, text=True,
                              check=False, timeout=timeout, input=input)
        if check and proc.returncode != 0:
            raise CommandFailed(f'{" ".join(map(str, argv))} (user {user or "root"}) exited '
                                f'{proc.returncode}\nstdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-4000:]}')
        return proc

    def sh(self, script, **kwargs):
        return self.run('sh', '-c', script, **kwargs)

    def path(self, inside):
        """Where a file inside the container lives on the host (for files that are not on a
        tmpfs mounted inside, i.e. not /run or /tmp)."""
        return self.dir / str(inside).lstrip('/')

    def write(self, inside, text, mode=0o644):
        """Writes a file through the container (so /run and /tmp work), as root."""
        self.run('sh', '-c', f'mkdir -p "$(dirname "$1")" && cat > "$1" && chmod {mode:o} "$1"',
                 '-', inside, input=text)

    def read(self, inside):
        return self.run('cat', inside).stdout

    # -- systemd and the journal

    def unit_property(self, unit, prop):
        return self.run('systemctl', 'show', '-p', prop, '--value', unit).stdout.strip()

    def unit_state(self, unit):
        return (self.unit_property(unit, 'ActiveState'), self.unit_property(unit, 'SubState'))

    def main_pid(self, unit):
        return int(self.unit_property(unit, 'MainPID') or 0)

    def context_switches(self, pid):
        """Voluntary plus involuntary context switches of every thread of a process (a PID in
        the container): an idle event loop adds one per wakeup."""
        out = self.run('sh', '-c', f'cat /proc/{pid}/task/*/status').stdout
        return sum(int(line.split()[1]) for line in out.splitlines()
                   if line.startswith(('voluntary_ctxt_switches:', 'nonvoluntary_ctxt_switches:')))

    def cursor(self):
        out = self.run('journalctl', '-n', '0', '--show-cursor', '--no-pager').stdout
        match = re.search(r'-- cursor: (\S+)', out)
        return match.group(1) if match else None

    def journal_entries(self, after=None, unit=None):
        """[(realtime seconds, message)] after a cursor (all of them without one), of one unit
        if given: its processes' messages and PID 1's about it (journalctl -u's matches).

        The unit is matched here, not with journalctl -u: systemd 252's journalctl skips the
        first matching entry when --after-cursor is combined with matches."""
        argv = ['journalctl', '--no-pager', '-o', 'json', '--output-fields=MESSAGE,_SYSTEMD_UNIT,UNIT,OBJECT_SYSTEMD_UNIT']
        if after:
            argv.append(f'--after-cursor={after}')
        entries = []
        for line in self.run(*argv).stdout.splitlines():
            entry = json.loads(line)
            if unit and unit not in (entry.get('_SYSTEMD_UNIT'), entry.get('UNIT'),
                                     entry.get('OBJECT_SYSTEMD_UNIT')):
                continue
            message = entry.get('MESSAGE')
            if isinstance(message, list):  # not valid UTF-8: an array of bytes
                message = bytes(message).decode(errors='replace')
            entries.append((int(entry['__REALTIME_TIMESTAMP']) / 1e6, message or ''))
        return entries

    def journal(self, after=None, unit=None):
        """The messages (one a line) after a cursor, of one unit if given."""
        return '\n'.join(message for _, message in self.journal_entries(after=after, unit=unit))
