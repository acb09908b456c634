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


class ScopeCase(test_api.ApiTestCase):
    """The generator installed in the stack's user manager; no test of its own."""

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
        self.addCleanup(self.daemon_reload)

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

    def start(self, unit):
        self.stack.run('systemctl', '--user', 'start', unit)
        self.stack.units.add(unit)

    def row(self, unit):
        return next((row for row in self.isolated() if row[0] == unit), None)

    def wait_thp_off(self, unit):
        """Waits for the unit's main process to run with THP_enabled: 0. The unit is active as soon
        as it forked, and thpd-exec's prctl comes after: thpd counts such a process as starting,
        so the unit may show as isolated before the process reads 0."""
        def off():
            pid = self.main_pid(unit)
            return pid > 0 and thp_enabled(pid) == 0
        wait_until(off, message=lambda: f'{unit}\'s main process to run with THP_enabled: 0')


class ScopeTest(ScopeCase):

    def setUp(self):
        super().setUp()
        self.write_policy('scoped.conf', SCOPED_POLICY)
        self.write_policy('batch.conf', BATCH_POLICY)
        self.config_path.write_text('[Daemon]\n[Storm]\nWatch=no\n')
        (self.unit_dir / SCOPED).write_text('[Service]\nExecStart=/bin/sleep infinity\n')
        self.addCleanup((self.unit_dir / SCOPED).unlink)
        self.kernel.set_knob('enabled', 'madvise')

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

        self.wait_thp_off(SCOPED)
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
        self.assertIn(f'Isolated: {SCOPED} THP never for its processes only (scoped.conf, Scope=service, via '
                      'thpd-exec): isolated', status)
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
        self.assertIn('has THP_enabled: 1; it started before', row[4])
        self.assertEqual(row[5:], ['service', 'thpd-exec', False])
        # The knobs are not the scoped policy's business.
        self.assertEqual(self.kernel.read_knob('enabled'), 'madvise')

        self.stack.run('systemctl', '--user', 'restart', SCOPED)
        wait_until(lambda: test_api.busctl_property(self.stack, 'NeedsRestart') == [],
                   message=lambda: f'NeedsRestart to empty: {self.isolated()}')
        self.assertEqual(self.isolated()[0][3], 'isolated')
        self.wait_thp_off(SCOPED)


MONGOD = 'mongod.service'
REDIS = 'redis-server.service'


class MongodRedisCase(ScopeCase):
    """A MongoDB 8 vendor policy (MONGODB_POLICY, from policy/vendor/) installed as mongodb.conf
    next to Redis's as thpd ships it (Scope=auto: never), the generator run and thpd started.
    Stand-ins with the real unit names run sleep."""
    MONGODB_POLICY = None

    def setUp(self):
        super().setUp()
        self.config_path.write_text('[Daemon]\n[Storm]\nWatch=no\n')
        shipped = test_api.SOURCE_ROOT / 'policy'
        self.write_policy('mongodb.conf', (shipped / 'vendor' / self.MONGODB_POLICY).read_text())
        self.write_policy('redis.conf', (shipped / 'redis.conf').read_text())
        for unit in (MONGOD, REDIS):
            (self.unit_dir / unit).write_text('[Service]\nExecStart=/bin/sleep infinity\n')
            self.addCleanup((self.unit_dir / unit).unlink)
        self.kernel.set_knob('defrag', 'madvise')
        self.install_generator()
        self.daemon_reload()
        self.start_thpd('--procfs=/proc')


