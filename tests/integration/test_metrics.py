# SPDX-License-Identifier: LGPL-2.1-or-later
"""Prometheus metrics end to end: thpd-ctl metrics, the metrics file, and node_exporter.

thpd --user on the test stack with thpd.conf's [Metrics] TextfilePath= in a scratch textfile
directory. What a fleet sees is asserted where it sees it:

- thpd-ctl metrics passes "promtool check metrics" (Debian's prometheus) and carries the state:
  knob values with the policy file and unit as labels, policies, units, pools, broken policies;
  the metrics file holds the same text, mode 0644 although thpd runs with umask 077.
- Debian's prometheus-node-exporter, started by the test as uid 65534 on a free port of
  127.0.0.1 with only its textfile collector, is scraped over HTTP: thpd's series appear,
  follow a unit that starts and stops, and vanish when thpd stops (the file is removed).
- The file is rewritten when its text changes and only then: start/stop cycles of a policy's
  unit cost two rewrites each (the applies in between change nothing), unit churn outside
  policies and an override set twice to the same value cost none.
- A directory that does not exist is reported once, and the file appears at the first change
  after it does; a reload that moves TextfilePath= removes the old file.
- A compaction storm played into a scratch procfs (test_storm.FakeKernel) shows in the storm
  phase and counters.

Run as root:
    PYTHONPATH=tests THPD_BIN=build/src/daemon/thpd THPD_CTL_BIN=build/src/ctl/thpd-ctl
        /usr/bin/python3 -B tests/integration/test_metrics.py -v
"""

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import unittest
import urllib.error
import urllib.request
from pathlib import Path

import test_storm
import thpdtest
from thpdtest import ThpdTestCase, wait_until

NODE_EXPORTER = shutil.which('prometheus-node-exporter') or shutil.which('node_exporter')
PROMTOOL = shutil.which('promtool')
NOBODY = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', '--']

REDIS_POLICY = """\
[Policy]
Units=redis-server.service
[TransparentHugePages]
Enabled=never
Defrag=never
"""

PG_POLICY = """\
[Policy]
Units=postgresql.service
[TransparentHugePages]
Enabled=never
[HugeTLB]
Pages=16
"""

BROKEN_POLICY = """\
[Policy]
Units=broken.service
[TransparentHugePages]
Enabled=sometimes
"""

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text):
    """The samples of an exposition as (name, {label: value}, float); comments skipped."""
    samples = []
    for line in text.splitlines():
        if not line or line.startswith('#'):
            continue
        match = SAMPLE.match(line)
        if not match:
            raise AssertionError(f'not a sample line: {line!r}')
        labels = dict(LABEL.findall(match.group(2) or ''))
        samples.append((match.group(1), labels, float(match.group(3))))
    return samples


def value(samples, name, **labels):
    """The value of the one series of name whose labels include labels, or None if none."""
    found = [v for n, l, v in samples if n == name and all(l.get(k) == w for k, w in labels.items())]
    if len(found) > 1:
        raise AssertionError(f'{len(found)} series {name} {labels}')
    return found[0] if found else None


