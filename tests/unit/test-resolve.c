/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "resolve.h"
#include "test-util.h"

static Policy *make_policy(const char *name) {
        Policy *p = g_new0(Policy, 1);

        p->name = g_strdup(name);
        FOREACH_KNOB(k)
                p->knobs[k] = KNOB_VALUE_UNSET;
        return p;
}

static void set(KnobValue *values, Knob k, const char *word) {
        ck_assert_int_eq(knob_value_from_string(k, word, &values[k]), 0);
}

static void assert_value(const Target *t, Knob k, const char *word) {
        char buf[24];

        ck_assert_str_eq(knob_value_to_string(k, t->value[k], buf), word);
}

static void unset_all(KnobValue *values) {
        FOREACH_KNOB(k)
                values[k] = KNOB_VALUE_UNSET;
}

static KnobValue baseline[_KNOB_MAX];

static void setup_baseline(void) {
        unset_all(baseline);
        set(baseline, KNOB_ENABLED, "madvise");
        set(baseline, KNOB_DEFRAG, "madvise");
        set(baseline, KNOB_SHMEM_ENABLED, "never");
        set(baseline, KNOB_KHUGEPAGED_DEFRAG, "1");
        set(baseline, KNOB_KHUGEPAGED_SCAN_SLEEP_MILLISECS, "10000");
        set(baseline, KNOB_MTHP_FIRST + 8, "inherit");
}

START_TEST(test_no_policy_gives_baseline) {
        ResolveInput in = { .baseline = baseline };
        Target t;

        resolve(&in, &t);
        assert_value(&t, KNOB_ENABLED, "madvise");
        ck_assert_int_eq(t.source[KNOB_ENABLED].kind, SOURCE_BASELINE);
        /* A knob the kernel lacks and nobody votes on stays untouched. */
        ck_assert_int_eq(t.value[KNOB_KHUGEPAGED_MAX_PTES_NONE], KNOB_VALUE_UNSET);
        ck_assert_int_eq(t.source[KNOB_KHUGEPAGED_MAX_PTES_NONE].kind, SOURCE_NONE);
        ck_assert_uint_eq(t.n_pools, 0);
}
END_TEST

START_TEST(test_strictest_wins_per_knob) {
        g_autoptr(Policy) redis = make_policy("redis.conf");
        g_autoptr(Policy) loose = make_policy("loose.conf");
        g_autoptr(Policy) khuge = make_policy("khuge.conf");
        Target t;

        set(redis->knobs, KNOB_ENABLED, "never");
        set(redis->knobs, KNOB_DEFRAG, "madvise");
        set(loose->knobs, KNOB_ENABLED, "always");
        set(loose->knobs, KNOB_DEFRAG, "defer");
        set(khuge->knobs, KNOB_KHUGEPAGED_SCAN_SLEEP_MILLISECS, "30000");

        ActivePolicy active[] = {
                { .policy = loose, .unit = "loose.service" },
                { .policy = redis, .unit = "redis-server.service" },
                { .policy = khuge, .unit = "khuge.service" },
        };
        ResolveInput in = { .baseline = baseline, .active = active, .n_active = ELEMENTSOF(active) };

        resolve(&in, &t);
        assert_value(&t, KNOB_ENABLED, "never");
        ck_assert_ptr_eq(t.source[KNOB_ENABLED].policy, redis);
        ck_assert_str_eq(t.source[KNOB_ENABLED].unit, "redis-server.service");
        assert_value(&t, KNOB_DEFRAG, "defer");
        ck_assert_ptr_eq(t.source[KNOB_DEFRAG].policy, loose);
        /* Higher sleep is stricter. */
        assert_value(&t, KNOB_KHUGEPAGED_SCAN_SLEEP_MILLISECS, "30000");
        /* Non-voting policies leave the baseline alone. */
        assert_value(&t, KNOB_SHMEM_ENABLED, "never");
        ck_assert_int_eq(t.source[KNOB_SHMEM_ENABLED].kind, SOURCE_BASELINE);
}
END_TEST

START_TEST(test_looser_policy_alone_wins_over_baseline) {
        g_autoptr(Policy) loose = make_policy("loose.conf");
        Target t;

        /* A policy's vote replaces the baseline even when looser: the baseline is not a voter. */
        set(loose->knobs, KNOB_ENABLED, "always");
        ActivePolicy active[] = { { .policy = loose, .unit = "a.service" } };
        ResolveInput in = { .baseline = baseline, .active = active, .n_active = 1 };

        resolve(&in, &t);
        assert_value(&t, KNOB_ENABLED, "always");
        ck_assert_int_eq(t.source[KNOB_ENABLED].kind, SOURCE_POLICY);
}
END_TEST

START_TEST(test_mitigation_and_override) {
        g_autoptr(Policy) redis = make_policy("redis.conf");
        KnobValue mitigation[_KNOB_MAX], override[_KNOB_MAX];
        Target t;

        unset_all(mitigation);
        unset_all(override);
        set(redis->knobs, KNOB_DEFRAG, "never");
        set(mitigation, KNOB_DEFRAG, "defer");
        set(mitigation, KNOB_KHUGEPAGED_DEFRAG, "0");
        set(override, KNOB_ENABLED, "always");

        ActivePolicy active[] = { { .policy = redis, .unit = "redis-server.service" } };
        ResolveInput in = {
                .baseline = baseline, .active = active, .n_active = 1,
                .mitigation = mitigation, .override = override,
        };

        resolve(&in, &t);
        /* Mitigation votes like a policy: it cannot loosen redis' "never". */
        assert_value(&t, KNOB_DEFRAG, "never");
        ck_assert_int_eq(t.source[KNOB_DEFRAG].kind, SOURCE_POLICY);
        assert_value(&t, KNOB_KHUGEPAGED_DEFRAG, "0");
        ck_assert_int_eq(t.source[KNOB_KHUGEPAGED_DEFRAG].kind, SOURCE_MITIGATION);
        /* The override wins over everything, even when looser. */
        assert_value(&t, KNOB_ENABLED, "always");
        ck_assert_int_eq(t.source[KNOB_ENABLED].kind, SOURCE_OVERRIDE);
}
END_TEST