class MixedHostTest(MongodRedisCase):
    """The mixed host from the policies thpd ships, as they are: MongoDB 8's (global: always,
    defer+madvise, max_ptes_none 0) installed as mongodb.conf, as its package would, next to
    Redis's (Scope=auto: never)."""
    MONGODB_POLICY = 'mongodb-8.conf'

    def test_mongodb_8_next_to_redis(self):
        # The generator isolated Redis (this manager has no MemoryTHP=: through thpd-exec), not
        # MongoDB, whose policy is global.
        generated = self.stack.runtime_dir / 'systemd' / 'generator'
        self.assertIn('--thp=never -- /bin/sleep infinity', (generated / f'{REDIS}.d' / 'zz-thpd-scope.conf').read_text())
        self.assertFalse((generated / f'{MONGOD}.d').exists())

        # Redis alone: its policy holds never machine-wide, as a global one would.
        self.start(REDIS)
        self.wait_knobs(enabled='never', defrag='never')
        wait_until(lambda: (self.row(REDIS) or [None] * 8)[3] == 'isolated',
                   message=lambda: f'{REDIS} isolated: {self.isolated()}')
        self.assertEqual(self.row(REDIS)[5:], ['auto', 'thpd-exec', True])

        # MongoDB 8 starts: its values machine-wide, Redis met per service.
        self.start(MONGOD)
        self.wait_knobs({'enabled': 'always', 'defrag': 'defer+madvise', 'khugepaged/max_ptes_none': '0'})
        wait_until(lambda: self.row(REDIS)[7] is False, message=lambda: f'{REDIS} met per service: {self.isolated()}')
        self.wait_thp_off(REDIS)
        self.assertEqual(thp_enabled(self.main_pid(MONGOD)), 1)
        self.assertEqual(test_api.busctl_property(self.stack, 'NeedsRestart'), [])

        status = self.ctl('status').stdout
        self.assertRegex(status, r'enabled +always .*mongodb\.conf for mongod\.service')
        self.assertRegex(status, r'defrag +defer\+madvise .*mongodb\.conf for mongod\.service')
        self.assertIn(f'Isolated: {REDIS} THP never for its processes only (redis.conf, Scope=auto, via thpd-exec): '
                      'isolated', status)
        self.assertIn('met per service: its machine-wide votes stand aside', status)
        validate(self.ctl_json('status'), 'status')
        explain = self.ctl('explain', 'defrag').stdout
        self.assertIn('defrag = defer+madvise, from mongodb.conf for mongod.service', explain)
        self.assertIn(f'never  redis.conf for {REDIS}: isolated (Scope=auto, via thpd-exec; met per service, not '
                      'voting)', explain)

        # MongoDB stops: Redis's policy holds the machine again.
        self.stack.run('systemctl', '--user', 'stop', MONGOD)
        self.wait_knobs({'enabled': 'never', 'defrag': 'never', 'khugepaged/max_ptes_none': '511'})
        wait_until(lambda: self.row(REDIS)[7] is True, message=lambda: f'{REDIS} machine-wide: {self.isolated()}')

    def test_a_unit_the_generator_cannot_reach_keeps_voting(self):
        """A transient Redis instance has no drop-in: its processes keep THP, so Redis's policy
        votes machine-wide even next to MongoDB 8, and says why."""
        self.start(MONGOD)
        self.wait_knobs(enabled='always')
        transient = 'redis-server@cache.service'
        self.start_unit(transient)
        wait_until(lambda: (self.row(transient) or [None] * 8)[3] == 'not-isolated',
                   message=lambda: f'{transient} not isolated: {self.isolated()}')
        row = self.row(transient)
        self.assertEqual(row[5:], ['auto', 'no drop-in', True])
        self.assertIn('thpd-generator wrote no drop-in for it', row[4])
        self.wait_knobs(enabled='never', defrag='never')
        self.assertEqual(test_api.busctl_property(self.stack, 'NeedsRestart'), [[transient, 'redis.conf']])
        self.assertEqual(self.ctl('explain', 'enabled').stdout.splitlines()[0],
                         f'enabled = never, from redis.conf for {transient}')

        # Gone again: MongoDB's always comes back.
        self.stop_unit(transient)
        self.wait_knobs(enabled='always', defrag='defer+madvise')


class AlwaysAloneTest(MongodRedisCase):
    """Issue 47: MongoDB 8's Scope=service always variant as mongodb.conf, next to Redis's
    (Scope=auto: never). The stack's user manager (systemd 252) has no MemoryTHP=, so the
    generator writes no blanket, mongod's drop-in says why, and the policy is a machine-wide
    always; status and explain say which way."""
    MONGODB_POLICY = 'mongodb-8-alone.conf'

    def test_falls_back_to_machine_wide_always(self):
        generated = self.stack.runtime_dir / 'systemd' / 'generator'
        self.assertFalse((generated / 'service.d').exists())
        dropin = (generated / f'{MONGOD}.d' / 'zz-thpd-scope.conf').read_text()
        self.assertIn('# No blanket: the service manager has no MemoryTHP= (systemd 260 and later)', dropin)
        self.assertNotIn('[Service]', dropin)

        self.start(MONGOD)
        self.wait_knobs({'enabled': 'always', 'defrag': 'defer+madvise', 'khugepaged/max_ptes_none': '0'})
        wait_until(lambda: (self.row(MONGOD) or [None] * 8)[3] == 'unverified',
                   message=lambda: f'{MONGOD} read: {self.isolated()}')
        row = self.row(MONGOD)
        self.assertEqual(row[:4], [MONGOD, 'mongodb.conf', 'always', 'unverified'])
        self.assertEqual(row[5:], ['service', 'machine-wide', True])
        self.assertEqual(row[4], 'always machine-wide, for every service: no blanket, as the service manager has no '
                                 'MemoryTHP= (systemd 260 and later)')
        status = self.ctl('status').stdout
        self.assertIn(f'Isolated: {MONGOD} THP always for its processes only where the platform allows it '
                      '(mongodb.conf, Scope=service, via machine-wide): unverified', status)
        # No blanket, so nothing is counted under it or before it, and status says why.
        self.assertIn('  Blanket:  none, so every service runs at the machine\'s enabled; no service counted (the '
                      'service manager has no MemoryTHP= (systemd 260 and later))\n', status)
        self.assertEqual(test_api.busctl_property(self.stack, 'BlanketSince'), 0)
        self.assertEqual(test_api.busctl_property(self.stack, 'BlanketServices'), [])
        self.assertNotIn('Restart needed:', status)
        validate(self.ctl_json('status'), 'status')
        self.assertIn(MONGOD, self.ctl('explain', 'enabled').stdout)
        validate(self.ctl_json('explain', 'enabled'), 'explain')

        # Redis beside it is met per service, as next to a global always.
        self.start(REDIS)
        wait_until(lambda: (self.row(REDIS) or [None] * 8)[3] == 'isolated',
                   message=lambda: f'{REDIS} isolated: {self.isolated()}')
        self.assertIs(self.row(REDIS)[7], False)
        self.assertEqual(self.kernel.read_knob('enabled'), 'always')

        self.stack.run('systemctl', '--user', 'stop', MONGOD)
        self.wait_knobs(enabled='never', defrag='never')
        wait_until(lambda: self.row(MONGOD) is None, message=lambda: f'{MONGOD} gone: {self.isolated()}')


