# SPDX-License-Identifier: LGPL-2.1-or-later
"""data/org.thpd1.conf on a real bus: a private dbus-daemon with a system-bus-like configuration
(deny by default) that includes our policy file, thpd running as root on it in its system-bus
mode, and clients running as root and as uid 65534 (setpriv).

What it proves: only root may own org.thpd1; everyone may read the properties, introspect, ping
and call ListPolicies, Explain, Await, GetMetrics and GetUnitUsage; Reload, SetOverride and ClearOverride pass the bus and
are refused by the daemon itself (no polkit on this bus); anything not listed is refused by the
bus; thpd's signals reach unprivileged listeners. Then the polkit check itself, against a
stand-in polkit on the same bus: authorized, refused, challenged, the interactive flag, and a
slow answer that must not hold up the daemon.

Run as root:
    PYTHONPATH=tests THPD_BIN=build/src/daemon/thpd THPD_CTL_BIN=build/src/ctl/thpd-ctl
        /usr/bin/python3 -B tests/integration/test_bus_policy.py -v
"""

import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import unittest
from pathlib import Path

import dbus

import test_api
import thpdtest
from thpdtest import ScratchKernel, Thpd, wait_until

BUS_POLICY = test_api.SOURCE_ROOT / 'data' / 'org.thpd1.conf'
BUS_NAME, BUS_PATH, INTERFACE = test_api.BUS_NAME, test_api.BUS_PATH, test_api.INTERFACE
NOBODY = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', '--']

# What a distribution's system bus does, in brief: everyone may connect, nobody may own a name or
# call a method unless a policy file says so; replies and signals flow. Then our file.
SYSTEM_BUS_CONFIG = """\
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
  </policy>
  <!-- For the stand-in polkit of PolkitTest, which runs as root. -->
  <policy user="root">
    <allow own="org.freedesktop.PolicyKit1"/>
    <allow send_destination="org.freedesktop.PolicyKit1"/>
  </policy>
  <include>{policy}</include>
</busconfig>
"""

FLOOD_UNIT = 'flood.service'
AWAIT_TIMEOUT = 5
# More than the daemon's global bound (1,024) and below the bus's own per-connection limit of
# pending replies (128): 11 connections of 100 calls.
FLOOD_CONNECTIONS, FLOOD_CALLS = 11, 100

# Runs as one user: sends FLOOD_CONNECTIONS x FLOOD_CALLS Await(flood.service) calls without
# waiting, prints "refused" once the expected number of refusals came (the rest are held by
# thpd), then {answer: count} once every call is answered.
FLOOD_SCRIPT = """\
import collections, dbus, json, sys
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib
address, unit, connections, calls, refusals = json.loads(sys.argv[1])
DBusGMainLoop(set_as_default=True)
answers = collections.Counter()
loop = GLib.MainLoop()
def done(name):
    answers[name] += 1
    if name == 'org.freedesktop.DBus.Error.LimitsExceeded' and answers[name] == refusals:
        print('refused', flush=True)
    if sum(answers.values()) == connections * calls:
        loop.quit()
buses = [dbus.bus.BusConnection(address) for _ in range(connections)]
for bus in buses:
    for _ in range(calls):
        bus.call_async('org.thpd1', '/org/thpd1', 'org.thpd1.Manager', 'Await', 's', [unit],
                       lambda *a: done('ok'), lambda e: done(e.get_dbus_name()), timeout=600)
loop.run()
print(json.dumps(answers), flush=True)
"""

# Runs as uid 65534: calls a method with python3-dbus and prints [error name, message, result].
CALL_SCRIPT = """\
import dbus, json, sys
address, destination, path, interface, member, signature, args = json.loads(sys.argv[1])
bus = dbus.bus.BusConnection(address)
try:
    result = bus.call_blocking(destination, path, interface, member, signature, args)
    print(json.dumps(["", "", str(result)]))
except dbus.exceptions.DBusException as e:
    print(json.dumps([e.get_dbus_name(), e.get_dbus_message(), ""]))
"""


