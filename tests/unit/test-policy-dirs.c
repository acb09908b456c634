/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <sys/stat.h>

#include "config.h"
#include "policy-dirs.h"
#include "policy.h"
#include "test-util.h"
#include "util.h"

#define GOOD_POLICY(desc) \
        "[Policy]\nDescription=" desc "\nUnits=" desc ".service\n[TransparentHugePages]\nEnabled=never\n"

/* Three policy directories under a scratch root, highest precedence first. */
static char *root;
static char *dirs[4];

static void setup(void) {
        static const char *const names[] = { "etc", "run", "usr" };

        /* Group-writable files would be untrusted; the test must not depend on the caller's umask. */
        umask(022);
        /* Without root, files are ours: trust our own uid instead of 0. */
        if (geteuid() != 0) {
                g_autofree char *uid = g_strdup_printf("%u", (unsigned) geteuid());
                ck_assert_int_eq(setenv("THPD_TRUSTED_UID", uid, 1), 0);
        }

        root = test_mkdtemp();
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                dirs[i] = g_build_filename(root, names[i], NULL);
                ck_assert_int_eq(g_mkdir_with_parents(dirs[i], 0755), 0);
        }
        dirs[3] = NULL;
}

static void teardown(void) {
        ck_assert_int_eq(unsetenv("THPD_TRUSTED_UID"), 0);
        test_rm_rf(root);
        g_clear_pointer(&root, g_free);
        for (size_t i = 0; i < 3; i++)
                g_clear_pointer(&dirs[i], g_free);
}

static const char *const *search_path(void) {
        return (const char *const *) dirs;
}

static char *path_in(size_t dir, const char *name) {
        return g_build_filename(dirs[dir], name, NULL);
}

static void write_policy(size_t dir, const char *name, const char *content) {
        test_write_file(dirs[dir], name, content);
}

static const PolicyFile *find_file(GPtrArray *files, const char *name) {
        for (guint i = 0; i < files->len; i++) {
                const PolicyFile *f = g_ptr_array_index(files, i);

                if (streq(f->name, name))
                        return f;
        }
        return NULL;
}

static bool has_diag(const Diagnostics *d, DiagnosticLevel level, const char *file, unsigned line,
                     const char *needle) {
        for (guint i = 0; i < d->items->len; i++) {
                const Diagnostic *diag = g_ptr_array_index(d->items, i);

                if (diag->level == level && streq(diag->file, file) && diag->line == line &&
                    strstr(diag->message, needle))
                        return true;
        }
        return false;
}

static GPtrArray *enumerate(Diagnostics *d) {
        GPtrArray *files = NULL;

        ck_assert_int_eq(policy_dirs_enumerate(search_path(), d, &files), 0);
        ck_assert_ptr_nonnull(files);
        return files;
}

static GPtrArray *load(Diagnostics *d) {
        GPtrArray *policies = NULL;

        ck_assert_int_eq(policy_dirs_load(search_path(), d, &policies), 0);
        ck_assert_ptr_nonnull(policies);
        return policies;
}

START_TEST(test_default_dirs) {
        ck_assert_str_eq(policy_default_dirs[0], "/etc/thpd/policy.d");
        ck_assert_str_eq(policy_default_dirs[1], "/run/thpd/policy.d");
        ck_assert_str_eq(policy_default_dirs[2], "/usr/local/lib/thpd/policy.d");
        ck_assert_str_eq(policy_default_dirs[3], THPD_VENDOR_POLICY_DIR);
        /* thpd's own, below the packages': a package's file of the same name replaces it. */
        ck_assert_str_eq(policy_default_dirs[4], THPD_DEFAULT_POLICY_DIR);
        ck_assert_ptr_null(policy_default_dirs[5]);
}
END_TEST

