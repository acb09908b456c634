/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "resolve.h"
#include "util.h"

static const char *const source_kind_table[_SOURCE_KIND_MAX] = {
        [SOURCE_NONE] = "none",
        [SOURCE_BASELINE] = "baseline",
        [SOURCE_POLICY] = "policy",
        [SOURCE_MITIGATION] = "mitigation",
        [SOURCE_OVERRIDE] = "override",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(source_kind, SourceKind);

/* Offers one vote; the stricter value wins and ties keep the earlier voter, so results do not
 * depend on anything but the (lexically ordered) policy list. */
static void vote(Knob k, KnobValue candidate, Source source, KnobValue global,
                 KnobValue *best, Source *best_source) {
        /* An equal value is a tie, which the earlier voter keeps: most policies vote alike. */
        if (candidate == KNOB_VALUE_UNSET || candidate == *best)
                return;
        if (*best == KNOB_VALUE_UNSET ||
            knob_compare_strictness(k, candidate, *best, global) < 0) {
                *best = candidate;
                *best_source = source;
        }
}

/* Whether a votes on k: the one rule for the value resolve() gives and for its explanation. */
static bool policy_votes(const ActivePolicy *a, Knob k) {
        return !a->pool_only && a->policy->knobs[k] != KNOB_VALUE_UNSET && !resolve_withdrawn(a, k);
}

static Source policy_source(const ActivePolicy *a) {
        return (Source) { .kind = SOURCE_POLICY, .policy = a->policy, .unit = a->unit };
}

/* With the policies' votes in t: the override wins outright, storm mitigation votes last, and
 * the baseline stands where nobody voted. */
static void finish_knob(const ResolveInput *in, Knob k, KnobValue global, Target *t) {
        if (in->override && in->override[k] != KNOB_VALUE_UNSET) {
                t->value[k] = in->override[k];
                t->source[k] = (Source) { .kind = SOURCE_OVERRIDE };
                return;
        }
        if (in->mitigation)
                vote(k, in->mitigation[k], (Source) { .kind = SOURCE_MITIGATION }, global,
                     &t->value[k], &t->source[k]);
        if (t->value[k] == KNOB_VALUE_UNSET && in->baseline && in->baseline[k] != KNOB_VALUE_UNSET) {
                t->value[k] = in->baseline[k];
                t->source[k] = (Source) { .kind = SOURCE_BASELINE };
        }
}

/* The active policies' votes for the knobs [first, end) in one pass, each policy's votes read
 * together rather than a pass per knob (at hundreds of active policies the passes were most of a
 * resolution); per knob they still come in policy order, so a tie goes to the same policy. global
 * is the resolved value the range's per-size "inherit" borrows (knob_inherits_from()). */
static void resolve_knobs(const ResolveInput *in, Knob first, Knob end, KnobValue global, Target *t) {
        for (Knob k = first; k < end; k++) {
                t->value[k] = KNOB_VALUE_UNSET;
                t->source[k] = (Source) { .kind = SOURCE_NONE };
        }
        /* The knobs [first, end) as bits (Policy.unset_knobs). */
        uint64_t range = (UINT64_C(1) << end) - (UINT64_C(1) << first);

        for (size_t i = 0; i < in->n_active; i++) {
                const ActivePolicy *a = &in->active[i];
                /* Read through a local: t could alias the policy for all the compiler knows. */
                const KnobValue *votes = a->policy->knobs;

                if (a->pool_only)
                        continue;
                /* Only the knobs the policy may vote on: this runs for every active policy at
                 * each apply, and most vote on one or two of the knobs. */
                for (uint64_t left = range & ~a->policy->unset_knobs; left != 0; left &= left - 1) {
                        Knob k = (Knob) __builtin_ctzll(left);

                        if (policy_votes(a, k))
                                vote(k, votes[k], policy_source(a), global, &t->value[k], &t->source[k]);
                }
        }
        for (Knob k = first; k < end; k++)
                finish_knob(in, k, global, t);
}

/* A Scope=service policy that wants always votes as a global one: its services can have always
 * only while the machine says so (policy_inverts()). */
static bool votes_whatever_happens(const ActivePolicy *a) {
        return a->policy->scope == POLICY_SCOPE_GLOBAL || policy_inverts(a->policy) ||
               (a->policy->scope == POLICY_SCOPE_AUTO && a->unisolated);
}

void resolve_per_service(ActivePolicy *active, size_t n_active) {
        KnobValue fixed = KNOB_VALUE_UNSET, loosest_auto = KNOB_VALUE_UNSET, needed;

        for (size_t i = 0; i < n_active; i++) {
                const ActivePolicy *a = &active[i];
                KnobValue v = a->policy->knobs[KNOB_ENABLED];

                if (a->pool_only || v == KNOB_VALUE_UNSET)
                        continue;
                if (votes_whatever_happens(a)) {
                        if (fixed == KNOB_VALUE_UNSET || knob_compare_strictness(KNOB_ENABLED, v, fixed, KNOB_VALUE_UNSET) < 0)
                                fixed = v;
                } else if (a->policy->scope == POLICY_SCOPE_AUTO &&
                           (loosest_auto == KNOB_VALUE_UNSET ||
                            knob_compare_strictness(KNOB_ENABLED, v, loosest_auto, KNOB_VALUE_UNSET) > 0))
                        loosest_auto = v;
        }
        needed = fixed != KNOB_VALUE_UNSET ? fixed : loosest_auto;

        for (size_t i = 0; i < n_active; i++) {
                ActivePolicy *a = &active[i];

                a->per_service = !a->pool_only && a->policy->scope == POLICY_SCOPE_AUTO && !a->unisolated &&
                                 needed != KNOB_VALUE_UNSET &&
                                 knob_compare_strictness(KNOB_ENABLED, a->policy->service_thp, needed,
                                                         KNOB_VALUE_UNSET) < 0;
        }
}

bool resolve_withdrawn(const ActivePolicy *a, Knob k) {
        if (!a->per_service)
                return false;
        if (k == KNOB_SHMEM_ENABLED || knob_is_mthp_shmem(k))
                return false;
        if (k == KNOB_ENABLED || knob_is_mthp(k))
                return true;
        return a->policy->service_thp == KNOB_ENABLED_NEVER;
}

static PoolTarget *pool_slot(Target *t, uint64_t page_size_kb, int node) {
        for (size_t i = 0; i < t->n_pools; i++)
                if (t->pools[i].page_size_kb == page_size_kb && t->pools[i].node == node)
                        return &t->pools[i];

        if (t->n_pools >= RESOLVE_MAX_POOLS)
                return NULL;

        t->pools[t->n_pools] = (PoolTarget) { .page_size_kb = page_size_kb, .node = node };
        return &t->pools[t->n_pools++];
}

Knob resolve_mthp_collapse_size(const ResolveInput *in, const KnobValue value[_KNOB_MAX]) {
        if (!in->mthp_collapse)
                return _KNOB_INVALID;
        for (unsigned i = 0; i < KNOB_MTHP_SLOTS; i++) {
                Knob k = KNOB_MTHP_FIRST + (Knob) i;
                KnobValue v = value[k];

                if (k == in->pmd_knob || (in->present && !in->present[k]) || v == KNOB_VALUE_UNSET)
                        continue;
                if (v == KNOB_MTHP_INHERIT)
                        v = value[KNOB_ENABLED];
                if (v != KNOB_VALUE_UNSET && v != KNOB_ENABLED_NEVER)
                        return k;
        }
        return _KNOB_INVALID;
}

KnobValue resolve_max_ptes_none(KnobValue v, bool collapse_on) {
        const KnobInfo *info = knob_info(KNOB_KHUGEPAGED_MAX_PTES_NONE);

        if (!collapse_on || v == KNOB_VALUE_UNSET || v == (KnobValue) info->min || v == (KnobValue) info->max)
                return v;
        return (KnobValue) (info->higher_is_stricter ? info->max : info->min);
}

void resolve(const ResolveInput *in, Target *ret) {
        const Knob mpn = KNOB_KHUGEPAGED_MAX_PTES_NONE;

        *ret = (Target) { .max_ptes_none_voted = KNOB_VALUE_UNSET };

        /* enabled first: per-size "inherit" borrows the strictness of its resolved value; the
         * per-size shmem knobs, last in the table, borrow shmem_enabled's likewise. */
        resolve_knobs(in, KNOB_ENABLED, KNOB_ENABLED + 1, KNOB_VALUE_UNSET, ret);
        resolve_knobs(in, KNOB_ENABLED + 1, KNOB_MTHP_SHMEM_FIRST, ret->value[KNOB_ENABLED], ret);
        resolve_knobs(in, KNOB_MTHP_SHMEM_FIRST, _KNOB_MAX, ret->value[KNOB_SHMEM_ENABLED], ret);

        if (ret->source[mpn].kind != SOURCE_BASELINE) {
                KnobValue moved = resolve_max_ptes_none(ret->value[mpn], resolve_mthp_collapse_size(in, ret->value) >= 0);

                if (moved != ret->value[mpn]) {
                        ret->max_ptes_none_voted = ret->value[mpn];
                        ret->value[mpn] = moved;
                }
        }

        for (size_t i = 0; i < in->n_pool_baseline; i++) {
                const PoolBaseline *b = &in->pool_baseline[i];
                PoolTarget *p = pool_slot(ret, b->page_size_kb, b->node);

                if (!p) {
                        ret->pools_truncated = true;
                        continue;
                }
                p->baseline = b->pages;
        }

        for (size_t i = 0; i < in->n_active; i++) {
                const Policy *policy = in->active[i].policy;
                PoolTarget *p;

                if (!policy->has_pool)
                        continue;
                p = pool_slot(ret, policy->pool.page_size_kb, policy->pool.node);
                if (!p) {
                        ret->pools_truncated = true;
                        continue;
                }
                p->requested = add_saturating(p->requested, policy->pool.pages);
                p->n_policies++;
                p->n_in_grace += in->active[i].pool_only;
        }

        for (size_t i = 0; i < ret->n_pools; i++)
                ret->pools[i].pages = add_saturating(ret->pools[i].baseline, ret->pools[i].requested);
}

static void add_vote(GArray *votes, const Target *t, Knob k, KnobValue value, Source source) {
        const Source *won = &t->source[k];
        Vote v = {
                .value = value,
                .source = source,
                .winning = won->kind == source.kind && won->policy == source.policy,
        };

        g_array_append_val(votes, v);
}

GArray *resolve_votes(const ResolveInput *in, const Target *t, Knob k) {
        GArray *votes = g_array_new(FALSE, FALSE, sizeof(Vote));

        if (in->baseline && in->baseline[k] != KNOB_VALUE_UNSET)
                add_vote(votes, t, k, in->baseline[k], (Source) { .kind = SOURCE_BASELINE });
        for (size_t i = 0; i < in->n_active; i++)
                if (policy_votes(&in->active[i], k))
                        add_vote(votes, t, k, in->active[i].policy->knobs[k], policy_source(&in->active[i]));
        if (in->mitigation && in->mitigation[k] != KNOB_VALUE_UNSET)
                add_vote(votes, t, k, in->mitigation[k], (Source) { .kind = SOURCE_MITIGATION });
        if (in->override && in->override[k] != KNOB_VALUE_UNSET)
                add_vote(votes, t, k, in->override[k], (Source) { .kind = SOURCE_OVERRIDE });
        return votes;
}

const PoolTarget *target_find_pool(const Target *t, uint64_t page_size_kb, int node) {
        for (size_t i = 0; i < t->n_pools; i++)
                if (t->pools[i].page_size_kb == page_size_kb && t->pools[i].node == node)
                        return &t->pools[i];
        return NULL;
}
