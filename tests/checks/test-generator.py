#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""thpd-generator against a scratch unit tree and policy directories, and thpd-exec itself.

The generator is run as systemd runs it (thpd-generator NORMAL EARLY LATE), with the unit
search path and the policy directories moved by THPD_UNIT_PATH and THPD_POLICY_PATH; the
drop-ins it writes are compared line by line. The manager it asks whether it has MemoryTHP= is
a script the test writes (THPD_SYSTEMD_BINARY), so that both kinds of drop-in are checked
whatever systemd this machine has. thpd-exec runs real commands and they report what the
kernel says about them.

Usage: test-generator.py THPD_GENERATOR THPD_EXEC
"""

import ctypes
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

GENERATOR = sys.argv.pop(1) if __name__ == '__main__' else os.environ['THPD_GENERATOR_BIN']
EXEC = sys.argv.pop(1) if __name__ == '__main__' else os.environ['THPD_EXEC_BIN']
HELPER = '/usr/lib/thpd/thpd-exec'
DROPIN = 'zz-thpd-scope.conf'
PR_SET_THP_DISABLE = 41
PR_GET_THP_DISABLE = 42
PR_THP_DISABLE_EXCEPT_ADVISED = 1 << 1


def policy(units, enabled, scope='service', extra=''):
    return (f'[Policy]\nUnits={units}\nScope={scope}\n'
            f'[TransparentHugePages]\nEnabled={enabled}\n{extra}')


def kernel_has_thp_except_advised():
    """Whether this kernel takes the flag (Linux 6.18), asked in a child of our own: the setting
    stays on the process that makes it."""
    code = (f'import ctypes, sys; '
            f'sys.exit(ctypes.CDLL(None).prctl({PR_SET_THP_DISABLE}, 1, {PR_THP_DISABLE_EXCEPT_ADVISED}, 0, 0) != 0)')
    return subprocess.run([sys.executable, '-c', code], check=False).returncode == 0


class GeneratorTest(unittest.TestCase):

    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix='thpd-generator-test-'))
        self.addCleanup(subprocess.run, ['rm', '-rf', str(self.tmp)], check=False)
        self.etc = self.tmp / 'etc'
        self.lib = self.tmp / 'lib'
        self.policies = self.tmp / 'policy.d'
        for d in (self.etc, self.lib, self.policies):
            d.mkdir(mode=0o755)
        self.out = self.tmp / 'out'
        self.old_manager = self.fake_manager('old-systemd', memory_thp=False)

    def fake_manager(self, name, memory_thp, status=0):
        """A stand-in for the systemd binary: answers --dump-configuration-items as systemd does,
        a few [Service] settings, one a line, with MemoryTHP= among them or not; exits with status."""
        keys = ['ExecStart=PATH [ARGUMENT [...]]', 'MemoryAccounting=BOOLEAN', 'MemoryMax=LIMIT']
        if memory_thp:
            keys.append('MemoryTHP=STRING')
        dump = '\n'.join(['[Unit]', 'Description=STRING', '[Service]', *keys])
        script = (f'#!/bin/sh\n[ "$*" = --dump-configuration-items ] || exit 2\n'
                  f"printf '%s\\n' '{dump}'\nexit {status}\n")
        path = self.write(self.tmp, name, script)
        path.chmod(0o755)
        return path

    def write(self, base, relpath, text):
        path = base / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(0o644)
        return path

    def run_generator(self, *args, expect=0, manager=None):
        """Runs it asking manager (by default one without MemoryTHP=) what it knows."""
        env = dict(os.environ, THPD_UNIT_PATH=f'{self.etc}:{self.lib}', THPD_POLICY_PATH=str(self.policies),
                   THPD_TRUSTED_UID=str(os.getuid()), THPD_EXEC_HELPER=HELPER,
                   THPD_SYSTEMD_BINARY=str(manager or self.old_manager))
        for name in ('SYSTEMD_SCOPE', 'THPD_MEMORY_THP'):
            env.pop(name, None)
        argv = [GENERATOR, *(args or (str(self.out), str(self.tmp / 'early'), str(self.tmp / 'late')))]
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        self.assertEqual(proc.returncode, expect, proc.stderr)
        return proc

    def dropin(self, unit):
        path = self.out / f'{unit}.d' / DROPIN
        return path.read_text() if path.exists() else None

    def exec_lines(self, unit):
        """The drop-in's assignments, comments left out."""
        text = self.dropin(unit)
        self.assertIsNotNone(text, f'no drop-in for {unit}')
        return [line for line in text.splitlines() if line and not line.startswith('#')]

    def test_redis_like_units(self):
        self.write(self.lib, 'redis-server.service',
                   '[Service]\nType=notify\nExecStart=/usr/bin/redis-server /etc/redis/redis.conf \\\n'
                   '    --supervised systemd --daemonize no\nNoExecPaths=/\nExecPaths=/usr/bin/redis-server\n')
        self.write(self.lib, 'redis-server@.service',
                   '[Service]\nExecStart=/usr/bin/redis-server /etc/redis/redis-%i.conf\n')
        # An admin's drop-in changes the command: the wrapped one is the effective one.
        self.write(self.etc, 'redis-server.service.d/override.conf',
                   '[Service]\nExecStart=\nExecStart=-@/usr/bin/redis-server redis "%N x" $OPTS\n')
        self.write(self.policies, 'redis.conf', policy('redis-server.service redis-server@*.service', 'never'))

        self.run_generator()
        self.assertEqual(self.exec_lines('redis-server.service'), [
            '[Service]',
            'ExecStart=',
            f'ExecStart=-{HELPER} --thp=never --argv0 redis -- /usr/bin/redis-server "%N x" $OPTS',
            f'ExecPaths={HELPER}',
        ])
        # One drop-in for the template covers its instances.
        self.assertEqual(self.exec_lines('redis-server@.service'), [
            '[Service]',
            'ExecStart=',
            f'ExecStart={HELPER} --thp=never -- /usr/bin/redis-server /etc/redis/redis-%i.conf',
        ])
        self.assertIn(str(self.policies / 'redis.conf'), self.dropin('redis-server.service'))
        self.assertEqual(sorted(p.name for p in self.out.iterdir()),
                         ['redis-server.service.d', 'redis-server@.service.d'])

    def test_only_service_scoped_policies(self):
        for name in ('batch.service', 'java-a.service', 'java-b.service', 'oneshot.service', 'bare.service',
                     'masked.service'):
            self.write(self.lib, name, f'[Service]\nExecStart=/bin/{name}\nExecStart=/bin/second\n')
        self.write(self.lib, 'bare.service', '[Service]\nType=oneshot\n')
        (self.etc / 'masked.service').symlink_to('/dev/null')
        self.write(self.policies, 'batch.conf', policy('batch.service', 'always', scope='global'))
        self.write(self.policies, 'java.conf', policy('java-*.service', 'madvise'))
        # Both name java-b: the stricter wins, as in resolution.
        self.write(self.policies, 'strict.conf', policy('java-b.service oneshot.service', 'never'))
        # A machine-wide key in a service-scoped policy: ignored with a warning, the rest applies.
        self.write(self.policies, 'sloppy.conf',
                   policy('bare.service masked.service missing.service', 'never', extra='Defrag=never\n'))

        proc = self.run_generator()
        self.assertIsNone(self.dropin('batch.service'))
        self.assertEqual(self.exec_lines('java-a.service')[2:],
                         [f'ExecStart={HELPER} --thp=madvise -- /bin/java-a.service',
                          f'ExecStart={HELPER} --thp=madvise -- /bin/second'])
        self.assertEqual(self.exec_lines('java-b.service')[2],
                         f'ExecStart={HELPER} --thp=never -- /bin/java-b.service')
        self.assertEqual(len(self.exec_lines('oneshot.service')), 4)
        # No ExecStart= to wrap, masked, not installed: nothing written.
        self.assertIsNone(self.dropin('bare.service'))
        self.assertIsNone(self.dropin('masked.service'))
        self.assertIsNone(self.dropin('missing.service'))
        self.assertIn('cannot isolate bare.service: it has no ExecStart=', proc.stderr)

    def test_manager_with_memory_thp(self):
        self.write(self.lib, 'redis-server.service',
                   '[Service]\nExecStart=/usr/bin/redis-server /etc/redis/redis.conf\nNoExecPaths=/\n')
        self.write(self.lib, 'oracle.service', '[Service]\nExecStart=/opt/oracle/bin/dbstart\n')
        # MemoryTHP= needs no command to wrap: a unit without ExecStart= is isolated too.
        self.write(self.lib, 'bare.service', '[Service]\nType=oneshot\nExecStartPost=/bin/true\n')
        self.write(self.policies, 'redis.conf', policy('redis-server.service bare.service', 'never', scope='auto'))
        self.write(self.policies, 'oracle.conf', policy('oracle.service', 'madvise'))

        proc = self.run_generator(manager=self.fake_manager('new-systemd', memory_thp=True))
        self.assertEqual(self.exec_lines('redis-server.service'), ['[Service]', 'MemoryTHP=disable'])
        self.assertEqual(self.exec_lines('bare.service'), ['[Service]', 'MemoryTHP=disable'])
        self.assertNotIn('no ExecStart=', proc.stderr)
        # madvise where the kernel takes PR_THP_DISABLE_EXCEPT_ADVISED, else the stricter disable.
        advised = kernel_has_thp_except_advised()
        self.assertEqual(self.exec_lines('oracle.service'),
                         ['[Service]', 'MemoryTHP=madvise' if advised else 'MemoryTHP=disable'])
        self.assertEqual('no PR_THP_DISABLE_EXCEPT_ADVISED' in self.dropin('oracle.service'), not advised)

    def test_always_for_one_service(self):
        """Scope=service with always: a blanket service.d/ drop-in gives every service madvise, the
        policy's own services are exempt by a drop-in that sorts after it, a never service keeps
        its own; where the platform cannot, no blanket and a drop-in that says why."""
        self.write(self.lib, 'mongod.service', '[Service]\nExecStart=/usr/bin/mongod\n')
        self.write(self.lib, 'redis-server.service', '[Service]\nExecStart=/usr/bin/redis-server\n')
        self.write(self.policies, 'mongodb.conf',
                   policy('mongod.service mongodb.service', 'always', extra='Defrag=defer+madvise\n'))
        self.write(self.policies, 'redis.conf', policy('redis-server.service', 'never', scope='auto'))
        blanket = self.out / 'service.d' / '10-thpd-madvise.conf'

        proc = self.run_generator(manager=self.fake_manager('new-systemd', memory_thp=True))
        self.assertNotIn('machine-wide', proc.stderr)
        if kernel_has_thp_except_advised():
            self.assertEqual([line for line in blanket.read_text().splitlines() if not line.startswith('#')],
                             ['[Service]', 'MemoryTHP=madvise'])
            self.assertIn(str(self.policies / 'mongodb.conf'), blanket.read_text())
            self.assertEqual(self.exec_lines('mongod.service'), ['[Service]', 'MemoryTHP=inherit'])
            # Not installed yet: exempt all the same, for when it is.
            self.assertEqual(self.exec_lines('mongodb.service'), ['[Service]', 'MemoryTHP=inherit'])
            self.assertEqual(self.exec_lines('redis-server.service'), ['[Service]', 'MemoryTHP=disable'])
            # systemd applies drop-ins of all directories by file name: the blanket first.
            self.assertLess(blanket.name, DROPIN)
        else:
            self.assertFalse(blanket.exists())
            self.assertIn('# No blanket: the kernel has no PR_THP_DISABLE_EXCEPT_ADVISED', self.dropin('mongod.service'))

        # A manager without MemoryTHP=: no blanket, mongod's drop-in holds comments only.
        subprocess.run(['rm', '-rf', str(self.out)], check=True)
        self.run_generator()
        self.assertFalse(blanket.exists())
        self.assertEqual(self.exec_lines('mongod.service'), [])
        self.assertIn('# No blanket: the service manager has no MemoryTHP= (systemd 260 and later)',
                      self.dropin('mongod.service'))
        self.assertIn(f'ExecStart={HELPER} --thp=never -- /usr/bin/redis-server', self.exec_lines('redis-server.service'))

    def test_no_blanket_without_such_a_policy(self):
        self.write(self.lib, 'a.service', '[Service]\nExecStart=/bin/a\n')
        self.write(self.policies, 'a.conf', policy('a.service', 'madvise'))
        self.write(self.policies, 'b.conf', policy('b.service', 'always', scope='global'))
        self.run_generator(manager=self.fake_manager('new-systemd', memory_thp=True))
        self.assertFalse((self.out / 'service.d').exists())

    def test_manager_that_cannot_tell(self):
        """A manager that fails, or is not there, gets the helper, which works with every one."""
        self.write(self.lib, 'a.service', '[Service]\nExecStart=/bin/a\n')
        self.write(self.policies, 'a.conf', policy('a.service', 'never'))
        wrapped = ['[Service]', 'ExecStart=', f'ExecStart={HELPER} --thp=never -- /bin/a']
        for manager in (self.fake_manager('failing-systemd', memory_thp=True, status=1), self.tmp / 'no-systemd'):
            with self.subTest(manager=manager.name):
                self.run_generator(manager=manager)
                self.assertEqual(self.exec_lines('a.service'), wrapped)

    def test_untrusted_policy_is_ignored(self):
        self.write(self.lib, 'a.service', '[Service]\nExecStart=/bin/a\n')
        self.write(self.policies, 'a.conf', policy('a.service', 'never')).chmod(0o666)
        self.run_generator()
        self.assertIsNone(self.dropin('a.service'))

    def test_usage(self):
        proc = self.run_generator('a', 'b', expect=1)
        self.assertIn('Usage:', proc.stderr)
        # The normal directory alone also works, as for systemd-run generators by hand.
        self.run_generator(str(self.out))


