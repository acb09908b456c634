# SPDX-License-Identifier: LGPL-2.1-or-later
"""The storm watcher end to end: thpd on a scratch procfs that a test writer turns stormy.

FakeKernel (thpdtest.storm) plays the kernel's side of the scratch procfs (thpdtest.ScratchKernel):
from a thread it rewrites vmstat, pressure/memory and the stat files of fake kernel threads every
20 ms, each counter advancing at the rate of the current Shape, and each file replaced atomically
as the kernel would present it. A plain file cannot carry a PSI trigger, so thpd falls back to
looking every IdlePollInterval=, the documented path (thpd.conf(5), [Storm]).

Kernel threads: thpd counts khugepaged and kcompactd<N> only when /proc/PID/stat carries
PF_KTHREAD in its flags field, which a process cannot set for itself. In a scratch tree the
test is the kernel, so it writes that flag for its fake threads, and writes a plain process
that calls itself "khugepaged" to show the flag is what counts.

What is asserted, per scenario, is what a user sees: the StormDetected and StormCleared signals
(followed with thpd-ctl monitor --json), the StormState and Storms properties (busctl), the
storm line of thpd-ctl status, the log lines, and with Action=mitigate the knob files of the
scratch sysfs, Explain and the Applied signals. Short Window=/StormAfter=/CoolAfter=/HoldDown=
keep each test within about 15 s.

Run as root:
    PYTHONPATH=tests THPD_BIN=build/src/daemon/thpd THPD_CTL_BIN=build/src/ctl/thpd-ctl
        /usr/bin/python3 -B tests/integration/test_storm.py -v
"""

import json
import os
import time
import unittest

import thpdtest
from thpdtest import ThpdTestCase, wait_until
from thpdtest.storm import (BUS_NAME, BUS_PATH, CALM, COMPACTION_STORM, INTERFACE, KCOMPACTD_PID, KHUGEPAGED_PID,
                            KTHREAD_FLAGS, PROCESS_FLAGS, FakeKernel, Shape, SignalMonitor)

IMPOSTOR_PID = 4242

# Fast settings: windows of 500 ms, a storm after two hot windows, cleared after two calm ones.
FAST_STORM = {
    'Window': '500ms',
    'StormAfter': '1s',
    'CoolAfter': '1s',
    'HoldDown': '1s',
    'EscalateAfter': '1h',
    'SampleInterval': '100ms',
    'IdlePollInterval': '200ms',
}


def storm_config(**settings):
    """thpd.conf text with a [Storm] section: FAST_STORM updated by settings."""
    values = dict(FAST_STORM, **settings)
    return '[Storm]\n' + ''.join(f'{key}={value}\n' for key, value in values.items())


class StormTestCase(ThpdTestCase):
    """Helpers shared by the storm scenarios."""

    threads = {}

    @classmethod
    def setUpClass(cls):
        if not os.access(os.environ.get('THPD_CTL_BIN', ''), os.X_OK):
            raise unittest.SkipTest('THPD_CTL_BIN does not name the thpd-ctl executable')
        # Under a systemd unit thpd would send its storm lines to the journal only.
        os.environ.pop('JOURNAL_STREAM', None)
        super().setUpClass()

    def setUp(self):
        super().setUp()
        self.fake = FakeKernel(self.kernel.procfs, self.threads)
        self.addCleanup(self.fake.stop)
        self.fake.start()

    def start_storm_thpd(self, **settings):
        self.config_path.write_text(storm_config(**settings))
        daemon = self.start_thpd()
        self.monitor = SignalMonitor(self.stack.env, os.environ['THPD_CTL_BIN'])
        self.addCleanup(self.monitor.close)
        return daemon

    def ctl(self, *args):
        proc = self.stack.run(os.environ['THPD_CTL_BIN'], '--user', *args, check=False)
        self.assertEqual(proc.returncode, 0, self._describe(f'thpd-ctl {" ".join(args)}: {proc.stderr}'))
        return proc.stdout

    def busctl_property(self, name):
        out = self.stack.run('busctl', '--user', '--json=short', 'get-property', BUS_NAME, BUS_PATH,
                             INTERFACE, name).stdout
        return json.loads(out)['data']

    def storms(self):
        """The Storms property as {kind: (phase, figures)}."""
        return {kind: (phase, figures) for kind, phase, figures in self.busctl_property('Storms')}

    def knob_row(self, name):
        """(applied, target, baseline, source, policy, unit) of a knob in the Knobs property."""
        for row in self.busctl_property('Knobs'):
            if row[0] == name:
                return tuple(row[1:])
        self.fail(f'no {name} in the Knobs property')

    def explain(self, knob):
        """{source: (value, wins)} of the votes on a knob."""
        rows = json.loads(self.ctl('--json', 'explain', knob))['knobs']
        self.assertEqual(len(rows), 1, rows)
        return {v['source']: (v['value'], v['wins']) for v in rows[0]['votes']}

    def wait_storm_state(self, state, timeout=thpdtest.DEFAULT_TIMEOUT):
        wait_until(lambda: self.busctl_property('StormState') == state, timeout,
                   lambda: self._describe(f'StormState {state}, have {self.busctl_property("StormState")}'))

    def assert_close(self, value, expected, tolerance, what):
        self.assertLessEqual(abs(value - expected), tolerance, f'{what}: {value}, expected {expected} ± {tolerance}')

    def assert_rate(self, figures, name, expected, tolerance, what):
        """A per-second figure: within tolerance of expected, widened by what the fake kernel's
        late rewrites can add to thpd's window (FakeKernel.staleness())."""
        stale = self.fake.staleness()
        late = expected * stale / figures['window_seconds']
        self.assert_close(figures[name], expected, tolerance + late,
                          f'{what} (window {figures["window_seconds"]:.3f} s, files up to {stale:.3f} s stale)')


