/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "plan.h"
#include "test-util.h"
#include "util.h"

/* One test per rule of the apply's plan: hold before the unit list, adopting an admin's change,
 * restart hints, the pool grace period, isolation checks, override and storm mitigation. */

#define NOW (1000 * USEC_PER_SEC)
#define GRACE (60 * USEC_PER_SEC)

typedef struct Fixture {
        PlanState state;
        GPtrArray *policies;
        GHashTable *isolation;
        bool present[_KNOB_MAX], owned[_KNOB_MAX], yielded[_KNOB_MAX], units_known;
        KnobValue current[_KNOB_MAX], recorded[_KNOB_MAX], pinned[_KNOB_MAX];
        KnobValue mitigation[_KNOB_MAX], override[_KNOB_MAX];
        uint64_t now, pool_grace;
        bool changes_only, mthp_collapse;
        const char *const *released;
        size_t n_released;
        Target target;
        Plan plan;
} Fixture;

static Fixture F;

static KnobValue value(Knob k, const char *word) {
        KnobValue v;

        ck_assert_int_eq(knob_value_from_string(k, word, &v), 0);
        return v;
}

static void setup(void) {
        plan_state_init(&F.state);
        F.policies = g_ptr_array_new_with_free_func(policy_free_void);
        F.isolation = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, isolation_free_void);
        FOREACH_KNOB(k) {
                F.present[k] = F.owned[k] = F.yielded[k] = false;
                F.current[k] = F.recorded[k] = F.pinned[k] = KNOB_VALUE_UNSET;
                F.mitigation[k] = F.override[k] = KNOB_VALUE_UNSET;
        }
        F.present[KNOB_ENABLED] = F.present[KNOB_DEFRAG] = true;
        F.current[KNOB_ENABLED] = F.recorded[KNOB_ENABLED] = value(KNOB_ENABLED, "madvise");
        F.current[KNOB_DEFRAG] = F.recorded[KNOB_DEFRAG] = value(KNOB_DEFRAG, "madvise");
        F.units_known = true;
        F.now = NOW;
        F.pool_grace = 0;
        F.mthp_collapse = false;
        F.plan = (Plan) {};
}

static void teardown(void) {
        plan_done(&F.plan);
        plan_state_done(&F.state);
        g_hash_table_destroy(F.isolation);
        g_ptr_array_unref(F.policies);
}

static Policy *add_policy(const char *name, const char *enabled) {
        Policy *p = g_new0(Policy, 1);

        p->name = g_strdup(name);
        p->path = g_strconcat("/etc/thpd/policy.d/", name, NULL);
        FOREACH_KNOB(k)
                p->knobs[k] = KNOB_VALUE_UNSET;
        p->service_thp = KNOB_VALUE_UNSET;
        if (enabled)
                p->knobs[KNOB_ENABLED] = value(KNOB_ENABLED, enabled);
        g_ptr_array_add(F.policies, p);
        return p;
}

static void run(const PlanCandidate *candidates, size_t n) {
        plan_done(&F.plan);
        plan(&F.state, &(PlanInput) {
                        .candidates = candidates,
                        .n_candidates = n,
                        .changes_only = F.changes_only,
                        .released = F.released,
                        .n_released = F.n_released,
                        .isolation = F.isolation,
                        .units_known = F.units_known,
                        .now_usec = F.now,
                        .pool_grace_usec = F.pool_grace,
                        .present = F.present,
                        .current = F.current,
                        .owned = F.owned,
                        .recorded = F.recorded,
                        .pinned = F.pinned,
                        .mitigation = F.mitigation,
                        .override = F.override,
                        .yielded = F.yielded,
                        .mthp_collapse = F.mthp_collapse,
                        .pmd_knob = KNOB_MTHP_FIRST + 8,
                }, &F.target, &F.plan);
}

/* As the daemon runs it when only some units changed (PlanInput.changes_only). */
static void run_changes(const PlanCandidate *candidates, size_t n, const char *const *released, size_t n_released) {
        F.changes_only = true;
        F.released = released;
        F.n_released = n_released;
        run(candidates, n);
        F.changes_only = false;
        F.released = NULL;
        F.n_released = 0;
}

/* Runs with one policy and its units. */
static void run_one(const Policy *p, const PlanUnit *units, size_t n_units) {
        PlanCandidate c = { .policy = p, .units = units, .n_units = n_units };

        run(&c, 1);
}

/* What the daemon does with the plan, as far as the next plan sees it: every write succeeds, and
 * the kernel keeps what thpd last read or wrote (plan_knob_commit()). */
