/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib.h>
#include <sys/stat.h>

#include "metrics.h"
#include "policy.h"
#include "runtime-file.h"
#include "test-util.h"
#include "util.h"

/* With --print-sample, prints the exposition of sample_input() and exits: tests/checks/meson.build
 * feeds it to "promtool check metrics", which judges every family at once. */

typedef struct Sample {
        MetricsKnob knobs[4];
        MetricsPolicy policies[2];
        const char *redis_units[2];
        MetricsPool pools[2];
        MetricsRestart restarts[1];
        MetricsDrift drift[2];
        Diagnostics diagnostics;
        MetricsCounters counters;
        ThpSizeStats sizes[2];
        MetricsInput in;
} Sample;

/* Every family with at least one sample, and the values the assertions below name. */
static void sample_input(Sample *s) {
        *s = (Sample) {
                .knobs = {
                        { KNOB_ENABLED, 2, 0, 1, SOURCE_POLICY, "redis.conf", "redis-server.service" },
                        { KNOB_DEFRAG, 2, 1, 2, SOURCE_MITIGATION, NULL, NULL },
                        { KNOB_KHUGEPAGED_MAX_PTES_NONE, 511, 511, 511, SOURCE_BASELINE, NULL, NULL },
                        { KNOB_KHUGEPAGED_PAGES_TO_SCAN, KNOB_VALUE_UNSET, 2048, 4096, SOURCE_OVERRIDE, NULL, NULL },
                },
                .redis_units = { "redis-server.service", "redis-server@6380.service" },
                .pools = {
                        { 2048, POOL_NODE_ANY, 8, 16, 24, 15, 3 },
                        { 1048576, 0, 0, 2, 2, 2, 2 },
                },
                .restarts = { { "postgresql@15-main.service", "postgresql.conf" } },
                .drift = {
                        { "enabled", "tuned.service", 4 },
                        { "enabled", "unknown", 1 },
                },
                .counters = {
                        .knob_writes = 12,
                        .knob_errors = 1,
                        .reloads = 2,
                        .storms_detected = { 3, 0, 1 },
                        .storm_usec = { 95500000, 0, 0 },
                        .storm_last_detected_usec = { UINT64_C(1700000000250000), 0, UINT64_C(1700000100000000) },
                        .mitigation_steps = 2,
                },
        };
        /* 64 kB with every counter of 6.18 at its index, 2 MB with one counter: what a kernel lacks
         * has no sample. */
        s->sizes[0].size_kb = 64;
        for (ThpStat stat = 0; stat < _THP_STAT_MAX; stat++) {
                s->sizes[0].value[stat] = 100 + stat;
                s->sizes[0].present |= 1u << stat;
        }
        s->sizes[1].size_kb = 2048;
        s->sizes[1].value[THP_STAT_NR_ANON] = 7;
        s->sizes[1].present = 1u << THP_STAT_NR_ANON;
        s->policies[0] = (MetricsPolicy) { "postgresql.conf", false, NULL, 0 };
        s->policies[1] = (MetricsPolicy) { "redis.conf", true, s->redis_units, 2 };
        diagnostics_init(&s->diagnostics);
        diagnostics_add(&s->diagnostics, DIAGNOSTIC_WARNING, "/etc/thpd/policy.d/a.conf", 3, "unknown key");
        diagnostics_add(&s->diagnostics, DIAGNOSTIC_ERROR, "/etc/thpd/policy.d/b.conf", 2, "bad value");
        diagnostics_add(&s->diagnostics, DIAGNOSTIC_ERROR, "/etc/thpd/policy.d/a.conf", 5, "bad value");
        diagnostics_add(&s->diagnostics, DIAGNOSTIC_ERROR, "/etc/thpd/policy.d/a.conf", 6, "bad value");

        s->in = (MetricsInput) {
                .version = "0.1.0",
                .start_time_usec = UINT64_C(1700000000000000),
                .units_ready = true,
                .last_apply_errors = 1,
                .knobs = s->knobs,
                .n_knobs = ELEMENTSOF(s->knobs),
                .policies = s->policies,
                .n_policies = ELEMENTSOF(s->policies),
                .policy_diagnostics = &s->diagnostics,
                .pools = s->pools,
                .n_pools = ELEMENTSOF(s->pools),
                .needs_restart = s->restarts,
                .n_needs_restart = ELEMENTSOF(s->restarts),
                .n_override = 1,
                .override_expires_usec = UINT64_C(1700000600000000),
                .storm_watching = true,
                .storm_action = STORM_ACTION_MITIGATE,
                .storm_phases = { STORM_PHASE_STORM, STORM_PHASE_CALM, STORM_PHASE_COOLING },
                .mitigation_level = 1,
                .counters = &s->counters,
                .drift = s->drift,
                .n_drift = ELEMENTSOF(s->drift),
                .n_drift_conflicts = 1,
                .size_stats = s->sizes,
                .n_size_stats = ELEMENTSOF(s->sizes),
        };
}

