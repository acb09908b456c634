#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# thpd's tests in two tiers, from a fresh Debian 12 machine (each installs what it needs):
#
#     tools/test.sh          the quick tier: the -Werror build, then the unit, checks and
#                            integration suites (a few minutes; the README's test command)
#     tools/test.sh --full   the full tier (what .ci/run calls): the quick tier, then the faults
#                            and real-kernel suites, the system layer (our .deb in booted
#                            systemd-nspawn containers: Debian 13, then a short sid set for
#                            MemoryTHP= and Cockpit 370, the Cockpit page on Debian 12), the
#                            DaemonSet played by podman on a booted Debian 13 node, the unit,
#                            integration and faults suites under ASan/UBSan, valgrind, and
#                            every libFuzzer target for 20 s
#
# Each configuration is built once. Run as root: the integration, faults, real-kernel and system
# layers need it and report "skipped" otherwise. Every layer prints its time and its count; the
# run ends with a table of the layers and an "N passed, N failed" line. docs/testing.md says what
# each layer covers.
set -euo pipefail
cd "$(dirname "$0")/.."

tier=quick
case "${1:-}" in
        "") ;;
        --full) tier=full ;;
        -h|--help)
                sed -n '3,18p' "$0" | sed 's/^# \{0,1\}//'
                exit 0 ;;
        *) echo "usage: tools/test.sh [--full]" >&2; exit 2 ;;
esac

# The integration scenarios mostly wait on their own systemd --user manager and bus, so more of
# them than there are cores run at once.
jobs=$(( $(nproc) * 2 ))
results=$(mktemp -d /tmp/thpd-test.XXXXXX)
trap 'rm -rf "$results"' EXIT
started=$SECONDS

# layer NAME COMMAND...: runs one layer, timed. COMMAND writes "PASSED FAILED SKIPPED" to
# $count (meson_layer does it from meson's test log); a layer that does not is counted as one
# test that passed or failed with its exit status.
layer() {
        local name=$1; shift
        local count="$results/count" start=$SECONDS rc=0
        rm -f "$count"
        echo
        echo "== $name"
        export count
        "$@" || rc=$?
        local passed failed skipped
        if [ -s "$count" ]; then
                read -r passed failed skipped <"$count"
        elif [ "$rc" -eq 0 ]; then
                passed=1 failed=0 skipped=0
        else
                passed=0 failed=1 skipped=0
        fi
        # A layer that fails without naming a failed test (a build error, a crashed runner) fails.
        [ "$rc" -eq 0 ] || [ "$failed" -gt 0 ] || failed=1
        printf '%s\t%s\t%s\t%s\t%s\n' "$name" $((SECONDS - start)) "$passed" "$failed" "$skipped" >>"$results/table"
        printf -- '-- %s: %d s, %d passed, %d failed, %d skipped\n' "$name" $((SECONDS - start)) "$passed" "$failed" "$skipped"
        return "$rc"
}

summary() {
        echo
        echo "== $tier tier: $((SECONDS - started)) s"
        printf '%-34s %7s %7s %7s %7s\n' layer seconds passed failed skipped
        local name seconds passed failed skipped total_passed=0 total_failed=0
        while IFS=$'\t' read -r name seconds passed failed skipped; do
                printf '%-34s %7s %7s %7s %7s\n' "$name" "$seconds" "$passed" "$failed" "$skipped"
                total_passed=$((total_passed + passed))
                total_failed=$((total_failed + failed))
        done <"$results/table"
        echo "$total_passed passed, $total_failed failed"
}

# meson_layer BUILDDIR LOGNAME [meson test arguments]: counts from meson's own test log.
meson_layer() {
        local dir=$1 logbase=$2; shift 2
        local rc=0
        meson test -C "$dir" --print-errorlogs --logbase "$logbase" "$@" || rc=$?
        /usr/bin/python3 tools/meson-log-count.py "$dir/meson-logs/$logbase.json" >"$count"
        return "$rc"
}

build() {
        local dir=$1; shift
        if [ ! -f "$dir/build.ninja" ]; then
                meson setup "$dir" "$@"
        else
                meson configure "$dir" "$@"
        fi
        meson compile -C "$dir" || return
        echo "0 0 0" >"$count"
}

