/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib.h>
#include <sys/stat.h>

#include "sysfs.h"
#include "test-util.h"
#include "util.h"

/* Read-only checks of the sysfs layer against this machine's kernel. Other tests may change knobs
 * concurrently, so nothing here writes, and every comparison retries until the file holds still. */

#define REAL_SYSFS "/sys"
#define REAL_THP_DIR REAL_SYSFS "/" SYSFS_THP_DIR
#define REAL_HUGETLB_DIR REAL_SYSFS "/" SYSFS_HUGETLB_DIR
#define NR_2M REAL_HUGETLB_DIR "/hugepages-2048kB/nr_hugepages"
#define STABLE_ATTEMPTS 10

static char *slurp(const char *path) {
        g_autoptr(GError) error = NULL;
        char *content = NULL;

        if (!g_file_get_contents(path, &content, NULL, &error))
                ck_abort_msg("%s: %s", path, error->message);
        return content;
}

/* The value the file shows: the bracketed word, else the whole content without blanks. Plain
 * string functions on purpose, so that it shares no code with knob_value_from_sysfs(). */
static char *shown_value(const char *content) {
        const char *open = strchr(content, '['), *close;

        if (!open)
                return g_strstrip(g_strdup(content));
        close = strchr(open, ']');
        ck_assert_ptr_nonnull(close);
        ck_assert_ptr_null(strchr(close, '['));
        return g_strndup(open + 1, (gsize) (close - open - 1));
}

START_TEST(test_read_agrees_with_file) {
        bool present[_KNOB_MAX];
        unsigned n_present = 0;

        sysfs_probe_knobs(REAL_SYSFS, present);
        ck_assert_msg(present[KNOB_ENABLED], "%s/enabled not probed", REAL_THP_DIR);

        FOREACH_KNOB(k) {
                g_autofree char *path = NULL;
                bool checked = false;

                if (!present[k])
                        continue;
                n_present++;
                path = sysfs_knob_path(REAL_SYSFS, k);

                for (unsigned attempt = 0; attempt < STABLE_ATTEMPTS && !checked; attempt++) {
                        g_autofree char *before = slurp(path), *after = NULL, *shown = NULL;
                        KnobValue v;
                        char buf[24];
                        int r;

                        r = sysfs_read_knob(REAL_SYSFS, k, &v);
                        after = slurp(path);
                        if (!streq(before, after))
                                continue;

                        ck_assert_msg(r == 0, "%s: %s", path, strerror(-r));
                        shown = shown_value(before);
                        ck_assert_str_eq(knob_value_to_string(k, v, buf), shown);
                        checked = true;
                }
                ck_assert_msg(checked, "%s kept changing while being read", path);
        }
        fprintf(stderr, "%u knobs present on this kernel\n", n_present);
}
END_TEST

static void check_tree_file(const char *relpath, const bool present[_KNOB_MAX], unsigned *n_matched) {
        g_autofree char *path = g_build_filename(REAL_THP_DIR, relpath, NULL);
        struct stat st;
        Knob k;

        if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
                return;
        if (knob_from_name(relpath, &k) < 0) {
                /* Every file the kernel lets root write is a knob, or thpd.policy(5) says why not:
                 * anon_beside_full is no upstream file (this machine's vendor kernel has it). */
                ck_assert_msg(!(st.st_mode & 0222) || streq(relpath, "anon_beside_full"),
                              "%s is writable but not in the knob table", path);
                return;
        }
        ck_assert_msg(present[k], "%s exists but was not probed present", path);
        (*n_matched)++;
}

START_TEST(test_probe_matches_tree) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GDir) dir = NULL;
        bool present[_KNOB_MAX];
        unsigned n_matched = 0, n_present = 0;
        const char *name;

        sysfs_probe_knobs(REAL_SYSFS, present);

        dir = g_dir_open(REAL_THP_DIR, 0, &error);
        ck_assert_msg(dir, "%s: %s", REAL_THP_DIR, error ? error->message : "");

        /* Knobs sit at most one directory deep (khugepaged/, hugepages-<N>kB/). */
        while ((name = g_dir_read_name(dir))) {
                g_autofree char *sub_path = g_build_filename(REAL_THP_DIR, name, NULL);
                g_autoptr(GDir) sub = NULL;
                const char *sub_name;

                check_tree_file(name, present, &n_matched);
                if (!g_file_test(sub_path, G_FILE_TEST_IS_DIR))
                        continue;
                sub = g_dir_open(sub_path, 0, NULL);
                ck_assert_ptr_nonnull(sub);
                while ((sub_name = g_dir_read_name(sub))) {
                        g_autofree char *relpath = g_build_filename(name, sub_name, NULL);

                        check_tree_file(relpath, present, &n_matched);
                }
        }

        /* And nothing is probed present that the tree does not have. */
        FOREACH_KNOB(k)
                n_present += present[k];
        ck_assert_uint_ge(n_matched, 1);
        ck_assert_uint_eq(n_matched, n_present);
}
END_TEST