def free_port():
    """A TCP port of 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class NodeExporter:
    """prometheus-node-exporter as uid 65534 with only its textfile collector, on a free port of
    127.0.0.1; scrape() fetches /metrics."""

    def __init__(self, textfile_dir, log_path):
        self.log_path = log_path
        self.process = None
        # Another program may take the port between free_port() and the bind: try again.
        for _ in range(5):
            self.port = free_port()
            with open(log_path, 'wb') as log:
                self.process = subprocess.Popen(
                    [*NOBODY, NODE_EXPORTER, f'--web.listen-address=127.0.0.1:{self.port}',
                     '--collector.disable-defaults', '--collector.textfile',
                     f'--collector.textfile.directory={textfile_dir}'],
                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
            try:
                wait_until(self._answers, 10, lambda: f'node_exporter on port {self.port}:\n{self.log()}')
                return
            except AssertionError:
                if self.process.poll() is None:
                    raise
        raise AssertionError(f'node_exporter never started:\n{self.log()}')

    def log(self):
        return Path(self.log_path).read_text(errors='replace')

    def _answers(self):
        if self.process.poll() is not None:
            raise AssertionError(f'node_exporter exited with {self.process.returncode}:\n{self.log()}')
        try:
            self.scrape()
            return True
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return False

    def scrape(self):
        with urllib.request.urlopen(f'http://127.0.0.1:{self.port}/metrics', timeout=thpdtest.DEFAULT_TIMEOUT) as response:
            return response.read().decode()

    def close(self):
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class MetricsTestCase(ThpdTestCase):

    @classmethod
    def setUpClass(cls):
        for tool, what in ((os.environ.get('THPD_CTL_BIN'), 'THPD_CTL_BIN (thpd-ctl)'),
                           (PROMTOOL, 'promtool (Debian: prometheus)'),
                           (NODE_EXPORTER, 'node_exporter (Debian: prometheus-node-exporter)'),
                           (shutil.which('setpriv'), 'setpriv')):
            if not tool or not os.access(tool, os.X_OK):
                raise unittest.SkipTest(f'needs {what}')
        super().setUpClass()

    def setUp(self):
        super().setUp()
        # thpd.service runs thpd with UMask=0077; node_exporter runs as another user.
        old_umask = os.umask(0o077)
        self.addCleanup(os.umask, old_umask)
        self.tmp.chmod(0o711)
        self.textfile_dir = self.tmp / 'textfile'
        self.textfile_dir.mkdir()
        self.textfile_dir.chmod(0o755)
        self.prom = self.textfile_dir / 'thpd.prom'
        self.write_metrics_config(self.prom)

    def write_metrics_config(self, path, extra=''):
        self.config_path.write_text(f'[Metrics]\nTextfilePath={path}\n{extra}')

    def ctl(self, *args):
        proc = self.stack.run(os.environ['THPD_CTL_BIN'], '--user', *args, check=False)
        self.assertEqual(proc.returncode, 0, self._describe(f'thpd-ctl {" ".join(args)}: {proc.stderr}'))
        return proc.stdout

    def metrics(self):
        return self.ctl('metrics')

    def promtool_check(self, text):
        proc = subprocess.run([PROMTOOL, 'check', 'metrics'], input=text, capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, f'promtool check metrics:\n{proc.stdout}{proc.stderr}\n{text}')

    def file_text(self):
        try:
            return self.prom.read_text()
        except FileNotFoundError:
            return None

    def wait_file(self, predicate, what):
        """Waits until the metrics file's samples satisfy predicate; returns them."""
        def check():
            text = self.file_text()
            return parse(text) if text is not None and predicate(parse(text)) else None
        return wait_until(check, thpdtest.DEFAULT_TIMEOUT,
                          lambda: self._describe(f'the metrics file to show {what}; it holds:\n{self.file_text()}'))

    @staticmethod
    def rewrites(daemon):
        return len(re.findall(r'^Metrics file \S+ written', daemon.log(), re.MULTILINE))

    def assert_rewrites(self, daemon, expected):
        """thpd logs a rewrite after the rename, so the file can be seen before its log line: waits
        for the count to reach expected, then asserts it did not pass it."""
        wait_until(lambda: self.rewrites(daemon) >= expected, thpdtest.DEFAULT_TIMEOUT,
                   lambda: f'{expected} metrics file rewrites in the log; it has {self.rewrites(daemon)}:\n{daemon.log()}')
        self.assertEqual(self.rewrites(daemon), expected, daemon.log())


