/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "ownership-record.h"
#include "ownership.h"
#include "test-util.h"

/* One test per row of the ownership table (docs/how-it-decides.md): a write and its result, a
 * knob's and a pool's step, drift, a conflict that begins and ends, start and stop. */

static KnobValue word(const char *w) {
        KnobValue v;

        ck_assert_int_eq(knob_value_from_string(KNOB_ENABLED, w, &v), 0);
        return v;
}

static PoolTarget pool(uint64_t baseline, uint64_t requested) {
        return (PoolTarget) {
                .page_size_kb = 2048,
                .node = POOL_NODE_ANY,
                .baseline = baseline,
                .requested = requested,
                .pages = baseline + requested,
                .n_policies = requested > 0,
        };
}

static PoolStep pool_step(PoolAction action, uint64_t baseline, uint64_t current, uint64_t target) {
        return (PoolStep) { .action = action, .baseline = baseline, .current = current, .target = target };
}

/* Whatever the result, the kernel decides: held or off the baseline, thpd's; a yield outlasts
 * any write. */
START_TEST(test_after_write) {
        ck_assert_int_eq(ownership_after_write(OWNER_BASELINE, true, false), OWNER_THPD);
        ck_assert_int_eq(ownership_after_write(OWNER_BASELINE, true, true), OWNER_THPD);
        ck_assert_int_eq(ownership_after_write(OWNER_THPD, false, true), OWNER_BASELINE);
        /* Given back, but the kernel kept thpd's value: still thpd's to give back. */
        ck_assert_int_eq(ownership_after_write(OWNER_THPD, false, false), OWNER_THPD);
        ck_assert_int_eq(ownership_after_write(OWNER_WRITER, true, false), OWNER_WRITER);
        ck_assert_int_eq(ownership_after_write(OWNER_WRITER, false, true), OWNER_WRITER);
        ck_assert_str_eq(owner_to_string(OWNER_WRITER), "writer");
        ck_assert_ptr_null(owner_to_string(_OWNER_MAX));
}
END_TEST

START_TEST(test_knob_commit) {
        KnobValue never = word("never"), madvise = word("madvise"), always = word("always");
        KnobValue applied = madvise, recorded = madvise;
        Ownership own;
        Owner *o = &own.knobs[KNOB_ENABLED];

        ownership_init(&own);

        /* A policy's value written. */
        ck_assert(!ownership_knob_commit(&own, KNOB_ENABLED, &(KnobStep) { KNOB_ACTION_WRITE, madvise, never, true }, false, madvise,
                                         &applied, &recorded));
        ck_assert_int_eq(*o, OWNER_THPD);
        ck_assert_int_eq(applied, never);

        /* The policy is gone; giving the baseline back fails and the kernel keeps never: thpd's. */
        ck_assert(!ownership_knob_commit(&own, KNOB_ENABLED, &(KnobStep) { KNOB_ACTION_WRITE, never, madvise, false }, true, madvise,
                                         &applied, &recorded));
        ck_assert_int_eq(*o, OWNER_THPD);
        ck_assert_int_eq(applied, never);
        ck_assert_int_eq(recorded, madvise);

        /* ... and done. */
        ck_assert(!ownership_knob_commit(&own, KNOB_ENABLED, &(KnobStep) { KNOB_ACTION_WRITE, never, madvise, false }, false, madvise,
                                         &applied, &recorded));
        ck_assert_int_eq(*o, OWNER_BASELINE);

        /* A policy's write the kernel refuses: still thpd's, though the kernel shows the baseline. */
        applied = madvise;
        ck_assert(!ownership_knob_commit(&own, KNOB_ENABLED, &(KnobStep) { KNOB_ACTION_WRITE, madvise, never, true }, true, madvise,
                                         &applied, &recorded));
        ck_assert_int_eq(*o, OWNER_THPD);

        /* Before the unit list nothing is written and nothing changes hands. */
        ck_assert(!ownership_knob_commit(&own, KNOB_ENABLED, &(KnobStep) { KNOB_ACTION_HOLD, madvise, never, false }, false, madvise,
                                         &applied, &recorded));
        ck_assert_int_eq(*o, OWNER_THPD);

        /* Yielded: the writer's, and a KEEP (the writer set what thpd wants) does not end it. */
        ck_assert(!ownership_knob_commit(&own, KNOB_ENABLED, &(KnobStep) { KNOB_ACTION_YIELD, always, never, false }, false, madvise,
                                         &applied, &recorded));
        ck_assert_int_eq(*o, OWNER_WRITER);
        ck_assert_int_eq(applied, always);
        ck_assert(!ownership_knob_commit(&own, KNOB_ENABLED, &(KnobStep) { KNOB_ACTION_KEEP, never, never, true }, false, madvise,
                                         &applied, &recorded));
        ck_assert_int_eq(*o, OWNER_WRITER);

        /* Written while thpd was down: a HOLD leaves it to be judged, an ADOPT judges it. */
        *o = OWNER_BASELINE;
        own.knobs_unjudged[KNOB_ENABLED] = true;
        ck_assert(!ownership_knob_commit(&own, KNOB_ENABLED, &(KnobStep) { KNOB_ACTION_HOLD, always, never, false }, false,
                                         madvise, &applied, &recorded));
        ck_assert(own.knobs_unjudged[KNOB_ENABLED]);

        /* Adopted: the baseline's, and the record follows. */
        ck_assert(ownership_knob_commit(&own, KNOB_ENABLED, &(KnobStep) { KNOB_ACTION_ADOPT, always, madvise, false }, false, madvise,
                                        &applied, &recorded));
        ck_assert_int_eq(*o, OWNER_BASELINE);
        ck_assert_int_eq(recorded, always);
        ck_assert(!own.knobs_unjudged[KNOB_ENABLED]);
}
END_TEST