static void actuate(void) {
        FOREACH_KNOB(k)
                (void) plan_knob_commit(&F.plan.knobs[k], &F.current[k], &F.owned[k], &F.recorded[k]);
}

static void assert_step(Knob k, KnobAction action, const char *target) {
        char buf[24];

        ck_assert_int_eq(F.plan.knobs[k].action, action);
        if (target)
                ck_assert_str_eq(knob_value_to_string(k, F.plan.knobs[k].target, buf), target);
}

static const char *restart_hint(const char *unit) {
        return g_hash_table_lookup(F.state.needs_restart, unit);
}

static bool policy_active(const Policy *p, bool *ret_pool_only) {
        for (guint i = 0; i < F.plan.active->len; i++) {
                const ActivePolicy *a = &g_array_index(F.plan.active, ActivePolicy, i);

                if (a->policy == p) {
                        *ret_pool_only = a->pool_only;
                        return true;
                }
        }
        return false;
}

/* Before the systemd manager listed the units a write could loosen a knob a running service
 * needs: the plan holds, and writes once the list is in. */
START_TEST(test_hold_until_unit_list) {
        const Policy *p = add_policy("redis.conf", "never");
        PlanUnit u = { .name = "redis-server.service", .running = false };

        F.units_known = false;
        run_one(p, &u, 1);
        assert_step(KNOB_ENABLED, KNOB_ACTION_HOLD, "never");
        assert_step(KNOB_DEFRAG, KNOB_ACTION_FOLLOW, "madvise");

        F.units_known = true;
        run_one(p, &u, 1);
        assert_step(KNOB_ENABLED, KNOB_ACTION_WRITE, "never");
        ck_assert(F.plan.knobs[KNOB_ENABLED].owned);
}
END_TEST

/* ...and keeps the restart hints the last instance recorded until it knows what runs. */
START_TEST(test_hold_keeps_recorded_hints) {
        g_hash_table_insert(F.state.needs_restart, g_strdup("old.service"), g_strdup("old.conf"));
        g_hash_table_insert(F.state.seen_wanted, g_strdup("old.service"), GUINT_TO_POINTER(1));

        F.units_known = false;
        run(NULL, 0);
        ck_assert_ptr_null(F.plan.wanted);
        ck_assert_str_eq(restart_hint("old.service"), "old.conf");

        F.units_known = true;
        run(NULL, 0);
        ck_assert_ptr_nonnull(F.plan.wanted);
        ck_assert_ptr_null(restart_hint("old.service"));
        ck_assert_uint_eq(g_hash_table_size(F.state.seen_wanted), 0);
}
END_TEST

/* Nobody votes and thpd never moved the knob: an admin's value becomes the baseline. */
START_TEST(test_adopt_admin_change) {
        F.current[KNOB_ENABLED] = value(KNOB_ENABLED, "always");
        run(NULL, 0);
        assert_step(KNOB_ENABLED, KNOB_ACTION_ADOPT, "madvise");
        ck_assert_int_eq(F.plan.knobs[KNOB_ENABLED].current, value(KNOB_ENABLED, "always"));
        assert_step(KNOB_DEFRAG, KNOB_ACTION_FOLLOW, "madvise");

        /* Not while thpd moved it itself: then it goes back to the baseline. */
        F.owned[KNOB_ENABLED] = true;
        run(NULL, 0);
        assert_step(KNOB_ENABLED, KNOB_ACTION_WRITE, "madvise");
        ck_assert(!F.plan.knobs[KNOB_ENABLED].owned);

        /* Nor when thpd.conf pins the baseline value. */
        F.owned[KNOB_ENABLED] = false;
        F.pinned[KNOB_ENABLED] = value(KNOB_ENABLED, "never");
        run(NULL, 0);
        assert_step(KNOB_ENABLED, KNOB_ACTION_WRITE, "never");
        ck_assert(F.plan.knobs[KNOB_ENABLED].owned);
}
END_TEST

START_TEST(test_absent_and_unreadable) {
        const Policy *p = add_policy("redis.conf", "never");
        PlanUnit u = { .name = "redis-server.service" };

        F.present[KNOB_ENABLED] = false;
        F.current[KNOB_DEFRAG] = KNOB_VALUE_UNSET;
        run_one(p, &u, 1);
        assert_step(KNOB_ENABLED, KNOB_ACTION_ABSENT, NULL);
        assert_step(KNOB_DEFRAG, KNOB_ACTION_UNREADABLE, NULL);
        assert_step(KNOB_SHMEM_ENABLED, KNOB_ACTION_NONE, NULL);
}
END_TEST

