/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "candidates.h"
#include "plan.h"
#include "test-util.h"
#include "unit-record.h"
#include "util.h"

/* The changes-only selection (candidates.h) must plan exactly as a full pass over every unit and
 * policy. Random sequences of unit starts, stops, restarts, units turning wanted or not, time
 * passing, rescans, isolation answers and policy reloads drive two daemons' worth of state: one
 * selects as the daemon does, from the units noted since the last apply; the other, fed the same
 * history, looks at everything every time. In half the sequences the first applies before the
 * unit list is in, and the first side applies only when the daemon would: after a change that
 * candidate_state_change_matters() says matters, a rescan, a reload, the grace timer or an
 * isolation answer. Whenever both applied, their plans and states must agree, and each side's
 * unit record (its first snapshot, then every change appended, as the daemon persists it)
 * must read back as the units and hints it holds.
 *
 * THPD_PROPERTY_SEQUENCES sets how many sequences run (500 by default), THPD_PROPERTY_SEED the
 * first one's seed (sequence i has seed + i): a failure prints its seed and the events that led
 * to it, and THPD_PROPERTY_SEQUENCES=1 THPD_PROPERTY_SEED=that replays it. */

#define DEFAULT_SEQUENCES 500
#define DEFAULT_SEED UINT64_C(20250101)
#define MIN_STEPS 20
#define MAX_STEPS 60
#define STEP_USEC (10 * USEC_PER_SEC)
#define POOL_GRACE (25 * USEC_PER_SEC)

/* Overlapping names and globs: plain names, template instances, a '?' and '[' glob. */
static const char *const unit_names[] = {
        "a1.service", "a2.service", "ab.service", "b@x.service", "b@y.service",
        "c.service",  "cd.service", "z.service",  "db@15.service",
};
static const char *const patterns[] = {
        "a*.service", "a1.service", "ab*",          "b@.service", "*.service", "c*.service",
        "cd.service", "?2.service", "[bz]*.service", "db@.service", "nothing.service",
};
static const char *const enabled_values[] = { "never", "madvise", "always" };
static const char *const defrag_values[] = { "never", "defer", "madvise" };

/* xorshift64*: the same sequence from a seed on every machine and GLib. */
static uint64_t rng_next(uint64_t *s) {
        *s ^= *s >> 12;
        *s ^= *s << 25;
        *s ^= *s >> 27;
        return *s * UINT64_C(2685821657736338717);
}

static unsigned rng_below(uint64_t *s, unsigned n) {
        return (unsigned) ((rng_next(s) >> 33) % n);
}

static bool rng_chance(uint64_t *s, unsigned percent) {
        return rng_below(s, 100) < percent;
}

static KnobValue value(Knob k, const char *word) {
        KnobValue v;

        ck_assert_int_eq(knob_value_from_string(k, word, &v), 0);
        return v;
}

/* ---- the world both sides observe ---- */

typedef struct FakeUnit {
        char *name;
        bool wanted, running;
        unsigned stops;
} FakeUnit;

static void fake_unit_free(gpointer p) {
        FakeUnit *u = p;

        g_free(u->name);
        g_free(u);
}

typedef struct World {
        uint64_t rng;
        GHashTable *units;      /* name -> FakeUnit*: the tracker's table */
        GPtrArray *policies;    /* Policy*, by name */
        GPtrArray *old;         /* the policies a reload replaced, until both sides planned again */
        GHashTable *isolation;  /* unit -> Isolation* */
        uint64_t now;
        bool units_known;       /* the tracker listed the units */
        unsigned next_policy;   /* for new policy names */
        GString *log;           /* the events so far, printed with a failure */
} World;

static bool world_lookup(void *userdata, const char *name, CandidateUnit *ret) {
        const FakeUnit *u = g_hash_table_lookup(userdata, name);

        if (!u)
                return false;
        *ret = (CandidateUnit) { .name = u->name, .wanted = u->wanted, .running = u->running, .stops = u->stops };
        return true;
}

static void world_foreach(void *userdata, CandidateUnitFunc each, void *data) {
        GHashTableIter iter;
        const FakeUnit *u;

        g_hash_table_iter_init(&iter, userdata);
        while (g_hash_table_iter_next(&iter, NULL, (gpointer *) &u)) {
                CandidateUnit c = { .name = u->name, .wanted = u->wanted, .running = u->running, .stops = u->stops };

                each(&c, data);
        }
}

