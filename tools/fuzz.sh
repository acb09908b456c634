#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Builds the libFuzzer targets (meson -Dfuzz=true, clang) in build-fuzz/ and fuzzes each for
# SECONDS (default 20), as many at once as there are cores (FUZZ_JOBS= sets it).
# Usage: tools/fuzz.sh [SECONDS] [fuzz-NAME...]
#
# Each target starts from its seed corpus and regression inputs in fuzz/<target>/ (read
# only) and keeps what it finds in build-fuzz/corpus/<target>/, so a later run goes on from
# there. A crash, leak, timeout or sanitizer report fails the run; its input is left in
# build-fuzz/artifacts/. Fix the bug, then add that input to fuzz/<target>/ as a
# regression input ("meson test -C build-fuzz --suite fuzz" replays every one of them).
# Prints one line per target: executions, executions per second, and libFuzzer's coverage
# (cov: edges, ft: features) at the end; the same table is kept in build-fuzz/fuzz-summary.txt.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-20}
shift || true
build=build-fuzz

if ! command -v clang >/dev/null; then
        echo "fuzz: clang is not installed (tools/deps.sh installs it); skipping the fuzz targets"
        exit 0
fi
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return 0; }\n' >"$probe/probe.c"
if ! clang -fsanitize=fuzzer,address,undefined "$probe/probe.c" -o "$probe/probe" 2>"$probe/err"; then
        echo "fuzz: clang cannot link libFuzzer programs (Debian: libclang-rt-14-dev); skipping the fuzz targets:"
        cat "$probe/err"
        exit 0
fi

# Only the fuzz targets and what they link are built: clang warns about other things than gcc,
# and the -Werror builds of the rest are tools/test.sh's business.
if [ ! -f "$build/build.ninja" ]; then
        CC=clang meson setup "$build" -Dfuzz=true -Dtests=false
fi
if [ $# -gt 0 ]; then
        targets=("$@")
else
        mapfile -t targets < <(meson introspect "$build" --targets |
                /usr/bin/python3 -c 'import json, sys; print("\n".join(sorted(t["name"] for t in json.load(sys.stdin) if t["name"].startswith("fuzz-"))))')
fi
[ ${#targets[@]} -gt 0 ] || { echo "fuzz: no fuzz-* targets in $build" >&2; exit 2; }
meson compile -C "$build" "${targets[@]}"

mkdir -p "$build/artifacts" "$build/logs"
summary="$build/fuzz-summary.txt"
printf '%-14s %8s %12s %10s %8s %8s %8s  %s\n' target seconds execs 'execs/s' cov ft corpus result >"$summary"

# fuzz_one TARGET: one libFuzzer run; its exit status in $build/logs/TARGET.status.
fuzz_one() {
        local t=$1
        local exe="$build/fuzz/$t" seeds="fuzz/$t" corpus="$build/corpus/$t" dict="fuzz/$t.dict"
        mkdir -p "$corpus"
        local args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
                    -artifact_prefix="$build/artifacts/$t-")
        [ -f "$dict" ] && args+=(-dict="$dict")
        local status=0
        "$exe" "${args[@]}" "$corpus" "$seeds" >"$build/logs/$t.log" 2>&1 || status=$?
        echo "$status" >"$build/logs/$t.status"
}

# Each target is one single-threaded process: as many run at once as there are cores, so a run
# takes the same fuzzing time per target in less wall time.
jobs=${FUZZ_JOBS:-$(nproc)}
for t in "${targets[@]}"; do
        [ -x "$build/fuzz/$t" ] || { echo "fuzz: no target $t in $build/fuzz" >&2; exit 2; }
done
running=0
for t in "${targets[@]}"; do
        if [ "$running" -ge "$jobs" ]; then
                wait -n || true
                running=$((running - 1))
        fi
        echo "== $t for $seconds s"
        fuzz_one "$t" &
        running=$((running + 1))
done
wait

failed=0 passed=0
for t in "${targets[@]}"; do
        log="$build/logs/$t.log"
        status=$(cat "$build/logs/$t.status")
        execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
        rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
        final=$(grep -E '^#[0-9]+[[:space:]]+(DONE|NEW|REDUCE|pulse|INITED)' "$log" | tail -1 || true)
        cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$final")
        ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$final")
        corp=$(sed -n 's/.* corp: \([0-9]*\)\/.*/\1/p' <<<"$final")
        if [ "$status" -eq 0 ]; then
                result=ok
                passed=$((passed + 1))
        else
                result="FAILED (status $status)"
                failed=$((failed + 1))
                tail -n 60 "$log"
                ls -l "$build/artifacts/$t-"* 2>/dev/null || true
        fi
        printf '%-14s %8s %12s %10s %8s %8s %8s  %s\n' "$t" "$seconds" "${execs:-?}" "${rate:-?}" "${cov:-?}" \
                "${ft:-?}" "${corp:-?}" "$result" >>"$summary"
done
echo
cat "$summary"
# tools/test.sh counts the targets as its fuzz layer's tests.
[ -z "${FUZZ_COUNT:-}" ] || echo "$passed $failed 0" >"$FUZZ_COUNT"
if [ "$failed" -ne 0 ]; then
        echo "fuzz: a target failed; the input that did it is in $build/artifacts/, the log in $build/logs/" >&2
        exit 1
fi