/* A unit already running when its policy first applies mapped its memory before: it needs a
 * restart, until it starts again. One that starts under the policy does not. */
START_TEST(test_restart_hints) {
        const Policy *p = add_policy("redis.conf", "never");
        PlanUnit units[] = {
                { .name = "redis-server.service", .running = true },
                { .name = "redis-server@b.service", .running = false },
        };

        run_one(p, units, 2);
        ck_assert_str_eq(restart_hint("redis-server.service"), "redis.conf");
        ck_assert_ptr_null(restart_hint("redis-server@b.service"));

        /* Still running, unchanged: the hint stays. */
        run_one(p, units, 2);
        ck_assert_str_eq(restart_hint("redis-server.service"), "redis.conf");

        /* It stopped and started again since the last apply. */
        units[0].stops = 1;
        run_one(p, units, 2);
        ck_assert_ptr_null(restart_hint("redis-server.service"));

        /* A unit no longer wanted is forgotten, hint and all. */
        units[1].running = true;
        g_hash_table_insert(F.state.needs_restart, g_strdup("redis-server@b.service"), g_strdup("redis.conf"));
        run_one(p, units, 1);
        ck_assert_ptr_null(restart_hint("redis-server@b.service"));
        ck_assert(!g_hash_table_contains(F.state.seen_wanted, "redis-server@b.service"));
}
END_TEST

/* A stopped policy keeps its pool for PoolGraceSec=, so a restart does not lose the pages. */
START_TEST(test_pool_grace) {
        Policy *p = add_policy("postgresql.conf", "never");
        const Policy *no_pool = add_policy("redis.conf", "never");
        PlanUnit u = { .name = "postgresql@15-main.service" }, r = { .name = "redis-server.service" };
        PlanCandidate both[2] = { { .policy = p, .units = &u, .n_units = 1 },
                                  { .policy = no_pool, .units = &r, .n_units = 1 } };
        bool pool_only;

        p->has_pool = true;
        p->pool = (PoolRequest) { .page_size_kb = 2048, .node = POOL_NODE_ANY, .pages = 72 };
        F.pool_grace = GRACE;
        run(both, 2);
        ck_assert(policy_active(p, &pool_only) && !pool_only);
        ck_assert_uint_eq(F.plan.next_grace_usec, 0);
        actuate();

        /* Both units stop: the pool stays, the knob votes go. */
        both[0].n_units = both[1].n_units = 0;
        run(both, 2);
        ck_assert(policy_active(p, &pool_only) && pool_only);
        ck_assert(!policy_active(no_pool, &pool_only));
        ck_assert_uint_eq(F.plan.next_grace_usec, NOW + GRACE);
        ck_assert(g_hash_table_contains(F.state.live_policies, p));
        /* The pool's step tells a pool held in grace from one a running unit holds. */
        ck_assert_uint_eq(F.target.n_pools, 1);
        ck_assert_uint_eq(F.target.pools[0].n_policies, 1);
        ck_assert_uint_eq(F.target.pools[0].n_in_grace, 1);
        assert_step(KNOB_ENABLED, KNOB_ACTION_WRITE, "madvise");
        ck_assert(!F.plan.knobs[KNOB_ENABLED].owned);

        F.now = NOW + GRACE - 1;
        run(both, 1);
        ck_assert(policy_active(p, &pool_only) && pool_only);

        F.now = NOW + GRACE;
        run(both, 1);
        ck_assert(!policy_active(p, &pool_only));
        ck_assert_uint_eq(F.plan.next_grace_usec, 0);
        ck_assert(!g_hash_table_contains(F.state.live_policies, p));
}
END_TEST

/* The status line's count: active policies, not those only holding a pool after a stop. */
START_TEST(test_active_count) {
        Policy *p = add_policy("postgresql.conf", "never");
        const Policy *no_pool = add_policy("redis.conf", "never");
        PlanUnit u = { .name = "postgresql@15-main.service" }, r = { .name = "redis-server.service" };
        PlanCandidate both[2] = { { .policy = p, .units = &u, .n_units = 1 },
                                  { .policy = no_pool, .units = &r, .n_units = 1 } };

        p->has_pool = true;
        p->pool = (PoolRequest) { .page_size_kb = 2048, .node = POOL_NODE_ANY, .pages = 72 };
        F.pool_grace = GRACE;
        run(both, 2);
        ck_assert_uint_eq(F.state.n_active, 2);

        both[1].n_units = 0;
        run(both, 2);
        ck_assert_uint_eq(F.state.n_active, 1);

        both[0].n_units = 0;
        run(both, 2);
        ck_assert_uint_eq(F.state.n_active, 0);
        ck_assert(g_hash_table_contains(F.state.live_policies, p));

        both[0].n_units = 1;
        run(both, 2);
        ck_assert_uint_eq(F.state.n_active, 1);
        plan_state_forget_policies(&F.state, F.policies);
        ck_assert_uint_eq(F.state.n_active, 0);
}
END_TEST