class MetricsTest(MetricsTestCase):

    def test_the_state_as_metrics(self):
        self.write_policy('redis.conf', REDIS_POLICY)
        self.write_policy('postgresql.conf', PG_POLICY)
        broken = self.write_policy('broken.conf', BROKEN_POLICY)
        # Running before thpd: it keeps what it mapped, so it needs a restart.
        self.start_unit('postgresql.service')
        self.start_thpd()
        self.start_unit('redis-server.service')
        self.wait_knobs(enabled='never', defrag='never')
        self.wait_pool(16)

        text = self.metrics()
        self.promtool_check(text)
        m = parse(text)
        self.assertEqual(value(m, 'thpd_systemd_manager_ready'), 1)
        self.assertEqual(value(m, 'thpd_last_apply_errors'), 0)
        self.assertGreaterEqual(value(m, 'thpd_knob_writes_total'), 2)
        self.assertEqual(value(m, 'thpd_knob_info', knob='defrag', value='never', target='never', baseline='madvise',
                               source='policy', policy='redis.conf', unit='redis-server.service'), 1)
        enabled = [l for n, l, _ in m if n == 'thpd_knob_info' and l['knob'] == 'enabled']
        self.assertEqual(len(enabled), 1)
        self.assertIn((enabled[0]['policy'], enabled[0]['unit']),
                      (('redis.conf', 'redis-server.service'), ('postgresql.conf', 'postgresql.service')))
        self.assertEqual(value(m, 'thpd_knob_info', knob='shmem_enabled', source='baseline', policy='', unit=''), 1)
        self.assertEqual(value(m, 'thpd_knob_value', knob='khugepaged/max_ptes_none'), 511)
        self.assertEqual(value(m, 'thpd_policies_loaded'), 2)
        self.assertEqual(value(m, 'thpd_policy_files_invalid'), 1)
        self.assertEqual(value(m, 'thpd_policy_problems', file=str(broken), severity='error'), 1)
        self.assertEqual(value(m, 'thpd_policy_active', policy='redis.conf'), 1)
        self.assertEqual(value(m, 'thpd_active_unit_info', policy='postgresql.conf', unit='postgresql.service'), 1)
        self.assertEqual(value(m, 'thpd_unit_needs_restart_info', unit='postgresql.service', policy='postgresql.conf'),
                         1)
        pool = {'page_size': '2M', 'node': 'all'}
        self.assertEqual(value(m, 'thpd_hugetlb_pool_baseline_pages', **pool), 0)
        self.assertEqual(value(m, 'thpd_hugetlb_pool_requested_pages', **pool), 16)
        self.assertEqual(value(m, 'thpd_hugetlb_pool_target_pages', **pool), 16)
        self.assertEqual(value(m, 'thpd_hugetlb_pool_allocated_pages', **pool), 16)
        self.assertEqual(value(m, 'thpd_hugetlb_pool_shortfall_pages', **pool), 0)
        self.assertEqual(value(m, 'thpd_storm_detection_enabled'), 1)
        self.assertEqual(value(m, 'thpd_storm_phase', kind='direct-compaction', phase='calm'), 1)

        # The file holds the same text, readable by node_exporter's user.
        wait_until(lambda: self.file_text() == self.metrics(), thpdtest.DEFAULT_TIMEOUT,
                   lambda: f'the metrics file to hold what thpd-ctl metrics prints; it holds:\n{self.file_text()}')
        self.assertEqual(self.prom.stat().st_mode & 0o7777, 0o644)
        self.assertFalse(Path(f'{self.prom}.tmp').exists())

        # An override shows as the source, its expiry as a timestamp.
        self.ctl('override', 'khugepaged/pages_to_scan=1024', '--for=1h')
        m = self.wait_file(lambda m: value(m, 'thpd_override_knobs') == 1, 'the override')
        self.assertEqual(value(m, 'thpd_knob_info', knob='khugepaged/pages_to_scan', value='1024', source='override'), 1)
        self.assertAlmostEqual(value(m, 'thpd_override_expiry_timestamp_seconds'), time.time() + 3600, delta=60)
        self.ctl('override', '--clear')
        self.wait_file(lambda m: value(m, 'thpd_override_knobs') == 0, 'no override')

    def test_node_exporter_serves_thpd_series(self):
        self.write_policy('redis.conf', REDIS_POLICY)
        exporter = NodeExporter(self.textfile_dir, self.tmp / 'node_exporter.log')
        self.addCleanup(exporter.close)
        daemon = self.start_thpd()

        def scraped(predicate, what):
            def check():
                m = parse(exporter.scrape())
                return m if predicate(m) else None
            return wait_until(check, thpdtest.DEFAULT_TIMEOUT,
                              lambda: self._describe(f'node_exporter to serve {what}; it serves:\n'
                                                     + '\n'.join(l for l in exporter.scrape().splitlines()
                                                                 if 'thpd' in l or 'textfile' in l)))

        m = scraped(lambda m: value(m, 'thpd_policy_active', policy='redis.conf') == 0, "thpd's series")
        self.assertEqual(value(m, 'node_textfile_scrape_error'), 0)
        self.assertIsNotNone(value(m, 'node_textfile_mtime_seconds'))
        self.assertEqual(value(m, 'thpd_build_info'), 1)

        self.start_unit('redis-server.service')
        m = scraped(lambda m: value(m, 'thpd_knob_info', knob='defrag', value='never') == 1, 'defrag=never')
        self.assertEqual(value(m, 'thpd_knob_info', knob='defrag', source='policy', policy='redis.conf',
                               unit='redis-server.service'), 1)
        self.assertEqual(value(m, 'thpd_active_unit_info', policy='redis.conf', unit='redis-server.service'), 1)
        self.assertEqual(value(m, 'node_textfile_scrape_error'), 0)

        self.stop_unit('redis-server.service')
        scraped(lambda m: value(m, 'thpd_knob_info', knob='defrag', value='madvise', source='baseline') == 1,
                'defrag back at its baseline')

        # A stopped thpd leaves no series that look current.
        daemon.stop()
        self.assertIsNone(self.file_text())
        m = scraped(lambda m: not any(n.startswith('thpd_') for n, _, _ in m), "no thpd series")
        self.assertEqual(value(m, 'node_textfile_scrape_error'), 0)

    def test_rewritten_on_change_only(self):
        cycles = 10
        self.write_policy('redis.conf', REDIS_POLICY)
        self.add_barrier_policy()
        daemon = self.start_thpd()
        self.wait_file(lambda m: value(m, 'thpd_systemd_manager_ready') == 1, 'the units listed')
        self.assert_rewrites(daemon, 1)
        # Held open: the file thpd replaces (a temporary renamed over it, never written in
        # place) must end unlinked with its old text. An inode number alone can be reused.
        first = open(self.prom, 'rb')
        self.addCleanup(first.close)
        first_text = first.read()
        rewrites = self.rewrites(daemon)

        # Units no policy matches, and an override set twice to the same value: applies, but
        # nothing a metric shows changes the second time.
        for i in range(cycles):
            self.start_unit(f'unrelated-{i}.service')
            self.stop_unit(f'unrelated-{i}.service')
        self.ctl('override', 'khugepaged/pages_to_scan=1024')
        after_override = self.wait_file(lambda m: value(m, 'thpd_override_knobs') == 1, 'the override')
        self.ctl('override', '--replace', 'khugepaged/pages_to_scan=1024')
        self.ctl('override', '--clear')
        self.wait_file(lambda m: value(m, 'thpd_override_knobs') == 0, 'no override')
        self.barrier()
        # The file follows the knob in the same apply: wait for it, not only for the knob.
        self.wait_file(lambda m: value(m, 'thpd_knob_info', knob='khugepaged/defrag', value='1') == 1,
                       'the barrier undone')
        self.assertIsNotNone(after_override)
        # Override on, off, barrier unit started and stopped.
        self.assert_rewrites(daemon, rewrites + 4)
        self.assertEqual(os.fstat(first.fileno()).st_nlink, 0, 'the first file was not replaced')
        first.seek(0)
        self.assertEqual(first.read(), first_text, 'the first file was written in place')

        # A policy's unit: a start and a stop change the file; the applies for the unit's
        # other state changes (job queued, running, job done, deactivating) do not.
        rewrites = self.rewrites(daemon)
        applies = daemon.log().count('redis-server.service: ')
        started = time.monotonic()
        for _ in range(cycles):
            self.start_unit('redis-server.service')
            self.wait_file(lambda m: value(m, 'thpd_policy_active', policy='redis.conf') == 1, 'redis active')
            self.stop_unit('redis-server.service')
            self.wait_file(lambda m: value(m, 'thpd_policy_active', policy='redis.conf') == 0, 'redis inactive')
        elapsed = time.monotonic() - started
        thpdtest.assert_settles(daemon.pid, daemon.bus_address)
        self.assert_rewrites(daemon, rewrites + 2 * cycles)
        unit_events = daemon.log().count('redis-server.service: ') - applies
        written = self.rewrites(daemon) - rewrites
        print(f'\n{cycles} start/stop cycles in {elapsed:.1f} s: {unit_events} unit events, '
              f'{written} metrics file rewrites', file=sys.stderr)

    def test_missing_directory_and_reload(self):
        self.write_policy('redis.conf', REDIS_POLICY)
        later = self.tmp / 'later'
        self.write_metrics_config(later / 'thpd.prom')
        daemon = self.start_thpd()
        daemon.wait_log(rf'Cannot write the metrics file {re.escape(str(later))}/thpd.prom: No such file or directory')
        for _ in range(2):
            self.start_unit('redis-server.service')
            self.wait_knobs(defrag='never')
            self.stop_unit('redis-server.service')
            self.wait_knobs(defrag='madvise')
        self.assertEqual(daemon.log().count('Cannot write the metrics file'), 1, daemon.log())

        later.mkdir(mode=0o755)
        self.start_unit('redis-server.service')
        daemon.wait_log(rf'Metrics file {re.escape(str(later))}/thpd.prom written again')
        self.assertTrue((later / 'thpd.prom').exists())

        # A reload moves the file: the old one goes, the new one counts the reload.
        self.write_metrics_config(self.prom)
        daemon.signal(signal.SIGHUP)
        self.wait_file(lambda m: value(m, 'thpd_reloads_total') == 1, 'one reload')
        self.assertFalse((later / 'thpd.prom').exists())
        # And no file at all.
        self.write_metrics_config('')
        self.ctl('reload')
        wait_until(lambda: not self.prom.exists(), thpdtest.DEFAULT_TIMEOUT, 'the metrics file to be removed')
        self.promtool_check(self.metrics())

    def test_bad_settings(self):
        self.write_metrics_config('relative/thpd.prom')
        daemon = self.start_thpd()
        daemon.wait_log(r'invalid value for TextfilePath=: "relative/thpd.prom" \(an absolute path ending in \.prom')
        self.assertEqual(list(self.textfile_dir.iterdir()), [])


