# SPDX-License-Identifier: LGPL-2.1-or-later
"""The D-Bus API org.thpd1 and the D-Bus verbs of thpd-ctl, on the real stack.

A private systemd --user manager and its session bus (thpdtest.Stack), thpd --user on a scratch
sysfs tree, units started with systemd-run --user. Every property, method and signal is used
through thpd-ctl and busctl; error names are checked with python3-dbus, which sees them (busctl
and thpd-ctl show only the message). The interface XML in data/ is compared with what the
running daemon introspects as.

Run as root:
    PYTHONPATH=tests THPD_BIN=build/src/daemon/thpd THPD_CTL_BIN=build/src/ctl/thpd-ctl
        /usr/bin/python3 -B tests/integration/test_api.py -v
"""

import json
import os
import pty
import re
import select
import signal
import subprocess
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import dbus

import thpdtest
from thpdtest import ThpdTestCase, wait_until

SOURCE_ROOT = Path(os.environ.get('THPD_SOURCE_ROOT', Path(__file__).resolve().parents[2]))
INTERFACE_XML = SOURCE_ROOT / 'data' / 'org.thpd1.Manager.xml'

BUS_NAME = 'org.thpd1'
BUS_PATH = '/org/thpd1'
INTERFACE = 'org.thpd1.Manager'

REDIS_POLICY = """\
[Policy]
Description=Redis forks to persist
Units=redis-server.service
[TransparentHugePages]
Enabled=never
Defrag=never
[HugeTLB]
Pages=16
"""

PG_POLICY = """\
[Policy]
Units=postgresql.service
[TransparentHugePages]
Enabled=never
"""

LOOSE_POLICY = """\
[Policy]
Units=jvm-app.service
[TransparentHugePages]
Enabled=madvise
Defrag=defer
"""

# An Enabled= value the kernel does not know: the file does not load.
BROKEN_POLICY = """\
[Policy]
Units=broken.service
[TransparentHugePages]
Enabled=sometimes
"""

PROPERTIES = ('Version', 'Knobs', 'ActivePolicies', 'HugeTLBPools', 'NeedsRestart', 'IsolatedServices', 'BlanketSince',
              'BlanketServices', 'Override', 'OverrideExpiresAt', 'StormState', 'Storms', 'SizeStats', 'StormAction', 'Status', 'PolicyDiagnostics',
              'DriftConflicts', 'RecentDrift', 'Ownership', 'KnobNotes')
# The JSON key of each property (thpd-ctl status --json, show --json).
JSON_KEYS = {'Version': 'version', 'Knobs': 'knobs', 'ActivePolicies': 'active_policies',
             'HugeTLBPools': 'hugetlb_pools', 'NeedsRestart': 'needs_restart',
             'IsolatedServices': 'isolated_services', 'BlanketSince': 'blanket_since',
             'BlanketServices': 'blanket_services', 'Override': 'override',
             'OverrideExpiresAt': 'override_expires_at', 'StormState': 'storm_state', 'Storms': 'storms',
             'SizeStats': 'size_stats', 'StormAction': 'storm_action', 'Status': 'status', 'PolicyDiagnostics': 'policy_diagnostics',
             'DriftConflicts': 'drift_conflicts', 'RecentDrift': 'recent_drift', 'Ownership': 'ownership',
             'KnobNotes': 'knob_notes'}
STORM_KINDS = ('direct-compaction', 'khugepaged', 'kcompactd')
STORM_PHASES = ('calm', 'suspect', 'storm', 'cooling')
ANSI_ESCAPE = re.compile(r'\x1b\[')
MIB = 1024 * 1024


def ctl_bin():
    return os.environ['THPD_CTL_BIN']


def ctl_argv(*args):
    return [ctl_bin(), '--user', *args]


def busctl_json(stack, *args):
    """busctl --user --json=short ARGS; returns the parsed output."""
    return json.loads(stack.run('busctl', '--user', '--json=short', *args).stdout)


def busctl_property(stack, name):
    return busctl_json(stack, 'get-property', BUS_NAME, BUS_PATH, INTERFACE, name)['data']


def as_python(value):
    """python3-dbus values as plain Python ones, for comparisons with JSON."""
    if isinstance(value, (dbus.Array, list, dbus.Struct, tuple)):
        return [as_python(v) for v in value]
    if isinstance(value, (dbus.Dictionary, dict)):
        return {str(k): as_python(v) for k, v in value.items()}
    if isinstance(value, dbus.Boolean):
        return bool(value)
    if isinstance(value, (dbus.String, dbus.ObjectPath, dbus.Signature)):
        return str(value)
    if isinstance(value, dbus.Double):
        return float(value)
    if isinstance(value, (dbus.Byte, dbus.Int16, dbus.Int32, dbus.Int64, dbus.UInt16, dbus.UInt32, dbus.UInt64)):
        return int(value)
    return value


class ApiTestCase(ThpdTestCase):
    """Helpers shared by the tests of the API (and imported by test_await.py)."""

    @classmethod
    def setUpClass(cls):
        if not os.access(os.environ.get('THPD_CTL_BIN', ''), os.X_OK):
            raise thpdtest.unittest.SkipTest('THPD_CTL_BIN does not name the thpd-ctl executable')
        super().setUpClass()

    def ctl(self, *args, check=True):
        """thpd-ctl --user ARGS; check: assert it exits 0."""
        proc = self.stack.run(*ctl_argv(*args), check=False)
        if check:
            self.assertEqual(proc.returncode, 0, self._describe(f'thpd-ctl {" ".join(args)}: {proc.stderr}'))
        return proc

    def ctl_json(self, *args):
        return json.loads(self.ctl('--json', *args).stdout)

    def ctl_fails(self, status, *args):
        """Asserts thpd-ctl ARGS exits with status; returns its stderr."""
        proc = self.ctl(*args, check=False)
        self.assertEqual(proc.returncode, status, f'thpd-ctl {" ".join(args)}: {proc.stdout}{proc.stderr}')
        return proc.stderr

    def connect(self):
        """A python3-dbus connection to the stack's bus."""
        bus = dbus.bus.BusConnection(self.stack.bus_address)
        self.addCleanup(bus.close)
        return bus

    def call(self, bus, method, signature='', *args, timeout=10):
        return bus.call_blocking(BUS_NAME, BUS_PATH, INTERFACE, method, signature, list(args), timeout=timeout)

    def assert_dbus_error(self, name, bus, method, signature='', *args, message=None):
        """Asserts the call fails with error name (and a message matching the regex message);
        returns the message."""
        with self.assertRaises(dbus.exceptions.DBusException) as caught:
            self.call(bus, method, signature, *args)
        self.assertEqual(caught.exception.get_dbus_name(), name, caught.exception.get_dbus_message())
        text = caught.exception.get_dbus_message()
        if message:
            self.assertRegex(text, message)
        return text

    def property(self, bus, name):
        return as_python(bus.call_blocking(BUS_NAME, BUS_PATH, 'org.freedesktop.DBus.Properties', 'Get', 'ss',
                                           [INTERFACE, name]))

    def knob_rows(self):
        """The Knobs property via busctl, by knob name."""
        return {row[0]: row for row in busctl_property(self.stack, 'Knobs')}