class BlanketCountTest(MongodRedisCase):
    """Which running services thpd counts under the blanket: the stack's systemd 252 has no
    MemoryTHP=, so thpd-generator writes none; a generator of the test's writes a file of that
    name, with a comment only, and the manager lists it among every service's drop-ins as it
    would the real one. thpd asks the manager, not the kernel, so this is the same path."""
    MONGODB_POLICY = 'mongodb-8-alone.conf'
    EARLY, LATER, OWN = 'thpd-test-early.service', 'thpd-test-later.service', 'thpd-test-own.service'

    def services(self):
        return dict(test_api.busctl_property(self.stack, 'BlanketServices'))

    def wait_services(self, **states):
        wanted = {f'thpd-test-{name}.service': state for name, state in states.items()}
        wait_until(lambda: all(self.services().get(u) == s for u, s in wanted.items()),
                   message=lambda: f'{wanted} in BlanketServices: {self.services()}')

    def test_counts_services_under_and_before_it(self):
        for unit in (self.EARLY, self.LATER, self.OWN):
            (self.unit_dir / unit).write_text('[Service]\nExecStart=/bin/sleep infinity\n')
            self.addCleanup((self.unit_dir / unit).unlink)
        # A drop-in of the service's own after the blanket's name takes it out (systemd 252
        # warns of the key and ignores it; thpd reads the file).
        own = self.unit_dir / f'{self.OWN}.d'
        own.mkdir()
        self.addCleanup(own.rmdir)
        (own / 'zz-own.conf').write_text('[Service]\nMemoryTHP=inherit\n')
        self.addCleanup((own / 'zz-own.conf').unlink)
        self.daemon_reload()
        self.start(self.EARLY)
        self.assertEqual(test_api.busctl_property(self.stack, 'BlanketSince'), 0)

        blanket = self.generator.parent / 'thpd-test-blanket'
        blanket.write_text('#!/bin/sh\nmkdir -p "$1/service.d"\n'
                           'printf "[Service]\\n# stands for MemoryTHP=madvise\\n" >"$1/service.d/10-thpd-madvise.conf"\n')
        blanket.chmod(0o755)
        self.addCleanup(blanket.unlink, missing_ok=True)
        self.daemon_reload()
        wait_until(lambda: test_api.busctl_property(self.stack, 'BlanketSince') > 0, message='BlanketSince set')
        since = test_api.busctl_property(self.stack, 'BlanketSince')
        self.wait_services(early='before')
        self.assertIn([self.EARLY, 'mongodb.conf'], test_api.busctl_property(self.stack, 'NeedsRestart'))

        self.start(self.LATER)
        self.start(self.OWN)
        self.wait_services(early='before', later='under', own='exempt')
        status = self.ctl('status', '--full').stdout
        line = next(line for line in status.splitlines() if line.startswith('  Blanket:'))
        self.assertRegex(line, r'^  Blanket:  since .*: \d+ services? at madvise under it; \d+ started before it '
                               r'\(restart to apply\):.* ' + self.EARLY + r'(,|;)')
        self.assertIn(f'{self.EARLY} (mongodb.conf applied after it started', status)
        validate(self.ctl_json('status'), 'status')

        # Restarted, it runs under the blanket; its restart hint goes. A reload keeps the time.
        self.stack.run('systemctl', '--user', 'restart', self.EARLY)
        self.wait_services(early='under')
        wait_until(lambda: [self.EARLY, 'mongodb.conf'] not in test_api.busctl_property(self.stack, 'NeedsRestart'),
                   message=f'{self.EARLY}\'s restart hint to go')
        self.daemon_reload()
        self.wait_services(early='under', later='under', own='exempt')
        self.assertEqual(test_api.busctl_property(self.stack, 'BlanketSince'), since)

        # Gone at the next reload: nothing counted.
        blanket.unlink()
        self.daemon_reload()
        wait_until(lambda: test_api.busctl_property(self.stack, 'BlanketSince') == 0, message='BlanketSince cleared')
        self.assertEqual(self.services(), {})


if __name__ == '__main__':
    thpdtest.main()
