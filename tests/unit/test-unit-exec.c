/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "test-util.h"
#include "unit-exec.h"
#include "unit-files.h"
#include "util.h"

#define HELPER "/usr/lib/thpd/thpd-exec"

static void assert_wrap(const char *value, const char *expected) {
        g_autofree char *out = NULL;

        ck_assert_int_eq(exec_start_wrap(value, HELPER, "never", &out), 0);
        ck_assert_str_eq(out, expected);
}

START_TEST(test_wrap_plain) {
        assert_wrap("/usr/bin/redis-server /etc/redis/redis.conf",
                    HELPER " --thp=never -- /usr/bin/redis-server /etc/redis/redis.conf");
        /* A command found by systemd's fixed search path stays a bare name: the helper uses PATH. */
        assert_wrap("redis-server", HELPER " --thp=never -- redis-server");
}
END_TEST

START_TEST(test_wrap_prefixes) {
        /* Prefixes stay in front, where systemd reads them. */
        assert_wrap("-/bin/foo a", "-" HELPER " --thp=never -- /bin/foo a");
        assert_wrap("+/bin/foo", "+" HELPER " --thp=never -- /bin/foo");
        assert_wrap("!!/bin/foo", "!!" HELPER " --thp=never -- /bin/foo");
        assert_wrap(":-!/bin/foo $X", ":-!" HELPER " --thp=never -- /bin/foo $X");
        /* '@' belongs to the command: its argv[0] goes to the helper. */
        assert_wrap("@/usr/sbin/foo foo-daemon -x", HELPER " --thp=never --argv0 foo-daemon -- /usr/sbin/foo -x");
        assert_wrap("-@/bin/foo \"my name\" a b", "-" HELPER " --thp=never --argv0 \"my name\" -- /bin/foo a b");
        assert_wrap("@/bin/foo name", HELPER " --thp=never --argv0 name -- /bin/foo");
}
END_TEST

START_TEST(test_wrap_keeps_specifiers_and_quotes) {
        assert_wrap("/usr/bin/redis-server /etc/redis/redis-%i.conf --dir \"%S/redis %i\" ${OPTS} $MAINPID",
                    HELPER " --thp=never -- /usr/bin/redis-server /etc/redis/redis-%i.conf --dir \"%S/redis %i\" "
                    "${OPTS} $MAINPID");
        assert_wrap("\"/opt/my app/bin\" 'a b'", HELPER " --thp=never -- \"/opt/my app/bin\" 'a b'");
}
END_TEST

START_TEST(test_wrap_madvise) {
        g_autofree char *out = NULL;

        ck_assert_int_eq(exec_start_wrap("/bin/java -jar x.jar", HELPER, "madvise", &out), 0);
        ck_assert_str_eq(out, HELPER " --thp=madvise -- /bin/java -jar x.jar");
}
END_TEST

START_TEST(test_wrap_no_command) {
        char *out = NULL;

        ck_assert_int_eq(exec_start_wrap("-", HELPER, "never", &out), -EINVAL);
        ck_assert_int_eq(exec_start_wrap("@/bin/foo", HELPER, "never", &out), -EINVAL);
        ck_assert_int_eq(exec_start_wrap("- /bin/foo", HELPER, "never", &out), -EINVAL);
        ck_assert_ptr_null(out);
}
END_TEST

static void assert_exec(const UnitExec *u, const char *const *expected) {
        size_t n = g_strv_length((char **) expected);

        ck_assert_uint_eq(u->exec_start->len, n);
        for (size_t i = 0; i < n; i++)
                ck_assert_str_eq(g_ptr_array_index(u->exec_start, i), expected[i]);
}

START_TEST(test_parse_fragment_and_dropins) {
        UnitExec u;

        unit_exec_init(&u);
        unit_exec_apply_text(&u,
                             "[Unit]\n"
                             "ExecStart=/not/a/service/key\n"
                             "[Service]\n"
                             "Type=oneshot\n"
                             "# ExecStart=/commented\n"
                             "ExecStart = /bin/one  \n"
                             "ExecStart=/bin/two \\\n" /* the backslash becomes a blank */
                             "  # a comment inside a continuation is skipped\n"
                             "  --flag\\\n"
                             "  value\n"
                             "NoExecPaths=/\n"
                             "[Install]\n"
                             "ExecStart=/not/either\n");
        assert_exec(&u, (const char *const[]) { "/bin/one", "/bin/two  --flag value", NULL });
        ck_assert(u.no_exec_paths);

        /* A drop-in: the empty assignment resets, the last list wins. */
        unit_exec_apply_text(&u, "[Service]\r\nExecStart=\r\nExecStart=-/bin/three %i\r\nNoExecPaths=\r\n");
        assert_exec(&u, (const char *const[]) { "-/bin/three %i", NULL });
        ck_assert(!u.no_exec_paths);

        /* A drop-in that does not mention it changes nothing. */
        unit_exec_apply_text(&u, "[Service]\nEnvironment=A=1\n[Service]\n");
        assert_exec(&u, (const char *const[]) { "-/bin/three %i", NULL });
        unit_exec_done(&u);
}
END_TEST

