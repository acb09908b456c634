/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib.h>

#include "settings.h"
#include "test-util.h"
#include "util.h"

/* thpd.conf: each section's keys, a later value replacing an earlier one, and a bad value
 * reported on its line and replaced by the default. */

/* What the last load loaded, released by reset() before the next load and after each test. */
static Settings settings;
static Diagnostics diag;

static int load(const char *text) {
        g_autofree char *dir = test_mkdtemp();
        g_autofree char *path = g_build_filename(dir, "thpd.conf", NULL);
        const char *paths[] = { path, NULL };
        int r;

        test_write_file(dir, "thpd.conf", text);
        settings_init(&settings);
        diagnostics_init(&diag);
        r = settings_load_files(&settings, paths, &diag);
        test_rm_rf(dir);
        return r;
}

static void reset(void) {
        settings_done(&settings);
        diagnostics_clear(&diag);
}

/* The last load's diagnostic number `index` (from 0) is on line `line` and says `what`. */
static void check_diagnostic(unsigned index, unsigned line, const char *what) {
        g_autofree char *at = g_strdup_printf(":%u: ", line);
        g_autofree char *text = NULL;

        ck_assert_uint_lt(index, diag.items->len);
        text = diagnostic_format(g_ptr_array_index(diag.items, index));
        ck_assert_msg(strstr(text, at) && strstr(text, what), "%s", text);
}

/* The last load reported n_errors errors, the first on line `line` and naming `what`. */
static void check_errors(unsigned n_errors, unsigned line, const char *what) {
        ck_assert_uint_eq(diag.n_errors, n_errors);
        check_diagnostic(0, line, what);
}

START_TEST(test_settings_textfile_path) {
        ck_assert_int_eq(load("[Metrics]\nTextfilePath=/var/lib/prometheus/node-exporter/thpd.prom\n"), 0);
        ck_assert_str_eq(settings.metrics_textfile, "/var/lib/prometheus/node-exporter/thpd.prom");
        ck_assert_uint_eq(diag.n_errors + diag.n_warnings, 0);
        settings_done(&settings);
        ck_assert_ptr_null(settings.metrics_textfile);
        diagnostics_clear(&diag);

        /* A later file can turn it off again. */
        ck_assert_int_eq(load("[Metrics]\nTextfilePath=/run/thpd.prom\nTextfilePath=\n"), 0);
        ck_assert_ptr_null(settings.metrics_textfile);
        reset();

        ck_assert_int_eq(load("[Metrics]\nTextfilePath=thpd.prom\nTextfilePath=/run/thpd.txt\n"
                              "TextfilePath=/run/.prom\nTextFilePath=/run/thpd.prom\n"), 0);
        ck_assert_ptr_null(settings.metrics_textfile);
        ck_assert_uint_eq(diag.n_warnings, 1);
        check_errors(3, 2, "absolute path ending in .prom");
}
END_TEST

START_TEST(test_settings_storm_watch) {
        ck_assert_int_eq(load("[Storm]\nAction=mitigate\n"), 0);
        ck_assert(settings.storm_watch);
        reset();

        ck_assert_int_eq(load("[Storm]\nWatch=no\nAction=mitigate\n"), 0);
        ck_assert(!settings.storm_watch);
        ck_assert_int_eq(settings.storm.action, STORM_ACTION_MITIGATE);
        ck_assert_uint_eq(diag.n_errors + diag.n_warnings, 0);
        reset();

        /* A bad value is an error on its line and leaves the watcher on. */
        ck_assert_int_eq(load("[Storm]\nWatch=sometimes\n"), 0);
        ck_assert(settings.storm_watch);
        check_errors(1, 2, "Watch=");
}
END_TEST

/* [Drift]: the defaults, both keys, and a bad value reported on its line and ignored. */
START_TEST(test_settings_drift) {
        ck_assert_int_eq(load(""), 0);
        ck_assert_uint_eq(settings.drift.max_restores, DRIFT_DEFAULT_MAX_RESTORES);
        ck_assert_uint_eq(settings.drift.restore_window_usec, DRIFT_DEFAULT_RESTORE_WINDOW_USEC);
        reset();

        ck_assert_int_eq(load("[Drift]\nMaxRestores=0\nRestoreWindowSec=1h\n"), 0);
        ck_assert_uint_eq(settings.drift.max_restores, 0);
        ck_assert_uint_eq(settings.drift.restore_window_usec, 3600 * USEC_PER_SEC);
        ck_assert_uint_eq(diag.n_errors + diag.n_warnings, 0);
        reset();

        ck_assert_int_eq(load("[Drift]\nMaxRestores=many\nRestoreWindowSec=0\n"), 0);
        ck_assert_uint_eq(settings.drift.max_restores, DRIFT_DEFAULT_MAX_RESTORES);
        ck_assert_uint_eq(settings.drift.restore_window_usec, DRIFT_DEFAULT_RESTORE_WINDOW_USEC);
        check_errors(2, 2, "MaxRestores=");
}
END_TEST

/* [Daemon]: each bad value is an error on its line, worded as every section words it, and keeps
 * the default; an unknown key is only a warning. */
START_TEST(test_settings_daemon) {
        ck_assert_int_eq(load("[Daemon]\nRestoreOnExit=maybe\nPoolGracePeriod=5x\nAwaitTimeout=0\n"
                              "PoolAllocRetries=101\nLogLevel=loud\nRestoreOnExitt=no\n"), 0);
        ck_assert(settings.restore_on_exit);
        ck_assert_uint_eq(settings.pool_grace_usec, SETTINGS_DEFAULT_POOL_GRACE_USEC);
        ck_assert_uint_eq(settings.await_timeout_usec, SETTINGS_DEFAULT_AWAIT_TIMEOUT_USEC);
        ck_assert_uint_eq(settings.pool_alloc_retries, SETTINGS_DEFAULT_POOL_ALLOC_RETRIES);
        ck_assert_int_eq(settings.log_level, -1);
        ck_assert_uint_eq(diag.n_errors, 5);
        ck_assert_uint_eq(diag.n_warnings, 1);
        check_diagnostic(3, 5, "invalid value for PoolAllocRetries=: \"101\"");
        check_diagnostic(5, 7, "unknown setting [Daemon] RestoreOnExitt=");
}
END_TEST

int main(void) {
        return test_run_suite(TEST_SUITE("settings", "load", NULL, reset,
                                         test_settings_textfile_path,
                                         test_settings_storm_watch,
                                         test_settings_drift,
                                         test_settings_daemon));
}
