/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib.h>

#include "test-util.h"
#include "thp-stats-read.h"
#include "thp-stats.h"
#include "util.h"

#define THP "kernel/mm/transparent_hugepage/"

static char *root;

static void setup(void) {
        root = test_mkdtemp();
}

static void teardown(void) {
        test_rm_rf(root);
        g_clear_pointer(&root, g_free);
}

START_TEST(test_names) {
        for (ThpStat s = 0; s < _THP_STAT_MAX; s++) {
                ck_assert_ptr_nonnull(thp_stat_to_string(s));
                ck_assert_int_eq(thp_stat_from_string(thp_stat_to_string(s)), s);
        }
        ck_assert_int_eq(thp_stat_from_string("anon_fault"), -EINVAL);
        ck_assert_int_eq(thp_stat_from_string(NULL), -EINVAL);
        ck_assert(thp_stat_is_gauge(THP_STAT_NR_ANON));
        ck_assert(thp_stat_is_gauge(THP_STAT_NR_ANON_PARTIALLY_MAPPED));
        ck_assert(!thp_stat_is_gauge(THP_STAT_ANON_FAULT_FALLBACK));
        ck_assert(!thp_stat_is_gauge(THP_STAT_SPLIT));
}
END_TEST

START_TEST(test_dir_parse) {
        uint64_t kb = 7;

        ck_assert_int_eq(thp_size_dir_parse("hugepages-64kB", &kb), 0);
        ck_assert_uint_eq(kb, 64);
        ck_assert_int_eq(thp_size_dir_parse("hugepages-2048kB", &kb), 0);
        ck_assert_uint_eq(kb, 2048);

        kb = 7;
        ck_assert_int_eq(thp_size_dir_parse("hugepages-kB", &kb), -EINVAL);
        ck_assert_int_eq(thp_size_dir_parse("hugepages-0kB", &kb), -EINVAL);
        ck_assert_int_eq(thp_size_dir_parse("hugepages-64MB", &kb), -EINVAL);
        ck_assert_int_eq(thp_size_dir_parse("hugepages--64kB", &kb), -EINVAL);
        ck_assert_int_eq(thp_size_dir_parse("khugepaged", &kb), -EINVAL);
        ck_assert_int_eq(thp_size_dir_parse(NULL, &kb), -EINVAL);
        ck_assert_uint_eq(kb, 7);
}
END_TEST

START_TEST(test_set) {
        ThpSizeStats s = { .size_kb = 64 };

        ck_assert_int_eq(thp_size_stats_set(&s, "anon_fault_alloc", "1234\n"), 0);
        ck_assert(thp_size_stats_has(&s, THP_STAT_ANON_FAULT_ALLOC));
        ck_assert_uint_eq(s.value[THP_STAT_ANON_FAULT_ALLOC], 1234);
        ck_assert(!thp_size_stats_has(&s, THP_STAT_ANON_FAULT_FALLBACK));

        /* Malformed text leaves the counter as it was. */
        ck_assert_int_eq(thp_size_stats_set(&s, "anon_fault_alloc", "12 34\n"), -EBADMSG);
        ck_assert_int_eq(thp_size_stats_set(&s, "anon_fault_alloc", "-1\n"), -EBADMSG);
        ck_assert_int_eq(thp_size_stats_set(&s, "anon_fault_alloc", ""), -EBADMSG);
        ck_assert_int_eq(thp_size_stats_set(&s, "anon_fault_alloc", "\n"), -EBADMSG);
        ck_assert_int_eq(thp_size_stats_set(&s, "anon_fault_alloc", "99999999999999999999\n"), -EBADMSG);
        ck_assert_int_eq(thp_size_stats_set(&s, "anon_fault_alloc", NULL), -EBADMSG);
        ck_assert_uint_eq(s.value[THP_STAT_ANON_FAULT_ALLOC], 1234);

        /* A counter of a newer kernel is not thpd's to show. */
        ck_assert_int_eq(thp_size_stats_set(&s, "mystery_counter", "5\n"), -ENOENT);
        ck_assert_uint_eq(s.present, 1u << THP_STAT_ANON_FAULT_ALLOC);
}
END_TEST