/* Case 3 of issue 42: a shrink back to the baseline that fails or falls short leaves thpd's
 * pages, which stay thpd's to give back, never the admin's new baseline. */
START_TEST(test_pool_steps) {
        PoolTarget held = pool(10, 72), free_ = pool(10, 0);
        PoolStep s;

        s = pool_step(POOL_ACTION_RESIZE, 10, 10, 82);
        ck_assert_int_eq(ownership_pool_step(OWNER_BASELINE, &held, &s, 82), OWNER_THPD);
        /* A grow that failed: held, so thpd's (what it tried to write). */
        ck_assert_int_eq(ownership_pool_step(OWNER_BASELINE, &held, &s, 10), OWNER_THPD);

        s = pool_step(POOL_ACTION_RESIZE, 10, 82, 10);
        ck_assert_int_eq(ownership_pool_step(OWNER_THPD, &free_, &s, 10), OWNER_BASELINE);
        ck_assert_int_eq(ownership_pool_step(OWNER_THPD, &free_, &s, 12), OWNER_THPD);
        ck_assert_int_eq(ownership_pool_step(OWNER_THPD, &free_, &s, 82), OWNER_THPD);

        s = pool_step(POOL_ACTION_KEEP, 10, 82, 82);
        ck_assert_int_eq(ownership_pool_step(OWNER_THPD, &held, &s, 82), OWNER_THPD);
        s = pool_step(POOL_ACTION_KEEP, 10, 10, 10);
        ck_assert_int_eq(ownership_pool_step(OWNER_THPD, &free_, &s, 10), OWNER_BASELINE);
        s = pool_step(POOL_ACTION_GRACE, 10, 82, 82);
        ck_assert_int_eq(ownership_pool_step(OWNER_THPD, &held, &s, 82), OWNER_THPD);
        s = pool_step(POOL_ACTION_OWN, 3, 3, 11);
        ck_assert_int_eq(ownership_pool_step(OWNER_BASELINE, &held, &s, 11), OWNER_THPD);

        s = pool_step(POOL_ACTION_ADOPT, 12, 12, 12);
        ck_assert_int_eq(ownership_pool_step(OWNER_BASELINE, &free_, &s, 12), OWNER_BASELINE);
        s = pool_step(POOL_ACTION_YIELD, 10, 40, 82);
        ck_assert_int_eq(ownership_pool_step(OWNER_THPD, &held, &s, 40), OWNER_WRITER);
        s = pool_step(POOL_ACTION_KEEP, 10, 82, 82);
        ck_assert_int_eq(ownership_pool_step(OWNER_WRITER, &held, &s, 82), OWNER_WRITER);
        s = pool_step(POOL_ACTION_UNREADABLE, 10, 0, 82);
        ck_assert_int_eq(ownership_pool_step(OWNER_THPD, &held, &s, 0), OWNER_THPD);
}
END_TEST