/* The search path and drop-in rules: precedence per file, file name order, templates, masks. */
START_TEST(test_load_from_search_path) {
        g_autofree char *root = test_mkdtemp();
        g_autofree char *high = g_build_filename(root, "etc", NULL), *low = g_build_filename(root, "lib", NULL);
        char *path[] = { high, low, NULL };
        g_autofree char *fragment = NULL, *masked = g_build_filename(high, "masked.service", NULL);
        g_autofree char *high_foo = g_build_filename(high, "foo.service", NULL);
        g_autoptr(GPtrArray) names = NULL;
        UnitExec u;

        test_write_file(low, "foo.service", "[Service]\nExecStart=/bin/low\n");
        test_write_file(high, "foo.service", "[Service]\nExecStart=/bin/high\n");
        test_write_file(low, "foo.service.d/20-b.conf", "[Service]\nExecStart=/bin/b\n");
        test_write_file(low, "foo.service.d/10-a.conf", "[Service]\nExecStart=\nExecStart=/bin/a\n");
        /* Same name higher up replaces the lower drop-in. */
        test_write_file(high, "foo.service.d/20-b.conf", "[Service]\nExecStart=/bin/b-high\n");
        test_write_file(low, "service.d/05-all.conf", "[Service]\nExecStart=/bin/all\n");
        test_write_file(low, "tmpl@.service", "[Service]\nExecStart=/bin/tmpl %i\n");
        test_write_file(low, "tmpl@.service.d/x.conf", "[Service]\nNoExecPaths=/\n");
        test_write_file(low, "tmpl@one.service.d/y.conf", "[Service]\nExecStart=\nExecStart=/bin/one\n");
        test_write_file(low, "a-b.service", "[Service]\nExecStart=/bin/ab\n");
        test_write_file(low, "a-.service.d/p.conf", "[Service]\nExecStart=\nExecStart=/bin/prefix\n");
        ck_assert_int_eq(symlink("/dev/null", masked), 0);
        test_write_file(low, "masked.service", "[Service]\nExecStart=/bin/x\n");

        ck_assert_int_eq(unit_files_load_exec(path, "foo.service", &u, &fragment), 0);
        ck_assert_str_eq(fragment, high_foo);
        /* high fragment, service.d/05-all, foo.service.d/10-a (reset), 20-b from high */
        assert_exec(&u, (const char *const[]) { "/bin/a", "/bin/b-high", NULL });
        unit_exec_done(&u);

        /* service.d/ is for every service. */
        ck_assert_int_eq(unit_files_load_exec(path, "tmpl@.service", &u, NULL), 0);
        assert_exec(&u, (const char *const[]) { "/bin/tmpl %i", "/bin/all", NULL });
        ck_assert(u.no_exec_paths);
        unit_exec_done(&u);
        ck_assert_int_eq(unit_files_load_exec(path, "tmpl@one.service", &u, NULL), 0);
        assert_exec(&u, (const char *const[]) { "/bin/one", NULL });
        ck_assert(u.no_exec_paths);
        unit_exec_done(&u);
        ck_assert_int_eq(unit_files_load_exec(path, "a-b.service", &u, NULL), 0);
        assert_exec(&u, (const char *const[]) { "/bin/prefix", NULL });
        unit_exec_done(&u);

        ck_assert_int_eq(unit_files_load_exec(path, "masked.service", &u, NULL), -ERFKILL);
        ck_assert_int_eq(unit_files_load_exec(path, "none.service", &u, NULL), -ENOENT);

        names = unit_files_list_services(path);
        ck_assert_uint_eq(names->len, 4);
        ck_assert_str_eq(g_ptr_array_index(names, 0), "a-b.service");
        ck_assert_str_eq(g_ptr_array_index(names, 1), "foo.service");
        ck_assert_str_eq(g_ptr_array_index(names, 2), "masked.service");
        ck_assert_str_eq(g_ptr_array_index(names, 3), "tmpl@.service");
        test_rm_rf(root);
}
END_TEST

int main(void) {
        Suite *s = suite_create("unit-exec");
        TCase *tc = tcase_create("wrap");

        tcase_add_test(tc, test_wrap_plain);
        tcase_add_test(tc, test_wrap_prefixes);
        tcase_add_test(tc, test_wrap_keeps_specifiers_and_quotes);
        tcase_add_test(tc, test_wrap_madvise);
        tcase_add_test(tc, test_wrap_no_command);
        suite_add_tcase(s, tc);

        tc = tcase_create("files");
        tcase_add_test(tc, test_parse_fragment_and_dropins);
        tcase_add_test(tc, test_load_from_search_path);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}
