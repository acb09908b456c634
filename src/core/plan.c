/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "plan.h"
#include "unit-record.h"
#include "util.h"

static void policy_runtime_free(gpointer p) {
        PolicyRuntime *r = p;

        if (!r)
                return;
        g_free(r->name);
        g_ptr_array_unref(r->units);
        g_free(r);
}

void plan_state_init(PlanState *s) {
        *s = (PlanState) {
                .policy_runtime = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, policy_runtime_free),
                .runtime_of = g_hash_table_new(g_direct_hash, g_direct_equal),
                .live_policies = g_hash_table_new(g_direct_hash, g_direct_equal),
                .needs_restart = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free),
                .seen_wanted = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL),
                .seen_sorted = g_ptr_array_new(),
                .record_journal = g_string_new(NULL),
        };
}

static guint seen_position(const PlanState *s, const char *name, bool *ret_found) {
        return sorted_strings_search((const char *const *) s->seen_sorted->pdata, s->seen_sorted->len, name,
                                     ret_found);
}

/* name: the key just added to seen_wanted. */
static void seen_sorted_add(PlanState *s, char *name) {
        bool found;
        guint i = seen_position(s, name, &found);

        if (!found)
                g_ptr_array_insert(s->seen_sorted, (gint) i, name);
}

/* Before the key is freed. */
static void seen_sorted_remove(PlanState *s, const char *name) {
        bool found;
        guint i = seen_position(s, name, &found);

        if (found)
                g_ptr_array_remove_index(s->seen_sorted, i);
}

void plan_state_add_seen(PlanState *s, const char *unit) {
        char *key;

        if (g_hash_table_contains(s->seen_wanted, unit))
                return;
        key = g_strdup(unit);
        g_hash_table_insert(s->seen_wanted, key, GUINT_TO_POINTER(1));
        seen_sorted_add(s, key);
}

void plan_state_done(PlanState *s) {
        g_clear_pointer(&s->policy_runtime, g_hash_table_destroy);
        g_clear_pointer(&s->runtime_of, g_hash_table_destroy);
        g_clear_pointer(&s->live_policies, g_hash_table_destroy);
        g_clear_pointer(&s->needs_restart, g_hash_table_destroy);
        g_clear_pointer(&s->seen_sorted, g_ptr_array_unref);
        g_clear_pointer(&s->seen_wanted, g_hash_table_destroy);
        if (s->record_journal)
                g_string_free(g_steal_pointer(&s->record_journal), TRUE);
}

static bool have_policy(GPtrArray *policies, const char *name) {
        for (guint i = 0; i < policies->len; i++)
                if (streq(((const Policy *) g_ptr_array_index(policies, i))->name, name))
                        return true;
        return false;
}

void plan_state_forget_policies(PlanState *s, GPtrArray *policies) {
        GHashTableIter iter;
        PolicyRuntime *rt;

        g_hash_table_remove_all(s->live_policies);
        g_hash_table_remove_all(s->runtime_of);
        s->n_active = 0;
        g_hash_table_iter_init(&iter, s->policy_runtime);
        while (g_hash_table_iter_next(&iter, NULL, (gpointer *) &rt))
                if (!have_policy(policies, rt->name)) {
                        s->forgot_active |= rt->active;
                        g_hash_table_iter_remove(&iter);
                }
}

/* By pointer first: every apply looks up every live policy's runtime, and hashing its name each
 * time was a tenth of a plan. */
static PolicyRuntime *policy_runtime(PlanState *s, const Policy *p) {
        PolicyRuntime *r = g_hash_table_lookup(s->runtime_of, p);

        if (r)
                return r;
        r = g_hash_table_lookup(s->policy_runtime, p->name);
        if (!r) {
                r = g_new0(PolicyRuntime, 1);
                r->name = g_strdup(p->name);
                r->units = g_ptr_array_new_with_free_func(g_free);
                g_hash_table_insert(s->policy_runtime, r->name, r);
        }
        g_hash_table_insert(s->runtime_of, (gpointer) p, r);
        return r;
}