static void assert_seen(const char *const *expected) {
        size_t n = g_strv_length((char **) expected);

        ck_assert_uint_eq(F.state.seen_sorted->len, n);
        ck_assert_uint_eq(g_hash_table_size(F.state.seen_wanted), n);
        for (size_t i = 0; i < n; i++) {
                ck_assert_str_eq(g_ptr_array_index(F.state.seen_sorted, i), expected[i]);
                ck_assert(g_hash_table_contains(F.state.seen_wanted, expected[i]));
        }
}

/* Given only what changed (the daemon's unit starts and stops), the plan comes out as from every
 * wanted unit: settled policies keep their units, released ones leave; the sorted names of the
 * seen units (the unit record) follow. */
START_TEST(test_changes_only) {
        const Policy *strict = add_policy("strict.conf", "never");
        const Policy *loose = add_policy("loose.conf", "madvise");
        PlanUnit s1 = { .name = "s1.service" }, s0 = { .name = "s0.service" }, l1 = { .name = "l1.service" };
        PlanUnit strict_units[2] = { s1, s0 };
        PlanCandidate full[2] = { { .policy = strict, .units = &s1, .n_units = 1 },
                                  { .policy = loose, .units = &l1, .n_units = 1 } };
        PlanCandidate start[2] = { { .policy = strict, .units = strict_units, .n_units = 2 },
                                   { .policy = loose, .settled = true } };
        PlanCandidate all[2] = { { .policy = strict, .units = strict_units, .n_units = 2 },
                                 { .policy = loose, .units = &l1, .n_units = 1 } };
        PlanCandidate stop[2] = { { .policy = strict, .settled = true }, { .policy = loose } };
        const char *released[] = { "l1.service" };
        const char *seen_three[] = { "l1.service", "s0.service", "s1.service", NULL };
        const char *seen_two[] = { "s0.service", "s1.service", NULL };
        const char *seen_recorded[] = { "a.service", "s0.service", "s1.service", NULL };
        bool pool_only;

        run(full, 2);
        assert_step(KNOB_ENABLED, KNOB_ACTION_WRITE, "never");
        actuate();

        /* s0 starts: only its policy is given with its units, the other settled */
        run_changes(start, 2, NULL, 0);
        assert_seen(seen_three);
        ck_assert(F.plan.wanted_units_changed);
        ck_assert(policy_active(strict, &pool_only) && !pool_only);
        ck_assert(policy_active(loose, &pool_only) && !pool_only);
        ck_assert_uint_eq(F.state.n_active, 2);
        ck_assert(g_hash_table_contains(F.state.live_policies, loose));
        assert_step(KNOB_ENABLED, KNOB_ACTION_KEEP, "never");

        /* The same from every wanted unit: nothing changed */
        run(all, 2);
        ck_assert(!F.plan.wanted_units_changed);
        ck_assert(!F.plan.runtime_changed);

        /* l1 stops */
        run_changes(stop, 2, released, 1);
        assert_seen(seen_two);
        ck_assert(F.plan.wanted_units_changed);
        ck_assert(F.plan.runtime_changed);
        ck_assert(!policy_active(loose, &pool_only));
        ck_assert(!g_hash_table_contains(F.state.live_policies, loose));
        ck_assert_uint_eq(F.state.n_active, 1);
        assert_step(KNOB_ENABLED, KNOB_ACTION_KEEP, "never");

        /* What the last instance recorded counts as seen, once */
        plan_state_add_seen(&F.state, "a.service");
        plan_state_add_seen(&F.state, "a.service");
        assert_seen(seen_recorded);
}
END_TEST

static void set_isolation(const char *unit, const Policy *p, unsigned stops, IsolationState state) {
        Isolation *i = g_new0(Isolation, 1);

        *i = (Isolation) {
                .unit = g_strdup(unit),
                .policy = g_strdup(p->name),
                .mode = p->service_thp,
                .stops = stops,
                .state = state,
        };
        g_hash_table_replace(F.isolation, i->unit, i);
}

/* A Scope=service policy votes on no knob; a running unit of it is checked once per start, and
 * needs a restart while its process still has THP. */