START_TEST(test_inherit_uses_resolved_global) {
        g_autoptr(Policy) a = make_policy("a.conf");
        g_autoptr(Policy) b = make_policy("b.conf");
        const Knob k2m = KNOB_MTHP_FIRST + 8;
        Target t;

        set(a->knobs, KNOB_ENABLED, "never");
        set(a->knobs, k2m, "inherit");
        set(b->knobs, k2m, "madvise");

        ActivePolicy active[] = { { .policy = b, .unit = "b.service" }, { .policy = a, .unit = "a.service" } };
        ResolveInput in = { .baseline = baseline, .active = active, .n_active = 2 };

        /* inherit under a global "never" is stricter than madvise. */
        resolve(&in, &t);
        assert_value(&t, k2m, "inherit");
        ck_assert_ptr_eq(t.source[k2m].policy, a);

        /* With a global "always", madvise is the stricter one. */
        set(a->knobs, KNOB_ENABLED, "always");
        resolve(&in, &t);
        assert_value(&t, k2m, "madvise");
        ck_assert_ptr_eq(t.source[k2m].policy, b);
}
END_TEST

/* Per-size shmem "inherit" borrows from the resolved global shmem_enabled, not from enabled. */
START_TEST(test_shmem_inherit_uses_resolved_global_shmem) {
        g_autoptr(Policy) a = make_policy("a.conf");
        g_autoptr(Policy) b = make_policy("b.conf");
        const Knob k64 = KNOB_MTHP_SHMEM_FIRST + 3;
        Target t;

        set(a->knobs, KNOB_SHMEM_ENABLED, "advise");
        set(a->knobs, KNOB_ENABLED, "always");
        set(a->knobs, k64, "inherit");
        set(b->knobs, k64, "within_size");

        ActivePolicy active[] = { { .policy = b, .unit = "b.service" }, { .policy = a, .unit = "a.service" } };
        ResolveInput in = { .baseline = baseline, .active = active, .n_active = 2 };

        /* inherit of advise is stricter than within_size, whatever enabled says. */
        resolve(&in, &t);
        assert_value(&t, k64, "inherit");
        ck_assert_ptr_eq(t.source[k64].policy, a);

        /* With a global "always", within_size is the stricter one. */
        set(a->knobs, KNOB_SHMEM_ENABLED, "always");
        set(a->knobs, KNOB_ENABLED, "never");
        resolve(&in, &t);
        assert_value(&t, k64, "within_size");
        ck_assert_ptr_eq(t.source[k64].policy, b);

        /* Nobody sets the global: inherit borrows the baseline's never. */
        a->knobs[KNOB_SHMEM_ENABLED] = KNOB_VALUE_UNSET;
        resolve(&in, &t);
        assert_value(&t, KNOB_SHMEM_ENABLED, "never");
        assert_value(&t, k64, "inherit");
}
END_TEST

/* Two policies on the 0/1 knobs: 1 keeps fewer huge pages and wins; alone, 0 holds. */
START_TEST(test_flags_strictest_wins) {
        g_autoptr(Policy) a = make_policy("a.conf");
        g_autoptr(Policy) b = make_policy("b.conf");
        Target t;

        set(baseline, KNOB_SHRINK_UNDERUSED, "1");
        set(a->knobs, KNOB_SHRINK_UNDERUSED, "0");
        set(a->knobs, KNOB_USE_ZERO_PAGE, "0");
        set(b->knobs, KNOB_SHRINK_UNDERUSED, "1");
        set(b->knobs, KNOB_USE_ZERO_PAGE, "1");

        ActivePolicy active[] = { { .policy = a, .unit = "a.service" }, { .policy = b, .unit = "b.service" } };
        ResolveInput in = { .baseline = baseline, .active = active, .n_active = 2 };

        resolve(&in, &t);
        assert_value(&t, KNOB_SHRINK_UNDERUSED, "1");
        ck_assert_ptr_eq(t.source[KNOB_SHRINK_UNDERUSED].policy, b);
        assert_value(&t, KNOB_USE_ZERO_PAGE, "1");
        ck_assert_ptr_eq(t.source[KNOB_USE_ZERO_PAGE].policy, b);

        in.n_active = 1;
        resolve(&in, &t);
        assert_value(&t, KNOB_SHRINK_UNDERUSED, "0");
        ck_assert_ptr_eq(t.source[KNOB_SHRINK_UNDERUSED].policy, a);
        assert_value(&t, KNOB_USE_ZERO_PAGE, "0");
}
END_TEST

/* Redis isolated per service (as the parser builds a Scope=service policy: no knob vote, the
 * Enabled= value kept aside) and a batch job at a global always coexist. */
START_TEST(test_service_scope_does_not_vote) {
        g_autoptr(Policy) redis = make_policy("redis.conf");
        g_autoptr(Policy) batch = make_policy("batch.conf");
        Target t;

        redis->scope = POLICY_SCOPE_SERVICE;
        ck_assert_int_eq(knob_value_from_string(KNOB_ENABLED, "never", &redis->service_thp), 0);
        redis->has_pool = true;
        redis->pool = (PoolRequest) { .page_size_kb = 2048, .node = POOL_NODE_ANY, .pages = 8 };
        set(batch->knobs, KNOB_ENABLED, "always");

        ActivePolicy active[] = {
                { .policy = batch, .unit = "batch.service" },
                { .policy = redis, .unit = "redis-server.service" },
        };
        ResolveInput in = { .baseline = baseline, .active = active, .n_active = ELEMENTSOF(active) };

        resolve(&in, &t);
        assert_value(&t, KNOB_ENABLED, "always");
        ck_assert_ptr_eq(t.source[KNOB_ENABLED].policy, batch);
        ck_assert_uint_eq(t.n_pools, 1);
        ck_assert_uint_eq(t.pools[0].requested, 8);

        /* Alone, it leaves every knob at the baseline. */
        in.active = &active[1];
        in.n_active = 1;
        resolve(&in, &t);
        assert_value(&t, KNOB_ENABLED, "madvise");
        ck_assert_int_eq(t.source[KNOB_ENABLED].kind, SOURCE_BASELINE);
        ck_assert_uint_eq(t.pools[0].requested, 8);
}
END_TEST

