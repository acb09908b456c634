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

/* Both per-size ranges: each size's enabled and shmem_enabled are told apart and map back. */
START_TEST(test_mthp_ranges) {
        Knob k, shmem;

        ck_assert_int_eq(knob_mthp_from_size_kb(64, &k), 0);
        ck_assert_int_eq(knob_mthp_shmem_from_size_kb(64, &shmem), 0);
        ck_assert_int_ne(k, shmem);
        ck_assert_str_eq(knob_name(shmem), "hugepages-64kB/shmem_enabled");
        ck_assert_str_eq(knob_info(shmem)->key, "ShmemEnabled.64K");
        ck_assert_int_eq(knob_from_name("hugepages-16777216kB/shmem_enabled", &k), 0);
        ck_assert_int_eq(knob_mthp_size_kb(k), 16777216);
        ck_assert_int_eq(knob_from_policy_key("TransparentHugePages", "ShmemEnabled.2M", &k), 0);
        ck_assert_int_eq(knob_mthp_size_kb(k), 2048);
        ck_assert(knob_is_mthp(k) && knob_is_mthp_shmem(k));
        ck_assert_int_eq(knob_inherits_from(k), KNOB_SHMEM_ENABLED);
        ck_assert_int_eq(knob_mthp_from_size_kb(2048, &k), 0);
        ck_assert(knob_is_mthp(k) && !knob_is_mthp_shmem(k));
        ck_assert_int_eq(knob_inherits_from(k), KNOB_ENABLED);
        ck_assert_int_eq(knob_inherits_from(KNOB_SHMEM_ENABLED), _KNOB_INVALID);
        ck_assert(!knob_is_mthp(KNOB_USE_ZERO_PAGE));
        ck_assert_int_eq(knob_mthp_size_kb(KNOB_SHRINK_UNDERUSED), 0);
        ck_assert_int_eq(knob_mthp_shmem_from_size_kb(4, &k), -ENOENT);
        ck_assert_int_eq(knob_from_name("hugepages-64kB/shmem", &k), -ENOENT);

        FOREACH_KNOB(i)
                if (knob_is_mthp(i)) {
                        Knob back;

                        if (knob_is_mthp_shmem(i))
                                ck_assert_int_eq(knob_mthp_shmem_from_size_kb(knob_mthp_size_kb(i), &back), 0);
                        else
                                ck_assert_int_eq(knob_mthp_from_size_kb(knob_mthp_size_kb(i), &back), 0);
                        ck_assert_int_eq(back, i);
                }
}
END_TEST

/* The 0/1 files directly under transparent_hugepage/: numbers, as the kernel shows them, with the
 * usual boolean spellings, in [TransparentHugePages]. */
