# SPDX-License-Identifier: LGPL-2.1-or-later
"""Crash consistency (issue 34): thpd killed with SIGKILL at random moments of churn, started
again, many times; then every unit stops, and the knobs and the hugetlb pool must equal the
true baseline: the values before thpd ever ran, or those the admin set since.

On this machine's real /sys (not a scratch tree): a sysfs store is all or nothing, while a
plain file that thpd truncates and is killed before writing stays empty, which no kernel does.
Every knob and the 2 MiB pool are snapshotted first and restored afterwards, as the other
real-kernel tests do.

Each round starts thpd, lets a seeded random sequence of actions run, and kills it a random
few milliseconds after one of them, mid-apply as often as not:
- units of three policies start and stop (--no-block: the kill does not wait for their jobs):
  Enabled=never + Defrag=never, Enabled=madvise + PagesToScan=2048, and a 16-page pool, which
  grows at the start and shrinks after PoolGracePeriod=;
- an override (defrag=defer for 1 s);
- a direct-compaction storm begins or ends, which thpd mitigates ([Storm] Action=mitigate:
  defrag=defer while it lasts and a second after). The storm's counters come from a scratch
  procfs (thpdtest.storm.FakeKernel, as in test_storm.py), the only part of the kernel here that
  is not real: a real storm takes a minute to build (test_storm_real_kernel.py), and the point is
  a kill while the mitigation's vote is applied or withdrawn, which the real knobs take;
- the admin writes a free knob (khugepaged/alloc_sleep_millisecs), or sizes the pool while no
  policy holds it; the admin's value is the new truth once thpd took it as its baseline (it
  says so in /run/thpd/baseline), which the round waits for before it goes on.
The number of rounds is THPD_CRASH_KILLS (default 60); the seed THPD_CRASH_SEED (default: the
time). Both are printed, with the number of kills and mismatches.

Run as root:
    THPD_BIN=build/src/daemon/thpd THPD_CTL_BIN=build/src/ctl/thpd-ctl PYTHONPATH=tests \\
        /usr/bin/python3 -B tests/real-kernel/test_crash_real_kernel.py -v
"""

import os
import random
import re
import sys
import time
import unittest
from pathlib import Path

import thpdtest
from test_real_kernel import POOL_2M, THP, current_word, real_kernel_unavailable_reason, restore, snapshot
from thpdtest import ThpdTestCase, wait_until
from thpdtest.storm import CALM, COMPACTION_STORM, FakeKernel

UNITS = {
    'crash-a.service': '[TransparentHugePages]\nEnabled=never\nDefrag=never\n',
    'crash-b.service': '[TransparentHugePages]\nEnabled=madvise\n[Khugepaged]\nPagesToScan=2048\n',
    'crash-db.service': '[HugeTLB]\nPageSize=2M\nPages=16\n',
}
KNOBS = ('enabled', 'defrag', 'khugepaged/pages_to_scan', 'khugepaged/alloc_sleep_millisecs')
FREE_KNOB = 'khugepaged/alloc_sleep_millisecs'


# Fast storm settings, as test_storm.py's: a storm after two hot windows of 500 ms, cleared
# after two calm ones. No escalation: its khugepaged sleeps would hold the admin's free knob.
STORM_CONFIG = ('[Storm]\nAction=mitigate\nWindow=500ms\nStormAfter=1s\nCoolAfter=1s\nHoldDown=1s\n'
                'EscalateAfter=1h\nSampleInterval=100ms\nIdlePollInterval=200ms\n')


class RealKernel:
    """The harness' kernel interface on the real sysfs, with the pool; procfs is the storm's
    scratch tree."""

    sysfs = Path('/sys')

    def __init__(self, procfs):
        self.procfs = procfs
        (procfs / 'sys' / 'vm').mkdir(parents=True)
        # Growing the pool may ask for compaction: a file thpd can write, not the real one.
        (procfs / 'sys' / 'vm' / 'compact_memory').write_text('')

    def knob_path(self, name):
        return THP / name

    def read_knob(self, name):
        return current_word(THP / name)

    def pool_path(self):
        return POOL_2M

    def read_pool(self):
        return int(POOL_2M.read_text())