START_TEST(test_pools_summed_per_size_and_node) {
        g_autoptr(Policy) pg = make_policy("postgresql.conf");
        g_autoptr(Policy) other = make_policy("other.conf");
        g_autoptr(Policy) giant = make_policy("giant.conf");
        g_autoptr(Policy) numa = make_policy("numa.conf");
        PoolBaseline pool_baseline[] = { { .page_size_kb = 2048, .node = POOL_NODE_ANY, .pages = 10 } };
        const PoolTarget *p;
        Target t;

        pg->has_pool = other->has_pool = giant->has_pool = numa->has_pool = true;
        pg->pool = (PoolRequest) { .page_size_kb = 2048, .node = POOL_NODE_ANY, .pages = 1060 };
        other->pool = (PoolRequest) { .page_size_kb = 2048, .node = POOL_NODE_ANY, .pages = 40 };
        giant->pool = (PoolRequest) { .page_size_kb = 1048576, .node = POOL_NODE_ANY, .pages = 2 };
        numa->pool = (PoolRequest) { .page_size_kb = 2048, .node = 0, .pages = 5 };

        ActivePolicy active[] = {
                { .policy = pg, .unit = "postgresql@15-main.service" },
                { .policy = other, .unit = "o.service", .pool_only = true },
                { .policy = giant, .unit = "g.service" },
                { .policy = numa, .unit = "n.service" },
        };
        ResolveInput in = {
                .baseline = baseline, .active = active, .n_active = ELEMENTSOF(active),
                .pool_baseline = pool_baseline, .n_pool_baseline = 1,
        };

        resolve(&in, &t);
        ck_assert_uint_eq(t.n_pools, 3);
        p = target_find_pool(&t, 2048, POOL_NODE_ANY);
        ck_assert_ptr_nonnull(p);
        /* A policy in its grace period still holds its pages. */
        ck_assert_uint_eq(p->pages, 10 + 1060 + 40);
        ck_assert_uint_eq(p->requested, 1100);
        ck_assert_uint_eq(p->n_policies, 2);
        p = target_find_pool(&t, 1048576, POOL_NODE_ANY);
        ck_assert_ptr_nonnull(p);
        ck_assert_uint_eq(p->pages, 2);
        p = target_find_pool(&t, 2048, 0);
        ck_assert_ptr_nonnull(p);
        ck_assert_uint_eq(p->pages, 5);
        ck_assert(!t.pools_truncated);
}
END_TEST

START_TEST(test_pool_only_policy_does_not_vote_knobs) {
        g_autoptr(Policy) redis = make_policy("redis.conf");
        Target t;

        set(redis->knobs, KNOB_ENABLED, "never");
        ActivePolicy active[] = { { .policy = redis, .unit = "r.service", .pool_only = true } };
        ResolveInput in = { .baseline = baseline, .active = active, .n_active = 1 };

        resolve(&in, &t);
        assert_value(&t, KNOB_ENABLED, "madvise");
}
END_TEST

START_TEST(test_pool_sum_saturates) {
        g_autoptr(Policy) a = make_policy("a.conf");
        g_autoptr(Policy) b = make_policy("b.conf");
        Target t;

        a->has_pool = b->has_pool = true;
        a->pool = b->pool = (PoolRequest) { .page_size_kb = 2048, .node = POOL_NODE_ANY, .pages = UINT64_MAX - 1 };
        ActivePolicy active[] = { { .policy = a, .unit = "a.service" }, { .policy = b, .unit = "b.service" } };
        ResolveInput in = { .baseline = baseline, .active = active, .n_active = 2 };

        resolve(&in, &t);
        ck_assert_uint_eq(target_find_pool(&t, 2048, POOL_NODE_ANY)->pages, UINT64_MAX);
}
END_TEST

START_TEST(test_too_many_pools_is_reported) {
        Policy *policies[RESOLVE_MAX_POOLS + 1];
        ActivePolicy active[RESOLVE_MAX_POOLS + 1];
        Target t;

        for (int i = 0; i <= RESOLVE_MAX_POOLS; i++) {
                policies[i] = make_policy("p.conf");
                policies[i]->has_pool = true;
                policies[i]->pool = (PoolRequest) { .page_size_kb = 2048, .node = i, .pages = 1 };
                active[i] = (ActivePolicy) { .policy = policies[i], .unit = "p.service" };
        }
        ResolveInput in = { .baseline = baseline, .active = active, .n_active = RESOLVE_MAX_POOLS + 1 };

        resolve(&in, &t);
        ck_assert_uint_eq(t.n_pools, RESOLVE_MAX_POOLS);
        ck_assert(t.pools_truncated);
        for (int i = 0; i <= RESOLVE_MAX_POOLS; i++)
                policy_free(policies[i]);
}
END_TEST

/* --- Scope=auto: per service where another active policy wants a looser enabled --- */

static Policy *make_auto(const char *name, const char *mode) {
        Policy *p = make_policy(name);

        p->scope = POLICY_SCOPE_AUTO;
        set(p->knobs, KNOB_ENABLED, mode);
        p->service_thp = p->knobs[KNOB_ENABLED];
        return p;
}

static void resolve_with(ActivePolicy *active, size_t n, Target *t) {
        ResolveInput in = { .baseline = baseline, .active = active, .n_active = n };

        resolve_per_service(active, n);
        resolve(&in, t);
}

/* The host: MongoDB 8 (global, always, its defrag and khugepaged values) and Redis
 * (auto, never, defrag never). Redis is met per service; MongoDB's values hold machine-wide. */
START_TEST(test_auto_met_per_service_next_to_a_looser_policy) {
        g_autoptr(Policy) mongo = make_policy("mongodb.conf");
        g_autoptr(Policy) redis = make_auto("redis.conf", "never");
        Target t;

        set(mongo->knobs, KNOB_ENABLED, "always");
        set(mongo->knobs, KNOB_DEFRAG, "defer+madvise");
        set(mongo->knobs, KNOB_KHUGEPAGED_MAX_PTES_NONE, "0");
        set(redis->knobs, KNOB_DEFRAG, "never");
        set(redis->knobs, KNOB_SHMEM_ENABLED, "deny");
        ActivePolicy active[] = {
                { .policy = mongo, .unit = "mongod.service" },
                { .policy = redis, .unit = "redis-server.service" },
        };

        resolve_with(active, G_N_ELEMENTS(active), &t);
        ck_assert(!active[0].per_service);
        ck_assert(active[1].per_service);
        assert_value(&t, KNOB_ENABLED, "always");
        ck_assert_ptr_eq(t.source[KNOB_ENABLED].policy, mongo);
        assert_value(&t, KNOB_DEFRAG, "defer+madvise");
        assert_value(&t, KNOB_KHUGEPAGED_MAX_PTES_NONE, "0");
        /* shmem_enabled reaches files every process shares: it stays a vote. */
        assert_value(&t, KNOB_SHMEM_ENABLED, "deny");
        ck_assert_ptr_eq(t.source[KNOB_SHMEM_ENABLED].policy, redis);
}
END_TEST