START_TEST(test_trusted_uid) {
        ck_assert_int_eq(unsetenv("THPD_TRUSTED_UID"), 0);
        ck_assert_uint_eq(policy_trusted_uid(), 0);
        ck_assert_int_eq(setenv("THPD_TRUSTED_UID", "1234", 1), 0);
        ck_assert_uint_eq(policy_trusted_uid(), 1234);
        ck_assert_int_eq(setenv("THPD_TRUSTED_UID", "12x", 1), 0);
        ck_assert_uint_eq(policy_trusted_uid(), 0);
        ck_assert_int_eq(setenv("THPD_TRUSTED_UID", "-1", 1), 0);
        ck_assert_uint_eq(policy_trusted_uid(), 0);
}
END_TEST

START_TEST(test_precedence) {
        g_autoptr(GPtrArray) files = NULL, policies = NULL;
        g_autofree char *etc_a = path_in(0, "a.conf"), *run_a = path_in(1, "a.conf"), *usr_a = path_in(2, "a.conf");
        g_autofree char *usr_b = path_in(2, "b.conf"), *run_c = path_in(1, "c.conf");
        const PolicyFile *f;
        const Policy *p;
        Diagnostics d;

        write_policy(2, "a.conf", GOOD_POLICY("usr"));
        write_policy(1, "a.conf", GOOD_POLICY("run"));
        write_policy(0, "a.conf", GOOD_POLICY("etc"));
        write_policy(2, "b.conf", GOOD_POLICY("bee"));
        write_policy(2, "c.conf", GOOD_POLICY("usrc"));
        write_policy(1, "c.conf", GOOD_POLICY("runc"));

        diagnostics_init(&d);
        files = enumerate(&d);
        ck_assert_uint_eq(d.items->len, 0);
        ck_assert_uint_eq(files->len, 3);

        f = find_file(files, "a.conf");
        ck_assert_str_eq(f->path, etc_a);
        ck_assert_ptr_null(f->masked_by);
        ck_assert_uint_eq(f->shadowed->len, 2);
        ck_assert_str_eq(g_ptr_array_index(f->shadowed, 0), run_a);
        ck_assert_str_eq(g_ptr_array_index(f->shadowed, 1), usr_a);

        f = find_file(files, "b.conf");
        ck_assert_str_eq(f->path, usr_b);
        ck_assert_uint_eq(f->shadowed->len, 0);

        f = find_file(files, "c.conf");
        ck_assert_str_eq(f->path, run_c);
        ck_assert_uint_eq(f->shadowed->len, 1);

        policies = load(&d);
        ck_assert_uint_eq(d.items->len, 0);
        ck_assert_uint_eq(policies->len, 3);
        p = g_ptr_array_index(policies, 0);
        ck_assert_str_eq(p->name, "a.conf");
        ck_assert_str_eq(p->path, etc_a);
        ck_assert_str_eq(p->description, "etc");
        p = g_ptr_array_index(policies, 2);
        ck_assert_str_eq(p->description, "runc");
        diagnostics_clear(&d);
}
END_TEST

START_TEST(test_mask_dev_null) {
        g_autoptr(GPtrArray) files = NULL, policies = NULL;
        g_autofree char *mask = path_in(0, "a.conf"), *usr_a = path_in(2, "a.conf");
        const PolicyFile *f;
        Diagnostics d;

        write_policy(2, "a.conf", GOOD_POLICY("usr"));
        write_policy(2, "b.conf", GOOD_POLICY("bee"));
        ck_assert_int_eq(symlink("/dev/null", mask), 0);

        diagnostics_init(&d);
        files = enumerate(&d);
        f = find_file(files, "a.conf");
        ck_assert_ptr_null(f->path);
        ck_assert_str_eq(f->masked_by, mask);
        ck_assert_uint_eq(f->shadowed->len, 1);
        ck_assert_str_eq(g_ptr_array_index(f->shadowed, 0), usr_a);

        policies = load(&d);
        ck_assert_uint_eq(policies->len, 1);
        ck_assert_str_eq(((Policy *) g_ptr_array_index(policies, 0))->name, "b.conf");
        ck_assert_uint_eq(d.items->len, 0);
        diagnostics_clear(&d);
}
END_TEST