class ExecTest(unittest.TestCase):

    def run_exec(self, *argv):
        return subprocess.run([EXEC, *argv], capture_output=True, text=True, check=False)

    def test_never(self):
        proc = self.run_exec('--thp=never', '--', 'grep', '^THP_enabled:', '/proc/self/status')
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout.split(), ['THP_enabled:', '0'])
        # And a child of the command (fork) keeps it.
        proc = self.run_exec('--thp=never', '--', '/bin/sh', '-c', 'grep ^THP_enabled: /proc/self/status; true')
        self.assertEqual(proc.stdout.split(), ['THP_enabled:', '0'])

    def test_madvise(self):
        code = 'import ctypes; print(ctypes.CDLL(None).prctl(%d, 0, 0, 0, 0))' % PR_GET_THP_DISABLE
        proc = self.run_exec('--thp=madvise', '--', sys.executable, '-c', code)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        # 3: THP only where advised (Linux 6.18); 1: an older kernel, THP off with a warning.
        value = int(proc.stdout)
        self.assertIn(value, (1, 3))
        self.assertEqual(value == 1, 'PR_THP_DISABLE_EXCEPT_ADVISED' in proc.stderr)

    def test_argv0(self):
        proc = self.run_exec('--thp=never', '--argv0=my name', '--', '/bin/cat', '/proc/self/cmdline')
        self.assertEqual(proc.stdout.split('\0')[:2], ['my name', '/proc/self/cmdline'])

    def test_errors(self):
        self.assertEqual(self.run_exec('--thp=always', '--', 'true').returncode, 127)
        self.assertEqual(self.run_exec('--thp=never').returncode, 127)
        proc = self.run_exec('--thp=never', '--', '/nonexistent/command')
        self.assertEqual(proc.returncode, 127)
        self.assertIn('cannot execute /nonexistent/command', proc.stderr)


if __name__ == '__main__':
    ctypes.CDLL(None)  # fail early where there is no libc to ask (never on Linux)
    unittest.main(verbosity=2)
