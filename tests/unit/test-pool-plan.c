/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "pool-plan.h"
#include "test-util.h"

/* One test per pool step (pool-plan.h), as test-plan.c does for the knobs. */

static PoolTarget target(uint64_t baseline, uint64_t requested, unsigned n_policies, unsigned n_in_grace) {
        return (PoolTarget) {
                .page_size_kb = 2048,
                .node = POOL_NODE_ANY,
                .baseline = baseline,
                .requested = requested,
                .pages = baseline + requested,
                .n_policies = n_policies,
                .n_in_grace = n_in_grace,
        };
}

static PoolObservation seen(uint64_t baseline, uint64_t current, bool owned) {
        return (PoolObservation) {
                .has_baseline = true,
                .baseline = baseline,
                .readable = true,
                .current = current,
                .owned = owned,
        };
}

static PoolStep step_for(const PoolTarget *t, const PoolObservation *o) {
        PoolStep s;

        pool_plan_step(t, o, &s);
        return s;
}

START_TEST(test_missing_and_unreadable) {
        PoolTarget t = target(0, 72, 1, 0);
        PoolObservation o = {};
        PoolStep s = step_for(&t, &o);

        ck_assert_int_eq(s.action, POOL_ACTION_MISSING);
        ck_assert(!s.persist_baseline);
        /* A global pool without a baseline is a page size this kernel lacks, whatever a read of
         * its (absent) files gave. */
        o = (PoolObservation) { .readable = true, .current = 5 };
        ck_assert_int_eq(step_for(&t, &o).action, POOL_ACTION_MISSING);

        /* A per-node pool without a baseline that cannot be read does not exist either. */
        t.node = 1;
        o = (PoolObservation) { .readable = false };
        ck_assert_int_eq(step_for(&t, &o).action, POOL_ACTION_MISSING);

        o = seen(0, 0, false);
        o.readable = false;
        ck_assert_int_eq(step_for(&t, &o).action, POOL_ACTION_UNREADABLE);
        ck_assert_str_eq(pool_action_to_string(POOL_ACTION_UNREADABLE), "unreadable");
        ck_assert_ptr_null(pool_action_to_string(_POOL_ACTION_MAX));
}
END_TEST

/* Nobody asks and thpd never resized it: the admin's. A change is adopted, persisted first. */
START_TEST(test_follow_and_adopt) {
        PoolTarget t = target(10, 0, 0, 0);
        PoolObservation o = seen(10, 10, false);
        PoolStep s = step_for(&t, &o);

        ck_assert_int_eq(s.action, POOL_ACTION_FOLLOW);
        ck_assert(!s.persist_baseline);
        ck_assert_uint_eq(s.target, 10);

        o.current = 12;
        s = step_for(&t, &o);
        ck_assert_int_eq(s.action, POOL_ACTION_ADOPT);
        ck_assert(s.persist_baseline);
        ck_assert_uint_eq(s.baseline, 12);
        ck_assert_uint_eq(s.target, 12);
}
END_TEST

/* A per-node pool's first use: what it holds becomes its baseline (persisted before the write),
 * and it grows by the request on top. */
START_TEST(test_own_a_node_pool) {
        PoolTarget t = target(0, 8, 1, 0);
        PoolObservation o = { .readable = true, .current = 3 };
        PoolStep s;

        t.node = 0;
        s = step_for(&t, &o);
        ck_assert_int_eq(s.action, POOL_ACTION_OWN);
        ck_assert(s.persist_baseline);
        ck_assert_uint_eq(s.baseline, 3);
        ck_assert_uint_eq(s.target, 11);
}
END_TEST

/* Grown for a policy, kept, given back when none asks (whose the pool is after each step, a
 * shrink that fell short included: test-ownership.c). */
START_TEST(test_resize_keep_and_give_back) {
        PoolTarget t = target(10, 72, 1, 0);
        PoolObservation o = seen(10, 10, false);
        PoolStep s = step_for(&t, &o);

        ck_assert_int_eq(s.action, POOL_ACTION_RESIZE);
        ck_assert_uint_eq(s.target, 82);
        ck_assert(!s.persist_baseline);

        o = seen(10, 82, true);
        s = step_for(&t, &o);
        ck_assert_int_eq(s.action, POOL_ACTION_KEEP);

        /* The policy is gone: back to the baseline. */
        t = target(10, 0, 0, 0);
        s = step_for(&t, &o);
        ck_assert_int_eq(s.action, POOL_ACTION_RESIZE);
        ck_assert_uint_eq(s.target, 10);
}
END_TEST

/* Held only for policies whose units stopped: GRACE, not KEEP; one running policy makes it KEEP. */
START_TEST(test_grace) {
        PoolTarget t = target(0, 72, 1, 1);
        PoolObservation o = seen(0, 72, true);
        PoolStep s = step_for(&t, &o);

        ck_assert_int_eq(s.action, POOL_ACTION_GRACE);
        t = target(0, 144, 2, 1);
        o.current = 144;
        ck_assert_int_eq(step_for(&t, &o).action, POOL_ACTION_KEEP);
        /* Not at its target while in grace: resized like any other. */
        t = target(0, 72, 1, 1);
        o.current = 60;
        ck_assert_int_eq(step_for(&t, &o).action, POOL_ACTION_RESIZE);
}
END_TEST

/* A writer that keeps resizing it wins: no write. */
START_TEST(test_yield) {
        PoolTarget t = target(0, 72, 1, 0);
        PoolObservation o = seen(0, 40, true);
        PoolStep s;

        o.yielded = true;
        s = step_for(&t, &o);
        ck_assert_int_eq(s.action, POOL_ACTION_YIELD);
        /* At its target the conflict changes nothing. */
        o.current = 72;
        ck_assert_int_eq(step_for(&t, &o).action, POOL_ACTION_KEEP);
        /* Nobody asks and thpd does not own it: the admin's, conflict or not. */
        t = target(0, 0, 0, 0);
        o = seen(0, 40, false);
        o.yielded = true;
        ck_assert_int_eq(step_for(&t, &o).action, POOL_ACTION_ADOPT);
}
END_TEST

int main(void) {
        return test_run_suite(TEST_SUITE("pool-plan", "steps", NULL, NULL,
                                         test_missing_and_unreadable,
                                         test_follow_and_adopt,
                                         test_own_a_node_pool,
                                         test_resize_keep_and_give_back,
                                         test_grace,
                                         test_yield));
}