static void sample_done(Sample *s) {
        diagnostics_clear(&s->diagnostics);
}

static bool has_line(const char *text, const char *line) {
        g_autofree char *needle = g_strconcat("\n", line, "\n", NULL);
        g_autofree char *haystack = g_strconcat("\n", text, NULL);

        return strstr(haystack, needle) != NULL;
}

#define assert_line(text, line) ck_assert_msg(has_line(text, line), "missing line: %s\nin:\n%s", line, text)
#define assert_no_line(text, line) ck_assert_msg(!has_line(text, line), "unexpected line: %s", line)

START_TEST(test_sample_values) {
        Sample s;
        g_autofree char *text = NULL;

        sample_input(&s);
        text = metrics_format(&s.in);

        assert_line(text, "thpd_build_info{version=\"0.1.0\"} 1");
        assert_line(text, "thpd_start_time_seconds 1700000000");
        assert_line(text, "thpd_systemd_manager_ready 1");
        assert_line(text, "thpd_last_apply_errors 1");
        assert_line(text, "thpd_knob_writes_total 12");
        assert_line(text, "thpd_knob_errors_total 1");
        assert_line(text, "thpd_reloads_total 2");
        assert_line(text, "thpd_knob_info{knob=\"enabled\",value=\"always\",target=\"never\",baseline=\"madvise\","
                          "source=\"policy\",policy=\"redis.conf\",unit=\"redis-server.service\"} 1");
        assert_line(text, "thpd_knob_info{knob=\"defrag\",value=\"madvise\",target=\"defer\",baseline=\"madvise\","
                          "source=\"mitigation\",policy=\"\",unit=\"\"} 1");
        /* An unreadable knob keeps its series, with no value: it does not vanish from a dashboard. */
        assert_line(text, "thpd_knob_info{knob=\"khugepaged/pages_to_scan\",value=\"\",target=\"2048\",baseline=\"4096\","
                          "source=\"override\",policy=\"\",unit=\"\"} 1");
        assert_line(text, "thpd_knob_value{knob=\"khugepaged/max_ptes_none\"} 511");
        assert_no_line(text, "thpd_knob_value{knob=\"enabled\"} 2");
        ck_assert_ptr_null(strstr(text, "thpd_knob_value{knob=\"khugepaged/pages_to_scan\"}"));

        assert_line(text, "thpd_policies_loaded 2");
        assert_line(text, "thpd_policy_files_invalid 2");
        assert_line(text, "thpd_policy_problems{file=\"/etc/thpd/policy.d/a.conf\",severity=\"error\"} 2");
        assert_line(text, "thpd_policy_problems{file=\"/etc/thpd/policy.d/a.conf\",severity=\"warning\"} 1");
        assert_line(text, "thpd_policy_problems{file=\"/etc/thpd/policy.d/b.conf\",severity=\"error\"} 1");
        assert_line(text, "thpd_policy_active{policy=\"postgresql.conf\"} 0");
        assert_line(text, "thpd_policy_active{policy=\"redis.conf\"} 1");
        assert_line(text, "thpd_active_unit_info{policy=\"redis.conf\",unit=\"redis-server@6380.service\"} 1");
        assert_line(text, "thpd_unit_needs_restart_info{unit=\"postgresql@15-main.service\",policy=\"postgresql.conf\"} 1");
        assert_line(text, "thpd_override_knobs 1");
        assert_line(text, "thpd_override_expiry_timestamp_seconds 1700000600");

        assert_line(text, "thpd_hugetlb_pool_baseline_pages{page_size=\"2M\",node=\"all\"} 8");
        assert_line(text, "thpd_hugetlb_pool_requested_pages{page_size=\"2M\",node=\"all\"} 16");
        assert_line(text, "thpd_hugetlb_pool_target_pages{page_size=\"2M\",node=\"all\"} 24");
        assert_line(text, "thpd_hugetlb_pool_allocated_pages{page_size=\"2M\",node=\"all\"} 15");
        assert_line(text, "thpd_hugetlb_pool_free_pages{page_size=\"2M\",node=\"all\"} 3");
        assert_line(text, "thpd_hugetlb_pool_shortfall_pages{page_size=\"2M\",node=\"all\"} 9");
        assert_line(text, "thpd_hugetlb_pool_shortfall_pages{page_size=\"1G\",node=\"0\"} 0");

        assert_line(text, "thpd_storm_detection_enabled 1");
        assert_line(text, "thpd_storm_action_info{action=\"mitigate\"} 1");
        assert_line(text, "thpd_storm_phase{kind=\"direct-compaction\",phase=\"storm\"} 1");
        assert_line(text, "thpd_storm_phase{kind=\"direct-compaction\",phase=\"calm\"} 0");
        assert_line(text, "thpd_storm_phase{kind=\"kcompactd\",phase=\"cooling\"} 1");
        assert_line(text, "thpd_storms_detected_total{kind=\"direct-compaction\"} 3");
        assert_line(text, "thpd_storm_seconds_total{kind=\"direct-compaction\"} 95.500000");
        assert_line(text, "thpd_storm_seconds_total{kind=\"khugepaged\"} 0");
        assert_line(text, "thpd_storm_last_detected_timestamp_seconds{kind=\"direct-compaction\"} 1700000000.250000");
        ck_assert_ptr_null(strstr(text, "thpd_storm_last_detected_timestamp_seconds{kind=\"khugepaged\"}"));
        assert_line(text, "thpd_storm_mitigation_level 1");
        assert_line(text, "thpd_storm_mitigation_steps_total 2");
        sample_done(&s);
}
END_TEST