START_TEST(test_flags) {
        static const Knob flags[] = { KNOB_SHRINK_UNDERUSED, KNOB_USE_ZERO_PAGE };
        KnobValue v;
        char buf[24];

        ck_assert_str_eq(knob_name(KNOB_SHRINK_UNDERUSED), "shrink_underused");
        ck_assert_str_eq(knob_info(KNOB_SHRINK_UNDERUSED)->key, "ShrinkUnderused");
        ck_assert_str_eq(knob_name(KNOB_USE_ZERO_PAGE), "use_zero_page");
        ck_assert_str_eq(knob_info(KNOB_USE_ZERO_PAGE)->key, "UseZeroPage");
        for (size_t i = 0; i < ELEMENTSOF(flags); i++) {
                Knob k = flags[i];

                ck_assert_str_eq(knob_info(k)->section, "TransparentHugePages");
                ck_assert_int_eq(knob_value_from_string(k, "yes", &v), 0);
                ck_assert_int_eq(v, 1);
                ck_assert_int_eq(knob_value_from_string(k, "off", &v), 0);
                ck_assert_int_eq(v, 0);
                ck_assert_int_eq(knob_value_from_string(k, "2", &v), -ERANGE);
                ck_assert_int_eq(knob_value_from_string(k, "maybe", &v), -EINVAL);
                ck_assert_int_eq(knob_value_from_sysfs(k, "1\n", &v), 0);
                ck_assert_str_eq(knob_value_to_string(k, v, buf), "1");
                ck_assert_int_eq(knob_value_from_sysfs(k, "2\n", &v), -EBADMSG);
                /* 1 is stricter: it keeps fewer huge pages (knob.c says why for each). */
                ck_assert_int_lt(knob_compare_strictness(k, 1, 0, KNOB_VALUE_UNSET), 0);
                ck_assert_int_gt(knob_compare_strictness(k, 0, 1, KNOB_VALUE_UNSET), 0);
        }
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
        /* As this machine's 6.18 shows a per-size shmem_enabled. */
        ck_assert_int_eq(knob_value_from_sysfs(KNOB_MTHP_SHMEM_FIRST + 3, "always inherit within_size advise [never]\n", &v), 0);
        ck_assert_str_eq(knob_value_to_string(KNOB_MTHP_SHMEM_FIRST + 3, v, buf), "never");
        ck_assert_int_eq(knob_value_from_sysfs(KNOB_MTHP_SHMEM_FIRST + 8, "always [inherit] within_size advise never\n", &v), 0);
        ck_assert_int_eq(v, KNOB_MTHP_SHMEM_INHERIT);
        ck_assert_int_eq(knob_value_from_sysfs(KNOB_MTHP_SHMEM_FIRST + 3, "always [force] never\n", &v), -EBADMSG);
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

static KnobValue word(Knob k, const char *w) {
        KnobValue v;

        ck_assert_int_eq(knob_value_from_string(k, w, &v), 0);
        return v;
}

/* Per-size shmem: the global shmem_enabled's order without deny and force, and inherit as strict
 * as the global value it inherits. */
START_TEST(test_shmem_strictness) {
        static const char *const order[] = { "never", "advise", "within_size", "always" };
        const Knob k = KNOB_MTHP_SHMEM_FIRST + 3, g = KNOB_SHMEM_ENABLED;
        KnobValue inherit = word(k, "inherit");

        ck_assert_int_eq(inherit, KNOB_MTHP_SHMEM_INHERIT);
        ck_assert_int_eq(knob_value_from_string(k, "deny", &inherit), -EINVAL);
        ck_assert_int_eq(knob_value_from_string(k, "force", &inherit), -EINVAL);
        inherit = KNOB_MTHP_SHMEM_INHERIT;

        for (size_t i = 0; i + 1 < ELEMENTSOF(order); i++)
                ck_assert_int_lt(knob_compare_strictness(k, word(k, order[i]), word(k, order[i + 1]), KNOB_VALUE_UNSET), 0);
        for (size_t i = 0; i < ELEMENTSOF(order); i++) {
                KnobValue w = word(k, order[i]), global = word(g, order[i]);

                /* inherit of the same word is a tie; of a looser global, looser; of a stricter, stricter. */
                ck_assert_int_eq(knob_compare_strictness(k, inherit, w, global), 0);
                if (i > 0)
                        ck_assert_int_gt(knob_compare_strictness(k, inherit, word(k, order[i - 1]), global), 0);
                if (i + 1 < ELEMENTSOF(order))
                        ck_assert_int_lt(knob_compare_strictness(k, inherit, word(k, order[i + 1]), global), 0);
        }
        /* deny turns every size off: inherit of it is stricter than never; of force, looser than always. */
        ck_assert_int_lt(knob_compare_strictness(k, inherit, word(k, "never"), word(g, "deny")), 0);
        ck_assert_int_gt(knob_compare_strictness(k, inherit, word(k, "always"), word(g, "force")), 0);
        /* Unknown global: inherit counts as the strictest, as per-size enabled's does. */
        ck_assert_int_lt(knob_compare_strictness(k, inherit, word(k, "never"), KNOB_VALUE_UNSET), 0);
}
END_TEST

/* The enum order, but a global shmem_enabled on its way to force after every per-size shmem knob:
 * the kernel refuses force while a size other than the PMD size inherits. */
START_TEST(test_write_order) {
        KnobValue target[_KNOB_MAX];
        Knob order[_KNOB_MAX];
        size_t global_at = _KNOB_MAX;

        FOREACH_KNOB(k)
                target[k] = KNOB_VALUE_UNSET;
        knob_write_order(target, order);
        FOREACH_KNOB(k)
                ck_assert_int_eq(order[k], k);

        /* Leaving force (or any other value): the global first, then the sizes that inherit. */
        target[KNOB_SHMEM_ENABLED] = word(KNOB_SHMEM_ENABLED, "never");
        target[KNOB_MTHP_SHMEM_FIRST + 3] = KNOB_MTHP_SHMEM_INHERIT;
        knob_write_order(target, order);
        FOREACH_KNOB(k)
                ck_assert_int_eq(order[k], k);

        target[KNOB_SHMEM_ENABLED] = word(KNOB_SHMEM_ENABLED, "force");
        target[KNOB_MTHP_SHMEM_FIRST + 3] = word(KNOB_MTHP_SHMEM_FIRST + 3, "never");
        knob_write_order(target, order);
        for (size_t i = 0; i < _KNOB_MAX; i++) {
                size_t seen = 0;

                for (size_t j = 0; j < _KNOB_MAX; j++)
                        seen += order[j] == (Knob) i;
                ck_assert_uint_eq(seen, 1);
                if (order[i] == KNOB_SHMEM_ENABLED)
                        global_at = i;
        }
        ck_assert_uint_lt(global_at, _KNOB_MAX);
        for (size_t i = 0; i < _KNOB_MAX; i++)
                if (knob_is_mthp_shmem(order[i]))
                        ck_assert_uint_lt(i, global_at);
        /* The rest keep their order: enabled before the per-size enabled knobs. */
        ck_assert_int_eq(order[0], KNOB_ENABLED);
        ck_assert_int_eq(order[KNOB_MTHP_FIRST - 1], KNOB_MTHP_FIRST);
}
END_TEST

int main(void) {
        return test_run_suite(TEST_SUITE("knob", "core", NULL, NULL,
                                         test_names_round_trip,
                                         test_mthp_ranges,
                                         test_flags,
                                         test_shmem_strictness,
                                         test_write_order,
                                         test_values,
                                         test_sysfs_syntax,
                                         test_enabled_words,
                                         test_strictness));
}
