#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The DaemonSet layer: deploy/kubernetes/thpd.yaml played by Debian 13's podman ("kube play"),
# with the image built offline from thpd's .deb, on a booted Debian 13 container as the node,
# writing this machine's real THP files (tests/system/test_kube.py). Every knob is recorded
# first and restored afterwards.
#
# Needs root and a host where systemd-nspawn can boot a container; exits 77 (skipped) with the
# reason otherwise, and where no Debian 13 tree with podman can be made (podman >= 4.7 is what
# plays a DaemonSet; Debian 12's is 4.3). The node's rootfs, the engine's tree and the image's
# base are cached in build-system/, shared with the system layer.
#
#     tools/kube-test.sh [-v] [KubeTest.test_6_redis ...]
#     tools/kube-test.sh --trees     only makes the engine's tree, and the image's base when
#                                    THPD_DEB is set: no knob is touched
#
# THPD_DEB=FILE tests that package (the one the system layer built); otherwise it is built here
# with tools/system-test.sh --package.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
work=${THPD_SYSTEM_DIR:-$src/build-system}

if [ "$(id -u)" -ne 0 ]; then
        echo "SKIP: the DaemonSet layer needs root (systemd-nspawn, podman, the host's /sys/kernel/mm)"
        exit 77
fi

# podman itself comes from a Debian 13 tree, not from this host. python3-yaml writes the
# manifest the test plays.
packages=(systemd-container mmdebstrap util-linux python3-yaml)
tools/install-missing.sh "${packages[@]}"

mkdir -p "$work"
[ -e "$work/.gitignore" ] || echo '*' > "$work/.gitignore"
export THPD_SYSTEM_DIR=$work
if [ -n "${THPD_DEB:-}" ] || [ "${1:-}" = --trees ]; then
        exec /usr/bin/python3 -B tests/system/test_kube.py "$@"
fi

# The package as the system layer builds it (its dependencies, dpkg-buildpackage on a copy of
# the tree), kept for this run only.
tmp=$(mktemp -d /tmp/thpd-kube-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
THPD_KEEP_DEBS=$tmp tools/system-test.sh --package
THPD_DEB=$(ls "$tmp"/thpd_*.deb) /usr/bin/python3 -B tests/system/test_kube.py "$@"