/* A unit keeps the policy its hint first named: when several policies give it one (a Scope=service
 * policy's process found with THP, a global one's unit running when first counted), the name
 * must not depend on how many applies ran, nor on whether an apply looked at every unit. */
static void hint_set(PlanState *s, Plan *plan, const char *unit, const char *policy) {
        if (g_hash_table_contains(s->needs_restart, unit))
                return;
        g_hash_table_insert(s->needs_restart, g_strdup(unit), g_strdup(policy));
        unit_record_append_change(s->record_journal, UNIT_RECORD_RESTART, unit, policy);
        plan->restart_hints_changed = true;
}

static void hint_clear(PlanState *s, Plan *plan, const char *unit) {
        if (!g_hash_table_remove(s->needs_restart, unit))
                return;
        unit_record_append_change(s->record_journal, UNIT_RECORD_UNHINT, unit, NULL);
        plan->restart_hints_changed = true;
}

/* Replaces the runtime's sorted unit list by "units" (borrowed names, sorted) if it differs. */
static bool set_units(PolicyRuntime *rt, GPtrArray *units) {
        bool same = rt->units->len == units->len;

        for (guint i = 0; same && i < units->len; i++)
                same = streq(g_ptr_array_index(rt->units, i), g_ptr_array_index(units, i));
        if (same)
                return false;
        g_ptr_array_set_size(rt->units, 0);
        for (guint i = 0; i < units->len; i++)
                g_ptr_array_add(rt->units, g_strdup(g_ptr_array_index(units, i)));
        return true;
}

/* A running unit of a policy that isolates its services needs a restart while its process is not
 * isolated. A unit not checked since it started is asked about first; the answer queues another
 * apply. Returns true when the unit was found not isolated. */
static bool plan_isolation(PlanState *s, const PlanInput *in, const Policy *p, const PlanUnit *u, Plan *plan) {
        const Isolation *i;

        if (!u->running)
                return false;
        i = in->isolation ? g_hash_table_lookup(in->isolation, u->name) : NULL;
        /* One answer per unit and start: one about a stricter mode answers a looser policy too
         * (THP off satisfies madvise), as thpd-generator isolates a unit of two policies by the
         * stricter. Asking again for each policy in turn would replace the answer back and forth,
         * an apply and a GetUnitProcesses call each time, for ever. */
        if (!i || i->stops != u->stops || p->service_thp < i->mode) {
                IsolationRequest r = { .policy = p, .unit = u->name, .stops = u->stops };

                g_array_append_val(plan->isolation_checks, r);
                return false;
        }
        if (i->state == ISOLATION_NOT_ISOLATED) {
                hint_set(s, plan, u->name, p->name);
                return true;
        }
        if (i->state == ISOLATION_ISOLATED && streq_ptr(g_hash_table_lookup(s->needs_restart, u->name), p->name))
                hint_clear(s, plan, u->name);
        return false;
}

/* A unit of a policy that wants always for its services alone: how it gets it (exempt from the
 * blanket, or always machine-wide where there is none) is read from its drop-in once per start,
 * running or not yet: its processes cannot show it, so they are not asked. A unit also named by
 * a policy that isolates it has that policy's check instead. */
static void plan_exemption(const PlanInput *in, const Policy *p, const PlanUnit *u, Plan *plan) {
        const Isolation *i = in->isolation ? g_hash_table_lookup(in->isolation, u->name) : NULL;
        IsolationRequest r = { .policy = p, .unit = u->name, .stops = u->stops };

        if (i && i->stops == u->stops)
                return;
        g_array_append_val(plan->isolation_checks, r);
}

/* One candidate's wanted units: each into plan->wanted, the new or restarted ones into changed,
 * their restart hints or isolation checks, and the policy's sorted unit list. Returns whether a
 * unit of a policy that isolates its services runs unisolated. */
