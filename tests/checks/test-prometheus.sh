#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# thpd's metrics and the alerting rules as Prometheus sees them, and their names where people
# read them:
# - "promtool check metrics" (Prometheus' parser and linter: names, types, help, units, syntax)
#   on the exposition of every metric family, as test-metrics --print-sample renders it;
# - every family is documented in thpd(8);
# - "promtool check rules" and "promtool test rules" on deploy/prometheus/, and every thpd_
#   metric the rules use is one thpd has.
#
# Usage: test-prometheus.sh TEST_METRICS THPD_8_PAGE RULES RULES_TEST

set -u
test_metrics=$1 page=$2 rules=$3 rules_test=$4
failed=0
fail() {
        echo "FAIL: $*"
        failed=1
}

sample=$("$test_metrics" --print-sample) || fail "test-metrics --print-sample failed"
families=$(grep '^# TYPE ' <<<"$sample" | awk '{ print $3 }')
[[ -n $families ]] || fail "no metric families in the sample"

for f in $families; do
        grep -qF "$f" "$page" || fail "thpd(8) does not document the metric $f"
done
for m in $(grep -oE '\bthpd_[a-z_]+' "$rules" | sort -u); do
        grep -qxF "$m" <<<"$families" || fail "$rules uses $m, which thpd does not have"
done

if ! command -v promtool >/dev/null; then
        echo "SKIP: promtool is not installed (Debian: prometheus); the names were checked"
        [[ $failed -eq 0 ]] && exit 77
        exit 1
fi
printf '%s\n' "$sample" | promtool check metrics || fail "promtool check metrics"
promtool check rules "$rules" || fail "promtool check rules"
# promtool resolves rule_files relative to the test file.
promtool test rules "$rules_test" || fail "promtool test rules"

[[ $failed -eq 0 ]] &&
        echo "ok: $(wc -w <<<"$families") metric families, $(grep -vc '^#' <<<"$sample") samples, documented and clean for promtool; the rules check and pass their tests"
exit $failed