static size_t world_size(void *userdata) {
        return g_hash_table_size(userdata);
}

static Policy *random_policy(World *w, const char *name) {
        Policy *p = g_new0(Policy, 1);
        unsigned n = 1 + rng_below(&w->rng, 2), scope = rng_below(&w->rng, 10);

        p->name = g_strdup(name);
        p->path = g_strconcat("/etc/thpd/policy.d/", name, NULL);
        p->units = g_new0(char *, n + 1);
        for (unsigned i = 0; i < n; i++)
                p->units[i] = g_strdup(patterns[rng_below(&w->rng, G_N_ELEMENTS(patterns))]);
        FOREACH_KNOB(k)
                p->knobs[k] = KNOB_VALUE_UNSET;
        p->service_thp = KNOB_VALUE_UNSET;
        p->scope = scope < 6 ? POLICY_SCOPE_GLOBAL : scope < 8 ? POLICY_SCOPE_SERVICE : POLICY_SCOPE_AUTO;
        if (p->scope == POLICY_SCOPE_GLOBAL) {
                p->knobs[KNOB_ENABLED] = value(KNOB_ENABLED, enabled_values[rng_below(&w->rng, 3)]);
                if (rng_chance(&w->rng, 40))
                        p->knobs[KNOB_DEFRAG] = value(KNOB_DEFRAG, defrag_values[rng_below(&w->rng, 3)]);
        } else {
                /* What its services get: never or madvise. Scope=auto votes it machine-wide too. */
                p->service_thp = value(KNOB_ENABLED, enabled_values[rng_below(&w->rng, 2)]);
                if (p->scope == POLICY_SCOPE_AUTO) {
                        p->knobs[KNOB_ENABLED] = p->service_thp;
                        if (rng_chance(&w->rng, 40))
                                p->knobs[KNOB_DEFRAG] = value(KNOB_DEFRAG, defrag_values[rng_below(&w->rng, 3)]);
                }
        }
        if (rng_chance(&w->rng, 30)) {
                p->has_pool = true;
                p->pool = (PoolRequest) {
                        .page_size_kb = rng_chance(&w->rng, 80) ? 2048 : 1048576,
                        .node = POOL_NODE_ANY,
                        .pages = 1 + rng_below(&w->rng, 64),
                };
        }
        return p;
}

static Policy *policy_copy(const Policy *from, const char *name) {
        Policy *p = g_new0(Policy, 1);

        *p = *from;
        p->name = g_strdup(name ?: from->name);
        p->path = g_strconcat("/etc/thpd/policy.d/", p->name, NULL);
        p->description = NULL;
        p->units = g_strdupv(from->units);
        return p;
}

static gint compare_policy_names(gconstpointer a, gconstpointer b) {
        return strcmp((*(const Policy *const *) a)->name, (*(const Policy *const *) b)->name);
}

static GPtrArray *random_policies(World *w) {
        GPtrArray *policies = g_ptr_array_new_with_free_func(policy_free_void);
        unsigned n = 2 + rng_below(&w->rng, 5);

        for (unsigned i = 0; i < n; i++) {
                g_autofree char *name = g_strdup_printf("p%u.conf", w->next_policy++);

                g_ptr_array_add(policies, random_policy(w, name));
        }
        g_ptr_array_sort(policies, compare_policy_names);
        return policies;
}

