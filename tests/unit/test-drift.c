/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "drift.h"
#include "test-util.h"
#include "util.h"

/* One test per rule of drift handling: attribution (a job running at the write, one that just
 * ended, a writer's own announcement), restoring a held knob, adopting a free one, the
 * per-writer restore limit within its window, the unknown writer counted too, a conflict lasting
 * until its writer stops or a reload, the recent list. */

#define T0 (1000 * USEC_PER_SEC)
#define WINDOW (600 * USEC_PER_SEC)

static DriftState S;
static const DriftSettings SETTINGS = { .max_restores = 3, .restore_window_usec = WINDOW };

static void setup(void) {
        drift_state_init(&S);
}

static void teardown(void) {
        drift_state_done(&S);
}

static DriftAction decide(const char *item, bool held, const char *writer, uint64_t now) {
        return drift_decide(&S, &SETTINGS, item, held, writer, "never", now, now);
}

static const char *attribute(const DriftJob *running, const DriftJob *ended, uint64_t write_usec, uint64_t found,
                             DriftCredit *ret_credit, uint64_t *ret_age) {
        DriftCause cause = { .running = running, .ended = ended, .write_usec = write_usec };

        return drift_attribute(&cause, found, ret_credit, ret_age);
}

/* Only found later (a job end, a status call): credited to the unit whose job just ended; found
 * later, or with no job, nobody is named. */
START_TEST(test_attribution_found) {
        DriftJob job = { .unit = "tuned.service", .usec = T0 };
        DriftCredit credit;
        uint64_t age;

        ck_assert_str_eq(attribute(NULL, &job, 0, T0 + 12 * USEC_PER_MSEC, &credit, &age), "tuned.service");
        ck_assert_int_eq(credit, DRIFT_CREDIT_JOB_ENDED);
        ck_assert_uint_eq(age, 12 * USEC_PER_MSEC);
        ck_assert_str_eq(attribute(NULL, &job, 0, T0 + DRIFT_ATTRIBUTION_USEC, &credit, &age), "tuned.service");
        ck_assert_ptr_null(attribute(NULL, &job, 0, T0 + DRIFT_ATTRIBUTION_USEC + 1, &credit, &age));
        ck_assert_int_eq(credit, DRIFT_CREDIT_NONE);
        ck_assert_ptr_null(attribute(NULL, &job, 0, T0 - 1, &credit, &age));
        ck_assert_ptr_null(attribute(NULL, NULL, 0, T0, &credit, &age));
}
END_TEST

/* Seen at the write: a job still running wrote it likely, and so did one that ended after the
 * write came; a job that ended before the write is not its writer, however recent. */
