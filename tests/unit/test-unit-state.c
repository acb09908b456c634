/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "test-util.h"
#include "unit-state.h"
#include "util.h"

/* What the tracker holds after the manager told it: ActiveState, SubState and the type of the job
 * queued (NULL: none). Only a job of a start type is held as one (units.c), so the facts are
 * made the same way. */
static UnitFacts facts(const char *active, const char *sub, const char *job_type, bool with_processes) {
        return (UnitFacts) {
                .active_state = active,
                .sub_state = sub,
                .start_job = job_type && unit_job_type_is_start(job_type),
                .exited_with_processes = with_processes,
        };
}

typedef struct StateCase {
        const char *active, *sub, *job;
        bool with_processes;
        bool wanted, running;
} StateCase;

/* Every ActiveState systemd has, with and without a job of each kind that matters. */
START_TEST(test_wanted_and_running) {
        static const StateCase cases[] = {
                /* Not known yet: nothing until the manager answers, unless a start is queued. */
                { NULL, NULL, NULL, false, false, false },
                { NULL, NULL, "start", false, true, false },
                /* Up. */
                { "active", "running", NULL, false, true, true },
                { "reloading", "reload", NULL, false, true, true },
                /* On its way up: wanted, but it has mapped nothing yet. */
                { "activating", "start", NULL, false, true, false },
                { "activating", "start-pre", "start", false, true, false },
                /* On its way down, or down. */
                { "deactivating", "stop-sigterm", NULL, false, false, false },
                { "inactive", "dead", NULL, false, false, false },
                { "failed", "failed", NULL, false, false, false },
                { "maintenance", "cleaning", NULL, false, false, false },
                /* A start job queued on a unit that is down: wanted at once, before it runs. */
                { "inactive", "dead", "start", false, true, false },
                { "failed", "failed", "start", false, true, false },
                { "inactive", "dead", "verify-active", false, true, false },
                { "inactive", "dead", "reload-or-start", false, true, false },
                /* A restart of a running unit: its stop half must not release the policy, and the
                 * memory it maps next is mapped under the policy, so it is not "running". */
                { "active", "running", "restart", false, true, false },
                { "active", "running", "try-restart", false, true, false },
                { "deactivating", "stop-sigterm", "restart", false, true, false },
                { "inactive", "dead", "restart", false, true, false },
                /* A stop job on an active unit is no start: it runs until it is down. */
                { "active", "running", "stop", false, true, true },
                { "deactivating", "stop-sigterm", "stop", false, false, false },
                /* Nor is a reload. */
                { "active", "running", "reload", false, true, true },
                { "reloading", "reload", "reload", false, true, true },
                { "inactive", "dead", "stop", false, false, false },
                /* RemainAfterExit=yes: active with its main process gone runs nothing, unless it
                 * left processes behind. */
                { "active", "exited", NULL, false, false, false },
                { "active", "exited", NULL, true, true, true },
                { "reloading", "exited", NULL, false, true, false },
                { "reloading", "exited", NULL, true, true, true },
                { "active", "exited", "start", false, true, false },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                const StateCase *c = &cases[i];
                UnitFacts f = facts(c->active, c->sub, c->job, c->with_processes);

                ck_assert_msg(unit_state_wanted(&f) == c->wanted, "case %zu (%s %s, job %s): wanted %d", i,
                              c->active ?: "?", c->sub ?: "?", c->job ?: "none", c->wanted);
                ck_assert_msg(unit_state_running(&f) == c->running, "case %zu (%s %s, job %s): running %d", i,
                              c->active ?: "?", c->sub ?: "?", c->job ?: "none", c->running);
                /* Running is a kind of wanted. */
                ck_assert(!unit_state_running(&f) || unit_state_wanted(&f));
        }
}
END_TEST

