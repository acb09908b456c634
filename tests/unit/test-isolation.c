/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "isolation.h"
#include "test-util.h"

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

int main(void) {
        return test_run_suite(TEST_SUITE("isolation", "core", NULL, NULL,
                                         test_process_classified));
}