/* Alone, or next to nothing looser, a Scope=auto policy votes as a global one would. */
START_TEST(test_auto_votes_machine_wide_when_nobody_wants_more) {
        g_autoptr(Policy) redis = make_auto("redis.conf", "never");
        g_autoptr(Policy) pg = make_policy("postgresql.conf");
        Target t;

        set(redis->knobs, KNOB_DEFRAG, "never");
        ActivePolicy alone[] = { { .policy = redis, .unit = "redis-server.service" } };
        resolve_with(alone, 1, &t);
        ck_assert(!alone[0].per_service);
        assert_value(&t, KNOB_ENABLED, "never");
        assert_value(&t, KNOB_DEFRAG, "never");

        /* A global policy as strict: no looser value is wanted, Redis keeps voting. */
        set(pg->knobs, KNOB_ENABLED, "never");
        ActivePolicy both[] = {
                { .policy = pg, .unit = "postgresql@17-main.service" },
                { .policy = redis, .unit = "redis-server.service" },
        };
        resolve_with(both, 2, &t);
        ck_assert(!both[1].per_service);
        assert_value(&t, KNOB_ENABLED, "never");
        assert_value(&t, KNOB_DEFRAG, "never");
        ck_assert_ptr_eq(t.source[KNOB_DEFRAG].policy, redis);

        /* A global madvise is looser than never: Redis stands aside, madvise holds. */
        set(pg->knobs, KNOB_ENABLED, "madvise");
        both[1].per_service = false;
        resolve_with(both, 2, &t);
        ck_assert(both[1].per_service);
        assert_value(&t, KNOB_ENABLED, "madvise");
        assert_value(&t, KNOB_DEFRAG, "madvise"); /* the baseline: nobody else votes */
}
END_TEST

/* Two services that both want per-service settings: Redis (never) and a madvise one. The madvise
 * one needs madvise machine-wide for its own advised memory, so it votes; Redis stands aside. */
START_TEST(test_two_auto_policies) {
        g_autoptr(Policy) redis = make_auto("redis.conf", "never");
        g_autoptr(Policy) valkey = make_auto("valkey.conf", "never");
        g_autoptr(Policy) oracle = make_auto("oracle.conf", "madvise");
        Target t;

        set(redis->knobs, KNOB_DEFRAG, "never");
        set(oracle->knobs, KNOB_DEFRAG, "madvise");
        ActivePolicy never_pair[] = {
                { .policy = redis, .unit = "redis-server.service" },
                { .policy = valkey, .unit = "valkey-server.service" },
        };
        resolve_with(never_pair, 2, &t);
        ck_assert(!never_pair[0].per_service);
        ck_assert(!never_pair[1].per_service);
        assert_value(&t, KNOB_ENABLED, "never");

        ActivePolicy mixed[] = {
                { .policy = oracle, .unit = "oracle.service" },
                { .policy = redis, .unit = "redis-server.service" },
                { .policy = valkey, .unit = "valkey-server.service" },
        };
        resolve_with(mixed, 3, &t);
        ck_assert(!mixed[0].per_service);
        ck_assert(mixed[1].per_service);
        ck_assert(mixed[2].per_service);
        assert_value(&t, KNOB_ENABLED, "madvise");
        ck_assert_ptr_eq(t.source[KNOB_ENABLED].policy, oracle);
        assert_value(&t, KNOB_DEFRAG, "madvise");
        ck_assert_ptr_eq(t.source[KNOB_DEFRAG].policy, oracle);
}
END_TEST

/* A unit that cannot be isolated (a transient unit, or one started before its drop-in) leaves
 * its policy voting machine-wide even next to a looser one: only the global knob protects it.
 * Its vote then also counts against other Scope=auto policies. */
START_TEST(test_auto_with_an_unisolated_unit_votes) {
        g_autoptr(Policy) mongo = make_policy("mongodb.conf");
        g_autoptr(Policy) redis = make_auto("redis.conf", "never");
        g_autoptr(Policy) oracle = make_auto("oracle.conf", "madvise");
        Target t;

        set(mongo->knobs, KNOB_ENABLED, "always");
        ActivePolicy active[] = {
                { .policy = mongo, .unit = "mongod.service" },
                { .policy = oracle, .unit = "oracle.service" },
                { .policy = redis, .unit = "run-u12.service", .unisolated = true },
        };
        resolve_with(active, 3, &t);
        ck_assert(!active[2].per_service);
        /* never is now wanted machine-wide: nothing looser than madvise, oracle votes too. */
        ck_assert(!active[1].per_service);
        assert_value(&t, KNOB_ENABLED, "never");
        ck_assert_ptr_eq(t.source[KNOB_ENABLED].policy, redis);
}
END_TEST

/* With madvise a process still faults huge pages where it advises: only the enabled values
 * (global and per size) stand aside, defrag and khugepaged still count. A stopped policy holding
 * its pool (pool_only) is never met per service and votes no knob. */