/* The format's rules, checked here without promtool: every sample follows the # HELP and # TYPE
 * of its family, each family appears once with its samples together, counters end in _total,
 * and a series (name and labels) appears once. */
START_TEST(test_sample_structure) {
        g_autoptr(GHashTable) families = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        g_autoptr(GHashTable) series = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        g_autofree char *text = NULL, *current = NULL, *type = NULL;
        g_auto(GStrv) lines = NULL;
        Sample s;

        sample_input(&s);
        text = metrics_format(&s.in);
        ck_assert(g_str_has_suffix(text, "\n"));
        lines = g_strsplit(text, "\n", -1);
        for (char **l = lines; *l && **l; l++) {
                g_auto(GStrv) words = g_strsplit(*l, " ", 4);

                if (g_str_has_prefix(*l, "# HELP ")) {
                        ck_assert_msg(!g_hash_table_contains(families, words[2]), "family %s twice", words[2]);
                        g_hash_table_add(families, g_strdup(words[2]));
                        g_free(current);
                        current = g_strdup(words[2]);
                        ck_assert_ptr_nonnull(words[3]);
                        continue;
                }
                if (g_str_has_prefix(*l, "# TYPE ")) {
                        ck_assert_str_eq(words[2], current);
                        ck_assert(streq(words[3], "gauge") || streq(words[3], "counter"));
                        g_free(type);
                        type = g_strdup(words[3]);
                        ck_assert_int_eq(g_str_has_suffix(current, "_total"), streq(type, "counter"));
                        continue;
                }
                ck_assert_msg(current && g_str_has_prefix(*l, current) &&
                              ((*l)[strlen(current)] == '{' || (*l)[strlen(current)] == ' '),
                              "sample outside its family: %s", *l);
                g_autofree char *key = g_strndup(*l, strrchr(*l, ' ') - *l);
                ck_assert_msg(!g_hash_table_contains(series, key), "series twice: %s", key);
                g_hash_table_add(series, TAKE_PTR(key));
        }
        ck_assert_uint_ge(g_hash_table_size(families), 30);
        sample_done(&s);
}
END_TEST

