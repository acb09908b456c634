# SPDX-License-Identifier: LGPL-2.1-or-later
"""Fault injection: thpd on the user-manager stack while its files and callers misbehave.

Each scenario breaks one thing thpd depends on (a knob file that disappears, turns read-only or
answers EINVAL, or that another writer writes between thpd's write and its read-back; a hugetlb pool the kernel cannot fill, or that refuses the write giving it
back; a read-only or full runtime directory; policy directories holding a symlink loop,
a directory, a 100 MB file, a FIFO and files that vanish during reloads; a storm of SIGHUPs
during unit churn; 10,000 D-Bus calls with random arguments and 500 Await callers that leave)
and then checks the same things: thpd is still up and answering (or exited non-zero, keeping its
baseline record), every knob it could write holds the value it should, the baseline record still
holds the machine's original values, the error in its log names the file or argument, and its
RSS did not grow beyond a small bound.

thpd runs in a private mount namespace of its own (unshare), so a test can mount over one of its
files (nsenter) without touching the host. Run as root:
    PYTHONPATH=tests THPD_BIN=build/src/daemon/thpd
        /usr/bin/python3 -B tests/integration/test_faults.py -v
"""

import importlib.util
import json
import os
import random
import signal
import stat
import subprocess
import sys
import threading
import time
import unittest
from pathlib import Path

import thpdtest
from thpdtest import STOP_TIMEOUT, ThpdTestCase, wait_until

APP = 'fault-app.service'
APP_POLICY = f"""\
[Policy]
Units={APP}
[TransparentHugePages]
Enabled=never
Defrag=never
"""

# An Await for this unit waits: its policy matches, but the unit never starts.
WAIT_UNIT = 'fault-wait.service'
WAIT_POLICY = f"""\
[Policy]
Units={WAIT_UNIT}
[Khugepaged]
PagesToScan=512
"""

BASELINE = {'enabled': 'madvise', 'defrag': 'madvise'}
APPLIED = {'enabled': 'never', 'defrag': 'never'}

# RSS may grow by this much between the end of a warm-up and the end of a fault scenario.
RSS_GROWTH_MAX_KIB = 2048
LONG_TIMEOUT = 60.0


def report(test, text):
    """A figure for the record (meson keeps it in the test log)."""
    print(f'faults: {test.id().rsplit(".", 1)[-1]}: {text}', file=sys.stderr)


def sanitized():
    """True for a thpd built with AddressSanitizer, whose quarantine keeps freed memory on
    purpose: its RSS says nothing about leaks (LeakSanitizer checks those at exit)."""
    return b'__asan_init' in Path(os.environ['THPD_BIN']).read_bytes()


def rss_kib(pid):
    for line in Path(f'/proc/{pid}/status').read_text().splitlines():
        if line.startswith('VmRSS:'):
            return int(line.split()[1])
    raise AssertionError(f'no VmRSS for PID {pid}')