START_TEST(test_held) {
        ck_assert(ownership_knob_held(OWNER_BASELINE, SOURCE_POLICY, false));
        ck_assert(ownership_knob_held(OWNER_BASELINE, SOURCE_OVERRIDE, false));
        ck_assert(ownership_knob_held(OWNER_BASELINE, SOURCE_BASELINE, true));
        ck_assert(ownership_knob_held(OWNER_THPD, SOURCE_BASELINE, false));
        ck_assert(ownership_knob_held(OWNER_WRITER, SOURCE_BASELINE, false));
        ck_assert(!ownership_knob_held(OWNER_BASELINE, SOURCE_BASELINE, false));

        ck_assert(ownership_pool_held(OWNER_BASELINE, 72));
        ck_assert(ownership_pool_held(OWNER_THPD, 0));
        ck_assert(!ownership_pool_held(OWNER_BASELINE, 0));
}
END_TEST

START_TEST(test_drift_and_conflicts) {
        ck_assert_int_eq(ownership_after_drift(OWNER_BASELINE, DRIFT_ACTION_ADOPT), OWNER_BASELINE);
        ck_assert_int_eq(ownership_after_drift(OWNER_THPD, DRIFT_ACTION_RESTORE), OWNER_THPD);
        ck_assert_int_eq(ownership_after_drift(OWNER_THPD, DRIFT_ACTION_YIELD), OWNER_WRITER);
        ck_assert_int_eq(ownership_after_drift(OWNER_WRITER, DRIFT_ACTION_YIELD), OWNER_WRITER);

        ck_assert_int_eq(ownership_conflict(OWNER_THPD, true), OWNER_WRITER);
        ck_assert_int_eq(ownership_conflict(OWNER_WRITER, true), OWNER_WRITER);
        /* Ended: thpd's again, for the next apply to write or give back. */
        ck_assert_int_eq(ownership_conflict(OWNER_WRITER, false), OWNER_THPD);
        ck_assert_int_eq(ownership_conflict(OWNER_BASELINE, false), OWNER_BASELINE);
        ck_assert_int_eq(ownership_conflict(OWNER_THPD, false), OWNER_THPD);
}
END_TEST

static Owner start(bool at_baseline, bool recorded, bool thpd_left, bool *ret_while_down) {
        OwnershipStart s = { .at_baseline = at_baseline, .recorded = recorded, .thpd_left = thpd_left };

        return ownership_at_start(&s, ret_while_down);
}

/* Case 2 of issue 42: with the record of what thpd wrote, a restart tells its own leftover from
 * a write made while it was down, which is the baseline's until the first apply judges it. */
START_TEST(test_start) {
        bool down;

        ck_assert_int_eq(start(true, true, false, &down), OWNER_BASELINE);
        ck_assert(!down);
        ck_assert_int_eq(start(true, true, true, &down), OWNER_BASELINE);
        ck_assert(!down);
        ck_assert_int_eq(start(false, true, true, &down), OWNER_THPD);
        ck_assert(!down);
        ck_assert_int_eq(start(false, true, false, &down), OWNER_BASELINE);
        ck_assert(down);
        /* No record (an older thpd): off the baseline is the last instance's leftover. */
        ck_assert_int_eq(start(false, false, false, &down), OWNER_THPD);
        ck_assert(!down);

        /* Case 1 of issue 42: a yield outlasts the restart, whatever the kernel holds. */
        ck_assert_int_eq(ownership_at_start(&(OwnershipStart) { .recorded = true, .yielded = true }, &down), OWNER_WRITER);
        ck_assert(!down);
        ck_assert_int_eq(ownership_at_start(&(OwnershipStart) { .at_baseline = true, .recorded = true, .yielded = true },
                                            &down),
                         OWNER_WRITER);
}
END_TEST

