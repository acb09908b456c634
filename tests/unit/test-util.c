/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <ftw.h>
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "test-util.h"

char *test_mkdtemp(void) {
        char *dir = g_strdup("/tmp/thpd-test-XXXXXX");

        ck_assert_ptr_nonnull(g_mkdtemp(dir));
        return dir;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void) st;
        (void) flag;
        (void) ftw;
        remove(path);
        return 0;
}

void test_rm_rf(const char *path) {
        if (path)
                nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

void test_write_file(const char *dir, const char *relpath, const char *content) {
        g_autofree char *path = g_build_filename(dir, relpath, NULL);
        g_autofree char *parent = g_path_get_dirname(path);
        g_autoptr(GError) error = NULL;

        ck_assert_int_eq(g_mkdir_with_parents(parent, 0755), 0);
        if (!g_file_set_contents(path, content, -1, &error))
                ck_abort_msg("writing %s: %s", path, error->message);
}

char *test_read_file(const char *dir, const char *relpath) {
        g_autofree char *path = g_build_filename(dir, relpath, NULL);
        g_autoptr(GError) error = NULL;
        char *content = NULL;

        if (!g_file_get_contents(path, &content, NULL, &error))
                ck_abort_msg("reading %s: %s", path, error->message);
        return content;
}

int test_run_suite(Suite *s) {
        SRunner *sr = srunner_create(s);
        int failed;

        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

Suite *test_suite_new(const char *suite_name, const char *tcase_name, SFun setup, SFun teardown, const TTest *const *tests) {
        Suite *s = suite_create(suite_name);
        TCase *tc = tcase_create(tcase_name);

        if (setup || teardown)
                tcase_add_checked_fixture(tc, setup, teardown);
        for (; *tests; tests++)
                tcase_add_test(tc, *tests);
        suite_add_tcase(s, tc);
        return s;
}

int test_skip(const char *reason) {
        printf("SKIP: %s: %s\n", program_invocation_short_name, reason);
        return TEST_EXIT_SKIP;
}
