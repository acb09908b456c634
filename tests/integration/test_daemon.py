# SPDX-License-Identifier: LGPL-2.1-or-later
"""thpd on a real systemd --user manager: policies follow units, baseline, pools, signals.

Every scenario runs a fresh daemon on a fresh scratch sysfs (kernel defaults: enabled and defrag
"madvise") and asserts on the files it writes. HarnessTest checks the harness itself and needs
no daemon. Run as root: PYTHONPATH=tests THPD_BIN=build/src/daemon/thpd
    /usr/bin/python3 -B tests/integration/test_daemon.py -v
"""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest
from pathlib import Path

import thpdtest
from thpdtest import Stack, ScratchKernel, Thpd, ThpdTestCase

REDIS_POLICY = """\
[Policy]
Description=Redis forks to persist; THP off for predictable latency
Units=redis-server.service
[TransparentHugePages]
Enabled=never
Defrag=never
"""

# Looser than Redis on both knobs, and different from the baseline on defrag, so that its own
# values can be told apart from a restored baseline.
LOOSE_POLICY = """\
[Policy]
Units=jvm-app.service
[TransparentHugePages]
Enabled=madvise
Defrag=defer
"""

POOL_POLICY = """\
[Policy]
Units=postgresql.service
[HugeTLB]
Pages=16
"""

TEMPLATE_POLICY = """\
[Policy]
Units=redis-server@*.service
[TransparentHugePages]
Enabled=never
Defrag=never
"""

# Line 5 is bad; line 4 alone would be a valid vote, so a half-read file would show.
BROKEN_POLICY = """\
[Policy]
Units=broken.service
[TransparentHugePages]
Defrag=never
Enabled=sometimes
"""

BASELINE = {'enabled': 'madvise', 'defrag': 'madvise'}
REDIS = {'enabled': 'never', 'defrag': 'never'}
LOOSE = {'enabled': 'madvise', 'defrag': 'defer'}

POOL_GRACE_SECONDS = 2.0
# sd-event timers may fire late (accuracy), never early; this only absorbs clock reading order.
TIMER_SLACK_SECONDS = 0.05