/* Case 1 of issue 42: at stop thpd gives back only its own; a yielded value stays. */
START_TEST(test_start_and_stop) {

        ck_assert_int_eq(ownership_at_stop(OWNER_THPD, false), OWNERSHIP_STOP_RESTORE);
        ck_assert_int_eq(ownership_at_stop(OWNER_THPD, true), OWNERSHIP_STOP_NOTHING);
        ck_assert_int_eq(ownership_at_stop(OWNER_WRITER, false), OWNERSHIP_STOP_LEAVE);
        ck_assert_int_eq(ownership_at_stop(OWNER_WRITER, true), OWNERSHIP_STOP_NOTHING);
        /* An admin's change the drift watch has not judged yet is not thpd's to undo. */
        ck_assert_int_eq(ownership_at_stop(OWNER_BASELINE, false), OWNERSHIP_STOP_NOTHING);
}
END_TEST

START_TEST(test_plan_flags) {
        bool owned[_KNOB_MAX], yielded[_KNOB_MAX];
        Ownership o;

        ownership_init(&o);
        o.knobs[KNOB_ENABLED] = OWNER_THPD;
        o.knobs[KNOB_DEFRAG] = OWNER_WRITER;
        o.knobs_unjudged[KNOB_SHMEM_ENABLED] = true;
        ownership_plan_flags(&o, true, owned, yielded);
        ck_assert(owned[KNOB_ENABLED] && !yielded[KNOB_ENABLED]);
        ck_assert(owned[KNOB_DEFRAG] && yielded[KNOB_DEFRAG]);
        ck_assert(!owned[KNOB_SHMEM_ENABLED] && !yielded[KNOB_SHMEM_ENABLED]);
        ck_assert_int_eq(o.pools[0], OWNER_BASELINE);
        ck_assert(ownership_keep_records(&o, 0));
        o.knobs[KNOB_DEFRAG] = OWNER_THPD;
        ck_assert(!ownership_keep_records(&o, 1));
        o.pools[0] = OWNER_WRITER;
        ck_assert(ownership_keep_records(&o, 1));
        /* Written while thpd was down: held, not adopted, until the unit list is in. */
        ownership_plan_flags(&o, false, owned, yielded);
        ck_assert(owned[KNOB_SHMEM_ENABLED] && !yielded[KNOB_SHMEM_ENABLED]);
}
END_TEST

static GHashTable *parse(const char *text, int expect) {
        GHashTable *items = ownership_record_items_new();

        ck_assert_int_eq(ownership_record_parse(text, items), expect);
        return items;
}

#define HEADER "# thpd ownership v1: what thpd wrote, per knob and pool\n"

/* The snapshot, then the lines appended: a "thpd" line says what the item holds, a "want" line
 * after it a write that may have been cut short; a "baseline" line forgets the item; a cut-short
 * last line is ignored. */