START_TEST(test_auto_madvise_withdraws_only_enabled) {
        g_autoptr(Policy) mongo = make_policy("mongodb.conf");
        g_autoptr(Policy) oracle = make_auto("oracle.conf", "madvise");
        Knob mthp = KNOB_MTHP_FIRST + 8;
        Target t;

        set(mongo->knobs, KNOB_ENABLED, "always");
        set(oracle->knobs, KNOB_DEFRAG, "defer");
        set(oracle->knobs, mthp, "madvise");
        set(oracle->knobs, KNOB_KHUGEPAGED_PAGES_TO_SCAN, "512");
        ActivePolicy active[] = {
                { .policy = mongo, .unit = "mongod.service" },
                { .policy = oracle, .unit = "oracle.service" },
        };
        resolve_with(active, 2, &t);
        ck_assert(active[1].per_service);
        ck_assert(resolve_withdrawn(&active[1], KNOB_ENABLED));
        ck_assert(resolve_withdrawn(&active[1], mthp));
        ck_assert(!resolve_withdrawn(&active[1], KNOB_DEFRAG));
        assert_value(&t, KNOB_ENABLED, "always");
        assert_value(&t, mthp, "inherit");
        assert_value(&t, KNOB_DEFRAG, "defer");
        assert_value(&t, KNOB_KHUGEPAGED_PAGES_TO_SCAN, "512");

        active[1].pool_only = true;
        resolve_with(active, 2, &t);
        ck_assert(!active[1].per_service);
        assert_value(&t, KNOB_DEFRAG, "madvise");
}
END_TEST

/* A Scope=auto policy met per service with never: like the global shmem_enabled, its per-size
 * shmem votes stay (shared memory other processes fault in too); the 0/1 knobs go with the rest. */
START_TEST(test_auto_never_keeps_per_size_shmem) {
        g_autoptr(Policy) mongo = make_policy("mongodb.conf");
        g_autoptr(Policy) pg = make_auto("postgresql.conf", "never");
        const Knob k64 = KNOB_MTHP_SHMEM_FIRST + 3;
        Target t;

        set(mongo->knobs, KNOB_ENABLED, "always");
        set(mongo->knobs, k64, "always");
        set(mongo->knobs, KNOB_USE_ZERO_PAGE, "0");
        set(pg->knobs, k64, "never");
        set(pg->knobs, KNOB_USE_ZERO_PAGE, "1");
        ActivePolicy active[] = {
                { .policy = mongo, .unit = "mongod.service" },
                { .policy = pg, .unit = "postgresql.service" },
        };

        resolve_with(active, G_N_ELEMENTS(active), &t);
        ck_assert(active[1].per_service);
        ck_assert(!resolve_withdrawn(&active[1], k64));
        ck_assert(resolve_withdrawn(&active[1], KNOB_USE_ZERO_PAGE));
        ck_assert(resolve_withdrawn(&active[1], KNOB_SHRINK_UNDERUSED));
        assert_value(&t, k64, "never");
        ck_assert_ptr_eq(t.source[k64].policy, pg);
        assert_value(&t, KNOB_USE_ZERO_PAGE, "0");
        ck_assert_ptr_eq(t.source[KNOB_USE_ZERO_PAGE].policy, mongo);
}
END_TEST

/* --- Explanations: the votes resolve_votes() gives are those resolve() weighed --- */

/* Replays override > strictest(policies, mitigation; ties to the earlier) > baseline over the
 * votes alone, and checks that the vote it picks is the one marked winning, with the value and
 * source resolve() gave. */
static void assert_votes_agree(const ResolveInput *in, const Target *t) {
        FOREACH_KNOB(k) {
                g_autoptr(GArray) votes = resolve_votes(in, t, k);
                KnobValue global = k == KNOB_ENABLED ? KNOB_VALUE_UNSET : t->value[KNOB_ENABLED];
                const Vote *pick = NULL, *winning = NULL, *base = NULL, *override = NULL;

                for (guint i = 0; i < votes->len; i++) {
                        const Vote *v = &g_array_index(votes, Vote, i);

                        ck_assert_int_ne(v->value, KNOB_VALUE_UNSET);
                        if (v->winning) {
                                ck_assert_msg(!winning, "%s: two winning votes", knob_name(k));
                                winning = v;
                        }
                        switch (v->source.kind) {
                        case SOURCE_BASELINE:
                                base = v;
                                break;
                        case SOURCE_OVERRIDE:
                                override = v;
                                break;
                        case SOURCE_POLICY:
                        case SOURCE_MITIGATION:
                                if (!pick || knob_compare_strictness(k, v->value, pick->value, global) < 0)
                                        pick = v;
                                break;
                        default:
                                ck_abort_msg("%s: a vote from %s", knob_name(k), source_kind_to_string(v->source.kind));
                        }
                }
                if (override)
                        pick = override;
                else if (!pick)
                        pick = base;

                if (!pick) {
                        ck_assert_msg(!winning, "%s: a winning vote of none", knob_name(k));
                        ck_assert_int_eq(t->source[k].kind, SOURCE_NONE);
                        ck_assert_int_eq(t->value[k], KNOB_VALUE_UNSET);
                        continue;
                }
                ck_assert_msg(winning == pick, "%s: %s is marked winning, the rule picks %s", knob_name(k),
                              winning ? source_kind_to_string(winning->source.kind) : "none",
                              source_kind_to_string(pick->source.kind));
                ck_assert_int_eq(pick->value, t->value[k]);
                ck_assert_int_eq(pick->source.kind, t->source[k].kind);
                ck_assert_ptr_eq(pick->source.policy, t->source[k].policy);
                ck_assert_ptr_eq(pick->source.unit, t->source[k].unit);
        }
}

/* The votes on k, as "kind:policy=value" joined with spaces, winning marked with a '*'. */
static char *describe_votes(const ResolveInput *in, const Target *t, Knob k) {
        g_autoptr(GArray) votes = resolve_votes(in, t, k);
        GString *out = g_string_new(NULL);

        for (guint i = 0; i < votes->len; i++) {
                const Vote *v = &g_array_index(votes, Vote, i);
                char buf[24];

                g_string_append_printf(out, "%s%s%s%s=%s%s", i > 0 ? " " : "", source_kind_to_string(v->source.kind),
                                       v->source.policy ? ":" : "", v->source.policy ? v->source.policy->name : "",
                                       knob_value_to_string(k, v->value, buf), v->winning ? "*" : "");
        }
        return g_string_free(out, FALSE);
}

static void assert_votes(const ResolveInput *in, const Target *t, Knob k, const char *expected) {
        g_autofree char *got = describe_votes(in, t, k);

        ck_assert_str_eq(got, expected);
}