START_TEST(test_attribution_at_the_write) {
        DriftJob running = { .unit = "backup.service", .usec = T0 - USEC_PER_SEC };
        DriftJob ended = { .unit = "app.service", .usec = T0 };
        DriftCredit credit;
        uint64_t age;

        ck_assert_str_eq(attribute(&running, &ended, T0 + 1, T0 + 2, &credit, &age), "backup.service");
        ck_assert_int_eq(credit, DRIFT_CREDIT_JOB_RUNNING);
        ck_assert_uint_eq(age, 0);
        ck_assert_str_eq(attribute(NULL, &ended, T0 - 5, T0 + 3, &credit, &age), "app.service");
        ck_assert_int_eq(credit, DRIFT_CREDIT_JOB_ENDED);
        ck_assert_uint_eq(age, 3);
        ck_assert_str_eq(attribute(NULL, &ended, T0, T0, &credit, &age), "app.service");
        /* fanotify named the process: that goes first, with or without a unit. */
        DriftCause process = { .running = &running, .write_usec = T0, .process_known = true,
                               .process_unit = "session-4.scope" };
        ck_assert_str_eq(drift_attribute(&process, T0 + 1, &credit, &age), "session-4.scope");
        ck_assert_int_eq(credit, DRIFT_CREDIT_PROCESS);
        /* Found in no unit (a root shell outside logind): still the fact, before any job, even
         * one that ended after the write came. */
        process.process_unit = NULL;
        process.process_outside_units = true;
        process.ended = &ended;
        ended.usec = T0 + 1;
        ck_assert_ptr_null(drift_attribute(&process, T0 + 1, &credit, &age));
        ck_assert_int_eq(credit, DRIFT_CREDIT_PROCESS);
        /* Its cgroup unread (it exited): a running job knows better, then one that ended after
         * the write; without either, the process. */
        process.process_outside_units = false;
        ck_assert_str_eq(drift_attribute(&process, T0 + 1, &credit, &age), "backup.service");
        ck_assert_int_eq(credit, DRIFT_CREDIT_JOB_RUNNING);
        process.running = NULL;
        ck_assert_str_eq(drift_attribute(&process, T0 + 1, &credit, &age), "app.service");
        ck_assert_int_eq(credit, DRIFT_CREDIT_JOB_ENDED);
        process.ended = NULL;
        ck_assert_ptr_null(drift_attribute(&process, T0 + 1, &credit, &age));
        ck_assert_int_eq(credit, DRIFT_CREDIT_PROCESS);
        ended.usec = T0;
        ck_assert_ptr_null(attribute(NULL, &ended, T0 + 1, T0 + 2, &credit, &age));
        ck_assert_int_eq(credit, DRIFT_CREDIT_NONE);
}
END_TEST

static void record(const char *item, const char *writer, DriftAction action, uint64_t when) {
        DriftEvent e = {
                .item = g_strdup(item),
                .expected = g_strdup("madvise"),
                .found = g_strdup("always"),
                .writer = g_strdup(writer),
                .credit = writer ? DRIFT_CREDIT_JOB_RUNNING : DRIFT_CREDIT_NONE,
                .action = action,
                .when_usec = when,
        };

        drift_record(&S, &e);
}

/* TuneD names itself after its writes: the unnamed changes of the last seconds become its, and
 * so does a conflict with the unknown writer; older or named ones stay. */
START_TEST(test_credit_announced) {
        g_autoptr(GPtrArray) credited = NULL;
        g_autofree char *who = NULL;

        record("defrag", NULL, DRIFT_ACTION_RESTORE, T0 - DRIFT_ANNOUNCE_USEC - 1);
        ck_assert_int_eq(decide("enabled", true, NULL, T0), DRIFT_ACTION_RESTORE);
        record("enabled", NULL, DRIFT_ACTION_RESTORE, T0);
        record("khugepaged/defrag", "backup.service", DRIFT_ACTION_RESTORE, T0);

        credited = drift_credit_announced(&S, "tuned.service", "profile hpc-compute", T0 - DRIFT_ANNOUNCE_USEC);
        ck_assert_uint_eq(credited->len, 1);
        ck_assert_str_eq(g_ptr_array_index(credited, 0), "enabled");
        ck_assert_ptr_null(g_array_index(S.recent, DriftEvent, 0).writer);
        ck_assert_str_eq(g_array_index(S.recent, DriftEvent, 2).writer, "backup.service");
        who = drift_describe_writer(&g_array_index(S.recent, DriftEvent, 1));
        ck_assert_str_eq(who, "written by tuned.service (profile hpc-compute)");

        /* Decided as the unknown writer's: two more restores, then the conflict, named TuneD's
         * once it announces again. */
        ck_assert_int_eq(decide("enabled", true, NULL, T0 + 1), DRIFT_ACTION_RESTORE);
        ck_assert_int_eq(decide("enabled", true, NULL, T0 + 2), DRIFT_ACTION_RESTORE);
        ck_assert_int_eq(decide("enabled", true, NULL, T0 + 3), DRIFT_ACTION_YIELD);
        record("enabled", NULL, DRIFT_ACTION_YIELD, T0 + 3);
        ck_assert_ptr_null(drift_conflict(&S, "enabled")->writer);
        ck_assert_ptr_null(drift_describe_conflict_writer(drift_conflict(&S, "enabled")));
        g_clear_pointer(&credited, g_ptr_array_unref);
        credited = drift_credit_announced(&S, "tuned.service", "profile hpc-compute", T0 - DRIFT_ANNOUNCE_USEC);
        ck_assert_uint_eq(credited->len, 1);
        ck_assert_str_eq(drift_conflict(&S, "enabled")->writer, "tuned.service");
        g_clear_pointer(&who, g_free);
        who = drift_describe_conflict_writer(drift_conflict(&S, "enabled"));
        ck_assert_str_eq(who, "tuned.service (profile hpc-compute)");
        ck_assert(drift_has_writer(&S, "tuned.service"));
        /* Credited once: a second announcement finds nothing unnamed. */
        g_clear_pointer(&credited, g_ptr_array_unref);
        credited = drift_credit_announced(&S, "tuned.service", "profile balanced", T0 - DRIFT_ANNOUNCE_USEC);
        ck_assert_uint_eq(credited->len, 0);
}
END_TEST

