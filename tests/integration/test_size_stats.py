# SPDX-License-Identifier: LGPL-2.1-or-later
"""The per-size THP counters (hugepages-<N>kB/stats/, Linux 6.10+) end to end, on the scratch
sysfs of thpdtest.ScratchKernel, which has them for 64 kB and 2 MB as kernel 6.18 does.

- The test writes counters as the kernel would count them; the SizeStats property, thpd-ctl
  status (a Sizes line per size that is on or holds pages), show, --json and thpd-ctl metrics
  (thpd_thp_size_*{size}) carry them by size, read when asked; a counter the kernel lacks is
  absent, not 0.
- A storm of failing compactions for 64K faults, with vmstat's THP counters quiet (the fake
  kernel of test_storm, writing the 64 kB counters too), is detected as a direct-compaction
  storm, and its figures and thpd-ctl status name the size.

Run as root:
    PYTHONPATH=tests THPD_BIN=build/src/daemon/thpd THPD_CTL_BIN=build/src/ctl/thpd-ctl
        /usr/bin/python3 -B tests/integration/test_size_stats.py -v
"""

import json
import os
import unittest

import test_storm
from thpdtest import ThpdTestCase, wait_until
from thpdtest.storm import BUS_NAME, BUS_PATH, INTERFACE, FakeKernel, Shape

COUNTERS_64K = {'anon_fault_alloc': 1200, 'anon_fault_fallback': 30, 'nr_anon': 512,
                'nr_anon_partially_mapped': 3, 'split': 4}


class SizeStatsTest(ThpdTestCase):

    @classmethod
    def setUpClass(cls):
        if not os.access(os.environ.get('THPD_CTL_BIN', ''), os.X_OK):
            raise unittest.SkipTest('THPD_CTL_BIN does not name the thpd-ctl executable')
        super().setUpClass()

    def ctl(self, *args):
        proc = self.stack.run(os.environ['THPD_CTL_BIN'], '--user', *args, check=False)
        self.assertEqual(proc.returncode, 0, self._describe(f'thpd-ctl {" ".join(args)}: {proc.stderr}'))
        return proc.stdout

    def size_stats(self):
        """SizeStats through busctl, as {size_kb: (enabled, counters)}."""
        out = self.stack.run('busctl', '--user', '--json=short', 'get-property', BUS_NAME, BUS_PATH, INTERFACE,
                             'SizeStats').stdout
        return {size: (enabled, counters) for size, enabled, counters in json.loads(out)['data']}

    def test_counters_by_size(self):
        # 64K off, holding pages from when it was on: shown. 2M inherits madvise: shown.
        for counter, value in COUNTERS_64K.items():
            self.kernel.set_size_stat(64, counter, value)
        self.kernel.set_size_stat(2048, 'anon_fault_alloc', 77)
        # A kernel may lack any counter: absent, not 0.
        self.kernel.size_stat_path(2048, 'split').unlink()
        self.start_thpd()

        stats = self.size_stats()
        self.assertEqual(sorted(stats), [64, 2048])
        self.assertEqual(stats[64][0], 'never')
        self.assertEqual(stats[2048][0], 'madvise')
        for counter, value in COUNTERS_64K.items():
            self.assertEqual(stats[64][1][counter], value, counter)
        self.assertEqual(stats[64][1]['swpin'], 0)
        self.assertEqual(stats[2048][1]['anon_fault_alloc'], 77)
        self.assertNotIn('split', stats[2048][1])

        status = self.ctl('status')
        self.assertRegex(status, r'\n  Sizes: +64kB +never +1200 faults allocated, 30 fell back; 512 pages, '
                                 r'3 partly mapped; 4 splits\n +2048kB +madvise +77 faults allocated, 0 fell back; '
                                 r'0 pages, 0 partly mapped\n')

        show = self.ctl('show', '-p', 'SizeStats').splitlines()
        self.assertIn('SizeStats.64kB.Enabled=never', show)
        self.assertIn('SizeStats.64kB.nr_anon=512', show)
        self.assertIn('SizeStats.2048kB.anon_fault_alloc=77', show)

        rows = json.loads(self.ctl('--json', 'status'))['size_stats']
        self.assertEqual([r['size_kb'] for r in rows], [64, 2048])
        self.assertEqual(rows[0]['enabled'], 'never')
        self.assertEqual(rows[0]['counters']['anon_fault_fallback'], 30)
        self.assertNotIn('split', rows[1]['counters'])

        metrics = self.ctl('metrics')
        self.assertIn('\nthpd_thp_size_anon_fault_alloc_total{size="64K"} 1200\n', metrics)
        self.assertIn('\nthpd_thp_size_nr_anon{size="64K"} 512\n', metrics)
        self.assertIn('\nthpd_thp_size_split_total{size="64K"} 4\n', metrics)
        self.assertIn('# TYPE thpd_thp_size_nr_anon_partially_mapped gauge\n', metrics)
        self.assertNotIn('thpd_thp_size_split_total{size="2M"}', metrics)

        # Read when asked: a counter that moves shows at once, without an apply. 64K gives its
        # pages back and is off: no longer shown; turned on, shown again.
        self.kernel.set_size_stat(64, 'nr_anon', 0)
        self.kernel.set_size_stat(64, 'anon_fault_alloc', 1300)
        self.assertEqual(self.size_stats()[64][1]['anon_fault_alloc'], 1300)
        self.assertIn('thpd_thp_size_anon_fault_alloc_total{size="64K"} 1300\n', self.ctl('metrics'))
        self.assertRegex(self.ctl('status'), r'\n  Sizes: +2048kB ')
        self.kernel.set_knob('hugepages-64kB/enabled', 'always')
        wait_until(lambda: self.size_stats()[64][0] == 'always', message='SizeStats to follow 64K turned on')
        self.assertRegex(self.ctl('status'), r'\n  Sizes: +64kB +always +1300 faults allocated')

    def test_no_counters_on_an_older_kernel(self):
        # Before 6.10 there is no stats/: no Sizes line, an empty list, no family.
        for size_kb in (64, 2048):
            for path in self.kernel.knob_path(f'hugepages-{size_kb}kB').joinpath('stats').iterdir():
                path.unlink()
            self.kernel.knob_path(f'hugepages-{size_kb}kB').joinpath('stats').rmdir()
        self.start_thpd()
        self.assertEqual(self.size_stats(), {})
        self.assertNotIn('Sizes:', self.ctl('status'))
        self.assertEqual(json.loads(self.ctl('--json', 'status'))['size_stats'], [])
        self.assertNotIn('thpd_thp_size_', self.ctl('metrics'))


