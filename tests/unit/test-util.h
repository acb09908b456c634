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
