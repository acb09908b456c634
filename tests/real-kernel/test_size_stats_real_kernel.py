# SPDX-License-Identifier: LGPL-2.1-or-later
"""The per-size THP counters on this machine's real kernel (6.10 and later): a service faulting
64 kB mTHP under a policy with Enabled.64K=always shows up by size in thpd-ctl status, --json
and metrics, and every knob is back at its baseline afterwards.

The stand-in service waits for a file before it touches 64 MiB of anonymous memory without
madvise, so that its faults come after thpd wrote hugepages-64kB/enabled: the global "enabled"
stays as it is (madvise here), so the PMD size gets none of it. The kernel's own counter,
hugepages-64kB/stats/anon_fault_alloc, must rise, and thpd must report what the kernel does.
Every THP file is snapshotted first and compared afterwards (test_real_kernel.py's rules)."""

import json
import os
import re
import shlex
import unittest

import thpdtest
from thpdtest import wait_until

from test_real_kernel import SOURCE_ROOT, THP, RealKernel, RealKernelTestCase, current_word, restore, snapshot

HOLD = SOURCE_ROOT / 'tests' / 'integration' / 'thp_hold.py'
UNIT = 'mthp-hold.service'
SIZE_MIB = 64
STATS_64K = THP / 'hugepages-64kB' / 'stats'

POLICY = f"""\
[Policy]
Description=A service that wants 64 kB mTHP
Units={UNIT}
[TransparentHugePages]
Enabled.64K=always
"""


def counter_64k(name):
    return int((STATS_64K / name).read_text())


class RealKernelSizeStatsTest(RealKernelTestCase):

    def setUp(self):
        super().setUp()
        if not (STATS_64K / 'anon_fault_alloc').is_file():
            self.skipTest(f'{STATS_64K} has no anon_fault_alloc on this kernel (before 6.10)')
        self.before = snapshot()
        self.addCleanup(restore, self.before)
        self.kernel = RealKernel()
        # A baseline the policy changes.
        if current_word(THP / 'hugepages-64kB' / 'enabled') != 'never':
            (THP / 'hugepages-64kB' / 'enabled').write_text('never')
            self.before = snapshot()
        (self.policy_dir / 'mthp.conf').write_text(POLICY)
        (self.policy_dir / 'mthp.conf').chmod(0o644)
        self.config_path.write_text('[Daemon]\n[Storm]\nWatch=no\n')

    def ctl(self, *args):
        proc = self.stack.run(os.environ['THPD_CTL_BIN'], '--user', *args, check=False)
        self.assertEqual(proc.returncode, 0, self._describe(f'thpd-ctl {" ".join(args)}: {proc.stderr}'))
        return proc.stdout

    def test_64k_faults_show_by_size(self):
        baseline_64k = current_word(THP / 'hugepages-64kB' / 'enabled')
        daemon = self.start_thpd('--procfs=/proc')
        self.assertEqual(snapshot(), self.before, 'starting thpd with no unit running changed the kernel')
        metrics_before = self.ctl('metrics')
        alloc_before = counter_64k('anon_fault_alloc')

        go, ready = self.tmp / 'go', self.tmp / 'ready'
        hold = ' '.join(shlex.quote(str(a)) for a in ('/usr/bin/python3', '-B', HOLD, '--no-advise', SIZE_MIB, ready))
        self.start_unit(UNIT, '/bin/sh', '-c', f'while [ ! -e {shlex.quote(str(go))} ]; do sleep 0.1; done; exec {hold}')
        self.wait_knobs({'hugepages-64kB/enabled': 'always'})
        go.write_text('')
        wait_until(ready.exists, 60, f'{UNIT} to touch its {SIZE_MIB} MiB')
        # The kernel's own counter first: what thpd must report.
        wait_until(lambda: counter_64k('anon_fault_alloc') > alloc_before, 30,
                   'hugepages-64kB/stats/anon_fault_alloc to rise')

        status = self.ctl('status')
        print(f'\n----- thpd-ctl status with {UNIT} holding {SIZE_MIB} MiB under Enabled.64K=always\n{status}'
              '----- end of thpd-ctl status', flush=True)
        match = re.search(r'\n  Sizes: (?:.*\n)*? +64kB +always +(\d+) faults allocated', status)
        self.assertIsNotNone(match, status)
        self.assertGreater(int(match.group(1)), alloc_before)

        rows = {r['size_kb']: r for r in json.loads(self.ctl('--json', 'status'))['size_stats']}
        self.assertEqual(rows[64]['enabled'], 'always')
        self.assertGreater(rows[64]['counters']['anon_fault_alloc'], alloc_before)
        print(f'64 kB: anon_fault_alloc {alloc_before} -> {rows[64]["counters"]["anon_fault_alloc"]}, '
              f'nr_anon {rows[64]["counters"].get("nr_anon")}', flush=True)

        def metric(text):
            m = re.search(r'^thpd_thp_size_anon_fault_alloc_total\{size="64K"\} (\d+)$', text, re.M)
            self.assertIsNotNone(m, text)
            return int(m.group(1))

        self.assertGreater(metric(self.ctl('metrics')), metric(metrics_before))

        self.stop_unit(UNIT)
        self.wait_knobs({'hugepages-64kB/enabled': baseline_64k})
        daemon.stop()
        self.assertEqual(snapshot(), self.before)


if __name__ == '__main__':
    thpdtest.main()
