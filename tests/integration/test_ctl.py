# SPDX-License-Identifier: LGPL-2.1-or-later
"""thpd-ctl as admins and packagers use it, on the real stack.

- Broken policies are visible where admins look: the PolicyDiagnostics property, the status
  header and its Problems section, list, cat, and reload (which fails on a broken file).
- The conventions people type out of habit: --no-pager, show -p/--property=/--value, help,
  SYSTEMD_COLORS and NO_COLOR, an ASCII fallback outside UTF-8 locales, lines cut at the terminal
  width unless -l/--full.
- One exit-code table, checked verb by verb.
- The hint when thpd answers on the other bus than the one asked.
- override adds to the override in force; --replace starts a new one.
- Every read verb's --json output validates against data/thpd-ctl.schema.json.

Run as root:
    PYTHONPATH=tests THPD_BIN=build/src/daemon/thpd THPD_CTL_BIN=build/src/ctl/thpd-ctl
        /usr/bin/python3 -B tests/integration/test_ctl.py -v
"""

import json
import os
import pty
import re
import select
import subprocess
import time
from pathlib import Path

import jsonschema

import test_api
import thpdtest
from test_api import BUS_NAME, BUS_PATH, INTERFACE, REDIS_POLICY, ApiTestCase, busctl_property, ctl_argv
from thpdtest import wait_until

SCHEMA = json.loads((test_api.SOURCE_ROOT / 'data' / 'thpd-ctl.schema.json').read_text())

# A typo the daemon only warns about: the policy loads, without Enabled=.
TYPO_POLICY = """\
[Policy]
Units=typo.service
[TransparentHugePages]
Enabeld=never
Defrag=never
"""

# An error: the policy does not load.
BROKEN_POLICY = """\
[Policy]
Units=broken.service
[TransparentHugePages]
Enabled=sometimes
"""

BROKEN_MESSAGE = "invalid value 'sometimes' for Enabled=; accepted: never, madvise, always"
TYPO_MESSAGE = 'unknown key Enabeld= in [TransparentHugePages], ignored; did you mean Enabled=?'
NO_BUS = 'unix:path=/nonexistent/thpd-test-no-bus'


def validate(verb, instance):
    """Validates one verb's --json output against $defs/VERB of the schema."""
    jsonschema.validate(instance, {**SCHEMA, '$ref': f'#/$defs/{verb}'}, cls=jsonschema.Draft202012Validator)


