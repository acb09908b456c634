#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# "promtool check metrics" (Prometheus' parser and linter: names, types, help, units, syntax) on
# the exposition of every metric family thpd has, as test-metrics --print-sample renders it.
#
# Usage: test-metrics-promtool.sh TEST_METRICS
set -eu

if ! command -v promtool >/dev/null; then
        echo "SKIP: promtool is not installed (Debian: prometheus)"
        exit 77
fi
out=$("$1" --print-sample)
[ -n "$out" ] || { echo "FAIL: no sample"; exit 1; }
printf '%s\n' "$out" | promtool check metrics
echo "promtool check metrics: $(printf '%s\n' "$out" | grep -c '^# TYPE') families, $(printf '%s\n' "$out" | grep -vc '^#') samples, no problem"
