# SPDX-License-Identifier: LGPL-2.1-or-later
"""Crash consistency (issues 34 and 42): thpd killed with SIGKILL, or stopped with SIGTERM, at
random moments of churn, started again, many times; then every unit stops, and the knobs and the
hugetlb pool must equal the true baseline (the values before thpd ever ran, or those the admin
set since), except a knob thpd yielded to another writer, which must still hold that writer's
value.

On this machine's real /sys (not a scratch tree): a sysfs store is all or nothing, while a
plain file that thpd truncates and is killed before writing stays empty, which no kernel does.
Every knob and the 2 MiB pool are snapshotted first and restored afterwards, as the other
real-kernel tests do.

Each round starts thpd, lets a seeded random sequence of actions run, and ends it a random few
milliseconds after one of them, mid-apply as often as not:
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
  says so in /run/thpd/baseline), which the round waits for before it goes on;
- another writer, a root shell with no unit (the test itself), writes enabled or pages_to_scan
  while a running policy holds it, again and again until thpd yields ([Drift] MaxRestores=2)
  and names the knob in DriftConflicts. Without CAP_SYS_ADMIN thpd names a writer only from the
  unit jobs running at its write, so the writes wait for the jobs to end: "an unknown writer",
  whose conflict only a reload ends. The writer's value is then the truth for that knob until a
  reload, through every kill, stop and start: each start must say it took the yield up again,
  and each round must end with the value in place;
- a reload (thpd-ctl reload), which ends every conflict: thpd writes what the policies want
  again, or gives the knob back to its baseline.
About one round in five ends with SIGTERM instead of SIGKILL: thpd gives back what is its own
and leaves what it yielded, saying so, and every knob and the pool must then be at the truth.
After about one round in three the admin writes while thpd is down:
- the free knob, or the pool while no policy holds it: the next instance adopts the value
  (the new truth) and reports it as written while thpd was not running;
- a knob a running policy holds and that is in no conflict (defrag or pages_to_scan, with a
  value thpd never writes there): the next instance restores it and reports it the same way.
After a SIGTERM that left nothing to another writer thpd keeps no records, and the next start
is a first one: what the admin wrote while it was down is the baseline, and nothing is reported.

The number of rounds is THPD_CRASH_KILLS (default 60); the seed THPD_CRASH_SEED (default: the
time). Both are printed, with the counts (kills, SIGTERMs, conflicts, writes while down, admin
writes, ...) and the mismatches, and the time the rounds took.

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
FREE_VALUES = ('1000', '30000', '60000', '90000')
POOL_ITEM = 'hugepages-2048kB/nr_hugepages'
POOL_PAGES = 16

# Restores per writer and knob before thpd yields to it.
MAX_RESTORES = 2
# What another writer sets on a knob a running policy holds, in conflict with it.
CONFLICT_VALUES = {'enabled': ('always', 'madvise', 'never'), 'khugepaged/pages_to_scan': ('1000', '3000', '8192')}
# What the admin sets, while thpd is down, on a knob a running policy holds: none of them a value
# thpd ever writes there, so that the next instance cannot take it for its own leftover (what
# the ownership record says it wrote, or was about to). enabled has no such word.
HELD_DOWN_VALUES = {'defrag': ('always', 'defer+madvise'), 'khugepaged/pages_to_scan': ('1000', '3000', '8192')}
# What the admin sizes the pool to while thpd is down: a size outside [baseline, baseline + 16],
# which a pool thpd was resizing when it was killed may hold, is never taken for thpd's leftover.
DOWN_POOL_SIZES = (0, 4, 8, 20, 24)


def held_knobs(running):
    """The knobs the running units' policies hold, with the value thpd applies."""
    held = {}
    if 'crash-a.service' in running:
        held.update({'enabled': 'never', 'defrag': 'never'})
    if 'crash-b.service' in running:
        held.setdefault('enabled', 'madvise')
        held['khugepaged/pages_to_scan'] = '2048'
    return held