static uint64_t read_stable_number(const char *path) {
        for (unsigned attempt = 0; attempt < STABLE_ATTEMPTS; attempt++) {
                g_autofree char *a = slurp(path), *b = slurp(path);
                uint64_t n;

                if (!streq(a, b))
                        continue;
                ck_assert_int_eq(parse_u64(g_strstrip(a), &n), 0);
                return n;
        }
        ck_abort_msg("%s kept changing while being read", path);
}

START_TEST(test_hugetlb) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GDir) dir = NULL;
        g_autofree uint64_t *sizes = NULL;
        g_autofree int *nodes = NULL;
        size_t n_sizes, n_nodes, n_dirs = 0;
        bool have_2m = false, agreed = false;
        const char *name;
        PoolState s;
        int r;

        if (access(REAL_HUGETLB_DIR, F_OK) < 0) {
                fprintf(stderr, "SKIP: %s: %m\n", REAL_HUGETLB_DIR);
                ck_assert_int_eq(sysfs_list_hugetlb_sizes(REAL_SYSFS, &sizes, &n_sizes), -ENOENT);
                return;
        }

        ck_assert_int_eq(sysfs_list_hugetlb_sizes(REAL_SYSFS, &sizes, &n_sizes), 0);
        dir = g_dir_open(REAL_HUGETLB_DIR, 0, &error);
        ck_assert_msg(dir, "%s: %s", REAL_HUGETLB_DIR, error ? error->message : "");
        while ((name = g_dir_read_name(dir)))
                if (g_str_has_prefix(name, "hugepages-") && g_str_has_suffix(name, "kB"))
                        n_dirs++;
        ck_assert_uint_eq(n_sizes, n_dirs);

        for (size_t i = 0; i < n_sizes; i++) {
                fprintf(stderr, "hugetlb size: %" G_GUINT64_FORMAT " kB\n", sizes[i]);
                if (i > 0)
                        ck_assert_uint_gt(sizes[i], sizes[i - 1]);
                have_2m = have_2m || sizes[i] == 2048;
        }
        if (!have_2m) {
                fprintf(stderr, "SKIP: no 2048kB hugetlb pool on this kernel\n");
                return;
        }

        for (unsigned attempt = 0; attempt < STABLE_ATTEMPTS && !agreed; attempt++) {
                uint64_t before = read_stable_number(NR_2M);

                ck_assert_int_eq(sysfs_read_pool(REAL_SYSFS, 2048, POOL_NODE_ANY, &s), 0);
                if (before != read_stable_number(NR_2M))
                        continue;
                ck_assert_uint_eq(s.nr, before);
                agreed = true;
        }
        ck_assert_msg(agreed, "%s kept changing while being read", NR_2M);
        fprintf(stderr, "2048kB pool: nr=%" G_GUINT64_FORMAT " free=%" G_GUINT64_FORMAT " surplus=%" G_GUINT64_FORMAT "\n",
                s.nr, s.free, s.surplus);

        r = sysfs_list_pool_nodes(REAL_SYSFS, 2048, &nodes, &n_nodes);
        if (r == -ENOENT) {
                fprintf(stderr, "SKIP: no NUMA node directory on this kernel\n");
                return;
        }
        ck_assert_int_eq(r, 0);
        ck_assert_uint_ge(n_nodes, 1);
        for (size_t i = 0; i < n_nodes; i++) {
                g_autofree char *path = g_strdup_printf(REAL_SYSFS "/" SYSFS_NODE_DIR "/node%d/hugepages/hugepages-2048kB", nodes[i]);

                ck_assert(g_file_test(path, G_FILE_TEST_IS_DIR));
                ck_assert_int_eq(sysfs_read_pool(REAL_SYSFS, 2048, nodes[i], &s), 0);
        }
}
END_TEST

int main(void) {
        Suite *s;
        TCase *tc;

        if (getenv("THPD_SKIP_REAL_KERNEL"))
                return test_skip("THPD_SKIP_REAL_KERNEL is set");
        if (access(REAL_THP_DIR, F_OK) < 0) {
                g_autofree char *reason = g_strdup_printf("%s: %s", REAL_THP_DIR, g_strerror(errno));

                return test_skip(reason);
        }

        s = suite_create("sysfs-real");
        tc = tcase_create("real");
        tcase_add_test(tc, test_read_agrees_with_file);
        tcase_add_test(tc, test_probe_matches_tree);
        tcase_add_test(tc, test_hugetlb);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}