def unavailable_reason():
    if os.geteuid() != 0:
        return 'needs root (thpd owns org.thpd1 only as root; clients run as uid 65534)'
    for tool in ('dbus-daemon', 'setpriv', 'busctl'):
        if not shutil.which(tool):
            return f'{tool} is not installed'
    for variable in ('THPD_BIN', 'THPD_CTL_BIN'):
        if not os.access(os.environ.get(variable, ''), os.X_OK):
            return f'{variable} does not name an executable'
    return None


# A stand-in for polkitd on the private bus: answers CheckAuthorization as the file MODE says
# ("yes", "no", "challenge"; "held:" first holds the answer back, without blocking, until the
# file MODE.release exists), and appends each request to LOG as a JSON line.
FAKE_POLKIT = """\
import json, os, sys
import dbus, dbus.service, dbus.mainloop.glib
from gi.repository import GLib

address, mode_path, log_path = sys.argv[1:4]
dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.bus.BusConnection(address)
VERDICTS = {'yes': (True, False), 'no': (False, False), 'challenge': (False, True)}


class Authority(dbus.service.Object):
    @dbus.service.method('org.freedesktop.PolicyKit1.Authority', in_signature='(sa{sv})sa{ss}us',
                         out_signature='(bba{ss})', async_callbacks=('reply', 'error'))
    def CheckAuthorization(self, subject, action, details, flags, cancellation_id, reply, error):
        mode = open(mode_path).read().strip()
        with open(log_path, 'a') as log:
            log.write(json.dumps({'kind': str(subject[0]), 'name': str(subject[1].get('name', '')),
                                  'action': str(action), 'flags': int(flags)}) + '\\n')
        authorized, challenge = VERDICTS[mode.split(':')[-1]]
        result = dbus.Struct((authorized, challenge, dbus.Dictionary({}, signature='ss')), signature='bba{ss}')
        if mode.startswith('held:'):
            def answer_once_released():
                if not os.path.exists(mode_path + '.release'):
                    return True
                reply(result)
                return False
            GLib.timeout_add(50, answer_once_released)
        else:
            reply(result)


Authority(bus, '/org/freedesktop/PolicyKit1/Authority')
name = dbus.service.BusName('org.freedesktop.PolicyKit1', bus)
print('ready', flush=True)
GLib.MainLoop().run()
"""


