# SPDX-License-Identifier: LGPL-2.1-or-later
"""Scope=service on the real stack: thpd-generator as a user generator of a real systemd --user
manager, thpd-exec in front of a unit's ExecStart=, and thpd telling isolated services from
ones that need a restart.

A unit under a service-scoped "never" policy and a transient unit under a global "always" one
run side by side: the first one's main process reads THP_enabled: 0 in /proc/PID/status, the
other's 1, and the "enabled" knob resolves to always, without the scoped policy. A unit that
was running before its drop-in existed is listed as needing a restart, and no longer once it
restarted.

thpd reads the real /proc here (--procfs=/proc, for /proc/PID/status): its storm watcher only
reads it, and is off ([Storm] Watch=no), so that the host's memory pressure from another
workload cannot wake it in the idle check.

Run as root:
    PYTHONPATH=tests THPD_BIN=build/src/daemon/thpd THPD_CTL_BIN=build/src/ctl/thpd-ctl \\
    THPD_GENERATOR_BIN=build/src/generator/thpd-generator THPD_EXEC_BIN=build/src/generator/thpd-exec \\
        /usr/bin/python3 -B tests/integration/test_scope.py -v
"""

import json
import os
import shlex
from pathlib import Path

import jsonschema

import test_api
import thpdtest
from thpdtest import wait_until

SCOPED = 'thpd-scope-test.service'
BATCH = 'thpd-scope-batch.service'
SCHEMA = json.loads((test_api.SOURCE_ROOT / 'data' / 'thpd-ctl.schema.json').read_text())

SCOPED_POLICY = f"""\
[Policy]
Units={SCOPED}
Scope=service
[TransparentHugePages]
Enabled=never
"""

BATCH_POLICY = f"""\
[Policy]
Units={BATCH}
[TransparentHugePages]
Enabled=always
"""


def thp_enabled(pid):
    for line in Path(f'/proc/{pid}/status').read_text().splitlines():
        if line.startswith('THP_enabled:'):
            return int(line.split()[1])
    raise AssertionError(f'no THP_enabled: in /proc/{pid}/status')


def validate(instance, verb):
    jsonschema.validate(instance, {**SCHEMA, '$ref': f'#/$defs/{verb}'}, cls=jsonschema.Draft202012Validator)