START_TEST(test_mask_empty_file) {
        g_autoptr(GPtrArray) files = NULL, policies = NULL;
        g_autofree char *mask = path_in(1, "a.conf");
        const PolicyFile *f;
        Diagnostics d;

        write_policy(2, "a.conf", GOOD_POLICY("usr"));
        write_policy(1, "a.conf", "");
        /* A mask in a lower directory does not hide a higher file. */
        write_policy(0, "b.conf", GOOD_POLICY("etc"));
        write_policy(2, "b.conf", "");

        diagnostics_init(&d);
        files = enumerate(&d);
        f = find_file(files, "a.conf");
        ck_assert_ptr_null(f->path);
        ck_assert_str_eq(f->masked_by, mask);
        f = find_file(files, "b.conf");
        ck_assert_ptr_nonnull(f->path);
        ck_assert_ptr_null(f->masked_by);

        policies = load(&d);
        ck_assert_uint_eq(policies->len, 1);
        ck_assert_str_eq(((Policy *) g_ptr_array_index(policies, 0))->description, "etc");
        ck_assert_uint_eq(d.items->len, 0);
        diagnostics_clear(&d);
}
END_TEST

START_TEST(test_lexical_order_and_names) {
        static const char *const expected[] = { "10-b.conf", "20-a.conf", "a.conf", "z.conf" };
        g_autoptr(GPtrArray) files = NULL, policies = NULL;
        Diagnostics d;

        write_policy(0, "z.conf", GOOD_POLICY("z"));
        write_policy(2, "a.conf", GOOD_POLICY("a"));
        write_policy(1, "20-a.conf", GOOD_POLICY("twenty"));
        write_policy(2, "10-b.conf", GOOD_POLICY("ten"));
        /* Not policies: wrong suffix, backups, hidden files, a bare ".conf". */
        write_policy(0, "README", "not a policy");
        write_policy(0, "a.conf~", "not a policy");
        write_policy(0, "a.conf.dpkg-old", "not a policy");
        write_policy(1, ".hidden.conf", "not a policy");
        write_policy(1, ".conf", "not a policy");

        diagnostics_init(&d);
        files = enumerate(&d);
        ck_assert_uint_eq(files->len, ELEMENTSOF(expected));
        for (size_t i = 0; i < ELEMENTSOF(expected); i++)
                ck_assert_str_eq(((PolicyFile *) g_ptr_array_index(files, i))->name, expected[i]);

        policies = load(&d);
        ck_assert_uint_eq(policies->len, ELEMENTSOF(expected));
        for (size_t i = 0; i < ELEMENTSOF(expected); i++)
                ck_assert_str_eq(((Policy *) g_ptr_array_index(policies, i))->name, expected[i]);
        ck_assert_uint_eq(d.items->len, 0);
        diagnostics_clear(&d);
}
END_TEST

START_TEST(test_untrusted_owner) {
        g_autoptr(GPtrArray) files = NULL;
        g_autofree char *etc_a = path_in(0, "a.conf"), *usr_a = path_in(2, "a.conf");
        const PolicyFile *f;
        Diagnostics d;

        write_policy(0, "a.conf", GOOD_POLICY("etc"));
        write_policy(2, "a.conf", GOOD_POLICY("usr"));
        ck_assert_int_eq(chown(etc_a, 65534, 65534), 0);

        diagnostics_init(&d);
        files = enumerate(&d);
        ck_assert(has_diag(&d, DIAGNOSTIC_ERROR, etc_a, 0, "owned by uid 65534"));
        ck_assert_uint_eq(d.n_errors, 1);
        /* The untrusted file is ignored as if absent: the vendor file applies. */
        f = find_file(files, "a.conf");
        ck_assert_str_eq(f->path, usr_a);
        ck_assert_uint_eq(f->shadowed->len, 0);
        diagnostics_clear(&d);
}
END_TEST