START_TEST(test_record) {
        g_autoptr(GString) s = g_string_new(NULL);
        g_autoptr(GHashTable) items = NULL;
        const OwnershipRecordItem *it;

        ownership_record_begin(s);
        ownership_record_append_want(s, "enabled", "always");
        ownership_record_append_thpd(s, "enabled", "always");
        ownership_record_append_want(s, "enabled", "never");
        ownership_record_append_thpd(s, "enabled", "never");
        ownership_record_append_want(s, "hugepages-2048kB/nr_hugepages", "72");
        ownership_record_append_thpd(s, "defrag", "never");
        ownership_record_append_want(s, "enabled", "madvise");
        ownership_record_append_baseline(s, "defrag");
        g_string_append(s, "thpd enabled alw");
        items = parse(s->str, 0);
        ck_assert_uint_eq(g_hash_table_size(items), 2);
        it = g_hash_table_lookup(items, "enabled");
        ck_assert_str_eq(it->value, "never");
        ck_assert_str_eq(it->wanted, "madvise");
        ck_assert(ownership_record_knob_left(it, KNOB_ENABLED, word("never")));
        ck_assert(ownership_record_knob_left(it, KNOB_ENABLED, word("madvise")));
        /* A value thpd held long ago and saw done is not its leftover: an admin may have set it. */
        ck_assert(!ownership_record_knob_left(it, KNOB_ENABLED, word("always")));
        ck_assert(!ownership_record_knob_left(NULL, KNOB_ENABLED, word("never")));

        /* A pool anywhere between its baseline (no earlier value) and what thpd asked for. */
        it = g_hash_table_lookup(items, "hugepages-2048kB/nr_hugepages");
        ck_assert_ptr_null(it->value);
        ck_assert(ownership_record_pool_left(it, 10, 72));
        ck_assert(ownership_record_pool_left(it, 10, 40));
        ck_assert(ownership_record_pool_left(it, 10, 10));
        ck_assert(!ownership_record_pool_left(it, 10, 73));
        ck_assert(!ownership_record_pool_left(it, 10, 9));
        ck_assert_ptr_null(g_hash_table_lookup(items, "defrag"));

        /* Done, and short of what it asked for: exactly what the kernel kept. */
        g_string_append(s, "\nthpd hugepages-2048kB/nr_hugepages 50\n");
        g_hash_table_unref(items);
        items = parse(s->str, 0);
        it = g_hash_table_lookup(items, "hugepages-2048kB/nr_hugepages");
        ck_assert(ownership_record_pool_left(it, 10, 50));
        ck_assert(!ownership_record_pool_left(it, 10, 40));

        /* A yield, with its writer (or none), taken back by a "thpd" line. */
        g_string_truncate(s, 0);
        ownership_record_begin(s);
        ownership_record_append_thpd(s, "enabled", "never");
        ownership_record_append_yield(s, "enabled", "tuned.service", "profile  hpc-compute", "always", 1234);
        ownership_record_append_yield(s, "defrag", NULL, "ignored without a writer", "never", 5);
        ownership_record_append_yield(s, "shmem_enabled", NULL, NULL, "advise", 6);
        /* A detail that would break the line is left out. */
        ownership_record_append_yield(s, "use_zero_page", "x.service", "two\nlines", "0", 7);
        ownership_record_append_thpd(s, "shmem_enabled", "never");
        g_hash_table_unref(items);
        items = parse(s->str, 0);
        it = g_hash_table_lookup(items, "enabled");
        ck_assert(it->yielded);
        ck_assert_str_eq(it->writer, "tuned.service");
        /* The rest of the line, blanks and all. */
        ck_assert_str_eq(it->writer_detail, "profile  hpc-compute");
        ck_assert_str_eq(it->writer_value, "always");
        ck_assert_uint_eq(it->since_usec, 1234);
        ck_assert_str_eq(it->value, "never");
        it = g_hash_table_lookup(items, "defrag");
        ck_assert(it->yielded);
        ck_assert_ptr_null(it->writer);
        ck_assert_ptr_null(it->writer_detail);
        it = g_hash_table_lookup(items, "use_zero_page");
        ck_assert_str_eq(it->writer, "x.service");
        ck_assert_ptr_null(it->writer_detail);
        it = g_hash_table_lookup(items, "shmem_enabled");
        ck_assert(!it->yielded);
        ck_assert_ptr_null(it->writer_value);

        /* A write begun after a yield ended it ends it in the record too: nothing of the writer
         * is left to name at the next start. */
        ownership_record_append_want(s, "enabled", "madvise");
        g_hash_table_unref(items);
        items = parse(s->str, 0);
        it = g_hash_table_lookup(items, "enabled");
        ck_assert(!it->yielded);
        ck_assert_ptr_null(it->writer);
        ck_assert_ptr_null(it->writer_detail);
        ck_assert_ptr_null(it->writer_value);
        ck_assert_uint_eq(it->since_usec, 0);
        ck_assert_str_eq(it->wanted, "madvise");

        g_hash_table_unref(parse(HEADER "yield enabled tuned.service always x\n", -EBADMSG));
        g_hash_table_unref(parse(HEADER "yield enabled tuned.service always 5 \n", -EBADMSG));
        g_hash_table_unref(parse("# thpd units v1\n", -EBADMSG));
        g_hash_table_unref(parse(HEADER "thpd enabled\n", -EBADMSG));
        g_hash_table_unref(parse(HEADER "yield enabled never\n", -EBADMSG));
        g_hash_table_unref(parse(HEADER "want enabled\n", -EBADMSG));
        g_hash_table_unref(parse(HEADER, 0));
}
END_TEST

int main(void) {
        return test_run_suite(TEST_SUITE("ownership", "rules", NULL, NULL,
                                         test_after_write,
                                         test_knob_commit,
                                         test_pool_steps,
                                         test_held,
                                         test_drift_and_conflicts,
                                         test_start,
                                         test_start_and_stop,
                                         test_plan_flags,
                                         test_record));
}
