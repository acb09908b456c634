/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "candidates.h"
#include "util.h"

void candidate_state_init(CandidateState *s, const GPtrArray *policies) {
        *s = (CandidateState) {
                .policies = policies,
                .index = policy_index_new(policies),
                .matches = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify) g_ptr_array_unref),
                .all_policies = true,
                .changed = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL),
                .all_changed = true,
        };
}

void candidate_state_done(CandidateState *s) {
        s->index = policy_index_free(s->index);
        g_clear_pointer(&s->matches, g_hash_table_destroy);
        g_clear_pointer(&s->changed, g_hash_table_destroy);
        g_clear_pointer(&s->live, g_array_unref);
}

void candidate_state_set_policies(CandidateState *s, const GPtrArray *policies) {
        policy_index_free(s->index);
        s->policies = policies;
        s->index = policy_index_new(policies);
        g_hash_table_remove_all(s->matches);
        s->all_policies = true;
        /* It pointed into the old policies, and a reload leaves none live until the next apply
         * (plan_state_forget_policies()). */
        if (s->live)
                g_array_set_size(s->live, 0);
}

const GPtrArray *candidate_state_matches(CandidateState *s, const char *unit) {
        GPtrArray *matched = g_hash_table_lookup(s->matches, unit);

        if (!matched) {
                matched = g_ptr_array_new();
                (void) policy_index_lookup(s->index, unit, matched);
                g_hash_table_insert(s->matches, g_strdup(unit), matched);
        }
        return matched;
}

void candidate_state_note_changed(CandidateState *s, const char *unit) {
        if (!unit)
                s->all_changed = true;
        else if (!s->all_changed && !g_hash_table_contains(s->changed, unit))
                g_hash_table_add(s->changed, g_strdup(unit));
}

bool candidate_state_change_matters(CandidateState *s, const PlanState *plan, const char *unit,
                                    const CandidateUnit *before, const CandidateUnit *now) {
        const GPtrArray *matched = candidate_state_matches(s, unit);
        PlanUnit b = { .name = unit }, n = { .name = unit };

        if (before)
                b = (PlanUnit) { .name = unit, .running = before->running, .stops = before->stops };
        if (now)
                n = (PlanUnit) { .name = unit, .running = now->running, .stops = now->stops };
        return plan_unit_change_matters(plan, before && before->wanted ? &b : NULL, now && now->wanted ? &n : NULL,
                                        (const Policy *const *) matched->pdata, matched->len);
}

/* Units come and go (transient ones with new names each time): forget those no longer in the
 * table once they outnumber the ones in it. */
static void prune_matches(CandidateState *s, const CandidateUnits *units) {
        GHashTableIter iter;
        const char *name;
        CandidateUnit u;

        if (g_hash_table_size(s->matches) <= 2 * units->size(units->userdata) + 64)
                return;
        g_hash_table_iter_init(&iter, s->matches);
        while (g_hash_table_iter_next(&iter, (gpointer *) &name, NULL))
                if (!units->lookup(units->userdata, name, &u))
                        g_hash_table_iter_remove(&iter);
}

/* A policy the selection looks at, by position, with one wanted unit it matches (name NULL:
 * none), or settled (PlanCandidate.settled). */
typedef struct CandidatePair {
        int position;
        const Policy *policy;
        PlanUnit unit;
        bool settled;
} CandidatePair;

static gint compare_pairs(gconstpointer a, gconstpointer b) {
        int x = ((const CandidatePair *) a)->position, y = ((const CandidatePair *) b)->position;

        return x < y ? -1 : x > y;
}

static PlanUnit plan_unit(const CandidateUnit *u) {
        return (PlanUnit) { .name = u->name, .running = u->running, .stops = u->stops };
}

typedef struct AllPairs {
        CandidateState *state;
        GArray *pairs;
        bool *paired;
} AllPairs;

static void add_unit_pairs(const CandidateUnit *u, void *data) {
        AllPairs *all = data;
        const GPtrArray *matched;

        if (!u->wanted)
                return;
        matched = candidate_state_matches(all->state, u->name);
        for (guint i = 0; i < matched->len; i++) {
                const Policy *p = g_ptr_array_index(matched, i);
                int position = policy_index_position(all->state->index, p);

                if (position >= 0)
                        all->paired[position] = true;
                g_array_append_val(all->pairs, ((CandidatePair) { .position = position, .policy = p, .unit = plan_unit(u) }));
        }
}

/* Every policy an apply may need, in order: those of the wanted units (a pair per unit) and
 * those live at the last apply; after a (re)load every policy. Pairs sorted by position, not
 * tables of lists: at hundreds of running units this is the bulk of an apply. */
