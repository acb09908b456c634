/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <malloc.h>

#include "log.h"
#include "manager-drift.h"
#include "manager-ownership.h"
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

        r = manager_defer_once(m, &m->apply_event, SD_EVENT_PRIORITY_IDLE, on_apply_event);
        if (r < 0) {
                log_warning_errno(r, "Cannot queue an apply, applying at once: %m");
                manager_apply(m);
        }
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
        Candidates candidates; /* PlanInput.candidates, changes_only, released */
        KnobValue current[_KNOB_MAX];
        uint64_t now;
} Observation;

static void observation_done(Observation *o) {
        candidates_done(&o->candidates);
}

/* The tracker's table as the selection reads it (CandidateUnits). */
static void candidate_unit(const TrackedUnit *u, CandidateUnit *ret) {
        *ret = (CandidateUnit) {
                .name = u->name,
                .wanted = tracked_unit_is_wanted(u),
                .running = tracked_unit_is_running(u),
                .stops = u->stops,
        };
}

static bool units_lookup(void *userdata, const char *name, CandidateUnit *ret) {
        const TrackedUnit *u = g_hash_table_lookup(userdata, name);

        if (!u)
                return false;
        candidate_unit(u, ret);
        return true;
}

static void units_foreach(void *userdata, CandidateUnitFunc each, void *data) {
        GHashTableIter iter;
        const TrackedUnit *u;
        CandidateUnit c;

        g_hash_table_iter_init(&iter, userdata);
        while (g_hash_table_iter_next(&iter, NULL, (gpointer *) &u)) {
                candidate_unit(u, &c);
                each(&c, data);
        }
}

static size_t units_size(void *userdata) {
        return g_hash_table_size(userdata);
}

static void observe_units(Manager *m, Observation *o) {
        GHashTable *table = m->units ? unit_tracker_units(m->units) : NULL;
        CandidateUnits units = {
                .lookup = units_lookup,
                .foreach = units_foreach,
                .size = units_size,
                .userdata = table,
        };

        candidates_select(&m->candidates, &m->plan, table ? &units : NULL, manager_units_known(m), &o->candidates);
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
        if (r < 0 && r != -EIO) {
                log_error_errno(r, "%s: cannot set %s (%s): %m", knob_name(k),
                                knob_value_to_string(k, step->target, a), reason);
                (void) sysfs_read_knob(m->sysfs_root, k, &m->applied[k]);
                return r;
        }
        m->counters.knob_writes++;
        log_info("%s: %s -> %s (%s)", knob_name(k), knob_value_to_string(k, step->current, a),
                 knob_value_to_string(k, step->target, b), reason);
        /* The kernel took the value (a knob refuses one with an error, never silently), and
         * something else reads back: another writer wrote between the write and the read-back.
         * Taken as the write it was, so that the drift watch judges that writer's value as any
         * other written behind thpd's back (restored or yielded to, and counted) rather than
         * thpd keeping it unjudged as its own until the next apply. */
        if (r == -EIO)
                log_notice("%s: another writer changed %s right after this write; judging it as drift",
                           knob_name(k), knob_value_to_string(k, step->target, a));
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
        KnobValue targets[_KNOB_MAX];
        Knob order[_KNOB_MAX];
        bool baseline_changed = false;
        unsigned errors = 0;
        char buf[24];

        /* Recorded before they are written: a thpd killed in between must still know them as
         * its own (ownership-record.h). */
        FOREACH_KNOB(k)
                if (p->knobs[k].action == KNOB_ACTION_WRITE)
                        manager_ownership_want(m, knob_name(k), knob_value_to_string(k, p->knobs[k].target, buf));
        manager_ownership_flush(m);

        FOREACH_KNOB(k)
                targets[k] = p->knobs[k].action == KNOB_ACTION_WRITE ? p->knobs[k].target : KNOB_VALUE_UNSET;
        knob_write_order(targets, order);
        for (size_t i = 0; i < _KNOB_MAX; i++) {
                Knob k = order[i];
                const KnobStep *step = &p->knobs[k];
                bool failed = false;

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
                        break;
                case KNOB_ACTION_WRITE:
                        /* Failed: write_knob() read back what the kernel kept. */
                        failed = write_knob(m, k, step, changes) < 0;
                        if (failed)
                                errors++;
                        break;
                default:
                        break;
                }
                baseline_changed |= ownership_knob_commit(&m->own, k, step, failed, p->baseline[k], &m->applied[k],
                                                          &m->baseline.knobs[k]);
                if (m->present[k] && m->applied[k] != KNOB_VALUE_UNSET)
                        manager_ownership_note(m, knob_name(k), m->own.knobs[k], knob_value_to_string(k, m->applied[k], buf));
                manager_ownership_knob_judged(m, k, step);
        }

        m->counters.knob_errors += errors;
        *ret_baseline_changed = baseline_changed;
        return errors;
}

