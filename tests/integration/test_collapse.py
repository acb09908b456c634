# SPDX-License-Identifier: LGPL-2.1-or-later
"""khugepaged's mTHP collapse and the kernel command line, on a scratch kernel.

- On a "7.2-style" tree (hugepages-64kB/stats/collapse_exceed_none_pte), two policies whose
  strictest max_ptes_none is 255 while one holds Enabled.64K=always: thpd writes 0, keeps it as
  its own (no drift, no second write), explain says why, and the baseline comes back at the end.
- The same policies without the counter file: 255 is written.
- A scratch /proc/cmdline with thp_anon=: explain and status say which baseline it chose, and
  that a global Enabled= does not reach 2 MB pages while no policy sets Enabled.2M=.

Run as root:
    PYTHONPATH=tests THPD_BIN=build/src/daemon/thpd THPD_CTL_BIN=build/src/ctl/thpd-ctl
        /usr/bin/python3 -B tests/integration/test_collapse.py -v
"""

import os
import subprocess

from test_api import ApiTestCase, busctl_property
from thpdtest import wait_until

MPN = 'khugepaged/max_ptes_none'

# Strictest-wins over these two gives 255, a value mTHP collapse does not honour.
WIDE = """\
[Policy]
Units=wide.service
[TransparentHugePages]
Enabled.64K=always
[Khugepaged]
MaxPtesNone=300
"""
NARROW = """\
[Policy]
Units=narrow.service
[Khugepaged]
MaxPtesNone=255
"""
ALWAYS = """\
[Policy]
Units=always.service
[TransparentHugePages]
Enabled=always
"""
KERNEL_SAYS = 'mTHP collapse does not support max_ptes_none values other than 0 or 511'


class CollapseTest(ApiTestCase):

    def note_kinds(self):
        """KnobNotes as (knob, kind), without the shrinker's, which a scratch kernel with a
        shrink_underused file adds to max_ptes_none whatever the test does."""
        return [n[:2] for n in busctl_property(self.stack, 'KnobNotes') if n[1] != 'shrinker']

    def start_both(self):
        self.write_policy('narrow.conf', NARROW)
        self.write_policy('wide.conf', WIDE)
        self.start_thpd()
        self.start_unit('wide.service', 'sleep', '300')
        self.start_unit('narrow.service', 'sleep', '300')

    def test_255_becomes_0_where_khugepaged_collapses_mthp(self):
        self.kernel.add_mthp_collapse()
        # 7.2 also has the 6.12 shrinker, which max_ptes_none drives.
        self.kernel.knob_path('shrink_underused').write_text('1\n')
        self.start_both()
        self.wait_knobs({MPN: '0', 'hugepages-64kB/enabled': 'always'})

        explain = self.ctl('explain', MPN).stdout
        self.assertIn(f'{MPN} = 0, from narrow.conf for narrow.service (its vote 255, moved: see below)', explain)
        self.assertIn('moved from 255 to 0', explain)
        self.assertIn(KERNEL_SAYS, explain)
        self.assertIn('hugepages-64kB/enabled is on', explain)
        self.assertIn('it also drives the underused-THP shrinker (shrink_underused)', explain)
        self.assertIn('at 0 that is every huge page not fully used', explain)
        data = self.ctl_json('explain', MPN)
        self.assertEqual(data['knobs'][0]['target'], '0')
        self.assertTrue(any('moved from 255 to 0' in n for n in data['knobs'][0]['notes']), data)
        self.assertEqual(self.note_kinds(), [[MPN, 'mthp-collapse']])
        self.assertIn('see thpd-ctl explain khugepaged/max_ptes_none', self.ctl('status', '--full').stdout)

        # The 0 read back is thpd's own: a look for drift (status reads every knob) finds none,
        # and the knob is thpd's for the narrow policy.
        self.ctl('status')
        self.assertEqual(busctl_property(self.stack, 'RecentDrift'), [])
        ownership = {row[0]: row[1:] for row in busctl_property(self.stack, 'Ownership')}
        self.assertEqual(ownership[MPN], ['thpd', 'narrow.conf for narrow.service'])

        # Without an mTHP size on, 255 is what the kernel honours.
        self.stop_unit('wide.service')
        self.wait_knobs({MPN: '255', 'hugepages-64kB/enabled': 'never'})
        self.assertEqual(self.note_kinds(), [])
        self.stop_unit('narrow.service')
        self.wait_knobs({MPN: '511'})
        self.assertEqual(busctl_property(self.stack, 'RecentDrift'), [])

    def test_255_stays_without_mthp_collapse(self):
        self.start_both()
        self.wait_knobs({MPN: '255', 'hugepages-64kB/enabled': 'always'})
        self.assertNotIn('moved', self.ctl('explain', MPN).stdout)
        self.assertEqual(self.note_kinds(), [])

    def test_baseline_from_thp_anon(self):
        # What the kernel made of the command line: 64K always, every other size never.
        self.kernel.set_cmdline('BOOT_IMAGE=/vmlinuz-7.2.13 root=/dev/vda1 ro thp_anon=64K:always quiet')
        self.kernel.set_knob('hugepages-64kB/enabled', 'always')
        self.kernel.set_knob('hugepages-2048kB/enabled', 'never')
        self.write_policy('always.conf', ALWAYS)
        self.start_thpd()

        says = 'baseline never (thp_anon= on the kernel command line)'
        self.assertIn(says, self.ctl('explain', 'hugepages-2048kB/enabled').stdout)
        self.assertIn('baseline always (thp_anon= on the kernel command line)',
                      self.ctl('explain', 'hugepages-64kB/enabled').stdout)
        status = self.ctl('status', '--full').stdout
        line = next(line for line in status.splitlines() if 'hugepages-2048kB/enabled' in line)
        self.assertIn(says, line)
        # enabled itself was not on the command line.
        self.assertNotIn('kernel command line', self.ctl('explain', 'enabled').stdout)

        self.start_unit('always.service', 'sleep', '300')
        self.wait_knobs(enabled='always')
        unreachable = ('always does not reach 2048 kB pages: thp_anon= on the kernel command line set '
                       'hugepages-2048kB/enabled to never, and no policy sets Enabled.2M=')
        wait_until(lambda: unreachable in self.ctl('explain', 'enabled').stdout,
                   message=lambda: self._describe(f'explain enabled to say "{unreachable}"'))

        # verify, offline, reads the same command line and sysfs.
        proc = subprocess.run([os.environ['THPD_CTL_BIN'], 'verify', str(self.policy_dir / 'always.conf')],
                              env={**self.stack.env, 'THPD_SYSFS': str(self.kernel.sysfs),
                                   'THPD_PROCFS': str(self.kernel.procfs)},
                              capture_output=True, text=True, check=False)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn('warning: Enabled=always does not reach 2048 kB pages on this machine', proc.stderr)


if __name__ == '__main__':
    import unittest
    unittest.main()