class InterfaceTest(ApiTestCase):
    """data/org.thpd1.Manager.xml is what the daemon implements."""

    @staticmethod
    def members(interface):
        def emits(prop):
            for a in prop.findall('annotation'):
                if a.get('name') == 'org.freedesktop.DBus.Property.EmitsChangedSignal':
                    return a.get('value')
            return 'true'

        return {
            'methods': {m.get('name'): [(a.get('name'), a.get('type'), a.get('direction', 'in'))
                                        for a in m.findall('arg')] for m in interface.findall('method')},
            'signals': {s.get('name'): [(a.get('name'), a.get('type')) for a in s.findall('arg')]
                        for s in interface.findall('signal')},
            'properties': {p.get('name'): (p.get('type'), p.get('access'), emits(p))
                           for p in interface.findall('property')},
        }

    def test_introspection_matches_the_interface_xml(self):
        self.start_thpd()
        introspected = self.stack.run('busctl', '--user', 'introspect', '--xml-interface', BUS_NAME, BUS_PATH).stdout
        running = ET.fromstring(introspected).find(f"interface[@name='{INTERFACE}']")
        documented = ET.parse(INTERFACE_XML).getroot().find(f"interface[@name='{INTERFACE}']")
        self.assertIsNotNone(running, introspected)
        self.assertIsNotNone(documented)
        self.assertEqual(self.members(running), self.members(documented))
        self.assertEqual(set(self.members(documented)['properties']), set(PROPERTIES))

    def test_every_member_of_the_xml_is_documented(self):
        interface = ET.parse(INTERFACE_XML).getroot().find(f"interface[@name='{INTERFACE}']")
        undocumented = []
        for element in interface.iter():
            if element.tag not in ('method', 'signal', 'property', 'arg'):
                continue
            docs = [a for a in element.findall('annotation') if a.get('name') == 'org.gtk.GDBus.DocString']
            if not docs or len(docs[0].get('value', '')) < 10:
                undocumented.append(f'{element.tag} {element.get("name")}')
        self.assertEqual(undocumented, [])