static GArray *all_pairs(CandidateState *s, const PlanState *plan, const CandidateUnits *units) {
        /* By position: a live policy with a unit's pair needs no pair of its own, and every
         * pair less is one less to sort. */
        g_autofree bool *paired = g_new0(bool, MAX(s->policies->len, 1u));
        AllPairs all = { .state = s, .pairs = g_array_new(FALSE, FALSE, sizeof(CandidatePair)), .paired = paired };
        GHashTableIter iter;
        const Policy *p;

        if (units) {
                prune_matches(s, units);
                units->foreach(units->userdata, add_unit_pairs, &all);
        }

        if (s->all_policies)
                for (guint i = 0; i < s->policies->len; i++)
                        g_array_append_val(all.pairs, ((CandidatePair) { .position = (int) i, .policy = g_ptr_array_index(s->policies, i) }));
        else {
                g_hash_table_iter_init(&iter, plan->live_policies);
                while (g_hash_table_iter_next(&iter, (gpointer *) &p, NULL)) {
                        int position = policy_index_position(s->index, p);

                        if (position < 0 || !paired[position])
                                g_array_append_val(all.pairs, ((CandidatePair) { .position = position, .policy = p }));
                }
        }
        g_array_sort(all.pairs, compare_pairs);
        return all.pairs;
}

/* A changed unit with a policy it matches. */
typedef struct ChangedMatch {
        int position;
        const Policy *policy;
        const char *unit;
} ChangedMatch;

static gint compare_matches(gconstpointer a, gconstpointer b) {
        int x = ((const ChangedMatch *) a)->position, y = ((const ChangedMatch *) b)->position;

        return x < y ? -1 : x > y;
}

static void add_wanted(GArray *pairs, const CandidateUnits *units, int position, const Policy *p, const char *name) {
        CandidateUnit u;

        if (units->lookup(units->userdata, name, &u) && u.wanted)
                g_array_append_val(pairs, ((CandidatePair) { .position = position, .policy = p, .unit = plan_unit(&u) }));
}

/* A pair for each unit of the policy wanted now: those the plan holds for it from the last apply
 * and the changed ones given (matches[0..n), all of this policy), as the table has them now. A
 * pair without a unit when none is, so that the policy is looked at. */
static void add_policy_units(const PlanState *plan, const CandidateUnits *units, GArray *pairs, int position,
                             const Policy *p, const ChangedMatch *matches, size_t n) {
        const PolicyRuntime *rt = g_hash_table_lookup(plan->policy_runtime, p->name);
        guint before = pairs->len;

        for (guint i = 0; rt && i < rt->units->len; i++)
                add_wanted(pairs, units, position, p, g_ptr_array_index(rt->units, i));
        for (size_t i = 0; i < n; i++) {
                bool held = false;

                if (rt)
                        (void) sorted_strings_search((const char *const *) rt->units->pdata, rt->units->len,
                                                     matches[i].unit, &held);
                if (!held)
                        add_wanted(pairs, units, position, p, matches[i].unit);
        }
        if (pairs->len == before)
                g_array_append_val(pairs, ((CandidatePair) { .position = position, .policy = p }));
}

/* When only some units changed since the last apply: their policies, each with all its wanted
 * units, and the other live policies settled. */
static GArray *changed_pairs(CandidateState *s, const PlanState *plan, const CandidateUnits *units,
                             GPtrArray *released) {
        GArray *pairs;
        g_autoptr(GArray) matches = g_array_new(FALSE, FALSE, sizeof(ChangedMatch));
        GHashTableIter iter;
        const char *name;

        prune_matches(s, units);
        g_hash_table_iter_init(&iter, s->changed);
        while (g_hash_table_iter_next(&iter, (gpointer *) &name, NULL)) {
                const GPtrArray *matched = candidate_state_matches(s, name);
                CandidateUnit u;

                if (!units->lookup(units->userdata, name, &u) || !u.wanted)
                        g_ptr_array_add(released, (gpointer) name);
                for (guint i = 0; i < matched->len; i++) {
                        const Policy *p = g_ptr_array_index(matched, i);
                        int position = policy_index_position(s->index, p);

                        if (position >= 0)
                                g_array_append_val(matches, ((ChangedMatch) { .position = position, .policy = p, .unit = name }));
                }
        }
        g_array_sort(matches, compare_matches);
        /* A pair per live policy and one or more per changed match: reserved at once, not grown
         * a few times over at every apply. */
        pairs = g_array_sized_new(FALSE, FALSE, sizeof(CandidatePair), s->live->len + 2 * matches->len);
        for (guint i = 0, l = 0; i < matches->len || l < s->live->len;) {
                const ChangedMatch *first = i < matches->len ? &g_array_index(matches, ChangedMatch, i) : NULL;
                const CandidateLive *live = l < s->live->len ? &g_array_index(s->live, CandidateLive, l) : NULL;
                guint n = 1;

                /* In policy order, the live policies merged with the changed units' ones (few):
                 * no sort over the live set. The running units of a policy that isolates its
                 * services are checked at every apply (plan_isolation()). */
                if (live && (!first || live->position < first->position)) {
                        l++;
                        if (policy_isolates(live->policy))
                                add_policy_units(plan, units, pairs, live->position, live->policy, NULL, 0);
                        else
                                g_array_append_val(pairs, ((CandidatePair) { .position = live->position, .policy = live->policy, .settled = true }));
                        continue;
                }
                if (live && live->position == first->position)
                        l++;
                while (i + n < matches->len && g_array_index(matches, ChangedMatch, i + n).position == first->position)
                        n++;
                add_policy_units(plan, units, pairs, first->position, first->policy, first, n);
                i += n;
        }
        return pairs;
}