START_TEST(test_isolation_checks) {
        Policy *p = add_policy("redis-isolated.conf", NULL);
        PlanUnit u = { .name = "redis-server.service", .running = true };
        const IsolationRequest *req;

        p->scope = POLICY_SCOPE_SERVICE;
        p->service_thp = value(KNOB_ENABLED, "never");
        run_one(p, &u, 1);
        ck_assert_uint_eq(F.plan.isolation_checks->len, 1);
        req = &g_array_index(F.plan.isolation_checks, IsolationRequest, 0);
        ck_assert_str_eq(req->unit, "redis-server.service");
        ck_assert_ptr_eq(req->policy, p);
        ck_assert_ptr_null(restart_hint("redis-server.service"));
        assert_step(KNOB_ENABLED, KNOB_ACTION_FOLLOW, "madvise");

        set_isolation("redis-server.service", p, 0, ISOLATION_CHECKING);
        run_one(p, &u, 1);
        ck_assert_uint_eq(F.plan.isolation_checks->len, 0);
        ck_assert_ptr_null(restart_hint("redis-server.service"));

        set_isolation("redis-server.service", p, 0, ISOLATION_NOT_ISOLATED);
        run_one(p, &u, 1);
        ck_assert_str_eq(restart_hint("redis-server.service"), "redis-isolated.conf");

        set_isolation("redis-server.service", p, 0, ISOLATION_ISOLATED);
        run_one(p, &u, 1);
        ck_assert_ptr_null(restart_hint("redis-server.service"));

        /* A new start is asked about again; one still starting is not asked yet. */
        u.stops = 1;
        run_one(p, &u, 1);
        ck_assert_uint_eq(F.plan.isolation_checks->len, 1);
        u.running = false;
        run_one(p, &u, 1);
        ck_assert_uint_eq(F.plan.isolation_checks->len, 0);
}
END_TEST

/* Two policies give a running unit a restart hint (its process found with THP, and running when
 * the global one first counted it): the name first given stays, however many applies run. */
START_TEST(test_restart_hint_keeps_its_policy) {
        Policy *isolated = add_policy("a-isolated.conf", NULL);
        const Policy *global = add_policy("b-global.conf", "never");
        PlanUnit u = { .name = "redis-server.service", .running = true };
        PlanCandidate c[] = {
                { .policy = isolated, .units = &u, .n_units = 1 },
                { .policy = global, .units = &u, .n_units = 1 },
        };

        isolated->scope = POLICY_SCOPE_SERVICE;
        isolated->service_thp = value(KNOB_ENABLED, "never");
        set_isolation("redis-server.service", isolated, 0, ISOLATION_NOT_ISOLATED);
        run(c, G_N_ELEMENTS(c));
        ck_assert_str_eq(restart_hint("redis-server.service"), "a-isolated.conf");
        run(c, G_N_ELEMENTS(c));
        ck_assert_str_eq(restart_hint("redis-server.service"), "a-isolated.conf");
        ck_assert(!F.plan.restart_hints_changed);
}
END_TEST

/* A unit of two policies that isolate it: one answer, about the stricter mode, serves both; the
 * plan must not ask again for the other one, which would replace the answer for ever. */
START_TEST(test_isolation_two_policies_one_answer) {
        Policy *never = add_policy("redis.conf", "never");
        Policy *loose = add_policy("valkey-compat.conf", "madvise");
        PlanUnit u = { .name = "redis-server.service", .running = true };
        PlanCandidate c[] = {
                { .policy = never, .units = &u, .n_units = 1 },
                { .policy = loose, .units = &u, .n_units = 1 },
        };

        never->scope = loose->scope = POLICY_SCOPE_AUTO;
        never->service_thp = never->knobs[KNOB_ENABLED];
        loose->service_thp = loose->knobs[KNOB_ENABLED];
        run(c, G_N_ELEMENTS(c));
        ck_assert_uint_eq(F.plan.isolation_checks->len, 2);

        /* The daemon checked the madvise one last: the never one asks once more... */
        set_isolation("redis-server.service", loose, 0, ISOLATION_UNVERIFIED);
        run(c, G_N_ELEMENTS(c));
        ck_assert_uint_eq(F.plan.isolation_checks->len, 1);
        ck_assert_ptr_eq(g_array_index(F.plan.isolation_checks, IsolationRequest, 0).policy, never);

        /* ...and its answer serves both from then on. */
        set_isolation("redis-server.service", never, 0, ISOLATION_ISOLATED);
        for (int i = 0; i < 3; i++) {
                run(c, G_N_ELEMENTS(c));
                ck_assert_uint_eq(F.plan.isolation_checks->len, 0);
        }
        ck_assert_ptr_null(restart_hint("redis-server.service"));
}
END_TEST