class CrashTest(ThpdTestCase):
    # Every round ends in a kill; the last daemon stops with SIGTERM.
    steady_state_check = False

    @classmethod
    def setUpClass(cls):
        reason = real_kernel_unavailable_reason() or (None if POOL_2M.is_file() else 'no 2 MiB hugetlb pool')
        if reason:
            raise unittest.SkipTest(reason)
        super().setUpClass()

    def setUp(self):
        super().setUp()
        if not os.access(os.environ.get('THPD_CTL_BIN', ''), os.X_OK):
            self.skipTest('THPD_CTL_BIN does not name thpd-ctl')
        self.before = snapshot()
        self.addCleanup(restore, self.before)
        self.kernel = RealKernel(self.tmp / 'proc')
        self.storm = FakeKernel(self.kernel.procfs).start()
        self.addCleanup(self.storm.stop)
        # A starting point the policies move: enabled=always, defrag=madvise.
        (THP / 'enabled').write_text('always')
        (THP / 'defrag').write_text('madvise')
        for unit, body in UNITS.items():
            self.write_policy(unit.split('.')[0] + '.conf', f'[Policy]\nUnits={unit}\n{body}')
        self.write_config(f'PoolGracePeriod=200ms\n{STORM_CONFIG}')

    def ctl(self, *args):
        return self.stack.run(os.environ['THPD_CTL_BIN'], '--user', *args, check=False)

    def truth_now(self):
        return {**self.read_knobs(KNOBS), 'pool': self.kernel.read_pool()}

    def recorded(self, line):
        try:
            return line in (self.runtime_dir / 'baseline').read_text().splitlines()
        except FileNotFoundError:
            return False

    def admin_writes(self, rng, truth, running):
        """The admin sets the free knob, or the pool while nothing holds it; returns once thpd
        took the value as its baseline (or False when the pool is not free now)."""
        if rng.random() < 0.5:
            value = str(rng.choice((1000, 30000, 60000, 90000)))
            self.kernel.knob_path(FREE_KNOB).write_text(f'{value}\n')
            wait_until(lambda: self.recorded(f'knob {FREE_KNOB} {value}'), 10,
                       f'thpd to take {FREE_KNOB}={value} as its baseline')
            truth[FREE_KNOB] = value
            return True
        if 'crash-db.service' in running or self.kernel.read_pool() != truth['pool']:
            return False
        pages = rng.choice((0, 4, 8))
        self.kernel.pool_path().write_text(f'{pages}\n')
        wait_until(lambda: self.recorded(f'pool 2048 -1 {pages}'), 10,
                   f'thpd to take {pages} pages as the pool\'s baseline')
        truth['pool'] = pages
        return True

    @staticmethod
    def mitigation_level(daemon):
        levels = re.findall(r'^Storm mitigation now at level (\d+)\.$', daemon.log(), re.M)
        return int(levels[-1]) if levels else 0

    def storm_turns(self, daemon, storming):
        """The storm begins (or ends); returns once this daemon logged its mitigation (or the
        end of it), when the vote's apply is under way: the kill comes a few ms later. A daemon
        started during a storm may be killed before it saw enough of it to mitigate, or
        mitigate only after the storm ended. Returns whether a mitigation began."""
        was = self.mitigation_level(daemon)
        self.storm.set_shape(COMPACTION_STORM if storming else CALM)
        if storming:
            wait_until(lambda: self.mitigation_level(daemon) >= 1, 20,
                       'thpd to log "Storm mitigation now at level 1."')
        else:
            wait_until(lambda: self.mitigation_level(daemon) == 0, 20,
                       'thpd to log "Storm mitigation now at level 0."')
        return storming and was == 0

    def test_sigkill_at_random_moments(self):
        kills = int(os.environ.get('THPD_CRASH_KILLS', '60'))
        seed = int(os.environ.get('THPD_CRASH_SEED', str(time.time_ns() % 1_000_000)))
        rng = random.Random(seed)
        print(f'\ncrash suite: seed {seed}, {kills} kills', file=sys.stderr)
        truth = self.truth_now()
        running = set()
        actions = {'start': 0, 'stop': 0, 'override': 0, 'storm': 0, 'admin': 0}
        storming = False

        for round_ in range(kills):
            daemon = self.start_thpd()
            for _ in range(rng.randint(1, 6)):
                what = rng.random()
                if what < 0.6:
                    unit = rng.choice(sorted(UNITS))
                    if unit in running:
                        self.stack.run('systemctl', '--user', 'stop', '--no-block', unit)
                        running.discard(unit)
                        actions['stop'] += 1
                    else:
                        self.stack.units.add(unit)
                        self.stack.run('systemd-run', '--user', '--quiet', '--collect', '--no-block', f'--unit={unit}',
                                       '--', 'sleep', 'infinity')
                        running.add(unit)
                        actions['start'] += 1
                elif what < 0.7:
                    self.ctl('override', 'defrag=defer', '--for=1s')
                    actions['override'] += 1
                elif what < 0.8:
                    storming = not storming
                    actions['storm'] += self.storm_turns(daemon, storming)
                else:
                    actions['admin'] += self.admin_writes(rng, truth, running)
                time.sleep(rng.random() * 0.02)
            time.sleep(rng.random() * 0.05)
            daemon.kill()

        # The last instance sees every unit stop, the storm clear and the pool's grace pass;
        # SIGTERM restores.
        self.storm.set_shape(CALM)
        daemon = self.start_thpd()
        self.stack.stop_all_units()
        wait_until(lambda: self.kernel.read_pool() == truth['pool'], 10,
                   lambda: f'the pool at {truth["pool"]} pages, it has {self.kernel.read_pool()}')
        daemon.stop()
        found = self.truth_now()
        mismatches = {k: (found[k], v) for k, v in truth.items() if found[k] != v}
        print(f'crash suite: seed {seed}: {kills} kills and restarts ({actions}), '
              f'{len(mismatches)} mismatch(es) {mismatches}', file=sys.stderr)
        self.assertEqual(mismatches, {}, f'seed {seed}: (found, true baseline) per knob')


if __name__ == '__main__':
    thpdtest.main()
