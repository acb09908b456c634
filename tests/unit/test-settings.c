/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib.h>

#include "settings.h"
#include "test-util.h"
#include "util.h"

/* thpd.conf: each section's keys, a later value replacing an earlier one, and a bad value
 * reported on its line and replaced by the default. */

static int load_settings_text(const char *text, Settings *s, Diagnostics *diag) {
        g_autofree char *dir = test_mkdtemp();
        g_autofree char *path = g_build_filename(dir, "thpd.conf", NULL);
        const char *paths[] = { path, NULL };
        int r;

        test_write_file(dir, "thpd.conf", text);
        settings_init(s);
        diagnostics_init(diag);
        r = settings_load_files(s, paths, diag);
        test_rm_rf(dir);
        return r;
}

START_TEST(test_settings_textfile_path) {
        Diagnostics diag;
        Settings s;

        ck_assert_int_eq(load_settings_text("[Metrics]\nTextfilePath=/var/lib/prometheus/node-exporter/thpd.prom\n", &s, &diag), 0);
        ck_assert_str_eq(s.metrics_textfile, "/var/lib/prometheus/node-exporter/thpd.prom");
        ck_assert_uint_eq(diag.n_errors + diag.n_warnings, 0);
        settings_done(&s);
        ck_assert_ptr_null(s.metrics_textfile);
        diagnostics_clear(&diag);

        /* A later file can turn it off again. */
        ck_assert_int_eq(load_settings_text("[Metrics]\nTextfilePath=/run/thpd.prom\nTextfilePath=\n", &s, &diag), 0);
        ck_assert_ptr_null(s.metrics_textfile);
        settings_done(&s);
        diagnostics_clear(&diag);

        ck_assert_int_eq(load_settings_text("[Metrics]\nTextfilePath=thpd.prom\nTextfilePath=/run/thpd.txt\n"
                                            "TextfilePath=/run/.prom\nTextFilePath=/run/thpd.prom\n", &s, &diag), 0);
        ck_assert_ptr_null(s.metrics_textfile);
        ck_assert_uint_eq(diag.n_errors, 3);
        ck_assert_uint_eq(diag.n_warnings, 1);
        g_autofree char *first = diagnostic_format(g_ptr_array_index(diag.items, 0));
        ck_assert_msg(strstr(first, ":2: ") && strstr(first, "absolute path ending in .prom"), "%s", first);
        settings_done(&s);
        diagnostics_clear(&diag);
}
END_TEST

START_TEST(test_settings_storm_watch) {
        Diagnostics diag;
        Settings s;

        ck_assert_int_eq(load_settings_text("[Storm]\nAction=mitigate\n", &s, &diag), 0);
        ck_assert(s.storm_watch);
        settings_done(&s);
        diagnostics_clear(&diag);

        ck_assert_int_eq(load_settings_text("[Storm]\nWatch=no\nAction=mitigate\n", &s, &diag), 0);
        ck_assert(!s.storm_watch);
        ck_assert_int_eq(s.storm.action, STORM_ACTION_MITIGATE);
        ck_assert_uint_eq(diag.n_errors + diag.n_warnings, 0);
        settings_done(&s);
        diagnostics_clear(&diag);

        /* A bad value is an error on its line and leaves the watcher on. */
        ck_assert_int_eq(load_settings_text("[Storm]\nWatch=sometimes\n", &s, &diag), 0);
        ck_assert(s.storm_watch);
        ck_assert_uint_eq(diag.n_errors, 1);
        g_autofree char *first = diagnostic_format(g_ptr_array_index(diag.items, 0));
        ck_assert_msg(strstr(first, ":2: ") && strstr(first, "Watch="), "%s", first);
        settings_done(&s);
        diagnostics_clear(&diag);
}
END_TEST

/* [Drift]: the defaults, both keys, and a bad value reported on its line and ignored. */
START_TEST(test_settings_drift) {
        Diagnostics diag;
        Settings s;

        ck_assert_int_eq(load_settings_text("", &s, &diag), 0);
        ck_assert_uint_eq(s.drift.max_restores, DRIFT_DEFAULT_MAX_RESTORES);
        ck_assert_uint_eq(s.drift.restore_window_usec, DRIFT_DEFAULT_RESTORE_WINDOW_USEC);
        settings_done(&s);
        diagnostics_clear(&diag);

        ck_assert_int_eq(load_settings_text("[Drift]\nMaxRestores=0\nRestoreWindowSec=1h\n", &s, &diag), 0);
        ck_assert_uint_eq(s.drift.max_restores, 0);
        ck_assert_uint_eq(s.drift.restore_window_usec, 3600 * USEC_PER_SEC);
        ck_assert_uint_eq(diag.n_errors + diag.n_warnings, 0);
        settings_done(&s);
        diagnostics_clear(&diag);

        ck_assert_int_eq(load_settings_text("[Drift]\nMaxRestores=many\nRestoreWindowSec=0\n", &s, &diag), 0);
        ck_assert_uint_eq(s.drift.max_restores, DRIFT_DEFAULT_MAX_RESTORES);
        ck_assert_uint_eq(s.drift.restore_window_usec, DRIFT_DEFAULT_RESTORE_WINDOW_USEC);
        ck_assert_uint_eq(diag.n_errors, 2);
        g_autofree char *first = diagnostic_format(g_ptr_array_index(diag.items, 0));
        ck_assert_msg(strstr(first, ":2: ") && strstr(first, "MaxRestores="), "%s", first);
        settings_done(&s);
        diagnostics_clear(&diag);
}
END_TEST

/* [Daemon]: each bad value is an error on its line, worded as every section words it, and keeps
 * the default; an unknown key is only a warning. */
START_TEST(test_settings_daemon) {
        Diagnostics diag;
        Settings s;

        ck_assert_int_eq(load_settings_text("[Daemon]\nRestoreOnExit=maybe\nPoolGracePeriod=5x\nAwaitTimeout=0\n"
                                            "PoolAllocRetries=101\nLogLevel=loud\nRestoreOnExitt=no\n", &s, &diag), 0);
        ck_assert(s.restore_on_exit);
        ck_assert_uint_eq(s.pool_grace_usec, SETTINGS_DEFAULT_POOL_GRACE_USEC);
        ck_assert_uint_eq(s.await_timeout_usec, SETTINGS_DEFAULT_AWAIT_TIMEOUT_USEC);
        ck_assert_uint_eq(s.pool_alloc_retries, SETTINGS_DEFAULT_POOL_ALLOC_RETRIES);
        ck_assert_int_eq(s.log_level, -1);
        ck_assert_uint_eq(diag.n_errors, 5);
        ck_assert_uint_eq(diag.n_warnings, 1);
        g_autofree char *retries = diagnostic_format(g_ptr_array_index(diag.items, 3));
        ck_assert_msg(strstr(retries, ":5: ") && strstr(retries, "invalid value for PoolAllocRetries=: \"101\""), "%s", retries);
        g_autofree char *unknown = diagnostic_format(g_ptr_array_index(diag.items, 5));
        ck_assert_msg(strstr(unknown, ":7: ") && strstr(unknown, "unknown setting [Daemon] RestoreOnExitt="), "%s", unknown);
        settings_done(&s);
        diagnostics_clear(&diag);
}
END_TEST

int main(void) {
        return test_run_suite(TEST_SUITE("settings", "load", NULL, NULL,
                                         test_settings_textfile_path,
                                         test_settings_storm_watch,
                                         test_settings_drift,
                                         test_settings_daemon));
}