START_TEST(test_job_types) {
        static const char *const starts[] = { "start", "restart", "try-restart", "reload-or-start", "verify-active" };
        static const char *const others[] = { "stop", "reload", "try-reload", "nop", "", "Start" };

        for (size_t i = 0; i < ELEMENTSOF(starts); i++)
                ck_assert_msg(unit_job_type_is_start(starts[i]), "%s", starts[i]);
        for (size_t i = 0; i < ELEMENTSOF(others); i++)
                ck_assert_msg(!unit_job_type_is_start(others[i]), "%s", others[i]);
        ck_assert(!unit_job_type_is_start(NULL));

        ck_assert(unit_job_type_is_restart("restart"));
        ck_assert(unit_job_type_is_restart("try-restart"));
        ck_assert(!unit_job_type_is_restart("start"));
        ck_assert(!unit_job_type_is_restart("stop"));
        ck_assert(!unit_job_type_is_restart("reload"));
        ck_assert(!unit_job_type_is_restart(NULL));
}
END_TEST

/* A stop is counted once per way down, whichever of the states below it passes through. */
START_TEST(test_stopped) {
        static const char *const down[] = { "deactivating", "inactive", "failed" };
        static const char *const up[] = { "active", "reloading", "activating", "maintenance" };

        for (size_t i = 0; i < ELEMENTSOF(up); i++)
                for (size_t j = 0; j < ELEMENTSOF(down); j++) {
                        ck_assert_msg(unit_state_stopped(up[i], down[j]), "%s -> %s", up[i], down[j]);
                        ck_assert_msg(!unit_state_stopped(down[j], up[i]), "%s -> %s", down[j], up[i]);
                }
        for (size_t i = 0; i < ELEMENTSOF(down); i++)
                for (size_t j = 0; j < ELEMENTSOF(down); j++)
                        ck_assert_msg(!unit_state_stopped(down[i], down[j]), "%s -> %s", down[i], down[j]);
        for (size_t i = 0; i < ELEMENTSOF(up); i++)
                for (size_t j = 0; j < ELEMENTSOF(up); j++)
                        ck_assert_msg(!unit_state_stopped(up[i], up[j]), "%s -> %s", up[i], up[j]);
        /* First seen down: it was never followed up, so it did not stop while followed. */
        ck_assert(!unit_state_stopped(NULL, "inactive"));
        ck_assert(!unit_state_stopped(NULL, "failed"));
        ck_assert(!unit_state_stopped("active", NULL));
}
END_TEST

START_TEST(test_exited) {
        ck_assert(unit_sub_state_exited("exited"));
        ck_assert(!unit_sub_state_exited("running"));
        ck_assert(!unit_sub_state_exited("dead"));
        ck_assert(!unit_sub_state_exited(NULL));
}
END_TEST

/* A writer in conflict is followed through settled states only. */
START_TEST(test_settled) {
        ck_assert_int_eq(unit_state_settled("active"), UNIT_SETTLED_RUNNING);
        ck_assert_int_eq(unit_state_settled("reloading"), UNIT_SETTLED_RUNNING);
        ck_assert_int_eq(unit_state_settled("inactive"), UNIT_SETTLED_STOPPED);
        ck_assert_int_eq(unit_state_settled("failed"), UNIT_SETTLED_STOPPED);
        /* A oneshot writer runs its job while activating and has not stopped when it exits. */
        ck_assert_int_eq(unit_state_settled("activating"), UNIT_SETTLED_NO);
        /* TuneD writes once more as it stops. */
        ck_assert_int_eq(unit_state_settled("deactivating"), UNIT_SETTLED_NO);
        ck_assert_int_eq(unit_state_settled("maintenance"), UNIT_SETTLED_NO);
        ck_assert_int_eq(unit_state_settled(NULL), UNIT_SETTLED_NO);
}
END_TEST

int main(void) {
        return test_run_suite(TEST_SUITE("unit-state", "core", NULL, NULL,
                                         test_wanted_and_running, test_job_types, test_stopped, test_exited,
                                         test_settled));
}