class BusTestCase(unittest.TestCase):
    """A private system bus with our policy file, and thpd on it (one of each per class)."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        reason = unavailable_reason()
        if reason:
            raise unittest.SkipTest(reason)
        cls.dir = Path(tempfile.mkdtemp(prefix='thpd-bus-policy-'))
        cls.addClassCleanup(shutil.rmtree, cls.dir, ignore_errors=True)
        cls.dir.chmod(0o755)  # uid 65534 reaches the socket
        cls.socket = cls.dir / 'system_bus_socket'
        cls.address = f'unix:path={cls.socket}'
        config = cls.dir / 'system.conf'
        config.write_text(SYSTEM_BUS_CONFIG.format(socket=cls.socket, policy=BUS_POLICY))
        cls.bus_daemon = subprocess.Popen(['dbus-daemon', f'--config-file={config}', '--nofork', '--nopidfile'],
                                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.PIPE, text=True)
        cls.addClassCleanup(cls.stop_bus_daemon)
        wait_until(cls.bus_answers, message='the private system bus')

        cls.kernel_dir = Path(tempfile.mkdtemp(prefix='thpd-bus-policy-kernel-'))
        cls.addClassCleanup(shutil.rmtree, cls.kernel_dir, ignore_errors=True)
        cls.kernel = ScratchKernel(cls.kernel_dir / 'kernel')
        (cls.kernel_dir / 'policy.d').mkdir(mode=0o755)
        # No systemd manager answers on this bus: an Await() for flood.service waits until
        # AwaitTimeout=.
        flood = cls.kernel_dir / 'policy.d' / 'flood.conf'
        flood.write_text(f'[Policy]\nUnits={FLOOD_UNIT}\n[TransparentHugePages]\nEnabled=never\n')
        flood.chmod(0o644)
        (cls.kernel_dir / 'thpd.conf').write_text(f'[Daemon]\nAwaitTimeout={AWAIT_TIMEOUT}s\n')
        env = thpdtest.client_env(DBUS_SYSTEM_BUS_ADDRESS=cls.address)
        env.pop('DBUS_SESSION_BUS_ADDRESS', None)
        # The system-bus mode: no --user. No systemd manager answers on this bus, so thpd keeps
        # the baseline and never sends READY=1; owning the name is what it gets to.
        cls.thpd = Thpd([os.environ['THPD_BIN'], f'--sysfs={cls.kernel.sysfs}', f'--procfs={cls.kernel.procfs}',
                         f'--runtime-dir={cls.kernel_dir / "run"}', f'--policy-dir={cls.kernel_dir / "policy.d"}',
                         f'--config={cls.kernel_dir / "thpd.conf"}', '--log-level=debug'],
                        env, cls.kernel_dir / 'thpd.log', cls.kernel_dir / 'notify')
        cls.addClassCleanup(cls.thpd.close)
        cls.thpd.wait_log(r'Owning org\.thpd1\.')
        cls.root = dbus.bus.BusConnection(cls.address)
        cls.addClassCleanup(cls.root.close)

    @classmethod
    def stop_bus_daemon(cls):
        cls.bus_daemon.send_signal(signal.SIGTERM)
        cls.bus_daemon.communicate(timeout=10)

    @classmethod
    def bus_answers(cls):
        if cls.bus_daemon.poll() is not None:
            raise RuntimeError(f'dbus-daemon exited: {cls.bus_daemon.stderr.read()}')
        return subprocess.run(['busctl', f'--address={cls.address}', 'call', 'org.freedesktop.DBus',
                               '/org/freedesktop/DBus', 'org.freedesktop.DBus', 'GetId'],
                              capture_output=True, check=False).returncode == 0

    def run(self, result=None):
        if result is None:
            return super().run(result)
        problems = len(result.failures) + len(result.errors)
        outcome = super().run(result)
        if len(result.failures) + len(result.errors) > problems and getattr(self, 'thpd', None):
            print(f'\n----- thpd log:\n{self.thpd.log()}----- end', file=thpdtest.sys.stderr)
        return outcome

    def env(self):
        env = thpdtest.client_env(DBUS_SYSTEM_BUS_ADDRESS=self.address)
        env.pop('DBUS_SESSION_BUS_ADDRESS', None)
        return env

    def as_nobody(self, *argv):
        return subprocess.run([*NOBODY, *argv], env=self.env(), capture_output=True, text=True, check=False)

    def call_as_nobody(self, member, signature='', args=(), interface=INTERFACE, destination=BUS_NAME, path=BUS_PATH):
        """Returns (error name or "", message, result as a string)."""
        proc = self.as_nobody('/usr/bin/python3', '-c', CALL_SCRIPT,
                              json.dumps([self.address, destination, path, interface, member, signature, list(args)]))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return json.loads(proc.stdout)

    def assert_bus_refuses(self, error):
        """The bus daemon's refusal, not the daemon's."""
        self.assertEqual(error[0], 'org.freedesktop.DBus.Error.AccessDenied', error)
        self.assertIn('Rejected send message', error[1])


class BusPolicyTest(BusTestCase):

    def test_await_flood_leaves_other_users_a_slot(self):
        """uid 65534 keeps 1,100 Await() calls pending: thpd holds 64 of them (its per-user bound)
        and refuses the rest; a second user's Await() still gets a slot, and every held call is
        answered by thpd at AwaitTimeout=, not left to the bus."""
        total = FLOOD_CONNECTIONS * FLOOD_CALLS
        held = 64
        flood = subprocess.Popen([*NOBODY, '/usr/bin/python3', '-c', FLOOD_SCRIPT,
                                  json.dumps([self.address, FLOOD_UNIT, FLOOD_CONNECTIONS, FLOOD_CALLS, total - held])],
                                 env=self.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: flood.poll() is None and flood.kill())
        # Every call beyond the per-user bound is refused at once; the others wait in thpd.
        ready, _, _ = select.select([flood.stdout], [], [], 60)
        self.assertTrue(ready, f'the flood did not get {total - held} refusals within 60 s')
        self.assertEqual(flood.stdout.readline().strip(), 'refused', flood.stderr.read() if flood.poll() else '')

        second = subprocess.run(['setpriv', '--reuid=1', '--regid=1', '--clear-groups', '--', '/usr/bin/python3', '-c',
                                 CALL_SCRIPT, json.dumps([self.address, BUS_NAME, BUS_PATH, INTERFACE, 'Await', 's',
                                                          [FLOOD_UNIT]])],
                                env=self.env(), capture_output=True, text=True, check=False, timeout=120)
        self.assertEqual(second.returncode, 0, second.stderr)
        error = json.loads(second.stdout)
        self.assertEqual(error[0], 'org.thpd1.Error.Timeout', error)
        self.assertIn(f'{FLOOD_UNIT} was not applied within AwaitTimeout= ({AWAIT_TIMEOUT} s)', error[1])

        out, err = flood.communicate(timeout=120)
        self.assertEqual(json.loads(out.splitlines()[-1]),
                         {'org.freedesktop.DBus.Error.LimitsExceeded': total - held, 'org.thpd1.Error.Timeout': held}, err)

    def test_only_root_owns_the_name(self):
        owner = self.root.call_blocking('org.freedesktop.DBus', '/org/freedesktop/DBus', 'org.freedesktop.DBus',
                                        'GetConnectionUnixUser', 's', [BUS_NAME])
        self.assertEqual(owner, 0)
        error = self.call_as_nobody('RequestName', 'su', [BUS_NAME, 4], interface='org.freedesktop.DBus',
                                    destination='org.freedesktop.DBus', path='/org/freedesktop/DBus')
        self.assertEqual(error[0], 'org.freedesktop.DBus.Error.AccessDenied', error)
        self.assertIn(BUS_NAME, error[1])
        # Root may: the request fails only because thpd has the name (DBUS_REQUEST_NAME_REPLY_EXISTS).
        reply = self.root.call_blocking('org.freedesktop.DBus', '/org/freedesktop/DBus', 'org.freedesktop.DBus',
                                        'RequestName', 'su', [BUS_NAME, 4])
        self.assertEqual(reply, 3)

    def test_reads_are_open_to_everyone(self):
        for call in (('Get', 'ss', [INTERFACE, 'Version'], 'org.freedesktop.DBus.Properties'),
                     ('GetAll', 's', [INTERFACE], 'org.freedesktop.DBus.Properties'),
                     ('Introspect', '', [], 'org.freedesktop.DBus.Introspectable'),
                     ('Ping', '', [], 'org.freedesktop.DBus.Peer'),
                     ('ListPolicies', '', [], INTERFACE),
                     ('Explain', 's', ['enabled'], INTERFACE),
                     ('Await', 's', ['unrelated.service'], INTERFACE),
                     ('GetMetrics', '', [], INTERFACE),
                     ('GetUnitUsage', '', [], INTERFACE)):
            member, signature, args, interface = call
            error = self.call_as_nobody(member, signature, args, interface=interface)
            self.assertEqual(error[:2], ['', ''], call)

        metrics = self.as_nobody(os.environ['THPD_CTL_BIN'], 'metrics')
        self.assertEqual(metrics.returncode, 0, metrics.stderr)
        self.assertIn('thpd_knob_info{knob="enabled",value="madvise",', metrics.stdout)

        status = self.as_nobody(os.environ['THPD_CTL_BIN'], 'status', '--json')
        self.assertEqual(status.returncode, 0, status.stderr)
        knobs = {k['knob']: k for k in json.loads(status.stdout)['knobs']}
        self.assertEqual(knobs['enabled']['applied'], self.kernel.read_knob('enabled'))
        version = self.as_nobody('busctl', f'--address={self.address}', 'get-property', BUS_NAME, BUS_PATH, INTERFACE,
                                 'Version')
        self.assertEqual(version.returncode, 0, version.stderr)
        self.assertRegex(version.stdout, r'^s "\d+\.\d+')

    def test_changes_pass_the_bus_and_the_daemon_refuses(self):
        for member, signature, args in (('SetOverride', 'a{ss}t', [{'enabled': 'never'}, 0]),
                                        ('ClearOverride', '', []),
                                        ('Reload', '', [])):
            error = self.call_as_nobody(member, signature, args)
            self.assertEqual(error[0], 'org.freedesktop.DBus.Error.AccessDenied', error)
            self.assertNotIn('Rejected send message', error[1])
            self.assertIn(f'{member} needs root: polkit is not running', error[1])
        proc = self.as_nobody(os.environ['THPD_CTL_BIN'], 'override', 'enabled=never')
        self.assertEqual(proc.returncode, 1)
        self.assertIn('polkit is not running', proc.stderr)
        self.assertEqual(self.kernel.read_knob('enabled'), 'madvise')

    def test_everything_else_is_refused_by_the_bus(self):
        self.assert_bus_refuses(self.call_as_nobody('Set', 'ssv', [INTERFACE, 'StormAction', 'mitigate'],
                                                    interface='org.freedesktop.DBus.Properties'))
        self.assert_bus_refuses(self.call_as_nobody('Frobnicate'))
        self.assert_bus_refuses(self.call_as_nobody('Anything', interface='org.example.Other'))
        # For root the bus lets it through, and the daemon answers for itself.
        with self.assertRaises(dbus.exceptions.DBusException) as caught:
            self.root.call_blocking(BUS_NAME, BUS_PATH, INTERFACE, 'Frobnicate', '', [])
        self.assertEqual(caught.exception.get_dbus_name(), 'org.freedesktop.DBus.Error.UnknownMethod')

    def test_root_changes_and_everyone_hears_the_signals(self):
        monitor = subprocess.Popen([*NOBODY, os.environ['THPD_CTL_BIN'], 'monitor', '--json'], env=self.env(),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.addCleanup(monitor.wait)
        self.addCleanup(lambda: monitor.poll() is None and monitor.kill())
        self.addCleanup(monitor.stdout.close)
        self.addCleanup(monitor.stderr.close)
        monitor.pending = b''
        self.assertIn('Following thpd', test_api.SignalsTest.read_line(monitor, stream='stderr'))

        self.root.call_blocking(BUS_NAME, BUS_PATH, INTERFACE, 'SetOverride', 'a{ss}t',
                                [{'enabled': 'never'}, dbus.UInt64(0)])
        self.addCleanup(self.root.call_blocking, BUS_NAME, BUS_PATH, INTERFACE, 'ClearOverride', '', [])
        self.assertEqual(self.kernel.read_knob('enabled'), 'never')
        # thpd may still owe a PropertiesChanged from before (it sends them at most every 100 ms).
        event = json.loads(test_api.SignalsTest.read_line(monitor))
        while event['signal'] == 'PropertiesChanged':
            event = json.loads(test_api.SignalsTest.read_line(monitor))
        self.assertEqual(event['signal'], 'Applied')
        self.assertEqual([(c['knob'], c['new']) for c in event['changes']], [('enabled', 'never')])
        event = json.loads(test_api.SignalsTest.read_line(monitor))
        self.assertEqual(event['signal'], 'PropertiesChanged')
        self.assertIn('override', event['changed'])


class PolkitTest(BusTestCase):
    """The asynchronous polkit check, against a stand-in polkit on the same bus."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.mode = cls.dir / 'polkit-mode'
        cls.requests = cls.dir / 'polkit-requests'
        cls.mode.write_text('no')
        cls.polkit = subprocess.Popen(['/usr/bin/python3', '-c', FAKE_POLKIT, cls.address, str(cls.mode), str(cls.requests)],
                                      stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        cls.addClassCleanup(cls.stop_polkit)
        line = cls.polkit.stdout.readline()
        if line != 'ready\n':
            raise RuntimeError(f'the stand-in polkit did not start: {line}{cls.polkit.stderr.read()}')

    @classmethod
    def stop_polkit(cls):
        cls.polkit.kill()
        cls.polkit.communicate()

    def setUp(self):
        super().setUp()
        self.requests.write_text('')
        self.addCleanup(self.root.call_blocking, BUS_NAME, BUS_PATH, INTERFACE, 'ClearOverride', '', [])

    def logged_requests(self):
        return [json.loads(line) for line in self.requests.read_text().splitlines()]

    def set_override_as_nobody(self, value):
        return self.call_as_nobody('SetOverride', 'a{ss}t', [{'enabled': value}, 0])

    def test_authorized_caller_may_change(self):
        self.mode.write_text('yes')
        self.assertEqual(self.set_override_as_nobody('never')[:2], ['', ''])
        self.assertEqual(self.kernel.read_knob('enabled'), 'never')
        [request] = self.logged_requests()
        self.assertEqual(request['kind'], 'system-bus-name')
        self.assertRegex(request['name'], r'^:\d+\.\d+$')
        self.assertEqual(request['action'], 'org.thpd1.manage')
        self.assertEqual(request['flags'], 0)
        self.thpd.wait_log(r'Override set over D-Bus by uid 65534 until cleared: enabled=never')

    def test_refusal_and_challenge(self):
        self.mode.write_text('no')
        error = self.set_override_as_nobody('never')
        self.assertEqual(error[0], 'org.freedesktop.DBus.Error.AccessDenied')
        self.assertIn('SetOverride needs root or the polkit action org.thpd1.manage, which uid 65534 does not have', error[1])
        self.mode.write_text('challenge')
        error = self.call_as_nobody('Reload')
        self.assertEqual(error[0], 'org.freedesktop.DBus.Error.InteractiveAuthorizationRequired')
        self.assertIn('Reload needs authentication for the polkit action org.thpd1.manage', error[1])
        self.assertEqual(self.kernel.read_knob('enabled'), 'madvise')
        # Root is not asked about.
        self.root.call_blocking(BUS_NAME, BUS_PATH, INTERFACE, 'Reload', '', [])
        self.assertEqual(len(self.logged_requests()), 2)

    def test_interactive_flag_is_passed_on(self):
        self.mode.write_text('yes')
        proc = self.as_nobody('busctl', f'--address={self.address}', '--allow-interactive-authorization=yes', 'call',
                              BUS_NAME, BUS_PATH, INTERFACE, 'SetOverride', 'a{ss}t', '1', 'defrag', 'never', '0')
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual([r['flags'] for r in self.logged_requests()], [1])
        self.assertEqual(self.kernel.read_knob('defrag'), 'never')

    def test_a_slow_answer_does_not_block_the_daemon(self):
        # polkit answers only when the test lets it: a daemon that waited for the answer would
        # not answer the calls below at all (they fail at their D-Bus timeout), however fast or
        # slow the machine.
        release = Path(f'{self.mode}.release')
        self.addCleanup(lambda: release.unlink(missing_ok=True))
        self.mode.write_text('held:yes')
        caller = subprocess.Popen([*NOBODY, '/usr/bin/python3', '-c', CALL_SCRIPT,
                                   json.dumps([self.address, BUS_NAME, BUS_PATH, INTERFACE, 'SetOverride', 'a{ss}t',
                                               [{'enabled': 'always'}, 0]])],
                                  env=self.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: caller.poll() is None and caller.kill())
        wait_until(lambda: self.requests.read_text(), message='the polkit request')
        # While polkit thinks, thpd answers everyone else.
        for _ in range(20):
            self.root.call_blocking(BUS_NAME, BUS_PATH, 'org.freedesktop.DBus.Properties', 'Get', 'ss', [INTERFACE, 'Status'])
        self.assertIsNone(caller.poll(), 'the caller was answered before polkit')
        self.assertEqual(self.kernel.read_knob('enabled'), 'madvise')
        release.touch()
        out, err = caller.communicate(timeout=thpdtest.DEFAULT_TIMEOUT)
        self.assertEqual(json.loads(out)[:2], ['', ''], err)
        self.assertEqual(self.kernel.read_knob('enabled'), 'always')


if __name__ == '__main__':
    thpdtest.main()
