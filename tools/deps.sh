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
        # the Kubernetes manifest against the API models
        python3-yaml python3-kubernetes
)
# The system and DaemonSet layers install what they need themselves (tools/system-test.sh,
# tools/kube-test.sh): systemd-container and mmdebstrap, and the package build's tools. The
# DaemonSet layer's podman (5.4, Debian 13's) comes from a Debian 13 tree it makes with
# mmdebstrap, not from this host: Debian 12's podman 4.3 cannot play a DaemonSet.
# promtool (check metrics and rules) comes with Debian's Prometheus server, and node_exporter (the
# textfile collector the tests scrape) with its service. Both packages would start and enable
# their daemons (ports 9090 and 9100); the tests run their own node_exporter, so the services are
# kept off: policy-rc.d forbids the start, and the boot-time links are removed.
service_packages=(prometheus prometheus-node-exporter)

installed() {
        dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed"
}
missing=() missing_services=()
for p in "${packages[@]}"; do
        installed "$p" || missing+=("$p")
done
for p in "${service_packages[@]}"; do
        installed "$p" || missing_services+=("$p")
done
[ ${#missing[@]} -eq 0 ] && [ ${#missing_services[@]} -eq 0 ] && exit 0

sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
apt_install() {
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@"
}
echo "Installing: ${missing[*]} ${missing_services[*]}"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
[ ${#missing[@]} -eq 0 ] || apt_install "${missing[@]}"
if [ ${#missing_services[@]} -gt 0 ]; then
        policy_rc=/usr/sbin/policy-rc.d
        own_policy_rc=
        if [ ! -e "$policy_rc" ]; then
                printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy_rc" >/dev/null
                "${sudo[@]}" chmod 755 "$policy_rc"
                own_policy_rc=1
        fi
        rc=0
        apt_install "${missing_services[@]}" || rc=$?
        [ -z "$own_policy_rc" ] || "${sudo[@]}" rm -f "$policy_rc"
        [ "$rc" -eq 0 ] || exit "$rc"
        for p in "${missing_services[@]}"; do
                "${sudo[@]}" systemctl disable --quiet "$p.service" >/dev/null 2>&1 || true
        done
fi
