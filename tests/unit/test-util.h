/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <check.h>

/* A scratch directory per test, removed afterwards. */
char *test_mkdtemp(void);
void test_rm_rf(const char *path);
/* Creates parent directories as needed and writes content. */
void test_write_file(const char *dir, const char *relpath, const char *content);
char *test_read_file(const char *dir, const char *relpath);

/* Runs the suite with CK_NORMAL output and returns the process exit code. */
int test_run_suite(Suite *s);

/* The suite of most test programs: one test case, tcase_name, running the tests (a
 * NULL-terminated list) with setup() and teardown() around each (a checked fixture) where either
 * is given. TEST_SUITE() takes the tests as arguments and ends the list itself. */
Suite *test_suite_new(const char *suite_name, const char *tcase_name, SFun setup, SFun teardown, const TTest *const *tests);
#define TEST_SUITE(suite_name, tcase_name, setup, teardown, ...) \
        test_suite_new(suite_name, tcase_name, setup, teardown, (const TTest *const[]) { __VA_ARGS__, NULL })

/* Check cannot skip a single test, so the tests that need what a normal user lacks (root, a
 * mount namespace) are run by a meson test of their own: the program with an argument
 * (tests/unit/meson.build). When that run cannot do them, main() returns test_skip(), which
 * prints why and gives 77, the exit status meson counts as SKIP. */
#define TEST_EXIT_SKIP 77
int test_skip(const char *reason);
