#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The whole test suite, from a fresh Debian 12 machine: installs dependencies, builds with
# -Werror, runs every test (unit, integration on a private bus with a real systemd --user
# manager, and the real-kernel tests when /sys is writable), the system layer (the .deb in booted
# systemd-nspawn containers, tools/system-test.sh), then again under ASan/UBSan, and
# the unit tests and the daemon once more under valgrind. Run as root for the integration and
# real-kernel layers; they are skipped, visibly, otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."

tools/deps.sh

run_suite() {
        local dir=$1; shift
        rm -rf "$dir"
        meson setup "$dir" -Dwerror=true "$@"
        meson compile -C "$dir"
        meson test -C "$dir" --print-errorlogs --num-processes 2
}

echo "== build with -Werror and run every test"
run_suite build-test

echo "== the system layer: thpd's .deb under a booted systemd with Debian's Redis and PostgreSQL"
# Exits 77 with the reason when it cannot run here (not root, no nspawn boot).
rc=0
tools/system-test.sh -v || rc=$?
if [ "$rc" -eq 77 ]; then
        echo "system layer skipped (reason above)"
elif [ "$rc" -ne 0 ]; then
        exit "$rc"
fi

echo "== the same under AddressSanitizer and UndefinedBehaviorSanitizer"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        run_suite build-asan -Db_sanitize=address,undefined -Db_lundef=false

echo "== leaks: the unit tests in-process, and the daemon through its integration scenarios, under valgrind"
vg=(valgrind --quiet --leak-check=full --show-leak-kinds=definite,indirect
    --errors-for-leak-kinds=definite,indirect --error-exitcode=99 --child-silent-after-fork=yes)
for t in build-test/tests/test-*; do
        [ -f "$t" ] && [ -x "$t" ] || continue
        # test-sysfs needs Check's fork per test: it unshares mounts and drops privileges.
        [ "$(basename "$t")" = test-sysfs ] && continue
        echo "valgrind $t"
        CK_FORK=no THPD_SOURCE_ROOT="$PWD" "${vg[@]}" "$t" >/dev/null
done
"${vg[@]}" build-test/src/thpd-ctl verify policy/*.conf
THPD_WRAPPER="${vg[*]}" meson test -C build-test --print-errorlogs integration-daemon

echo "== fuzz: every libFuzzer target for 20 s (tools/fuzz-long.sh runs them longer)"
tools/fuzz.sh 20

echo "All tests passed."