START_TEST(test_untrusted_owner_of_directory) {
        g_autoptr(GPtrArray) files = NULL;
        Diagnostics d;

        write_policy(1, "a.conf", GOOD_POLICY("run"));
        write_policy(2, "b.conf", GOOD_POLICY("usr"));
        ck_assert_int_eq(chown(dirs[1], 65534, 65534), 0);

        diagnostics_init(&d);
        files = enumerate(&d);
        ck_assert(has_diag(&d, DIAGNOSTIC_ERROR, dirs[1], 0, "owned by uid 65534"));
        ck_assert_uint_eq(files->len, 1);
        ck_assert_str_eq(((PolicyFile *) g_ptr_array_index(files, 0))->name, "b.conf");
        diagnostics_clear(&d);
}
END_TEST

START_TEST(test_group_writable) {
        g_autoptr(GPtrArray) files = NULL, policies = NULL;
        g_autofree char *run_b = path_in(1, "b.conf"), *usr_b = path_in(2, "b.conf");
        Diagnostics d;

        write_policy(0, "a.conf", GOOD_POLICY("etc"));
        write_policy(1, "b.conf", GOOD_POLICY("run"));
        write_policy(2, "b.conf", GOOD_POLICY("usr"));
        write_policy(2, "c.conf", GOOD_POLICY("usrc"));
        ck_assert_int_eq(chmod(dirs[0], 0775), 0);
        ck_assert_int_eq(chmod(run_b, 0666), 0);

        diagnostics_init(&d);
        files = enumerate(&d);
        ck_assert(has_diag(&d, DIAGNOSTIC_ERROR, dirs[0], 0, "writable by group or others (mode 0775)"));
        ck_assert(has_diag(&d, DIAGNOSTIC_ERROR, run_b, 0, "writable by group or others (mode 0666)"));
        ck_assert_uint_eq(d.n_errors, 2);
        ck_assert_ptr_null(find_file(files, "a.conf"));
        ck_assert_str_eq(find_file(files, "b.conf")->path, usr_b);
        diagnostics_clear(&d);

        diagnostics_init(&d);
        policies = load(&d);
        ck_assert_uint_eq(policies->len, 2);
        ck_assert_str_eq(((Policy *) g_ptr_array_index(policies, 0))->description, "usr");
        ck_assert_str_eq(((Policy *) g_ptr_array_index(policies, 1))->description, "usrc");
        diagnostics_clear(&d);
}
END_TEST

START_TEST(test_symlink_out_of_tree) {
        g_autoptr(GPtrArray) files = NULL;
        g_autofree char *outside = g_build_filename(root, "outside", NULL);
        g_autofree char *target = g_build_filename(outside, "x.conf", NULL);
        g_autofree char *link = path_in(0, "x.conf"), *dangling = path_in(0, "y.conf");
        Diagnostics d;

        test_write_file(outside, "x.conf", GOOD_POLICY("outside"));
        ck_assert_int_eq(symlink(target, link), 0);
        ck_assert_int_eq(symlink("/nonexistent/y.conf", dangling), 0);

        /* Trusted target in a trusted directory: followed. */
        diagnostics_init(&d);
        files = enumerate(&d);
        ck_assert_str_eq(find_file(files, "x.conf")->path, link);
        ck_assert(has_diag(&d, DIAGNOSTIC_ERROR, dangling, 0, "cannot stat"));
        ck_assert_ptr_null(find_file(files, "y.conf"));
        ck_assert_uint_eq(d.n_errors, 1);
        diagnostics_clear(&d);
        g_clear_pointer(&files, g_ptr_array_unref);

        /* The directory that really holds the file must be trusted too. */
        ck_assert_int_eq(chmod(outside, 0777), 0);
        diagnostics_init(&d);
        files = enumerate(&d);
        ck_assert(has_diag(&d, DIAGNOSTIC_ERROR, link, 0, "writable by group or others (mode 0777)"));
        ck_assert_ptr_null(find_file(files, "x.conf"));
        diagnostics_clear(&d);
}
END_TEST