/* A reload: every policy a new object, as the daemon loads them, and some edited. */
static GPtrArray *reload_policies(World *w) {
        GPtrArray *policies = g_ptr_array_new_with_free_func(policy_free_void);
        unsigned edits = rng_below(&w->rng, 3);

        for (guint i = 0; i < w->policies->len; i++)
                g_ptr_array_add(policies, policy_copy(g_ptr_array_index(w->policies, i), NULL));
        for (unsigned e = 0; e < edits; e++) {
                unsigned what = rng_below(&w->rng, 5), i = policies->len ? rng_below(&w->rng, policies->len) : 0;
                g_autofree char *name = g_strdup_printf("p%u.conf", w->next_policy++);
                Policy *p;

                if (policies->len == 0)
                        what = 0;
                switch (what) {
                case 0: /* added */
                        g_ptr_array_add(policies, random_policy(w, name));
                        g_string_append_printf(w->log, " +%s", name);
                        break;
                case 1: /* removed */
                        g_string_append_printf(w->log, " -%s", ((Policy *) g_ptr_array_index(policies, i))->name);
                        g_ptr_array_remove_index(policies, i);
                        break;
                case 2: /* renamed, same content */
                        p = policy_copy(g_ptr_array_index(policies, i), name);
                        g_string_append_printf(w->log, " %s->%s", ((Policy *) g_ptr_array_index(policies, i))->name,
                                               name);
                        g_ptr_array_remove_index(policies, i);
                        g_ptr_array_add(policies, p);
                        break;
                case 3: /* Units= changed */
                        p = g_ptr_array_index(policies, i);
                        g_strfreev(p->units);
                        p->units = g_strsplit(patterns[rng_below(&w->rng, G_N_ELEMENTS(patterns))], ",", -1);
                        g_string_append_printf(w->log, " %s:Units=%s", p->name, p->units[0]);
                        break;
                default: /* everything else redrawn under the same name */
                        p = g_ptr_array_index(policies, i);
                        g_ptr_array_index(policies, i) = random_policy(w, p->name);
                        g_string_append_printf(w->log, " %s:edited", p->name);
                        policy_free(p);
                        break;
                }
        }
        g_ptr_array_sort(policies, compare_policy_names);
        return policies;
}

/* ---- one daemon's worth of state ---- */

typedef struct Side {
        bool full; /* a full pass at every apply */
        CandidateState candidates;
        PlanState plan_state;
        Target target;
        Plan plan;
        bool changes_only;
        bool pending;             /* an apply is queued (only the changes-only side skips any) */
        bool present[_KNOB_MAX], owned[_KNOB_MAX];
        KnobValue current[_KNOB_MAX], recorded[_KNOB_MAX], unset[_KNOB_MAX];
        GString *unit_record;     /* the record file's text, once the unit list is in */
} Side;

static void side_init(Side *s, const World *w, bool full) {
        *s = (Side) { .full = full };
        candidate_state_init(&s->candidates, w->policies);
        plan_state_init(&s->plan_state);
        FOREACH_KNOB(k) {
                s->current[k] = s->recorded[k] = s->unset[k] = KNOB_VALUE_UNSET;
                s->present[k] = false;
        }
        s->present[KNOB_ENABLED] = s->present[KNOB_DEFRAG] = true;
        s->current[KNOB_ENABLED] = s->recorded[KNOB_ENABLED] = value(KNOB_ENABLED, "madvise");
        s->current[KNOB_DEFRAG] = s->recorded[KNOB_DEFRAG] = value(KNOB_DEFRAG, "madvise");
}

static void side_done(Side *s) {
        if (s->unit_record)
                g_string_free(s->unit_record, true);
        plan_done(&s->plan);
        plan_state_done(&s->plan_state);
        candidate_state_done(&s->candidates);
}

/* What the daemon's load_policies() does. */
static void side_reload(Side *s, GPtrArray *policies) {
        candidate_state_set_policies(&s->candidates, policies);
        plan_state_forget_policies(&s->plan_state, policies);
}

/* What manager_apply() does, every write succeeding. */
static void side_apply(Side *s, World *w) {
        CandidateUnits units = {
                .lookup = world_lookup,
                .foreach = world_foreach,
                .size = world_size,
                .userdata = w->units,
        };
        _cleanup_(candidates_done) Candidates c = {};

        if (s->full)
                candidate_state_note_changed(&s->candidates, NULL);
        candidates_select(&s->candidates, &s->plan_state, &units, w->units_known, &c);
        plan_done(&s->plan);
        plan(&s->plan_state, &(PlanInput) {
                        .candidates = (const PlanCandidate *) c.candidates->data,
                        .n_candidates = c.candidates->len,
                        .changes_only = c.changes_only,
                        .released = (const char *const *) c.released->pdata,
                        .n_released = c.released->len,
                        .isolation = w->isolation,
                        .units_known = w->units_known,
                        .now_usec = w->now,
                        .pool_grace_usec = POOL_GRACE,
                        .present = s->present,
                        .current = s->current,
                        .owned = s->owned,
                        .recorded = s->recorded,
                        .pinned = s->unset,
                        .mitigation = s->unset,
                        .override = s->unset,
                }, &s->target, &s->plan);
        candidates_commit(&s->candidates, &c, &s->plan, w->units_known);
        FOREACH_KNOB(k)
                (void) plan_knob_commit(&s->plan.knobs[k], &s->current[k], &s->owned[k], &s->recorded[k]);
        s->changes_only = c.changes_only;
        s->pending = false;

        /* What the daemon's persist step writes: a snapshot first, then only the changes. */
        if (!w->units_known)
                return;
        if (!s->unit_record) {
                g_autofree char *text = unit_record_format(s->plan_state.seen_sorted, s->plan_state.needs_restart);

                s->unit_record = g_string_new(text);
        } else
                g_string_append(s->unit_record, s->plan_state.record_journal->str);
        g_string_truncate(s->plan_state.record_journal, 0);
}

