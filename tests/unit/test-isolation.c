/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "isolation.h"
#include "test-util.h"
#include "util.h"

/* A process not at its command yet counts as on its way to the drop-in's setting, but only
 * where there is a drop-in: without one nothing on its way disables THP (the loop of stop 40
 * saw a transient unit's child, caught before its exec, taken for isolated). */
START_TEST(test_process_classified) {
        static const char *const starting[] = {
                "thpd-exec", "(hpd-exec)", "systemd", "systemd-executor", "(sd-exec-strv)",
        };

        ck_assert_int_eq(isolation_classify_process(false, "redis-server", SCOPE_VIA_NONE), ISOLATION_PROCESS_DISABLED);
        ck_assert_int_eq(isolation_classify_process(false, "(sd-exec-strv)", SCOPE_VIA_HELPER),
                         ISOLATION_PROCESS_DISABLED);
        ck_assert_int_eq(isolation_classify_process(true, "redis-server", SCOPE_VIA_HELPER), ISOLATION_PROCESS_ENABLED);
        ck_assert_int_eq(isolation_classify_process(true, "redis-server", SCOPE_VIA_MEMORY_THP),
                         ISOLATION_PROCESS_ENABLED);
        ck_assert_int_eq(isolation_classify_process(true, NULL, SCOPE_VIA_HELPER), ISOLATION_PROCESS_ENABLED);
        /* A name that only starts like the helper's is the command itself. */
        ck_assert_int_eq(isolation_classify_process(true, "thpd-exec2", SCOPE_VIA_HELPER), ISOLATION_PROCESS_ENABLED);
        for (size_t i = 0; i < ELEMENTSOF(starting); i++) {
                ck_assert_int_eq(isolation_classify_process(true, starting[i], SCOPE_VIA_HELPER),
                                 ISOLATION_PROCESS_STARTING);
                ck_assert_int_eq(isolation_classify_process(true, starting[i], SCOPE_VIA_MEMORY_THP),
                                 ISOLATION_PROCESS_STARTING);
                ck_assert_int_eq(isolation_classify_process(true, starting[i], SCOPE_VIA_NONE),
                                 ISOLATION_PROCESS_ENABLED);
        }
}
END_TEST

/* Without a drop-in nothing took THP from a madvise unit, and its processes could not show it;
 * a never unit's processes can, whichever way they were isolated. */
START_TEST(test_before_asking) {
        static const ScopeVia vias[] = { SCOPE_VIA_MEMORY_THP, SCOPE_VIA_HELPER };

        ck_assert_int_eq(isolation_before_asking(KNOB_ENABLED_MADVISE, SCOPE_VIA_NONE), ISOLATION_NOT_ISOLATED);
        ck_assert_int_eq(isolation_before_asking(KNOB_ENABLED_NEVER, SCOPE_VIA_NONE), ISOLATION_CHECKING);
        for (size_t i = 0; i < ELEMENTSOF(vias); i++) {
                ck_assert_int_eq(isolation_before_asking(KNOB_ENABLED_NEVER, vias[i]), ISOLATION_CHECKING);
                ck_assert_int_eq(isolation_before_asking(KNOB_ENABLED_MADVISE, vias[i]), ISOLATION_CHECKING);
        }
}
END_TEST

typedef struct JudgeCase {
        KnobValue mode;
        IsolationFound found;
        IsolationState state;
} JudgeCase;

/* THP_enabled: shows the full disable only: a process with THP under madvise is unverified, under
 * never it is not isolated. */
START_TEST(test_judge) {
        static const JudgeCase cases[] = {
                { KNOB_ENABLED_NEVER, { .disabled = 3 }, ISOLATION_ISOLATED },
                { KNOB_ENABLED_NEVER, { .disabled = 1, .starting = 2 }, ISOLATION_ISOLATED },
                { KNOB_ENABLED_NEVER, { .starting = 1 }, ISOLATION_ISOLATED },
                { KNOB_ENABLED_NEVER, { .disabled = 3, .enabled = 1 }, ISOLATION_NOT_ISOLATED },
                { KNOB_ENABLED_NEVER, { .enabled = 1 }, ISOLATION_NOT_ISOLATED },
                { KNOB_ENABLED_NEVER, {}, ISOLATION_UNVERIFIED },
                /* madvise that fell back to the full disable shows as never does. */
                { KNOB_ENABLED_MADVISE, { .disabled = 2 }, ISOLATION_ISOLATED },
                { KNOB_ENABLED_MADVISE, { .disabled = 1, .starting = 1 }, ISOLATION_ISOLATED },
                { KNOB_ENABLED_MADVISE, { .disabled = 2, .enabled = 1 }, ISOLATION_UNVERIFIED },
                { KNOB_ENABLED_MADVISE, { .enabled = 1 }, ISOLATION_UNVERIFIED },
                { KNOB_ENABLED_MADVISE, {}, ISOLATION_UNVERIFIED },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                ck_assert_msg(isolation_judge(cases[i].mode, &cases[i].found) == cases[i].state, "case %zu: %s, got %s", i,
                              isolation_state_to_string(cases[i].state),
                              isolation_state_to_string(isolation_judge(cases[i].mode, &cases[i].found)));
}
END_TEST

/* The mode is a policy's Enabled= as parsed, not a word compared as text. */
START_TEST(test_judge_parsed_mode) {
        const IsolationFound with_thp = { .enabled = 1 };
        KnobValue never, madvise;

        ck_assert_int_eq(knob_value_from_string(KNOB_ENABLED, "never", &never), 0);
        ck_assert_int_eq(knob_value_from_string(KNOB_ENABLED, "madvise", &madvise), 0);
        ck_assert_int_eq(isolation_judge(never, &with_thp), ISOLATION_NOT_ISOLATED);
        ck_assert_int_eq(isolation_judge(madvise, &with_thp), ISOLATION_UNVERIFIED);
        ck_assert_int_eq(isolation_before_asking(madvise, SCOPE_VIA_NONE), ISOLATION_NOT_ISOLATED);
        ck_assert_int_eq(isolation_before_asking(never, SCOPE_VIA_NONE), ISOLATION_CHECKING);
}
END_TEST

int main(void) {
        return test_run_suite(TEST_SUITE("isolation", "core", NULL, NULL,
                                         test_process_classified, test_before_asking, test_judge,
                                         test_judge_parsed_mode));
}