# The system layer exits 77 with its reason where it cannot run (not root, no nspawn boot).
# Debian 13 (the default suite) runs every scenario and keeps the packages it built for the sid
# set: systemd 260 and later isolate services through MemoryTHP=, which those scenarios check,
# and sid's Cockpit (370) is another PatternFly 6 release for the Cockpit page.
system_layer() {
        local rc=0
        rm -rf build-system/debs
        THPD_KEEP_DEBS=build-system/debs THPD_SYSTEM_COUNT=$count tools/system-test.sh -v || rc=$?
        if [ "$rc" -eq 77 ]; then
                echo "system layer skipped (reason above)"
                echo "0 0 1" >"$count"
                return 0
        fi
        return "$rc"
}

system_sid_layer() {
        local rc=0 deb
        deb=$(ls build-system/debs/thpd_*.deb 2>/dev/null | tail -n 1) || true
        if [ -z "$deb" ]; then
                echo "system layer (sid) skipped: the Debian 13 run built no package"
                echo "0 0 1" >"$count"
                return 0
        fi
        THPD_SYSTEM_SUITE=sid THPD_DEB=$deb THPD_SYSTEM_COUNT=$count tools/system-test.sh -v \
                SystemTest.test_1_package SystemTest.test_8_service_scope SystemTest.test_9_cockpit \
                SystemTest.test_10_mixed_host SystemTest.test_11_always_alone || rc=$?
        if [ "$rc" -eq 77 ]; then
                echo "0 0 1" >"$count"
                return 0
        fi
        return "$rc"
}

# Debian 12's Cockpit (287) is the PatternFly 4 release users of Debian 12 run; the page ships
# its own PatternFly 6 and must look the same there. The package built for the Debian 13 run is
# installed as it is, as on the other suites.
system_bookworm_layer() {
        local rc=0 deb
        deb=$(ls build-system/debs/thpd_*.deb 2>/dev/null | tail -n 1) || true
        if [ -z "$deb" ]; then
                echo "system layer (Debian 12) skipped: the Debian 13 run built no package"
                echo "0 0 1" >"$count"
                return 0
        fi
        THPD_SYSTEM_SUITE=bookworm THPD_DEB=$deb THPD_SYSTEM_COUNT=$count tools/system-test.sh -v \
                SystemTest.test_9_cockpit || rc=$?
        if [ "$rc" -eq 77 ]; then
                echo "0 0 1" >"$count"
                return 0
        fi
        return "$rc"
}

# The DaemonSet layer's own trees (Debian 13 with podman, the image's Debian 12 base) need the
# network and the package, not the knobs: they are made in the background while the sid and
# Debian 12 system layers run, and the layer waits for them before it starts.
kube_trees=
start_kube_trees() {
        local deb
        [ "$(id -u)" -eq 0 ] || return 0
        deb=$(ls build-system/debs/thpd_*.deb 2>/dev/null | tail -n 1) || true
        mkdir -p build-system
        THPD_DEB=$deb tools/kube-test.sh --trees >build-system/kube-trees.log 2>&1 &
        kube_trees=$!
}

# The DaemonSet played by Debian 13's podman on a booted Debian 13 node, with the package and the
# node's rootfs the Debian 13 run made (it builds the package itself when that run built none).
kube_layer() {
        local rc=0 deb
        if [ -n "$kube_trees" ]; then
                wait "$kube_trees" || echo "making the trees in the background failed (the layer tries again):"
                cat build-system/kube-trees.log
        fi
        deb=$(ls build-system/debs/thpd_*.deb 2>/dev/null | tail -n 1) || true
        THPD_DEB=$deb THPD_SYSTEM_COUNT=$count tools/kube-test.sh -v || rc=$?
        if [ "$rc" -eq 77 ]; then
                echo "DaemonSet layer skipped (reason above)"
                echo "0 0 1" >"$count"
                return 0
        fi
        return "$rc"
}

