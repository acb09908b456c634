#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Installs what building, running and testing thpd needs on Debian 12 (needs root or sudo).
set -euo pipefail

packages=(
        # build
        meson ninja-build gcc pkg-config libsystemd-dev libinih-dev libglib2.0-dev check
        # run and integration tests: a real bus and a real systemd manager
        dbus-daemon dbus-bin systemd util-linux python3 python3-dbus python3-gi
        # thpd-ctl --json against data/thpd-ctl.schema.json
        python3-jsonschema
        # data file, unit and man page checks; leak checks
        libxml2-utils man-db groff-base valgrind bash-completion
        # fuzzing: clang with libFuzzer and the sanitizer runtimes; a FUSE pool for the faults suite
        clang libclang-rt-14-dev python3-fusepy
)

missing=()
for p in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
echo "Installing: ${missing[*]}"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