static bool plan_candidate_units(PlanState *s, const PlanInput *in, const PlanCandidate *c, PolicyRuntime *rt,
                                 Plan *plan, GPtrArray *units, GPtrArray *changed) {
        const Policy *p = c->policy;
        bool unisolated = false;

        g_ptr_array_set_size(units, 0);
        for (size_t j = 0; j < c->n_units; j++) {
                const PlanUnit *u = &c->units[j];
                gpointer seen;
                bool known = g_hash_table_lookup_extended(s->seen_wanted, u->name, NULL, &seen);

                g_ptr_array_add(units, (gpointer) u->name);
                g_hash_table_insert(plan->wanted, (gpointer) u->name, GUINT_TO_POINTER(u->stops + 1));
                if (!known || seen != GUINT_TO_POINTER(u->stops + 1))
                        g_ptr_array_add(changed, (gpointer) u);
                /* Already running when it first counted: its memory was mapped before this
                 * policy applied. One that stopped since the last apply started again under it.
                 * A policy that isolates its services: what counts is whether the process runs
                 * isolated (a Scope=auto one is never settled, see plan_unit_change_matters()). */
                if (policy_isolates(p))
                        unisolated |= plan_isolation(s, in, p, u, plan);
                else {
                        if (policy_inverts(p))
                                plan_exemption(in, p, u, plan);
                        if (!known && u->running)
                                hint_set(s, plan, u->name, p->name);
                        else if (known && GPOINTER_TO_UINT(seen) != u->stops + 1)
                                hint_clear(s, plan, u->name);
                }
        }
        /* Active exactly while it has units: this also covers turning (in)active. */
        g_ptr_array_sort(units, compare_strings);
        if (set_units(rt, units))
                plan->runtime_changed = true;
        return unisolated;
}

/* The units seen wanted, and the unit record's journal, brought up to what this apply found:
 * changed holds the wanted units new or restarted since the last apply. */
static void plan_seen_units(PlanState *s, const PlanInput *in, Plan *plan, GPtrArray *changed) {
        GHashTableIter iter;
        const char *name;

        /* Updated in place: a burst of starts must not copy every running unit's name anew. A
         * unit of two policies is in the list twice; the second finds it updated. */
        for (guint i = 0; i < changed->len; i++) {
                const PlanUnit *u = g_ptr_array_index(changed, i);
                gpointer old, stops = GUINT_TO_POINTER(u->stops + 1);
                bool known = g_hash_table_lookup_extended(s->seen_wanted, u->name, NULL, &old);

                if (known && old != stops)
                        g_hash_table_insert(s->seen_wanted, g_strdup(u->name), stops);
                else if (!known) {
                        char *key = g_strdup(u->name);

                        g_hash_table_insert(s->seen_wanted, key, stops);
                        seen_sorted_add(s, key);
                        unit_record_append_change(s->record_journal, UNIT_RECORD_STARTED, key, NULL);
                        plan->wanted_units_changed = true;
                }
        }
        /* Units no longer wanted start afresh: their next start maps memory under the policy. */
        if (in->changes_only) {
                /* Only a unit that changed can have stopped being wanted. */
                for (size_t i = 0; i < in->n_released; i++)
                        if (g_hash_table_contains(s->seen_wanted, in->released[i])) {
                                seen_sorted_remove(s, in->released[i]);
                                unit_record_append_change(s->record_journal, UNIT_RECORD_GONE, in->released[i], NULL);
                                g_hash_table_remove(s->seen_wanted, in->released[i]);
                                plan->wanted_units_changed = true;
                        }
        } else if (g_hash_table_size(s->seen_wanted) > g_hash_table_size(plan->wanted)) {
                /* Holding all wanted units now, it holds others only if it is larger: while
                 * units only start, nothing is looked up twice. */
                g_hash_table_iter_init(&iter, s->seen_wanted);
                while (g_hash_table_iter_next(&iter, (gpointer *) &name, NULL))
                        if (!g_hash_table_contains(plan->wanted, name)) {
                                seen_sorted_remove(s, name);
                                unit_record_append_change(s->record_journal, UNIT_RECORD_GONE, name, NULL);
                                g_hash_table_iter_remove(&iter);
                                plan->wanted_units_changed = true;
                        }
        }
        /* The units seen now are the wanted ones (plan->wanted holds only the changed ones'
         * when changes_only). */
        g_hash_table_iter_init(&iter, s->needs_restart);
        while (g_hash_table_iter_next(&iter, (gpointer *) &name, NULL))
                if (!g_hash_table_contains(s->seen_wanted, name)) {
                        /* A hint given this apply to a unit it did not count in (a second
                         * "gone" line for one that left is harmless). */
                        unit_record_append_change(s->record_journal, UNIT_RECORD_GONE, name, NULL);
                        g_hash_table_iter_remove(&iter);
                        plan->restart_hints_changed = true;
                }
}

