#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# thpd's tests in two tiers, from a fresh Debian 12 machine (each installs what it needs):
#
#     tools/test.sh          the quick tier: the -Werror build, then the unit, checks and
#                            integration suites (a few minutes; the README's test command)
#     tools/test.sh --full   the full tier (what .ci/run calls): the -Werror build, the unit
#                            and checks suites, then the faults and real-kernel suites, the
#                            system layer (our .deb in booted systemd-nspawn containers:
#                            Debian 13, then a short sid set for MemoryTHP= and Cockpit 370,
#                            the Cockpit page on Debian 12), the DaemonSet played by podman on
#                            a booted Debian 13 node, the unit, integration and faults suites
#                            under ASan/UBSan, valgrind, and every libFuzzer target for 20 s.
#                            The integration suite runs once, under ASan/UBSan (the quick tier
#                            runs it on the plain build; the .deb the system layers install is
#                            the plain build)
#
# Each configuration is built once. Run as root: the integration, faults, real-kernel and system
# layers need it and report "skipped" otherwise. Every layer prints its time and its count; the
# run ends with a table of the layers and an "N passed, N failed" line. docs/testing.md says what
# each layer covers.
#
# The full tier runs the real-kernel suite (and the one integration test reading the real knob)
# alone after the checks, then two lanes: the layers that write this machine's real /sys (the
# system layers, the DaemonSet) one after the other, and beside them the layers that only use
# scratch trees, whose output goes to build-test/lane-scratch.log, printed when that lane ends.
# Each layer that touches the real /sys holds /run/lock/thpd-real-sysfs.lock. The package and
# the rootfs trees are made in the background meanwhile.
set -euo pipefail
cd "$(dirname "$0")/.."

tier=quick
case "${1:-}" in
        "") ;;
        --full) tier=full ;;
        -h|--help)
                sed -n '3,28p' "$0" | sed 's/^# \{0,1\}//'
                exit 0 ;;
        *) echo "usage: tools/test.sh [--full]" >&2; exit 2 ;;
esac

# The integration scenarios mostly wait on their own systemd --user manager and bus, so more of
# them than there are cores run at once.
jobs=$(( $(nproc) * 2 ))
results=$(mktemp -d /tmp/thpd-test.XXXXXX)
# The background jobs of the full tier (the scratch lane, the makers of trees): ended with the
# run if it is interrupted. Each is started in a process group of its own (fork_group), and the
# whole group is signalled: killing the subshell alone left its meson test, dpkg-buildpackage or
# mmdebstrap running.
background=()
cleanup() {
        local pid
        for pid in "${background[@]}"; do
                kill -- -"$pid" 2>/dev/null || true
        done
        rm -rf "$results"
}

# fork_group COMMAND...: runs COMMAND in the background in a process group of its own (job
# control on for that one fork), whose ID is its PID ($!), and adds it to the background jobs.
fork_group() {
        set -m
        "$@" &
        set +m
        background+=($!)
}
trap cleanup EXIT
started=$SECONDS
# The lane of the layers running now: its layers have their own count file and table.
lane=serial

# layer NAME COMMAND...: runs one layer, timed. COMMAND writes "PASSED FAILED SKIPPED" to
# $count (meson_layer does it from meson's test log); a layer that does not is counted as one
# test that passed or failed with its exit status.
layer() {
        local name=$1; shift
        local count="$results/count.$lane" start=$SECONDS rc=0
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
        printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$lane" $((SECONDS - start)) "$passed" "$failed" "$skipped" \
                >>"$results/table.$lane"
        printf -- '-- %s: %d s, %d passed, %d failed, %d skipped\n' "$name" $((SECONDS - start)) "$passed" "$failed" "$skipped"
        return "$rc"
}