/* No source holds the knob: the change becomes the baseline, whoever made it, every time. */
START_TEST(test_free_knob_adopted) {
        for (unsigned i = 0; i < 10; i++)
                ck_assert_int_eq(decide("enabled", false, "sysfsutils.service", T0 + i), DRIFT_ACTION_ADOPT);
        ck_assert_ptr_null(drift_conflict(&S, "enabled"));
}
END_TEST

/* A held knob is restored MaxRestores times; the next rewrite by the same writer within the
 * window is a conflict naming it, and thpd yields from then on. */
START_TEST(test_restore_then_conflict) {
        const DriftConflict *c;

        for (unsigned i = 0; i < SETTINGS.max_restores; i++)
                ck_assert_int_eq(decide("enabled", true, "loop.service", T0 + i * USEC_PER_SEC),
                                 DRIFT_ACTION_RESTORE);
        ck_assert_ptr_null(drift_conflict(&S, "enabled"));

        ck_assert_int_eq(decide("enabled", true, "loop.service", T0 + 10 * USEC_PER_SEC), DRIFT_ACTION_YIELD);
        c = drift_conflict(&S, "enabled");
        ck_assert_ptr_nonnull(c);
        ck_assert_str_eq(c->writer, "loop.service");
        ck_assert_int_eq(c->since_realtime_usec, T0 + 10 * USEC_PER_SEC);
        ck_assert(drift_has_writer(&S, "loop.service"));

        ck_assert_int_eq(decide("enabled", true, "loop.service", T0 + 11 * USEC_PER_SEC), DRIFT_ACTION_YIELD);
        ck_assert_ptr_nonnull(drift_conflict(&S, "enabled"));
        ck_assert_ptr_null(drift_conflict(&S, "defrag"));
}
END_TEST

/* A hugetlb pool is an item like a knob: limited on its own. */
START_TEST(test_pool_item) {
        for (unsigned i = 0; i < SETTINGS.max_restores; i++)
                ck_assert_int_eq(decide("hugepages-2048kB/nr_hugepages", true, "tuned.service", T0 + i),
                                 DRIFT_ACTION_RESTORE);
        ck_assert_int_eq(decide("hugepages-2048kB/nr_hugepages", true, "tuned.service", T0 + 5), DRIFT_ACTION_YIELD);
        ck_assert_ptr_nonnull(drift_conflict(&S, "hugepages-2048kB/nr_hugepages"));
        ck_assert_int_eq(decide("enabled", true, "tuned.service", T0 + 6), DRIFT_ACTION_RESTORE);
        ck_assert_ptr_null(drift_conflict(&S, "enabled"));
}
END_TEST