/* Which policies the wanted units activate, and which stopped ones still hold their pool during
 * the grace period; restart hints for units that were running before their policy applied. */
static void plan_units(PlanState *s, const PlanInput *in, Plan *plan) {
        g_autoptr(GPtrArray) units = g_ptr_array_new();
        /* PlanUnit*: wanted units new or stopped since the last apply, so that the state is
         * updated without looking every wanted unit up a second time. */
        g_autoptr(GPtrArray) changed = g_ptr_array_new();
        /* At most one per candidate: sized once (not zeroed) and written in place, as every live
         * policy is a candidate at every apply. */
        ActivePolicy *active = (ActivePolicy *) g_array_set_size(plan->active, in->n_candidates)->data;
        guint n = 0;

        s->n_active = 0;
        for (size_t i = 0; i < in->n_candidates; i++) {
                const PlanCandidate *c = &in->candidates[i];
                const Policy *p = c->policy;
                PolicyRuntime *rt = policy_runtime(s, p);
                bool unisolated = !c->settled && plan_candidate_units(s, in, c, rt, plan, units, changed);

                if (rt->units->len > 0) {
                        active[n++] = (ActivePolicy) {
                                .policy = p,
                                .unit = g_ptr_array_index(rt->units, 0),
                                .unisolated = unisolated,
                        };
                        s->n_active++;
                        rt->active = true;
                        rt->pool_grace_until = 0;
                        if (!c->settled)
                                g_hash_table_add(s->live_policies, (gpointer) p);
                        continue;
                }

                if (rt->active && p->has_pool && in->pool_grace_usec > 0)
                        rt->pool_grace_until = in->now_usec + in->pool_grace_usec;
                rt->active = false;

                if (rt->pool_grace_until > in->now_usec) {
                        active[n++] = (ActivePolicy) { .policy = p, .unit = NULL, .pool_only = true };
                        g_hash_table_add(s->live_policies, (gpointer) p);
                        if (plan->next_grace_usec == 0 || rt->pool_grace_until < plan->next_grace_usec)
                                plan->next_grace_usec = rt->pool_grace_until;
                } else {
                        rt->pool_grace_until = 0;
                        g_hash_table_remove(s->live_policies, p);
                }
        }
        g_array_set_size(plan->active, n);

        /* Before the first unit list nothing is known yet: keep what the last instance recorded. */
        if (!in->units_known) {
                g_clear_pointer(&plan->wanted, g_hash_table_unref);
                return;
        }
        plan_seen_units(s, in, plan, changed);
}

bool plan_unit_change_matters(const PlanState *s, const PlanUnit *before, const PlanUnit *now,
                              const Policy *const *policies, size_t n_policies) {
        if (n_policies == 0 || (!before && !now))
                return false;
        if (!before || !now || before->stops != now->stops || !g_hash_table_contains(s->seen_wanted, now->name))
                return true;
        if (before->running == now->running)
                return false;
        for (size_t i = 0; i < n_policies; i++)
                if (policy_isolates(policies[i]))
                        return true;
        return false;
}