START_TEST(test_label_escaping) {
        MetricsCounters counters = {};
        const char *units[] = { "systemd-fsck@dev-disk-by\\x2duuid-1234.service" };
        MetricsPolicy policy = { "odd\"name\n.conf", true, units, 1 };
        Diagnostics diag;
        MetricsInput in = {
                .version = "0.1.0",
                .policies = &policy,
                .n_policies = 1,
                .policy_diagnostics = &diag,
                .counters = &counters,
        };
        g_autofree char *text = NULL;

        diagnostics_init(&diag);
        /* A file name need not be UTF-8; the exposition format must be. */
        diagnostics_add(&diag, DIAGNOSTIC_ERROR, "/etc/thpd/policy.d/caf\xe9.conf", 1, "bad");
        text = metrics_format(&in);
        assert_line(text, "thpd_active_unit_info{policy=\"odd\\\"name\\n.conf\","
                          "unit=\"systemd-fsck@dev-disk-by\\\\x2duuid-1234.service\"} 1");
        assert_line(text, "thpd_policy_problems{file=\"/etc/thpd/policy.d/caf\xef\xbf\xbd.conf\",severity=\"error\"} 1");
        ck_assert(g_utf8_validate(text, -1, NULL));
        diagnostics_clear(&diag);
}
END_TEST

/* A thpd without storm detection, pools, policies or a systemd manager: the families with no
 * sample are left out rather than shown empty, and nothing is made up. */
START_TEST(test_minimal_input) {
        MetricsCounters counters = {};
        MetricsInput in = { .version = "0.1.0", .counters = &counters };
        g_autofree char *text = metrics_format(&in);

        assert_line(text, "thpd_systemd_manager_ready 0");
        assert_line(text, "thpd_policies_loaded 0");
        assert_line(text, "thpd_policy_files_invalid 0");
        assert_line(text, "thpd_storm_detection_enabled 0");
        assert_line(text, "thpd_override_knobs 0");
        ck_assert_ptr_null(strstr(text, "thpd_knob_info"));
        ck_assert_ptr_null(strstr(text, "thpd_hugetlb_pool"));
        ck_assert_ptr_null(strstr(text, "thpd_storm_phase"));
        ck_assert_ptr_null(strstr(text, "thpd_storms_detected_total"));
        ck_assert_ptr_null(strstr(text, "thpd_override_expiry"));
        ck_assert_ptr_null(strstr(text, "thpd_policy_problems"));
}
END_TEST

/* The daemon rewrites its file only when the text changes: equal state, equal text. */
START_TEST(test_text_follows_state) {
        g_autofree char *a = NULL, *b = NULL, *c = NULL;
        Sample s;

        sample_input(&s);
        a = metrics_format(&s.in);
        b = metrics_format(&s.in);
        ck_assert_str_eq(a, b);
        s.counters.storms_detected[STORM_KIND_KHUGEPAGED]++;
        c = metrics_format(&s.in);
        ck_assert_str_ne(a, c);
        sample_done(&s);
}
END_TEST