/* ---- comparing the two ---- */

static char *compare_string_sets(const char *what, GHashTable *a, GHashTable *b, bool values) {
        GHashTableIter iter;
        gpointer key, v;

        if (g_hash_table_size(a) != g_hash_table_size(b))
                return g_strdup_printf("%s: %u entries, full pass %u", what, g_hash_table_size(a), g_hash_table_size(b));
        g_hash_table_iter_init(&iter, a);
        while (g_hash_table_iter_next(&iter, &key, &v)) {
                gpointer w;

                if (!g_hash_table_lookup_extended(b, key, NULL, &w))
                        return g_strdup_printf("%s: %s only in the changes-only pass", what, (const char *) key);
                if (values && (v == w || (v && w && streq(v, w))) == false)
                        return g_strdup_printf("%s: %s differs", what, (const char *) key);
        }
        return NULL;
}

/* The side's unit record read back must give its wanted units (those without a hint as
 * started) and its restart hints. */
static char *compare_unit_record(const Side *s) {
        g_autoptr(GHashTable) started = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        g_autoptr(GHashTable) hints = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        g_autoptr(GHashTable) expected = g_hash_table_new(g_str_hash, g_str_equal);
        GHashTableIter iter;
        gpointer key;
        char *d;

        if (!s->unit_record)
                return NULL;
        if (unit_record_parse(s->unit_record->str, started, hints) < 0)
                return g_strdup_printf("the unit record does not parse:\n%s", s->unit_record->str);
        g_hash_table_iter_init(&iter, s->plan_state.seen_wanted);
        while (g_hash_table_iter_next(&iter, &key, NULL))
                if (!g_hash_table_contains(s->plan_state.needs_restart, key))
                        g_hash_table_add(expected, key);
        if ((d = compare_string_sets("unit record, started units (record vs state)", started, expected, false)))
                return d;
        return compare_string_sets("unit record, restart hints (record vs state)", hints, s->plan_state.needs_restart,
                                   true);
}

static gint compare_requests(gconstpointer a, gconstpointer b) {
        const IsolationRequest *x = a, *y = b;
        int r = strcmp(x->unit, y->unit);

        if (r != 0)
                return r;
        r = strcmp(x->policy->name, y->policy->name);
        return r != 0 ? r : (x->stops > y->stops) - (x->stops < y->stops);
}

static GArray *sorted_requests(const Plan *p) {
        GArray *a = g_array_sized_new(FALSE, FALSE, sizeof(IsolationRequest), p->isolation_checks->len);

        g_array_append_vals(a, p->isolation_checks->data, p->isolation_checks->len);
        g_array_sort(a, compare_requests);
        return a;
}

