# SPDX-License-Identifier: LGPL-2.1-or-later
"""Stands in for TuneD's daemon on the test's bus: owns com.redhat.tuned and, for each line
"VALUE PROFILE" on stdin, writes VALUE to the knob file given as argument, the way TuneD's vm
plugin does, then sends com.redhat.tuned.control.profile_changed(PROFILE, true, "OK") from
/Tuned, as TuneD does once a profile switch is applied. Prints "ready", then "switched" per line.
The bus is DBUS_SESSION_BUS_ADDRESS (the test's private bus, which thpd --user uses)."""

import sys

import dbus
import dbus.mainloop.glib
import dbus.service


class Tuned(dbus.service.Object):
    @dbus.service.signal('com.redhat.tuned.control', signature='sbs')
    def profile_changed(self, profile, result, message):
        pass


def main():
    knob = sys.argv[1]
    # dbus-python exports objects only on a connection with a main loop; nothing runs it.
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.SessionBus()
    name = dbus.service.BusName('com.redhat.tuned', bus)
    tuned = Tuned(bus, '/Tuned')
    print('ready', flush=True)
    for line in sys.stdin:
        value, profile = line.split()
        with open(knob, 'w') as f:
            f.write(f'{value}\n')
        tuned.profile_changed(profile, True, 'OK')
        bus.flush()
        print('switched', flush=True)
    del name


if __name__ == '__main__':
    main()
