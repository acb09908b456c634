/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "knob.h"
#include "test-util.h"
#include "util.h"

START_TEST(test_names_round_trip) {
        FOREACH_KNOB(k) {
                const KnobInfo *info = knob_info(k);
                Knob found;

                /* A string that fills its array exactly compiles without its NUL (a word would run into
                 * the next one). */
                ck_assert_ptr_nonnull(memchr(info->name, '\0', sizeof info->name));
                ck_assert_ptr_nonnull(memchr(info->section, '\0', sizeof info->section));
                ck_assert_ptr_nonnull(memchr(info->key, '\0', sizeof info->key));
                for (KnobValue i = 0; knob_word(info, i); i++)
                        ck_assert_uint_lt(strlen(knob_word(info, i)), 14);

                ck_assert_int_eq(knob_from_name(knob_name(k), &found), 0);
                ck_assert_int_eq(found, k);
                ck_assert_int_eq(knob_from_policy_key(knob_info(k)->section, knob_info(k)->key, &found), 0);
                ck_assert_int_eq(found, k);
        }
        ck_assert_str_eq(knob_name(KNOB_MTHP_FIRST + 3), "hugepages-64kB/enabled");
        ck_assert_str_eq(knob_word(knob_info(KNOB_DEFRAG), 3), "defer+madvise");
        ck_assert_ptr_null(knob_word(knob_info(KNOB_DEFRAG), 5));
        ck_assert_str_eq(knob_word(knob_info(KNOB_SHMEM_ENABLED), 5), "force");
        ck_assert_ptr_null(knob_word(knob_info(KNOB_SHMEM_ENABLED), 6));
        ck_assert_ptr_null(knob_word(knob_info(KNOB_ENABLED), -1));
        ck_assert_ptr_null(knob_word(knob_info(KNOB_KHUGEPAGED_DEFRAG), 0));
        ck_assert_int_eq(knob_mthp_size_kb(KNOB_MTHP_FIRST + 8), 2048);
}
END_TEST

START_TEST(test_values) {
        KnobValue v;
        char buf[24];

        ck_assert_int_eq(knob_value_from_string(KNOB_DEFRAG, "defer+madvise", &v), 0);
        ck_assert_str_eq(knob_value_to_string(KNOB_DEFRAG, v, buf), "defer+madvise");
        ck_assert_int_eq(knob_value_from_string(KNOB_DEFRAG, "sometimes", &v), -EINVAL);
        ck_assert_int_eq(knob_value_from_string(KNOB_KHUGEPAGED_MAX_PTES_NONE, "512", &v), -ERANGE);
        ck_assert_int_eq(knob_value_from_string(KNOB_KHUGEPAGED_MAX_PTES_NONE, "-1", &v), -EINVAL);
        ck_assert_int_eq(knob_value_from_string(KNOB_KHUGEPAGED_PAGES_TO_SCAN, "0", &v), -ERANGE);
        ck_assert_int_eq(knob_value_from_string(KNOB_KHUGEPAGED_DEFRAG, "no", &v), 0);
        ck_assert_int_eq(v, 0);
        ck_assert_int_eq(knob_value_from_string(KNOB_KHUGEPAGED_SCAN_SLEEP_MILLISECS, "10000", &v), 0);
        ck_assert_str_eq(knob_value_to_string(KNOB_KHUGEPAGED_SCAN_SLEEP_MILLISECS, v, buf), "10000");
}
END_TEST