/* Scope=auto next to a global policy that wants always: met per service while its unit is
 * isolated or still being checked; a unit found with THP puts its vote back on the machine. */
START_TEST(test_auto_isolation_decides_per_service) {
        Policy *mongo = add_policy("mongodb.conf", "always");
        Policy *redis = add_policy("redis.conf", "never");
        PlanUnit m = { .name = "mongod.service", .running = true };
        PlanUnit r = { .name = "redis-server.service", .running = true };
        PlanCandidate c[] = {
                { .policy = mongo, .units = &m, .n_units = 1 },
                { .policy = redis, .units = &r, .n_units = 1 },
        };

        redis->scope = POLICY_SCOPE_AUTO;
        redis->service_thp = redis->knobs[KNOB_ENABLED];
        run(c, G_N_ELEMENTS(c));
        ck_assert_uint_eq(F.plan.isolation_checks->len, 1);
        ck_assert(g_array_index(F.plan.active, ActivePolicy, 1).per_service);
        assert_step(KNOB_ENABLED, KNOB_ACTION_WRITE, "always");

        set_isolation("redis-server.service", redis, 0, ISOLATION_NOT_ISOLATED);
        run(c, G_N_ELEMENTS(c));
        ck_assert(g_array_index(F.plan.active, ActivePolicy, 1).unisolated);
        ck_assert(!g_array_index(F.plan.active, ActivePolicy, 1).per_service);
        assert_step(KNOB_ENABLED, KNOB_ACTION_WRITE, "never");
        ck_assert_str_eq(restart_hint("redis-server.service"), "redis.conf");

        /* Restarted under its drop-in: isolated, and always is back. */
        r.stops = 1;
        set_isolation("redis-server.service", redis, 1, ISOLATION_ISOLATED);
        run(c, G_N_ELEMENTS(c));
        ck_assert(g_array_index(F.plan.active, ActivePolicy, 1).per_service);
        assert_step(KNOB_ENABLED, KNOB_ACTION_WRITE, "always");
        ck_assert_ptr_null(restart_hint("redis-server.service"));

        /* Alone, it holds the machine at never as a global policy would. */
        run(&c[1], 1);
        ck_assert(!g_array_index(F.plan.active, ActivePolicy, 0).per_service);
        assert_step(KNOB_ENABLED, KNOB_ACTION_WRITE, "never");
}
END_TEST

/* The admin override beats every policy. */
START_TEST(test_override) {
        const Policy *p = add_policy("redis.conf", "never");
        PlanUnit u = { .name = "redis-server.service" };

        F.override[KNOB_ENABLED] = value(KNOB_ENABLED, "always");
        run_one(p, &u, 1);
        assert_step(KNOB_ENABLED, KNOB_ACTION_WRITE, "always");
        ck_assert_int_eq(F.target.source[KNOB_ENABLED].kind, SOURCE_OVERRIDE);
        ck_assert(F.plan.knobs[KNOB_ENABLED].owned);

        F.override[KNOB_ENABLED] = KNOB_VALUE_UNSET;
        run_one(p, &u, 1);
        assert_step(KNOB_ENABLED, KNOB_ACTION_WRITE, "never");
        ck_assert_int_eq(F.target.source[KNOB_ENABLED].kind, SOURCE_POLICY);
}
END_TEST

/* Storm mitigation votes like a policy: stricter than the baseline, it is written. */
START_TEST(test_mitigation) {
        F.mitigation[KNOB_DEFRAG] = value(KNOB_DEFRAG, "never");
        run(NULL, 0);
        assert_step(KNOB_DEFRAG, KNOB_ACTION_WRITE, "never");
        ck_assert_int_eq(F.target.source[KNOB_DEFRAG].kind, SOURCE_MITIGATION);
        ck_assert(F.plan.knobs[KNOB_DEFRAG].owned);

        /* Once the kernel holds it, nothing more to do. */
        F.current[KNOB_DEFRAG] = value(KNOB_DEFRAG, "never");
        run(NULL, 0);
        assert_step(KNOB_DEFRAG, KNOB_ACTION_KEEP, "never");

        /* The override still wins over mitigation. */
        F.override[KNOB_DEFRAG] = value(KNOB_DEFRAG, "always");
        run(NULL, 0);
        assert_step(KNOB_DEFRAG, KNOB_ACTION_WRITE, "always");
}
END_TEST