START_TEST(test_shown) {
        ThpSizeStats s = { .size_kb = 64 };

        ck_assert_int_eq(thp_size_effective_enabled(KNOB_MTHP_INHERIT, KNOB_ENABLED_MADVISE), KNOB_ENABLED_MADVISE);
        ck_assert_int_eq(thp_size_effective_enabled(KNOB_MTHP_INHERIT, KNOB_VALUE_UNSET), KNOB_VALUE_UNSET);
        ck_assert_int_eq(thp_size_effective_enabled(KNOB_ENABLED_ALWAYS, KNOB_ENABLED_NEVER), KNOB_ENABLED_ALWAYS);
        ck_assert_int_eq(thp_size_effective_enabled(KNOB_ENABLED_NEVER, KNOB_ENABLED_ALWAYS), KNOB_ENABLED_NEVER);

        ck_assert(!thp_size_stats_shown(&s, KNOB_ENABLED_NEVER));
        ck_assert(thp_size_stats_shown(&s, KNOB_ENABLED_MADVISE));
        /* No per-size "enabled" (8 kB on 6.18 is shmem only): not on. */
        ck_assert(!thp_size_stats_shown(&s, KNOB_VALUE_UNSET));
        /* Off, but still holding pages mapped while it was on. */
        ck_assert_int_eq(thp_size_stats_set(&s, "nr_anon", "0\n"), 0);
        ck_assert(!thp_size_stats_shown(&s, KNOB_ENABLED_NEVER));
        ck_assert_int_eq(thp_size_stats_set(&s, "nr_anon", "3\n"), 0);
        ck_assert(thp_size_stats_shown(&s, KNOB_ENABLED_NEVER));
}
END_TEST

START_TEST(test_read) {
        g_autofree ThpSizeStats *sizes = NULL;
        uint64_t pmd;
        size_t n;

        test_write_file(root, THP "hpage_pmd_size", "2097152\n");
        test_write_file(root, THP "hugepages-2048kB/stats/anon_fault_alloc", "10\n");
        test_write_file(root, THP "hugepages-64kB/stats/anon_fault_alloc", "5\n");
        test_write_file(root, THP "hugepages-64kB/stats/anon_fault_fallback", "garbage\n");
        test_write_file(root, THP "hugepages-64kB/stats/split", "2\n");
        test_write_file(root, THP "hugepages-64kB/stats/not_a_counter", "2\n");
        /* A size of a kernel before 6.10: no stats/. */
        test_write_file(root, THP "hugepages-16kB/enabled", "always inherit madvise [never]\n");
        test_write_file(root, THP "khugepaged/defrag", "1\n");

        ck_assert_int_eq(thp_stats_read(root, &sizes, &n), 0);
        ck_assert_uint_eq(n, 2);
        ck_assert_uint_eq(sizes[0].size_kb, 64);
        ck_assert_uint_eq(sizes[0].value[THP_STAT_ANON_FAULT_ALLOC], 5);
        ck_assert_uint_eq(sizes[0].value[THP_STAT_SPLIT], 2);
        /* The malformed file and the missing ones are absent; the others still read. */
        ck_assert_uint_eq(sizes[0].present, (1u << THP_STAT_ANON_FAULT_ALLOC) | (1u << THP_STAT_SPLIT));
        ck_assert_uint_eq(sizes[1].size_kb, 2048);
        ck_assert_uint_eq(sizes[1].present, 1u << THP_STAT_ANON_FAULT_ALLOC);

        ck_assert_int_eq(thp_stats_read_pmd_size_kb(root, &pmd), 0);
        ck_assert_uint_eq(pmd, 2048);
}
END_TEST

START_TEST(test_read_none) {
        g_autofree ThpSizeStats *sizes = NULL;
        g_autofree char *missing = g_build_filename(root, "nothing", NULL);
        uint64_t pmd = 1;
        size_t n = 9;

        /* No THP at all: nothing to show, not an error. */
        ck_assert_int_eq(thp_stats_read(missing, &sizes, &n), 0);
        ck_assert_uint_eq(n, 0);
        ck_assert_int_eq(thp_stats_read_pmd_size_kb(missing, &pmd), -ENOENT);
        ck_assert_uint_eq(pmd, 1);

        test_write_file(root, THP "hpage_pmd_size", "2M\n");
        ck_assert_int_eq(thp_stats_read_pmd_size_kb(root, &pmd), -EBADMSG);
}
END_TEST

int main(void) {
        return test_run_suite(TEST_SUITE("thp-stats", "thp-stats", setup, teardown, test_names, test_dir_parse, test_set,
                                         test_shown, test_read, test_read_none));
}