class PropertiesTest(ApiTestCase):
    """Every property, read with busctl and thpd-ctl (status, show, --json)."""

    def setUp(self):
        super().setUp()
        self.write_policy('redis.conf', REDIS_POLICY)
        self.write_policy('postgresql.conf', PG_POLICY)
        # Running before thpd applies its policy: it keeps what it mapped, so it needs a restart.
        self.start_unit('postgresql.service')
        self.thpd = self.start_thpd()
        self.start_unit('redis-server.service')
        self.wait_knobs(enabled='never', defrag='never')
        self.wait_pool(16)
        self.version = subprocess.run([os.environ['THPD_BIN'], '--version'], capture_output=True, text=True,
                                      check=True).stdout.split()[-1]

    def test_properties_through_busctl(self):
        bus = self.connect()
        everything = busctl_json(self.stack, 'call', BUS_NAME, BUS_PATH, 'org.freedesktop.DBus.Properties', 'GetAll',
                                 's', INTERFACE)['data'][0]
        self.assertEqual(set(everything), set(PROPERTIES))

        self.assertEqual(busctl_property(self.stack, 'Version'), self.version)
        knobs = self.knob_rows()
        # Both policies vote "never": either may be named, with its own unit.
        self.assertEqual(knobs['enabled'][:5], ['enabled', 'never', 'never', 'madvise', 'policy'])
        self.assertIn(knobs['enabled'][5:], (['postgresql.conf', 'postgresql.service'],
                                             ['redis.conf', 'redis-server.service']))
        self.assertEqual(knobs['defrag'], ['defrag', 'never', 'never', 'madvise', 'policy', 'redis.conf',
                                           'redis-server.service'])
        self.assertEqual(knobs['shmem_enabled'], ['shmem_enabled', 'never', 'never', 'never', 'baseline', '', ''])
        self.assertEqual(knobs['khugepaged/max_ptes_none'][1:5], ['511', '511', '511', 'baseline'])
        # Every knob file of the scratch kernel is listed, applied as the file reads.
        for name, row in knobs.items():
            self.assertEqual(row[1], self.kernel.read_knob(name), name)
        self.assertIn('hugepages-64kB/enabled', knobs)

        self.assertEqual(sorted(busctl_property(self.stack, 'ActivePolicies')),
                         [['postgresql.conf', ['postgresql.service']], ['redis.conf', ['redis-server.service']]])
        pools = busctl_property(self.stack, 'HugeTLBPools')
        self.assertEqual(len(pools), 1)
        self.assertEqual(pools[0][:5], [2048, -1, 16, 16, self.kernel.read_pool('free_hugepages')])
        self.assertEqual(pools[0][5], '')
        self.assertEqual(busctl_property(self.stack, 'NeedsRestart'), [['postgresql.service', 'postgresql.conf']])
        self.assertEqual(busctl_property(self.stack, 'Override'), {})
        self.assertEqual(busctl_property(self.stack, 'OverrideExpiresAt'), 0)
        # No Scope=service policy with Enabled=always here: no blanket, nothing counted.
        self.assertEqual(busctl_property(self.stack, 'BlanketSince'), 0)
        self.assertEqual(busctl_property(self.stack, 'BlanketServices'), [])
        self.assertIn(busctl_property(self.stack, 'StormState'), STORM_PHASES)
        self.assertIn(busctl_property(self.stack, 'StormAction'), ('log', 'mitigate'))
        for kind, phase, figures in busctl_property(self.stack, 'Storms'):
            self.assertIn(kind, STORM_KINDS)
            self.assertIn(phase, STORM_PHASES)
            self.assertTrue(all(isinstance(v, (int, float)) for v in figures.values()), figures)
        # The scratch kernel's per-size counters, all 0; 2M inherits the global enabled.
        sizes = busctl_property(self.stack, 'SizeStats')
        self.assertEqual([row[:2] for row in sizes], [[64, self.kernel.read_knob('hugepages-64kB/enabled')],
                                                      [2048, self.kernel.read_knob('enabled')]])
        self.assertEqual(sizes[0][2]['nr_anon'], 0)
        self.assertEqual(busctl_property(self.stack, 'Status'), self.thpd.status)
        # The scratch kernel has no command line and no mTHP collapse: at most that max_ptes_none
        # drives the shrinker, where the tree has shrink_underused.
        shrinker = [['khugepaged/max_ptes_none', 'shrinker']] if self.kernel.knob_path('shrink_underused').exists() else []
        self.assertEqual([n[:2] for n in busctl_property(self.stack, 'KnobNotes')], shrinker)
        self.assertIn('2 active policies', self.thpd.status)
        # Whose value: a row per knob, in the order of Knobs, then the pool; what a policy holds
        # is thpd's, naming it, and the rest the baseline's.
        ownership = busctl_property(self.stack, 'Ownership')
        self.assertEqual([row[0] for row in ownership], list(knobs) + ['hugepages-2048kB/nr_hugepages'])
        whose = {row[0]: row[1:] for row in ownership}
        self.assertEqual(whose['defrag'], ['thpd', 'redis.conf for redis-server.service'])
        self.assertEqual(whose['enabled'], ['thpd', ' for '.join(knobs['enabled'][5:])])
        self.assertEqual(whose['shmem_enabled'], ['baseline', ''])
        self.assertEqual(whose['hugepages-2048kB/nr_hugepages'][0], 'thpd')
        self.assertRegex(whose['hugepages-2048kB/nr_hugepages'][1], r'^\S+\.conf for \S+\.service')

        # python3-dbus sees the same values.
        for name in PROPERTIES:
            self.assertEqual(self.property(bus, name), busctl_property(self.stack, name), name)

    def test_status_json_and_show_json_match_the_properties(self):
        def or_none(value):
            return value if value != '' else None

        for verb in ('status', 'show'):
            data = self.ctl_json(verb)
            # status adds what GetUnitUsage says, which is no property.
            self.assertEqual(set(data), {JSON_KEYS[p] for p in PROPERTIES} |
                             {'override_expires_at_usec', 'blanket_since_usec'} |
                             ({'unit_usage'} if verb == 'status' else set()), verb)
            self.assertEqual(data['version'], self.version)
            self.assertEqual(data['status'], busctl_property(self.stack, 'Status'))
            self.assertEqual([[k['knob'], k['applied'], k['target'], k['baseline'], k['source'], k['policy'], k['unit']]
                              for k in data['knobs']],
                             [[or_none(v) for v in row] for row in busctl_property(self.stack, 'Knobs')])
            self.assertEqual([[a['policy'], a['units']] for a in data['active_policies']],
                             busctl_property(self.stack, 'ActivePolicies'))
            self.assertEqual([[p['page_size_kb'], -1 if p['node'] is None else p['node'], p['target'], p['allocated'],
                               p['free'], p['shortfall']] for p in data['hugetlb_pools']],
                             [row[:5] + [or_none(row[5])] for row in busctl_property(self.stack, 'HugeTLBPools')])
            self.assertEqual(data['needs_restart'], [{'unit': 'postgresql.service', 'policy': 'postgresql.conf'}])
            self.assertEqual(data['override'], {})
            self.assertIsNone(data['override_expires_at'])
            self.assertIsNone(data['override_expires_at_usec'])
            self.assertIsNone(data['blanket_since'])
            self.assertIsNone(data['blanket_since_usec'])
            self.assertEqual(data['blanket_services'], [])
            self.assertEqual(data['storm_state'], busctl_property(self.stack, 'StormState'))
            self.assertEqual(data['storm_action'], busctl_property(self.stack, 'StormAction'))
            self.assertEqual([[s['kind'], s['phase']] for s in data['storms']],
                             [row[:2] for row in busctl_property(self.stack, 'Storms')])
            self.assertEqual(data['policy_diagnostics'], [])
            if verb == 'status':
                # Sleeping processes: no THP where the host's cgroup v2 hierarchy has the memory
                # controller; else thpd cannot tell, as the scratch procfs does not show the
                # processes (test_usage.py gives thpd the real one), and thpd-ctl reads them
                # itself: they are the test user's own, in the real /proc.
                self.assertEqual([(u['unit'], u['policy']) for u in data['unit_usage']],
                                 [('postgresql.service', 'postgresql.conf'), ('redis-server.service', 'redis.conf')])
                for u in data['unit_usage']:
                    self.assertIn((u['source'], u['anon_thp_bytes'], u['read_by']),
                                  (('cgroup-v2', 0, 'thpd'), ('smaps', 0, 'thpd-ctl')), u)

        subset = self.ctl_json('show', 'StormState', 'Version')
        self.assertEqual(set(subset), {'storm_state', 'version'})

    def test_status_text(self):
        out = self.ctl('status').stdout
        self.assertIsNone(ANSI_ESCAPE.search(out), 'no colour when stdout is not a terminal')
        lines = out.splitlines()
        self.assertEqual(lines[0], f'● thpd {self.version} — {self.thpd.status}')
        self.assertIn('  Policies: postgresql.conf (postgresql.service)', lines)
        self.assertIn('            redis.conf (redis-server.service)', lines)
        self.assertRegex(out, r'\n  Knobs: +enabled +never +\(baseline madvise\) +(redis\.conf for redis-server|'
                              r'postgresql\.conf for postgresql)\.service\n')
        self.assertRegex(out, r'\n +defrag +never +\(baseline madvise\) +redis\.conf for redis-server\.service\n')
        self.assertRegex(out, r'\n +shmem_enabled +never +baseline\n')
        self.assertIn('  Pools:    2M  16/16 pages', out)
        self.assertRegex(out, r'\n  Storms: +\w+.*\(action: (log|mitigate)\)\n')
        # As in test_status_json_and_show_json_match_the_properties: from cgroup v2, or read by
        # thpd-ctl where thpd cannot tell.
        usage = r'0 B anon, 0 B shmem \((cgroup-v2|smaps, read by thpd-ctl)\)'
        self.assertRegex(out, rf'\n  THP held: postgresql\.service    {usage}\n +redis-server\.service  {usage}\n')
        self.assertTrue({'  Restart needed: postgresql.service (postgresql.conf applied after it started)',
                         '  Restart needed: postgresql.service (postgresql.conf applied after it started; it holds no '
                         'THP from before)'} & set(lines), out)
        self.assertNotIn('Override:', out)

    def status_on_a_terminal(self, **env):
        """thpd-ctl status with stdout on a pseudo-terminal; returns what it wrote."""
        primary, secondary = pty.openpty()
        self.addCleanup(os.close, primary)
        with os.fdopen(secondary, 'wb') as tty:
            proc = subprocess.run(ctl_argv('status'), env=dict(self.stack.env, TERM='xterm', **env), stdout=tty,
                                  stderr=subprocess.PIPE, check=False)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        out = b''
        while select.select([primary], [], [], 0.5)[0]:
            try:
                chunk = os.read(primary, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        return out.decode()

    def test_status_colour_only_on_a_terminal(self):
        coloured = self.status_on_a_terminal()
        self.assertRegex(coloured, r'\x1b\[0;3[23]m●')
        self.assertIn('enabled', coloured)
        self.assertIsNone(ANSI_ESCAPE.search(self.status_on_a_terminal(NO_COLOR='1')))

    def test_show_text(self):
        lines = self.ctl('show').stdout.splitlines()
        for line in lines:
            self.assertRegex(line, r'^[A-Za-z][\w.\-/+]*=', line)
        self.assertIn(f'Version={self.version}', lines)
        self.assertIn('Knobs.enabled.Applied=never', lines)
        self.assertIn('Knobs.defrag.Baseline=madvise', lines)
        self.assertIn('Knobs.defrag.Policy=redis.conf', lines)
        self.assertIn('Knobs.khugepaged/defrag.Source=baseline', lines)
        self.assertIn('ActivePolicies=postgresql.conf redis.conf', lines)
        self.assertIn('ActivePolicies.redis.conf.Units=redis-server.service', lines)
        self.assertIn('HugeTLBPools.2048kB.Target=16', lines)
        self.assertIn('NeedsRestart=postgresql.service', lines)
        self.assertIn('Override=', lines)
        self.assertIn('OverrideExpiresAt=0', lines)
        self.assertIn('PolicyDiagnostics=', lines)
        self.assertEqual(self.ctl('show', 'StormAction').stdout, f'StormAction={busctl_property(self.stack, "StormAction")}\n')
        self.assertIn('Unknown property', self.ctl_fails(2, 'show', 'NoSuchThing'))

    def test_restart_clears_needs_restart(self):
        self.stop_unit('postgresql.service')
        wait_until(lambda: busctl_property(self.stack, 'NeedsRestart') == [], message='NeedsRestart to empty')
        self.start_unit('postgresql.service')
        wait_until(lambda: ['postgresql.conf', ['postgresql.service']] in busctl_property(self.stack, 'ActivePolicies'),
                   message='postgresql.conf active again')
        self.assertEqual(busctl_property(self.stack, 'NeedsRestart'), [])
        self.assertNotIn('Restart needed', self.ctl('status').stdout)


class PoliciesTest(ApiTestCase):
    """ListPolicies, list, cat, Explain, explain, Reload, reload."""

    def setUp(self):
        super().setUp()
        self.low = self.tmp / 'low.d'
        self.low.mkdir(mode=0o755)
        self.write_policy('redis.conf', REDIS_POLICY.replace('Enabled=never', 'Enabled=madvise'), self.low)
        self.write_policy('mongodb.conf', PG_POLICY.replace('postgresql', 'mongod'), self.low)
        self.write_policy('redis.conf', REDIS_POLICY)
        (self.policy_dir / 'mongodb.conf').symlink_to('/dev/null')
        self.write_policy('jvm.conf', LOOSE_POLICY)
        self.write_policy('broken.conf', BROKEN_POLICY)

    def policies(self):
        return {row[0]: row for row in busctl_json(self.stack, 'call', BUS_NAME, BUS_PATH, INTERFACE,
                                                       'ListPolicies')['data'][0]}

    def test_list_policies_and_cat(self):
        self.start_thpd(f'--policy-dir={self.low}')
        self.start_unit('redis-server.service')
        self.wait_knobs(enabled='never')
        rows = self.policies()
        self.assertEqual(sorted(rows), ['broken.conf', 'jvm.conf', 'mongodb.conf', 'redis.conf'])
        self.assertEqual(rows['redis.conf'], ['redis.conf', str(self.policy_dir / 'redis.conf'), '',
                                              'Redis forks to persist', True, ['redis-server.service'],
                                              [str(self.low / 'redis.conf')]])
        self.assertEqual(rows['mongodb.conf'], ['mongodb.conf', '', str(self.policy_dir / 'mongodb.conf'), '', False, [],
                                                [str(self.low / 'mongodb.conf')]])
        self.assertEqual(rows['jvm.conf'][4:6], [False, ['jvm-app.service']])
        self.assertEqual(rows['broken.conf'][1:6], [str(self.policy_dir / 'broken.conf'), '', '', False, []])

        listed = {p['policy']: p for p in self.ctl_json('list')['policies']}
        self.assertEqual({n: p['state'] for n, p in listed.items()},
                         {'broken.conf': 'invalid', 'jvm.conf': 'inactive', 'mongodb.conf': 'masked',
                          'redis.conf': 'active'})
        self.assertEqual(listed['redis.conf']['overrides'], [str(self.low / 'redis.conf')])
        self.assertEqual(listed['mongodb.conf']['overrides'], [str(self.low / 'mongodb.conf')])
        self.assertIsNone(listed['mongodb.conf']['path'])
        self.assertEqual(listed['broken.conf']['diagnostics'],
                         [{'file': str(self.policy_dir / 'broken.conf'), 'line': 4, 'severity': 'error',
                           'message': "invalid value 'sometimes' for Enabled=; accepted: never, madvise, always"}])

        text = self.ctl('list').stdout.splitlines()
        self.assertRegex(text[0], r'^NAME +STATE +UNITS +PATH$')
        self.assertRegex(text[-1], r'^4 policy files listed, 1 invalid\.$')
        self.assertTrue(any(re.match(r'^redis\.conf +active +redis-server\.service +' + re.escape(str(self.policy_dir)), line)
                            for line in text), text)
        bare = self.ctl('list', '--no-legend').stdout.splitlines()
        self.assertEqual(len(bare), 4)
        self.assertTrue(bare[0].startswith('broken.conf '))

        out = self.ctl('cat', 'redis').stdout
        self.assertEqual(out, f'# {self.policy_dir}/redis.conf\n# overrides {self.low}/redis.conf\n{REDIS_POLICY}')
        self.assertEqual(self.ctl('cat', 'redis.conf').stdout, out)
        masked = self.ctl('cat', 'mongodb').stdout
        self.assertEqual(masked, f'# mongodb.conf is masked by {self.policy_dir}/mongodb.conf\n'
                                 f'# masks {self.low}/mongodb.conf\n')
        data = self.ctl_json('cat', 'redis')
        self.assertEqual(data['content'], REDIS_POLICY)
        self.assertEqual(data['diagnostics'], [])
        self.assertIsNone(self.ctl_json('cat', 'mongodb')['content'])
        self.assertEqual(data['path'], str(self.policy_dir / 'redis.conf'))
        self.assertIn('No policy named nothing.conf', self.ctl_fails(1, 'cat', 'nothing'))

    def test_explain(self):
        self.start_thpd()
        self.start_unit('redis-server.service')
        self.start_unit('jvm-app.service')
        self.wait_knobs(enabled='never', defrag='never')

        votes = busctl_json(self.stack, 'call', BUS_NAME, BUS_PATH, INTERFACE, 'Explain', 's', 'enabled')['data'][0]
        self.assertEqual(sorted(votes), sorted([
            ['enabled', 'madvise', 'baseline', '', '', False],
            ['enabled', 'never', 'policy', 'redis.conf', 'redis-server.service', True],
            ['enabled', 'madvise', 'policy', 'jvm.conf', 'jvm-app.service', False],
        ]))

        everything = busctl_json(self.stack, 'call', BUS_NAME, BUS_PATH, INTERFACE, 'Explain', 's', '')['data'][0]
        knobs = sorted({v[0] for v in everything})
        self.assertEqual(knobs, sorted(self.knob_rows()))
        for knob in knobs:
            self.assertEqual(sum(1 for v in everything if v[0] == knob and v[5]), 1, knob)

        explained = self.ctl_json('explain', 'defrag')['knobs']
        self.assertEqual(len(explained), 1)
        self.assertEqual((explained[0]['knob'], explained[0]['target'], explained[0]['source']), ('defrag', 'never', 'policy'))
        self.assertEqual(sorted((v['value'], v['source'], v['wins']) for v in explained[0]['votes']),
                         [('defer', 'policy', False), ('madvise', 'baseline', False), ('never', 'policy', True)])
        text = self.ctl('explain', 'enabled').stdout
        self.assertIn('enabled = never, from redis.conf for redis-server.service', text)
        self.assertRegex(text, r'\n  → never +redis\.conf for redis-server\.service\n')
        self.assertRegex(text, r'\n    madvise +jvm\.conf for jvm-app\.service\n')
        self.assertEqual(len(self.ctl_json('explain')['knobs']), len(knobs))

        # An override outvotes every policy, and says so.
        self.ctl('override', 'enabled=always')
        self.wait_knobs(enabled='always')
        winner = [v for v in self.ctl_json('explain', 'enabled')['knobs'][0]['votes'] if v['wins']]
        self.assertEqual(winner, [{'value': 'always', 'source': 'override', 'policy': None, 'unit': None, 'wins': True}])

    def test_reload(self):
        self.start_thpd()
        self.write_policy('zz-new.conf', '[Policy]\nUnits=new-app.service\n[Khugepaged]\nDefrag=0\n')
        self.assertNotIn('zz-new.conf', self.policies())
        # broken.conf is still broken: reload says so, and loads the rest.
        self.assertIn('broken.conf:4: error:', self.ctl_fails(1, 'reload'))
        self.assertIn('zz-new.conf', self.policies())
        self.start_unit('new-app.service')
        self.wait_knobs({'khugepaged/defrag': '0'})

        (self.policy_dir / 'zz-new.conf').unlink()
        self.stack.run('busctl', '--user', 'call', BUS_NAME, BUS_PATH, INTERFACE, 'Reload')
        self.assertNotIn('zz-new.conf', self.policies())
        self.wait_knobs({'khugepaged/defrag': '1'})


class NewKnobsTest(ApiTestCase):
    """Per-size shmem_enabled and the 0/1 knobs (issue 46): two policies that disagree, the
    stricter value in the file, explain naming it, and the baseline once both units stop."""

    def setUp(self):
        super().setUp()
        self.write_policy('pg.conf', '[Policy]\nUnits=pg-app.service\n[TransparentHugePages]\n'
                                     'ShmemEnabled.64K=advise\nUseZeroPage=1\n')
        self.write_policy('shm.conf', '[Policy]\nUnits=shm-app.service\n[TransparentHugePages]\n'
                                      'ShmemEnabled.64K=always\nUseZeroPage=0\nShrinkUnderused=no\n')

    def test_two_policies_and_the_baseline(self):
        shmem64 = 'hugepages-64kB/shmem_enabled'
        self.start_thpd()
        for knob in (shmem64, 'hugepages-2048kB/shmem_enabled', 'shrink_underused', 'use_zero_page'):
            self.assertIn(knob, self.knob_rows())
        self.assertEqual(self.ctl_json('explain', shmem64)['knobs'][0]['source'], 'baseline')

        self.start_unit('shm-app.service')
        self.wait_knobs({shmem64: 'always', 'use_zero_page': '0', 'shrink_underused': '0'})

        self.start_unit('pg-app.service')
        self.wait_knobs({shmem64: 'advise', 'use_zero_page': '1', 'shrink_underused': '0'})
        explained = self.ctl_json('explain', shmem64)['knobs'][0]
        self.assertEqual((explained['target'], explained['source']), ('advise', 'policy'))
        self.assertEqual(sorted((v['value'], v['source'], v['policy'], v['wins']) for v in explained['votes']),
                         [('advise', 'policy', 'pg.conf', True), ('always', 'policy', 'shm.conf', False),
                          ('never', 'baseline', None, False)])
        self.assertIn(f'{shmem64} = advise, from pg.conf for pg-app.service', self.ctl('explain', shmem64).stdout)
        winner = [v for v in self.ctl_json('explain', 'use_zero_page')['knobs'][0]['votes'] if v['wins']]
        self.assertEqual([(v['value'], v['policy']) for v in winner], [('1', 'pg.conf')])
        knobs = {k['knob']: k for k in self.ctl_json('status')['knobs']}
        self.assertEqual({n: (knobs[n]['applied'], knobs[n]['baseline'], knobs[n]['policy'])
                          for n in (shmem64, 'shrink_underused', 'use_zero_page')},
                         {shmem64: ('advise', 'never', 'pg.conf'), 'shrink_underused': ('0', '1', 'shm.conf'),
                          'use_zero_page': ('1', '1', 'pg.conf')})
        self.assertRegex(self.ctl('status').stdout, r'\n +hugepages-64kB/shmem_enabled +advise +\(baseline never\) +pg\.conf')
        metrics = self.ctl('metrics').stdout
        self.assertRegex(metrics, r'thpd_knob_info\{[^}]*knob="hugepages-64kB/shmem_enabled"[^}]*value="advise"')
        self.assertRegex(metrics, r'thpd_knob_value\{[^}]*knob="shrink_underused"[^}]*\} 0\n')

        self.stop_unit('pg-app.service')
        self.wait_knobs({shmem64: 'always', 'use_zero_page': '0'})
        self.stop_unit('shm-app.service')
        self.wait_knobs({shmem64: 'never', 'use_zero_page': '1', 'shrink_underused': '1',
                         'hugepages-2048kB/shmem_enabled': 'inherit'})


class OverrideTest(ApiTestCase):
    """SetOverride, ClearOverride and expiry, through thpd-ctl and busctl."""

    def test_override_until_cleared(self):
        self.write_policy('redis.conf', REDIS_POLICY)
        self.start_thpd()
        self.start_unit('redis-server.service')
        self.wait_knobs(enabled='never', defrag='never')

        self.ctl('override', 'enabled=always', 'khugepaged/defrag=0')
        self.assert_knobs({'enabled': 'always', 'defrag': 'never', 'khugepaged/defrag': '0'})
        self.assertEqual(busctl_property(self.stack, 'Override'), {'enabled': 'always', 'khugepaged/defrag': '0'})
        self.assertEqual(busctl_property(self.stack, 'OverrideExpiresAt'), 0)
        self.assertEqual(self.knob_rows()['enabled'][2:7], ['always', 'madvise', 'override', '', ''])
        self.assertIn('  Override: enabled=always khugepaged/defrag=0 until cleared\n', self.ctl('status').stdout)

        # A new override replaces the old one as a whole.
        self.stack.run('busctl', '--user', 'call', BUS_NAME, BUS_PATH, INTERFACE, 'SetOverride', 'a{ss}t', '1',
                       'defrag', 'always', '0')
        self.assert_knobs({'enabled': 'never', 'defrag': 'always', 'khugepaged/defrag': '1'})
        self.assertEqual(busctl_property(self.stack, 'Override'), {'defrag': 'always'})

        self.ctl('override', '--clear')
        self.assert_knobs(enabled='never', defrag='never')
        self.assertEqual(busctl_property(self.stack, 'Override'), {})
        # Clearing when there is nothing to clear succeeds.
        self.stack.run('busctl', '--user', 'call', BUS_NAME, BUS_PATH, INTERFACE, 'ClearOverride')
        self.ctl('override', '--clear')

    def test_override_expires_and_the_knobs_revert(self):
        # What an override with an end shows, checked while it cannot have ended: under load
        # (ASan, two cores) the calls took longer than a 2 s override once lasted.
        self.start_thpd()
        before = time.time()
        self.ctl('override', 'enabled=never', 'defrag=defer', '--for=1h')
        self.assert_knobs(enabled='never', defrag='defer')
        expires = busctl_property(self.stack, 'OverrideExpiresAt') / 1e6
        self.assertGreaterEqual(expires, before + 3600 - 0.1)
        self.assertLessEqual(expires, time.time() + 3600 + 0.1)
        self.assertRegex(self.ctl('status').stdout, r'Override: enabled=never defrag=defer until .* \(in (59min|1h)')
        self.assertEqual(self.ctl_json('show', 'Override')['override'], {'enabled': 'never', 'defrag': 'defer'})

        # --for= sets the end of the whole set: 2 s from now, and then the knobs revert.
        before = time.time()
        self.ctl('override', 'enabled=never', 'defrag=defer', '--for=2s')
        self.wait_knobs(enabled='madvise', defrag='madvise', timeout=2 + thpdtest.DEFAULT_TIMEOUT)
        self.assertGreaterEqual(time.time(), before + 2 - 0.1, 'the override ended before its time')
        self.assertEqual(busctl_property(self.stack, 'Override'), {})
        self.assertEqual(busctl_property(self.stack, 'OverrideExpiresAt'), 0)
        self.assertEqual(self.knob_rows()['enabled'][4], 'baseline')
        self.daemons[0].stop()


class BadArgumentsTest(ApiTestCase):
    """Every bad argument gets a D-Bus error a person understands, and the daemon stays up."""

    def setUp(self):
        super().setUp()
        # A knob thpd knows that this (scratch) kernel lacks.
        self.kernel.knob_path('khugepaged/max_ptes_shared').unlink()
        self.thpd = self.start_thpd()
        self.bus = self.connect()

    def set_override(self, values, duration=0, **kwargs):
        return self.assert_dbus_error(kwargs.pop('error'), self.bus, 'SetOverride', 'a{ss}t', values, dbus.UInt64(duration),
                                      **kwargs)

    def test_set_override_errors(self):
        self.set_override({'bogus': 'never'}, error='org.thpd1.Error.UnknownKnob', message=r'"bogus".*enabled, defrag')
        self.set_override({'khugepaged/max_ptes_shared': '0'}, error='org.thpd1.Error.NotSupported',
                          message='khugepaged/max_ptes_shared')
        self.set_override({'enabled': 'sometimes'}, error='org.thpd1.Error.InvalidValue',
                          message=r'"sometimes" is not a value for enabled; accepted: never, madvise, always')
        self.set_override({'khugepaged/max_ptes_none': '512'}, error='org.thpd1.Error.InvalidValue',
                          message=r'out of range.*0-511')
        self.set_override({'khugepaged/max_ptes_none': '-1'}, error='org.thpd1.Error.InvalidValue')
        self.set_override({}, error='org.freedesktop.DBus.Error.InvalidArgs', message='ClearOverride')
        year = 365 * 24 * 3600 * 10**6
        self.set_override({'enabled': 'never'}, year + 1, error='org.thpd1.Error.InvalidDuration', message='one year')
        self.set_override({'enabled': 'never'}, 2**64 - 1, error='org.thpd1.Error.InvalidDuration')
        # One bad knob spoils the whole call: nothing is half-applied.
        self.set_override({'enabled': 'never', 'defrag': 'nope'}, error='org.thpd1.Error.InvalidValue')
        self.assert_knobs(enabled='madvise', defrag='madvise')
        self.assertEqual(self.property(self.bus, 'Override'), {})

        # The longest duration allowed is fine.
        self.call(self.bus, 'SetOverride', 'a{ss}t', {'enabled': 'never'}, dbus.UInt64(year))
        self.wait_knobs(enabled='never')

    def test_huge_strings_are_refused_briefly(self):
        junk = 'x' * MIB
        for text in (self.set_override({junk: 'never'}, error='org.thpd1.Error.UnknownKnob'),
                     self.set_override({'enabled': junk}, error='org.thpd1.Error.InvalidValue'),
                     self.assert_dbus_error('org.thpd1.Error.UnknownKnob', self.bus, 'Explain', 's', junk),
                     self.assert_dbus_error('org.freedesktop.DBus.Error.InvalidArgs', self.bus, 'Await', 's', junk)):
            self.assertLess(len(text), 1000)
            self.assertIn('xxx…', text)
        # Multi-byte characters are cut between characters, not inside one.
        text = self.set_override({'enabled': 'é' * 1000}, error='org.thpd1.Error.InvalidValue')
        self.assertIn('éé…', text)

    def test_wrong_signatures(self):
        for method, signature, args in (('SetOverride', 's', ['enabled']),
                                        ('SetOverride', 'a{ss}', [{'enabled': 'never'}]),
                                        ('SetOverride', 'a{ss}i', [{'enabled': 'never'}, -5]),
                                        ('Explain', 'i', [1]),
                                        ('Explain', '', []),
                                        ('Await', 'ss', ['a.service', 'b']),
                                        ('Reload', 's', ['now'])):
            self.assert_dbus_error('org.freedesktop.DBus.Error.InvalidArgs', self.bus, method, signature, *args)
        self.assert_dbus_error('org.freedesktop.DBus.Error.UnknownMethod', self.bus, 'Frobnicate')
        self.assert_dbus_error('org.freedesktop.DBus.Error.InvalidArgs', self.bus, 'Await', 's', 'no-suffix')
        self.assert_dbus_error('org.thpd1.Error.UnknownKnob', self.bus, 'Explain', 's', 'bogus')
        self.assert_dbus_error('org.thpd1.Error.NotSupported', self.bus, 'Explain', 's', 'khugepaged/max_ptes_shared')
        with self.assertRaises(dbus.exceptions.DBusException) as caught:
            self.bus.call_blocking(BUS_NAME, BUS_PATH, 'org.freedesktop.DBus.Properties', 'Set', 'ssv',
                                   [INTERFACE, 'StormAction', dbus.String('mitigate', variant_level=1)])
        self.assertIn(caught.exception.get_dbus_name(), ('org.freedesktop.DBus.Error.PropertyReadOnly',
                                                          'org.freedesktop.DBus.Error.AccessDenied'))

    def test_ctl_usage_and_errors(self):
        self.assertIn('Unknown command', self.ctl_fails(2, 'frobnicate'))
        self.assertIn('not KNOB=VALUE', self.ctl_fails(2, 'override', 'enabled'))
        self.assertIn('needs KNOB=VALUE', self.ctl_fails(2, 'override'))
        self.assertIn('not a duration', self.ctl_fails(2, 'override', 'enabled=never', '--for=-5s'))
        self.assertIn('not a duration', self.ctl_fails(2, 'override', 'enabled=never', '--for=soon'))
        self.assertIn('longer than an override may last (365d)', self.ctl_fails(2, 'override', 'enabled=never', '--for=400d'))
        self.assertIn('takes no KNOB=VALUE', self.ctl_fails(2, 'override', '--clear', 'enabled=never'))
        self.assertIn('does not take --for', self.ctl_fails(2, 'status', '--for=1s'))
        self.assertIn('does not take --json', self.ctl_fails(2, 'reload', '--json'))
        self.assertIn('Wrong number of arguments', self.ctl_fails(2, 'cat'))
        self.assertIn('Unknown knob "bogus"', self.ctl_fails(2, 'override', 'bogus=1'))
        self.assertIn('Unknown knob "bogus"', self.ctl_fails(2, 'explain', 'bogus'))
        self.assertIn('"sometimes" is not a value for enabled', self.ctl_fails(2, 'override', 'enabled=sometimes'))
        self.assertIn('This kernel has no khugepaged/max_ptes_shared', self.ctl_fails(1, 'explain', 'khugepaged/max_ptes_shared'))
        self.assertIn('enabled is given more than once', self.ctl_fails(2, 'override', 'enabled=never', 'enabled=always'))

    def tearDown(self):
        # Whatever was thrown at it, the daemon runs and answers.
        self.assertTrue(self.thpd.running, self._describe('thpd is still running'))
        self.stack.run('busctl', '--user', 'call', BUS_NAME, BUS_PATH, 'org.freedesktop.DBus.Peer', 'Ping')
        self.assertEqual(busctl_property(self.stack, 'Version'), self.property(self.bus, 'Version'))
        # And it exits cleanly (under a sanitizer: without leaks).
        self.thpd.stop()
        super().tearDown()


class SignalsTest(ApiTestCase):
    """Applied and PropertiesChanged, followed with thpd-ctl monitor."""

    def start_monitor(self, *args):
        proc = subprocess.Popen(ctl_argv('monitor', *args), env=self.stack.env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        self.addCleanup(proc.wait)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        self.addCleanup(proc.stdout.close)
        self.addCleanup(proc.stderr.close)
        proc.pending = b''
        # The line comes after the matches are in place.
        self.assertIn('Following thpd', self.read_line(proc, stream='stderr'))
        return proc

    @staticmethod
    def read_line(proc, timeout=thpdtest.DEFAULT_TIMEOUT, stream='stdout'):
        """The next line, read from the pipe with os.read(): a buffered reader would swallow
        lines that select() then never reports."""
        fd = getattr(proc, stream).fileno()
        buffered = b'' if stream == 'stderr' else proc.pending
        deadline = time.monotonic() + timeout
        while b'\n' not in buffered:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise AssertionError(f'no line from thpd-ctl monitor within {timeout} s')
            chunk = os.read(fd, 65536)
            if not chunk:
                return ''
            buffered += chunk
        line, _, rest = buffered.partition(b'\n')
        if stream == 'stdout':
            proc.pending = rest
        return line.decode() + '\n'

    def read_until(self, proc, predicate):
        """Reads JSON lines until one matches; returns the lines read."""
        lines = []
        while True:
            line = self.read_line(proc)
            self.assertTrue(line, 'thpd-ctl monitor ended')
            lines.append(json.loads(line))
            if predicate(lines[-1]):
                return lines

    def test_monitor_json(self):
        self.write_policy('redis.conf', REDIS_POLICY)
        self.start_thpd()
        monitor = self.start_monitor('--json')

        self.start_unit('redis-server.service')
        lines = self.read_until(monitor, lambda e: e['signal'] == 'Applied')
        applied = lines[-1]
        self.assertEqual(sorted((c['knob'], c['old'], c['new']) for c in applied['changes']),
                         [('defrag', 'madvise', 'never'), ('enabled', 'madvise', 'never')])
        for change in applied['changes']:
            self.assertIn('redis.conf', change['reason'])
            self.assertIn('redis-server.service', change['reason'])
        self.assertAlmostEqual(applied['time_usec'] / 1e6, time.time(), delta=10)
        changed = self.read_until(monitor, lambda e: e['signal'] == 'PropertiesChanged')[-1]
        self.assertTrue({'knobs', 'active_policies', 'hugetlb_pools', 'status'} <= set(changed['changed']), changed)
        self.assertNotIn('version', changed['changed'])
        self.assertNotIn('storms', changed['changed'])
        self.assertEqual(changed['status'], busctl_property(self.stack, 'Status'))

        # Nothing changes: no signal at all. The override that follows is the marker: its
        # signals come after any the reload would have sent.
        self.ctl('reload')
        self.ctl('override', 'khugepaged/defrag=0')
        marker = self.read_line(monitor)
        self.assertEqual(json.loads(marker)['signal'], 'Applied', marker)
        self.assertEqual(json.loads(marker)['changes'][0]['reason'], 'admin override')
        changed = self.read_until(monitor, lambda e: e['signal'] == 'PropertiesChanged')[-1]
        # khugepaged/defrag becomes thpd's, for the override.
        self.assertEqual(sorted(changed['changed']), ['knobs', 'override', 'ownership'])

        monitor.send_signal(signal.SIGINT)
        self.assertEqual(monitor.wait(5), 0)

    def test_each_change_names_its_properties(self):
        """PropertiesChanged names what changed and nothing else: each step changes one thing."""
        self.start_thpd()
        monitor = self.start_monitor('--json')

        def changed(naming=None):
            return sorted(self.read_until(monitor, lambda e: e['signal'] == 'PropertiesChanged' and
                                          (naming is None or naming in e['changed']))[-1]['changed'])

        # The last announcement of the start may come after READY=1 (it waits out the interval
        # since the first), alone or with this one.
        self.ctl('override', '--for=1h', 'khugepaged/defrag=0')
        self.assertEqual(set(changed(naming='override')) - {'hugetlb_pools', 'status'},
                         {'knobs', 'override', 'override_expires_at', 'ownership'})
        self.ctl('override', '--for=2h', 'khugepaged/defrag=0')
        self.assertEqual(changed(), ['override_expires_at'])

        self.write_config('[Storm]\nAction=mitigate\n')
        self.ctl('reload')
        self.assertEqual(changed(), ['storm_action'])

        broken = self.write_policy('broken.conf', BROKEN_POLICY)
        self.assertIn('broken.conf:4', self.ctl_fails(1, 'reload'))
        self.assertEqual(changed(), ['policy_diagnostics'])
        broken.unlink()
        self.ctl('reload')
        self.assertEqual(changed(), ['policy_diagnostics'])

        # Written behind thpd's back and restored: Knobs too if an announcement fell between
        # the write seen and its restore.
        self.kernel.set_knob('khugepaged/defrag', '1')
        self.assertEqual(set(changed()) - {'knobs'}, {'recent_drift'})
        self.wait_knobs({'khugepaged/defrag': '0'})

        # Cleared: khugepaged/defrag is the baseline's again.
        self.ctl('override', '--clear')
        self.assertEqual(changed(), ['knobs', 'override', 'override_expires_at', 'ownership'])

    def test_monitor_text_and_daemon_restart(self):
        self.write_policy('redis.conf', REDIS_POLICY)
        thpd = self.start_thpd()
        monitor = self.start_monitor()
        self.start_unit('redis-server.service')
        # thpd may still owe the PropertiesChanged of its own start: it sends them at most every
        # 100 ms, and READY=1 comes first.
        line = self.read_line(monitor)
        while ' PropertiesChanged: ' in line:
            line = self.read_line(monitor)
        self.assertRegex(line, r'^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} Applied: (enabled|defrag) madvise → never '
                               r'\(.*redis\.conf for redis-server\.service\); ')
        self.stop_unit('redis-server.service')
        thpd.stop()
        wait_until(lambda: 'Stopped: thpd left the bus' in self.read_line(monitor), message='monitor sees thpd leave')
        self.assertIsNone(monitor.poll(), 'monitor keeps following after thpd left')
        self.start_thpd()
        wait_until(lambda: 'Started: thpd is on the bus' in self.read_line(monitor), message='monitor sees thpd back')
        monitor.send_signal(signal.SIGTERM)
        self.assertEqual(monitor.wait(5), 0)

    def test_monitor_without_daemon(self):
        proc = self.stack.run(*ctl_argv('monitor'), check=False)
        self.assertEqual(proc.returncode, 3)
        self.assertIn("thpd --user", proc.stderr)


class NotRunningTest(ApiTestCase):
    """Exit code 3 and a hint when nobody owns org.thpd1."""

    def test_every_dbus_verb_says_not_running(self):
        for args in (['status'], ['show'], ['list'], ['explain'], ['cat', 'redis'], ['reload'],
                     ['override', 'enabled=never'], ['override', '--clear'], ['await', 'a.service'],
                     ['status', '--json']):
            proc = self.ctl(*args, check=False)
            self.assertEqual(proc.returncode, 3, f'{args}: {proc.stderr}')
            self.assertIn("thpd is not running on the session bus; start it with 'thpd --user'", proc.stderr)
            self.assertEqual(proc.stdout, '')


class UnprivilegedTest(ApiTestCase):
    """A caller that is neither root nor the daemon's user reads everything and changes nothing."""

    stack_allows_other_users = True
    NOBODY = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', '--']

    def as_nobody(self, *argv):
        return self.stack.run(*self.NOBODY, *argv, check=False)

    def dbus_error_as_nobody(self, method, signature='', *args):
        """Calls method as uid 65534 with python3-dbus; returns (error name, message)."""
        script = ('import dbus, json, sys\n'
                  f'bus = dbus.bus.BusConnection({self.stack.bus_address!r})\n'
                  'try:\n'
                  f'    bus.call_blocking({BUS_NAME!r}, {BUS_PATH!r}, {INTERFACE!r}, {method!r}, {signature!r}, '
                  'json.loads(sys.argv[1]))\n'
                  '    print(json.dumps(["", ""]))\n'
                  'except dbus.exceptions.DBusException as e:\n'
                  '    print(json.dumps([e.get_dbus_name(), e.get_dbus_message()]))\n')
        proc = self.as_nobody('/usr/bin/python3', '-c', script, json.dumps(list(args)))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return json.loads(proc.stdout)

    def test_reads_work_and_changes_are_denied(self):
        self.tmp.chmod(0o711)  # so that "cat" can read the policy file as another user
        self.write_policy('redis.conf', REDIS_POLICY)
        thpd = self.start_thpd()
        self.start_unit('redis-server.service')
        self.wait_knobs(enabled='never')

        proc = self.as_nobody('id', '-u')
        self.assertEqual(proc.stdout.strip(), '65534')
        status = self.as_nobody(*ctl_argv('status', '--json'))
        self.assertEqual(status.returncode, 0, status.stderr)
        self.assertEqual(json.loads(status.stdout)['knobs'], self.ctl_json('status')['knobs'])
        for args in (['show'], ['list'], ['explain', 'enabled'], ['cat', 'redis'], ['await', 'redis-server.service']):
            proc = self.as_nobody(*ctl_argv(*args))
            self.assertEqual(proc.returncode, 0, f'{args}: {proc.stderr}')
        proc = self.as_nobody('busctl', '--user', 'get-property', BUS_NAME, BUS_PATH, INTERFACE, 'Status')
        self.assertEqual(proc.returncode, 0, proc.stderr)

        for method, signature, args in (('SetOverride', 'a{ss}t', [{'enabled': 'always'}, 0]),
                                        ('ClearOverride', '', []),
                                        ('Reload', '', [])):
            name, message = self.dbus_error_as_nobody(method, signature, *args)
            self.assertEqual(name, 'org.freedesktop.DBus.Error.AccessDenied', message)
            self.assertIn(f'{method} needs root or uid 0', message)
            self.assertIn('65534', message)

        proc = self.as_nobody(*ctl_argv('override', 'enabled=always'))
        self.assertEqual(proc.returncode, 1)
        self.assertIn('Cannot set the override: SetOverride needs root', proc.stderr)
        proc = self.as_nobody(*ctl_argv('reload'))
        self.assertEqual(proc.returncode, 1)
        self.assert_knobs(enabled='never')
        self.assertEqual(busctl_property(self.stack, 'Override'), {})

        # Root still may.
        self.ctl('override', 'enabled=always')
        self.wait_knobs(enabled='always')
        thpd.stop()


if __name__ == '__main__':
    thpdtest.main()