class FaultsTest(ThpdTestCase):
    """Every test starts thpd in a private mount namespace (see the module docstring)."""

    def assert_rss_flat(self, warm, final, what):
        report(self, f'RSS {warm} -> {final} KiB {what}')
        if sanitized():
            report(self, 'thpd is built with AddressSanitizer: RSS growth not asserted')
            return
        self.assertLess(final - warm, RSS_GROWTH_MAX_KIB, f'RSS grew by {final - warm} KiB {what}')

    def setUp(self):
        super().setUp()
        # Commands run in thpd's mount namespace before it starts (see start_isolated).
        self.namespace_setup = ''

    # unshare needs CAP_SYS_ADMIN; thpd then runs without it, as thpd.service does (setpriv).
    keep_cap_sys_admin = True

    def thpd_argv(self, *extra):
        script = f'set -e\n{self.namespace_setup}\nexec "$@"'
        return ['unshare', '--mount', '--propagation', 'private', 'sh', '-c', script, 'sh',
                'setpriv', '--bounding-set=-sys_admin', '--', *super().thpd_argv(*extra)]

    def in_namespace(self, daemon, *argv):
        """Runs a command in thpd's mount namespace."""
        proc = subprocess.run(['nsenter', f'--target={daemon.pid}', '--mount', '--', *argv],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise AssertionError(f'{" ".join(argv)} in thpd\'s namespace failed: {proc.stderr.strip()}')

    def ping(self, daemon):
        """thpd answers on the bus (a Peer.Ping needs its event loop)."""
        self.assertTrue(daemon.running, self._describe('thpd exited'))
        proc = self.stack.run('busctl', '--user', '--timeout=10', 'call', 'org.thpd1', '/org/thpd1',
                              'org.freedesktop.DBus.Peer', 'Ping', check=False)
        self.assertEqual(proc.returncode, 0, self._describe(f'thpd does not answer a Ping: {proc.stderr}'))

    def baseline_record(self):
        path = self.runtime_dir / 'baseline'
        return path.read_text() if path.exists() else None

    def assert_baseline_record(self, knobs=BASELINE):
        record = self.baseline_record()
        self.assertIsNotNone(record, self._describe(f'no baseline record in {self.runtime_dir}'))
        for name, value in knobs.items():
            self.assertIn(f'knob {name} {value}\n', record, self._describe('the baseline record'))

    def stop_and_check_baseline(self, daemon, restorable=BASELINE):
        """SIGTERM: a clean exit restores every knob and removes the record; a non-zero one keeps
        the record with the original values. Either way the restorable knobs read the baseline."""
        status = daemon.stop(expect_status=None)
        report(self, f'thpd exited with status {status} on SIGTERM')
        self.assertIn(status, (0, 1), self._describe(f'thpd exited with {status}'))
        if status != 0:
            self.assert_baseline_record()
        else:
            self.assertIsNone(self.baseline_record(), self._describe('a clean exit left the record'))
        self.assert_knobs(restorable)
        return status

    # ---- knob files ----

    def test_knob_file_disappears(self):
        self.write_policy('app.conf', APP_POLICY)
        thpd = self.start_thpd()
        self.kernel.knob_path('defrag').unlink()

        self.start_unit(APP)
        self.wait_knobs(enabled='never')
        thpd.wait_log(r'^defrag: cannot read: No such file or directory')
        self.ping(thpd)
        self.assert_baseline_record()

        self.stop_unit(APP)
        self.wait_knobs(enabled='madvise')
        self.assertFalse(self.kernel.knob_path('defrag').exists(), 'thpd created the missing knob')
        self.stop_and_check_baseline(thpd, {'enabled': 'madvise'})

    def test_knob_turns_read_only(self):
        self.write_policy('app.conf', APP_POLICY)
        thpd = self.start_thpd()
        enabled = str(self.kernel.knob_path('enabled'))
        self.in_namespace(thpd, 'mount', '--bind', '-o', 'ro', enabled, enabled)

        self.start_unit(APP)
        self.wait_knobs(defrag='never')
        thpd.wait_log(r'^enabled: cannot set never \(\S*/app\.conf for fault-app\.service\): Read-only file system')
        self.assert_knobs(enabled='madvise')
        self.ping(thpd)
        self.assert_baseline_record()

        self.stop_unit(APP)
        self.wait_knobs(BASELINE)
        self.assertEqual(self.stop_and_check_baseline(thpd), 0)

    def test_override_the_kernel_refuses_is_answered(self):
        # Found by the system layer (a container without /sys/kernel/mm bound): the caller of
        # SetOverride got no answer at all when the kernel refused the value.
        thpd = self.start_thpd()
        defrag = str(self.kernel.knob_path('defrag'))
        self.in_namespace(thpd, 'mount', '--bind', '-o', 'ro', defrag, defrag)

        proc = self.stack.run('busctl', '--user', '--timeout=20', 'call', 'org.thpd1', '/org/thpd1',
                              'org.thpd1.Manager', 'SetOverride', 'a{ss}t', '1', 'defrag', 'never', '0',
                              check=False)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn('The kernel did not take defrag=never (it reads madvise)', proc.stderr)
        thpd.wait_log(r'^defrag: cannot set never \(admin override\): Read-only file system')
        override = self.stack.run('busctl', '--user', '--json=short', 'get-property', 'org.thpd1', '/org/thpd1',
                                  'org.thpd1.Manager', 'Override').stdout
        self.assertEqual(json.loads(override)['data'], {'defrag': 'never'}, 'the override is kept, to be tried again')
        self.assert_knobs(defrag='madvise')
        self.ping(thpd)
        self.assert_baseline_record()
        self.stop_and_check_baseline(thpd)

    def test_knob_answers_einval(self):
        # A kernel attribute that rejects the value with EINVAL: memory.swappiness of a scratch
        # memory cgroup (v1) reads "60" and refuses anything above 200, like a knob refusing a
        # value. Bound over khugepaged/max_ptes_none in thpd's namespace only.
        hierarchy = Path('/sys/fs/cgroup/memory')
        if not (hierarchy / 'cgroup.procs').exists():
            self.skipTest('no cgroup v1 memory hierarchy for a kernel attribute that answers EINVAL')
        cgroup = hierarchy / f'thpd-fault-{os.getpid()}'
        cgroup.mkdir()
        self.addCleanup(cgroup.rmdir)
        swappiness = cgroup / 'memory.swappiness'
        self.write_policy('app.conf', APP_POLICY + '[Khugepaged]\nMaxPtesNone=300\n')
        thpd = self.start_thpd()
        knob = str(self.kernel.knob_path('khugepaged/max_ptes_none'))
        self.in_namespace(thpd, 'mount', '--bind', str(swappiness), knob)

        self.start_unit(APP)
        self.wait_knobs(APPLIED)
        thpd.wait_log(r'^khugepaged/max_ptes_none: cannot set 300 \(\S*/app\.conf for fault-app\.service\): '
                      r'Invalid argument')
        self.assertEqual(swappiness.read_text().strip(), '60')
        self.ping(thpd)
        self.assert_baseline_record(dict(BASELINE, **{'khugepaged/max_ptes_none': '511'}))

        self.stop_unit(APP)
        self.wait_knobs(BASELINE)
        self.stop_and_check_baseline(thpd)

    def test_knob_replaced_by_a_fifo(self):
        # A FIFO blocks a plain open() until a writer comes; thpd opens knobs O_NONBLOCK, so with
        # nobody at the other end it reads EOF (nothing it can parse) and a write fails (ENXIO).
        self.write_policy('app.conf', APP_POLICY)
        thpd = self.start_thpd()
        defrag = self.kernel.knob_path('defrag')
        defrag.unlink()
        os.mkfifo(defrag)

        self.start_unit(APP)
        self.wait_knobs(enabled='never')
        thpd.wait_log(r'^defrag: cannot read: Bad message')
        self.ping(thpd)
        self.assert_baseline_record()
        self.stop_unit(APP)
        self.wait_knobs(enabled='madvise')
        self.ping(thpd)
        self.stop_and_check_baseline(thpd, {'enabled': 'madvise'})
        self.assertTrue(stat.S_ISFIFO(defrag.lstat().st_mode), 'thpd replaced the FIFO')

    def test_config_is_a_fifo_or_a_directory(self):
        """--config names a FIFO (then a directory): thpd reports it and runs on the defaults.
        It used to block in open() before its event loop, with SIGTERM blocked too."""
        self.write_policy('app.conf', APP_POLICY)
        self.config_path.unlink()
        os.mkfifo(self.config_path, 0o644)
        thpd = self.start_thpd()
        thpd.wait_log(rf'^{self.config_path}: error: not a regular file, ignored')
        self.start_unit(APP)
        self.wait_knobs(APPLIED)

        self.config_path.unlink()
        self.config_path.mkdir()
        log_size = len(thpd.log())
        thpd.signal(signal.SIGHUP)
        wait_until(lambda: f'{self.config_path}: error: not a regular file, ignored' in thpd.log()[log_size:],
                   message=lambda: self._describe('the directory reported after SIGHUP'))
        self.ping(thpd)
        self.assert_knobs(APPLIED)
        self.stop_unit(APP)
        self.wait_knobs(BASELINE)
        self.assertEqual(self.stop_and_check_baseline(thpd), 0)

    # ---- a writer between thpd's write and its read-back ----

    def start_racing_knob(self):
        """Mounts racing_knob_fuse.py over "enabled"; returns its arm file: "WRITTEN RACER" in it
        makes another process write RACER right after thpd's next write of WRITTEN, before thpd
        reads the knob back."""
        arm = self.tmp / 'race-arm'
        self.mount_fuse('racing_knob_fuse.py', self.kernel.knob_path('enabled'), 'always', 'madvise', 'never',
                        '--', str(arm))
        self.assertEqual(self.kernel.read_knob('enabled'), 'madvise')
        return arm

    def test_writer_between_write_and_read_back(self):
        """The kernel took thpd's write and another writer's right after it: that value is drift,
        restored as any other written behind thpd's back, not a failed write whose value thpd
        keeps unjudged until the next apply."""
        arm = self.start_racing_knob()
        self.write_policy('app.conf', APP_POLICY)
        thpd = self.start_thpd()
        arm.write_text('never madvise\n')

        self.start_unit(APP)
        thpd.wait_log(r'^enabled: another writer changed never right after this write')
        thpd.wait_log(r'^enabled: found madvise instead of never, .*; restoring never \(\S*/app\.conf for '
                      r'fault-app\.service\)')
        self.wait_knobs(APPLIED)
        self.assertFalse(arm.exists(), 'the racing writer never ran')
        self.assertNotIn('cannot set', thpd.log())
        self.ping(thpd)

        self.stop_unit(APP)
        self.wait_knobs(BASELINE)
        self.assertEqual(self.stop_and_check_baseline(thpd), 0)

    def test_writer_between_restore_and_read_back_at_exit(self):
        """At a clean exit thpd restores the baseline, and another writer writes right after it:
        the value written last is that writer's to keep, and the restore did not fail."""
        arm = self.start_racing_knob()
        self.write_policy('app.conf', APP_POLICY)
        thpd = self.start_thpd()
        self.start_unit(APP)
        self.wait_knobs(APPLIED)

        arm.write_text('madvise always\n')
        status = thpd.stop(expect_status=None)
        self.assertEqual(status, 0, self._describe(f'thpd exited with {status}'))
        self.assertIn('enabled: another writer changed madvise right after the restore; leaving its value',
                      thpd.log())
        self.assertNotIn('cannot restore', thpd.log())
        self.assert_knobs(enabled='always', defrag='madvise')
        self.assertIsNone(self.baseline_record(), self._describe('a clean exit left the record'))

    # ---- a hugetlb pool the kernel cannot fill ----

    def mount_fuse(self, script, mountpoint, *args):
        """Runs the FUSE stand-in script (beside this file) on mountpoint, a directory or a
        file, until the test ends; skips where FUSE cannot be had. Mounted before thpd starts,
        so that its namespace has it."""
        if importlib.util.find_spec('fusepy') is None:
            self.skipTest('python3-fusepy is not installed')
        if not os.path.exists('/dev/fuse'):
            self.skipTest('no /dev/fuse')
        fuse_log = self.tmp / f'fuse-{Path(script).stem}.log'
        # Its output goes to a file: a pipe nobody reads would fill up and stall every access.
        with open(fuse_log, 'wb') as log:
            fuse = subprocess.Popen(['/usr/bin/python3', '-B', str(Path(__file__).with_name(script)),
                                     str(mountpoint), *args],
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)

        def unmount():
            subprocess.run(['umount', '--lazy', str(mountpoint)], capture_output=True, check=False)
            try:
                fuse.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                fuse.kill()
                fuse.wait()
        self.addCleanup(unmount)
        wait_until(lambda: os.path.ismount(mountpoint) or fuse.poll() is not None, LONG_TIMEOUT,
                   f'the FUSE pool on {mountpoint}')
        if fuse.poll() is not None:
            self.skipTest(f'the FUSE stand-in could not mount: {fuse_log.read_text().strip()}')

    def start_stingy_pool(self, cap):
        """Mounts fake_hugetlb_fuse.py over the 2 MiB pool directory; returns (cap file, write
        log). The kernel side of the pool: writes succeed but allocate at most cap pages, and
        fail with the errno self.pool_fail_file names while it exists."""
        cap_file = self.tmp / 'pool-cap'
        cap_file.write_text(f'{cap}\n')
        write_log = self.tmp / 'pool-writes'
        write_log.write_text('')
        self.pool_fail_file = self.tmp / 'pool-fail'
        self.mount_fuse('fake_hugetlb_fuse.py', self.kernel.pool_path().parent, str(cap_file), str(write_log),
                        str(self.pool_fail_file))
        self.assertEqual(self.kernel.read_pool(), 0)
        return cap_file, write_log

    def test_pool_shortfall(self):
        """The kernel gives 7 of 16 pages: thpd compacts, retries, reports the shortfall on
        D-Bus and in its log, and gets the rest once memory is free."""
        cap_file, write_log = self.start_stingy_pool(cap=7)
        compact = self.kernel.procfs / 'sys/vm/compact_memory'
        self.write_config('PoolGracePeriod=0\nPoolAllocRetries=3\n')
        self.write_policy('pool.conf', '[Policy]\nUnits=pool-app.service\n[HugeTLB]\nPages=16\n')
        self.add_barrier_policy()
        thpd = self.start_thpd()

        self.start_unit('pool-app.service')
        thpd.wait_log(r'hugetlb 2M pool: 0 -> 7 pages, 9 short of 16 after 4 attempt\(s\) and 3 compaction\(s\) '
                      r'\(\S*/pool\.conf for pool-app\.service\)')
        self.wait_pool(7)
        self.assertEqual(write_log.read_text().split()[:4], ['16'] * 4)
        # A plain file is empty between thpd's O_TRUNC and its write, and the next apply
        # compacts again.
        self.assertEqual(wait_until(compact.read_text, message=f'{compact} to hold a value'), '1')
        pools = self.stack.run('busctl', '--user', 'get-property', 'org.thpd1', '/org/thpd1', 'org.thpd1.Manager',
                               'HugeTLBPools').stdout
        self.assertIn('"7 of 16 pages after 4 attempt(s)"', pools)

        # Every apply tries again (any unit event of a policy); once memory is free, one gets the
        # whole pool.
        cap_file.write_text('64\n')
        self.barrier()
        self.wait_pool(16)
        pools = self.stack.run('busctl', '--user', 'get-property', 'org.thpd1', '/org/thpd1', 'org.thpd1.Manager',
                               'HugeTLBPools').stdout
        self.assertNotIn('pages after', pools)

        self.stop_unit('pool-app.service')
        self.wait_pool(0)
        self.assertEqual(self.stop_and_check_baseline(thpd), 0)

    def test_pool_give_back_fails(self):
        """Issue 42, case 3: the write that gives a pool back fails. The pages it left are still
        thpd's: not the admin's new baseline, and given back by the first apply after the
        kernel takes writes again."""
        self.start_stingy_pool(cap=64)
        self.write_config('PoolGracePeriod=0\n')
        self.write_policy('pool.conf', '[Policy]\nUnits=pool-app.service\n[HugeTLB]\nPages=16\n')
        self.add_barrier_policy()
        thpd = self.start_thpd()
        self.start_unit('pool-app.service')
        self.wait_pool(16)

        self.pool_fail_file.write_text('EIO\n')
        self.stop_unit('pool-app.service')
        thpd.wait_log(r'hugetlb 2M pool: cannot set 0 pages \(baseline, no policy holds it\): Input/output error')
        # Another apply while the kernel still refuses: the pages are not taken for the baseline.
        self.barrier()
        self.assertEqual(self.kernel.read_pool(), 16)
        record = (self.runtime_dir / 'baseline').read_text()
        self.assertRegex(record, r'(?m)^pool 2048 -1 0$', f'the baseline record:\n{record}')

        self.pool_fail_file.unlink()
        self.barrier()
        self.wait_pool(0)
        self.assertEqual(self.stop_and_check_baseline(thpd), 0)

    # ---- the runtime directory ----

    def test_runtime_dir_read_only(self):
        self.runtime_dir.mkdir()
        self.namespace_setup = f'mount -t tmpfs -o ro,size=64k,mode=0755 thpd-fault "{self.runtime_dir}"'
        self.write_policy('app.conf', APP_POLICY)
        thpd = self.start_thpd()
        thpd.wait_log(rf'Cannot record the baseline in {self.runtime_dir} \(Read-only file system\)')

        self.start_unit(APP)
        self.wait_knobs(APPLIED)
        self.stop_unit(APP)
        self.wait_knobs(BASELINE)
        self.start_unit(APP)
        self.wait_knobs(APPLIED)
        self.ping(thpd)
        # Without a record a clean exit is all that restores the baseline: it must.
        self.assertEqual(thpd.stop(expect_status=None), 0, self._describe('exit status'))
        self.assert_knobs(BASELINE)

    def test_runtime_dir_full(self):
        # A record from an earlier run (defrag was "defer" then) must survive a full disk and
        # still be the baseline thpd restores.
        self.runtime_dir.mkdir()
        record = ('# thpd baseline v1: the kernel\'s values before thpd changed them\n'
                  'knob enabled madvise\nknob defrag defer\n')
        self.namespace_setup = (
            f'mount -t tmpfs -o size=8k,mode=0755 thpd-fault "{self.runtime_dir}"\n'
            f'printf "%s" "{record}" > "{self.runtime_dir}/baseline"\n'
            f'dd if=/dev/zero of="{self.runtime_dir}/filler" bs=1k count=64 2>/dev/null || true')
        self.write_policy('app.conf', APP_POLICY)
        thpd = self.start_thpd()
        thpd.wait_log(rf'Cannot record the baseline in {self.runtime_dir} \(No space left on device\)')
        thpd.wait_log(r'Reusing the baseline recorded')

        self.start_unit(APP)
        self.wait_knobs(APPLIED)
        self.stop_unit(APP)
        self.wait_knobs(enabled='madvise', defrag='defer')
        self.ping(thpd)
        self.start_unit(APP)
        self.wait_knobs(APPLIED)
        self.assertEqual(thpd.stop(expect_status=None), 0, self._describe('exit status'))
        self.assert_knobs(enabled='madvise', defrag='defer')

    # ---- policy directories ----

    def test_policy_dir_hazards(self):
        self.write_policy('good.conf', APP_POLICY)
        (self.policy_dir / 'loop-a.conf').symlink_to('loop-b.conf')
        (self.policy_dir / 'loop-b.conf').symlink_to('loop-a.conf')
        (self.policy_dir / 'x.conf').mkdir()
        big = self.policy_dir / 'big.conf'
        with open(big, 'wb') as f:
            line = b'# ' + b'x' * 1000 + b'\n'
            for _ in range(100 * 1024 * 1024 // len(line)):
                f.write(line)
        big.chmod(0o644)  # trusted whatever the runner's umask, so that thpd reads it
        os.mkfifo(self.policy_dir / 'fifo.conf', 0o644)

        thpd = self.start_thpd(wait_ready=False)
        thpd.wait_ready(timeout=LONG_TIMEOUT)
        expected = {
            'loop-a.conf': 'cannot stat .*Too many levels of symbolic links',
            'loop-b.conf': 'cannot stat .*Too many levels of symbolic links',
            'x.conf': 'not a regular file',
            'fifo.conf': 'not a regular file',
            'big.conf': 'too many errors',
        }
        for name, message in expected.items():
            thpd.wait_log(rf'^{self.policy_dir}/{name}:.*{message}')
        # The 100 MB file costs a bounded number of log lines, not one per line.
        big_lines = [line for line in thpd.log().splitlines() if '/big.conf:' in line]
        self.assertLessEqual(len(big_lines), 60, self._describe('errors logged for big.conf'))
        self.start_unit(APP)
        self.wait_knobs(APPLIED)
        self.ping(thpd)

        # And once more through a reload, with the same files in place.
        warm = rss_kib(thpd.pid)
        log_size = len(thpd.log())
        thpd.signal(signal.SIGHUP)
        wait_until(lambda: 'Reloading policies and settings' in thpd.log()[log_size:], LONG_TIMEOUT,
                   lambda: self._describe('a reload after SIGHUP'))
        self.ping(thpd)
        self.assert_knobs(APPLIED)
        self.stop_unit(APP)
        self.wait_knobs(BASELINE)
        self.assert_rss_flat(warm, rss_kib(thpd.pid), 'over a reload with a 100 MB file')
        self.assert_baseline_record()
        self.assertEqual(self.stop_and_check_baseline(thpd), 0)

    def test_sighup_storm_during_churn(self):
        """100 SIGHUPs within a second while units start and stop and policy files appear,
        vanish and turn into FIFOs; then every knob must follow the units again."""
        self.write_policy('app.conf', APP_POLICY)
        self.add_barrier_policy()
        thpd = self.start_thpd()
        stop = threading.Event()
        errors = []

        def churn_units():
            i = 0
            while not stop.is_set():
                unit = f'fault-churn-{i % 4}.service'
                self.stack.run('systemd-run', '--user', '--quiet', '--collect', f'--unit={unit}',
                               '--', 'sleep', '0.2', check=False)
                i += 1

        def churn_files():
            i = 0
            while not stop.is_set():
                path = self.policy_dir / f'churn-{i % 8}.conf'
                try:
                    if i % 3 == 0:
                        os.mkfifo(path, 0o644)
                    else:
                        path.write_text(f'[Policy]\nUnits=fault-churn-{i % 4}.service\n'
                                        '[Khugepaged]\nScanSleepMillisecs=20000\n')
                        path.chmod(0o644)
                    path.unlink()
                except OSError as e:
                    errors.append(e)
                i += 1

        # A warm-up round of everything, so RSS is measured after the allocator has grown.
        self.start_unit(APP)
        self.wait_knobs(APPLIED)
        self.stop_unit(APP)
        self.wait_knobs(BASELINE)
        for _ in range(10):
            thpd.signal(signal.SIGHUP)
        self.ping(thpd)
        warm = rss_kib(thpd.pid)

        threads = [threading.Thread(target=churn_units), threading.Thread(target=churn_files)]
        for t in threads:
            t.start()
        try:
            start = time.monotonic()
            for i in range(100):
                thpd.signal(signal.SIGHUP)
                time.sleep(max(0.0, start + (i + 1) / 100 - time.monotonic()))
            report(self, f'100 SIGHUPs sent in {time.monotonic() - start:.2f} s')
            self.ping(thpd)
        finally:
            stop.set()
            for t in threads:
                t.join()
        self.assertEqual(errors, [])
        for path in self.policy_dir.glob('churn-*.conf'):
            path.unlink()
        self.stack.stop_all_units()

        # Once the dust settles the units decide again.
        thpd.signal(signal.SIGHUP)
        self.barrier()
        self.assert_knobs(BASELINE)
        self.start_unit(APP)
        self.wait_knobs(APPLIED)
        self.stop_unit(APP)
        self.wait_knobs(BASELINE)
        self.ping(thpd)
        self.assert_rss_flat(warm, rss_kib(thpd.pid), 'over the SIGHUP storm')
        self.assert_baseline_record()
        self.assertEqual(self.stop_and_check_baseline(thpd), 0)

    # ---- D-Bus callers ----

    def test_random_dbus_calls_and_awaiters_that_leave(self):
        from gi.repository import Gio, GLib

        self.write_policy('app.conf', APP_POLICY)
        self.write_policy('wait.conf', WAIT_POLICY)
        thpd = self.start_thpd()
        address = self.stack.bus_address
        flags = (Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT |
                 Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION)
        rng = random.Random(14)
        knob_names = ['enabled', 'defrag', 'shmem_enabled', 'khugepaged/defrag', 'khugepaged/max_ptes_none',
                      'hugepages-64kB/enabled', 'hugepages-2048kB/enabled', 'no-such-knob', '', 'enabled\n']
        values = ['never', 'madvise', 'always', 'defer', 'inherit', '0', '1', '511', '512', '-1',
                  '99999999999999999999', '', 'never ']

        # Junk is a random slice of one pool drawn once: drawing each string a character at a time
        # took some 70 of this test's 90 s in Python, not in thpd.
        junk_lengths = [0, 1, 5, 64, 300, 70000]
        junk_pool = ''.join(chr(rng.choice([rng.randrange(0x20, 0x7f), rng.randrange(0xa0, 0xd7ff)]))
                            for _ in range(2 * max(junk_lengths)))

        def junk():
            n = rng.choice(junk_lengths)
            start = rng.randrange(len(junk_pool) - n + 1)
            return junk_pool[start:start + n]

        def random_call():
            """(interface, member, parameters): right and wrong signatures, odd values."""
            kind = rng.randrange(12)
            if kind == 0:
                return 'org.thpd1.Manager', 'Explain', GLib.Variant('(s)', (rng.choice(knob_names + [junk()]),))
            if kind == 1:
                pairs = {rng.choice(knob_names + [junk()]): rng.choice(values + [junk()])
                         for _ in range(rng.randrange(0, 4))}
                duration = rng.choice([0, 1, 10**6, 2**64 - 1, 366 * 24 * 3600 * 10**6])
                return 'org.thpd1.Manager', 'SetOverride', GLib.Variant('(a{ss}t)', (pairs, duration))
            if kind == 2:
                return 'org.thpd1.Manager', 'ClearOverride', None
            if kind == 3:
                unit = rng.choice(['redis.service', 'x', '.service', 'a/b.service', junk() + '.service', junk()])
                return 'org.thpd1.Manager', 'Await', GLib.Variant('(s)', (unit,))
            if kind == 4:
                return 'org.thpd1.Manager', 'ListPolicies', None
            if kind == 5:
                return 'org.freedesktop.DBus.Properties', 'GetAll', GLib.Variant('(s)', ('org.thpd1.Manager',))
            if kind == 6:
                prop = rng.choice(['Knobs', 'Status', 'Override', 'Nope', junk()])
                return 'org.freedesktop.DBus.Properties', 'Get', GLib.Variant('(ss)', ('org.thpd1.Manager', prop))
            if kind == 7:
                return ('org.freedesktop.DBus.Properties', 'Set',
                        GLib.Variant('(ssv)', ('org.thpd1.Manager', 'Status', GLib.Variant('s', junk()))))
            if kind == 8:
                # Wrong signatures for the real methods.
                member = rng.choice(['Explain', 'SetOverride', 'Await', 'Reload', 'ClearOverride'])
                params = rng.choice([GLib.Variant('(i)', (rng.randrange(-2**31, 2**31),)),
                                     GLib.Variant('(ss)', (junk(), junk())),
                                     GLib.Variant('(a{sv})', ({'enabled': GLib.Variant('s', 'never')},)),
                                     GLib.Variant('(t)', (rng.randrange(2**64),)),
                                     GLib.Variant('(a{ss})', ({'enabled': 'never'},))])
                return 'org.thpd1.Manager', member, params
            if kind == 9:
                return 'org.thpd1.Manager', rng.choice(['Nope', 'explain', 'X' * 200]), None
            if kind == 10:
                return 'org.freedesktop.DBus.Introspectable', 'Introspect', None
            return 'org.thpd1.Manager', 'Reload', None

        def call(connection, interface, member, params):
            try:
                connection.call_sync('org.thpd1', '/org/thpd1', interface, member, params, None,
                                     Gio.DBusCallFlags.NONE, 10000, None)
            except GLib.Error as e:
                # Errors are answers; only a missing answer (timeout, no owner) is a failure.
                if 'Timeout' in e.message or 'NoReply' in str(e) or 'ServiceUnknown' in str(e):
                    raise AssertionError(f'{member}{params}: {e.message}') from e
                return False
            except (TypeError, ValueError):
                return False  # a name Gio itself refuses to send
            return True

        connection = Gio.DBusConnection.new_for_address_sync(address, flags, None, None)
        self.addCleanup(connection.close_sync, None)

        # Warm-up: 1,000 calls, then RSS is the reference.
        for _ in range(1000):
            call(connection, *random_call())
        connection.call_sync('org.thpd1', '/org/thpd1', 'org.thpd1.Manager', 'ClearOverride', None, None,
                             Gio.DBusCallFlags.NONE, 10000, None)
        self.wait_knobs(BASELINE)
        warm = rss_kib(thpd.pid)

        answered = 0
        for _ in range(9000):
            answered += call(connection, *random_call())
        self.assertGreater(answered, 0, 'no random call succeeded: the generator is broken')
        self.ping(thpd)

        # 500 Await callers on connections of their own, waiting for a unit that never starts,
        # then gone. Each must be dropped (thpd logs it at debug level).
        log_size = len(thpd.log())
        waiters = []
        for _ in range(500):
            c = Gio.DBusConnection.new_for_address_sync(address, flags, None, None)
            c.call('org.thpd1', '/org/thpd1', 'org.thpd1.Manager', 'Await', GLib.Variant('(s)', (WAIT_UNIT,)),
                   None, Gio.DBusCallFlags.NONE, -1, None, None, None)
            c.flush_sync(None)
            waiters.append(c)
        wait_until(lambda: thpd.log()[log_size:].count(': waiting for its policy.') >= 500, LONG_TIMEOUT,
                   lambda: self._describe(f'500 pending Await calls, have '
                                          f'{thpd.log()[log_size:].count(": waiting for its policy.")}'))
        for c in waiters:
            c.close_sync(None)
        wait_until(lambda: thpd.log()[log_size:].count(' left the bus.') >= 500, LONG_TIMEOUT,
                   lambda: self._describe(f'500 Await callers dropped, have '
                                          f'{thpd.log()[log_size:].count(" left the bus.")}'))

        # Still serving: an Await whose unit does start is answered.
        self.start_unit(WAIT_UNIT)
        result = connection.call_sync('org.thpd1', '/org/thpd1', 'org.thpd1.Manager', 'Await',
                                      GLib.Variant('(s)', (WAIT_UNIT,)), None, Gio.DBusCallFlags.NONE, 10000, None)
        self.assertEqual(result.unpack(), (True, 'wait.conf'))
        self.stop_unit(WAIT_UNIT)

        # The override the random calls left is cleared; the units decide again.
        connection.call_sync('org.thpd1', '/org/thpd1', 'org.thpd1.Manager', 'ClearOverride', None, None,
                             Gio.DBusCallFlags.NONE, 10000, None)
        self.wait_knobs(dict(BASELINE, **{'khugepaged/pages_to_scan': '4096'}))
        self.start_unit(APP)
        self.wait_knobs(APPLIED)
        self.stop_unit(APP)
        self.wait_knobs(BASELINE)
        report(self, f'{answered} of 9,000 random calls succeeded, the rest got errors')
        self.assert_rss_flat(warm, rss_kib(thpd.pid), 'over 9,000 random calls and 500 awaiters')
        self.assert_baseline_record()
        self.assertEqual(self.stop_and_check_baseline(thpd), 0)


if __name__ == '__main__':
    thpdtest.main()