/* In the order Explain lists them; mitigation is offered but not counted under an override. */
START_TEST(test_votes_mitigation_and_override) {
        g_autoptr(Policy) redis = make_policy("redis.conf");
        g_autoptr(Policy) loose = make_policy("loose.conf");
        KnobValue mitigation[_KNOB_MAX], override[_KNOB_MAX];
        Target t;

        unset_all(mitigation);
        unset_all(override);
        set(redis->knobs, KNOB_DEFRAG, "never");
        set(loose->knobs, KNOB_DEFRAG, "always");
        set(loose->knobs, KNOB_ENABLED, "always");
        set(mitigation, KNOB_DEFRAG, "defer");
        set(mitigation, KNOB_KHUGEPAGED_DEFRAG, "0");
        set(mitigation, KNOB_ENABLED, "never");
        set(override, KNOB_ENABLED, "madvise");

        ActivePolicy active[] = {
                { .policy = loose, .unit = "loose.service" },
                { .policy = redis, .unit = "redis-server.service" },
        };
        ResolveInput in = {
                .baseline = baseline, .active = active, .n_active = ELEMENTSOF(active),
                .mitigation = mitigation, .override = override,
        };

        resolve(&in, &t);
        assert_votes(&in, &t, KNOB_DEFRAG, "baseline=madvise policy:loose.conf=always policy:redis.conf=never* mitigation=defer");
        assert_votes(&in, &t, KNOB_KHUGEPAGED_DEFRAG, "baseline=1 mitigation=0*");
        assert_votes(&in, &t, KNOB_ENABLED, "baseline=madvise policy:loose.conf=always mitigation=never override=madvise*");
        assert_votes(&in, &t, KNOB_SHMEM_ENABLED, "baseline=never*");
        /* Nobody votes and the kernel lacks it: nothing to explain. */
        assert_votes(&in, &t, KNOB_KHUGEPAGED_MAX_PTES_NONE, "");
        assert_votes_agree(&in, &t);

        /* The policy that wins carries its unit. */
        g_autoptr(GArray) votes = resolve_votes(&in, &t, KNOB_DEFRAG);
        ck_assert_str_eq(g_array_index(votes, Vote, 2).source.unit, "redis-server.service");
        ck_assert_str_eq(g_array_index(votes, Vote, 1).source.unit, "loose.service");
}
END_TEST

/* A Scope=auto policy met per service withdraws its votes from the explanation as from the value;
 * a Scope=service policy and one holding only its pool cast none. */
START_TEST(test_votes_withdrawn) {
        g_autoptr(Policy) mongo = make_policy("mongodb.conf");
        g_autoptr(Policy) redis = make_auto("redis.conf", "never");
        g_autoptr(Policy) oracle = make_auto("oracle.conf", "madvise");
        g_autoptr(Policy) held = make_policy("held.conf");
        g_autoptr(Policy) service = make_policy("service.conf");
        Knob mthp = KNOB_MTHP_FIRST + 8;
        Target t;

        set(mongo->knobs, KNOB_ENABLED, "always");
        set(redis->knobs, KNOB_DEFRAG, "never");
        set(redis->knobs, KNOB_SHMEM_ENABLED, "deny");
        set(redis->knobs, mthp, "never");
        set(oracle->knobs, KNOB_DEFRAG, "defer");
        set(oracle->knobs, mthp, "madvise");
        set(held->knobs, KNOB_DEFRAG, "never");
        service->scope = POLICY_SCOPE_SERVICE;
        ActivePolicy active[] = {
                { .policy = held, .pool_only = true },
                { .policy = mongo, .unit = "mongod.service" },
                { .policy = oracle, .unit = "oracle.service" },
                { .policy = redis, .unit = "redis-server.service" },
                { .policy = service, .unit = "svc.service" },
        };
        ResolveInput in = { .baseline = baseline, .active = active, .n_active = ELEMENTSOF(active) };

        resolve_per_service(active, ELEMENTSOF(active));
        ck_assert(active[2].per_service);
        ck_assert(active[3].per_service);
        resolve(&in, &t);
        assert_votes(&in, &t, KNOB_ENABLED, "baseline=madvise policy:mongodb.conf=always*");
        /* never withdraws defrag, madvise keeps it. */
        assert_votes(&in, &t, KNOB_DEFRAG, "baseline=madvise policy:oracle.conf=defer*");
        assert_votes(&in, &t, mthp, "baseline=inherit*");
        assert_votes(&in, &t, KNOB_SHMEM_ENABLED, "baseline=never policy:redis.conf=deny*");
        assert_votes_agree(&in, &t);

        /* Its unit found with THP: Redis votes machine-wide again, in both. */
        active[3].unisolated = true;
        resolve_per_service(active, ELEMENTSOF(active));
        resolve(&in, &t);
        /* And never is now wanted machine-wide: Oracle's madvise votes too. */
        assert_votes(&in, &t, KNOB_ENABLED,
                     "baseline=madvise policy:mongodb.conf=always policy:oracle.conf=madvise policy:redis.conf=never*");
        assert_votes(&in, &t, KNOB_DEFRAG,
                     "baseline=madvise policy:oracle.conf=defer policy:redis.conf=never*");
        assert_votes_agree(&in, &t);
}
END_TEST

static const char *const random_words[] = { "never", "madvise", "always", "inherit", "defer", "defer+madvise", "deny", "advise", "force" };

/* A random value k accepts, or UNSET about half the time. */
static KnobValue random_vote(GRand *rand, Knob k) {
        if (g_rand_boolean(rand))
                return KNOB_VALUE_UNSET;
        for (;;) {
                const KnobInfo *info = knob_info(k);
                KnobValue v;

                if (info->kind == KNOB_KIND_NUMBER)
                        return (KnobValue) g_rand_int_range(rand, (gint32) info->min, (gint32) MIN(info->max, 4096) + 1);
                if (knob_value_from_string(k, random_words[g_rand_int_range(rand, 0, ELEMENTSOF(random_words))], &v) >= 0)
                        return v;
        }
}

/* Random inputs of every kind the resolver takes: whatever they are, the explanation agrees with
 * the value. A fixed seed: the same inputs at every run. */
