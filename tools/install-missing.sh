#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tools/install-missing.sh PACKAGE...: installs those of the Debian packages that are not
# installed (as root: the system and DaemonSet layers call it, tools/system-test.sh and
# tools/kube-test.sh).
set -euo pipefail

missing=()
for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
[ ${#missing[@]} -ne 0 ] || exit 0
echo "Installing: ${missing[*]}"
DEBIAN_FRONTEND=noninteractive apt-get update -q
# The lock timeout: tools/test.sh --full runs the layers' makers of trees and the package build
# at once (tools/system-test.sh --rootfs and --package, tools/kube-test.sh --trees).
DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=300 --no-install-recommends "${missing[@]}"
