#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Builds thpd and runs it in the foreground on this machine with the shipped policies, logging
# every change it makes. Ctrl-C (SIGTERM) restores the baseline. Needs root: it writes /sys.
set -euo pipefail
cd "$(dirname "$0")/.."

tools/deps.sh
[ -d build ] || meson setup build
meson compile -C build

if [ "$(id -u)" -ne 0 ]; then
        echo "thpd writes /sys/kernel/mm: run this as root (sudo $0)." >&2
        exit 1
fi

# Admin and runtime drop-ins keep their precedence over the shipped ones.
args=(--policy-dir=/etc/thpd/policy.d --policy-dir=/run/thpd/policy.d --policy-dir="$PWD/policy"
      --log-level=info "$@")

if [ -d /run/systemd/system ]; then
        # Owning org.thpd1 on the system bus needs thpd's bus policy.
        if [ ! -e /etc/dbus-1/system.d/org.thpd1.conf ] && [ ! -e /usr/share/dbus-1/system.d/org.thpd1.conf ]; then
                echo "Installing the bus policy to /etc/dbus-1/system.d/org.thpd1.conf"
                install -Dm0644 data/org.thpd1.conf /etc/dbus-1/system.d/org.thpd1.conf
                systemctl reload dbus.service || true
        fi
        echo "Running build/src/daemon/thpd ${args[*]}"
        exec build/src/daemon/thpd "${args[@]}"
fi

echo "systemd is not PID 1 here: following a private systemd --user manager instead."
# tools/try-thpd.py imports the integration tests' harness, tests/thpdtest/.
export PYTHONPATH=$PWD/tests${PYTHONPATH:+:$PYTHONPATH}
exec /usr/bin/python3 -B tools/try-thpd.py build/src/daemon/thpd "${args[@]}"