void plan_effective_baseline(const bool *present, const KnobValue *recorded, const KnobValue *pinned,
                             KnobValue ret[_KNOB_MAX]) {
        FOREACH_KNOB(k) {
                ret[k] = present[k] ? recorded[k] : KNOB_VALUE_UNSET;
                if (present[k] && pinned[k] != KNOB_VALUE_UNSET)
                        ret[k] = pinned[k];
        }
}

static KnobStep plan_knob(const PlanInput *in, const Target *t, Knob k) {
        KnobStep step = {
                .current = in->current[k],
                .target = t->value[k],
        };
        bool from_baseline = t->source[k].kind == SOURCE_BASELINE;

        if (step.target == KNOB_VALUE_UNSET)
                step.action = KNOB_ACTION_NONE;
        else if (!in->present[k])
                step.action = from_baseline ? KNOB_ACTION_NONE : KNOB_ACTION_ABSENT;
        else if (step.current == KNOB_VALUE_UNSET)
                step.action = KNOB_ACTION_UNREADABLE;
        /* Nobody votes and thpd never moved it: the admin owns it, and the baseline follows
         * what they set. */
        else if (from_baseline && !in->owned[k] && in->pinned[k] == KNOB_VALUE_UNSET)
                step.action = step.current != in->recorded[k] ? KNOB_ACTION_ADOPT : KNOB_ACTION_FOLLOW;
        /* Until the manager has listed what runs, any write could loosen a knob a running
         * service needs (a restarted thpd finds its predecessor's values in place). */
        else if (!in->units_known)
                step.action = KNOB_ACTION_HOLD;
        /* Writing it back would only start another round of a fight thpd gave up (drift.h). */
        else if (in->yielded && in->yielded[k] && step.current != step.target)
                step.action = KNOB_ACTION_YIELD;
        else {
                step.action = step.current == step.target ? KNOB_ACTION_KEEP : KNOB_ACTION_WRITE;
                step.owned = !from_baseline || step.target != in->recorded[k];
        }
        return step;
}

void plan(PlanState *s, const PlanInput *in, Target *target, Plan *ret) {
        ResolveInput r;

        *ret = (Plan) {
                .active = g_array_new(FALSE, FALSE, sizeof(ActivePolicy)),
                .isolation_checks = g_array_new(FALSE, TRUE, sizeof(IsolationRequest)),
                .wanted = g_hash_table_new(g_str_hash, g_str_equal),
                .runtime_changed = TAKE_FLAG(s->forgot_active),
        };
        plan_units(s, in, ret);
        plan_effective_baseline(in->present, in->recorded, in->pinned, ret->baseline);
        resolve_per_service((ActivePolicy *) ret->active->data, ret->active->len);
        r = (ResolveInput) {
                .baseline = ret->baseline,
                .active = (const ActivePolicy *) ret->active->data,
                .n_active = ret->active->len,
                .mitigation = in->mitigation,
                .override = in->override,
                .pool_baseline = in->pool_baseline,
                .n_pool_baseline = in->n_pool_baseline,
                .mthp_collapse = in->mthp_collapse,
                .pmd_knob = in->pmd_knob,
                .present = in->present,
        };
        resolve(&r, target);
        FOREACH_KNOB(k)
                ret->knobs[k] = plan_knob(in, target, k);
}

bool plan_knob_commit(const KnobStep *step, KnobValue *applied, bool *owned, KnobValue *recorded) {
        switch (step->action) {
        case KNOB_ACTION_ADOPT:
                *applied = *recorded = step->current;
                return true;
        case KNOB_ACTION_FOLLOW:
        case KNOB_ACTION_HOLD:
        case KNOB_ACTION_YIELD:
                *applied = step->current;
                return false;
        case KNOB_ACTION_WRITE:
        case KNOB_ACTION_KEEP:
                *applied = step->target;
                *owned = step->owned;
                return false;
        default:
                return false;
        }
}

void plan_done(Plan *p) {
        g_clear_pointer(&p->active, g_array_unref);
        g_clear_pointer(&p->isolation_checks, g_array_unref);
        g_clear_pointer(&p->wanted, g_hash_table_unref);
}
