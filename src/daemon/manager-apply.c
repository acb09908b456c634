/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <malloc.h>

#include "log.h"
#include "manager-drift.h"
#include "manager-pools.h"
#include "manager.h"
#include "runtime-file.h"
#include "sysfs.h"
#include "unit-record.h"
#include "util.h"

/* An apply: observe what runs and what the kernel has, plan (plan.c, no I/O), actuate the
 * knobs, pools and timers, persist the records, and publish to the listeners. */

static int on_apply_event(sd_event_source *s, void *userdata) {
        manager_apply(userdata);
        return 0;
}

void manager_queue_apply(Manager *m) {
        int r;

        if (!m->apply_event) {
                r = sd_event_add_defer(m->event, &m->apply_event, on_apply_event, m);
                if (r >= 0)
                        r = sd_event_source_set_priority(m->apply_event, SD_EVENT_PRIORITY_IDLE);
                if (r < 0) {
                        log_warning_errno(r, "Cannot queue an apply, applying at once: %m");
                        m->apply_event = sd_event_source_disable_unref(m->apply_event);
                        manager_apply(m);
                        return;
                }
        }
        (void) sd_event_source_set_enabled(m->apply_event, SD_EVENT_ONESHOT);
}

/* A burst of applies leaves freed heap fragments glibc keeps; give them back once it is over,
 * so a long-running daemon does not creep. */
#define TRIM_DELAY_USEC (5 * USEC_PER_SEC)

static int on_trim_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        malloc_trim(0);
        return 0;
}

static void schedule_trim(Manager *m) {
        int r;

        if (!m->trim_timer) {
                r = sd_event_add_time_relative(m->event, &m->trim_timer, CLOCK_MONOTONIC, TRIM_DELAY_USEC,
                                               USEC_PER_SEC, on_trim_timer, m);
                if (r < 0)
                        log_debug_errno(r, "Cannot arm the heap trim timer: %m");
                return;
        }
        (void) sd_event_source_set_time_relative(m->trim_timer, TRIM_DELAY_USEC);
        (void) sd_event_source_set_enabled(m->trim_timer, SD_EVENT_ONESHOT);
}

static int on_grace_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        manager_queue_apply(userdata);
        return 0;
}

static void arm_grace_timer(Manager *m, uint64_t when) {
        int r;

        if (when == 0) {
                if (m->grace_timer)
                        (void) sd_event_source_set_enabled(m->grace_timer, SD_EVENT_OFF);
                return;
        }
        if (!m->grace_timer) {
                r = sd_event_add_time(m->event, &m->grace_timer, CLOCK_MONOTONIC, when, 0, on_grace_timer, m);
                if (r < 0)
                        log_error_errno(r, "Cannot arm the pool grace timer; pools shrink at the next change: %m");
                return;
        }
        (void) sd_event_source_set_time(m->grace_timer, when);
        (void) sd_event_source_set_enabled(m->grace_timer, SD_EVENT_ONESHOT);
}

/* Until the manager has listed the units (or turned out absent), thpd knows nothing of what runs. */
bool manager_units_known(const Manager *m) {
        return !m->units || unit_tracker_has_answered(m->units);
}

/* ---- observe ---- */

typedef struct Observation {
        GArray *candidates;  /* PlanCandidate */
        GArray *positions;   /* int: each candidate's policy position */
        PlanUnit *units;     /* the candidates' units, back to back */
        bool changes_only;   /* PlanInput.changes_only */
        GPtrArray *released; /* changed units no longer wanted, names borrowed */
        KnobValue current[_KNOB_MAX];
        uint64_t now;
} Observation;

static void observation_done(Observation *o) {
        g_clear_pointer(&o->candidates, g_array_unref);
        g_clear_pointer(&o->positions, g_array_unref);
        g_clear_pointer(&o->units, g_free);
        g_clear_pointer(&o->released, g_ptr_array_unref);
}

/* A policy an apply looks at, by position, with one wanted unit it matches (NULL: none), or
 * settled (PlanCandidate.settled). */