def on_terminal(argv, env, columns=None):
    """Runs argv with stdout on a pseudo-terminal; returns (exit status, what it wrote)."""
    primary, secondary = pty.openpty()
    try:
        if columns:
            env = dict(env, COLUMNS=str(columns))
        with os.fdopen(secondary, 'wb') as tty:
            proc = subprocess.run(argv, env=env, stdout=tty, stderr=subprocess.PIPE, check=False)
        out = b''
        while select.select([primary], [], [], 0.5)[0]:
            try:
                chunk = os.read(primary, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(primary)
    return proc.returncode, out.decode().replace('\r\n', '\n')


class DiagnosticsTest(ApiTestCase):
    """A broken policy shows in the D-Bus state, status, list, cat and reload."""

    def setUp(self):
        super().setUp()
        self.write_policy('redis.conf', REDIS_POLICY)
        self.write_policy('typo.conf', TYPO_POLICY)
        self.broken = self.write_policy('broken.conf', BROKEN_POLICY)
        self.typo = self.policy_dir / 'typo.conf'
        self.thpd = self.start_thpd()

    def test_property_status_list_and_cat(self):
        self.assertEqual(sorted(busctl_property(self.stack, 'PolicyDiagnostics')), [
            ['broken.conf', str(self.broken), 4, 'error', BROKEN_MESSAGE],
            ['typo.conf', str(self.typo), 4, 'warning', TYPO_MESSAGE],
        ])
        # The daemon keeps loading a policy with an unknown key (a newer policy on an older thpd).
        states = {p['policy']: p['state'] for p in self.ctl_json('list')['policies']}
        self.assertEqual(states, {'broken.conf': 'invalid', 'redis.conf': 'inactive', 'typo.conf': 'inactive'})

        status = self.ctl('status').stdout.splitlines()
        self.assertRegex(status[0], r'^● thpd \S+ — .*; policy files: 1 error, 1 warning$')
        problems = status.index('  Problems:')
        self.assertEqual(sorted(status[problems + 1:]), sorted([
            f'    {self.broken}:4: error: {BROKEN_MESSAGE}',
            f'    {self.typo}:4: warning: {TYPO_MESSAGE}',
        ]))

        listed = self.ctl('list').stdout.splitlines()
        self.assertIn(f'{self.broken}:4: error: {BROKEN_MESSAGE}', listed)
        self.assertEqual(listed[-1], '3 policy files listed, 1 invalid.')
        bare = self.ctl('list', '--no-legend')
        self.assertEqual(len(bare.stdout.splitlines()), 3, bare.stdout)
        self.assertIn(f'{self.broken}:4: error: {BROKEN_MESSAGE}', bare.stderr)

        cat = self.ctl('cat', 'broken').stdout
        self.assertEqual(cat, f'# {self.broken}\n# {self.broken}:4: error: {BROKEN_MESSAGE}\n{BROKEN_POLICY}')
        self.assertEqual(self.ctl_json('cat', 'typo')['diagnostics'],
                         [{'file': str(self.typo), 'line': 4, 'severity': 'warning', 'message': TYPO_MESSAGE}])

    def test_reload_prints_the_problems_and_fails_on_a_broken_file(self):
        self.broken.unlink()
        self.typo.unlink()
        proc = self.ctl('reload')
        self.assertEqual(proc.stderr, '')
        self.assertEqual(busctl_property(self.stack, 'PolicyDiagnostics'), [])
        self.assertNotIn('Problems:', self.ctl('status').stdout)

        # A warning is printed, and is no failure.
        self.write_policy('typo.conf', TYPO_POLICY)
        proc = self.ctl('reload')
        self.assertEqual(proc.stderr, f'{self.typo}:4: warning: {TYPO_MESSAGE}\n')

        self.write_policy('broken.conf', BROKEN_POLICY)
        stderr = self.ctl_fails(1, 'reload')
        self.assertIn(f'{self.broken}:4: error: {BROKEN_MESSAGE}\n', stderr)
        self.assertIn('1 problem keeps policies from loading; the others apply', stderr)
        # The others do apply.
        self.start_unit('redis-server.service')
        self.wait_knobs(enabled='never')

        self.write_policy('broken.conf', BROKEN_POLICY.replace('sometimes', 'never'))
        self.ctl('reload')
        self.assertEqual([row[0] for row in busctl_property(self.stack, 'PolicyDiagnostics')], ['typo.conf'])

    def test_an_untrusted_file_is_named_though_not_listed(self):
        self.broken.unlink()
        self.typo.unlink()
        loose = self.write_policy('loose.conf', REDIS_POLICY.replace('redis-server', 'loose'))
        loose.chmod(0o666)
        self.ctl_fails(1, 'reload')
        data = self.ctl_json('list')
        self.assertEqual([p['policy'] for p in data['policies']], ['redis.conf'])
        self.assertEqual(data['diagnostics'], [{
            'file': str(loose), 'line': None, 'severity': 'error',
            'message': 'file is writable by group or others (mode 0666): not trusted, ignored'}])
        stderr = self.ctl_fails(1, 'cat', 'loose')
        self.assertIn(f'{loose}: error: file is writable by group or others (mode 0666): not trusted, ignored', stderr)
        self.assertIn('No policy named loose.conf', stderr)


class ConventionsTest(ApiTestCase):
    """What people type out of habit, as systemctl takes it."""

    def setUp(self):
        super().setUp()
        self.write_policy('redis.conf', REDIS_POLICY)
        self.thpd = self.start_thpd()
        self.start_unit('redis-server.service')
        self.wait_knobs(enabled='never')
        self.version = busctl_property(self.stack, 'Version')

    def test_no_pager_property_and_value(self):
        self.assertEqual(self.ctl('--no-pager', 'status').stdout, self.ctl('status').stdout)
        self.assertEqual(self.ctl('show', '-p', 'Version', '--value').stdout, f'{self.version}\n')
        self.assertEqual(self.ctl('show', '--property=Version,StormAction').stdout,
                         f'Version={self.version}\nStormAction={busctl_property(self.stack, "StormAction")}\n')
        self.assertEqual(self.ctl('show', '-p', 'Version', '-p', 'Status').stdout.splitlines()[0],
                         f'Version={self.version}')
        self.assertEqual(self.ctl('show', 'Knobs', '--value').stdout.splitlines()[:2], ['never', 'never'])
        self.assertIn("Unknown property 'Verison'; did you mean 'Version'?", self.ctl_fails(2, 'show', '-p', 'Verison'))
        self.assertIn("does not take --value", self.ctl_fails(2, 'status', '--value'))
        self.assertEqual(set(self.ctl_json('show', '-p', 'Override')), {'override'})

    def test_help(self):
        help_text = self.ctl('help').stdout
        self.assertEqual(help_text, self.ctl('--help').stdout)
        self.assertTrue(help_text.endswith('See thpd-ctl(1) for details.\n'), help_text)
        for line in ('  0  success', '  2  bad usage: an unknown command, option, property or knob, or a bad value',
                     '  3  thpd is not running'):
            self.assertIn(line + '\n', help_text)
        for args in (['frobnicate'], ['cat'], ['status', '--for=1s'], ['--no-such-option']):
            stderr = self.ctl_fails(2, *args)
            self.assertTrue(stderr.rstrip().endswith("See 'thpd-ctl --help' and thpd-ctl(1)."), f'{args}: {stderr}')
        self.assertIn("did you mean 'status'?", self.ctl_fails(2, 'stauts'))

    def test_colours(self):
        env = dict(self.stack.env, TERM='xterm')
        env.pop('NO_COLOR', None)
        # SYSTEMD_COLORS=1 colours even a pipe; NO_COLOR alone does not colour it.
        piped = subprocess.run(ctl_argv('status'), env=dict(env, SYSTEMD_COLORS='1'), capture_output=True, text=True)
        self.assertRegex(piped.stdout, r'\x1b\[0;3[123]m●')
        self.assertNotIn('\x1b[', self.ctl('status').stdout)
        # On a terminal: colour unless SYSTEMD_COLORS=0 or NO_COLOR; SYSTEMD_COLORS=1 wins over NO_COLOR.
        self.assertIn('\x1b[', on_terminal(ctl_argv('status'), env)[1])
        self.assertNotIn('\x1b[', on_terminal(ctl_argv('status'), dict(env, SYSTEMD_COLORS='0'))[1])
        self.assertNotIn('\x1b[', on_terminal(ctl_argv('status'), dict(env, NO_COLOR='1'))[1])
        self.assertIn('\x1b[', on_terminal(ctl_argv('status'), dict(env, NO_COLOR='1', SYSTEMD_COLORS='1'))[1])

    def test_ascii_outside_utf8(self):
        posix = dict(self.stack.env, LC_ALL='POSIX')
        status = subprocess.run(ctl_argv('status'), env=posix, capture_output=True, text=True, check=True).stdout
        self.assertRegex(status.splitlines()[0], r'^\* thpd \S+ - ')
        self.assertTrue(status.isascii(), status)
        explain = subprocess.run(ctl_argv('explain', 'enabled'), env=posix, capture_output=True, text=True,
                                 check=True).stdout
        self.assertRegex(explain, r'\n  -> never +redis\.conf for redis-server\.service\n')
        self.assertRegex(explain, r'\n     madvise +baseline\n')
        self.assertTrue(explain.isascii(), explain)
        # UTF-8, and no locale at all (a service's environment), draw the real glyphs.
        for env in (dict(self.stack.env, LC_ALL='C.UTF-8'), {k: v for k, v in self.stack.env.items()
                                                             if k not in ('LC_ALL', 'LC_CTYPE', 'LANG')}):
            out = subprocess.run(ctl_argv('explain', 'enabled'), env=env, capture_output=True, text=True, check=True)
            self.assertIn('  → never', out.stdout)

    def test_every_verb_ascii_under_c_locale(self):
        """LC_ALL=C: every glyph and dash of every verb from the ASCII table, as systemctl does;
        under a UTF-8 locale the same header draws the real bullet."""
        c = dict(self.stack.env, LC_ALL='C')
        policy = self.policy_dir / 'redis.conf'

        def output(*args, status=0):
            proc = subprocess.run(ctl_argv(*args), env=c, capture_output=True, text=True)
            self.assertEqual(proc.returncode, status, f'thpd-ctl {" ".join(args)}: {proc.stdout}{proc.stderr}')
            text = proc.stdout + proc.stderr
            self.assertTrue(text.isascii(), f'thpd-ctl {" ".join(args)} under LC_ALL=C:\n{text}')
            return text

        self.assertRegex(output('status').splitlines()[0], r'^\* thpd \S+ - ')
        self.assertIn('\n  -> never', output('explain', 'enabled'))
        for args in (('status', '--full'), ('show',), ('list',), ('explain',), ('cat', 'redis.conf'),
                     ('verify', str(policy)), ('metrics',), ('help',), ('--version',), ('reload',),
                     ('--json', 'status'), ('--json', 'list')):
            output(*args)
        output('override', 'enabled=sometimes', status=2)
        output('frobnicate', status=2)
        output('await', 'no-policy.service')
        # monitor: the Applied line an override causes.
        monitor = subprocess.Popen(ctl_argv('monitor'), env=c, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        monitor.pending = b''
        try:
            read_line = test_api.SignalsTest.read_line
            # Printed once its matches are in place.
            self.assertTrue(read_line(monitor, stream='stderr').isascii())
            self.ctl('override', 'defrag=always', '--for=60s')
            lines = [read_line(monitor)]
            while ' Applied: ' not in lines[-1]:
                lines.append(read_line(monitor))
            self.assertIn(' Applied: defrag ', lines[-1])
            self.assertIn(' -> always ', lines[-1])
            self.assertTrue(''.join(lines).isascii(), lines)
        finally:
            monitor.kill()
            monitor.communicate()
        self.ctl('override', '--clear')

        utf8 = subprocess.run(ctl_argv('status'), env=dict(self.stack.env, LC_ALL='C.UTF-8'), capture_output=True,
                              text=True, check=True).stdout
        self.assertTrue(utf8.startswith('● thpd '), utf8)

    def test_lines_cut_at_the_terminal_width(self):
        env = dict(self.stack.env, TERM='dumb')
        status, cut = on_terminal(ctl_argv('status'), env, columns=40)
        self.assertEqual(status, 0)
        lines = cut.splitlines()
        self.assertTrue(all(len(line) <= 40 for line in lines), lines)
        self.assertTrue(any(line.endswith('…') and len(line) == 40 for line in lines), lines)
        status, full = on_terminal(ctl_argv('status', '--full'), env, columns=40)
        self.assertEqual(full, self.ctl('status').stdout)
        self.assertTrue(any(len(line) > 40 for line in full.splitlines()))
        self.assertEqual(on_terminal(ctl_argv('-l', 'status'), env, columns=40)[1], full)
        # A pipe is never cut, and neither is JSON.
        self.assertEqual(subprocess.run(ctl_argv('status'), env=dict(env, COLUMNS='40'), capture_output=True,
                                        text=True).stdout, full)
        self.assertEqual(json.loads(on_terminal(ctl_argv('status', '--json'), env, columns=40)[1])['version'],
                         self.version)
        # Colour sequences take no room, and the line still ends in the normal colour.
        _, coloured = on_terminal(ctl_argv('list'), dict(env, SYSTEMD_COLORS='1'), columns=20)
        for line in coloured.splitlines():
            visible = re.sub(r'\x1b\[[0-9;]*m', '', line)
            self.assertLessEqual(len(visible), 20, line)
            if visible.endswith('…') and '\x1b[' in line:
                self.assertTrue(line.endswith('…\x1b[0m'), repr(line))


class ExitCodesTest(ApiTestCase):
    """The exit-code table of thpd-ctl(1), verb by verb: 0 success, 1 failure, 2 bad usage, 3 thpd
    is not running."""

    def verbs(self):
        text = self.ctl('--help').stdout
        return re.findall(r'(?m)^  ([a-z]+) ', text.split('Commands:')[1].split('Options:')[0])

    def test_every_verb(self):
        self.write_policy('redis.conf', REDIS_POLICY)
        self.write_policy('broken.conf', BROKEN_POLICY)
        good = self.write_policy('good.conf', REDIS_POLICY, self.tmp)
        typo = self.write_policy('typo.conf', TYPO_POLICY, self.tmp)
        self.kernel.knob_path('khugepaged/max_ptes_shared').unlink()

        not_running = {
            'status': [], 'show': [], 'list': [], 'explain': [], 'cat': ['redis'], 'reload': [],
            'override': ['enabled=never'], 'monitor': [], 'await': ['a.service'], 'metrics': [],
        }
        for verb, args in not_running.items():
            self.assertEqual(self.ctl(verb, *args, check=False).returncode, 3, verb)

        self.start_thpd()
        cases = {
            'status': {0: [[]], 2: [['extra']]},
            'show': {0: [[], ['Version'], ['-p', 'Status']], 2: [['NoSuchProperty'], ['-p', 'Bogus']]},
            'list': {0: [[]], 2: [['extra'], ['--value']]},
            'explain': {0: [[], ['enabled']], 1: [['khugepaged/max_ptes_shared']], 2: [['bogus'], ['a', 'b']]},
            'cat': {0: [['redis']], 1: [['nothing']], 2: [[], ['--for=1s', 'redis']]},
            'verify': {0: [[str(good)]], 1: [[str(typo)], [str(good), str(typo)]], 2: [['--for=1s']]},
            'reload': {1: [[]], 2: [['extra']]},
            'override': {0: [['enabled=never']],
                         2: [[], ['enabled'], ['bogus=1'], ['enabled=sometimes'], ['enabled=never', '--for=10x'],
                             ['enabled=never', '--for=100000d'], ['enabled=never', 'enabled=always'],
                             ['--clear', 'enabled=never']]},
            'monitor': {2: [['extra'], ['--for=1s']]},
            'await': {0: [['unrelated.service']], 1: [['--timeout=1s', 'redis-server.service']],
                      2: [[], ['no-suffix'], ['--timeout=0']]},
            'metrics': {0: [[]], 2: [['extra'], ['--json']]},
            'help': {0: [[]], 2: [['extra']]},
        }
        self.assertEqual(sorted(cases), sorted(self.verbs()))
        for verb, by_status in cases.items():
            for status, argvs in by_status.items():
                for args in argvs:
                    proc = self.ctl(verb, *args, check=False)
                    self.assertEqual(proc.returncode, status, f'thpd-ctl {verb} {" ".join(args)}: {proc.stderr}')
        # Started after the failing await above, so that it really had nothing to wait for.
        self.ctl('override', '--clear')
        self.write_policy('broken.conf', BROKEN_POLICY.replace('sometimes', 'never'))
        self.assertEqual(self.ctl('reload', check=False).returncode, 0)


class ManyPoliciesTest(ApiTestCase):
    """status stays a page with many policies active; --full and --json list every one."""

    def test_status_counts_what_it_does_not_list(self):
        names = [f'many-{i:02d}' for i in range(11)]
        for name in names:
            self.write_policy(f'{name}.conf', f'[Policy]\nUnits={name}.service\n[TransparentHugePages]\nDefrag=madvise\n')
        self.start_thpd()
        for name in names:
            self.start_unit(f'{name}.service', 'sleep', '600')
        wait_until(lambda: len(busctl_property(self.stack, 'ActivePolicies')) == len(names), message='11 active policies')

        lines = self.ctl('status').stdout.splitlines()
        listed = [n for n in names if any(line.strip().startswith(f'{n}.conf (') or f' {n}.conf (' in line
                                          for line in lines)]
        self.assertEqual(listed, names[:8], lines)
        self.assertIn('… and 3 more active policies (--full lists them all)', [line.strip() for line in lines])

        full = self.ctl('--full', 'status').stdout
        for name in names:
            self.assertIn(f'{name}.conf ({name}.service)', full)
        self.assertNotIn('more active policies', full)

        self.assertEqual(sorted(p['policy'] for p in self.ctl_json('status')['active_policies']),
                         [f'{n}.conf' for n in names])


class OtherBusTest(ApiTestCase):
    """thpd on one bus, thpd-ctl asking the other: it says so."""

    def test_hints(self):
        self.start_thpd()
        bus = self.stack.bus_address
        # Asked on the system bus; thpd answers on the session bus.
        proc = subprocess.run([test_api.ctl_bin(), 'status'], env=dict(self.stack.env, DBUS_SYSTEM_BUS_ADDRESS=NO_BUS),
                              capture_output=True, text=True)
        self.assertEqual(proc.returncode, 3)
        self.assertIn("a 'thpd --user' answers on the session bus; use 'thpd-ctl --user'", proc.stderr)
        self.assertNotIn('systemctl start', proc.stderr)
        # Asked with --user; thpd answers on the system bus.
        proc = subprocess.run([test_api.ctl_bin(), '--user', 'status'],
                              env=dict(self.stack.env, DBUS_SESSION_BUS_ADDRESS=NO_BUS, DBUS_SYSTEM_BUS_ADDRESS=bus),
                              capture_output=True, text=True)
        self.assertEqual(proc.returncode, 3)
        self.assertIn('it answers on the system bus; drop --user', proc.stderr)
        # The same when the bus is there and thpd is not on it.
        proc = subprocess.run([test_api.ctl_bin(), 'status'], env=dict(self.stack.env, DBUS_SYSTEM_BUS_ADDRESS=bus,
                                                                         DBUS_SESSION_BUS_ADDRESS=bus),
                              capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)

    def test_nowhere(self):
        env = dict(self.stack.env, DBUS_SYSTEM_BUS_ADDRESS=NO_BUS)
        proc = subprocess.run([test_api.ctl_bin(), 'status'], env=env, capture_output=True, text=True)
        self.assertEqual(proc.returncode, 3)
        # "systemctl start thpd" only where systemd runs the machine.
        if Path('/run/systemd/system').is_dir():
            self.assertIn("start it with 'systemctl start thpd'", proc.stderr)
        else:
            self.assertIn("systemd does not run this machine to start it: run 'thpd' as root", proc.stderr)
            self.assertNotIn('systemctl', proc.stderr)
        proc = subprocess.run([test_api.ctl_bin(), '--user', 'status'], env=env, capture_output=True, text=True)
        self.assertEqual(proc.returncode, 3)
        self.assertIn("thpd is not running on the session bus; start it with 'thpd --user'", proc.stderr)


class OverrideMergeTest(ApiTestCase):
    """override KNOB=VALUE adds to the override in force; --replace starts a new one."""

    def test_merge_replace_and_expiry(self):
        self.start_thpd()
        out = self.ctl('override', 'enabled=never').stdout
        self.assertEqual(out, 'Override: enabled=never until cleared\n')
        out = self.ctl('override', 'defrag=defer').stdout
        self.assertEqual(out, 'Override: enabled=never defrag=defer until cleared\n')
        self.assert_knobs(enabled='never', defrag='defer')
        # A knob given again takes the new value.
        self.ctl('override', 'enabled=always')
        self.assertEqual(busctl_property(self.stack, 'Override'), {'enabled': 'always', 'defrag': 'defer'})

        out = self.ctl('override', '--replace', 'khugepaged/defrag=0').stdout
        self.assertEqual(out, 'Override: khugepaged/defrag=0 until cleared\n')
        self.assertEqual(busctl_property(self.stack, 'Override'), {'khugepaged/defrag': '0'})
        self.assert_knobs({'enabled': 'madvise', 'defrag': 'madvise', 'khugepaged/defrag': '0'})

        # --for= sets the end of the whole set; without it, the set keeps the end it has.
        self.ctl('override', 'enabled=never', '--for=1h')
        expires = busctl_property(self.stack, 'OverrideExpiresAt')
        self.assertAlmostEqual(expires / 1e6, time.time() + 3600, delta=60)
        out = self.ctl('override', 'defrag=never').stdout
        self.assertRegex(out, r'^Override: enabled=never defrag=never khugepaged/defrag=0 until .* \(in (59min|1h)')
        self.assertAlmostEqual(busctl_property(self.stack, 'OverrideExpiresAt'), expires, delta=5 * 10**6)
        self.assertIn('takes no KNOB=VALUE, --for or --replace', self.ctl_fails(2, 'override', '--clear', '--replace'))
        self.ctl('override', '--clear')
        self.assertEqual(busctl_property(self.stack, 'Override'), {})


class SchemaTest(ApiTestCase):
    """Every read verb's --json output, in every shape it has, validates against the schema."""

    def test_schema_is_valid(self):
        jsonschema.Draft202012Validator.check_schema(SCHEMA)
        verbs = re.search(r'--json +Print JSON \(([^)]*)\)', self.ctl('--help').stdout.replace('\n', ' '))
        listed = {v.strip() for v in re.sub(r'\s+', ' ', verbs.group(1)).split(',')}
        self.assertEqual(listed, {'status', 'show', 'list', 'explain', 'cat', 'verify', 'monitor', 'await'})
        self.assertTrue(listed <= set(SCHEMA['$defs']))

    def test_every_read_verb(self):
        low = self.tmp / 'low.d'
        low.mkdir(mode=0o755)
        self.write_policy('redis.conf', REDIS_POLICY, low)
        self.write_policy('mongodb.conf', REDIS_POLICY.replace('redis-server', 'mongod'), low)
        self.write_policy('redis.conf', REDIS_POLICY)
        self.write_policy('typo.conf', TYPO_POLICY)
        self.write_policy('broken.conf', BROKEN_POLICY)
        (self.policy_dir / 'mongodb.conf').symlink_to('/dev/null')
        self.start_thpd(f'--policy-dir={low}')
        monitor = subprocess.Popen(ctl_argv('monitor', '--json'), env=self.stack.env, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE)
        self.addCleanup(monitor.wait)
        self.addCleanup(lambda: monitor.poll() is None and monitor.kill())
        self.addCleanup(monitor.stdout.close)
        self.addCleanup(monitor.stderr.close)
        monitor.pending = b''
        self.assertIn('Following thpd', test_api.SignalsTest.read_line(monitor, stream='stderr'))

        self.start_unit('redis-server.service')
        self.wait_knobs(enabled='never')
        self.ctl('override', 'khugepaged/defrag=0', '--for=1h')
        outputs = {
            'status': [self.ctl_json('status')],
            'show': [self.ctl_json('show'), self.ctl_json('show', 'Version'), self.ctl_json('show', '-p', 'OverrideExpiresAt')],
            'list': [self.ctl_json('list')],
            'cat': [self.ctl_json('cat', name) for name in ('redis', 'mongodb', 'broken', 'typo')],
            'explain': [self.ctl_json('explain'), self.ctl_json('explain', 'enabled')],
            'await': [self.ctl_json('await', 'redis-server.service'), self.ctl_json('await', 'other.service')],
        }
        verified = []
        for args in ([str(self.policy_dir / 'typo.conf')], [f'--policy-dir={self.policy_dir}', f'--policy-dir={low}']):
            proc = self.ctl('verify', '--json', *args, check=False)
            self.assertEqual(proc.returncode, 1, proc.stderr)
            verified.append(json.loads(proc.stdout))
        outputs['verify'] = verified
        self.ctl('override', '--clear')
        events = []
        while not {'Applied', 'PropertiesChanged'} <= {e['signal'] for e in events}:
            events.append(json.loads(test_api.SignalsTest.read_line(monitor)))
        outputs['monitor'] = events

        # The shapes that matter are there: a time, null for none, a masked policy, diagnostics.
        self.assertRegex(outputs['show'][2]['override_expires_at'], r'Z$')
        self.assertIsNone(outputs['cat'][1]['path'])
        self.assertEqual(outputs['cat'][2]['state'], 'invalid')
        self.assertTrue(outputs['status'][0]['policy_diagnostics'])
        self.assertIsNone(outputs['await'][1]['policy'])
        self.assertEqual(verified[1]['errors'], 2)
        self.assertEqual({p['policy']: p['state'] for p in verified[1]['policies']},
                         {'broken.conf': 'invalid', 'mongodb.conf': 'masked', 'redis.conf': 'valid', 'typo.conf': 'invalid'})
        for verb, instances in outputs.items():
            for instance in instances:
                with self.subTest(verb=verb, instance=instance):
                    validate(verb, instance)
        # And the schema is strict enough to catch a drift.
        with self.assertRaises(jsonschema.ValidationError):
            validate('status', dict(outputs['status'][0], Knobs=[]))
        with self.assertRaises(jsonschema.ValidationError):
            validate('await', {'unit': 'a.service', 'policy': ''})


if __name__ == '__main__':
    thpdtest.main()