# The table: the serial layers, then each lane's, then those after the lanes (in the order they
# ran within each), with the lanes' own times and the background jobs' when there were any.
summary() {
        echo
        echo "== $tier tier: $((SECONDS - started)) s (wall clock)"
        printf '%-46s %-10s %7s %7s %7s %7s\n' layer lane seconds passed failed skipped
        local name where seconds passed failed skipped total_passed=0 total_failed=0 table rc
        for table in serial real-sysfs scratch after; do
                [ -f "$results/table.$table" ] || continue
                while IFS=$'\t' read -r name where seconds passed failed skipped; do
                        printf '%-46s %-10s %7s %7s %7s %7s\n' "$name" "$where" "$seconds" "$passed" "$failed" "$skipped"
                        total_passed=$((total_passed + passed))
                        total_failed=$((total_failed + failed))
                done <"$results/table.$table"
        done
        [ ! -f "$results/lanes" ] || cat "$results/lanes"
        local rc_file
        for rc_file in "$results"/job.*.rc; do
                [ -f "$rc_file" ] || continue
                read -r rc seconds <"$rc_file"
                name=${rc_file#"$results/job."}
                printf 'in the background: %s, %s s, exit status %s\n' "${name%.rc}" "$seconds" "$rc"
        done
        echo "$total_passed passed, $total_failed failed"
}

# meson_layer BUILDDIR LOGNAME [meson test arguments]: counts from meson's own test log. Once the
# lanes run, --no-rebuild: the build layers built everything, and two lanes' "meson test" must not
# run ninja in one build directory at once.
no_rebuild=()
meson_layer() {
        local dir=$1 logbase=$2; shift 2
        local rc=0
        meson test -C "$dir" "${no_rebuild[@]}" --print-errorlogs --logbase "$logbase" "$@" || rc=$?
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

# --- the full tier's background jobs ------------------------------------------------------------
# The package and the trees the system and DaemonSet layers use need the network and the CPU, not
# the knobs: they are made in two chains in the background from the start of the lanes (not
# sooner: the real-kernel suite runs alone before), and each
# layer waits for its own job (a tree's maker removes a partial tree it finds, so the layer must
# never start one while the background one runs). A job that failed is printed and the layer
# tries again itself, as it would have without the background.
#
# job NAME COMMAND...: runs COMMAND, its output in build-system/bg-NAME.log, then writes its exit
# status and seconds to $results/job.NAME.rc.
job() {
        local name=$1 start=$SECONDS rc=0; shift
        "$@" >"build-system/bg-$name.log" 2>&1 </dev/null || rc=$?
        echo "$rc $((SECONDS - start))" >"$results/job.$name.rc"
}

newest_deb() {
        ls build-system/debs/thpd_*.deb 2>/dev/null | tail -n 1 || true
}

# nocheck: dh_auto_test would run the unit suite a third time, on the tree this tier has
# already run it on (with -Werror, then under ASan/UBSan). Packagers' builds keep the check.
tier_deb_options=nocheck
make_package() {
        rm -rf build-system/debs
        DEB_BUILD_OPTIONS=$tier_deb_options THPD_KEEP_DEBS=build-system/debs tools/system-test.sh --package
}

make_rootfs() {
        THPD_SYSTEM_SUITE=$1 tools/system-test.sh --rootfs
}

# The engine's tree, and the image's base when the package was built (it holds the package's
# dependencies).
make_kube_trees() {
        THPD_DEB=$(newest_deb) tools/kube-test.sh --trees
}

declare -A chain_of=()
# below_the_knobs: puts the calling background job (and what it starts) below the layers that
# write the real knobs, which are the tier's critical path on two cores and mostly wait on
# containers and the kernel: beside CPU-bound jobs at the same share the Debian 13 layer took
# 684 s (447 s alone). nice alone does not do it: each container runs in a session of its own,
# so the kernel's autogroups weigh it against this run's whole session, whatever its nice. A cpu
# cgroup with a small share does (cgroup v1 cpu.shares, or v2 cpu.weight where the cpu
# controller is on); where neither can be made, nice 10 is what is left. The background jobs
# still get every cycle those layers leave.
below_the_knobs() {
        local group=thpd-tier-background
        renice -n 10 -p "$BASHPID" >/dev/null
        if [ -e /sys/fs/cgroup/cpu/cpu.shares ]; then
                mkdir -p "/sys/fs/cgroup/cpu/$group" 2>/dev/null &&
                        echo 128 >"/sys/fs/cgroup/cpu/$group/cpu.shares" &&
                        echo "$BASHPID" >"/sys/fs/cgroup/cpu/$group/cgroup.procs" || true
        elif grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
                { grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control ||
                        echo +cpu >/sys/fs/cgroup/cgroup.subtree_control; } 2>/dev/null &&
                        mkdir -p "/sys/fs/cgroup/$group" 2>/dev/null &&
                        echo 12 >"/sys/fs/cgroup/$group/cpu.weight" &&
                        echo "$BASHPID" >"/sys/fs/cgroup/$group/cgroup.procs" || true
        fi 2>/dev/null
}

# run_chain JOB... : runs the jobs ("NAME:FUNCTION ARG") one after the other.
run_chain() {
        local spec name command
        below_the_knobs
        for spec in "$@"; do
                name=${spec%%:*}
                read -ra command <<<"${spec#*:}"
                job "$name" "${command[@]}"
        done
}

# chain JOB... : runs the jobs one after the other in the background.
chain() {
        local spec
        fork_group run_chain "$@"
        for spec in "$@"; do
                chain_of[${spec%%:*}]=$!
        done
}

start_background() {
        [ "$(id -u)" -eq 0 ] || return 0
        mkdir -p build-system
        [ -e build-system/.gitignore ] || echo '*' >build-system/.gitignore
        # The package first (the Debian 13 layer and the image's base need it), then the engine's
        # tree; beside it the three rootfs trees in the order the layers use them.
        chain "package:make_package" "kube-trees:make_kube_trees"
        chain "rootfs-trixie:make_rootfs trixie" "rootfs-sid:make_rootfs sid" "rootfs-bookworm:make_rootfs bookworm"
}

# await NAME: waits for the background job NAME, prints its log, returns its exit status (0 when
# it was not started: not root).
await() {
        local name=$1 pid=${chain_of[$1]:-} start=$SECONDS rc seconds
        [ -n "$pid" ] || return 0
        while [ ! -f "$results/job.$name.rc" ]; do
                if ! kill -0 "$pid" 2>/dev/null && [ ! -f "$results/job.$name.rc" ]; then
                        echo "background job $name ended without a status"
                        return 1
                fi
                sleep 1
        done
        read -r rc seconds <"$results/job.$name.rc"
        echo "-- background job $name: exit status $rc after $seconds s (waited $((SECONDS - start)) s); its log:"
        sed 's/^/   | /' "build-system/bg-$name.log"
        return "$rc"
}

# real_sysfs COMMAND...: runs COMMAND holding the real-sysfs lock, so that no other run of this
# tier on this machine (another worktree's) writes the real knobs, or binds Redis's and
# PostgreSQL's host ports, at the same time. The lock is taken per layer, so two runs interleave.
# The command runs with the lock's descriptor closed (bash keeps it close-on-exec meanwhile): a
# process a layer leaves behind cannot hold the lock past the layer.
real_sysfs_lock=${THPD_REAL_SYSFS_LOCK:-/run/lock/thpd-real-sysfs.lock}
real_sysfs() {
        local rc=0 start=$SECONDS
        # Not root: these layers skip, and the lock (root's file) cannot be opened.
        if [ "$(id -u)" -ne 0 ] || ! exec 9>>"$real_sysfs_lock"; then
                "$@"
                return
        fi
        if ! flock -n 9; then
                echo
                echo "== waiting for $real_sysfs_lock (another run is writing the real knobs)"
                flock 9
                echo "== got $real_sysfs_lock after $((SECONDS - start)) s"
        fi
        "$@" 9>&- || rc=$?
        exec 9>&-
        return "$rc"
}

# --- the real-sysfs layers ----------------------------------------------------------------------

# The system layer exits 77 with its reason where it cannot run (not root, no nspawn boot).
# Debian 13 (the default suite) runs every scenario on the package built in the background (it
# builds it itself if that failed), which the sid and Debian 12 sets use too: systemd 260 and
# later isolate services through MemoryTHP=, which those scenarios check, and sid's Cockpit (370)
# is another PatternFly 6 release for the Cockpit page.
system_layer() {
        local rc=0 deb
        await package || echo "building the package in the background failed: the layer builds it"
        await rootfs-trixie || echo "making the rootfs in the background failed: the layer tries again"
        deb=$(newest_deb)
        if [ -n "$deb" ]; then
                THPD_DEB=$deb THPD_SYSTEM_COUNT=$count tools/system-test.sh -v || rc=$?
        else
                rm -rf build-system/debs
                DEB_BUILD_OPTIONS=$tier_deb_options THPD_KEEP_DEBS=build-system/debs THPD_SYSTEM_COUNT=$count \
                        tools/system-test.sh -v || rc=$?
        fi
        if [ "$rc" -eq 77 ]; then
                echo "system layer skipped (reason above)"
                echo "0 0 1" >"$count"
                return 0
        fi
        return "$rc"
}

system_sid_layer() {
        local rc=0 deb
        await rootfs-sid || echo "making the rootfs in the background failed: the layer tries again"
        deb=$(newest_deb)
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
        await rootfs-bookworm || echo "making the rootfs in the background failed: the layer tries again"
        deb=$(newest_deb)
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

# The DaemonSet played by Debian 13's podman on a booted Debian 13 node, with the package and the
# node's rootfs the Debian 13 run used (it builds the package itself when there is none), and the
# engine's tree and the image's base made in the background.
kube_layer() {
        local rc=0 deb
        await kube-trees || echo "making the trees in the background failed: the layer tries again"
        deb=$(newest_deb)
        DEB_BUILD_OPTIONS=$tier_deb_options THPD_DEB=$deb THPD_SYSTEM_COUNT=$count tools/kube-test.sh -v || rc=$?
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
        THPD_WRAPPER="${vg[*]}" meson test -C build-test "${no_rebuild[@]}" --print-errorlogs --logbase valgrind \
                integration-daemon || rc=$?
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

# run_scratch_lane: the scratch lane, its output in $scratch_log; it notes when it ended, as the
# wait for it ends only with the real-sysfs lane. Run in the background (fork_group), so that its
# layers' variables (lane, ASAN_OPTIONS) stay its own.
run_scratch_lane() {
        local st=0
        below_the_knobs
        scratch_lane >"$scratch_log" 2>&1 </dev/null || st=$?
        echo $((SECONDS - lanes_started)) >"$results/scratch-seconds"
        return "$st"
}

# --- the scratch lane ---------------------------------------------------------------------------
# The layers that only use scratch trees, beside the real-sysfs lane (which mostly waits on
# containers, sleeps and chromium), below it on the CPU (below_the_knobs). The checks and the faults
# suite on the plain build, then under ASan/UBSan
# the C unit tests and the daemon in the integration and faults scenarios but test_usage.py
# (suite real-thp, which reads the real knob: it runs before the lanes and after them), valgrind
# and the fuzzers. The checks run scripts and documents, and the real-kernel tests run the same
# daemon code the integration tests do, against /sys: not again under ASan/UBSan.
#
# The plain integration scenarios are not run here: ASan/UBSan runs the same scenarios on the
# same code, and the plain build is what the quick tier runs them on, what the real-kernel suite,
# integration-usage and valgrind run, and what the system and DaemonSet layers install (the
# .deb). The plain faults run stays: its RSS checks (no growth over a reload, a SIGHUP storm,
# random calls) mean nothing under ASan's quarantine, and the quick tier has no faults suite.
# Exits non-zero if a layer failed.
scratch_lane() {
        local st=0
        lane=scratch
        layer "checks" meson_layer build-test checks --suite checks --num-processes "$(nproc)" || st=1
        layer "faults" meson_layer build-test faults --suite faults --num-processes "$jobs" || st=1
        export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
        if layer "build (ASan/UBSan)" build build-asan -Dwerror=true -Db_sanitize=address,undefined -Db_lundef=false; then
                touch "$results/asan-built"
                layer "unit (ASan/UBSan)" meson_layer build-asan unit --suite unit --num-processes "$(nproc)" || st=1
                layer "integration+faults (ASan/UBSan, but usage)" meson_layer build-asan integration \
                        --suite integration --suite faults --no-suite real-thp --num-processes "$jobs" || st=1
        else
                st=1
        fi
        unset ASAN_OPTIONS UBSAN_OPTIONS
        layer "valgrind" valgrind_layer || st=1
        layer "fuzz (20 s per target)" fuzz_layer || st=1
        return "$st"
}

tools/deps.sh

status=0
layer "build (-Werror)" build build-test -Dwerror=true || status=$?
# The trees and the package come from the network and dpkg, not from the knobs: made from here
# on, they are ready when the lanes start (made at the lanes' start, the Debian 13 layer waited
# two minutes for them). The real-kernel suite runs beside their last minute or so.
if [ "$tier" = full ] && [ "$status" -eq 0 ]; then
        start_background
fi
if [ "$status" -eq 0 ]; then
        layer "unit" meson_layer build-test unit --suite unit --num-processes "$(nproc)" || status=1
        # The full tier runs the checks in its scratch lane: they read scripts and documents,
        # not the knobs, and before the lanes they held up the layers that write the knobs.
        if [ "$tier" = quick ]; then
                layer "checks" meson_layer build-test checks --suite checks --num-processes "$(nproc)" || status=1
                layer "integration" meson_layer build-test integration --suite integration --num-processes "$jobs" || status=1
        fi
fi

if [ "$tier" = full ] && [ "$status" -eq 0 ]; then
        # Before the lanes: integration-usage reads the real knob and needs the kernel to give
        # its helper huge pages; the real-kernel tests write this machine's /sys and fragment its
        # memory. (Beside the lanes, on a machine other runs loaded too, the storm test's
        # fragmenter missed its 180 s.)
        real_sysfs layer "integration: usage (real THP)" meson_layer build-test integration-usage \
                --suite real-thp --num-processes 1 || status=1
        real_sysfs layer "real-kernel" meson_layer build-test real-kernel --suite real-kernel --num-processes 1 || status=1

        no_rebuild=(--no-rebuild)
        lanes_started=$SECONDS
        scratch_log=build-test/lane-scratch.log
        echo
        echo "== the scratch lane runs beside the real-sysfs lane; its log, printed when it ends: $scratch_log"
        # The lock's descriptor is not open yet.
        fork_group run_scratch_lane
        scratch_pid=$!

        # One at a time: these write this machine's /sys and bind Redis's host port.
        lane=real-sysfs
        real_sysfs layer "system (booted containers, Debian 13)" system_layer || status=1
        real_sysfs layer "system (sid: MemoryTHP=, Cockpit 370)" system_sid_layer || status=1
        real_sysfs layer "system (Debian 12: Cockpit 287)" system_bookworm_layer || status=1
        real_sysfs layer "DaemonSet (podman kube play)" kube_layer || status=1
        real_seconds=$((SECONDS - lanes_started))

        echo
        echo "== the real-sysfs lane ended after $real_seconds s; waiting for the scratch lane"
        scratch_status=0
        wait "$scratch_pid" || scratch_status=$?
        scratch_seconds=$(cat "$results/scratch-seconds" 2>/dev/null || echo "?")
        echo "== the scratch lane ($scratch_log), $scratch_seconds s, exit status $scratch_status:"
        cat "$scratch_log"
        [ "$scratch_status" -eq 0 ] || status=1
        # Every background job was waited for by its layer; a skipped or failed one may still run.
        for pid in "${background[@]}"; do
                wait "$pid" 2>/dev/null || true
        done
        printf 'lanes: real-sysfs %s s, scratch %s s, side by side from %s s into the run\n' \
                "$real_seconds" "$scratch_seconds" "$lanes_started" >"$results/lanes"

        lane=after
        if [ -f "$results/asan-built" ]; then
                export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
                real_sysfs layer "integration: usage (ASan/UBSan, real THP)" meson_layer build-asan integration-usage \
                        --suite real-thp --num-processes 1 || status=1
                unset ASAN_OPTIONS UBSAN_OPTIONS
        fi
fi

summary
exit "$status"