class MthpStormTest(test_storm.StormTestCase):

    def setUp(self):
        ThpdTestCase.setUp(self)
        self.fake = FakeKernel(self.kernel.procfs, self.threads, sysfs=self.kernel.sysfs)
        self.addCleanup(self.fake.stop)
        self.fake.start()

    def test_64k_fallback_storm(self):
        daemon = self.start_storm_thpd()
        # Failing compactions as in test_storm's recorded storm, the faults all 64K: vmstat's
        # thp_fault_* stay where they are.
        self.fake.set_shape(Shape(rates={
            'compact_stall': 40, 'compact_fail': 38, 'compact_success': 2,
            'hugepages-64kB/anon_fault_alloc': 10, 'hugepages-64kB/anon_fault_fallback': 30,
            'hugepages-64kB/split': 5,
        }, psi_some=0.015))
        figures = self.monitor.wait_for('StormDetected', kind='direct-compaction')['figures']
        self.assertEqual(figures['thp_fault_fallback_per_sec'], 0)
        self.assertEqual(figures['mthp_size_kb'], 64)
        self.assertGreater(figures['mthp_fault_fallback_per_sec'], 0)
        self.assertGreater(figures['mthp_size_fault_fallback_per_sec'], 0)
        self.assertRegex(self.ctl('status'), r'\n  Storms: +storm .*direct-compaction storm at 64K')
        self.assertRegex(daemon.log(), r'Direct compaction storm detected: .* mTHP fault fallbacks/s '
                                       r'\([0-9.]+/s at 64K\)')
        daemon.stop()


if __name__ == '__main__':
    unittest.main()