/* What publishing may skip: nothing changed, nothing flagged. */
START_TEST(test_change_flags) {
        const Policy *p = add_policy("redis.conf", "never");
        PlanUnit units[] = {
                { .name = "redis-server.service", .running = true },
                { .name = "redis-server@b.service" },
        };

        run_one(p, units, 1);
        ck_assert(F.plan.runtime_changed);
        ck_assert(F.plan.restart_hints_changed);
        ck_assert(F.plan.wanted_units_changed);

        run_one(p, units, 1);
        ck_assert(!F.plan.runtime_changed);
        ck_assert(!F.plan.restart_hints_changed);
        ck_assert(!F.plan.wanted_units_changed);

        /* A second unit of an active policy changes its unit list, not the hints. */
        run_one(p, units, 2);
        ck_assert(F.plan.runtime_changed);
        ck_assert(!F.plan.restart_hints_changed);
        ck_assert(F.plan.wanted_units_changed);

        /* The running one restarted: its hint goes, and the same units are wanted. */
        units[0].stops = 1;
        run_one(p, units, 2);
        ck_assert(!F.plan.runtime_changed);
        ck_assert(F.plan.restart_hints_changed);
        ck_assert(!F.plan.wanted_units_changed);

        run_one(p, NULL, 0);
        ck_assert(F.plan.runtime_changed);
        ck_assert(F.plan.wanted_units_changed);

        /* A reload that drops an active policy changes what is active, though no unit did. */
        run_one(p, units, 1);
        g_ptr_array_set_size(F.policies, 0);
        plan_state_forget_policies(&F.state, F.policies);
        run(NULL, 0);
        ck_assert(F.plan.runtime_changed);
        run(NULL, 0);
        ck_assert(!F.plan.runtime_changed);
}
END_TEST

/* Which unit events may skip the apply: only those that change nothing plan() reads. */
START_TEST(test_unit_change_matters) {
        Policy *p = add_policy("redis.conf", "never");
        const Policy *policies[] = { p };
        PlanUnit queued = { .name = "redis-server.service" }, running = queued, restarted = queued;

        running.running = true;
        restarted.stops = 1;

        /* Nothing matches it, or it is not wanted before nor after. */
        ck_assert(!plan_unit_change_matters(&F.state, NULL, &queued, policies, 0));
        ck_assert(!plan_unit_change_matters(&F.state, NULL, NULL, policies, 1));
        /* Becoming wanted, or no longer wanted. */
        ck_assert(plan_unit_change_matters(&F.state, NULL, &queued, policies, 1));
        ck_assert(plan_unit_change_matters(&F.state, &queued, NULL, policies, 1));
        /* Not counted yet: whether it runs decides its restart hint. */
        ck_assert(plan_unit_change_matters(&F.state, &queued, &running, policies, 1));

        run_one(p, &queued, 1);
        /* Counted: its start job ending changes nothing, a stop in between does. */
        ck_assert(!plan_unit_change_matters(&F.state, &queued, &running, policies, 1));
        ck_assert(!plan_unit_change_matters(&F.state, &running, &queued, policies, 1));
        ck_assert(plan_unit_change_matters(&F.state, &queued, &restarted, policies, 1));
        /* Of a Scope=service policy, running is when its processes are checked. */
        p->scope = POLICY_SCOPE_SERVICE;
        ck_assert(plan_unit_change_matters(&F.state, &queued, &running, policies, 1));
}
END_TEST

/* A knob in conflict with a writer that keeps rewriting it is not written back while it differs
 * from its target; a knob the writer leaves at the target is kept as usual, and a knob nobody
 * holds is still adopted. */
START_TEST(test_yield_to_a_conflict) {
        const Policy *p = add_policy("redis.conf", "madvise");
        PlanUnit u = { .name = "redis-server.service" };

        F.current[KNOB_ENABLED] = value(KNOB_ENABLED, "never");
        F.yielded[KNOB_ENABLED] = true;
        run_one(p, &u, 1);
        assert_step(KNOB_ENABLED, KNOB_ACTION_YIELD, "madvise");

        F.current[KNOB_ENABLED] = value(KNOB_ENABLED, "madvise");
        run_one(p, &u, 1);
        assert_step(KNOB_ENABLED, KNOB_ACTION_KEEP, "madvise");

        F.yielded[KNOB_DEFRAG] = true;
        F.current[KNOB_DEFRAG] = value(KNOB_DEFRAG, "never");
        run_one(p, &u, 1);
        assert_step(KNOB_DEFRAG, KNOB_ACTION_ADOPT, "madvise");

        /* Once the conflict is over the policy's value is written again. */
        F.yielded[KNOB_ENABLED] = false;
        F.current[KNOB_ENABLED] = value(KNOB_ENABLED, "never");
        run_one(p, &u, 1);
        assert_step(KNOB_ENABLED, KNOB_ACTION_WRITE, "madvise");
}
END_TEST