class ScopeTest(test_api.ApiTestCase):

    def setUp(self):
        super().setUp()
        for name in ('THPD_GENERATOR_BIN', 'THPD_EXEC_BIN'):
            if not os.access(os.environ.get(name, ''), os.X_OK):
                self.skipTest(f'{name} does not name the executable')
        self.unit_dir = self.stack.dir / 'config' / 'systemd' / 'user'
        # systemd 252 runs user generators from /run/systemd/user-generators (not yet from
        # $XDG_CONFIG_HOME), and the stack's manager has a /run/systemd of its own: reach it
        # through the manager's root in its mount namespace.
        self.generator = (Path(f'/proc/{self.stack.manager.pid}/root/run/systemd/user-generators')
                          / 'thpd-generator')
        self.write_policy('scoped.conf', SCOPED_POLICY)
        self.write_policy('batch.conf', BATCH_POLICY)
        self.config_path.write_text('[Daemon]\n[Storm]\nWatch=no\n')
        (self.unit_dir / SCOPED).write_text('[Service]\nExecStart=/bin/sleep infinity\n')
        self.addCleanup(self.daemon_reload)
        self.addCleanup((self.unit_dir / SCOPED).unlink)
        self.kernel.set_knob('enabled', 'madvise')

    def install_generator(self):
        """The user manager runs generators with its own environment: a wrapper moves the
        unit path, the policy directory and the helper to the test's."""
        env = {'THPD_UNIT_PATH': self.unit_dir, 'THPD_POLICY_PATH': self.policy_dir,
               'THPD_EXEC_HELPER': os.path.abspath(os.environ['THPD_EXEC_BIN'])}
        assignments = ' '.join(f'{k}={shlex.quote(str(v))}' for k, v in env.items())
        self.generator.parent.mkdir(exist_ok=True)
        self.generator.write_text(f'#!/bin/sh\nexec env {assignments} '
                                  f'{shlex.quote(os.path.abspath(os.environ["THPD_GENERATOR_BIN"]))} "$@"\n')
        self.generator.chmod(0o755)
        self.addCleanup(self.generator.unlink)

    def daemon_reload(self):
        self.stack.run('systemctl', '--user', 'daemon-reload')

    def main_pid(self, unit):
        return int(self.stack.run('systemctl', '--user', 'show', '-P', 'MainPID', unit).stdout)

    def isolated(self):
        return test_api.busctl_property(self.stack, 'IsolatedServices')

    def test_scoped_and_global_side_by_side(self):
        self.install_generator()
        self.daemon_reload()
        dropin = self.stack.runtime_dir / 'systemd' / 'generator' / f'{SCOPED}.d' / 'zz-thpd-scope.conf'
        self.assertIn('-- /bin/sleep infinity', dropin.read_text())

        self.start_thpd('--procfs=/proc')
        self.stack.run('systemctl', '--user', 'start', SCOPED)
        self.stack.units.add(SCOPED)
        self.start_unit(BATCH)
        self.wait_knobs(enabled='always')

        self.assertEqual(thp_enabled(self.main_pid(SCOPED)), 0)
        self.assertEqual(thp_enabled(self.main_pid(BATCH)), 1)
        # The note may also count the process as "starting through thpd-exec": the unit is active
        # as soon as it forked, and thpd may look before the helper's prctl.
        wait_until(lambda: [row[:4] for row in self.isolated()] == [[SCOPED, 'scoped.conf', 'never', 'isolated']],
                   message=lambda: f'{SCOPED} isolated, have {self.isolated()}')
        self.assertRegex(self.isolated()[0][4], r'^\d process\(es\) with THP_enabled: 0')
        self.assertEqual(test_api.busctl_property(self.stack, 'NeedsRestart'), [])

        # The global knob resolves without the scoped policy; explain says why it does not vote.
        explain = self.ctl('explain', 'enabled').stdout
        self.assertIn('enabled = always, from batch.conf for ' + BATCH, explain)
        self.assertIn(f'never  scoped.conf for {SCOPED}: isolated', explain)
        validate(self.ctl_json('explain', 'enabled'), 'explain')
        self.assertEqual(self.ctl_json('explain', 'defrag')['isolated_services'], [])
        status = self.ctl('status').stdout
        self.assertIn(f'Isolated: {SCOPED} THP never for its processes only (scoped.conf, Scope=service): isolated',
                      status)
        validate(self.ctl_json('status'), 'status')

    def test_started_before_its_dropin_needs_a_restart(self):
        self.daemon_reload()
        self.stack.run('systemctl', '--user', 'start', SCOPED)
        self.stack.units.add(SCOPED)
        self.assertEqual(thp_enabled(self.main_pid(SCOPED)), 1)
        self.install_generator()
        self.daemon_reload()

        self.start_thpd('--procfs=/proc')
        wait_until(lambda: test_api.busctl_property(self.stack, 'NeedsRestart') == [[SCOPED, 'scoped.conf']],
                   message=lambda: f'{SCOPED} to need a restart: {self.isolated()}')
        [row] = self.isolated()
        self.assertEqual(row[:4], [SCOPED, 'scoped.conf', 'never', 'not-isolated'])
        self.assertIn('has THP_enabled: 1', row[4])
        # The knobs are not the scoped policy's business.
        self.assertEqual(self.kernel.read_knob('enabled'), 'madvise')

        self.stack.run('systemctl', '--user', 'restart', SCOPED)
        wait_until(lambda: test_api.busctl_property(self.stack, 'NeedsRestart') == [],
                   message=lambda: f'NeedsRestart to empty: {self.isolated()}')
        self.assertEqual(self.isolated()[0][3], 'isolated')
        self.assertEqual(thp_enabled(self.main_pid(SCOPED)), 0)


if __name__ == '__main__':
    thpdtest.main()