/* The first difference between the changes-only side a and the full pass b; NULL when none. */
static char *compare_sides(const Side *a, const Side *b) {
        const Plan *x = &a->plan, *y = &b->plan;
        g_autoptr(GArray) rx = NULL, ry = NULL;
        GHashTableIter iter;
        gpointer key;
        char *d;

        if (x->active->len != y->active->len)
                return g_strdup_printf("%u active policies, full pass %u", x->active->len, y->active->len);
        for (guint i = 0; i < x->active->len; i++) {
                const ActivePolicy *p = &g_array_index(x->active, ActivePolicy, i);
                const ActivePolicy *q = &g_array_index(y->active, ActivePolicy, i);
                const PolicyRuntime *rp, *rq;

                if (p->policy != q->policy)
                        return g_strdup_printf("active policy %u: %s, full pass %s", i, p->policy->name, q->policy->name);
                if (!streq_ptr(p->unit, q->unit) || p->pool_only != q->pool_only || p->unisolated != q->unisolated ||
                    p->per_service != q->per_service)
                        return g_strdup_printf("%s: unit %s pool_only %d unisolated %d per_service %d, full pass %s %d %d %d",
                                               p->policy->name, p->unit ?: "-", p->pool_only, p->unisolated,
                                               p->per_service, q->unit ?: "-", q->pool_only, q->unisolated,
                                               q->per_service);
                rp = g_hash_table_lookup(a->plan_state.policy_runtime, p->policy->name);
                rq = g_hash_table_lookup(b->plan_state.policy_runtime, q->policy->name);
                if (!rp || !rq || rp->units->len != rq->units->len || rp->active != rq->active ||
                    rp->pool_grace_until != rq->pool_grace_until)
                        return g_strdup_printf("%s: runtime differs", p->policy->name);
                for (guint u = 0; u < rp->units->len; u++)
                        if (!streq(g_ptr_array_index(rp->units, u), g_ptr_array_index(rq->units, u)))
                                return g_strdup_printf("%s: unit %u differs", p->policy->name, u);
        }
        FOREACH_KNOB(k) {
                const KnobStep *s = &x->knobs[k], *t = &y->knobs[k];

                if (s->action != t->action || s->current != t->current || s->target != t->target || s->owned != t->owned)
                        return g_strdup_printf("%s: step %d %ld->%ld owned %d, full pass %d %ld->%ld owned %d",
                                               knob_name(k), s->action, (long) s->current, (long) s->target, s->owned,
                                               t->action, (long) t->current, (long) t->target, t->owned);
                if (a->target.source[k].kind != b->target.source[k].kind ||
                    a->target.source[k].policy != b->target.source[k].policy ||
                    !streq_ptr(a->target.source[k].unit, b->target.source[k].unit))
                        return g_strdup_printf("%s: source differs", knob_name(k));
        }
        if (a->target.n_pools != b->target.n_pools)
                return g_strdup_printf("%zu pools, full pass %zu", a->target.n_pools, b->target.n_pools);
        for (size_t i = 0; i < a->target.n_pools; i++)
                if (memcmp(&a->target.pools[i], &b->target.pools[i], sizeof(PoolTarget)) != 0)
                        return g_strdup_printf("pool %zu differs", i);
        if (x->next_grace_usec != y->next_grace_usec)
                return g_strdup_printf("next grace %" PRIu64 ", full pass %" PRIu64, x->next_grace_usec, y->next_grace_usec);

        rx = sorted_requests(x);
        ry = sorted_requests(y);
        if (rx->len != ry->len)
                return g_strdup_printf("%u isolation checks, full pass %u", rx->len, ry->len);
        for (guint i = 0; i < rx->len; i++)
                if (compare_requests(&g_array_index(rx, IsolationRequest, i), &g_array_index(ry, IsolationRequest, i)) != 0)
                        return g_strdup_printf("isolation check of %s differs", g_array_index(rx, IsolationRequest, i).unit);

        if ((d = compare_string_sets("restart hints", a->plan_state.needs_restart, b->plan_state.needs_restart, true)))
                return d;
        if ((d = compare_string_sets("wanted units", a->plan_state.seen_wanted, b->plan_state.seen_wanted, false)))
                return d;
        g_hash_table_iter_init(&iter, a->plan_state.seen_wanted);
        while (g_hash_table_iter_next(&iter, &key, NULL))
                if (g_hash_table_lookup(a->plan_state.seen_wanted, key) != g_hash_table_lookup(b->plan_state.seen_wanted, key))
                        return g_strdup_printf("wanted units: %s's stop count differs", (const char *) key);
        if (a->plan_state.seen_sorted->len != b->plan_state.seen_sorted->len)
                return g_strdup("sorted wanted units differ in length");
        for (guint i = 0; i < a->plan_state.seen_sorted->len; i++)
                if (!streq(g_ptr_array_index(a->plan_state.seen_sorted, i), g_ptr_array_index(b->plan_state.seen_sorted, i)))
                        return g_strdup_printf("sorted wanted unit %u differs", i);

        if (g_hash_table_size(a->plan_state.live_policies) != g_hash_table_size(b->plan_state.live_policies))
                return g_strdup_printf("%u live policies, full pass %u", g_hash_table_size(a->plan_state.live_policies),
                                       g_hash_table_size(b->plan_state.live_policies));
        g_hash_table_iter_init(&iter, a->plan_state.live_policies);
        while (g_hash_table_iter_next(&iter, &key, NULL))
                if (!g_hash_table_contains(b->plan_state.live_policies, key))
                        return g_strdup_printf("live policy %s only in the changes-only pass", ((const Policy *) key)->name);
        if (a->plan_state.n_active != b->plan_state.n_active)
                return g_strdup_printf("%u active, full pass %u", a->plan_state.n_active, b->plan_state.n_active);

        /* What publishing and persisting skip on. */
        if (x->runtime_changed != y->runtime_changed || x->restart_hints_changed != y->restart_hints_changed ||
            x->wanted_units_changed != y->wanted_units_changed)
                return g_strdup_printf("changed flags %d%d%d, full pass %d%d%d", x->runtime_changed,
                                       x->restart_hints_changed, x->wanted_units_changed, y->runtime_changed,
                                       y->restart_hints_changed, y->wanted_units_changed);
        return NULL;
}