/* ---- persist ---- */

static int write_unit_record_snapshot(Manager *m) {
        g_autofree char *text = unit_record_format(m->plan.seen_sorted, m->plan.needs_restart);
        int r;

        r = runtime_file_write(m->runtime_dir, UNIT_RECORD_FILE, text);
        if (r < 0)
                return r;
        m->unit_record_written = true;
        m->unit_record_size = strlen(text);
        m->unit_record_appended = 0;
        return 0;
}

/* Only when the sets changed: unit churn outside policies costs no write. Not put off to batch
 * a burst: a thpd killed right after a start must still know the unit started under its
 * policy. A start appends its line; the snapshot is written first, after a failed append (the
 * file may end in part of a line, which a reader skips) and when unit_record_can_append() says
 * the appended lines grew too long. */
static void save_unit_record(Manager *m, const Plan *p) {
        GString *journal = m->plan.record_journal;
        int r;

        if (m->unit_record_written && !p->wanted_units_changed && !p->restart_hints_changed)
                return;
        if (m->unit_record_written &&
            unit_record_can_append(m->unit_record_size, m->unit_record_appended, journal->len, UNIT_RECORD_MAX)) {
                r = runtime_file_append(m->runtime_dir, UNIT_RECORD_FILE, journal->str);
                if (r >= 0) {
                        m->unit_record_appended += journal->len;
                        g_string_truncate(journal, 0);
                        return;
                }
                log_debug_errno(r, "Cannot append to the unit record in %s, writing it whole: %m", m->runtime_dir);
        }
        g_string_truncate(journal, 0);
        r = write_unit_record_snapshot(m);
        if (r < 0) {
                m->unit_record_written = false;
                log_warning_errno(r, "Cannot record the units of active policies in %s (%m): after a restart, "
                                  "thpd would list them as needing a restart.", m->runtime_dir);
        }
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

/* What resolve() weighed, kept with the target it gave. */
static void remember_active(Manager *m, const Plan *p) {
        g_clear_pointer(&m->active, g_array_unref);
        m->active = g_array_ref(p->active);
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
        bool baseline_changed, owned[_KNOB_MAX], yielded[_KNOB_MAX];

        g_array_set_clear_func(changes, knob_change_clear);
        observe(m, &o);
        ownership_plan_flags(&m->own, manager_units_known(m), owned, yielded);
        plan(&m->plan, &(PlanInput) {
                        .candidates = (const PlanCandidate *) o.candidates.candidates->data,
                        .n_candidates = o.candidates.candidates->len,
                        .changes_only = o.candidates.changes_only,
                        .released = (const char *const *) o.candidates.released->pdata,
                        .n_released = o.candidates.released->len,
                        .isolation = m->isolation,
                        .units_known = manager_units_known(m),
                        .now_usec = o.now,
                        .pool_grace_usec = m->settings.pool_grace_usec,
                        .present = m->present,
                        .current = o.current,
                        .owned = owned,
                        .recorded = m->baseline.knobs,
                        .pinned = m->settings.baseline,
                        .mitigation = m->mitigation,
                        .override = m->override,
                        .yielded = yielded,
                        .pool_baseline = m->baseline.pools,
                        .n_pool_baseline = m->baseline.n_pools,
                        .mthp_collapse = m->features.mthp_collapse,
                        .pmd_knob = m->features.pmd_knob,
                }, &m->target, &p);
        /* The released names are the selection's: the plan is done with them. */
        candidates_commit(&m->candidates, &o.candidates, &p, manager_units_known(m));
        remember_active(m, &p);
        if (m->target.pools_truncated)
                log_warning("More hugetlb pools requested than thpd tracks (%d); some are ignored.", RESOLVE_MAX_POOLS);

        m->last_apply_errors = actuate_knobs(m, &p, changes, &baseline_changed);
        /* Recorded at once, as the pools record what they follow (manager-pools.c). */
        if (baseline_changed)
                manager_save_baseline(m);
        if (manager_units_known(m))
                m->last_apply_errors += manager_apply_pools(m);
        manager_ownership_flush(m);
        arm_grace_timer(m, p.next_grace_usec);
        persist(m, &p);
        m->applied_once = true;
        manager_drift_applied(m);
        m->apply_generation++;
        publish(m, &p, changes);
        schedule_trim(m);
}