valgrind_layer() {
        local vg=(valgrind --quiet --leak-check=full --show-leak-kinds=definite,indirect
                  --errors-for-leak-kinds=definite,indirect --error-exitcode=99 --child-silent-after-fork=yes)
        local passed=0 failed=0 skipped=0 t rc
        # With an argument: the runs meson has as tests of their own (tests/unit/meson.build). A
        # program that exits 77 could not run its tests here (no PSI, no THP): skipped.
        for t in build-test/tests/unit/test-* "build-test/tests/unit/test-policy-dirs --root" \
                 "build-test/tests/unit/test-storm-watcher --psi"; do
                [ -f "${t%% *}" ] && [ -x "${t%% *}" ] || continue
                # test-sysfs needs Check's fork per test: it unshares mounts and drops privileges.
                [ "$(basename "$t")" = test-sysfs ] && continue
                echo "valgrind $t"
                rc=0
                # $t unquoted: the program and its argument.
                CK_FORK=no THPD_SOURCE_ROOT="$PWD" "${vg[@]}" $t >/dev/null || rc=$?
                case $rc in
                0) passed=$((passed + 1)) ;;
                77) skipped=$((skipped + 1)) ;;
                *)
                        echo "FAILED: valgrind $t"
                        failed=$((failed + 1))
                        ;;
                esac
        done
        echo "valgrind thpd-ctl verify policy/*.conf"
        if "${vg[@]}" build-test/src/ctl/thpd-ctl verify policy/*.conf; then
                passed=$((passed + 1))
        else
                failed=$((failed + 1))
        fi
        local daemon
        rc=0
        THPD_WRAPPER="${vg[*]}" meson test -C build-test --print-errorlogs --logbase valgrind integration-daemon || rc=$?
        daemon=$(grep -c '"result": "OK"' build-test/meson-logs/valgrind.json || true)
        if [ "$rc" -eq 0 ] && [ "$daemon" -eq 1 ]; then
                passed=$((passed + 1))
        else
                failed=$((failed + 1))
        fi
        echo "$passed $failed $skipped" >"$count"
        [ "$failed" -eq 0 ]
}

fuzz_layer() {
        FUZZ_COUNT=$count tools/fuzz.sh 20
}

tools/deps.sh

status=0
layer "build (-Werror)" build build-test -Dwerror=true || status=$?
if [ "$status" -eq 0 ]; then
        layer "unit" meson_layer build-test unit --suite unit --num-processes "$(nproc)" || status=1
        layer "checks" meson_layer build-test checks --suite checks --num-processes "$(nproc)" || status=1
        layer "integration" meson_layer build-test integration --suite integration --num-processes "$jobs" || status=1
fi

if [ "$tier" = full ] && [ "$status" -eq 0 ]; then
        layer "faults" meson_layer build-test faults --suite faults --num-processes "$jobs" || status=1
        # Alone: these write this machine's /sys and fragment its memory.
        layer "real-kernel" meson_layer build-test real-kernel --suite real-kernel --num-processes 1 || status=1
        layer "system (booted containers, Debian 13)" system_layer || status=1
        start_kube_trees
        layer "system (sid: MemoryTHP=, Cockpit 370)" system_sid_layer || status=1
        layer "system (Debian 12: Cockpit 287)" system_bookworm_layer || status=1
        layer "DaemonSet (podman kube play)" kube_layer || status=1
        # Under the sanitizers, what runs thpd's own code: the C unit tests and the daemon in the
        # integration and faults scenarios. The checks run scripts and documents, and the
        # real-kernel tests run the same daemon code the integration tests do, against /sys.
        export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
        if layer "build (ASan/UBSan)" build build-asan -Dwerror=true -Db_sanitize=address,undefined -Db_lundef=false; then
                layer "unit (ASan/UBSan)" meson_layer build-asan unit --suite unit --num-processes "$(nproc)" || status=1
                layer "integration+faults (ASan/UBSan)" meson_layer build-asan integration \
                        --suite integration --suite faults --num-processes "$jobs" || status=1
        else
                status=1
        fi
        unset ASAN_OPTIONS UBSAN_OPTIONS
        layer "valgrind" valgrind_layer || status=1
        layer "fuzz (20 s per target)" fuzz_layer || status=1
fi

summary
exit "$status"