/* ---- the events ---- */

static FakeUnit *world_unit(World *w, const char *name) {
        FakeUnit *u = g_hash_table_lookup(w->units, name);

        if (!u) {
                u = g_new0(FakeUnit, 1);
                u->name = g_strdup(name);
                g_hash_table_insert(w->units, u->name, u);
        }
        return u;
}

static bool unit_view(const FakeUnit *u, CandidateUnit *ret) {
        if (!u)
                return false;
        *ret = (CandidateUnit) { .name = u->name, .wanted = u->wanted, .running = u->running, .stops = u->stops };
        return true;
}

/* What on_units_changed() does, once the tracker has the unit list: the unit is noted, and an
 * apply queued if the change matters. */
static void note(World *w, Side *sides, const char *unit, const CandidateUnit *before) {
        const FakeUnit *u = g_hash_table_lookup(w->units, unit);
        CandidateUnit now;

        if (!w->units_known)
                return;
        for (unsigned i = 0; i < 2; i++)
                candidate_state_note_changed(&sides[i].candidates, unit);
        if (candidate_state_change_matters(&sides[0].candidates, &sides[0].plan_state, unit, before,
                                           unit_view(u, &now) ? &now : NULL))
                sides[0].pending = true;
}

/* One event, noted as the tracker tells the daemon. A reload's old policies stay until both
 * sides planned again: their last plans point into them. */
static void random_event(World *w, Side *sides) {
        const char *name = unit_names[rng_below(&w->rng, G_N_ELEMENTS(unit_names))];
        FakeUnit *u = g_hash_table_lookup(w->units, name);
        unsigned what = rng_below(&w->rng, 100);
        CandidateUnit before_buf, *before = unit_view(u, &before_buf) ? &before_buf : NULL;

        if (what < 25) {
                /* A start job: wanted, not running yet. */
                u = world_unit(w, name);
                if (u->wanted)
                        return;
                u->wanted = true;
                u->running = false;
                g_string_append_printf(w->log, " start:%s", name);
        } else if (what < 45) {
                /* The start job ended. */
                if (!u || !u->wanted || u->running)
                        return;
                u->running = true;
                g_string_append_printf(w->log, " running:%s", name);
        } else if (what < 60) {
                if (!u || !u->wanted)
                        return;
                u->wanted = u->running = false;
                u->stops++;
                g_string_append_printf(w->log, " stop:%s", name);
                /* The tracker may forget a stopped unit. */
                if (rng_chance(&w->rng, 50)) {
                        g_string_append(w->log, "(gone)");
                        g_hash_table_remove(w->units, name);
                        note(w, sides, name, before);
                        return;
                }
        } else if (what < 70) {
                if (!u || !u->wanted)
                        return;
                u->stops++;
                u->running = rng_chance(&w->rng, 50);
                g_string_append_printf(w->log, " restart:%s%s", name, u->running ? "(running)" : "");
        } else if (what < 78) {
                /* Exited, or back: wanted changes, the stop count does not. */
                u = world_unit(w, name);
                u->wanted = !u->wanted;
                u->running = u->wanted && rng_chance(&w->rng, 50);
                g_string_append_printf(w->log, " %s:%s", u->wanted ? "wanted" : "unwanted", name);
        } else if (what < 86) {
                w->now += STEP_USEC * (1 + rng_below(&w->rng, 3));
                g_string_append(w->log, " time");
                /* The grace timer, if one ended. */
                sides[0].pending = true;
                return;
        } else if (what < 90) {
                /* The unit list again (a rescan): the changes-only side looks at everything. */
                if (!w->units_known)
                        return;
                candidate_state_note_changed(&sides[0].candidates, NULL);
                sides[0].pending = true;
                g_string_append(w->log, " rescan");
                return;
        } else {
                GPtrArray *policies = reload_policies(w);

                g_string_append(w->log, " reload");
                for (unsigned i = 0; i < 2; i++)
                        side_reload(&sides[i], policies);
                if (w->old)
                        g_ptr_array_unref(w->old);
                w->old = w->policies;
                w->policies = policies;
                sides[0].pending = true;
                return;
        }
        note(w, sides, name, before);
}