START_TEST(test_missing_and_repeated_dirs) {
        g_autofree char *missing = g_build_filename(root, "does-not-exist", NULL);
        const char *const path[] = { missing, dirs[2], dirs[2], NULL };
        g_autoptr(GPtrArray) files = NULL;
        Diagnostics d;

        write_policy(2, "a.conf", GOOD_POLICY("usr"));

        diagnostics_init(&d);
        ck_assert_int_eq(policy_dirs_enumerate(path, &d, &files), 0);
        ck_assert_uint_eq(d.items->len, 0);
        ck_assert_uint_eq(files->len, 1);
        /* A directory listed twice does not shadow itself. */
        ck_assert_uint_eq(((PolicyFile *) g_ptr_array_index(files, 0))->shadowed->len, 0);
        diagnostics_clear(&d);
}
END_TEST

START_TEST(test_not_a_regular_file) {
        g_autoptr(GPtrArray) files = NULL;
        g_autofree char *subdir = path_in(0, "a.conf");
        Diagnostics d;

        ck_assert_int_eq(mkdir(subdir, 0755), 0);
        write_policy(2, "a.conf", GOOD_POLICY("usr"));

        diagnostics_init(&d);
        files = enumerate(&d);
        ck_assert(has_diag(&d, DIAGNOSTIC_ERROR, subdir, 0, "not a regular file"));
        ck_assert_ptr_nonnull(find_file(files, "a.conf")->path);
        diagnostics_clear(&d);
}
END_TEST

START_TEST(test_bad_file_does_not_stop_others) {
        g_autoptr(GPtrArray) policies = NULL;
        g_autofree char *bad = path_in(0, "b.conf"), *binary = path_in(1, "c.conf");
        Diagnostics d;

        write_policy(2, "a.conf", GOOD_POLICY("a"));
        write_policy(0, "b.conf", "[Policy]\nUnits=b.service\n[TransparentHugePages]\nEnabled=sometimes\n");
        write_policy(2, "b.conf", GOOD_POLICY("vendor-b"));
        write_policy(1, "c.conf", "\x01\x02garbage");
        write_policy(0, "d.conf", GOOD_POLICY("d"));

        diagnostics_init(&d);
        policies = load(&d);
        ck_assert(has_diag(&d, DIAGNOSTIC_ERROR, bad, 4, "invalid value 'sometimes'"));
        ck_assert(has_diag(&d, DIAGNOSTIC_ERROR, binary, 1, "binary"));
        ck_assert_uint_eq(d.n_errors, 2);
        /* The broken admin file still claims its name: the vendor's b.conf does not sneak back. */
        ck_assert_uint_eq(policies->len, 2);
        ck_assert_str_eq(((Policy *) g_ptr_array_index(policies, 0))->name, "a.conf");
        ck_assert_str_eq(((Policy *) g_ptr_array_index(policies, 1))->name, "d.conf");
        diagnostics_clear(&d);
}
END_TEST

int main(int argc, char *argv[]) {
        Suite *s = suite_create("policy-dirs");
        TCase *tc = tcase_create("dirs");

        tcase_add_checked_fixture(tc, setup, teardown);
        /* Files owned by someone else: chown() needs root. */
        if (argc > 1 && streq(argv[1], "--root")) {
                if (geteuid() != 0)
                        return test_skip("chown() needs root");
                tcase_add_test(tc, test_untrusted_owner);
                tcase_add_test(tc, test_untrusted_owner_of_directory);
        } else {
                tcase_add_test(tc, test_default_dirs);
                tcase_add_test(tc, test_trusted_uid);
                tcase_add_test(tc, test_precedence);
                tcase_add_test(tc, test_mask_dev_null);
                tcase_add_test(tc, test_mask_empty_file);
                tcase_add_test(tc, test_lexical_order_and_names);
                tcase_add_test(tc, test_group_writable);
                tcase_add_test(tc, test_symlink_out_of_tree);
                tcase_add_test(tc, test_missing_and_repeated_dirs);
                tcase_add_test(tc, test_not_a_regular_file);
                tcase_add_test(tc, test_bad_file_does_not_stop_others);
        }
        suite_add_tcase(s, tc);

        return test_run_suite(s);
}