START_TEST(test_file_replace) {
        g_autofree char *dir = test_mkdtemp();
        g_autofree char *path = g_build_filename(dir, "thpd.prom", NULL);
        g_autofree char *tmp = g_strconcat(path, ".tmp", NULL);
        g_autofree char *victim = g_build_filename(dir, "victim", NULL);
        g_autofree char *content = NULL, *missing = NULL;
        struct stat st1, st2;
        mode_t old_umask;

        /* thpd.service runs with UMask=0077; node_exporter, another user, must still read it. */
        old_umask = umask(0077);
        ck_assert_int_eq(file_replace(path, "a 1\n", 0644), 0);
        umask(old_umask);
        ck_assert_int_eq(stat(path, &st1), 0);
        ck_assert_uint_eq(st1.st_mode & 07777, 0644);
        content = test_read_file(dir, "thpd.prom");
        ck_assert_str_eq(content, "a 1\n");

        /* Replaced by a rename: a reader holding the old file keeps reading the old text. */
        ck_assert_int_eq(file_replace(path, "a 2\n", 0644), 0);
        ck_assert_int_eq(stat(path, &st2), 0);
        ck_assert_uint_ne(st1.st_ino, st2.st_ino);
        ck_assert_int_ne(access(tmp, F_OK), 0);

        /* A symlink planted under the temporary name is replaced, not written through. */
        test_write_file(dir, "victim", "keep\n");
        ck_assert_int_eq(symlink(victim, tmp), 0);
        ck_assert_int_eq(file_replace(path, "a 3\n", 0644), 0);
        g_free(content);
        content = test_read_file(dir, "victim");
        ck_assert_str_eq(content, "keep\n");
        g_free(content);
        content = test_read_file(dir, "thpd.prom");
        ck_assert_str_eq(content, "a 3\n");

        missing = g_build_filename(dir, "no-such-dir", "thpd.prom", NULL);
        ck_assert_int_eq(file_replace(missing, "a 1\n", 0644), -ENOENT);
        test_rm_rf(dir);
}
END_TEST

/* Drift: a counter per knob and writer, and the number of knobs in conflict. */
START_TEST(test_drift_metrics) {
        Sample s;
        g_autofree char *text = NULL;

        sample_input(&s);
        text = metrics_format(&s.in);
        assert_line(text, "# TYPE thpd_knob_drift_total counter");
        assert_line(text, "thpd_knob_drift_total{knob=\"enabled\",writer=\"tuned.service\"} 4");
        assert_line(text, "thpd_knob_drift_total{knob=\"enabled\",writer=\"unknown\"} 1");
        assert_line(text, "thpd_knob_drift_conflicts 1");
        sample_done(&s);
}
END_TEST

/* Each per-size counter with a size label; the pages held are gauges, the rest counters. */
START_TEST(test_size_stats_metrics) {
        Sample s;
        g_autofree char *text = NULL;

        sample_input(&s);
        text = metrics_format(&s.in);
        assert_line(text, "# TYPE thpd_thp_size_anon_fault_alloc_total counter");
        assert_line(text, "thpd_thp_size_anon_fault_alloc_total{size=\"64K\"} 100");
        assert_line(text, "thpd_thp_size_anon_fault_fallback_total{size=\"64K\"} 101");
        assert_line(text, "thpd_thp_size_split_total{size=\"64K\"} 105");
        assert_line(text, "# TYPE thpd_thp_size_nr_anon gauge");
        assert_line(text, "thpd_thp_size_nr_anon{size=\"64K\"} 103");
        assert_line(text, "thpd_thp_size_nr_anon{size=\"2M\"} 7");
        assert_line(text, "thpd_thp_size_nr_anon_partially_mapped{size=\"64K\"} 104");
        ck_assert_ptr_null(strstr(text, "thpd_thp_size_anon_fault_alloc_total{size=\"2M\"}"));
        sample_done(&s);
}
END_TEST

int main(int argc, char *argv[]) {
        Suite *s;
        TCase *tc;

        if (argc > 1 && streq(argv[1], "--print-sample")) {
                g_autofree char *text = NULL;
                Sample sample;

                sample_input(&sample);
                text = metrics_format(&sample.in);
                fputs(text, stdout);
                sample_done(&sample);
                return fflush(stdout) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
        }

        s = suite_create("metrics");
        tc = tcase_create("format");
        tcase_add_test(tc, test_sample_values);
        tcase_add_test(tc, test_sample_structure);
        tcase_add_test(tc, test_label_escaping);
        tcase_add_test(tc, test_minimal_input);
        tcase_add_test(tc, test_text_follows_state);
        tcase_add_test(tc, test_drift_metrics);
        tcase_add_test(tc, test_size_stats_metrics);
        suite_add_tcase(s, tc);
        tc = tcase_create("files");
        tcase_add_test(tc, test_file_replace);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}