/* A conflict the last instance recorded is taken up again, once, and ends as any other. */
START_TEST(test_restored_conflict) {
        const DriftConflict *c;

        g_autofree char *writer = NULL;

        drift_restore_conflict(&S, "enabled", "tuned.service", "profile hpc-compute", "always", T0);
        drift_restore_conflict(&S, "enabled", "other.service", NULL, "never", T0 + 1);
        c = drift_conflict(&S, "enabled");
        ck_assert_ptr_nonnull(c);
        ck_assert_str_eq(c->writer, "tuned.service");
        writer = drift_describe_conflict_writer(c);
        ck_assert_str_eq(writer, "tuned.service (profile hpc-compute)");
        ck_assert_str_eq(c->value, "always");
        ck_assert_uint_eq(c->since_realtime_usec, T0);
        ck_assert_uint_eq(S.conflicts->len, 1);
        ck_assert_int_eq(decide("enabled", true, "tuned.service", T0 + 5), DRIFT_ACTION_YIELD);
        ck_assert(drift_writer_state(&S, "tuned.service", false, true));
        ck_assert_ptr_null(drift_conflict(&S, "enabled"));
}
END_TEST

/* A pool shrunk while its pages were in use keeps them until the users exit; the kernel freeing
 * them then is the shrink finishing, not a writer. */
START_TEST(test_pool_settling) {
        ck_assert(drift_pool_settling(0, 2107, 0));
        ck_assert(drift_pool_settling(0, 2107, 1000));
        ck_assert(drift_pool_settling(16, 64, 16));
        /* Below the target, above what was left, or nothing pending: somebody wrote it. */
        ck_assert(!drift_pool_settling(16, 64, 8));
        ck_assert(!drift_pool_settling(0, 2107, 3000));
        ck_assert(!drift_pool_settling(2107, 2107, 0));
        ck_assert(!drift_pool_settling(2107, 0, 1000));
}
END_TEST

/* Limits count per writer and per knob. */
START_TEST(test_limit_per_writer_and_knob) {
        for (unsigned i = 0; i < SETTINGS.max_restores; i++) {
                ck_assert_int_eq(decide("enabled", true, "a.service", T0 + i), DRIFT_ACTION_RESTORE);
                ck_assert_int_eq(decide("enabled", true, "b.service", T0 + i), DRIFT_ACTION_RESTORE);
                ck_assert_int_eq(decide("defrag", true, "a.service", T0 + i), DRIFT_ACTION_RESTORE);
        }
        ck_assert_ptr_null(drift_conflict(&S, "enabled"));
        ck_assert_ptr_null(drift_conflict(&S, "defrag"));
}
END_TEST

/* Restores older than the window no longer count. */
START_TEST(test_window) {
        for (unsigned i = 0; i < SETTINGS.max_restores; i++)
                ck_assert_int_eq(decide("enabled", true, "nightly.service", T0 + i), DRIFT_ACTION_RESTORE);
        ck_assert_int_eq(decide("enabled", true, "nightly.service", T0 + WINDOW + 1), DRIFT_ACTION_RESTORE);
        ck_assert_ptr_null(drift_conflict(&S, "enabled"));
}
END_TEST

/* An unknown writer is limited like a named one: thpd never fights without end. */
START_TEST(test_unknown_writer_limited) {
        const DriftConflict *c;

        for (unsigned i = 0; i < SETTINGS.max_restores; i++)
                ck_assert_int_eq(decide("enabled", true, NULL, T0 + i), DRIFT_ACTION_RESTORE);
        ck_assert_int_eq(decide("enabled", true, NULL, T0 + 5), DRIFT_ACTION_YIELD);
        c = drift_conflict(&S, "enabled");
        ck_assert_ptr_nonnull(c);
        ck_assert_ptr_null(c->writer);
}
END_TEST

/* A knob in conflict is yielded to any writer until the conflict is over. */
START_TEST(test_conflict_yields_to_anyone) {
        DriftSettings none = { .max_restores = 0, .restore_window_usec = WINDOW };

        ck_assert_int_eq(drift_decide(&S, &none, "enabled", true, "tuned.service", "never", T0, T0), DRIFT_ACTION_YIELD);
        ck_assert_int_eq(decide("enabled", true, "other.service", T0 + 1), DRIFT_ACTION_YIELD);
        ck_assert_str_eq(drift_conflict(&S, "enabled")->writer, "tuned.service");
}
END_TEST

