# SPDX-License-Identifier: LGPL-2.1-or-later
"""Await(unit) and thpd-ctl await: a service started with ExecStartPre=-thpd-ctl await starts
only after its policy is applied.

The main test starts a real unit 100 times with systemd-run --user -p ExecStartPre=...; its main
process records the "enabled" knob it sees when it starts, and every record must be the policy's
value. Between two starts the unit is gone and thpd puts the baseline back, so every start races
thpd from the baseline. thpd reacts to a start job within a millisecond, usually before systemd
has forked the main process, so half of the starts happen while thpd is stopped with SIGSTOP:
then only ExecStartPre= keeps the service from running first, as a control without it shows.
The shipped drop-in for redis-server.service is tested the same way on a unit file, where
systemd expands its %n.

Run as root:
    PYTHONPATH=tests THPD_BIN=build/src/daemon/thpd THPD_CTL_BIN=build/src/ctl/thpd-ctl
        /usr/bin/python3 -B tests/integration/test_await.py -v
"""

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import test_api
import thpdtest
from thpdtest import wait_until

DROP_IN = test_api.SOURCE_ROOT / 'units' / 'redis-server.service.d' / 'thpd-await.conf.in'
UNIT = 'thpd-await-test.service'
STARTS = 100
# Long enough for systemd to start a unit's main process while thpd cannot react.
FREEZE_SECONDS = 0.1

AWAIT_POLICY = f"""\
[Policy]
Units={UNIT} redis-server.service
[TransparentHugePages]
Enabled=never
"""


def knob_word(text):
    """The current value in what a knob file holds: "never" or "always [madvise] never"."""
    match = re.search(r'\[([^\]]+)\]', text)
    return match.group(1) if match else text.strip()


