# SPDX-License-Identifier: LGPL-2.1-or-later
"""The mixed host on this machine's real kernel: MongoDB 8's policy (installed as mongodb.conf,
as its package would) next to the shipped Redis policy (Scope=auto), each with a stand-in under
its real unit name that touches 256 MiB of anonymous memory without madvise.

thpd-generator runs as a generator of the harness' real systemd --user manager and isolates
redis-server.service (through thpd-exec: this host's systemd has no MemoryTHP=). thpd writes the
real knobs: enabled=always, defrag=defer+madvise, khugepaged/max_ptes_none=0 for MongoDB, and
the kernel must then report AnonHugePages > 0 for the MongoDB stand-in and 0 for Redis's.
Every knob is snapshotted first and must be back when thpd stops (test_real_kernel.py's rules).
"""

import os
import shlex
import unittest
from pathlib import Path

import thpdtest
from thpdtest import wait_until

from test_real_kernel import SOURCE_ROOT, THP, RealKernel, RealKernelTestCase, current_word, restore, snapshot

HOLD = SOURCE_ROOT / 'tests' / 'integration' / 'thp_hold.py'
MONGOD = 'mongod.service'
REDIS = 'redis-server.service'
SIZE_MIB = 256


def anon_huge_kib(pid):
    for line in Path(f'/proc/{pid}/smaps_rollup').read_text().splitlines():
        if line.startswith('AnonHugePages:'):
            return int(line.split()[1])
    raise AssertionError(f'no AnonHugePages: in /proc/{pid}/smaps_rollup')


def thp_enabled(pid):
    for line in Path(f'/proc/{pid}/status').read_text().splitlines():
        if line.startswith('THP_enabled:'):
            return int(line.split()[1])
    raise AssertionError(f'no THP_enabled: in /proc/{pid}/status')


class RealKernelMixedHostTest(RealKernelTestCase):

    @classmethod
    def setUpClass(cls):
        for name in ('THPD_GENERATOR_BIN', 'THPD_EXEC_BIN'):
            if not os.access(os.environ.get(name, ''), os.X_OK):
                raise unittest.SkipTest(f'{name} does not name the executable')
        super().setUpClass()

    def setUp(self):
        super().setUp()
        self.before = snapshot()
        self.addCleanup(restore, self.before)
        self.kernel = RealKernel()
        # A baseline both policies change: not already MongoDB's values, not Redis's.
        (THP / 'enabled').write_text('madvise')
        (THP / 'defrag').write_text('madvise')
        self.before = snapshot()
        for name, source in (('mongodb.conf', SOURCE_ROOT / 'policy' / 'vendor' / 'mongodb-8.conf'),
                             ('redis.conf', SOURCE_ROOT / 'policy' / 'redis.conf')):
            (self.policy_dir / name).write_text(source.read_text())
            (self.policy_dir / name).chmod(0o644)
        self.config_path.write_text('[Daemon]\n[Storm]\nWatch=no\n')

        unit_dir = self.stack.dir / 'config' / 'systemd' / 'user'
        for unit in (MONGOD, REDIS):
            command = ' '.join(shlex.quote(str(a)) for a in
                               ('/usr/bin/python3', '-B', HOLD, '--no-advise', SIZE_MIB, self.tmp / f'{unit}.ready'))
            (unit_dir / unit).write_text(f'[Service]\nExecStart={command}\n')
            self.addCleanup((unit_dir / unit).unlink)
        # As in integration/test_scope.py: systemd 252 runs user generators from
        # /run/systemd/user-generators, in the manager's own mount namespace.
        generator = Path(f'/proc/{self.stack.manager.pid}/root/run/systemd/user-generators/thpd-generator')
        env = {'THPD_UNIT_PATH': unit_dir, 'THPD_POLICY_PATH': self.policy_dir,
               'THPD_EXEC_HELPER': os.path.abspath(os.environ['THPD_EXEC_BIN'])}
        generator.parent.mkdir(exist_ok=True)
        generator.write_text('#!/bin/sh\nexec env ' + ' '.join(f'{k}={shlex.quote(str(v))}' for k, v in env.items())
                             + f' {shlex.quote(os.path.abspath(os.environ["THPD_GENERATOR_BIN"]))} "$@"\n')
        generator.chmod(0o755)
        self.addCleanup(self.stack.run, 'systemctl', '--user', 'daemon-reload')
        self.addCleanup(generator.unlink)
        self.stack.run('systemctl', '--user', 'daemon-reload')

    def start(self, unit):
        self.stack.run('systemctl', '--user', 'start', unit)
        self.stack.units.add(unit)
        ready = self.tmp / f'{unit}.ready'
        wait_until(ready.exists, 60, f'{unit} to touch its {SIZE_MIB} MiB')
        return int(self.stack.run('systemctl', '--user', 'show', '-P', 'MainPID', unit).stdout)

    def test_mongodb_8_gets_thp_and_redis_does_not(self):
        daemon = self.start_thpd('--procfs=/proc')
        # MongoDB first: its memory is touched under always; Redis's after it, under always too.
        mongod = self.start(MONGOD)
        self.wait_knobs({'enabled': 'always', 'defrag': 'defer+madvise', 'khugepaged/max_ptes_none': '0'})
        # The stand-in may have touched part of its memory before thpd's write: restart it under
        # the policy, as thpd-ctl status would tell an admin.
        self.stack.run('systemctl', '--user', 'stop', MONGOD)
        (self.tmp / f'{MONGOD}.ready').unlink()
        mongod = self.start(MONGOD)
        self.wait_knobs(enabled='always')
        redis = self.start(REDIS)
        self.assert_knobs({'enabled': 'always', 'defrag': 'defer+madvise', 'khugepaged/max_ptes_none': '0'})

        self.assertEqual(thp_enabled(redis), 0)
        self.assertEqual(thp_enabled(mongod), 1)
        # khugepaged may still add to MongoDB's share later; Redis's process can have none.
        huge = wait_until(lambda: anon_huge_kib(mongod), 60, f'AnonHugePages > 0 for {MONGOD}')
        self.assertEqual(anon_huge_kib(redis), 0)
        print(f'\nAnonHugePages: {MONGOD} {huge} kB of {SIZE_MIB * 1024}, {REDIS} {anon_huge_kib(redis)} kB',
              flush=True)
        status = self.stack.run(os.environ['THPD_CTL_BIN'], '--user', 'status').stdout
        self.assertIn(f'Isolated: {REDIS} THP never for its processes only (redis.conf, Scope=auto, via thpd-exec)',
                      status)

        for unit in (REDIS, MONGOD):
            self.stack.run('systemctl', '--user', 'stop', unit)
        self.wait_knobs(enabled='madvise', defrag='madvise')
        daemon.stop()
        self.assertEqual(snapshot(), self.before)
        self.assertEqual(current_word(THP / 'khugepaged' / 'max_ptes_none'), self.before[str(THP / 'khugepaged' /
                                                                                             'max_ptes_none')])


if __name__ == '__main__':
    thpdtest.main()