/* What the daemon keeps after each step: the kernel's value, ownership, and the baseline record,
 * which only an adopted admin's value moves. */
START_TEST(test_knob_commit) {
        KnobValue never = value(KNOB_ENABLED, "never"), madvise = value(KNOB_ENABLED, "madvise");
        KnobValue always = value(KNOB_ENABLED, "always");
        KnobValue applied = madvise, recorded = madvise;
        bool owned = false;

        ck_assert(!plan_knob_commit(&(KnobStep) { KNOB_ACTION_WRITE, madvise, never, true }, &applied, &owned, &recorded));
        ck_assert_int_eq(applied, never);
        ck_assert(owned);
        ck_assert_int_eq(recorded, madvise);

        /* Left as it is: the kernel's value is what thpd saw, ownership stays. */
        ck_assert(!plan_knob_commit(&(KnobStep) { KNOB_ACTION_YIELD, always, never, false }, &applied, &owned, &recorded));
        ck_assert_int_eq(applied, always);
        ck_assert(owned);
        ck_assert(!plan_knob_commit(&(KnobStep) { KNOB_ACTION_UNREADABLE, KNOB_VALUE_UNSET, never, false }, &applied, &owned,
                                    &recorded));
        ck_assert_int_eq(applied, always);

        ck_assert(!plan_knob_commit(&(KnobStep) { KNOB_ACTION_KEEP, madvise, madvise, false }, &applied, &owned, &recorded));
        ck_assert(!owned);

        ck_assert(plan_knob_commit(&(KnobStep) { KNOB_ACTION_ADOPT, always, madvise, false }, &applied, &owned, &recorded));
        ck_assert_int_eq(applied, always);
        ck_assert_int_eq(recorded, always);
}
END_TEST

/* A max_ptes_none moved for khugepaged's mTHP collapse is what thpd writes and holds: the 0 read
 * back is thpd's own value, kept, not a change to adopt or restore. */
START_TEST(test_moved_max_ptes_none_is_written_and_kept) {
        const Knob mpn = KNOB_KHUGEPAGED_MAX_PTES_NONE, k64 = KNOB_MTHP_FIRST + 3;
        Policy *p = add_policy("p.conf", NULL);
        PlanUnit u = { .name = "p.service" };

        p->knobs[mpn] = value(mpn, "255");
        p->knobs[k64] = value(k64, "always");
        F.present[mpn] = F.present[k64] = true;
        F.current[mpn] = F.recorded[mpn] = value(mpn, "511");
        F.current[k64] = F.recorded[k64] = value(k64, "never");
        F.mthp_collapse = true;

        run_one(p, &u, 1);
        ck_assert_int_eq(F.plan.knobs[mpn].action, KNOB_ACTION_WRITE);
        ck_assert_int_eq(F.plan.knobs[mpn].target, 0);
        ck_assert(F.plan.knobs[mpn].owned);
        actuate();
        ck_assert_int_eq(F.current[mpn], 0);
        ck_assert(F.owned[mpn]);
        ck_assert_int_eq(F.recorded[mpn], 511);

        run_one(p, &u, 1);
        ck_assert_int_eq(F.plan.knobs[mpn].action, KNOB_ACTION_KEEP);
        ck_assert_int_eq(F.plan.knobs[mpn].target, 0);
}
END_TEST

int main(void) {
        return test_run_suite(TEST_SUITE("plan", "rules", setup, teardown,
                                         test_hold_until_unit_list,
                                         test_moved_max_ptes_none_is_written_and_kept,
                                         test_hold_keeps_recorded_hints,
                                         test_adopt_admin_change,
                                         test_absent_and_unreadable,
                                         test_restart_hints,
                                         test_pool_grace,
                                         test_active_count,
                                         test_changes_only,
                                         test_isolation_checks,
                                         test_restart_hint_keeps_its_policy,
                                         test_auto_isolation_decides_per_service,
                                         test_isolation_two_policies_one_answer,
                                         test_override,
                                         test_mitigation,
                                         test_change_flags,
                                         test_unit_change_matters,
                                         test_yield_to_a_conflict,
                                         test_knob_commit));
}