class AwaitTest(test_api.ApiTestCase):

    def setUp(self):
        super().setUp()
        self.write_policy('await.conf', AWAIT_POLICY)
        self.thpd = self.start_thpd()
        self.record = self.tmp / 'seen'
        self.knob = self.kernel.knob_path('enabled')

    def await_process(self, *args):
        proc = subprocess.Popen(test_api.ctl_argv('await', *args), env=self.stack.env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        self.addCleanup(proc.communicate)
        return proc

    def recorder(self):
        """The main process: appends the knob as it sees it, then exits (awk ends the line, which
        a knob thpd wrote does not)."""
        return ['/bin/sh', '-c', f'awk 1 {self.knob} >> {self.record}']

    def test_no_policy_returns_at_once(self):
        # An await that waited for the unit would fail at the end of its timeout instead.
        self.assertEqual(self.ctl_json('await', 'unrelated.service'),
                         {'unit': 'unrelated.service', 'policy': None})
        self.assertEqual(self.ctl('await', 'unrelated.service').stdout, '')

    def test_running_unit_returns_at_once(self):
        self.start_unit(UNIT)
        self.wait_knobs(enabled='never')
        self.assertEqual(self.ctl_json('await', UNIT), {'unit': UNIT, 'policy': 'await.conf'})

    def test_waits_for_the_unit_then_returns(self):
        proc = self.await_process('--json', '--timeout=60s', UNIT)
        self.thpd.wait_log(rf'Await\({UNIT}\) from :[\d.]+: waiting')
        self.assertIsNone(proc.poll(), 'await returned before the unit started')
        self.assert_knobs(enabled='madvise')

        self.start_unit(UNIT)
        out, err = proc.communicate(timeout=10)
        self.assertEqual(proc.returncode, 0, err)
        self.assertEqual(json.loads(out), {'unit': UNIT, 'policy': 'await.conf'})
        self.assert_knobs(enabled='never')

    def test_timeout(self):
        started = time.monotonic()
        stderr = self.ctl_fails(1, 'await', '--timeout=1s', UNIT)
        elapsed = time.monotonic() - started
        self.assertIn(f'thpd has not applied the policy for {UNIT} within 1s', stderr)
        self.assertGreaterEqual(elapsed, 1)
        self.assertIn('does not take --timeout', self.ctl_fails(2, 'status', '--timeout=1s'))

    def test_caller_that_leaves_is_forgotten(self):
        proc = self.await_process('--timeout=60s', UNIT)
        self.thpd.wait_log(rf'Await\({UNIT}\) from :[\d.]+: waiting')
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        self.thpd.wait_log(r'Await caller :[\d.]+ left the bus')
        # The daemon is fine and later awaiters are answered.
        later = self.await_process('--timeout=20s', UNIT)
        self.start_unit(UNIT)
        self.assertEqual(later.wait(10), 0)
        self.assertTrue(self.thpd.running)

    def test_awaiters_are_answered_when_the_daemon_stops(self):
        proc = self.await_process('--timeout=60s', UNIT)
        self.thpd.wait_log(rf'Await\({UNIT}\) from')
        self.thpd.stop()
        _, err = proc.communicate(timeout=10)
        self.assertEqual(proc.returncode, 1)
        self.assertIn('thpd is stopping', err)

    def start_while_thpd_is_frozen(self, *argv, until_recorded=False):
        """Runs argv (a unit start that returns once the main process has exited) while thpd is
        stopped with SIGSTOP for FREEZE_SECONDS, or until the main process has recorded what it
        saw: thpd learns of the start only afterwards, so only something that waits for it keeps
        the main process from running first."""
        before = len(self.seen()) if self.record.exists() else 0
        os.kill(self.thpd.pid, signal.SIGSTOP)
        try:
            proc = subprocess.Popen(argv, env=self.stack.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if until_recorded:
                wait_until(lambda: self.record.exists() and len(self.seen()) > before, message='the main process to run')
            else:
                time.sleep(FREEZE_SECONDS)
        finally:
            os.kill(self.thpd.pid, signal.SIGCONT)
        _, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 0, err)

    def seen(self):
        return [knob_word(line) for line in self.record.read_text().splitlines()]

    def test_without_await_the_service_wins_the_race(self):
        """The control: the same starts without ExecStartPre= show the race the test is about."""
        # Frozen until the main process has run: under load a fixed window may end before
        # the manager even starts it.
        self.start_while_thpd_is_frozen('systemd-run', '--user', '--quiet', '--collect', f'--unit={UNIT}',
                                        '-p', 'Type=oneshot', '--', *self.recorder(), until_recorded=True)
        self.assertEqual(self.seen(), ['madvise'], 'a frozen thpd should leave the main process the baseline')

    def test_exec_start_pre_holds_the_service_back(self):
        """The start-order guarantee, over STARTS starts of a real transient unit.

        systemd-run does not expand specifiers (%n) in the properties of a transient unit, so the
        unit name is spelled out here; the unit-file test below covers %n."""
        pre = f'ExecStartPre=-{test_api.ctl_bin()} --user await --timeout=20s {UNIT}'
        for i in range(STARTS):
            # Type=oneshot: systemd-run returns once the main process has exited. Every other
            # start has thpd frozen while it begins; the others race a thpd that runs.
            argv = ['systemd-run', '--user', '--quiet', '--collect', f'--unit={UNIT}', '-p', 'Type=oneshot',
                    '-p', pre, '--', *self.recorder()]
            if i % 2 == 0:
                self.start_while_thpd_is_frozen(*argv)
            else:
                self.stack.run(*argv)
        seen = self.seen()
        self.assertEqual(len(seen), STARTS)
        self.assertEqual([(i, v) for i, v in enumerate(seen) if v != 'never'], [],
                         'starts whose main process saw another value than the policy\'s')
        # Every start began from the baseline: thpd put it back after each stop.
        self.wait_knobs(enabled='madvise')

    def test_shipped_drop_in(self):
        """units/redis-server.service.d/thpd-await.conf on a unit file, where %n is expanded.

        The drop-in talks to the system bus; the copy used here adds --user and nothing else."""
        text = DROP_IN.read_text()
        lines = [line for line in text.splitlines() if line.startswith('ExecStartPre=')]
        self.assertEqual(lines, ['ExecStartPre=-@bindir@/thpd-ctl await %n'])
        self.assertIn('[Service]', text)

        unit_dir = self.stack.dir / 'config' / 'systemd' / 'user'
        unit_file = unit_dir / 'redis-server.service'
        drop_in_dir = unit_dir / 'redis-server.service.d'
        unit_file.write_text(f"[Service]\nType=oneshot\nExecStart=/bin/sh -c 'awk 1 {self.knob} >> {self.record}'\n")
        drop_in_dir.mkdir()
        (drop_in_dir / 'thpd-await.conf').write_text(
            text.replace('@bindir@/thpd-ctl', f'{test_api.ctl_bin()} --user'))
        self.addCleanup(self.stack.run, 'systemctl', '--user', 'daemon-reload')
        self.addCleanup(lambda: unit_file.unlink() or (drop_in_dir / 'thpd-await.conf').unlink() or drop_in_dir.rmdir())
        self.stack.run('systemctl', '--user', 'daemon-reload')

        for _ in range(10):
            self.start_while_thpd_is_frozen('systemctl', '--user', 'start', 'redis-server.service')
        self.assertEqual(self.seen(), ['never'] * 10)
        self.assertEqual(len(re.findall(r'Await\(redis-server\.service\) from', self.thpd.log())), 10,
                         'the drop-in calls Await with %n expanded, once per start')


if __name__ == '__main__':
    thpdtest.main()