class DirectCompactionTest(StormTestCase):

    def test_storm_is_reported_and_cleared(self):
        daemon = self.start_storm_thpd(Action='log')
        daemon.wait_log(r'No PSI trigger on \S+/pressure/memory .*checking for storms every 200ms')
        self.assertEqual(self.busctl_property('StormState'), 'calm')
        self.assertEqual(self.busctl_property('StormAction'), 'log')
        self.assertEqual({k: p for k, (p, _) in self.storms().items()},
                         {'direct-compaction': 'calm', 'khugepaged': 'calm', 'kcompactd': 'calm'})
        self.assertRegex(self.ctl('status'), r'\n  Storms: +calm \(action: log\)\n')
        knobs_before = self.read_knobs(thpdtest.THP_DEFAULTS)

        onset = self.fake.set_shape(COMPACTION_STORM)
        detected = self.monitor.wait_for('StormDetected')
        self.assertEqual(detected['kind'], 'direct-compaction')
        latency = detected['received'] - onset
        # StormAfter=1s: two hot 500 ms windows. Windows run while idle too, so the first hot one
        # may have begun up to 0.37 s before the onset (it is hot once 38 failed stalls a second
        # cover a quarter of it: CompactFailsPerSec=10). No upper bound: a loaded machine only
        # makes it later.
        self.assertGreaterEqual(latency, 0.6)
        figures = detected['figures']
        self.assertEqual(set(figures), {
            'window_seconds', 'compact_stalls_per_sec', 'compact_fail_ratio', 'compact_scanned_per_sec',
            'thp_fault_fallback_per_sec', 'thp_fault_fallback_ratio', 'allocstalls_per_sec',
            'psi_memory_some_percent', 'psi_memory_full_percent', 'thp_split_per_sec', 'mthp_fault_fallback_per_sec',
            'mthp_split_per_sec', 'mthp_size_kb', 'mthp_size_fault_fallback_per_sec'})
        self.assert_close(figures['window_seconds'], 0.5, 0.25, 'window')
        self.assert_rate(figures, 'compact_stalls_per_sec', 40, 12, 'stalls/s')
        self.assert_close(figures['compact_fail_ratio'], 0.95, 0.06, 'fail ratio')
        self.assert_rate(figures, 'compact_scanned_per_sec', 150000, 45000, 'scanned/s')
        self.assert_rate(figures, 'allocstalls_per_sec', 12, 5, 'allocstalls/s')
        self.assert_rate(figures, 'psi_memory_some_percent', 30, 8, 'PSI some')

        self.assertEqual(self.busctl_property('StormState'), 'storm')
        phase, latest = self.storms()['direct-compaction']
        self.assertEqual(phase, 'storm')
        self.assertGreater(latest['compact_stalls_per_sec'], 20)
        self.assertEqual(self.storms()['khugepaged'][0], 'calm')
        self.assertRegex(self.ctl('status'), r'\n  Storms: +storm — direct-compaction storm \(action: log\)\n')
        self.assertIn('compaction/khugepaged storm', self.busctl_property('Status'))
        daemon.wait_log(r'Direct compaction storm detected: \d+\.\d direct compaction stalls/s, 9\d% failed, '
                        r'.*memory pressure \d+\.\d%')
        self.assertEqual(self.read_knobs(thpdtest.THP_DEFAULTS), knobs_before, 'Action=log changed a knob')

        calm_at = self.fake.set_shape(CALM)
        cleared = self.monitor.wait_for('StormCleared')
        self.assertEqual(cleared['kind'], 'direct-compaction')
        # CoolAfter=1s: two calm windows; the first may have begun up to 0.15 s before the storm
        # ended (a window with less storm than that is calm).
        self.assertGreaterEqual(cleared['received'] - calm_at, 0.8)
        # The storm began after the onset and ended before its signal came; it lasted until the
        # calm began, less the signal's way to the test (up to a 100 ms sample either side).
        duration = cleared['duration_usec'] / 1e6
        self.assertLessEqual(duration, cleared['received'] - onset + 0.1, 'storm duration')
        self.assertGreaterEqual(duration, calm_at - detected['received'] - 0.1, 'storm duration')
        self.assertEqual(self.busctl_property('StormState'), 'calm')
        self.assertRegex(self.ctl('status'), r'\n  Storms: +calm \(action: log\)\n')
        # The storm lasted about CoolAfter=1s, which the sample nearest to it ends: maybe 999ms.
        daemon.wait_log(r'Direct compaction storm cleared after \d+m?s: ')
        self.assertEqual(len(self.monitor.named('StormDetected')), 1)
        self.assertEqual(self.monitor.named('Applied'), [], 'Action=log applied something')
        self.assertEqual(self.read_knobs(thpdtest.THP_DEFAULTS), knobs_before)
        daemon.stop()

    def test_spike_shorter_than_storm_after_is_only_suspect(self):
        # StormAfter= far longer than the test takes to see the spike and end it, however loaded
        # the machine.
        daemon = self.start_storm_thpd(StormAfter='5min')
        self.fake.set_shape(COMPACTION_STORM)
        self.wait_storm_state('suspect')
        self.fake.set_shape(CALM)
        self.wait_storm_state('calm')
        self.assertEqual(self.monitor.named('StormDetected'), [])
        self.assertEqual(self.storms()['direct-compaction'][0], 'calm')
        daemon.stop()

    def test_stalls_that_succeed_or_cause_no_pressure_are_no_storm(self):
        daemon = self.start_storm_thpd()
        shapes = {
            # Compaction that mostly succeeds is doing its job, whatever the pressure.
            'succeeding': Shape(rates={'compact_stall': 40, 'compact_fail': 8, 'compact_success': 32},
                                psi_some=0.30),
            # A few failing stalls a second that nobody waits for (fewer than CompactFailsPerSec=).
            'few, no pressure': Shape(rates={'compact_stall': 6, 'compact_fail': 5, 'compact_success': 1},
                                      psi_some=0.02),
        }
        for what, shape in shapes.items():
            with self.subTest(what):
                # From calm, so that no window mixes this shape with the last one: a window with
                # the pressure of "succeeding" and the failures of "no pressure" is rightly hot.
                self.fake.set_shape(CALM)
                wait_until(lambda: self.storms()['direct-compaction'][1].get('compact_stalls_per_sec', 1) == 0,
                           10, lambda: self._describe(f'a calm window in Storms: {self.storms()}'))
                self.wait_storm_state('calm', timeout=10)
                first_event = len(self.monitor.events)
                self.fake.set_shape(shape)
                # The watcher has seen the shape once a whole window shows its stall rate.
                rate = shape.rates['compact_stall']
                wait_until(lambda: abs(self.storms()['direct-compaction'][1].get('compact_stalls_per_sec', 0) - rate)
                           <= rate / 10 + 2.5,
                           10, lambda: self._describe(f'the stall rate in Storms: {self.storms()}'))
                # StormAfter= and two more windows of the shape; any phase change in that time is
                # in the signal record (StormState emits PropertiesChanged), not a sample.
                time.sleep(2.0)
                changes = [e for e in self.monitor.events[first_event:]
                           if e['signal'] in ('StormDetected', 'StormCleared') or
                           'StormState' in e.get('changed', ())]
                self.assertEqual(changes, [])
                self.assertEqual(self.busctl_property('StormState'), 'calm')
        daemon.stop()


    def test_many_failing_stalls_are_a_storm_without_pressure(self):
        # The storm recorded in tests/data/storm/recorded-storm.txt: nearly every stall fails,
        # yet PSI memory "some" stays at 1-2 %.
        daemon = self.start_storm_thpd()
        self.fake.set_shape(Shape(rates=COMPACTION_STORM.rates, psi_some=0.015))
        figures = self.monitor.wait_for('StormDetected', kind='direct-compaction')['figures']
        self.assertLess(figures['psi_memory_some_percent'], 10)
        self.assertGreater(figures['compact_stalls_per_sec'] * figures['compact_fail_ratio'], 10)
        daemon.stop()