/* What manager-isolation.c finds, some of it later: the same answers for both sides. */
static void answer_isolation(World *w, const Plan *p, Side *changes_side) {
        static const IsolationState states[] = { ISOLATION_CHECKING, ISOLATION_ISOLATED, ISOLATION_NOT_ISOLATED };

        for (guint i = 0; i < p->isolation_checks->len; i++) {
                const IsolationRequest *r = &g_array_index(p->isolation_checks, IsolationRequest, i);
                Isolation *iso;

                if (!rng_chance(&w->rng, 60))
                        continue;
                iso = g_new0(Isolation, 1);
                *iso = (Isolation) {
                        .unit = g_strdup(r->unit),
                        .policy = g_strdup(r->policy->name),
                        .mode = r->policy->service_thp,
                        .scope = r->policy->scope,
                        .stops = r->stops,
                        .state = states[rng_below(&w->rng, G_N_ELEMENTS(states))],
                };
                g_string_append_printf(w->log, " isolation:%s=%s", iso->unit, isolation_state_to_string(iso->state));
                g_hash_table_replace(w->isolation, iso->unit, iso);
                changes_side->pending = true;
        }
}

/* manager-isolation.c forgets the units no longer wanted after each apply: a unit the tracker
 * forgot and saw again counts its stops afresh, and must not find its old answer. */
static void prune_isolation(World *w, const PlanState *s) {
        GHashTableIter iter;
        const char *unit;

        g_hash_table_iter_init(&iter, w->isolation);
        while (g_hash_table_iter_next(&iter, (gpointer *) &unit, NULL))
                if (!g_hash_table_contains(s->seen_wanted, unit))
                        g_hash_table_iter_remove(&iter);
}

typedef struct Totals {
        unsigned sequences, steps, applies, changes_only, skipped, differences;
} Totals;