/* A writer seen running after the conflict began, then not: it stopped, the conflict and its
 * count go, and the knob is restored again. Another unit's state, or a writer never seen running
 * (a oneshot that writes and exits), changes nothing. */
START_TEST(test_writer_stops) {
        for (unsigned i = 0; i <= SETTINGS.max_restores; i++)
                (void) decide("enabled", true, "tuned.service", T0 + i);
        ck_assert_ptr_nonnull(drift_conflict(&S, "enabled"));

        ck_assert(!drift_writer_state(&S, "tuned.service", false, false));
        ck_assert(!drift_writer_state(&S, "other.service", true, false));
        ck_assert(!drift_writer_state(&S, "other.service", false, false));
        ck_assert_ptr_nonnull(drift_conflict(&S, "enabled"));

        ck_assert(!drift_writer_state(&S, "tuned.service", true, false));
        ck_assert_ptr_nonnull(drift_conflict(&S, "enabled"));
        ck_assert(drift_writer_state(&S, "tuned.service", false, false));
        ck_assert_ptr_null(drift_conflict(&S, "enabled"));
        ck_assert(!drift_has_writer(&S, "tuned.service"));
        ck_assert_int_eq(decide("enabled", true, "tuned.service", T0 + 200), DRIFT_ACTION_RESTORE);
}
END_TEST

/* A writer stopped before thpd's first look answered is never seen running; its last run reached
 * active, so it ran and stopped, and the conflict goes. A oneshot's run never reaches active. */
START_TEST(test_writer_stopped_before_seen) {
        for (unsigned i = 0; i <= SETTINGS.max_restores; i++)
                (void) decide("enabled", true, "tuned.service", T0 + i);
        ck_assert_ptr_nonnull(drift_conflict(&S, "enabled"));

        ck_assert(!drift_writer_state(&S, "other.service", false, true));
        ck_assert(!drift_writer_state(&S, "tuned.service", false, false));
        ck_assert_ptr_nonnull(drift_conflict(&S, "enabled"));
        ck_assert(drift_writer_state(&S, "tuned.service", false, true));
        ck_assert_ptr_null(drift_conflict(&S, "enabled"));
        ck_assert_int_eq(decide("enabled", true, "tuned.service", T0 + 200), DRIFT_ACTION_RESTORE);
}
END_TEST

/* A reload gives every writer a fresh start. */
START_TEST(test_reset) {
        for (unsigned i = 0; i <= SETTINGS.max_restores; i++)
                (void) decide("enabled", true, "loop.service", T0 + i);
        drift_reset(&S);
        ck_assert_ptr_null(drift_conflict(&S, "enabled"));
        ck_assert_int_eq(decide("enabled", true, "loop.service", T0 + 10), DRIFT_ACTION_RESTORE);
}
END_TEST

/* The recent list keeps the last DRIFT_RECENT_MAX events, oldest first. */
START_TEST(test_recent) {
        for (unsigned i = 0; i < DRIFT_RECENT_MAX + 2; i++) {
                DriftEvent e = { .item = g_strdup("enabled"), .writer = g_strdup_printf("w%u.service", i) };

                drift_record(&S, &e);
                ck_assert_ptr_null(e.writer);
                ck_assert_ptr_null(e.item);
        }
        ck_assert_uint_eq(S.recent->len, DRIFT_RECENT_MAX);
        ck_assert_str_eq(g_array_index(S.recent, DriftEvent, 0).writer, "w2.service");
        ck_assert_str_eq(g_array_index(S.recent, DriftEvent, DRIFT_RECENT_MAX - 1).writer, "w9.service");
}
END_TEST