class MitigationTest(StormTestCase):

    def test_mitigation_applies_holds_down_and_reverts(self):
        # HoldDown= long enough that the storm is over well before it ends, on a loaded machine too.
        hold_down = 10
        daemon = self.start_storm_thpd(Action='mitigate', HoldDown=f'{hold_down}s')
        self.assertEqual(self.busctl_property('StormAction'), 'mitigate')
        self.fake.set_shape(COMPACTION_STORM)
        self.monitor.wait_for('StormDetected')
        self.wait_knobs(defrag='defer')
        applied = self.monitor.wait_for('Applied')
        self.assertEqual(applied['changes'], [{'knob': 'defrag', 'old': 'madvise', 'new': 'defer',
                                               'reason': 'storm mitigation'}])
        daemon.wait_log(r'Storm mitigation at step 1 of 3\.')
        self.assertEqual(self.knob_row('defrag'), ('defer', 'defer', 'madvise', 'mitigation', '', ''))
        self.assertEqual(self.explain('defrag'), {'baseline': ('madvise', False), 'mitigation': ('defer', True)})
        self.assertRegex(self.ctl('status'), r'\n +defrag +defer +\(baseline madvise\) +storm mitigation\n')
        # Only step 1: nothing else moved.
        self.assert_knobs({k: v for k, v in thpdtest.THP_DEFAULTS.items() if k != 'defrag'})

        self.fake.set_shape(CALM)
        cleared = self.monitor.wait_for('StormCleared')
        if cleared['received'] - applied['received'] < hold_down - 0.5:
            self.assertEqual(self.kernel.read_knob('defrag'), 'defer', 'mitigation lifted before HoldDown=')

        self.wait_knobs(defrag='madvise', timeout=hold_down + thpdtest.DEFAULT_TIMEOUT)
        lifted = self.monitor.wait_for('Applied', changes=[
            {'knob': 'defrag', 'old': 'defer', 'new': 'madvise', 'reason': 'baseline, no policy votes'}])
        self.assertGreaterEqual(lifted['received'] - applied['received'], hold_down - 0.1, 'HoldDown= not kept')
        daemon.wait_log(r'Storm mitigation lifted: calm for the hold-down time\.')
        self.assertEqual(self.knob_row('defrag')[3], 'baseline')
        self.assert_knobs(thpdtest.THP_DEFAULTS)
        daemon.stop()

    def test_mitigation_never_loosens_a_stricter_policy(self):
        self.write_policy('strict.conf', '[Policy]\nUnits=strict.service\n[TransparentHugePages]\nDefrag=never\n')
        daemon = self.start_storm_thpd(Action='mitigate', HoldDown='1s')
        self.start_unit('strict.service')
        self.wait_knobs(defrag='never')

        self.fake.set_shape(COMPACTION_STORM)
        self.monitor.wait_for('StormDetected', kind='direct-compaction')
        daemon.wait_log(r'Storm mitigation at step 1 of 3\.')
        self.assertEqual(self.explain('defrag'), {'baseline': ('madvise', False), 'policy': ('never', True),
                                                  'mitigation': ('defer', False)})
        self.assertEqual(self.knob_row('defrag')[:4], ('never', 'never', 'madvise', 'policy'))
        self.assertEqual(self.kernel.read_knob('defrag'), 'never')

        # The mitigation was voting all along: with the policy gone it decides.
        self.stop_unit('strict.service')
        self.wait_knobs(defrag='defer')
        self.assertEqual(self.knob_row('defrag')[3], 'mitigation')
        self.assertFalse([e for e in self.monitor.named('Applied')
                          if any(c['new'] not in ('never', 'defer') for c in e['changes'])],
                         'defrag was loosened past the mitigation while the storm lasted')

        self.fake.set_shape(CALM)
        self.monitor.wait_for('StormCleared')
        self.wait_knobs(defrag='madvise')
        daemon.stop()