class StormMetricsTest(MetricsTestCase, test_storm.StormTestCase):
    """Storm phase and counters, with a storm played into a scratch procfs."""

    def test_storm_counters(self):
        self.write_metrics_config(self.prom, test_storm.storm_config(Action='mitigate'))
        daemon = self.start_thpd()
        self.wait_file(lambda m: value(m, 'thpd_storm_phase', kind='direct-compaction', phase='calm') == 1, 'calm')

        self.fake.set_shape(test_storm.COMPACTION_STORM)
        m = self.wait_file(lambda m: value(m, 'thpd_storm_phase', kind='direct-compaction', phase='storm') == 1,
                           'a compaction storm')
        self.assertEqual(value(m, 'thpd_storms_detected_total', kind='direct-compaction'), 1)
        self.assertAlmostEqual(value(m, 'thpd_storm_last_detected_timestamp_seconds', kind='direct-compaction'),
                               time.time(), delta=30)
        self.assertEqual(value(m, 'thpd_storm_action_info', action='mitigate'), 1)
        m = self.wait_file(lambda m: value(m, 'thpd_storm_mitigation_level') == 1, 'mitigation step 1')
        self.assertEqual(value(m, 'thpd_storm_mitigation_steps_total'), 1)
        self.assertEqual(value(m, 'thpd_knob_info', knob='defrag', value='defer', source='mitigation'), 1)

        self.fake.set_shape(test_storm.CALM)
        m = self.wait_file(lambda m: value(m, 'thpd_storm_phase', kind='direct-compaction', phase='calm') == 1 and
                           value(m, 'thpd_storm_mitigation_level') == 0, 'calm again, mitigation lifted')
        self.assertEqual(value(m, 'thpd_storms_detected_total', kind='direct-compaction'), 1)
        self.assertGreater(value(m, 'thpd_storm_seconds_total', kind='direct-compaction'), 0.5)
        self.assertEqual(value(m, 'thpd_storm_mitigation_steps_total'), 1)
        self.promtool_check(self.file_text())
        # As in test_storm: a scratch procfs has no PSI trigger, so thpd looks every 200 ms
        # (IdlePollInterval=) and would never pass the steady-state check.
        daemon.stop()
        self.assertIsNone(self.file_text())


if __name__ == '__main__':
    thpdtest.main()
