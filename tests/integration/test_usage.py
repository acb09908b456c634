#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""How much THP each unit of an active policy holds (GetUnitUsage, thpd-ctl status), on the real
stack with the real /proc and cgroup file system: a service that maps and touches 256 MiB with
MADV_HUGEPAGE shows within 20 % of what the kernel reports for its process (AnonHugePages of
its smaps_rollup, read by the test), from whichever source this host has (a hybrid host: the
processes' smaps_rollup; a unified one with the memory controller: memory.stat).

thpd gets the real /proc for this (it then watches the host's PSI for storms, which is fine) and
a scratch sysfs as everywhere: nothing is written to the real /sys.

Run as root:
    PYTHONPATH=tests THPD_BIN=build/src/daemon/thpd THPD_CTL_BIN=build/src/ctl/thpd-ctl
        /usr/bin/python3 -B tests/integration/test_usage.py -v
"""

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import thpdtest
from test_api import ApiTestCase, busctl_json
from test_ctl import validate
from thpdtest import wait_until

HOLD_MIB = 256
TOLERANCE = 0.20
# Less than this from the kernel: no free 2 MiB blocks, nothing worth comparing.
MIN_KERNEL_MIB = 64
REAL_THP_ENABLED = Path('/sys/kernel/mm/transparent_hugepage/enabled')
HELPER = Path(__file__).resolve().parent / 'thp_hold.py'
USAGE_DEADLINE = 60.0

POLICY = """\
[Policy]
Units=thp-hold.service
[TransparentHugePages]
Defrag=defer
"""


def real_thp_mode():
    """The bracketed word of the real kernel's THP enabled, or None without THP."""
    try:
        match = re.search(r'\[(\w+)\]', REAL_THP_ENABLED.read_text())
    except FileNotFoundError:
        return None
    return match.group(1) if match else None


def anon_huge_bytes(pid):
    """AnonHugePages of a process, as the kernel reports it in smaps_rollup."""
    text = Path(f'/proc/{pid}/smaps_rollup').read_text()
    return int(re.search(r'^AnonHugePages:\s+(\d+) kB$', text, re.MULTILINE).group(1)) * 1024


class UsageTest(ApiTestCase):

    def setUp(self):
        super().setUp()
        mode = real_thp_mode()
        if mode not in ('madvise', 'always'):
            self.skipTest(f'the kernel\'s THP "enabled" is {mode or "absent"}: MADV_HUGEPAGE gets no huge pages')
        self.write_policy('hold.conf', POLICY)
        # thpd gets the real /proc here, so its storm watcher would wake on the host's memory
        # pressure (another workload) and fail the idle check: no storm watcher.
        self.config_path.write_text('[Daemon]\n[Storm]\nWatch=no\n')

    def start_holder(self):
        """Starts thp-hold.service; returns its main PID once it has touched its memory."""
        ready = self.tmp / 'ready'
        self.start_unit('thp-hold.service', sys.executable, '-B', str(HELPER), str(HOLD_MIB), str(ready))
        wait_until(ready.exists, USAGE_DEADLINE, 'thp-hold.service to touch its memory')
        pid = int(self.stack.run('systemctl', '--user', 'show', '--property=MainPID', '--value',
                                 'thp-hold.service').stdout)
        kernel = anon_huge_bytes(pid)
        if kernel < MIN_KERNEL_MIB << 20:
            self.skipTest(f'the kernel gave the helper only {kernel >> 20} MiB of THP (fragmented memory?)')
        return pid

    def usage_row(self):
        rows = busctl_json(self.stack, 'call', 'org.thpd1', '/org/thpd1', 'org.thpd1.Manager',
                           'GetUnitUsage')['data'][0]
        return {row[0]: row for row in rows}.get('thp-hold.service')

    def test_usage_matches_the_kernel(self):
        pid = self.start_holder()
        daemon = self.start_thpd('--procfs=/proc', '--cgroupfs=/sys/fs/cgroup')
        daemon.wait_log(r'Storm detection is off \(thpd\.conf: \[Storm\] Watch=no\)\.')
        self.assertNotIn('PSI trigger', daemon.log())
        self.wait_knobs(defrag='defer')
        seen = {}

        def close_to_kernel():
            row = self.usage_row()
            kernel = anon_huge_bytes(pid)
            seen.update(row=row, kernel=kernel)
            return row and row[4] and abs(row[2] - kernel) <= TOLERANCE * kernel

        wait_until(close_to_kernel, USAGE_DEADLINE, lambda: f'GetUnitUsage within 20 % of the kernel: {seen}')
        unit, policy, anon, shmem, source = seen['row']
        self.assertEqual((unit, policy), ('thp-hold.service', 'hold.conf'))
        self.assertIn(source, ('cgroup-v2', 'cgroup-v1', 'smaps'))
        print(f'\nthp-hold.service: thpd says {anon >> 20} MiB anon THP ({source}), '
              f'the kernel {seen["kernel"] >> 20} MiB; shmem {shmem}', file=sys.stderr)

        # The same through thpd-ctl: JSON after the schema, and the restart hint (the helper
        # started before thpd, so before its policy).
        data = self.ctl_json('status')
        validate('status', data)
        rows = [u for u in data['unit_usage'] if u['unit'] == 'thp-hold.service']
        self.assertEqual(len(rows), 1, data['unit_usage'])
        self.assertLessEqual(abs(rows[0]['anon_thp_bytes'] - anon_huge_bytes(pid)), TOLERANCE * anon_huge_bytes(pid))
        self.assertEqual(rows[0]['source'], source)
        self.assertEqual(rows[0]['read_by'], 'thpd', 'thpd read it itself; thpd-ctl had nothing to fill in')
        out = self.ctl('status').stdout
        self.assertRegex(out, r'\n  THP held: thp-hold\.service  \d+(\.\d)? MiB anon, ')
        self.assertRegex(out, r'\n  Restart needed: thp-hold\.service holds \d+(\.\d)? MiB in THP from before hold\.conf\n')

    def test_answered_when_thpd_stops(self):
        # A call waiting for the systemd manager (stopped here, so it cannot answer) gets an
        # answer when thpd stops, and thpd exits cleanly (under ASan: with nothing leaked).
        self.start_holder()
        daemon = self.start_thpd('--procfs=/proc', '--cgroupfs=/sys/fs/cgroup')
        self.wait_knobs(defrag='defer')
        os.kill(self.stack.manager.pid, signal.SIGSTOP)
        self.addCleanup(os.kill, self.stack.manager.pid, signal.SIGCONT)
        caller = subprocess.Popen(['busctl', '--user', '--timeout=60', 'call', 'org.thpd1', '/org/thpd1',
                                   'org.thpd1.Manager', 'GetUnitUsage'],
                                  env=self.stack.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.addCleanup(caller.kill)
        daemon.wait_log(r'GetUnitUsage: asking the systemd manager for the processes of 1 unit')
        daemon.stop()
        out, _ = caller.communicate(timeout=thpdtest.DEFAULT_TIMEOUT)
        self.assertNotEqual(caller.returncode, 0, out)
        self.assertIn('thpd is stopping', out)

    def test_no_units_no_reads(self):
        # No active policy: an empty answer at once, nothing asked of the manager.
        self.start_thpd('--procfs=/proc', '--cgroupfs=/sys/fs/cgroup')
        self.assertIsNone(self.usage_row())
        self.assertEqual(self.ctl_json('status')['unit_usage'], [])
        self.assertNotIn('THP held:', self.ctl('status').stdout)


if __name__ == '__main__':
    thpdtest.main()