START_TEST(test_sysfs_syntax) {
        KnobValue v;
        char buf[24];

        ck_assert_int_eq(knob_value_from_sysfs(KNOB_ENABLED, "always [madvise] never\n", &v), 0);
        ck_assert_str_eq(knob_value_to_string(KNOB_ENABLED, v, buf), "madvise");
        ck_assert_int_eq(knob_value_from_sysfs(KNOB_SHMEM_ENABLED, "always within_size advise [never] deny force\n", &v), 0);
        ck_assert_str_eq(knob_value_to_string(KNOB_SHMEM_ENABLED, v, buf), "never");
        ck_assert_int_eq(knob_value_from_sysfs(KNOB_ENABLED, "never\n", &v), 0);
        ck_assert_int_eq(knob_value_from_sysfs(KNOB_ENABLED, "[always] [never]", &v), -EBADMSG);
        ck_assert_int_eq(knob_value_from_sysfs(KNOB_ENABLED, "always madvise", &v), -EBADMSG);
        ck_assert_int_eq(knob_value_from_sysfs(KNOB_ENABLED, "[bogus]", &v), -EBADMSG);
        ck_assert_int_eq(knob_value_from_sysfs(KNOB_KHUGEPAGED_MAX_PTES_NONE, "511\n", &v), 0);
        ck_assert_int_eq(v, 511);
        ck_assert_int_eq(knob_value_from_sysfs(KNOB_KHUGEPAGED_MAX_PTES_NONE, "", &v), -EBADMSG);
        ck_assert_int_eq(knob_value_from_sysfs(KNOB_MTHP_FIRST + 8, "always [inherit] madvise never\n", &v), 0);
        ck_assert_int_eq(v, KNOB_MTHP_INHERIT);
}
END_TEST

/* The rules that name a word of enabled by its value must mean the word the kernel shows. */
START_TEST(test_enabled_words) {
        static const struct {
                const char *word;
                KnobValue value;
        } words[] = {
                { "never", KNOB_ENABLED_NEVER },
                { "madvise", KNOB_ENABLED_MADVISE },
                { "always", KNOB_ENABLED_ALWAYS },
        };

        for (size_t i = 0; i < ELEMENTSOF(words); i++) {
                KnobValue v;

                ck_assert_int_eq(knob_value_from_string(KNOB_ENABLED, words[i].word, &v), 0);
                ck_assert_int_eq(v, words[i].value);
                ck_assert_int_eq(knob_value_from_string(KNOB_MTHP_FIRST + 4, words[i].word, &v), 0);
                ck_assert_int_eq(v, words[i].value);
        }
}
END_TEST

START_TEST(test_strictness) {
        KnobValue never, madvise, always, defer, inherit;

        ck_assert_int_eq(knob_value_from_string(KNOB_ENABLED, "never", &never), 0);
        ck_assert_int_eq(knob_value_from_string(KNOB_ENABLED, "madvise", &madvise), 0);
        ck_assert_int_eq(knob_value_from_string(KNOB_ENABLED, "always", &always), 0);
        ck_assert_int_lt(knob_compare_strictness(KNOB_ENABLED, never, madvise, KNOB_VALUE_UNSET), 0);
        ck_assert_int_gt(knob_compare_strictness(KNOB_ENABLED, always, madvise, KNOB_VALUE_UNSET), 0);

        ck_assert_int_eq(knob_value_from_string(KNOB_DEFRAG, "defer", &defer), 0);
        ck_assert_int_lt(knob_compare_strictness(KNOB_DEFRAG, defer, 2 /* madvise */, KNOB_VALUE_UNSET), 0);

        /* Sleep: higher is stricter; max_ptes: lower is stricter. */
        ck_assert_int_lt(knob_compare_strictness(KNOB_KHUGEPAGED_SCAN_SLEEP_MILLISECS, 30000, 10000, KNOB_VALUE_UNSET), 0);
        ck_assert_int_lt(knob_compare_strictness(KNOB_KHUGEPAGED_MAX_PTES_NONE, 0, 511, KNOB_VALUE_UNSET), 0);

        /* Per-size inherit borrows the strictness of the global value. */
        ck_assert_int_eq(knob_value_from_string(KNOB_MTHP_FIRST + 8, "inherit", &inherit), 0);
        ck_assert_int_eq(knob_compare_strictness(KNOB_MTHP_FIRST + 8, inherit, never, never), 0);
        ck_assert_int_gt(knob_compare_strictness(KNOB_MTHP_FIRST + 8, inherit, madvise, always), 0);
        ck_assert_int_lt(knob_compare_strictness(KNOB_MTHP_FIRST + 8, inherit, always, madvise), 0);
}
END_TEST

int main(void) {
        return test_run_suite(TEST_SUITE("knob", "core", NULL, NULL,
                                         test_names_round_trip,
                                         test_values,
                                         test_sysfs_syntax,
                                         test_enabled_words,
                                         test_strictness));
}