typedef struct CandidatePair {
        int position;
        const Policy *policy;
        const TrackedUnit *unit;
        bool settled;
} CandidatePair;

static gint compare_pairs(gconstpointer a, gconstpointer b) {
        int x = ((const CandidatePair *) a)->position, y = ((const CandidatePair *) b)->position;

        return x < y ? -1 : x > y;
}

/* The policies a unit's name matches (borrowed Policy*), looked up once per name until the
 * policies are reloaded: globs are matched one by one, and every apply needs every wanted unit's
 * policies. */
static GPtrArray *unit_matches(Manager *m, const char *unit) {
        GPtrArray *matched = g_hash_table_lookup(m->unit_matches, unit);

        if (!matched) {
                matched = g_ptr_array_new();
                (void) policy_index_lookup(m->policy_index, unit, matched);
                g_hash_table_insert(m->unit_matches, g_strdup(unit), matched);
        }
        return matched;
}

bool manager_unit_has_policy(Manager *m, const char *unit) {
        return unit_matches(m, unit)->len > 0;
}

void manager_note_unit_changed(Manager *m, const char *unit) {
        if (!unit)
                m->all_units_changed = true;
        else if (!m->all_units_changed && !g_hash_table_contains(m->changed_units, unit))
                g_hash_table_add(m->changed_units, g_strdup(unit));
}

bool manager_unit_change_matters(Manager *m, const char *unit, const UnitView *before, const UnitView *now) {
        GPtrArray *matched = unit_matches(m, unit);
        PlanUnit b = { .name = unit }, n = { .name = unit };

        if (before) {
                b.running = before->running;
                b.stops = before->stops;
        }
        if (now) {
                n.running = now->running;
                n.stops = now->stops;
        }
        return plan_unit_change_matters(&m->plan, before && before->wanted ? &b : NULL, now && now->wanted ? &n : NULL,
                                        (const Policy *const *) matched->pdata, matched->len);
}

/* Units come and go (transient ones with new names each time): forget those no longer
 * followed once they outnumber the followed ones. */
static void prune_unit_matches(Manager *m, GHashTable *units) {
        GHashTableIter iter;
        const char *name;

        if (g_hash_table_size(m->unit_matches) <= 2 * g_hash_table_size(units) + 64)
                return;
        g_hash_table_iter_init(&iter, m->unit_matches);
        while (g_hash_table_iter_next(&iter, (gpointer *) &name, NULL))
                if (!g_hash_table_contains(units, name))
                        g_hash_table_iter_remove(&iter);
}

/* The policies an apply must look at, in order: those of the wanted units (a pair per unit)
 * and those that were active or held a pool at the last apply. After a (re)load every policy,
 * since a changed file may no longer match. Pairs sorted by position, not tables of lists: at
 * hundreds of running units this is the bulk of an apply. */
