# SPDX-License-Identifier: LGPL-2.1-or-later
"""Knobs written behind thpd's back (issue 23), with units of the test's systemd --user manager
writing the scratch knob files as TuneD, sysfsutils or an admin's oneshot unit would:

- a oneshot unit writes a knob a policy holds: thpd restores it, credits the unit, and reports
  one drift event (Drift signal, RecentDrift, the log, thpd_knob_drift_total);
- a timer runs a oneshot that rewrites the knob again and again: after Drift.MaxRestores=
  restores thpd reports a conflict naming the unit and writes no more, however often the unit
  writes; a reload ends the conflict and thpd restores the knob once more;
- a writer that stays active (RemainAfterExit=yes) and MaxRestores=0: the conflict lasts until
  that unit stops, then thpd restores the knob;
- a knob no policy holds is adopted as the baseline, and its writer named;
- a write from outside any unit is seen at the write and restored with nobody asking, reported
  as by an unknown writer with how long the knob was wrong; a change no watch saw is found by a
  status call, which answers with the value in force and leaves the restore to the apply it
  queued; with every watch armed the daemon is idle (no wakeup in 10 s);
- a hugetlb pool a policy sizes, shrunk by a oneshot unit: resized and the unit credited; after
  MaxRestores= a conflict, the pool left as that unit set it until a reload;
- a pool no unit holds, sized by the admin: followed, and still the admin's after thpd is killed
  with SIGKILL, started again, and a policy's unit has grown and released it (issue 37);
- a knob the admin writes while thpd is down (killed with SIGKILL): adopted where no policy
  holds it, restored where one does, reported as written while thpd was not running; thpd's own
  leftover given back (issue 42);
- a TuneD stand-in (fake_tuned.py: TuneD's bus name and profile_changed signal) writes a held
  knob: restored at the write, then named "tuned.service (profile hpc-compute)"; switched again
  and again, a conflict that names it, and still names it after thpd stops and starts again;
- through all of these, status's Whose: lines and the Ownership property say whose each value
  is: a writer's thpd yielded to (named, or unknown), thpd's for a policy, the baseline's.

Every wait has a deadline and waits for a state (a log line, a knob value, a count); nothing
samples a fixed window. The harness then checks that each daemon settles (idle, no bus traffic).

Run as root:
    THPD_BIN=build/src/daemon/thpd THPD_CTL_BIN=build/src/ctl/thpd-ctl /usr/bin/python3 -B test_drift.py -v
"""

import json
import mmap
import os
import re
import select
import subprocess
import sys
import time
import unittest
from pathlib import Path

import jsonschema

import thpdtest
from thpdtest import ThpdTestCase, render_knob, wait_until

DEADLINE = 30.0
# A unit's oneshot writer is seen at its write, while its job runs; a slow daemon (valgrind)
# handles the job's end first.
JOB = r'\((its job was running|its job finished \d+ ms before)\)'
SCHEMA = json.loads((Path(__file__).resolve().parents[2] / 'data' / 'thpd-ctl.schema.json').read_text())
APP = 'thpd-test-app.service'
POLICY = f"""\
[Policy]
Units={APP}
[TransparentHugePages]
Enabled=madvise
"""