/* Runs one sequence; returns false at its first difference, after printing it. */
static bool run_sequence(uint64_t seed, Totals *totals) {
        World w = {
                .rng = seed * UINT64_C(0x9E3779B97F4A7C15) + 1,
                .units = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, fake_unit_free),
                .isolation = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, isolation_free_void),
                .now = 1000 * USEC_PER_SEC,
                .log = g_string_new(NULL),
        };
        Side sides[2];
        unsigned steps, unknown_steps;
        bool ok = true, skip;

        w.policies = random_policies(&w);
        side_init(&sides[0], &w, false);
        side_init(&sides[1], &w, true);
        steps = MIN_STEPS + rng_below(&w.rng, MAX_STEPS - MIN_STEPS + 1);
        /* Applies before the unit list, which then comes as one change of every unit. */
        unknown_steps = rng_chance(&w.rng, 50) ? rng_below(&w.rng, 5) : 0;
        skip = rng_chance(&w.rng, 50);
        g_string_append_printf(w.log, " %u step(s) before the unit list, %s", unknown_steps,
                               skip ? "applies as the daemon queues them" : "applies at every step");
        for (unsigned step = 0; step < steps && ok; step++) {
                /* A burst of events shares one apply. */
                unsigned events = 1 + rng_below(&w.rng, 3);
                g_autofree char *difference = NULL;

                g_string_append_printf(w.log, "\n  step %u:", step);
                if (!w.units_known && step >= unknown_steps) {
                        w.units_known = true;
                        for (unsigned i = 0; i < 2; i++)
                                candidate_state_note_changed(&sides[i].candidates, NULL);
                        sides[0].pending = true;
                        g_string_append(w.log, " unit-list");
                }
                for (unsigned e = 0; e < events; e++)
                        random_event(&w, sides);
                totals->steps++;
                /* The first apply runs at start, whatever happened. Before the unit list the
                 * tracker tells of no unit, so no unit's change queues an apply: neither side
                 * applies then. After it, the full pass applies anyway, and must agree later. */
                if (skip && !sides[0].pending && step > 0) {
                        if (w.units_known) {
                                side_apply(&sides[1], &w);
                                totals->skipped++;
                                answer_isolation(&w, &sides[1].plan, &sides[0]);
                        }
                        continue;
                }
                for (unsigned i = 0; i < 2; i++)
                        side_apply(&sides[i], &w);
                g_clear_pointer(&w.old, g_ptr_array_unref);
                totals->applies++;
                totals->changes_only += sides[0].changes_only;
                ck_assert(!sides[1].changes_only);

                difference = compare_sides(&sides[0], &sides[1]);
                for (unsigned i = 0; i < 2 && !difference; i++)
                        difference = compare_unit_record(&sides[i]);
                if (difference) {
                        printf("seed %" PRIu64 ": step %u: %s%s\n  events:%s\n", seed, step, difference,
                               sides[0].changes_only ? " (changes only)" : " (full pass on both)", w.log->str);
                        /* Check ends a failed test without flushing. */
                        fflush(stdout);
                        totals->differences++;
                        ok = false;
                }
                answer_isolation(&w, &sides[1].plan, &sides[0]);
                if (w.units_known)
                        prune_isolation(&w, &sides[0].plan_state);
        }
        totals->sequences++;

        for (unsigned i = 0; i < 2; i++)
                side_done(&sides[i]);
        g_ptr_array_unref(w.policies);
        g_hash_table_destroy(w.units);
        g_hash_table_destroy(w.isolation);
        g_string_free(w.log, true);
        return ok;
}

static uint64_t env_number(const char *name, uint64_t fallback) {
        const char *s = getenv(name);
        uint64_t v;

        if (!s || !*s)
                return fallback;
        ck_assert_msg(parse_u64(s, &v) >= 0, "%s=%s is not a number", name, s);
        return v;
}

START_TEST(test_changes_only_matches_full_pass) {
        uint64_t n = env_number("THPD_PROPERTY_SEQUENCES", DEFAULT_SEQUENCES);
        uint64_t seed = env_number("THPD_PROPERTY_SEED", DEFAULT_SEED);
        Totals totals = {};
        gint64 start = g_get_monotonic_time();

        for (uint64_t i = 0; i < n; i++)
                (void) run_sequence(seed + i, &totals);
        printf("%u sequences (seeds %" PRIu64 "..%" PRIu64 "), %u steps: %u applies compared, %u of them "
               "changes-only, %u skipped as nothing mattered; %u differences, %.1f s\n",
               totals.sequences, seed, seed + n - 1, totals.steps, totals.applies, totals.changes_only, totals.skipped,
               totals.differences, (double) (g_get_monotonic_time() - start) / G_USEC_PER_SEC);
        fflush(stdout);
        ck_assert_uint_eq(totals.differences, 0);
        /* Else the property holds vacuously. */
        ck_assert_uint_gt(totals.changes_only, totals.applies / 2);
}
END_TEST

static Suite *candidates_suite(void) {
        Suite *s = suite_create("candidates");
        TCase *tc = tcase_create("property");

        /* The count is the caller's to raise. */
        tcase_set_timeout(tc, 0);
        tcase_add_test(tc, test_changes_only_matches_full_pass);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return test_run_suite(candidates_suite());
}