class KernelThreadTest(StormTestCase):

    threads = {
        KHUGEPAGED_PID: ('khugepaged', KTHREAD_FLAGS),
        KCOMPACTD_PID: ('kcompactd0', KTHREAD_FLAGS),
        IMPOSTOR_PID: ('khugepaged', PROCESS_FLAGS),
    }

    def setUp(self):
        super().setUp()
        # A baseline step 3 of the mitigation can tighten.
        self.kernel.set_knob('enabled', 'always')
        self.baseline = dict(thpdtest.THP_DEFAULTS, enabled='always')

    def test_khugepaged_storm_mitigates_from_step_2_and_escalates(self):
        self.write_policy('slow-scan.conf', '[Policy]\nUnits=batch.service\n[Khugepaged]\nScanSleepMillisecs=60000\n')
        daemon = self.start_storm_thpd(Action='mitigate', EscalateAfter='1500ms', HoldDown='1s')
        self.start_unit('batch.service')
        self.wait_knobs({'khugepaged/scan_sleep_millisecs': '60000'})

        self.fake.set_shape(Shape(cpu={KHUGEPAGED_PID: 0.60}))
        detected = self.monitor.wait_for('StormDetected')
        self.assertEqual(detected['kind'], 'khugepaged')
        self.assert_rate(detected['figures'], 'khugepaged_cpu_percent', 60, 12, 'khugepaged CPU')
        # Step 2 at once: defrag does not reach khugepaged, its own knobs do.
        self.wait_knobs({'defrag': 'defer', 'khugepaged/defrag': '0', 'khugepaged/pages_to_scan': '2048',
                         'khugepaged/alloc_sleep_millisecs': '120000', 'enabled': 'always'})
        # The policy's 60 s scan sleep is stricter than the mitigation's 30 s: it stays.
        self.assertEqual(self.kernel.read_knob('khugepaged/scan_sleep_millisecs'), '60000')
        self.assertEqual(self.explain('khugepaged/scan_sleep_millisecs')['mitigation'], ('30000', False))
        daemon.wait_log(r'khugepaged storm detected: khugepaged at \d+% of a CPU')

        # The storm outlasts EscalateAfter=: step 3.
        self.wait_knobs(enabled='madvise')
        daemon.wait_log(r'Storm mitigation at step 3 of 3\.')

        self.fake.set_shape(CALM)
        self.monitor.wait_for('StormCleared', kind='khugepaged')
        self.wait_knobs(dict(self.baseline, **{'khugepaged/scan_sleep_millisecs': '60000'}))
        self.stop_unit('batch.service')
        self.wait_knobs(self.baseline)
        self.assertEqual(self.monitor.named('StormDetected', kind='kcompactd'), [])
        daemon.stop()

    def test_kcompactd_storm_and_a_process_calling_itself_khugepaged(self):
        daemon = self.start_storm_thpd(Action='mitigate', MitigationDefrag='never')
        # The impostor burns a whole CPU; only the real kernel thread counts.
        self.fake.set_shape(Shape(rates={'compact_daemon_wake': 25},
                                  cpu={KCOMPACTD_PID: 0.60, IMPOSTOR_PID: 0.95}))
        detected = self.monitor.wait_for('StormDetected')
        self.assertEqual(detected['kind'], 'kcompactd')
        self.assert_rate(detected['figures'], 'kcompactd_cpu_percent', 60, 12, 'kcompactd CPU')
        self.assert_rate(detected['figures'], 'compact_daemon_wakes_per_sec', 25, 8, 'kcompactd wakes')
        self.wait_knobs(defrag='never')
        storms = self.storms()
        self.assertEqual(storms['kcompactd'][0], 'storm')
        self.assertEqual(storms['khugepaged'][0], 'calm')
        self.assertEqual(storms['khugepaged'][1]['khugepaged_cpu_percent'], 0)
        self.assertRegex(self.ctl('status'), r'\n  Storms: +storm — kcompactd storm \(action: mitigate\)\n')

        self.fake.set_shape(Shape(cpu={IMPOSTOR_PID: 0.95}))
        self.monitor.wait_for('StormCleared', kind='kcompactd')
        self.wait_knobs(self.baseline)
        self.assertEqual([e['kind'] for e in self.monitor.named('StormDetected')], ['kcompactd'])
        daemon.stop()


if __name__ == '__main__':
    thpdtest.main()