START_TEST(test_votes_agree_random) {
        static const Knob knobs[] = { KNOB_ENABLED, KNOB_DEFRAG, KNOB_SHMEM_ENABLED, KNOB_KHUGEPAGED_PAGES_TO_SCAN,
                                      KNOB_MTHP_FIRST + 4, KNOB_MTHP_FIRST + 8 };
        g_autoptr(GRand) rand = g_rand_new_with_seed(42);

        for (unsigned round = 0; round < 2000; round++) {
                Policy *policies[6];
                ActivePolicy active[ELEMENTSOF(policies)];
                KnobValue base[_KNOB_MAX], mitigation[_KNOB_MAX], override[_KNOB_MAX];
                size_t n = g_rand_int_range(rand, 0, ELEMENTSOF(policies) + 1);
                ResolveInput in;
                Target t;

                unset_all(base);
                unset_all(mitigation);
                unset_all(override);
                for (size_t i = 0; i < ELEMENTSOF(knobs); i++) {
                        Knob k = knobs[i];

                        base[k] = random_vote(rand, k);
                        if (g_rand_int_range(rand, 0, 4) == 0)
                                mitigation[k] = random_vote(rand, k);
                        if (g_rand_int_range(rand, 0, 8) == 0)
                                override[k] = random_vote(rand, k);
                }
                for (size_t i = 0; i < n; i++) {
                        g_autofree char *name = g_strdup_printf("p%zu.conf", i);
                        Policy *p = make_policy(name);

                        p->scope = (PolicyScope) g_rand_int_range(rand, 0, 3);
                        for (size_t j = 0; j < ELEMENTSOF(knobs); j++)
                                p->knobs[knobs[j]] = random_vote(rand, knobs[j]);
                        if (p->scope == POLICY_SCOPE_AUTO && p->knobs[KNOB_ENABLED] == KNOB_VALUE_UNSET)
                                set(p->knobs, KNOB_ENABLED, "never");
                        if (p->scope != POLICY_SCOPE_GLOBAL) {
                                p->service_thp = p->knobs[KNOB_ENABLED] == KNOB_ENABLED_NEVER ? KNOB_ENABLED_NEVER
                                                                                              : KNOB_ENABLED_MADVISE;
                                if (p->scope == POLICY_SCOPE_SERVICE)
                                        unset_all(p->knobs);
                        }
                        p->unset_knobs = 0;
                        FOREACH_KNOB(k)
                                if (p->knobs[k] == KNOB_VALUE_UNSET)
                                        p->unset_knobs |= UINT64_C(1) << k;
                        policies[i] = p;
                        active[i] = (ActivePolicy) {
                                .policy = p,
                                .unit = "u.service",
                                .pool_only = g_rand_int_range(rand, 0, 6) == 0,
                                .unisolated = g_rand_int_range(rand, 0, 4) == 0,
                        };
                }
                in = (ResolveInput) {
                        .baseline = base, .active = active, .n_active = n,
                        .mitigation = g_rand_boolean(rand) ? mitigation : NULL,
                        .override = g_rand_boolean(rand) ? override : NULL,
                };
                resolve_per_service(active, n);
                resolve(&in, &t);
                assert_votes_agree(&in, &t);
                for (size_t i = 0; i < n; i++)
                        policy_free(policies[i]);
        }
}
END_TEST

/* 7.2's khugepaged collapses to mTHP sizes and honours max_ptes_none only at 0 and 511. */
START_TEST(test_max_ptes_none_snaps_to_the_stricter_allowed_value) {
        static const struct {
                KnobValue voted, moved;
        } cases[] = { { 0, 0 }, { 1, 0 }, { 255, 0 }, { 510, 0 }, { 511, 511 } };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                ck_assert_int_eq(resolve_max_ptes_none(cases[i].voted, true), cases[i].moved);
                ck_assert_int_eq(resolve_max_ptes_none(cases[i].voted, false), cases[i].voted);
        }
        ck_assert_int_eq(resolve_max_ptes_none(KNOB_VALUE_UNSET, true), KNOB_VALUE_UNSET);
}
END_TEST

/* Two policies make 255 (strictest wins over 300 and 255) while one holds Enabled.64K=. */
static void resolve_255(const char *enabled_64k, const char *global, bool feature, Target *t) {
        g_autoptr(Policy) a = make_policy("a.conf");
        g_autoptr(Policy) b = make_policy("b.conf");
        KnobValue base[_KNOB_MAX];
        const Knob k64 = KNOB_MTHP_FIRST + 3, k2m = KNOB_MTHP_FIRST + 8;

        memcpy(base, baseline, sizeof base);
        set(base, KNOB_ENABLED, global);
        set(base, k64, "never");
        set(base, KNOB_KHUGEPAGED_MAX_PTES_NONE, "511");
        set(a->knobs, KNOB_KHUGEPAGED_MAX_PTES_NONE, "300");
        set(b->knobs, KNOB_KHUGEPAGED_MAX_PTES_NONE, "255");
        if (enabled_64k)
                set(a->knobs, k64, enabled_64k);

        ActivePolicy active[] = { { .policy = a, .unit = "a.service" }, { .policy = b, .unit = "b.service" } };
        ResolveInput in = {
                .baseline = base,
                .active = active,
                .n_active = ELEMENTSOF(active),
                .mthp_collapse = feature,
                .pmd_knob = k2m,
        };

        resolve(&in, t);
        /* The winning vote stays b's: Explain shows it, and says why the value moved. */
        ck_assert_ptr_eq(t->source[KNOB_KHUGEPAGED_MAX_PTES_NONE].policy, b);
}

START_TEST(test_max_ptes_none_moves_only_while_mthp_collapse_applies) {
        Target t;

        /* The feature and a non-PMD size on: 0, and what the votes chose is kept. */
        resolve_255("always", "madvise", true, &t);
        assert_value(&t, KNOB_KHUGEPAGED_MAX_PTES_NONE, "0");
        ck_assert_int_eq(t.max_ptes_none_voted, 255);
        resolve_255("madvise", "never", true, &t);
        assert_value(&t, KNOB_KHUGEPAGED_MAX_PTES_NONE, "0");
        /* inherit follows the global enabled. */
        resolve_255("inherit", "madvise", true, &t);
        assert_value(&t, KNOB_KHUGEPAGED_MAX_PTES_NONE, "0");
        resolve_255("inherit", "never", true, &t);
        assert_value(&t, KNOB_KHUGEPAGED_MAX_PTES_NONE, "255");
        ck_assert_int_eq(t.max_ptes_none_voted, KNOB_VALUE_UNSET);
        /* Without the feature, or with every non-PMD size never (2M inherits always here). */
        resolve_255("always", "madvise", false, &t);
        assert_value(&t, KNOB_KHUGEPAGED_MAX_PTES_NONE, "255");
        ck_assert_int_eq(t.max_ptes_none_voted, KNOB_VALUE_UNSET);
        resolve_255(NULL, "always", true, &t);
        assert_value(&t, KNOB_KHUGEPAGED_MAX_PTES_NONE, "255");
        resolve_255("never", "always", true, &t);
        assert_value(&t, KNOB_KHUGEPAGED_MAX_PTES_NONE, "255");
}
END_TEST