def pick(rng, choices):
    """One of choices, after a draw made whatever their number (none: None), so that the
    sequence of draws does not depend on the state."""
    draw = rng.random()
    return choices[int(draw * len(choices))] if choices else None


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
    # Every round ends in a kill or a stop; the last daemon stops with SIGTERM.
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
        self.write_config(f'PoolGracePeriod=200ms\n{STORM_CONFIG}[Drift]\nMaxRestores={MAX_RESTORES}\n')
        self.mismatches = []

    def ctl(self, *args):
        return self.stack.run(os.environ['THPD_CTL_BIN'], '--user', *args, check=False)

    def truth_now(self):
        return {**self.read_knobs(KNOBS), 'pool': self.kernel.read_pool()}

    def recorded(self, line):
        try:
            return line in (self.runtime_dir / 'baseline').read_text().splitlines()
        except FileNotFoundError:
            return False

    def check(self, expected, when):
        """Notes each knob and the pool that differs from what it must hold now."""
        found = self.truth_now()
        self.mismatches += [f'{when}: {k} is {found[k]}, must be {v}' for k, v in expected.items() if found[k] != v]

    def drift_conflicts(self):
        """The items thpd says it yielded to another writer (DriftConflicts)."""
        return set(re.findall(r'^DriftConflicts\.(.+)\.Writer=', self.ctl('show', '-p', 'DriftConflicts').stdout, re.M))

    def admin_writes(self, rng, truth, running):
        """The admin sets the free knob, or the pool while nothing holds it; returns once thpd
        took the value as its baseline (or False when the pool is not free now)."""
        free_knob = rng.random() < 0.5
        value = pick(rng, [v for v in FREE_VALUES if v != truth[FREE_KNOB]])
        pages = pick(rng, (0, 4, 8))
        if free_knob:
            self.kernel.knob_path(FREE_KNOB).write_text(f'{value}\n')
            wait_until(lambda: self.recorded(f'knob {FREE_KNOB} {value}'), 10,
                       f'thpd to take {FREE_KNOB}={value} as its baseline')
            truth[FREE_KNOB] = value
            return True
        if 'crash-db.service' in running or self.kernel.read_pool() != truth['pool']:
            return False
        self.kernel.pool_path().write_text(f'{pages}\n')
        wait_until(lambda: self.recorded(f'pool 2048 -1 {pages}'), 10,
                   f'thpd to take {pages} pages as the pool\'s baseline')
        truth['pool'] = pages
        return True

    def no_jobs(self):
        return self.stack.run('systemctl', '--user', 'list-jobs', '--no-legend').stdout.strip() == ''

    def conflict(self, daemon, rng, running, conflicts):
        """Another writer, a root shell (no unit: the test's own writes), sets a knob a running
        policy holds again and again, until thpd yields to it after MAX_RESTORES restores.
        Returns once thpd says so in DriftConflicts, which it answers after the yield is
        recorded (False when no policy holds a knob that is not in conflict already).

        Without CAP_SYS_ADMIN (as thpd.service runs) thpd names a writer from the unit jobs:
        a write while a job runs is that unit's, whose stop would end the conflict. The writes
        wait for the units' jobs to end and for thpd to have handled those ends (a status call
        is answered after the signals that came before it): then nobody is named, "an unknown
        writer", and only a reload ends the conflict."""
        held = {k: v for k, v in held_knobs(running).items() if k in CONFLICT_VALUES and k not in conflicts}
        knob = pick(rng, sorted(held))
        draw = rng.random()
        if knob is None:
            return False
        choices = [v for v in CONFLICT_VALUES[knob] if v != held[knob]]
        value = choices[int(draw * len(choices))]

        wait_until(self.no_jobs, 20, 'the units\' jobs to end')
        wait_until(lambda: self.kernel.read_knob(knob) == held[knob], 20,
                   lambda: f'thpd to apply {knob}={held[knob]}, it is {self.kernel.read_knob(knob)}')
        self.ctl('show', '-p', 'Version')
        yielded = re.compile(rf'unknown writer; an unknown writer keeps setting {re.escape(knob)}={re.escape(value)}: '
                             r'thpd no longer restores it')
        # A restore is over once thpd logged the value back: a write before that could land
        # between thpd's write and its read-back, which thpd takes for the kernel refusing it.
        restored = re.compile(rf'^{re.escape(knob)}: {re.escape(held[knob])} again, [\d.]+ ms after the write of '
                              rf'{re.escape(value)}$', re.M)
        before = len(yielded.findall(daemon.log()))
        for _ in range(MAX_RESTORES + 5):
            restores = len(restored.findall(daemon.log()))
            self.kernel.knob_path(knob).write_text(f'{value}\n')
            wait_until(lambda: len(yielded.findall(daemon.log())) > before or len(restored.findall(daemon.log())) > restores,
                       20, f'thpd to restore {knob}={held[knob]} or yield it to {value}')
            if len(yielded.findall(daemon.log())) > before:
                break
        else:
            self.fail(f'thpd did not yield {knob} to an unknown writer after {MAX_RESTORES + 5} writes of {value}')
        wait_until(lambda: knob in self.drift_conflicts(), 20, f'DriftConflicts to name {knob}')
        conflicts[knob] = value
        return True

    def reload(self, conflicts):
        """A reload ends every conflict: thpd's next apply writes what the sources want or gives
        the knob back to its baseline."""
        self.assertEqual(self.ctl('reload').returncode, 0)
        wait_until(lambda: not self.drift_conflicts(), 20, 'DriftConflicts to empty after a reload')
        conflicts.clear()

    def write_while_down(self, rng, truth, running, conflicts):
        """Between a kill (or a stop) and the next start, the admin writes the free knob, a knob a
        running policy holds (not one in conflict) or, while nothing holds it, the pool. Returns
        what it wrote ('free', 'held' or 'pool') and what the next instance must log (a regular
        expression) and record in its baseline (a line) for it."""
        what = rng.random()
        free_value = pick(rng, [v for v in FREE_VALUES if v != truth[FREE_KNOB]])
        held = sorted(k for k in held_knobs(running) if k in HELD_DOWN_VALUES and k not in conflicts)
        knob = pick(rng, held)
        draw = rng.random()
        pool = pick(rng, [p for p in DOWN_POOL_SIZES if not truth['pool'] <= p <= truth['pool'] + POOL_PAGES])
        # Without records (a SIGTERM gave everything back), the next start is a first one: what
        # the kernel holds is the baseline, and there is no drift to report.
        records = (self.runtime_dir / 'baseline').exists()
        found = r'found {} instead of \S+, written while thpd was not running; '

        if what < 0.35 and knob and records:
            choices = [v for v in HELD_DOWN_VALUES[knob] if v != truth[knob]]
            value = choices[int(draw * len(choices))]
            self.kernel.knob_path(knob).write_text(f'{value}\n')
            return 'held', rf'{re.escape(knob)}: {found.format(re.escape(value))}restoring ', None
        if what < 0.7 or pool is None or 'crash-db.service' in running or self.kernel.read_pool() != truth['pool']:
            self.kernel.knob_path(FREE_KNOB).write_text(f'{free_value}\n')
            truth[FREE_KNOB] = free_value
            log = rf'{re.escape(FREE_KNOB)}: {found.format(free_value)}no policy holds it; taking it as the baseline'
            return 'free', log if records else None, f'knob {FREE_KNOB} {free_value}'
        self.kernel.pool_path().write_text(f'{pool}\n')
        # The kernel may give fewer pages than asked.
        truth['pool'] = pages = self.kernel.read_pool()
        log = rf'{re.escape(POOL_ITEM)}: {found.format(pages)}no policy holds it; taking it as the baseline'
        return 'pool', log if records else None, f'pool 2048 -1 {pages}'

    def start_round(self, conflicts, down_log, down_record):
        """Starts thpd; returns once it took up each yield again and judged what the admin wrote
        while it was down."""
        daemon = self.start_thpd()
        for knob, value in sorted(conflicts.items()):
            left = daemon.wait_log(rf'^{re.escape(knob)}: left at (\S+) to an unknown writer, which thpd yielded to '
                                   r'before it restarted', timeout=20)
            if left.group(1) != value:
                self.mismatches.append(f'start {len(self.daemons)}: {knob} left at {left.group(1)}, must be {value}')
        # Not seen within the deadline, it is a mismatch, and the rounds go on to count them all.
        if down_log and not self.within(20, lambda: re.search(down_log, daemon.log(), re.M)):
            self.mismatches.append(f'start {len(self.daemons)}: no log line matching {down_log!r}')
        if down_record and not self.within(20, lambda: self.recorded(down_record)):
            self.mismatches.append(f'start {len(self.daemons)}: "{down_record}" not in the baseline record')
        return daemon

    @staticmethod
    def within(timeout, predicate):
        try:
            wait_until(predicate, timeout)
            return True
        except AssertionError:
            return False

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
        rounds = int(os.environ.get('THPD_CRASH_KILLS', '60'))
        seed = int(os.environ.get('THPD_CRASH_SEED', str(time.time_ns() % 1_000_000)))
        rng = random.Random(seed)
        print(f'\ncrash suite: seed {seed}, {rounds} rounds', file=sys.stderr)
        began = time.monotonic()
        truth = self.truth_now()
        running = set()
        # Knobs thpd yielded to another writer, with the writer's value: it holds them until a
        # reload ends the conflict, whatever else happens.
        conflicts = {}
        counts = dict.fromkeys(('kills', 'SIGTERMs', 'start', 'stop', 'override', 'storm', 'conflicts', 'reloads',
                                'admin writes', 'free writes while down', 'pool writes while down',
                                'held writes while down'), 0)
        storming = False
        down_log = down_record = None

        for round_ in range(rounds):
            daemon = self.start_round(conflicts, down_log, down_record)
            for _ in range(rng.randint(1, 6)):
                what = rng.random()
                if what < 0.55:
                    unit = rng.choice(sorted(UNITS))
                    if unit in running:
                        self.stack.run('systemctl', '--user', 'stop', '--no-block', unit)
                        running.discard(unit)
                        counts['stop'] += 1
                    else:
                        self.stack.units.add(unit)
                        self.stack.run('systemd-run', '--user', '--quiet', '--collect', '--no-block', f'--unit={unit}',
                                       '--', 'sleep', 'infinity')
                        running.add(unit)
                        counts['start'] += 1
                elif what < 0.63:
                    self.ctl('override', 'defrag=defer', '--for=1s')
                    counts['override'] += 1
                elif what < 0.72:
                    storming = not storming
                    counts['storm'] += self.storm_turns(daemon, storming)
                elif what < 0.80:
                    counts['conflicts'] += self.conflict(daemon, rng, running, conflicts)
                elif what < 0.85:
                    self.reload(conflicts)
                    counts['reloads'] += 1
                else:
                    counts['admin writes'] += self.admin_writes(rng, truth, running)
                time.sleep(rng.random() * 0.02)
            time.sleep(rng.random() * 0.05)
            # A yielded value is never written over while thpd runs.
            self.check(conflicts, f'round {round_}, before the end')
            if rng.random() < 0.2:
                # SIGTERM gives back what is thpd's and leaves what it yielded, saying so where
                # the writer's value is not the baseline's too.
                daemon.stop()
                counts['SIGTERMs'] += 1
                for knob, value in sorted((k, v) for k, v in conflicts.items() if v != truth[k]):
                    if not re.search(rf'{re.escape(knob)}: leaving {re.escape(value)}, the value of an unknown writer, '
                                     r'which thpd yielded to', daemon.log()):
                        self.mismatches.append(f'round {round_}, SIGTERM: no "leaving" line for {knob}')
                self.check({**truth, **conflicts}, f'round {round_}, after SIGTERM')
            else:
                daemon.kill()
                counts['kills'] += 1
            down_log = down_record = None
            if rng.random() < 0.35:
                kind, down_log, down_record = self.write_while_down(rng, truth, running, conflicts)
                counts[f'{kind} writes while down'] += 1

        # The last instance sees every unit stop, the storm clear and the pool's grace pass;
        # SIGTERM restores what is thpd's and leaves what it yielded.
        self.storm.set_shape(CALM)
        daemon = self.start_round(conflicts, down_log, down_record)
        self.stack.stop_all_units()
        wait_until(lambda: self.kernel.read_pool() == truth['pool'], 10,
                   lambda: f'the pool at {truth["pool"]} pages, it has {self.kernel.read_pool()}')
        daemon.stop()
        self.check({**truth, **conflicts}, 'at the end')
        print(f'crash suite: seed {seed}: {rounds} rounds in {time.monotonic() - began:.0f} s ({counts}), '
              f'{len(conflicts)} conflict(s) left at the end, {len(self.mismatches)} mismatch(es) {self.mismatches}',
              file=sys.stderr)
        self.assertEqual(self.mismatches, [], f'seed {seed}')


if __name__ == '__main__':
    thpdtest.main()
