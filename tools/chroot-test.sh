#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The unit and checks suites on another Debian release: builds a copy of the working tree with
# -Werror in a chroot of that release (its gcc, systemd, GLib and Check) and runs both suites
# there. It sees what a newer compiler warns about and what a newer systemd, GLib or Check
# changes, which neither tools/test.sh nor the system layer (its package is built on this
# Debian 12 host) compiles against.
#
#     tools/chroot-test.sh SUITE [TEST...]    SUITE: trixie (Debian 13), sid or bookworm (Debian 12)
#
# TEST names tests of those suites to run instead of both suites (as meson test takes them).
# Needs root (mmdebstrap, chroot, mounts); exits 77 (skipped) with the reason otherwise. The
# chroot is made by mmdebstrap from the same Debian mirror as the system layer's containers and
# cached in THPD_CHROOT_DIR (/var/tmp/thpd-chroots by default), one per suite, made afresh when
# the list of packages below changes (delete it to refresh the packages). Each run copies the
# tree into a new directory inside the chroot and removes it afterwards; the chroot sees /proc,
# /dev and a read-only /sys in a mount namespace of its own, so nothing stays mounted. meson's
# test log is kept as THPD_CHROOT_DIR/SUITE-testlog.txt.
#
# Not part of tools/test.sh or CI: a chroot takes about 800 MB per suite, and each run
# builds the tree once more.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
work=${THPD_CHROOT_DIR:-/var/tmp/thpd-chroots}

suite=${1:-}
[ $# -eq 0 ] || shift
tests=("$@")
[ ${#tests[@]} -ne 0 ] || tests=(--suite unit --suite checks)
case "$suite" in
        trixie|sid|bookworm) ;;
        -h|--help)
                sed -n '3,21p' "$0" | sed 's/^# \{0,1\}//'
                exit 0 ;;
        *) echo "usage: tools/chroot-test.sh trixie|sid|bookworm [TEST...]" >&2; exit 2 ;;
esac

if [ "$(id -u)" -ne 0 ]; then
        echo "SKIP: making and entering a chroot needs root"
        exit 77
fi

# What the unit and checks suites need, as tools/deps.sh names it for Debian 12: the build, systemd
# (pkg-config's unit directories, systemd-analyze and systemd-tmpfiles in test-data-files),
# xmllint, man and groff for the man pages, the bash completion's library, and the modules of
# the Python checks.
packages=(meson ninja-build gcc pkg-config libsystemd-dev libinih-dev libglib2.0-dev check systemd python3
          python3-jsonschema libxml2-utils man-db groff-base bash-completion python3-yaml)
# Installed where the suite has them; the checks that use them skip otherwise, and the run names
# what was missing. python3-kubernetes: test-kubernetes. prometheus: promtool, for
# test-prometheus (in a chroot, no service starts).
optional=(python3-kubernetes prometheus)
# Options for apt, as tests/system/container.py passes them: sid's Release file on the mirror
# may be past its Valid-Until.
aptopts=()
[ "$suite" != sid ] || aptopts=(--aptopt='Acquire::Check-Valid-Until "false"')

if ! command -v mmdebstrap >/dev/null; then
        echo "Installing: mmdebstrap"
        DEBIAN_FRONTEND=noninteractive apt-get update -q
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends mmdebstrap
fi

# in_chroot ROOT COMMAND...: COMMAND inside ROOT with /proc, /dev and a read-only /sys, the
# cgroup mounts below it included (the unit tests read the machine's THP files and cgroups;
# nothing in the chroot may write them), all mounted in a mount namespace that ends with the
# command.
in_chroot() {
        local root=$1; shift
        unshare --mount --propagation private -- /bin/sh -ec '
                root=$1; shift
                # A mount point of its own: the unit tests make / private in their own namespaces.
                mount --bind "$root" "$root"
                mount -t proc proc "$root/proc"
                mount --rbind /dev "$root/dev"
                mount --rbind /sys "$root/sys"
                while read -r _ _ _ _ m _; do
                        case "$m" in
                                "$root/sys"|"$root/sys/"*) mount -o remount,bind,ro "$m" ;;
                        esac
                done </proc/self/mountinfo
                exec chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
                        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
        ' sh "$root" "$@"
}

mkdir -p "$work"
root=$work/$suite
stamp=$root/.thpd-chroot
key="suite=$suite packages=${packages[*]} optional=${optional[*]} aptopts=${aptopts[*]}"
# A run that makes the chroot holds the suite's lock alone; runs that use it share it.
exec 9>"$work/$suite.lock"
flock 9
if [ ! -f "$stamp" ] || [ "$(head -1 "$stamp")" != "$key" ]; then
        partial=$root.partial
        rm -rf "$partial" "$root"
        echo "== making the $suite chroot in $root (mmdebstrap, log in $work/$suite-mmdebstrap.log)"
        start=$SECONDS
        if ! mmdebstrap --variant=apt --include="$(IFS=,; echo "${packages[*]}")" "${aptopts[@]}" \
                        --skip=cleanup/apt/lists "$suite" "$partial" >"$work/$suite-mmdebstrap.log" 2>&1; then
                tail -20 "$work/$suite-mmdebstrap.log"
                echo "mmdebstrap failed"
                exit 1
        fi
        have=() missing=()
        for p in "${optional[@]}"; do
                if chroot "$partial" apt-cache show --no-all-versions "$p" >/dev/null 2>&1; then
                        have+=("$p")
                else
                        missing+=("$p")
                fi
        done
        if [ ${#have[@]} -ne 0 ] &&
           ! in_chroot "$partial" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
                   "${have[@]}" >>"$work/$suite-mmdebstrap.log" 2>&1; then
                tail -20 "$work/$suite-mmdebstrap.log"
                echo "installing ${have[*]} failed"
                exit 1
        fi
        in_chroot "$partial" apt-get clean
        printf '%s\nmissing: %s\n' "$key" "${missing[*]}" >"$partial/${stamp##*/}"
        mv "$partial" "$root"
        echo "chroot ready in $((SECONDS - start)) s"
fi
flock -s 9

missing=$(sed -n 's/^missing: //p' "$stamp")
[ -z "$missing" ] || echo "not in $suite: $missing (their checks skip)"
echo "== $suite: gcc $(chroot "$root" gcc -dumpfullversion), $(chroot "$root" systemctl --version | head -1)"

tree=$(mktemp -d "$root/var/tmp/thpd-chroot-test.XXXXXX")
trap 'rm -rf "$tree"' EXIT
tar -C "$src" --exclude='./build*' --exclude=./.git --exclude='__pycache__' -cf - . | tar -C "$tree" -xf -
inside=/var/tmp/${tree##*/}
rm -f "$work/$suite-testlog.txt"
rc=0
in_chroot "$root" /bin/sh -ec 'cd "$1"; shift
        meson setup b -Dwerror=true >setup.log || { tail -30 setup.log; exit 1; }
        meson compile -C b >compile.log || { tail -60 compile.log; exit 1; }
        meson test -C b --print-errorlogs "$@"' sh "$inside" "${tests[@]}" || rc=$?
[ ! -f "$tree/b/meson-logs/testlog.txt" ] || cp "$tree/b/meson-logs/testlog.txt" "$work/$suite-testlog.txt"

if [ -f "$tree/b/meson-logs/testlog.json" ]; then
        read -r passed failed skipped < <(/usr/bin/python3 tools/meson-log-count.py "$tree/b/meson-logs/testlog.json")
        echo "$suite: $passed passed, $failed failed, $skipped skipped"
else
        echo "$suite: the build failed, no test ran"
fi
exit "$rc"
