# SPDX-License-Identifier: LGPL-2.1-or-later
"""The Redis scenario on this machine's real /sys/kernel/mm, with the shipped redis.conf.

thpd follows a real systemd --user manager (the harness Stack) but writes the real kernel
knobs. Every THP file and the 2 MiB pool are snapshotted first and compared afterwards: thpd
itself must put them back; a safety net in cleanup restores them regardless, so a failing test
does not leave the machine changed. Skipped, with the reason, when not root, when the knobs are
missing or read-only (containers), or when THPD_SKIP_REAL_KERNEL is set."""

import os
import re
import shutil
import signal
import sys
import unittest
from pathlib import Path

import thpdtest
from thpdtest import ThpdTestCase, wait_until

SYSFS = Path('/sys')
THP = SYSFS / 'kernel/mm/transparent_hugepage'
POOL_2M = SYSFS / 'kernel/mm/hugepages/hugepages-2048kB/nr_hugepages'
SOURCE_ROOT = Path(os.environ.get('THPD_SOURCE_ROOT', Path(__file__).resolve().parents[2]))


def real_kernel_unavailable_reason():
    if os.environ.get('THPD_SKIP_REAL_KERNEL'):
        return 'THPD_SKIP_REAL_KERNEL is set'
    if os.geteuid() != 0:
        return 'writing /sys needs root'
    if not (THP / 'enabled').is_file():
        return f'{THP} has no "enabled" knob on this kernel'
    if not os.access(THP / 'enabled', os.W_OK):
        return f'{THP} is read-only here (a container?)'
    return None


def knob_files():
    """Every writable knob file below transparent_hugepage (not the stats)."""
    files = []
    for path in sorted(THP.rglob('*')):
        # Mode bits, not access(): root may "write" the read-only counters (full_scans, ...).
        if not path.is_file() or 'stats' in path.parts or not path.stat().st_mode & 0o200:
            continue
        files.append(path)
    return files


def current_word(path):
    content = path.read_text()
    match = re.search(r'\[([^\]]+)\]', content)
    return match.group(1) if match else content.strip()


def snapshot():
    state = {str(p): current_word(p) for p in knob_files()}
    if POOL_2M.is_file():
        state[str(POOL_2M)] = POOL_2M.read_text().strip()
    return state


def restore(state):
    # shmem_enabled before per-size knobs: the kernel interlocks "force" with "inherit".
    order = sorted(state, key=lambda p: (not p.endswith('/shmem_enabled') or 'hugepages-' in p, p))
    for path in order:
        try:
            if current_word(Path(path)) != state[path]:
                Path(path).write_text(state[path])
        except OSError as e:
            print(f'could not restore {path}: {e}', file=sys.stderr)


class RealKernel:
    """The harness' kernel interface, on the real sysfs."""

    sysfs = SYSFS
    procfs = Path('/proc')

    def read_knob(self, name):
        return current_word(THP / name)


class RealKernelTestCase(ThpdTestCase):
    """Skipped, with the reason, where the real knobs cannot be written."""

    @classmethod
    def setUpClass(cls):
        reason = real_kernel_unavailable_reason()
        if reason:
            raise unittest.SkipTest(reason)
        super().setUpClass()


class RealKernelRedisTest(RealKernelTestCase):

    def setUp(self):
        super().setUp()
        self.before = snapshot()
        self.addCleanup(restore, self.before)
        self.kernel = RealKernel()
        # The scenario needs a baseline the policy changes; leave the machine's own if it does.
        if current_word(THP / 'enabled') == 'never' or current_word(THP / 'defrag') == 'never':
            (THP / 'enabled').write_text('madvise')
            (THP / 'defrag').write_text('madvise')
            self.before = snapshot()
        shutil.copy(SOURCE_ROOT / 'policy' / 'redis.conf', self.policy_dir / 'redis.conf')
        (self.policy_dir / 'redis.conf').chmod(0o644)

    def redis_command(self):
        redis = shutil.which('redis-server')
        if redis:
            # No TCP port, but a socket: with neither, Redis exits at once ("Configured to not
            # listen anywhere").
            return (redis, '--port', '0', '--unixsocket', str(self.tmp / 'redis.sock'), '--save', '',
                    '--appendonly', 'no')
        return ('sleep', 'infinity')

    def test_redis_turns_thp_off_and_back(self):
        baseline = {'enabled': current_word(THP / 'enabled'), 'defrag': current_word(THP / 'defrag')}
        daemon = self.start_thpd()
        self.assertEqual(snapshot(), self.before, 'starting thpd with no unit running changed the kernel')

        self.start_unit('redis-server.service', *self.redis_command())
        self.wait_knobs(enabled='never', defrag='never')

        self.stop_unit('redis-server.service')
        self.wait_knobs(**baseline)
        daemon.stop()
        self.assertEqual(snapshot(), self.before)

    def test_sigkill_then_restart_restores_the_original_baseline(self):
        baseline = {'enabled': current_word(THP / 'enabled'), 'defrag': current_word(THP / 'defrag')}
        first = self.start_thpd()
        self.start_unit('redis-server.service', *self.redis_command())
        self.wait_knobs(enabled='never', defrag='never')
        first.kill()

        second = self.start_thpd()
        self.assert_knobs(enabled='never', defrag='never')
        self.stop_unit('redis-server.service')
        self.wait_knobs(**baseline)
        second.stop()
        self.assertEqual(snapshot(), self.before)

    def test_root_shell_write_restored_and_named(self):
        """A root shell writes "always" to the real enabled knob while Redis holds "never": the
        sysfs store raises the watch's event, thpd restores "never" unasked, and, with
        CAP_SYS_ADMIN (the opt-in of docs/drift.md), names the shell from fanotify."""
        daemon = self.start_thpd(cap_sys_admin=True)
        self.start_unit('redis-server.service', *self.redis_command())
        self.wait_knobs(enabled='never', defrag='never')
        _, expected = self.start_writer_outside_units(THP / 'enabled', 'always')
        match = daemon.wait_log(r'enabled: found always instead of never, written by (.*); restoring never')
        self.assertEqual(match.group(1), expected)
        self.wait_knobs(enabled='never')
        daemon.wait_log(r'enabled: never again, [0-9.]+ ms after the write of always')


if __name__ == '__main__':
    thpdtest.main()
