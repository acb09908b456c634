# SPDX-License-Identifier: LGPL-2.1-or-later
"""thpd on a bus where no systemd manager answers: it still starts, says so, applies the
baseline (here one pinned in thpd.conf), serves its D-Bus API, keeps asking, and exits cleanly.

A plain dbus-daemon stands in for a session without a user manager."""

import os
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

import thpdtest
from thpdtest import ScratchKernel, Thpd, wait_until


class NoManagerTest(unittest.TestCase):

    def setUp(self):
        if not os.access(os.environ.get('THPD_BIN', ''), os.X_OK):
            raise unittest.SkipTest('THPD_BIN does not name the thpd executable')
        if not shutil.which('dbus-daemon'):
            raise unittest.SkipTest('dbus-daemon is not installed')
        self.tmp = Path(tempfile.mkdtemp(prefix='thpd-nomgr-'))
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        address = f'unix:path={self.tmp}/bus'
        self.bus = subprocess.Popen(['dbus-daemon', '--session', f'--address={address}', '--nofork',
                                     '--nopidfile', '--print-address'],
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.addCleanup(self.bus.wait)
        self.addCleanup(self.bus.terminate)
        self.addCleanup(self.bus.stdout.close)
        self.assertTrue(self.bus.stdout.readline().startswith('unix:'))
        self.env = thpdtest.client_env(DBUS_SESSION_BUS_ADDRESS=address, XDG_RUNTIME_DIR=str(self.tmp))
        self.kernel = ScratchKernel(self.tmp / 'kernel')
        # 0755 and 0644 whatever the umask: thpd trusts no policy others may write.
        (self.tmp / 'policy.d').mkdir(mode=0o755)
        policy = self.tmp / 'policy.d' / 'redis.conf'
        policy.write_text('[Policy]\nUnits=redis-server.service\n[TransparentHugePages]\nEnabled=never\n')
        policy.chmod(0o644)
        (self.tmp / 'thpd.conf').write_text('[BaselineTransparentHugePages]\nDefrag=defer\n')

    def test_starts_applies_the_baseline_and_keeps_asking(self):
        argv = [os.environ['THPD_BIN'], '--user', f'--sysfs={self.kernel.sysfs}',
                f'--procfs={self.kernel.procfs}', f'--runtime-dir={self.tmp}/run',
                f'--policy-dir={self.tmp}/policy.d', f'--config={self.tmp}/thpd.conf', '--log-level=debug']
        daemon = Thpd(argv, self.env, self.tmp / 'thpd.log', self.tmp / 'notify')
        self.addCleanup(daemon.close)

        daemon.wait_log(r'No systemd manager answers on the bus')
        wait_until(lambda: self.kernel.read_knob('defrag') == 'defer',
                   message=lambda: f'the pinned baseline defrag=defer; log:\n{daemon.log()}')
        self.assertEqual(self.kernel.read_knob('enabled'), 'madvise')

        status = subprocess.run(['busctl', '--user', 'get-property', 'org.thpd1', '/org/thpd1',
                                 'org.thpd1.Manager', 'Status'],
                                env=self.env, capture_output=True, text=True, check=True).stdout
        self.assertIn('waiting for the systemd manager', status)

        # thpd asks again every 5 s.
        daemon.wait_log(r'Asking the systemd manager again', timeout=5 + thpdtest.DEFAULT_TIMEOUT)
        self.assertTrue(daemon.running)
        self.assertEqual(daemon.log().count('No systemd manager answers'), 1, 'said once, not on every retry')

        daemon.stop()
        # The pinned baseline is what "restore" means, so it stays.
        self.assertEqual(self.kernel.read_knob('defrag'), 'defer')


if __name__ == '__main__':
    thpdtest.main()