void candidates_select(CandidateState *s, const PlanState *plan, const CandidateUnits *units, bool units_known,
                       Candidates *ret) {
        g_autoptr(GArray) pairs = NULL;
        Candidates c = {
                .candidates = g_array_new(FALSE, FALSE, sizeof(PlanCandidate)),
                .positions = g_array_new(FALSE, FALSE, sizeof(int)),
                .released = g_ptr_array_new(),
                .changes_only = units && s->live && !s->all_policies && !s->all_changed && s->units_known_at_apply &&
                                units_known,
        };
        PlanCandidate *candidates;
        int *positions;
        size_t next = 0, n = 0;

        pairs = c.changes_only ? changed_pairs(s, plan, units, c.released) : all_pairs(s, plan, units);
        c.units = g_new(PlanUnit, MAX(pairs->len, 1u));
        /* At most a candidate per pair: sized once (not zeroed) and written in place, as every
         * live policy is one at every apply. */
        candidates = (PlanCandidate *) g_array_set_size(c.candidates, pairs->len)->data;
        positions = (int *) g_array_set_size(c.positions, pairs->len)->data;
        for (guint i = 0; i < pairs->len;) {
                const CandidatePair *first = &g_array_index(pairs, CandidatePair, i);
                PlanCandidate pc = { .policy = first->policy, .units = c.units + next, .settled = first->settled };

                for (; i < pairs->len && g_array_index(pairs, CandidatePair, i).policy == first->policy; i++) {
                        const PlanUnit *u = &g_array_index(pairs, CandidatePair, i).unit;

                        if (u->name)
                                c.units[next++] = *u;
                }
                pc.n_units = c.units + next - pc.units;
                /* Policies that are gone (a reload dropped them) have no position. */
                if (first->position >= 0) {
                        candidates[n] = pc;
                        positions[n++] = first->position;
                }
        }
        g_array_set_size(c.candidates, n);
        g_array_set_size(c.positions, n);
        *ret = c;
}

void candidates_commit(CandidateState *s, const Candidates *c, const Plan *plan, bool units_known) {
        const ActivePolicy *active = (const ActivePolicy *) plan->active->data;
        CandidateLive *live;
        guint n = 0;

        /* The live policies in policy order for the next changed_pairs(): those of the
         * candidates (in that order already) the plan left live, which are its active ones, pool
         * grace included, in the same order. Walked side by side rather than looked up in the
         * state's live set, and written in place: every live policy is a candidate at every
         * apply. */
        if (!s->live)
                s->live = g_array_new(FALSE, FALSE, sizeof(CandidateLive));
        live = (CandidateLive *) g_array_set_size(s->live, plan->active->len)->data;
        for (guint i = 0; i < c->candidates->len && n < plan->active->len; i++) {
                const Policy *p = g_array_index(c->candidates, PlanCandidate, i).policy;

                if (active[n].policy == p)
                        live[n++] = (CandidateLive) { .position = g_array_index(c->positions, int, i), .policy = p };
        }
        g_array_set_size(s->live, n);
        g_hash_table_remove_all(s->changed);
        s->all_changed = false;
        s->all_policies = false;
        s->units_known_at_apply = units_known;
}

void candidates_done(Candidates *c) {
        g_clear_pointer(&c->candidates, g_array_unref);
        g_clear_pointer(&c->positions, g_array_unref);
        g_clear_pointer(&c->units, g_free);
        g_clear_pointer(&c->released, g_ptr_array_unref);
}