/* A size this kernel lacks cannot be on; the baseline's own value is the admin's, left alone. */
START_TEST(test_max_ptes_none_absent_size_and_baseline) {
        g_autoptr(Policy) p = make_policy("p.conf");
        KnobValue base[_KNOB_MAX];
        bool present[_KNOB_MAX] = {};
        const Knob k64 = KNOB_MTHP_FIRST + 3, k2m = KNOB_MTHP_FIRST + 8;
        Target t;

        memcpy(base, baseline, sizeof base);
        set(base, KNOB_KHUGEPAGED_MAX_PTES_NONE, "100");
        set(p->knobs, k64, "always");
        present[k2m] = present[KNOB_ENABLED] = present[KNOB_KHUGEPAGED_MAX_PTES_NONE] = true;

        ActivePolicy active[] = { { .policy = p, .unit = "p.service" } };
        ResolveInput in = {
                .baseline = base,
                .active = active,
                .n_active = 1,
                .mthp_collapse = true,
                .pmd_knob = k2m,
                .present = present,
        };

        resolve(&in, &t);
        ck_assert_int_eq(resolve_mthp_collapse_size(&in, t.value), _KNOB_INVALID);
        in.present = NULL;
        ck_assert_int_eq(resolve_mthp_collapse_size(&in, t.value), k64);
        resolve(&in, &t);
        assert_value(&t, KNOB_KHUGEPAGED_MAX_PTES_NONE, "100");
        ck_assert_int_eq(t.source[KNOB_KHUGEPAGED_MAX_PTES_NONE].kind, SOURCE_BASELINE);
        ck_assert_int_eq(t.max_ptes_none_voted, KNOB_VALUE_UNSET);
}
END_TEST

/* Scope=service with Enabled=always (as the parser builds it: its votes kept) votes whatever
 * happens, as a global policy: Redis (auto, never) beside it is met per service, and a global
 * never (PostgreSQL) still wins. */
START_TEST(test_service_always_votes_like_global) {
        g_autoptr(Policy) mongo = make_policy("mongodb.conf");
        g_autoptr(Policy) redis = make_auto("redis.conf", "never");
        g_autoptr(Policy) pg = make_policy("postgresql.conf");
        Target t;

        mongo->scope = POLICY_SCOPE_SERVICE;
        set(mongo->knobs, KNOB_ENABLED, "always");
        set(mongo->knobs, KNOB_DEFRAG, "defer+madvise");
        mongo->service_thp = mongo->knobs[KNOB_ENABLED];
        ck_assert(policy_inverts(mongo));
        set(redis->knobs, KNOB_DEFRAG, "never");
        set(pg->knobs, KNOB_ENABLED, "never");

        ActivePolicy alone[] = { { .policy = mongo, .unit = "mongod.service" } };
        resolve_with(alone, ELEMENTSOF(alone), &t);
        assert_value(&t, KNOB_ENABLED, "always");
        ck_assert_ptr_eq(t.source[KNOB_ENABLED].policy, mongo);
        assert_value(&t, KNOB_DEFRAG, "defer+madvise");
        ck_assert(!alone[0].per_service);

        ActivePolicy with_redis[] = {
                { .policy = mongo, .unit = "mongod.service" },
                { .policy = redis, .unit = "redis-server.service" },
        };
        resolve_with(with_redis, ELEMENTSOF(with_redis), &t);
        assert_value(&t, KNOB_ENABLED, "always");
        assert_value(&t, KNOB_DEFRAG, "defer+madvise");
        ck_assert(with_redis[1].per_service);

        ActivePolicy with_pg[] = {
                { .policy = mongo, .unit = "mongod.service" },
                { .policy = pg, .unit = "postgresql@17-main.service" },
                { .policy = redis, .unit = "redis-server.service" },
        };
        resolve_with(with_pg, ELEMENTSOF(with_pg), &t);
        assert_value(&t, KNOB_ENABLED, "never");
        ck_assert_ptr_eq(t.source[KNOB_ENABLED].policy, pg);
        ck_assert(!with_pg[2].per_service);
}
END_TEST

int main(void) {
        return test_run_suite(TEST_SUITE("resolve", "core", setup_baseline, NULL,
                                         test_no_policy_gives_baseline,
                                         test_strictest_wins_per_knob,
                                         test_service_scope_does_not_vote,
                                         test_looser_policy_alone_wins_over_baseline,
                                         test_mitigation_and_override,
                                         test_inherit_uses_resolved_global,
                                         test_shmem_inherit_uses_resolved_global_shmem,
                                         test_flags_strictest_wins,
                                         test_pools_summed_per_size_and_node,
                                         test_pool_only_policy_does_not_vote_knobs,
                                         test_pool_sum_saturates,
                                         test_too_many_pools_is_reported,
                                         test_auto_met_per_service_next_to_a_looser_policy,
                                         test_service_always_votes_like_global,
                                         test_auto_votes_machine_wide_when_nobody_wants_more,
                                         test_two_auto_policies,
                                         test_auto_with_an_unisolated_unit_votes,
                                         test_auto_madvise_withdraws_only_enabled,
                                         test_auto_never_keeps_per_size_shmem,
                                         test_votes_mitigation_and_override,
                                         test_votes_withdrawn,
                                         test_votes_agree_random,
                                         test_max_ptes_none_snaps_to_the_stricter_allowed_value,
                                         test_max_ptes_none_moves_only_while_mthp_collapse_applies,
                                         test_max_ptes_none_absent_size_and_baseline));
}
