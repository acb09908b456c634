#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""What thpd does between events, on a real systemd --user manager: idle after units are
garbage-collected, across daemon-reexec and daemon-reload, with its output gone (SIGPIPE),
beside a second copy of itself, when the bus goes away; and what counts as a running unit for
services that stay "active (exited)" (RemainAfterExit=yes).

Run as root: PYTHONPATH=tests THPD_BIN=build/src/daemon/thpd
    /usr/bin/python3 -B tests/integration/test_steady_state.py -v
"""

import json
import os
import signal
import subprocess

import thpdtest
from thpdtest import STOP_TIMEOUT, ThpdTestCase, assert_settles, wait_until

REDIS_POLICY = """\
[Policy]
Units=redis-server.service
[TransparentHugePages]
Enabled=never
Defrag=never
"""

LOOSE_POLICY = """\
[Policy]
Units=jvm-app.service batch-*.service
[TransparentHugePages]
Enabled=madvise
Defrag=defer
"""

UMBRELLA_POLICY = """\
[Policy]
Units=umbrella.service
[TransparentHugePages]
Enabled=never
Defrag=never
"""

BASELINE = {'enabled': 'madvise', 'defrag': 'madvise'}
REDIS = {'enabled': 'never', 'defrag': 'never'}
LOOSE = {'enabled': 'madvise', 'defrag': 'defer'}

# The idle check of these scenarios: longer than the one every scenario ends with.
IDLE_WINDOW = 10.0
IDLE_DEADLINE = 60.0


class SteadyStateTest(ThpdTestCase):

    def mtimes(self, knobs):
        return {knob: self.kernel.knob_path(knob).stat().st_mtime_ns for knob in knobs}

    def property(self, name):
        out = self.stack.run('busctl', '--user', '--json=short', 'get-property', 'org.thpd1', '/org/thpd1',
                             'org.thpd1.Manager', name).stdout
        return json.loads(out)['data']

    def assert_idle(self, daemon):
        wakeups = assert_settles(daemon.pid, daemon.bus_address, window=IDLE_WINDOW, deadline=IDLE_DEADLINE)
        print(f'thpd idle: {wakeups} wakeup(s) in {IDLE_WINDOW:g} s')

    def test_collected_units_leave_thpd_idle(self):
        # thpd 0.1 read ActiveState from the unit object on UnitNew: the manager loaded the
        # garbage-collected unit again, collected it again, and so on for ever.
        self.write_policy('redis.conf', REDIS_POLICY)
        thpd = self.start_thpd()
        for _ in range(3):
            self.start_unit('redis-server.service')
            self.wait_knobs(REDIS)
            self.stop_unit('redis-server.service')
            self.wait_knobs(BASELINE)
        self.assert_idle(thpd)
        thpd.stop()

    def test_churn_reexec_and_reload_then_idle(self):
        self.write_policy('redis.conf', REDIS_POLICY)
        self.write_policy('jvm.conf', LOOSE_POLICY)
        thpd = self.start_thpd()
        for i in range(10):
            self.start_unit(f'batch-{i % 3}.service')
            self.start_unit('redis-server.service')
            self.wait_knobs(REDIS)
            self.stop_unit('redis-server.service')
            self.wait_knobs(LOOSE)
            self.stop_unit(f'batch-{i % 3}.service')
            self.wait_knobs(BASELINE)
            if i == 4:
                self.stack.run('systemctl', '--user', 'daemon-reexec')
                thpd.wait_log(r'The systemd manager is back on the bus')
            if i == 7:
                self.stack.run('systemctl', '--user', 'daemon-reload')
        self.assert_idle(thpd)
        thpd.stop()

    def assert_follows_redis(self):
        self.stop_unit('redis-server.service')
        self.wait_knobs(BASELINE)
        self.start_unit('redis-server.service')
        self.wait_knobs(REDIS)

    def test_daemon_reexec_keeps_the_active_set_and_tracking(self):
        # The manager keeps its subscribers across re-exec; thpd 0.1 took "already subscribed"
        # for "no manager", dropped Redis's policy and never followed a unit again.
        self.write_policy('redis.conf', REDIS_POLICY)
        self.add_barrier_policy()
        thpd = self.start_thpd()
        self.start_unit('redis-server.service')
        self.wait_knobs(REDIS)
        written = self.mtimes(REDIS)
        self.stack.run('systemctl', '--user', 'daemon-reexec')
        thpd.wait_log(r'The systemd manager is back on the bus')
        # A unit's start and stop followed after the manager changed: thpd handles events again.
        self.barrier()
        self.assertEqual(self.mtimes(REDIS), written, 'a knob was written across daemon-reexec')
        self.assertEqual(self.property('ActivePolicies'), [['redis.conf', ['redis-server.service']]])
        self.assertNotIn('No systemd manager answers', thpd.log())
        self.assert_follows_redis()
        self.assert_idle(thpd)
        thpd.stop()

    def test_daemon_reload_keeps_the_active_set_and_tracking(self):
        self.write_policy('redis.conf', REDIS_POLICY)
        self.add_barrier_policy()
        thpd = self.start_thpd()
        self.start_unit('redis-server.service')
        self.wait_knobs(REDIS)
        written = self.mtimes(REDIS)
        self.stack.run('systemctl', '--user', 'daemon-reload')
        thpd.wait_log(r'The systemd manager finished reloading')
        # A unit's start and stop followed after the manager changed: thpd handles events again.
        self.barrier()
        self.assertEqual(self.mtimes(REDIS), written, 'a knob was written across daemon-reload')
        self.assertEqual(self.property('ActivePolicies'), [['redis.conf', ['redis-server.service']]])
        self.assert_follows_redis()
        self.assert_idle(thpd)
        thpd.stop()


    def test_sigpipe_does_not_cost_the_restore(self):
        # tools/run.sh | tee log, then Ctrl-C: thpd 0.1 died of SIGPIPE on its first
        # "restoring" line and left defrag at never.
        self.write_policy('redis.conf', REDIS_POLICY)
        read_end, write_end = os.pipe()
        env = dict(self.stack.env)
        process = subprocess.Popen(self.thpd_argv(), env=env, stdin=subprocess.DEVNULL,
                                   stdout=write_end, stderr=write_end)
        os.close(write_end)
        self.addCleanup(lambda: process.poll() is None and (process.kill(), process.wait()))
        self.start_unit('redis-server.service')
        self.wait_knobs(REDIS)
        os.close(read_end)
        process.send_signal(signal.SIGTERM)
        status = process.wait(STOP_TIMEOUT)
        self.assertEqual(status, 0, 'thpd did not exit 0 after its output pipe closed')
        self.assert_knobs(BASELINE)
        self.assertFalse((self.runtime_dir / 'baseline').exists(), 'restored, so the record goes')

    def test_second_instance_exits_before_writing(self):
        self.write_policy('redis.conf', REDIS_POLICY)
        first = self.start_thpd()
        self.start_unit('redis-server.service')
        self.wait_knobs(REDIS)
        record = self.runtime_dir / 'baseline'
        before = (record.read_text(), record.stat().st_mtime_ns, self.mtimes(REDIS))

        second = self.start_thpd(wait_ready=False)
        status = second.process.wait(STOP_TIMEOUT)
        self.assertNotEqual(status, 0)
        self.assertRegex(second.log(), rf'Another thpd \(PID {first.pid}\) owns org\.thpd1 on this bus; '
                                       r'exiting without touching any knob\.')
        self.assertEqual((record.read_text(), record.stat().st_mtime_ns, self.mtimes(REDIS)), before,
                         'the second thpd touched the baseline record or a knob')
        self.assert_follows_redis()
        first.stop()
        self.assert_knobs(BASELINE)

    def test_reload_that_drops_an_active_policy(self):
        self.write_policy('redis.conf', REDIS_POLICY)
        thpd = self.start_thpd()
        self.start_unit('redis-server.service')
        self.wait_knobs(REDIS)
        wait_until(lambda: '1 active policy' in (thpd.status or ''), message=lambda: thpd.status)
        (self.policy_dir / 'redis.conf').unlink()
        thpd.signal(signal.SIGHUP)
        self.wait_knobs(BASELINE)
        wait_until(lambda: '0 active policies' in (thpd.status or ''),
                   message=lambda: f'STATUS= to count 0 active policies, have {thpd.status!r}')
        self.assertEqual(self.property('ActivePolicies'), [])
        self.assert_idle(thpd)
        thpd.stop()


class UmbrellaUnitTest(ThpdTestCase):
    """A unit counts while it has a start job or runs something: a oneshot with
    RemainAfterExit=yes that only started others (Debian's postgresql.service) holds nothing."""

    def start_oneshot(self, command):
        self.start_unit('umbrella.service', 'sh', '-c', command,
                        properties=('Type=oneshot', 'RemainAfterExit=yes'))
        self.assertEqual(self.stack.run('systemctl', '--user', 'show', '--property=SubState', '--value',
                                        'umbrella.service').stdout.strip(), 'exited')

    def test_exited_oneshot_with_nothing_left_holds_no_policy(self):
        self.write_policy('umbrella.conf', UMBRELLA_POLICY)
        thpd = self.start_thpd()
        self.start_oneshot('true')
        self.wait_knobs(BASELINE)
        wait_until(lambda: '0 active policies' in (thpd.status or ''), message=lambda: thpd.status)
        self.stack.run('systemctl', '--user', 'restart', 'umbrella.service')
        self.wait_knobs(BASELINE)
        thpd.stop()

    def test_exited_oneshot_found_at_start_holds_no_policy_and_needs_no_restart(self):
        self.write_policy('umbrella.conf', UMBRELLA_POLICY)
        self.start_oneshot('true')
        thpd = self.start_thpd()
        self.assert_knobs(BASELINE)
        self.assertEqual(thpd.log().count('enabled: '), 0, 'thpd moved enabled for an exited unit')
        busctl = self.stack.run('busctl', '--user', '--json=short', 'get-property', 'org.thpd1', '/org/thpd1',
                                'org.thpd1.Manager', 'NeedsRestart').stdout
        self.assertEqual(json.loads(busctl)['data'], [])
        thpd.stop()

    def test_exited_oneshot_that_left_processes_holds_its_policy(self):
        self.write_policy('umbrella.conf', UMBRELLA_POLICY)
        thpd = self.start_thpd()
        # The forked sleep stays in the unit's control group after the main process exits.
        self.start_oneshot('sleep infinity & exit 0')
        self.wait_knobs(REDIS)
        thpd.wait_log(r'umbrella\.service: exited, processes left in its control group')
        self.assertIn('1 active policy', thpd.status)
        self.stop_unit('umbrella.service')
        self.wait_knobs(BASELINE)
        thpd.stop()


class BusLossTest(ThpdTestCase):
    """Its own stack: the scenario stops the bus."""

    def test_bus_going_away(self):
        # Without the bus thpd can neither follow units nor answer: it exits non-zero with the
        # knobs as they are (Redis still runs) and the baseline record kept for the next start.
        self.write_policy('redis.conf', REDIS_POLICY)
        thpd = self.start_thpd()
        self.start_unit('redis-server.service')
        self.wait_knobs(REDIS)
        record = (self.runtime_dir / 'baseline').read_text()
        bus_pid = int(self.stack.run('systemctl', '--user', 'show', '--property=MainPID', '--value',
                                     'dbus.service').stdout)
        self.assertGreater(bus_pid, 0)
        os.kill(bus_pid, signal.SIGKILL)
        status = thpd.process.wait(STOP_TIMEOUT)
        self.assertNotEqual(status, 0)
        self.assertRegex(thpd.log(), r'Lost the connection to the session bus; exiting with the knobs as they are')
        self.assert_knobs(REDIS)
        self.assertEqual((self.runtime_dir / 'baseline').read_text(), record)


if __name__ == '__main__':
    thpdtest.main()