class DriftTest(ThpdTestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(os.environ.get('THPD_CTL_BIN', ''), os.X_OK):
            raise unittest.SkipTest('THPD_CTL_BIN does not name thpd-ctl')
        super().setUpClass()

    def setUp(self):
        super().setUp()
        # The admin's setting before thpd: always, so that the policy's madvise is a change.
        self.kernel.set_knob('enabled', 'always')
        self.write_policy('app.conf', POLICY)

    def write_drift_config(self, max_restores=3, window='10min'):
        self.config_path.write_text(f'[Daemon]\n[Drift]\nMaxRestores={max_restores}\nRestoreWindowSec={window}\n')

    def ctl(self, *args):
        proc = self.stack.run(os.environ['THPD_CTL_BIN'], '--user', *args, check=False)
        self.assertEqual(proc.returncode, 0, f'thpd-ctl {" ".join(args)}: {proc.stderr}')
        return proc.stdout

    def start_with_app(self, cap_sys_admin=False):
        daemon = self.start_thpd(cap_sys_admin=cap_sys_admin)
        self.start_unit(APP)
        self.wait_knobs(enabled='madvise')
        # The knob moves at the start job's JobNew; a status call, answered in order after the
        # JobRemoved that follows, makes sure thpd has looked at that job's end before a
        # writer runs: a slow daemon (valgrind) would credit the app's job with the change.
        self.ctl('show', '-p', 'Version')
        return daemon

    # A unit's writer waits a moment before it writes. thpd names it from systemd's JobNew, which
    # reaches thpd through the bus daemon, while the write's inotify event comes from the kernel:
    # on a loaded machine the event can come first, and the write is then an unknown writer's,
    # which has a restore count of its own. Real writers (TuneD, sysfsutils) write well after
    # their job began. A second, not 200 ms: with the load at 20 on two cores (six test runs at
    # once) the signal can take some hundreds of milliseconds. Nothing thpd shows tells a test
    # that it has read the JobNew of a unit no policy names, so this cannot be a wait for a state.
    WRITER_DELAY = 'sleep 1; '

    def writer_command(self, knob, value, count_file=None):
        script = f'{self.WRITER_DELAY}echo {value} > {self.kernel.knob_path(knob)}'
        if count_file:
            script += f'; echo x >> {count_file}'
        return ('/bin/sh', '-c', script)

    @staticmethod
    def next_event(monitor, signal, deadline=DEADLINE):
        """The next line of thpd-ctl --json monitor for that signal. Reads the pipe itself: a
        buffered readline() after select() would leave lines that came in one burst in Python's
        buffer, where select() does not see them."""
        end = time.monotonic() + deadline
        pending = monitor.__dict__.setdefault('pending_lines', [])
        partial = monitor.__dict__.setdefault('partial_line', [b''])
        seen = []
        while True:
            while pending:
                event = json.loads(pending.pop(0))
                if event['signal'] == signal:
                    return event
                seen.append(event['signal'])
            remaining = end - time.monotonic()
            ready, _, _ = select.select([monitor.stdout], [], [], max(remaining, 0))
            if not ready:
                break
            data = os.read(monitor.stdout.fileno(), 65536)
            if not data:
                break
            *lines, partial[0] = (partial[0] + data).split(b'\n')
            pending.extend(line.decode() for line in lines if line)
        raise AssertionError(f'no {signal} signal within {deadline} s; the monitor printed {seen}')

    def validate(self, instance, verb):
        jsonschema.validate(instance, {**SCHEMA, '$ref': f'#/$defs/{verb}'}, cls=jsonschema.Draft202012Validator)

    def assert_whose(self, **expected):
        """Whose value each item named holds (knob=(whose, detail), '/' spelled '__'), as status
        --json and show give the Ownership property, and the line of status's Whose: block that
        names it."""
        status = json.loads(self.ctl('--json', 'status'))
        self.validate(status, 'status')
        whose = {row['knob']: (row['whose'], row['detail']) for row in status['ownership']}
        show = self.ctl('show', '-p', 'Ownership')
        text = self.ctl('status')
        for key, (owner, detail) in expected.items():
            item = key.replace('__', '/')
            self.assertEqual(whose.get(item), (owner, detail), f'{item}: {status["ownership"]}')
            self.assertIn(f'Ownership.{item}.Whose={owner}\n', show)
            if owner == 'baseline':
                # Not named: every item no other line names.
                self.assertRegex(text, r"\n  (Whose: +| +)every (other )?knob and pool: the baseline's\n", text)
                self.assertNotRegex(text, rf"\n  (Whose: +| +)([^\n]*, )?{re.escape(item)}(, [^\n]*)?: ", text)
                continue
            said = {'thpd': f"thpd's ({detail})",
                    'writer': f"the writer's, {detail}, which thpd yielded to" if detail else
                              "an unknown writer's, which thpd yielded to"}[owner]
            self.assertRegex(text, rf'\n  (Whose: +| +)([^\n]*, )?{re.escape(item)}(, [^\n]*)?: {re.escape(said)}\n',
                             f'{item} in\n{text}')

    @staticmethod
    def count(daemon, pattern):
        return len(re.findall(pattern, daemon.log(), re.M))

    def wait_restored(self, daemon, pattern, n):
        """Waits for thpd's nth restore of enabled to madvise, and for it to end. thpd logs a
        restore before it writes and reads the knob back after: a test's next write must not land
        in between, where it is a writer racing the read-back rather than the next change. The
        restore ends in the event that began it, so a status call is answered after it."""
        wait_until(lambda: self.count(daemon, pattern) == n, DEADLINE, f'restore {n}')
        self.wait_knobs(enabled='madvise')
        self.ctl('show', '-p', 'Version')

    def metric(self, name, labels=''):
        text = self.ctl('metrics')
        match = re.search(rf'^{re.escape(name + labels)} (\d+)$', text, re.M)
        return int(match.group(1)) if match else 0

    def test_1_oneshot_writer_restored(self):
        """A oneshot unit sets enabled=never under the policy's madvise: restored, credited to
        the unit, one drift event."""
        daemon = self.start_with_app()
        monitor = subprocess.Popen([os.environ['THPD_CTL_BIN'], '--user', '--json', 'monitor'], env=self.stack.env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
        self.addCleanup(monitor.wait)
        self.addCleanup(monitor.terminate)
        # It says so on stderr once it listens.
        ready, _, _ = select.select([monitor.stderr], [], [], DEADLINE)
        self.assertTrue(ready, 'thpd-ctl monitor did not start')
        self.assertIn('Following thpd', monitor.stderr.readline())
        writes_before = self.metric('thpd_knob_writes_total')

        self.start_unit('thpd-test-writer.service', *self.writer_command('enabled', 'never'),
                        properties=('Type=oneshot',))
        daemon.wait_log(r'enabled: found never instead of madvise, likely written by thpd-test-writer\.service '
                        rf'{JOB}; restoring madvise', timeout=DEADLINE)
        self.wait_knobs(enabled='madvise')

        drift = self.next_event(monitor, 'Drift')
        self.validate(drift, 'monitor')
        self.assertEqual(drift['drift'], [{'knob': 'enabled', 'expected': 'madvise', 'found': 'never',
                                              'writer': 'thpd-test-writer.service', 'action': 'restored'}])

        status = json.loads(self.ctl('--json', 'status'))
        self.validate(status, 'status')
        self.assertEqual([(d['knob'], d['found'], d['writer'], d['action']) for d in status['recent_drift']],
                         [('enabled', 'never', 'thpd-test-writer.service', 'restored')])
        self.assertEqual(status['drift_conflicts'], [])
        self.assertEqual(self.count(daemon, r'found never instead of madvise'), 1)
        self.assertEqual(self.metric('thpd_knob_drift_total', '{knob="enabled",writer="thpd-test-writer.service"}'), 1)
        self.assertEqual(self.metric('thpd_knob_writes_total'), writes_before + 1)
        text = self.ctl('status')
        self.assertRegex(text, r'Drift: .* enabled=never instead of madvise, likely written by '
                               rf'thpd-test-writer\.service {JOB}; restored after \d+ ms')

    def test_2_loop_writer_conflict(self):
        """A timer runs a writer again and again: MaxRestores=3 restores, then a conflict naming
        it and no more writes by thpd while the writer goes on; a reload ends the conflict."""
        self.write_drift_config(max_restores=3)
        daemon = self.start_with_app()
        writes_before = self.metric('thpd_knob_writes_total')
        count_file = self.tmp / 'writes'
        count_file.touch()
        count_file.chmod(0o666)
        self.stack.units.add('thpd-test-loop.timer')
        self.stack.run('systemd-run', '--user', '--quiet', '--collect', '--unit=thpd-test-loop',
                       '--on-active=100ms', '--on-unit-active=300ms', '--timer-property=AccuracySec=1ms',
                       '--property=Type=oneshot', '--', *self.writer_command('enabled', 'never', count_file))

        daemon.wait_log(r'thpd-test-loop\.service keeps setting enabled=never: thpd no longer restores it',
                        timeout=DEADLINE)
        restores = r'found never instead of madvise, likely written by thpd-test-loop\.service .*; restoring'
        self.assertEqual(self.count(daemon, restores), 3)
        writes_at_conflict = self.metric('thpd_knob_writes_total')
        self.assertEqual(writes_at_conflict, writes_before + 3)
        self.wait_knobs(enabled='never')

        # The writer goes on: each write is a job end thpd looks at, and none is answered.
        seen = len(count_file.read_text().splitlines())
        wait_until(lambda: len(count_file.read_text().splitlines()) >= seen + 5, DEADLINE,
                   'five more rounds of the writer')
        self.stack.run('systemctl', '--user', 'stop', 'thpd-test-loop.timer')
        wait_until(lambda: self.stack.unit_state('thpd-test-loop.service') in ('inactive', 'failed'), DEADLINE,
                   'the writer to finish its last round')
        self.assertEqual(self.count(daemon, restores), 3)
        self.assertEqual(self.metric('thpd_knob_writes_total'), writes_at_conflict)
        self.assert_knobs(enabled='never')

        show = self.ctl('show', '-p', 'DriftConflicts')
        self.assertIn('DriftConflicts=enabled\n', show)
        self.assertIn('DriftConflicts.enabled.Writer=thpd-test-loop.service\n', show)
        self.assertIn('DriftConflicts.enabled.Value=never\n', show)
        self.assertIn('thpd_knob_drift_conflicts 1', self.ctl('metrics'))
        explain_json = json.loads(self.ctl('--json', 'explain', 'enabled'))
        self.validate(explain_json, 'explain')
        self.assertEqual([(c['knob'], c['writer'], c['value']) for c in explain_json['drift_conflicts']],
                         [('enabled', 'thpd-test-loop.service', 'never')])
        explain = self.ctl('explain', 'enabled')
        self.assertIn('Conflict: thpd-test-loop.service keeps setting enabled=never: thpd no longer restores it',
                      explain)
        status = self.ctl('status')
        self.assertRegex(status, r'Conflict: thpd-test-loop\.service keeps setting enabled=never: '
                                 r'thpd no longer restores it \(since ')
        self.assertIn('; 1 knob(s) left to a writer that keeps rewriting them', status.splitlines()[0])
        self.assertRegex(status, r'enabled +never .* target madvise left to thpd-test-loop\.service \(see Conflict\)')
        self.assertNotIn('is not applied', status)

        # A reload settles the fight: thpd writes its value again, once.
        self.ctl('reload')
        self.wait_knobs(enabled='madvise')
        self.assertEqual(self.metric('thpd_knob_writes_total'), writes_at_conflict + 1)
        self.assertIn('DriftConflicts=\n', self.ctl('show', '-p', 'DriftConflicts'))

    def test_3_conflict_until_writer_stops(self):
        """MaxRestores=0: the first change is a conflict; it lasts until that unit stops."""
        self.write_drift_config(max_restores=0)
        daemon = self.start_with_app()
        self.start_unit('thpd-test-tuned.service', *self.writer_command('enabled', 'never'),
                        properties=('Type=oneshot', 'RemainAfterExit=yes'))
        daemon.wait_log(r'thpd-test-tuned\.service keeps setting enabled=never: thpd no longer restores it',
                        timeout=DEADLINE)
        self.assert_knobs(enabled='never')
        self.assertEqual(self.count(daemon, r'found never instead of madvise.*; restoring'), 0)

        # Stopped at once: thpd may not have heard yet that the writer runs. Its last run
        # reached active, which a oneshot's never does, so the stop ends the conflict either way.
        self.stop_unit('thpd-test-tuned.service')
        daemon.wait_log(r'thpd-test-tuned\.service stopped; thpd restores', timeout=DEADLINE)
        self.wait_knobs(enabled='madvise')
        self.assertIn('DriftConflicts=\n', self.ctl('show', '-p', 'DriftConflicts'))

    def test_3b_writer_that_exits_by_itself(self):
        """A writer in conflict that restarts keeps it; one that stops with no job, its main
        process exiting, ends it: no job end prompts a question, and once stopped it is
        unloaded, so only its signals tell thpd that it ran and stopped."""
        self.write_drift_config(max_restores=0)
        daemon = self.start_with_app()
        done = self.tmp / 'writer-done'
        # It writes in ExecStartPre=, while its start job runs, which names it; then it runs.
        write = f'{self.WRITER_DELAY}echo never > {self.kernel.knob_path("enabled")}'
        self.start_unit('thpd-test-daemon.service', '/bin/sh', '-c', f'while [ ! -e {done} ]; do sleep 0.05; done',
                        properties=(f'ExecStartPre=/bin/sh -c "{write}"',))
        daemon.wait_log(r'thpd-test-daemon\.service keeps setting enabled=never: thpd no longer restores it',
                        timeout=DEADLINE)
        self.assert_knobs(enabled='never')

        # A restart passes through "inactive" with its job still queued: the writer runs on.
        # systemd sent every signal of the restart before systemctl returned, so thpd has read
        # them before it answers the status call.
        self.stack.run('systemctl', '--user', 'restart', 'thpd-test-daemon.service')
        self.assertIn('DriftConflicts=enabled\n', self.ctl('show', '-p', 'DriftConflicts'))
        self.assertEqual(self.count(daemon, r'thpd-test-daemon\.service stopped'), 0)
        self.assert_knobs(enabled='never')

        done.touch()
        daemon.wait_log(r'thpd-test-daemon\.service stopped; thpd restores', timeout=DEADLINE)
        self.wait_knobs(enabled='madvise')
        self.assertEqual(self.stack.unit_state('thpd-test-daemon.service'), 'inactive')
        self.assertIn('DriftConflicts=\n', self.ctl('show', '-p', 'DriftConflicts'))

    def test_3c_yield_outlasts_the_stop(self):
        """Issue 42, case 1: MaxRestores=2, and a root shell writes never five times: two
        restores, then a conflict. SIGTERM (systemctl stop thpd, a package removal) gives back
        what is thpd's and leaves the value it yielded, saying so, with the records: thpd started
        again keeps to the yield."""
        self.write_drift_config(max_restores=2)
        self.write_policy('scan.conf', f'[Policy]\nUnits={APP}\n[Khugepaged]\nPagesToScan=2048\n')
        daemon = self.start_with_app()
        self.wait_knobs({'khugepaged/pages_to_scan': '2048'})
        restores = r'enabled: found never instead of madvise, unknown writer; restoring'
        for n in range(1, 3):
            self.kernel.knob_path('enabled').write_text('never\n')
            self.wait_restored(daemon, restores, n)
        for _ in range(3):
            self.kernel.knob_path('enabled').write_text('never\n')
            daemon.wait_log(r'an unknown writer keeps setting enabled=never: thpd no longer restores it',
                            timeout=DEADLINE)
        self.assertIn('DriftConflicts=enabled\n', self.ctl('show', '-p', 'DriftConflicts'))
        self.assert_whose(enabled=('writer', None), khugepaged__pages_to_scan=('thpd', f'scan.conf for {APP}'),
                          defrag=('baseline', None))

        daemon.stop()
        self.assertRegex(daemon.log(), r'enabled: leaving never, the value of an unknown writer, which thpd '
                                       r'yielded to \(the baseline is always\)')
        self.assertNotRegex(daemon.log(), r'enabled: never -> always')
        self.assert_knobs({'enabled': 'never', 'khugepaged/pages_to_scan': '4096'})
        self.assertEqual(self.count(daemon, restores), 2)

        # The records stay, so that thpd started again keeps to the yield.
        self.assertTrue((self.runtime_dir / 'baseline').exists())
        again = self.start_thpd()
        again.wait_log(r'enabled: left at never to an unknown writer', timeout=DEADLINE)
        self.wait_knobs({'khugepaged/pages_to_scan': '2048'})
        self.assert_knobs(enabled='never')
        self.assertIn('DriftConflicts=enabled\n', self.ctl('show', '-p', 'DriftConflicts'))
        self.assert_whose(enabled=('writer', None), khugepaged__pages_to_scan=('thpd', f'scan.conf for {APP}'),
                          defrag=('baseline', None))

    def test_3d_yield_outlasts_a_crash(self):
        """Issue 42, case 1 after a crash: the yield is recorded, and a thpd killed (SIGKILL) and
        started again leaves the writer's value and keeps the conflict, until a reload ends it."""
        self.write_drift_config(max_restores=2)
        self.add_barrier_policy()
        first = self.start_with_app()
        for n in range(1, 4):
            self.kernel.knob_path('enabled').write_text('never\n')
            if n < 3:
                self.wait_restored(first, r'unknown writer; restoring', n)
        first.wait_log(r'an unknown writer keeps setting enabled=never: thpd no longer restores it', timeout=DEADLINE)
        self.assertRegex((self.runtime_dir / 'ownership').read_text(), r'(?m)^yield enabled - never \d+$')

        first.kill()
        second = self.start_thpd()
        second.wait_log(r'enabled: left at never to an unknown writer, which thpd yielded to before it restarted',
                        timeout=DEADLINE)
        # Every unit event before the barrier's has been handled, the unit list's apply too.
        self.barrier()
        self.assert_knobs(enabled='never')
        self.assertIn('DriftConflicts=enabled\n', self.ctl('show', '-p', 'DriftConflicts'))
        self.assertNotRegex(second.log(), r'enabled: never -> madvise')
        self.assert_whose(enabled=('writer', None), defrag=('baseline', None))

        self.ctl('reload')
        self.wait_knobs(enabled='madvise')
        self.assertIn('DriftConflicts=\n', self.ctl('show', '-p', 'DriftConflicts'))
        self.assert_whose(enabled=('thpd', f'app.conf for {APP}'))

    def test_3e_yield_outlasts_a_restart_of_thpds_unit(self):
        """Issue 42, case 1 with systemctl restart thpd: the next instance takes the yield up
        again instead of writing over TuneD's value, and it lasts until that writer stops."""
        self.write_drift_config(max_restores=0)
        self.start_unit(APP)
        unit, log = 'thpd-under-test.service', self.tmp / 'thpd-under-test.log'
        self.start_unit(unit, *self.thpd_argv(),
                        properties=('Type=notify', f'StandardOutput=append:{log}', 'StandardError=inherit',
                                    f'Environment=DBUS_SESSION_BUS_ADDRESS={self.stack.env["DBUS_SESSION_BUS_ADDRESS"]}'))
        self.wait_knobs(enabled='madvise')
        self.ctl('show', '-p', 'Version')
        # A writer that runs on, as TuneD does: named from its job, or (thpd keeps CAP_SYS_ADMIN
        # under this manager) from its process, which is still there when thpd looks.
        script = f'{self.WRITER_DELAY}echo never > {self.kernel.knob_path("enabled")}; exec sleep infinity'
        self.start_unit('thpd-test-tuned.service', '/bin/sh', '-c', script)
        wait_until(lambda: 'thpd-test-tuned.service keeps setting enabled=never' in log.read_text(), DEADLINE,
                   lambda: f'the conflict; the log:\n{log.read_text()}')
        self.assert_whose(enabled=('writer', 'thpd-test-tuned.service'))

        self.stack.run('systemctl', '--user', 'restart', unit)
        wait_until(lambda: 'enabled: left at never to thpd-test-tuned.service' in log.read_text(), DEADLINE,
                   'the next instance to take the yield up')
        show = self.ctl('show', '-p', 'DriftConflicts')
        self.assertIn('DriftConflicts.enabled.Writer=thpd-test-tuned.service\n', show)
        self.assert_knobs(enabled='never')
        self.assert_whose(enabled=('writer', 'thpd-test-tuned.service'), defrag=('baseline', None))

        self.stop_unit('thpd-test-tuned.service')
        wait_until(lambda: 'thpd-test-tuned.service stopped; thpd restores' in log.read_text(), DEADLINE,
                   'the conflict to end')
        self.wait_knobs(enabled='madvise')
        self.assert_whose(enabled=('thpd', f'app.conf for {APP}'))
        self.stop_unit(unit)
        self.assert_knobs(enabled='always')
        self.assertEqual(log.read_text().count('enabled: never -> madvise'), 1, log.read_text())

    def test_4_free_knob_adopted(self):
        """defrag, which no policy holds, set by a oneshot unit: the new baseline, writer named."""
        daemon = self.start_with_app()
        self.start_unit('thpd-test-sysfsutils.service', *self.writer_command('defrag', 'never'),
                        properties=('Type=oneshot', 'RemainAfterExit=yes'))
        daemon.wait_log(r'defrag: found never instead of madvise, likely written by thpd-test-sysfsutils\.service '
                        rf'{JOB}; no policy holds it; taking it as the baseline',
                        timeout=DEADLINE)
        show = self.ctl('show', '-p', 'Knobs', '-p', 'RecentDrift')
        self.assertIn('Knobs.defrag.Baseline=never\n', show)
        self.assertRegex(show, r'RecentDrift=defrag never madvise thpd-test-sysfsutils\.service adopted \d+ \d+ 0\n')
        self.assert_knobs(defrag='never', enabled='madvise')

    def test_5_unattributed_write_restored_unasked(self):
        """A write from no unit (a root shell) is seen at the write and restored with nobody
        asking, reported as by an unknown writer, with how long the knob was wrong."""
        daemon = self.start_with_app()
        self.kernel.knob_path('enabled').write_text('never\n')
        self.wait_knobs(enabled='madvise')
        daemon.wait_log(r'enabled: madvise again, [0-9.]+ ms after the write of never')
        self.assertEqual(self.count(daemon, r'enabled: found never instead of madvise, unknown writer; restoring'), 1)
        status = self.ctl('status')
        self.assertRegex(status, r'Drift: .* enabled=never instead of madvise, unknown writer; restored after \d+ ms')
        drift = json.loads(self.ctl('--json', 'status'))['recent_drift']
        self.assertEqual(len(drift), 1)
        self.assertIsNotNone(drift[0]['written'])
        self.assertGreater(drift[0]['wrong_usec'], 0)
        self.assertEqual(self.metric('thpd_knob_drift_total', '{knob="enabled",writer="unknown"}'), 1)

    def test_5b_status_while_wrong_writes_nothing(self):
        """A change no watch saw (a write through a shared mapping raises no inotify event) is
        found by the status call, which answers with the value in force and writes nothing; the
        restore it queued comes after the answer."""
        self.write_policy('scan.conf', '[Policy]\nUnits=thpd-test-app.service\n[Khugepaged]\nPagesToScan=2048\n')
        daemon = self.start_with_app()
        self.wait_knobs({'khugepaged/pages_to_scan': '2048'})
        path = self.kernel.knob_path('khugepaged/pages_to_scan')
        content = path.read_bytes()
        self.assertEqual(content.strip(), b'2048')
        with open(path, 'r+b') as f, mmap.mmap(f.fileno(), len(content)) as mapping:
            mapping[:] = content.replace(b'2048', b'1024')
        self.assertEqual(self.kernel.read_knob('khugepaged/pages_to_scan'), '1024')
        status = self.ctl('status')
        self.assertRegex(status, r'(?m)khugepaged/pages_to_scan\s+1024\b')
        self.assertRegex(status, r'Drift: .* khugepaged/pages_to_scan=1024 instead of 2048, unknown writer; restored')
        self.wait_knobs({'khugepaged/pages_to_scan': '2048'})
        self.assertEqual(self.count(daemon, r'khugepaged/pages_to_scan: found 1024 instead of 2048, unknown writer; '
                                            r'restoring'), 1)

    def test_5c_idle_with_every_watch_armed(self):
        """Watches are events, not polls: a 10 s window in which the daemon wakes at most once
        (the harness's own allowance) once settled."""
        daemon = self.start_with_app()
        self.kernel.knob_path('defrag').write_text('never\n')
        daemon.wait_log(r'defrag: found never instead of madvise, unknown writer; no policy holds it')
        thpdtest.assert_settles(daemon.pid, self.stack.bus_address, window=10.0, deadline=60.0)

    def test_6_pool_writer(self):
        """A oneshot unit empties the 2 MiB pool a policy sizes: thpd sizes it again and credits
        the unit; the second time (MaxRestores=1) it leaves the pool to it until a reload."""
        self.write_drift_config(max_restores=1)
        self.write_policy('db.conf', '[Policy]\nUnits=thpd-test-db.service\n[HugeTLB]\nPages=16\n')
        daemon = self.start_with_app()
        self.start_unit('thpd-test-db.service')
        self.wait_pool(16)
        self.ctl('show', '-p', 'Version')
        pool = self.kernel.pool_path()
        writer = ('/bin/sh', '-c', f'{self.WRITER_DELAY}echo 0 > {pool}')

        self.start_unit('thpd-test-pool-writer.service', *writer, properties=('Type=oneshot',))
        daemon.wait_log(r'hugepages-2048kB/nr_hugepages: found 0 instead of 16, likely written by '
                        rf'thpd-test-pool-writer\.service {JOB}; restoring 16 '
                        r'\(.*db\.conf for thpd-test-db\.service\)', timeout=DEADLINE)
        self.wait_pool(16)

        self.start_unit('thpd-test-pool-writer.service', *writer, properties=('Type=oneshot',))
        daemon.wait_log(r'thpd-test-pool-writer\.service keeps setting hugepages-2048kB/nr_hugepages=0: '
                        r'thpd no longer restores it', timeout=DEADLINE)
        status = json.loads(self.ctl('--json', 'status'))
        self.validate(status, 'status')
        self.assertEqual([(c['knob'], c['writer'], c['value']) for c in status['drift_conflicts']],
                         [('hugepages-2048kB/nr_hugepages', 'thpd-test-pool-writer.service', '0')])
        self.assertEqual(self.kernel.read_pool(), 0)
        self.assertIn('left at 0 pages to thpd-test-pool-writer.service', status['hugetlb_pools'][0]['shortfall'])

        self.ctl('reload')
        self.wait_pool(16)
        self.assertEqual(self.metric('thpd_knob_drift_total',
                                     '{knob="hugepages-2048kB/nr_hugepages",writer="thpd-test-pool-writer.service"}'), 2)

    def test_7_followed_pool_survives_sigkill(self):
        """The admin sizes a pool that no running unit holds: thpd follows, and the baseline
        record says so before anything relies on it, so that a thpd killed and started again
        puts the admin's 10 pages back once a policy's unit has come and gone."""
        self.write_config('PoolGracePeriod=1s\n')
        self.write_policy('50-pg.conf', '[Policy]\nUnits=pg-app.service\n[HugeTLB]\nPageSize=2M\nPages=72\n')
        first = self.start_with_app()
        self.assertEqual(self.kernel.read_pool(), 0)

        self.kernel.pool_path().write_text('10\n')
        self.start_unit('thpd-test-other.service', '/bin/true', properties=('Type=oneshot',))
        first.wait_log(r'hugepages-2048kB/nr_hugepages: found 10 instead of 0, .*no policy holds it; '
                       r'taking it as the baseline', timeout=DEADLINE)
        self.assertIn('2M  10/10 pages', self.ctl('status'))
        record = (self.runtime_dir / 'baseline').read_text()
        self.assertRegex(record, r'(?m)^pool 2048 -1 10$', f'the baseline record:\n{record}')

        first.kill()
        second = self.start_thpd()
        self.assertEqual(self.kernel.read_pool(), 10)
        # A policy's pages come on top of the baseline (thpd.policy(5)).
        self.start_unit('pg-app.service')
        self.wait_pool(82)
        self.stop_unit('pg-app.service')
        self.wait_pool(10)
        second.stop()
        self.assertEqual(self.kernel.read_pool(), 10)

    def test_7b_written_while_down(self):
        """Issue 42, case 2: thpd is killed (SIGKILL) while the policy holds madvise; its unit
        stops and the admin writes never while thpd is down. The restarted thpd tells that from
        its own leftover: no policy holds the knob, so the admin's value is adopted and reported
        as written while thpd was not running. Killed again with the unit running and the admin
        writing always: restored, and reported the same way. Its own leftover, with nobody
        writing, is given back."""
        first = self.start_with_app()
        first.kill()
        self.stop_unit(APP)
        self.kernel.set_knob('enabled', 'never')
        second = self.start_thpd()
        second.wait_log(r'enabled: found never instead of madvise, written while thpd was not running; no policy '
                        r'holds it; taking it as the baseline', timeout=DEADLINE)
        self.assert_knobs(enabled='never')
        self.assertRegex((self.runtime_dir / 'baseline').read_text(), r'(?m)^knob enabled never$')
        self.assertRegex(self.ctl('show', '-p', 'RecentDrift'), r'RecentDrift=enabled never madvise - adopted ')

        # The unit runs again under the policy; the admin writes while thpd is down.
        self.start_unit(APP)
        self.wait_knobs(enabled='madvise')
        self.ctl('show', '-p', 'Version')
        second.kill()
        self.kernel.set_knob('enabled', 'always')
        third = self.start_thpd()
        third.wait_log(r'enabled: found always instead of madvise, written while thpd was not running; restoring '
                       rf'madvise \(\S*app\.conf for {re.escape(APP)}\)', timeout=DEADLINE)
        self.wait_knobs(enabled='madvise')

        # Its own leftover: given back to the admin's never once the unit is gone.
        third.kill()
        self.stop_unit(APP)
        fourth = self.start_thpd()
        self.wait_knobs(enabled='never')
        self.assertNotRegex(fourth.log(), r'written while thpd was not running')
        fourth.stop()
        self.assert_knobs(enabled='never')

    def test_8_tuned_profile_switch_named(self):
        """A TuneD-like daemon (com.redhat.tuned on the bus, no unit job) writes enabled=always
        and then sends profile_changed("hpc-compute"), as TuneD does once a switch is applied:
        thpd restores madvise at the write, unasked, and then names tuned.service with the
        profile in the log, RecentDrift and status; switched again and again, it
        meets the conflict rule, and the conflict names tuned.service."""
        daemon = self.start_with_app()
        tuned = subprocess.Popen([sys.executable, '-B', str(Path(__file__).with_name('fake_tuned.py')),
                                  str(self.kernel.knob_path('enabled'))],
                                 env=self.stack.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self.addCleanup(tuned.stdout.close)
        self.addCleanup(tuned.wait)
        self.addCleanup(tuned.stdin.close)
        self.assertEqual(tuned.stdout.readline().strip(), 'ready')

        tuned.stdin.write('always hpc-compute\n')
        self.assertEqual(tuned.stdout.readline().strip(), 'switched')
        daemon.wait_log(r'enabled: the change thpd found was TuneD.s \(tuned\.service, profile hpc-compute\)',
                        timeout=DEADLINE)
        self.wait_knobs(enabled='madvise')
        self.assertEqual(self.count(daemon, r'enabled: found always instead of madvise, unknown writer; restoring'), 1)
        status = self.ctl('status')
        self.assertRegex(status, r'Drift: .* enabled=always instead of madvise, written by tuned\.service '
                                 r'\(profile hpc-compute\); restored after \d+ ms')
        # Counted when thpd acted, before TuneD's announcement: a counter keeps its label.
        self.assertEqual(self.metric('thpd_knob_drift_total', '{knob="enabled",writer="unknown"}'), 1)

        # Switched again and again: after MaxRestores= (3) restores a conflict, which TuneD's
        # next announcement names as its.
        for i in range(3):
            # After thpd's restore is verified, not when its value first shows: a scratch file
            # is truncated and rewritten, and a switch in between would leave thpd's read-back
            # an empty file, which no sysfs store shows.
            wait_until(lambda: self.count(daemon, r'enabled: always -> madvise') == 2 + i, DEADLINE,
                       lambda: f'restore {i + 1} of TuneD\'s switches verified')
            self.wait_knobs(enabled='madvise')
            tuned.stdin.write('always hpc-compute\n')
            self.assertEqual(tuned.stdout.readline().strip(), 'switched')
        daemon.wait_log(r'enabled: found always instead of madvise, unknown writer; an unknown writer keeps '
                        r'setting enabled=always: thpd no longer restores it', timeout=DEADLINE)
        wait_until(lambda: 'DriftConflicts.enabled.Writer=tuned.service\n' in self.ctl('show', '-p', 'DriftConflicts'),
                   DEADLINE, 'the conflict to name tuned.service')
        self.assertEqual(self.kernel.read_knob('enabled'), 'always')
        self.assertEqual(self.count(daemon, r'enabled: found always instead of madvise'), 4)
        self.assertEqual(self.count(daemon, r'enabled: always -> madvise|enabled: \w+ -> madvise'), 4)
        self.assert_whose(enabled=('writer', 'tuned.service (profile hpc-compute)'))

        # Stopped and started again: TuneD's value stays (here the baseline's value too), and the
        # record still names TuneD and what it said, although thpd yielded before TuneD named
        # itself.
        daemon.stop()
        again = self.start_thpd()
        again.wait_log(r'enabled: left at always to tuned\.service, which thpd yielded to', timeout=DEADLINE)
        self.assert_knobs(enabled='always')
        self.assert_whose(enabled=('writer', 'tuned.service (profile hpc-compute)'))

    def test_9_writer_process_named_with_cap_sys_admin(self):
        """With CAP_SYS_ADMIN (an admin's opt-in), fanotify names the writing process: a unit's
        shell by its unit, a process outside any unit by its command and pid."""
        daemon = self.start_with_app(cap_sys_admin=True)
        daemon.wait_log(r'Naming the processes that write the knobs \(fanotify\)')
        writer, expected = self.start_writer_outside_units(self.kernel.knob_path('enabled'), 'never')
        match = daemon.wait_log(r'enabled: found never instead of madvise, written by (.*); restoring madvise')
        self.assertEqual(match.group(1), expected)
        self.wait_knobs(enabled='madvise')

        # A unit's job runs meanwhile (a oneshot that never finishes): the process fanotify found
        # in no unit is still the writer, not that job (stop 39's CI: a Redis start job that
        # ended as a root shell wrote got the credit).
        self.stack.units.add('thpd-test-busy.service')
        self.stack.run('systemd-run', '--user', '--quiet', '--collect', '--no-block', '--unit=thpd-test-busy',
                       '--property=Type=oneshot', '--', 'sleep', 'infinity')
        wait_until(lambda: self.stack.run('systemctl', '--user', 'is-active', 'thpd-test-busy.service',
                                          check=False).stdout.strip() == 'activating',
                   DEADLINE, 'thpd-test-busy.service activating')
        self.ctl('show', '-p', 'Version')
        busy_writer, expected = self.start_writer_outside_units(self.kernel.knob_path('enabled'), 'never')
        match = daemon.wait_log(rf'enabled: found never instead of madvise, (.*sh, pid {busy_writer.pid}\b.*|'
                                r'likely written by thpd-test-busy\.service.*); restoring madvise')
        self.assertEqual(match.group(1), f'written by {expected}')
        self.wait_knobs(enabled='madvise')
        self.stop_unit('thpd-test-busy.service')

        # The shell outlives its write: one that exits at once may be gone, or leaving its
        # cgroup, before thpd reads /proc (then its running job names it, as without fanotify).
        self.start_unit('thpd-test-writer.service', '/bin/sh', '-c',
                        f'echo never > {self.kernel.knob_path("enabled")}; sleep infinity; true')
        daemon.wait_log(r'enabled: found never instead of madvise, written by thpd-test-writer\.service '
                        r'\(sh, pid \d+\); restoring madvise')
        self.wait_knobs(enabled='madvise')


if __name__ == '__main__':
    thpdtest.main()