static GArray *candidate_pairs(Manager *m, GHashTable *units) {
        GArray *pairs = g_array_new(FALSE, FALSE, sizeof(CandidatePair));
        /* By position: a live policy with a unit's pair needs no pair of its own, and every
         * pair less is one less to sort. */
        g_autofree bool *paired = g_new0(bool, MAX(m->policies->len, 1u));
        GHashTableIter iter;
        TrackedUnit *u;
        const Policy *p;

        if (units) {
                prune_unit_matches(m, units);
                g_hash_table_iter_init(&iter, units);
                while (g_hash_table_iter_next(&iter, NULL, (gpointer *) &u)) {
                        GPtrArray *matched;

                        if (!tracked_unit_is_wanted(u))
                                continue;
                        matched = unit_matches(m, u->name);
                        for (guint i = 0; i < matched->len; i++) {
                                int position;

                                p = g_ptr_array_index(matched, i);
                                position = policy_index_position(m->policy_index, p);
                                if (position >= 0)
                                        paired[position] = true;
                                g_array_append_val(pairs, ((CandidatePair) { position, p, u, false }));
                        }
                }
        }

        if (m->apply_all_policies) {
                for (guint i = 0; i < m->policies->len; i++)
                        g_array_append_val(pairs, ((CandidatePair) { (int) i, g_ptr_array_index(m->policies, i), NULL, false }));
                m->apply_all_policies = false;
        } else {
                g_hash_table_iter_init(&iter, m->plan.live_policies);
                while (g_hash_table_iter_next(&iter, (gpointer *) &p, NULL)) {
                        int position = policy_index_position(m->policy_index, p);

                        if (position < 0 || !paired[position])
                                g_array_append_val(pairs, ((CandidatePair) { position, p, NULL, false }));
                }
        }
        g_array_sort(pairs, compare_pairs);
        return pairs;
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

/* A pair for each unit of the policy wanted now: those the plan holds for it from the last apply
 * and the changed ones given (matches[0..n), all of this policy), as the tracker has them now. A
 * pair without a unit when none is, so that the policy is looked at. */
static void add_policy_units(Manager *m, GHashTable *units, GArray *pairs, int position, const Policy *p,
                             const ChangedMatch *matches, size_t n) {
        const PolicyRuntime *rt = g_hash_table_lookup(m->plan.policy_runtime, p->name);
        guint before = pairs->len;
        const TrackedUnit *u;

        for (guint i = 0; rt && i < rt->units->len; i++) {
                u = g_hash_table_lookup(units, g_ptr_array_index(rt->units, i));
                if (u && tracked_unit_is_wanted(u))
                        g_array_append_val(pairs, ((CandidatePair) { position, p, u, false }));
        }
        for (size_t i = 0; i < n; i++) {
                bool held = false;

                if (rt)
                        (void) sorted_strings_search((const char *const *) rt->units->pdata, rt->units->len,
                                                     matches[i].unit, &held);
                if (held)
                        continue;
                u = g_hash_table_lookup(units, matches[i].unit);
                if (u && tracked_unit_is_wanted(u))
                        g_array_append_val(pairs, ((CandidatePair) { position, p, u, false }));
        }
        if (pairs->len == before)
                g_array_append_val(pairs, ((CandidatePair) { position, p, NULL, false }));
}

/* The candidates when only some units changed since the last apply: their policies, each with
 * all its wanted units, and the other live policies settled. The work is in proportion to the
 * changed units' policies and the live set, not to every unit that runs. */
static GArray *changed_pairs(Manager *m, GHashTable *units, GPtrArray *released) {
        GArray *pairs = g_array_new(FALSE, FALSE, sizeof(CandidatePair));
        g_autoptr(GArray) matches = g_array_new(FALSE, FALSE, sizeof(ChangedMatch));
        GHashTableIter iter;
        const char *name;
        const Policy *p;

        prune_unit_matches(m, units);
        g_hash_table_iter_init(&iter, m->changed_units);
        while (g_hash_table_iter_next(&iter, (gpointer *) &name, NULL)) {
                GPtrArray *matched = unit_matches(m, name);
                const TrackedUnit *u = g_hash_table_lookup(units, name);

                if (!u || !tracked_unit_is_wanted(u))
                        g_ptr_array_add(released, (gpointer) name);
                for (guint i = 0; i < matched->len; i++) {
                        int position;

                        p = g_ptr_array_index(matched, i);
                        position = policy_index_position(m->policy_index, p);
                        if (position >= 0)
                                g_array_append_val(matches, ((ChangedMatch) { position, p, name }));
                }
        }
        g_array_sort(matches, compare_matches);
        for (guint i = 0, l = 0; i < matches->len || l < m->live_pairs->len;) {
                const ChangedMatch *first = i < matches->len ? &g_array_index(matches, ChangedMatch, i) : NULL;
                const CandidatePair *live = l < m->live_pairs->len ? &g_array_index(m->live_pairs, CandidatePair, l) : NULL;
                guint n = 1;

                /* In policy order, the live policies merged with the changed units' ones (few):
                 * no sort over the live set. The running units of a policy that isolates its
                 * services are checked at every apply (plan_isolation()). */
                if (live && (!first || live->position < first->position)) {
                        l++;
                        if (policy_isolates(live->policy))
                                add_policy_units(m, units, pairs, live->position, live->policy, NULL, 0);
                        else
                                g_array_append_val(pairs, ((CandidatePair) { live->position, live->policy, NULL, true }));
                        continue;
                }
                if (live && live->position == first->position)
                        l++;
                while (i + n < matches->len && g_array_index(matches, ChangedMatch, i + n).position == first->position)
                        n++;
                add_policy_units(m, units, pairs, first->position, first->policy, first, n);
                i += n;
        }
        return pairs;
}

/* The live policies in policy order for the next changed_pairs(): those of the candidates (in
 * that order already) the plan left live. */
static void remember_live(Manager *m, const Observation *o) {
        if (!m->live_pairs)
                m->live_pairs = g_array_new(FALSE, FALSE, sizeof(CandidatePair));
        g_array_set_size(m->live_pairs, 0);
        for (guint i = 0; i < o->candidates->len; i++) {
                const Policy *p = g_array_index(o->candidates, PlanCandidate, i).policy;

                if (g_hash_table_contains(m->plan.live_policies, p))
                        g_array_append_val(m->live_pairs, ((CandidatePair) {
                                g_array_index(o->positions, int, i), p, NULL, true }));
        }
}

static void observe_units(Manager *m, Observation *o) {
        GHashTable *units = m->units ? unit_tracker_units(m->units) : NULL;
        g_autoptr(GArray) pairs = NULL;
        size_t next = 0;

        o->released = g_ptr_array_new();
        o->changes_only = units && m->live_pairs && !m->apply_all_policies && !m->all_units_changed &&
                          m->units_known_at_apply && manager_units_known(m);
        pairs = o->changes_only ? changed_pairs(m, units, o->released) : candidate_pairs(m, units);

        o->candidates = g_array_new(FALSE, TRUE, sizeof(PlanCandidate));
        o->positions = g_array_new(FALSE, FALSE, sizeof(int));
        o->units = g_new(PlanUnit, MAX(pairs->len, 1u));
        for (guint i = 0; i < pairs->len;) {
                const CandidatePair *first = &g_array_index(pairs, CandidatePair, i);
                PlanCandidate c = { .policy = first->policy, .units = o->units + next, .settled = first->settled };

                for (; i < pairs->len && g_array_index(pairs, CandidatePair, i).policy == first->policy; i++) {
                        const TrackedUnit *u = g_array_index(pairs, CandidatePair, i).unit;

                        if (u)
                                o->units[next++] = (PlanUnit) {
                                        .name = u->name,
                                        .running = tracked_unit_is_running(u),
                                        .stops = u->stops,
                                };
                }
                c.n_units = o->units + next - c.units;
                /* Policies that are gone (a reload dropped them) have no position. */
                if (first->position >= 0) {
                        g_array_append_val(o->candidates, c);
                        g_array_append_val(o->positions, first->position);
                }
        }
}

static void observe(Manager *m, Observation *o) {
        int r;

        observe_units(m, o);
        FOREACH_KNOB(k) {
                o->current[k] = KNOB_VALUE_UNSET;
                if (!m->present[k])
                        continue;
                /* Watched and not written since thpd last read or wrote it: as thpd left it. */
                if (manager_drift_knob_unchanged(m, k)) {
                        o->current[k] = m->applied[k];
                        continue;
                }
                r = manager_read_knob(m, k, &o->current[k]);
                if (r < 0) {
                        log_error_errno(r, "%s: cannot read: %m", knob_name(k));
                        o->current[k] = KNOB_VALUE_UNSET;
                }
        }
        o->now = now_usec(CLOCK_MONOTONIC);
}

/* ---- actuate ---- */

/* On the heap: a policy path can be PATH_MAX long, and a buffer that size per knob made the
 * stack deeper for good (the kernel keeps stack pages once touched). */
char *manager_knob_reason(const Manager *m, Knob k) {
        const Source *s = &m->target.source[k];

        switch (s->kind) {
        case SOURCE_POLICY:
                return g_strdup_printf("%s for %s", s->policy->path, s->unit);
        case SOURCE_BASELINE:
                return g_strdup("baseline, no policy votes");
        case SOURCE_MITIGATION:
                return g_strdup("storm mitigation");
        case SOURCE_OVERRIDE:
                return g_strdup("admin override");
        default:
                return g_strdup("no source");
        }
}

static int write_knob(Manager *m, Knob k, const KnobStep *step, GArray *changes) {
        g_autofree char *reason = manager_knob_reason(m, k);
        char a[24], b[24];
        int r;

        r = sysfs_write_knob(m->sysfs_root, k, step->target);
        if (r < 0) {
                log_error_errno(r, "%s: cannot set %s (%s): %m", knob_name(k),
                                knob_value_to_string(k, step->target, a), reason);
                (void) sysfs_read_knob(m->sysfs_root, k, &m->applied[k]);
                return r;
        }
        m->counters.knob_writes++;
        log_info("%s: %s -> %s (%s)", knob_name(k), knob_value_to_string(k, step->current, a),
                 knob_value_to_string(k, step->target, b), reason);
        KnobChange change = {
                .knob = k,
                .old_value = step->current,
                .new_value = step->target,
                .reason = g_steal_pointer(&reason),
        };
        g_array_append_val(changes, change);
        return 0;
}

/* Returns the number of knobs that could not be read or set. */
static unsigned actuate_knobs(Manager *m, const Plan *p, GArray *changes, bool *ret_baseline_changed) {
        bool baseline_changed = false;
        unsigned errors = 0;
        char buf[24];

        FOREACH_KNOB(k) {
                const KnobStep *step = &p->knobs[k];

                switch (step->action) {
                case KNOB_ACTION_ABSENT: {
                        g_autofree char *reason = manager_knob_reason(m, k);

                        log_debug("%s: not on this kernel, ignoring the vote (%s)", knob_name(k), reason);
                        break;
                }
                case KNOB_ACTION_UNREADABLE:
                        errors++;
                        break;
                case KNOB_ACTION_ADOPT:
                        log_info("%s: now %s, set outside thpd; taking it as the baseline", knob_name(k),
                                 knob_value_to_string(k, step->current, buf));
                        m->baseline.knobs[k] = step->current;
                        baseline_changed = true;
                        _fallthrough_;
                case KNOB_ACTION_FOLLOW:
                case KNOB_ACTION_HOLD:
                case KNOB_ACTION_YIELD:
                        m->applied[k] = step->current;
                        break;
                case KNOB_ACTION_WRITE:
                        if (write_knob(m, k, step, changes) < 0) {
                                errors++;
                                break;
                        }
                        _fallthrough_;
                case KNOB_ACTION_KEEP:
                        m->applied[k] = step->target;
                        m->owned[k] = step->owned;
                        break;
                default:
                        break;
                }
        }

        m->counters.knob_errors += errors;
        *ret_baseline_changed = baseline_changed;
        return errors;
}

/* ---- persist ---- */

/* Only when the sets changed: unit churn outside policies costs no write, and an apply that
 * neither added nor dropped a wanted unit or a hint does not even format the record. Not put
 * off to batch a burst: a thpd killed right after a start must still know the unit started
 * under its policy. */
static void save_unit_record(Manager *m, const Plan *p) {
        g_autofree char *text = NULL;
        int r;

        if (m->unit_record && !p->wanted_units_changed && !p->restart_hints_changed)
                return;
        text = unit_record_format(m->plan.seen_sorted, m->plan.needs_restart);
        if (streq_ptr(text, m->unit_record))
                return;
        r = runtime_file_write(m->runtime_dir, UNIT_RECORD_FILE, text);
        if (r < 0)
                log_warning_errno(r, "Cannot record the units of active policies in %s (%m): after a restart, "
                                  "thpd would list them as needing a restart.", m->runtime_dir);
        g_free(m->unit_record);
        m->unit_record = TAKE_PTR(text);
}

static void persist(Manager *m, const Plan *p) {
        /* Before the first unit list the record of the last instance stands. */
        if (manager_units_known(m))
                save_unit_record(m, p);
}

/* ---- publish ---- */

static void publish(Manager *m, const Plan *p, GArray *changes) {
        ApplyReport report = {
                .changes = (const KnobChange *) changes->data,
                .n_changes = changes->len,
                .isolation_checks = (const IsolationRequest *) p->isolation_checks->data,
                .n_isolation_checks = p->isolation_checks->len,
                .wanted = manager_units_known(m) ? m->plan.seen_wanted : NULL,
                .active_policies_changed = p->runtime_changed,
                .needs_restart_changed = p->restart_hints_changed,
        };

        MANAGER_FOREACH_LISTENER(m, e)
                if (e->listener->applied)
                        e->listener->applied(m, &report, e->userdata);
}

static void knob_change_clear(gpointer p) {
        KnobChange *c = p;

        g_free(c->reason);
}

static void remember_per_service(Manager *m, const Plan *p) {
        g_hash_table_remove_all(m->per_service);
        for (guint i = 0; i < p->active->len; i++) {
                const ActivePolicy *a = &g_array_index(p->active, ActivePolicy, i);

                if (a->per_service)
                        g_hash_table_add(m->per_service, g_strdup(a->policy->name));
        }
}

void manager_apply(Manager *m) {
        _cleanup_(observation_done) Observation o = {};
        _cleanup_(plan_done) Plan p = {};
        g_autoptr(GArray) changes = g_array_new(FALSE, TRUE, sizeof(KnobChange));
        bool baseline_changed, yielded[_KNOB_MAX];

        g_array_set_clear_func(changes, knob_change_clear);
        observe(m, &o);
        drift_yielded(&m->drift, yielded);
        plan(&m->plan, &(PlanInput) {
                        .candidates = (const PlanCandidate *) o.candidates->data,
                        .n_candidates = o.candidates->len,
                        .changes_only = o.changes_only,
                        .released = (const char *const *) o.released->pdata,
                        .n_released = o.released->len,
                        .isolation = m->isolation,
                        .units_known = manager_units_known(m),
                        .now_usec = o.now,
                        .pool_grace_usec = m->settings.pool_grace_usec,
                        .present = m->present,
                        .current = o.current,
                        .owned = m->owned,
                        .recorded = m->baseline.knobs,
                        .pinned = m->settings.baseline,
                        .mitigation = m->mitigation,
                        .override = m->override,
                        .yielded = yielded,
                        .pool_baseline = m->baseline.pools,
                        .n_pool_baseline = m->baseline.n_pools,
                }, &m->target, &p);
        /* The names in o.released are the table's: the plan is done with them. */
        g_hash_table_remove_all(m->changed_units);
        m->all_units_changed = false;
        m->units_known_at_apply = manager_units_known(m);
        remember_live(m, &o);
        remember_per_service(m, &p);
        if (m->target.pools_truncated)
                log_warning("More hugetlb pools requested than thpd tracks (%d); some are ignored.", RESOLVE_MAX_POOLS);

        m->last_apply_errors = actuate_knobs(m, &p, changes, &baseline_changed);
        /* Recorded at once, as the pools record what they follow (manager-pools.c). */
        if (baseline_changed)
                manager_save_baseline(m);
        if (manager_units_known(m))
                m->last_apply_errors += manager_apply_pools(m);
        arm_grace_timer(m, p.next_grace_usec);
        persist(m, &p);
        m->applied_once = true;
        manager_drift_applied(m);
        m->apply_generation++;
        publish(m, &p, changes);
        schedule_trim(m);
}