START_TEST(test_describe) {
        DriftEvent ended = { .writer = (char *) "tuned.service", .credit = DRIFT_CREDIT_JOB_ENDED,
                             .job_age_usec = 12 * USEC_PER_MSEC + 400 };
        DriftEvent running = { .writer = (char *) "backup.service", .credit = DRIFT_CREDIT_JOB_RUNNING };
        DriftEvent announced = { .writer = (char *) "tuned.service", .credit = DRIFT_CREDIT_ANNOUNCED };
        DriftEvent unknown = { .credit = DRIFT_CREDIT_JOB_ENDED };
        g_autofree char *named = drift_describe_writer(&ended), *nobody = drift_describe_writer(&unknown);
        g_autofree char *job = drift_describe_writer(&running), *said = drift_describe_writer(&announced);
        g_autofree char *conflict = NULL;

        ck_assert_str_eq(named, "likely written by tuned.service (its job finished 12 ms before)");
        ck_assert_str_eq(job, "likely written by backup.service (its job was running)");
        ck_assert_str_eq(said, "written by tuned.service");
        ck_assert_str_eq(nobody, "unknown writer");
        for (unsigned i = 0; i <= SETTINGS.max_restores; i++)
                (void) decide("enabled", true, "tuned.service", T0 + i);
        conflict = drift_describe_conflict(drift_conflict(&S, "enabled"));
        ck_assert_str_eq(conflict, "tuned.service keeps setting enabled=never: thpd no longer restores it");
        ck_assert_str_eq(drift_action_to_string(DRIFT_ACTION_RESTORE), "restored");
}
END_TEST

/* A writing process named from fanotify: a login session, a unit, neither; TuneD's own process
 * is upgraded to its announcement. */
START_TEST(test_process) {
        g_autofree char *session = drift_describe_process("session-4.scope", "root", "bash", 1234);
        g_autofree char *service = drift_describe_process("tuned.service", "root", "tuned", 812);
        g_autofree char *bare = drift_describe_process(NULL, "root", "sh", 7);
        g_autofree char *who = NULL;
        g_autoptr(GPtrArray) credited = NULL;
        DriftEvent e = {
                .item = g_strdup("enabled"), .expected = g_strdup("never"), .found = g_strdup("always"),
                .writer = g_strdup("tuned.service"), .writer_detail = g_strdup(service),
                .credit = DRIFT_CREDIT_PROCESS, .action = DRIFT_ACTION_RESTORE, .when_usec = T0,
        };

        ck_assert_str_eq(session, "root in session 4: bash, pid 1234");
        ck_assert_str_eq(service, "tuned.service (tuned, pid 812)");
        ck_assert_str_eq(bare, "sh, pid 7");
        drift_record(&S, &e);
        who = drift_describe_writer(&g_array_index(S.recent, DriftEvent, 0));
        ck_assert_str_eq(who, "written by tuned.service (tuned, pid 812)");
        g_clear_pointer(&who, g_free);
        credited = drift_credit_announced(&S, "tuned.service", "profile hpc-compute", T0 - 1);
        ck_assert_uint_eq(credited->len, 1);
        who = drift_describe_writer(&g_array_index(S.recent, DriftEvent, 0));
        ck_assert_str_eq(who, "written by tuned.service (profile hpc-compute)");
}
END_TEST

int main(void) {
        return test_run_suite(TEST_SUITE("drift", "rules", setup, teardown,
                                         test_attribution_found,
                                         test_attribution_at_the_write,
                                         test_credit_announced,
                                         test_process,
                                         test_free_knob_adopted,
                                         test_restore_then_conflict,
                                         test_limit_per_writer_and_knob,
                                         test_pool_item,
                                         test_restored_conflict,
                                         test_pool_settling,
                                         test_window,
                                         test_unknown_writer_limited,
                                         test_conflict_yields_to_anyone,
                                         test_writer_stops,
                                         test_writer_stopped_before_seen,
                                         test_reset,
                                         test_recent,
                                         test_describe));
}
