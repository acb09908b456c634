#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The system layer: builds thpd's .deb with dpkg-buildpackage from a copy of the working tree,
# then boots Debian containers (systemd-nspawn, systemd as PID 1) that install it with apt
# beside Debian's redis-server and postgresql and write this machine's real THP and hugetlb
# files (tests/system/). Every knob is recorded first and restored afterwards.
#
# Needs root and a kernel and host where systemd-nspawn can boot a container; exits 77 (skipped)
# with the reason otherwise. The rootfs is cached in build-system/, one per suite (delete it to
# refresh); the package is built in a temporary directory, so the working tree is left as it is.
#
#     tools/system-test.sh [-v] [SystemTest.test_2_redis ...]
#     tools/system-test.sh --rootfs    only makes the suite's rootfs: no knob is touched
#     tools/system-test.sh --package   only builds the package into THPD_KEEP_DEBS
#
# tools/test.sh --full runs the last two in the background while other layers run, so that no
# system layer waits on mmdebstrap or dpkg-buildpackage.
#
# THPD_SYSTEM_SUITE=SUITE picks the containers' Debian suite: trixie (Debian 13, the default),
# bookworm (Debian 12) or sid.
# THPD_DEB=FILE skips the build and tests that package instead; THPD_KEEP_DEBS=DIR keeps the
# packages built here in DIR, for another run on another suite.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
work=${THPD_SYSTEM_DIR:-$src/build-system}

if [ "$(id -u)" -ne 0 ]; then
        echo "SKIP: the system layer needs root (systemd-nspawn, the host's /sys/kernel/mm)"
        exit 77
fi
if [ ! -w /sys/kernel/mm/transparent_hugepage/enabled ]; then
        echo "SKIP: /sys/kernel/mm/transparent_hugepage is not writable here (a container?)"
        exit 77
fi

# chromium and python3-websocket: the Cockpit scenario drives the page in a headless browser (CDP).
packages=(systemd-container mmdebstrap dpkg-dev debhelper fakeroot chromium python3-websocket)
tools/install-missing.sh "${packages[@]}"
# dpkg-buildpackage checks debian/control's Build-Depends itself and names what is missing.

mkdir -p "$work"
# Like meson's build directories: git ignores it without an entry in the tree's .gitignore.
[ -e "$work/.gitignore" ] || echo '*' > "$work/.gitignore"
if [ "${1:-}" = --rootfs ]; then
        exec /usr/bin/python3 -B -c 'import sys; sys.path.insert(0, "tests/system"); import container
container.ensure_rootfs(sys.argv[1])' "$work"
fi
if [ "${1:-}" = --package ] && [ -z "${THPD_KEEP_DEBS:-}" ]; then
        echo "--package needs THPD_KEEP_DEBS (where to keep the package)" >&2
        exit 2
fi
if [ -n "${THPD_DEB:-}" ]; then
        THPD_SYSTEM_DIR=$work exec /usr/bin/python3 -B tests/system/test_system.py "$@"
fi

tmp=$(mktemp -d /tmp/thpd-system-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/thpd"
tar -C "$src" --exclude='./build*' --exclude=./.git --exclude='__pycache__' -cf - . | tar -C "$tmp/thpd" -xf -
echo "== building the package (dpkg-buildpackage -us -uc -b) in $tmp"
start=$SECONDS
if ! (cd "$tmp/thpd" && dpkg-buildpackage -us -uc -b) > "$tmp/build.log" 2>&1; then
        tail -50 "$tmp/build.log"
        echo "dpkg-buildpackage failed"
        exit 1
fi
deb=$(ls "$tmp"/thpd_*.deb)
echo "built $(basename "$deb") in $((SECONDS - start)) s"
if [ -n "${THPD_KEEP_DEBS:-}" ]; then
        mkdir -p "$THPD_KEEP_DEBS"
        cp "$tmp"/*.deb "$THPD_KEEP_DEBS"/
fi
[ "${1:-}" != --package ] || exit 0

THPD_DEB=$deb THPD_SYSTEM_DIR=$work /usr/bin/python3 -B tests/system/test_system.py "$@"