class HarnessTest(unittest.TestCase):
    """The harness on its own, so a daemon failure is not mistaken for a harness one."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        reason = thpdtest.stack_unavailable_reason()
        if reason:
            raise unittest.SkipTest(reason)

    @staticmethod
    def is_dead(pid):
        """Gone or a zombie (an orphan waits for this machine's init to reap it)."""
        try:
            stat = Path(f'/proc/{pid}/stat').read_text()
        except FileNotFoundError:
            return True
        return stat.rpartition(')')[2].split()[0] in ('Z', 'X')

    def main_pid(self, stack, unit):
        return int(stack.run('systemctl', '--user', 'show', '--property=MainPID', '--value', unit).stdout)

    def isolated_stack(self):
        """A started Stack in a cgroup of its own, which these tests are about; where the
        cgroup tree cannot be written (a container) the stack runs without one, and the test
        is skipped."""
        stack = Stack()
        self.addCleanup(stack.close)
        stack.start()
        if stack.cgroup_name is None:
            self.skipTest('the stack has no cgroup of its own: the cgroup tree is not writable here')
        return stack

    def test_stack_runs_units_in_its_own_cgroup(self):
        stack = self.isolated_stack()
        manager_pid = stack.manager.pid
        stack.start_unit('redis-server.service', 'sleep', '300')
        self.assertEqual(stack.unit_state('redis-server.service'), 'active')
        pid = self.main_pid(stack, 'redis-server.service')
        with open(f'/proc/{pid}/cgroup') as f:
            self.assertIn(f'/{stack.cgroup_name}/app.slice/redis-server.service', f.read())
        stack.stop_unit('redis-server.service')
        self.assertEqual(stack.unit_state('redis-server.service'), 'inactive')

        stack.start_unit('left-running.service')
        pid = self.main_pid(stack, 'left-running.service')
        directory, name = stack.dir, stack.cgroup_name
        stack.close()
        self.assertTrue(self.is_dead(manager_pid))
        self.assertTrue(self.is_dead(pid))
        self.assertFalse(directory.exists())
        self.assertFalse(any((h / name).exists() for h in thpdtest.cgroup_hierarchies()))

    def test_make_cgroup_is_in_no_unit_and_goes_with_the_stack(self):
        stack = self.isolated_stack()
        process = subprocess.Popen(['sleep', 'infinity'])
        self.addCleanup(process.wait)
        for procs in stack.make_cgroup('outside-units'):
            procs.write_text(f'{process.pid}\n')
        with open(f'/proc/{process.pid}/cgroup') as f:
            self.assertIn(f':/{stack.cgroup_name}/outside-units\n', f.read())
        self.assertIsNone(thpdtest.process_unit(process.pid))
        stack.close()
        self.assertEqual(process.wait(thpdtest.STOP_TIMEOUT), -signal.SIGKILL)

    def test_close_after_a_manager_crash_kills_its_units(self):
        stack = self.isolated_stack()
        stack.start_unit('orphan.service')
        pid = self.main_pid(stack, 'orphan.service')
        stack.manager.kill()
        stack.manager.wait()
        self.assertFalse(self.is_dead(pid))
        stack.close()
        self.assertTrue(self.is_dead(pid))

    def test_two_stacks_do_not_share_units(self):
        first, second = self.isolated_stack(), self.isolated_stack()
        first.start_unit('redis-server.service')
        second.start_unit('redis-server.service')
        first.stop_unit('redis-server.service')
        self.assertEqual(second.unit_state('redis-server.service'), 'active')
        self.assertEqual(first.unit_state('redis-server.service'), 'inactive')

    def test_scratch_kernel(self):
        kernel = ScratchKernel(self.make_tmp())
        self.assertEqual(kernel.knob_path('enabled').read_text(), 'always [madvise] never\n')
        self.assertEqual(kernel.read_knob('enabled'), 'madvise')
        self.assertEqual(kernel.read_knob('defrag'), 'madvise')
        self.assertEqual(kernel.read_knob('hugepages-2048kB/enabled'), 'inherit')
        self.assertEqual(kernel.read_knob('khugepaged/max_ptes_none'), '511')
        kernel.knob_path('enabled').write_text('never')
        self.assertEqual(kernel.read_knob('enabled'), 'never')
        kernel.set_knob('defrag', 'defer+madvise')
        self.assertEqual(kernel.read_knob('defrag'), 'defer+madvise')
        self.assertEqual(kernel.read_pool(), 0)
        self.assertTrue((kernel.procfs / 'sys/vm/compact_memory').exists())

    def make_tmp(self):
        tmp = tempfile.mkdtemp(prefix='thpd-harness-')
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        return Path(tmp)

    def test_notify_socket(self):
        tmp = self.make_tmp()
        daemon = Thpd(['systemd-notify', '--ready', '--status=applied 2 knobs'], {'PATH': thpdtest.MANAGER_PATH},
                      tmp / 'log', tmp / 'notify')
        self.addCleanup(daemon.close)
        daemon.wait_ready()
        self.assertEqual(daemon.status, 'applied 2 knobs')

    def test_exit_before_ready_is_reported(self):
        tmp = self.make_tmp()
        daemon = Thpd(['sh', '-c', 'echo no policy here; exit 3'], {'PATH': thpdtest.MANAGER_PATH},
                      tmp / 'log', tmp / 'notify')
        self.addCleanup(daemon.close)
        with self.assertRaisesRegex(AssertionError, r'status 3 before READY=1:\nno policy here'):
            daemon.wait_ready()


class DaemonTest(ThpdTestCase):
    """The scenarios of issue "The daemon", item 7."""

    def assert_change_logged(self, daemon, *words):
        """One log line per change, naming what changed, the policy file and the unit."""
        thpdtest.wait_until(
            lambda: any(all(w in line for w in words) for line in daemon.log().splitlines()),
            message=lambda: self._describe(f'a log line with all of {words}'))

    def test_01_policy_applies_when_its_unit_starts(self):
        self.write_policy('redis.conf', REDIS_POLICY)
        thpd = self.start_thpd()
        self.assert_knobs(BASELINE)
        self.start_unit('redis-server.service', 'sleep', '300')
        self.wait_knobs(REDIS)
        self.assert_change_logged(thpd, 'enabled', 'never', 'redis.conf', 'redis-server.service')
        self.assert_change_logged(thpd, 'defrag', 'never', 'redis.conf', 'redis-server.service')
        thpd.stop()

    def test_02_looser_policy_changes_nothing_while_stricter_runs(self):
        self.write_policy('redis.conf', REDIS_POLICY)
        self.write_policy('jvm.conf', LOOSE_POLICY)
        self.add_barrier_policy()
        thpd = self.start_thpd()
        self.start_unit('redis-server.service')
        self.wait_knobs(REDIS)
        self.start_unit('jvm-app.service')
        self.barrier()
        self.assert_knobs(REDIS)
        thpd.stop()

    def test_03_stopping_the_stricter_unit_leaves_the_other_policy(self):
        self.write_policy('redis.conf', REDIS_POLICY)
        self.write_policy('jvm.conf', LOOSE_POLICY)
        thpd = self.start_thpd()
        self.start_unit('redis-server.service')
        self.start_unit('jvm-app.service')
        self.wait_knobs(REDIS)
        self.stop_unit('redis-server.service')
        self.wait_knobs(LOOSE)
        self.stop_unit('jvm-app.service')
        self.wait_knobs(BASELINE)
        thpd.stop()

    def test_03_stopping_the_looser_unit_keeps_the_stricter_values(self):
        self.write_policy('redis.conf', REDIS_POLICY)
        self.write_policy('jvm.conf', LOOSE_POLICY)
        self.add_barrier_policy()
        thpd = self.start_thpd()
        self.start_unit('redis-server.service')
        self.start_unit('jvm-app.service')
        self.wait_knobs(REDIS)
        self.stop_unit('jvm-app.service')
        self.barrier()
        self.assert_knobs(REDIS)
        self.stop_unit('redis-server.service')
        self.wait_knobs(BASELINE)
        thpd.stop()

    def test_04_unit_running_before_the_daemon_is_applied_by_ready(self):
        self.write_policy('redis.conf', REDIS_POLICY)
        self.start_unit('redis-server.service')
        thpd = self.start_thpd()
        self.assert_knobs(REDIS)
        self.stop_unit('redis-server.service')
        self.wait_knobs(BASELINE)
        thpd.stop()

    def test_05_restart_after_sigkill_restores_the_original_baseline(self):
        self.write_policy('redis.conf', REDIS_POLICY)
        first = self.start_thpd()
        self.start_unit('redis-server.service')
        self.wait_knobs(REDIS)
        first.kill()
        self.assert_knobs(REDIS)
        second = self.start_thpd()
        self.assert_knobs(REDIS)
        self.stop_unit('redis-server.service')
        self.wait_knobs(BASELINE)
        second.stop()

    def test_05_restarted_daemon_writes_nothing_before_it_has_listed_the_units(self):
        # A restarted thpd (crash, kill -9, upgrade) finds its predecessor's values in place; a
        # write before it knows Redis runs would put Redis under the baseline for a moment. Any
        # write shows in the file's mtime, however short-lived the value.
        self.write_policy('redis.conf', REDIS_POLICY)
        first = self.start_thpd()
        self.start_unit('redis-server.service')
        self.wait_knobs(REDIS)
        first.kill()
        written = {knob: self.kernel.knob_path(knob).stat().st_mtime_ns for knob in REDIS}
        second = self.start_thpd()
        self.assert_knobs(REDIS)
        self.assertEqual({knob: self.kernel.knob_path(knob).stat().st_mtime_ns for knob in REDIS}, written,
                         'the restarted thpd wrote a knob Redis needs')
        self.stop_unit('redis-server.service')
        self.wait_knobs(BASELINE)
        second.stop()

    def needs_restart(self):
        out = self.stack.run('busctl', '--user', '--json=short', 'get-property', 'org.thpd1', '/org/thpd1',
                             'org.thpd1.Manager', 'NeedsRestart').stdout
        return json.loads(out)['data']

    def test_05_restarted_daemon_knows_which_units_started_under_their_policy(self):
        # Without the unit record, the new instance took Redis, which started under never, for
        # a service started before its policy.
        self.write_policy('redis.conf', REDIS_POLICY)
        self.write_policy('jvm.conf', LOOSE_POLICY)
        self.start_unit('jvm-app.service')
        first = self.start_thpd()
        self.start_unit('redis-server.service')
        self.wait_knobs(REDIS)
        self.assertEqual(self.needs_restart(), [['jvm-app.service', 'jvm.conf']])
        first.kill()
        second = self.start_thpd()
        self.assertEqual(self.needs_restart(), [['jvm-app.service', 'jvm.conf']])
        # A unit that restarts after the restart of thpd starts under its policy.
        self.stack.run('systemctl', '--user', 'restart', 'jvm-app.service')
        thpdtest.wait_until(lambda: self.needs_restart() == [],
                            message=lambda: self._describe(f'NeedsRestart to empty, have {self.needs_restart()}'))
        second.stop()

    def test_05_restarting_a_unit_keeps_its_policy_throughout(self):
        # The restart job holds the policy through its stop half: no write at all, however
        # short-lived (a file's mtime shows any).
        self.write_policy('redis.conf', REDIS_POLICY)
        thpd = self.start_thpd()
        self.start_unit('redis-server.service')
        self.wait_knobs(REDIS)
        written = {knob: self.kernel.knob_path(knob).stat().st_mtime_ns for knob in REDIS}
        # Three: the manager's default start limit is five starts in 10 s.
        for _ in range(3):
            self.stack.run('systemctl', '--user', 'restart', 'redis-server.service')
        self.assert_knobs(REDIS)
        self.assertEqual({knob: self.kernel.knob_path(knob).stat().st_mtime_ns for knob in REDIS}, written,
                         'a knob was written while Redis restarted')
        self.stop_unit('redis-server.service')
        self.wait_knobs(BASELINE)
        thpd.stop()

    def test_06_pool_grows_on_start_and_shrinks_after_the_grace_period(self):
        self.write_config(f'PoolGracePeriod={POOL_GRACE_SECONDS:g}s\n')
        self.write_policy('postgresql.conf', POOL_POLICY)
        self.add_barrier_policy()
        thpd = self.start_thpd()
        self.assertEqual(self.kernel.read_pool(), 0)
        self.start_unit('postgresql.service')
        self.wait_pool(16)
        self.assert_change_logged(thpd, 'pool', '16', 'postgresql.conf', 'postgresql.service')
        stopped = time.monotonic()
        self.stop_unit('postgresql.service')
        self.barrier()
        self.assertEqual(self.kernel.read_pool(), 16, self._describe('pool released before its grace period'))
        self.wait_pool(0, timeout=POOL_GRACE_SECONDS + thpdtest.DEFAULT_TIMEOUT)
        self.assertGreaterEqual(time.monotonic() - stopped, POOL_GRACE_SECONDS - TIMER_SLACK_SECONDS)
        thpd.stop()

    def test_07_template_instance_matches_a_glob(self):
        self.write_policy('redis.conf', TEMPLATE_POLICY)
        thpd = self.start_thpd()
        self.start_unit('redis-server@6379.service')
        self.wait_knobs(REDIS)
        self.assert_change_logged(thpd, 'enabled', 'never', 'redis.conf', 'redis-server@6379.service')
        self.stop_unit('redis-server@6379.service')
        self.wait_knobs(BASELINE)
        thpd.stop()

    def test_08_sigterm_restores_the_baseline(self):
        self.write_policy('redis.conf', REDIS_POLICY)
        thpd = self.start_thpd()
        self.start_unit('redis-server.service')
        self.wait_knobs(REDIS)
        thpd.stop(expect_status=0)
        self.assert_knobs(BASELINE)

    def test_08_sigterm_with_no_restore_leaves_the_values(self):
        self.write_policy('redis.conf', REDIS_POLICY)
        thpd = self.start_thpd('--no-restore')
        self.start_unit('redis-server.service')
        self.wait_knobs(REDIS)
        thpd.stop(expect_status=0)
        self.assert_knobs(REDIS)

    def test_09_broken_policy_does_not_stop_the_good_one(self):
        self.write_policy('00-broken.conf', BROKEN_POLICY)
        self.write_policy('redis.conf', REDIS_POLICY)
        self.add_barrier_policy()
        thpd = self.start_thpd()
        thpd.wait_log(r'00-broken\.conf:5:')
        self.start_unit('broken.service')
        self.barrier()
        self.assert_knobs(BASELINE)
        self.start_unit('redis-server.service')
        self.wait_knobs(REDIS)
        thpd.stop()

    def test_10_sighup_reads_added_and_removed_policies(self):
        thpd = self.start_thpd()
        self.start_unit('redis-server.service')
        path = self.write_policy('redis.conf', REDIS_POLICY)
        thpd.signal(signal.SIGHUP)
        self.wait_knobs(REDIS)
        path.unlink()
        thpd.signal(signal.SIGHUP)
        self.wait_knobs(BASELINE)
        self.assertTrue(thpd.running)
        thpd.stop()

    def test_11_reload_with_a_new_storm_action_while_a_policy_is_applied(self):
        # A reload replaces every Policy object while the target still names the old ones, and a
        # new storm action makes the D-Bus layer render the properties at once (an ASan build
        # catches a read of the old ones).
        self.write_policy('redis.conf', REDIS_POLICY)
        thpd = self.start_thpd()
        self.start_unit('redis-server.service')
        self.wait_knobs(REDIS)
        self.config_path.write_text('[Daemon]\n[Storm]\nAction=mitigate\n')
        thpd.signal(signal.SIGHUP)
        thpd.wait_log(r'Reloading policies and settings')
        status = subprocess.run([os.environ['THPD_CTL_BIN'], '--user', 'status'], env=self.stack.env,
                                capture_output=True, text=True)
        self.assertEqual(status.returncode, 0, status.stderr)
        self.assertIn('action: mitigate', status.stdout)
        self.assertRegex(status.stdout, r'enabled\s+never.*redis\.conf for redis-server\.service')
        self.assert_knobs(REDIS)
        thpd.stop()


    def test_12_restarting_thpds_unit_hands_the_knobs_over(self):
        # A package upgrade restarts thpd.service: Redis must not run under the baseline, not
        # even between the two instances. A plain stop still restores.
        self.write_policy('redis.conf', REDIS_POLICY)
        self.start_unit('redis-server.service')
        unit, log = 'thpd-under-test.service', self.tmp / 'thpd-under-test.log'
        self.start_unit(unit, *self.thpd_argv(),
                        properties=('Type=notify', f'StandardOutput=append:{log}', 'StandardError=inherit',
                                    f'Environment=DBUS_SESSION_BUS_ADDRESS={self.stack.env["DBUS_SESSION_BUS_ADDRESS"]}'))
        self.wait_knobs(REDIS)
        written = {knob: self.kernel.knob_path(knob).stat().st_mtime_ns for knob in REDIS}

        self.stack.run('systemctl', '--user', 'restart', unit)
        self.assert_knobs(REDIS)
        self.assertEqual({knob: self.kernel.knob_path(knob).stat().st_mtime_ns for knob in REDIS}, written,
                         'a knob Redis needs was written during the restart')
        self.assertIn("thpd's unit is restarting: leaving the knobs for the next instance", log.read_text())
        self.assertTrue((self.runtime_dir / 'baseline').exists())

        self.stop_unit(unit)
        self.assert_knobs(BASELINE)
        self.assertFalse((self.runtime_dir / 'baseline').exists(), 'a stop restores and drops the record')

if __name__ == '__main__':
    thpdtest.main()
