#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Runs thpd in the foreground on a machine where systemd is not PID 1.

thpd follows a systemd manager. Without one on the system bus, this starts a private
systemd --user manager with its own session bus (the integration tests' Stack) and runs
thpd --user against it and this machine's real /sys, printing how to start units for it.
Ctrl-C stops thpd (which restores the baseline) and then the private manager.

tools/run.sh runs it; by hand, from the top of the tree (the harness is tests/thpdtest/):
    PYTHONPATH=tests /usr/bin/python3 -B tools/try-thpd.py build/src/daemon/thpd [THPD OPTION...]"""

import os
import signal
import subprocess
import sys

import thpdtest


def main():
    thpd = sys.argv[1]
    extra = sys.argv[2:]
    reason = thpdtest.stack_unavailable_reason()
    if reason:
        sys.exit(f'Cannot start a private systemd manager: {reason}')

    with thpdtest.Stack() as stack:
        print('Started a private systemd --user manager. In another shell, try:\n'
              f'  export XDG_RUNTIME_DIR={stack.runtime_dir} DBUS_SESSION_BUS_ADDRESS={stack.bus_address}\n'
              '  systemd-run --user --unit=redis-server.service sleep 600   # THP goes to never\n'
              '  build/src/ctl/thpd-ctl --user status\n'
              '  systemctl --user stop redis-server.service                 # the baseline comes back\n',
              flush=True)
        proc = subprocess.Popen([thpd, '--user', *extra], env=stack.env)
        try:
            proc.wait()
        except KeyboardInterrupt:
            proc.send_signal(signal.SIGTERM)
            proc.wait()
        stack.stop_all_units()
    sys.exit(proc.returncode)


if __name__ == '__main__':
    main()
