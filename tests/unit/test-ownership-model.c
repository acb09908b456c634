/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <stdlib.h>

#include "drift.h"
#include "ownership-record.h"
#include "ownership.h"
#include "plan.h"
#include "pool-plan.h"
#include "test-util.h"
#include "util.h"

/* Random sequences of events run through the core as the daemon wires it (plan(), the pool
 * steps, drift_decide(), the ownership transitions, the ownership record written and parsed back
 * across restarts), and beside them through a small reference model written from the table in
 * docs/how-it-decides.md. After every event each item's value, its baseline and whose value it
 * is must agree. Three items: the enabled knob (a policy's and an override's), the defrag knob
 * (a storm mitigation's) and the 2 MiB pool (the policy's).
 *
 * THPD_MODEL_SEQUENCES=N runs N sequences instead of the unit suite's few; THPD_MODEL_EVENTS the
 * events in each (at least 50); THPD_MODEL_SEED the first seed. */

#define E KNOB_ENABLED
#define TUNED "tuned.service"
#define MAX_RESTORES 2U
#define POOL_KB UINT64_C(2048)
#define POOL_PAGES 8

enum { KNOB, DEFRAG, POOL, N_ITEMS };

static const char *const ITEMS[N_ITEMS] = { "enabled", "defrag", "hugepages-2048kB/nr_hugepages" };
static const Knob KNOB_OF[POOL] = { KNOB_ENABLED, KNOB_DEFRAG };
static const DriftSettings SETTINGS = { .max_restores = MAX_RESTORES, .restore_window_usec = 3600 * USEC_PER_SEC };
static KnobValue WORDS[3];                 /* enabled: always, madvise, never */
static KnobValue DEFRAG_WORDS[5];          /* always, defer, defer+madvise, madvise, never */
static KnobValue MITIGATION;               /* defrag=defer, as [Storm] Action=mitigate votes */
static const int64_t PAGES[4] = { 0, 4, 8, 12 };
static Policy POLICY;                      /* Units=app.service, Enabled=never, Pages=8 */

/* What outlives thpd: the kernel, the records in /run/thpd, the units. */
typedef struct World {
        int64_t kernel[N_ITEMS];
        bool fail_next[N_ITEMS]; /* the kernel refuses thpd's next write to it (EIO) */
        bool have_records;
        int64_t baseline[N_ITEMS]; /* the baseline record */
        GString *record;           /* the ownership record */
        bool unit_running;
        bool tuned_running;
} World;

/* thpd's memory, lost at a kill. */
typedef struct Thpd {
        bool running;
        PlanState plan;
        DriftState drift;
        Ownership own;
        SourceKind source[POOL];   /* each knob's, at the last apply */
        KnobValue mitigation;      /* defrag's vote while a storm is mitigated */
        uint64_t requested;        /* the pool's, at the last apply */
        int64_t applied[N_ITEMS];
        KnobValue override;
        char *line[N_ITEMS];       /* the record's line for each item; NULL: none */
        bool wanted[N_ITEMS];      /* a "want" line not followed by the item's state yet */
        uint64_t now;
} Thpd;

/* The reference: the table, and nothing else. */
typedef struct RefItem {
        int64_t kernel, baseline;
        Owner owner;
        bool conflict_tuned;       /* the conflict (owner WRITER) is TuneD's, else the admin's */
        unsigned restores_admin, restores_tuned;
        bool fail_next;
} RefItem;

typedef struct Ref {
        RefItem items[N_ITEMS];
        KnobValue override;
        bool mitigation;
        bool unit_running, tuned_running;
} Ref;

static Owner *owner_of(Thpd *t, int i) {
        return i < POOL ? &t->own.knobs[KNOB_OF[i]] : &t->own.pools[0];
}

static char *text(int i, int64_t v) {
        char buf[24];

        return i < POOL ? g_strdup(knob_value_to_string(KNOB_OF[i], v, buf)) : g_strdup_printf("%" PRIi64, v);
}

/* ---- the core, as the daemon wires it ---- */

static void sut_note(Thpd *t, World *w, int i) {
        g_autoptr(GString) line = g_string_new(NULL);
        g_autofree char *value = text(i, t->applied[i]);
        Owner o = *owner_of(t, i);
        const DriftConflict *c;

        if (o == OWNER_THPD)
                ownership_record_append_thpd(line, ITEMS[i], value);
        else if (o == OWNER_WRITER) {
                c = drift_conflict(&t->drift, ITEMS[i]);
                ck_assert_ptr_nonnull(c);
                ownership_record_append_yield(line, ITEMS[i], c->writer, c->writer_detail, c->value, c->since_realtime_usec);
        }
        if (o != OWNER_BASELINE) {
                if (!t->wanted[i] && streq_ptr(t->line[i], line->str))
                        return;
                g_string_append(w->record, line->str);
                g_free(t->line[i]);
                t->line[i] = g_strdup(line->str);
        } else if (t->line[i] || t->wanted[i]) {
                ownership_record_append_baseline(w->record, ITEMS[i]);
                g_clear_pointer(&t->line[i], g_free);
        }
        t->wanted[i] = false;
}

static void sut_sync_conflicts(Thpd *t) {
        for (int i = 0; i < N_ITEMS; i++)
                *owner_of(t, i) = ownership_conflict(*owner_of(t, i), drift_conflict(&t->drift, ITEMS[i]) != NULL);
}

/* A write of thpd's: the "want" line first, then the kernel takes it or refuses it. */
static bool sut_write_kernel(Thpd *t, World *w, int i, int64_t v) {
        g_autofree char *value = text(i, v);

        ownership_record_append_want(w->record, ITEMS[i], value);
        t->wanted[i] = true;
        if (w->fail_next[i]) {
                w->fail_next[i] = false;
                return false;
        }
        w->kernel[i] = v;
        return true;
}

static void sut_apply_pool(Thpd *t, World *w, const Target *target) {
        const PoolTarget *pt = target_find_pool(target, POOL_KB, POOL_NODE_ANY);
        PoolObservation o = {
                .has_baseline = true,
                .baseline = (uint64_t) w->baseline[POOL],
                .readable = true,
                .current = (uint64_t) w->kernel[POOL],
                .owned = t->own.pools[0] != OWNER_BASELINE,
                .yielded = t->own.pools[0] == OWNER_WRITER,
        };
        PoolStep step;

        ck_assert_ptr_nonnull(pt);
        pool_plan_step(pt, &o, &step);
        if (step.persist_baseline)
                w->baseline[POOL] = (int64_t) step.baseline;
        if ((step.action == POOL_ACTION_RESIZE || step.action == POOL_ACTION_OWN) && step.current != step.target)
                (void) sut_write_kernel(t, w, POOL, (int64_t) step.target);
        t->own.pools[0] = ownership_pool_step(t->own.pools[0], pt, &step, (uint64_t) w->kernel[POOL]);
        t->applied[POOL] = w->kernel[POOL];
        t->requested = pt->requested;
        sut_note(t, w, POOL);
}

static void sut_apply(Thpd *t, World *w) {
        bool present[_KNOB_MAX] = {}, owned[_KNOB_MAX], yielded[_KNOB_MAX];
        KnobValue unset[_KNOB_MAX], current[_KNOB_MAX], recorded[_KNOB_MAX], override[_KNOB_MAX],
                mitigation[_KNOB_MAX];
        PoolBaseline pool = { .page_size_kb = POOL_KB, .node = POOL_NODE_ANY, .pages = (uint64_t) w->baseline[POOL] };
        PlanUnit unit = { .name = "app.service", .running = true };
        PlanCandidate c = { .policy = &POLICY, .units = &unit, .n_units = w->unit_running ? 1 : 0 };
        Target target;
        Plan p;

        FOREACH_KNOB(k)
                unset[k] = current[k] = recorded[k] = override[k] = mitigation[k] = KNOB_VALUE_UNSET;
        for (int i = 0; i < POOL; i++) {
                present[KNOB_OF[i]] = true;
                current[KNOB_OF[i]] = w->kernel[i];
                recorded[KNOB_OF[i]] = w->baseline[i];
        }
        override[E] = t->override;
        mitigation[KNOB_DEFRAG] = t->mitigation;
        ownership_plan_flags(&t->own, true, owned, yielded);
        t->now += USEC_PER_SEC;
        plan(&t->plan, &(PlanInput) {
                        .candidates = &c,
                        .n_candidates = 1,
                        .units_known = true,
                        .now_usec = t->now,
                        .present = present,
                        .current = current,
                        .owned = owned,
                        .recorded = recorded,
                        .pinned = unset,
                        .mitigation = mitigation,
                        .override = override,
                        .yielded = yielded,
                        .pool_baseline = &pool,
                        .n_pool_baseline = 1,
                }, &target, &p);
        for (int i = 0; i < POOL; i++) {
                Knob k = KNOB_OF[i];
                const KnobStep *step = &p.knobs[k];
                bool failed = false;

                if (step->action == KNOB_ACTION_WRITE && !sut_write_kernel(t, w, i, step->target)) {
                        failed = true;
                        t->applied[i] = w->kernel[i];
                }
                (void) ownership_knob_commit(&t->own, k, step, failed, p.baseline[k], &t->applied[i], &w->baseline[i]);
                t->source[i] = target.source[k].kind;
                sut_note(t, w, i);
        }
        sut_apply_pool(t, w, &target);
        plan_done(&p);
}

static void sut_forget(Thpd *t) {
        plan_state_done(&t->plan);
        drift_state_done(&t->drift);
        for (int i = 0; i < N_ITEMS; i++)
                g_clear_pointer(&t->line[i], g_free);
        t->running = false;
}

static bool record_left(int i, const OwnershipRecordItem *it, int64_t baseline, int64_t current) {
        if (i < POOL)
                return ownership_record_knob_left(it, KNOB_OF[i], current);
        return ownership_record_pool_left(it, (uint64_t) baseline, (uint64_t) current);
}

static void sut_start(Thpd *t, World *w) {
        g_autoptr(GHashTable) items = ownership_record_items_new();
        bool recorded = w->have_records;

        *t = (Thpd) { .running = true, .override = KNOB_VALUE_UNSET, .mitigation = KNOB_VALUE_UNSET, .now = t->now };
        plan_state_init(&t->plan);
        drift_state_init(&t->drift);
        ownership_init(&t->own);
        if (!w->have_records) {
                w->have_records = true;
                memcpy(w->baseline, w->kernel, sizeof w->baseline);
        } else
                ck_assert_int_eq(ownership_record_parse(w->record->str, items), 0);
        g_string_truncate(w->record, 0);
        ownership_record_begin(w->record);
        for (int i = 0; i < N_ITEMS; i++) {
                const OwnershipRecordItem *it = g_hash_table_lookup(items, ITEMS[i]);
                bool down;

                *owner_of(t, i) = ownership_at_start(&(OwnershipStart) {
                                .at_baseline = w->kernel[i] == w->baseline[i],
                                .recorded = recorded,
                                .thpd_left = record_left(i, it, w->baseline[i], w->kernel[i]),
                                .yielded = it && it->yielded,
                        }, &down);
                if (i < POOL)
                        t->own.knobs_unjudged[KNOB_OF[i]] = down;
                if (*owner_of(t, i) == OWNER_WRITER)
                        drift_restore_conflict(&t->drift, ITEMS[i], it->writer, it->writer_detail, it->writer_value, it->since_usec);
                t->applied[i] = w->kernel[i];
        }
        /* thpd asks the manager about each writer in conflict: one that stopped ends it. */
        if (drift_has_writer(&t->drift, TUNED) && !w->tuned_running && drift_writer_state(&t->drift, TUNED, false, true))
                sut_sync_conflicts(t);
        /* This instance's snapshot. */
        for (int i = 0; i < N_ITEMS; i++)
                sut_note(t, w, i);
        sut_apply(t, w);
}

/* SIGTERM: gives back what is thpd's; the records go unless something was left to a writer or a
 * restore failed. */
static void sut_stop(Thpd *t, World *w) {
        bool failed = false;

        for (int i = 0; i < N_ITEMS; i++) {
                if (ownership_at_stop(*owner_of(t, i), w->kernel[i] == w->baseline[i]) != OWNERSHIP_STOP_RESTORE)
                        continue;
                if (w->fail_next[i]) {
                        w->fail_next[i] = false;
                        failed = true;
                } else
                        w->kernel[i] = w->baseline[i];
        }
        if (!failed && !ownership_keep_records(&t->own, 1)) {
                w->have_records = false;
                g_string_truncate(w->record, 0);
        }
        sut_forget(t);
}

static void sut_write(Thpd *t, World *w, int i, const char *writer, int64_t v) {
        g_autofree char *found = text(i, v);
        DriftAction a;
        bool held;

        w->kernel[i] = v;
        if (!t->running || v == t->applied[i])
                return;
        held = i < POOL ? ownership_knob_held(*owner_of(t, i), t->source[i], false)
                        : ownership_pool_held(t->own.pools[0], t->requested);
        t->now += USEC_PER_SEC;
        a = drift_decide(&t->drift, &SETTINGS, ITEMS[i], held, writer, found, t->now, t->now);
        *owner_of(t, i) = ownership_after_drift(*owner_of(t, i), a);
        t->applied[i] = v;
        if (*owner_of(t, i) == OWNER_WRITER)
                sut_note(t, w, i);
        sut_apply(t, w);
}

/* ---- the reference ---- */

/* Whether a source wants the item: the policy (its unit runs), the override, the mitigation. */
static bool ref_wanted(const Ref *r, int i) {
        switch (i) {
        case KNOB:
                return r->override != KNOB_VALUE_UNSET || r->unit_running;
        case DEFRAG:
                return r->mitigation;
        default:
                return r->unit_running;
        }
}

static int64_t ref_target(const Ref *r, int i) {
        const RefItem *it = &r->items[i];

        switch (i) {
        case KNOB:
                return r->override != KNOB_VALUE_UNSET ? r->override : r->unit_running ? POLICY.knobs[E] : it->baseline;
        case DEFRAG:
                return r->mitigation ? MITIGATION : it->baseline;
        default:
                return it->baseline + (r->unit_running ? POOL_PAGES : 0);
        }
}

static void ref_apply(Ref *r) {
        for (int i = 0; i < N_ITEMS; i++) {
                RefItem *it = &r->items[i];
                bool held = ref_wanted(r, i);
                int64_t target = ref_target(r, i);

                if (it->owner == OWNER_WRITER)
                        continue;
                if (it->owner == OWNER_BASELINE && !held) {
                        it->baseline = it->kernel;
                        continue;
                }
                if (it->kernel != target) {
                        if (it->fail_next)
                                it->fail_next = false;
                        else
                                it->kernel = target;
                }
                it->owner = held || it->kernel != it->baseline ? OWNER_THPD : OWNER_BASELINE;
        }
}

static void ref_write(Ref *r, int i, bool tuned, int64_t v) {
        RefItem *it = &r->items[i];
        bool held = ref_wanted(r, i) || it->owner != OWNER_BASELINE;
        unsigned *restores = tuned ? &it->restores_tuned : &it->restores_admin;

        if (v == it->kernel)
                return;
        it->kernel = v;
        /* In conflict already: the writer's, whoever writes. */
        if (!held)
                it->owner = OWNER_BASELINE;
        else if (it->owner != OWNER_WRITER && *restores >= MAX_RESTORES) {
                it->owner = OWNER_WRITER;
                it->conflict_tuned = tuned;
        } else if (it->owner != OWNER_WRITER)
                (*restores)++;
        /* Any change seen is answered by an apply, which also retries what failed. */
        ref_apply(r);
}

/* A conflict ends (its writer stopped, a reload): thpd's again, and the fight starts afresh. */
static void ref_conflict_ends(RefItem *it) {
        if (it->owner == OWNER_WRITER)
                it->owner = OWNER_THPD;
}

/* Returns whether a conflict ended, which thpd answers with an apply. */
static bool ref_tuned_stops(Ref *r) {
        bool ended = false;

        r->tuned_running = false;
        for (int i = 0; i < N_ITEMS; i++)
                ended |= r->items[i].owner == OWNER_WRITER && r->items[i].conflict_tuned;
        if (!ended)
                return false;
        for (int i = 0; i < N_ITEMS; i++) {
                RefItem *it = &r->items[i];

                it->restores_tuned = 0;
                if (it->conflict_tuned)
                        ref_conflict_ends(it);
        }
        return true;
}

/* A start with the records of the last instance; changed[i]: written while thpd was down. */
static void ref_restart(Ref *r, const bool changed[N_ITEMS]) {
        /* Memory: a storm still raging is mitigated again once the new instance sees it. */
        r->override = KNOB_VALUE_UNSET;
        r->mitigation = false;
        for (int i = 0; i < N_ITEMS; i++) {
                RefItem *it = &r->items[i];

                it->restores_admin = it->restores_tuned = 0;
                if (it->owner == OWNER_WRITER)
                        continue;
                if (it->kernel == it->baseline || changed[i])
                        /* Written while thpd was down: judged like drift, by the apply. */
                        it->owner = OWNER_BASELINE;
        }
        if (!r->tuned_running)
                (void) ref_tuned_stops(r);
        ref_apply(r);
}

/* ---- the events ---- */

typedef enum Event {
        EV_UNIT_START,
        EV_UNIT_STOP,
        EV_ADMIN_WRITES,
        EV_TUNED_WRITES,
        EV_TUNED_KEEPS_WRITING,
        EV_TUNED_STOPS,
        EV_WRITE_FAILS,
        EV_KILL_RESTART,
        EV_KILL_ADMIN_WRITES_RESTART,
        EV_KILL_TUNED_STOPS_RESTART,
        EV_TERM_START,
        EV_RELOAD,
        EV_OVERRIDE,
        EV_OVERRIDE_EXPIRES,
        EV_STORM_MITIGATED,
        EV_STORM_CLEARS,
        _EV_MAX,
} Event;

static const char *const event_names[_EV_MAX] = {
        "unit starts", "unit stops", "admin writes", "TuneD writes", "TuneD writes again and again", "TuneD stops",
        "next write fails", "SIGKILL, restart", "SIGKILL, admin writes, restart", "SIGKILL, TuneD stops, restart",
        "SIGTERM, start", "reload", "override", "override expires", "storm mitigated", "storm clears",
};

static void run_event(Thpd *t, World *w, Ref *r, Event e, int i, int64_t v, KnobValue word) {
        bool changed[N_ITEMS] = {};

        switch (e) {
        case EV_UNIT_START:
        case EV_UNIT_STOP:
                w->unit_running = r->unit_running = e == EV_UNIT_START;
                sut_apply(t, w);
                ref_apply(r);
                break;
        case EV_ADMIN_WRITES:
                sut_write(t, w, i, NULL, v);
                ref_write(r, i, false, v);
                break;
        case EV_TUNED_WRITES:
        case EV_TUNED_KEEPS_WRITING:
                w->tuned_running = r->tuned_running = true;
                for (unsigned n = 0; n < (e == EV_TUNED_WRITES ? 1 : MAX_RESTORES + 2); n++) {
                        sut_write(t, w, i, TUNED, v);
                        ref_write(r, i, true, v);
                }
                break;
        case EV_TUNED_STOPS:
                w->tuned_running = false;
                if (drift_writer_state(&t->drift, TUNED, false, true)) {
                        sut_sync_conflicts(t);
                        sut_apply(t, w);
                }
                if (ref_tuned_stops(r))
                        ref_apply(r);
                break;
        case EV_WRITE_FAILS:
                w->fail_next[i] = r->items[i].fail_next = true;
                break;
        case EV_KILL_RESTART:
        case EV_KILL_ADMIN_WRITES_RESTART:
        case EV_KILL_TUNED_STOPS_RESTART:
                sut_forget(t);
                if (e == EV_KILL_ADMIN_WRITES_RESTART) {
                        changed[i] = v != w->kernel[i];
                        w->kernel[i] = r->items[i].kernel = v;
                }
                if (e == EV_KILL_TUNED_STOPS_RESTART)
                        w->tuned_running = r->tuned_running = false;
                sut_start(t, w);
                ref_restart(r, changed);
                break;
        case EV_TERM_START: {
                bool failed = false, yielded = false;

                sut_stop(t, w);
                sut_start(t, w);
                for (int n = 0; n < N_ITEMS; n++) {
                        RefItem *it = &r->items[n];

                        yielded |= it->owner == OWNER_WRITER;
                        if (it->owner != OWNER_THPD || it->kernel == it->baseline)
                                continue;
                        if (it->fail_next) {
                                it->fail_next = false;
                                failed = true;
                        } else
                                it->kernel = it->baseline;
                }
                if (!failed && !yielded) {
                        /* The records went: a first start. */
                        r->override = KNOB_VALUE_UNSET;
                        r->mitigation = false;
                        for (int n = 0; n < N_ITEMS; n++)
                                r->items[n] = (RefItem) { .kernel = r->items[n].kernel, .baseline = r->items[n].kernel,
                                                          .fail_next = r->items[n].fail_next };
                        ref_apply(r);
                } else
                        ref_restart(r, changed);
                break;
        }
        case EV_RELOAD:
                drift_reset(&t->drift);
                sut_sync_conflicts(t);
                sut_apply(t, w);
                for (int n = 0; n < N_ITEMS; n++) {
                        r->items[n].restores_admin = r->items[n].restores_tuned = 0;
                        ref_conflict_ends(&r->items[n]);
                }
                ref_apply(r);
                break;
        case EV_OVERRIDE:
        case EV_OVERRIDE_EXPIRES:
                t->override = r->override = e == EV_OVERRIDE ? word : KNOB_VALUE_UNSET;
                sut_apply(t, w);
                ref_apply(r);
                break;
        case EV_STORM_MITIGATED:
        case EV_STORM_CLEARS:
                r->mitigation = e == EV_STORM_MITIGATED;
                t->mitigation = r->mitigation ? MITIGATION : KNOB_VALUE_UNSET;
                sut_apply(t, w);
                ref_apply(r);
                break;
        default:
                abort();
        }
}

/* How often each event ran, and how often a conflict began, over all sequences. */
static uint64_t event_counts[_EV_MAX], conflicts_begun;

/* Runs one sequence; returns the number of the first event after which the two differ (1-based),
 * or 0, with the events in trace. */
static unsigned run_sequence(unsigned seed, unsigned n_events, GString *trace) {
        World w = { .record = g_string_new(NULL), .kernel = { WORDS[1], DEFRAG_WORDS[3], 0 } };
        Ref r = { .override = KNOB_VALUE_UNSET };
        Thpd t = {};
        unsigned diverged = 0;
        GRand *rand = g_rand_new_with_seed(seed);

        sut_start(&t, &w);
        for (int i = 0; i < N_ITEMS; i++)
                r.items[i] = (RefItem) { .kernel = w.kernel[i], .baseline = w.kernel[i] };
        ref_apply(&r);
        for (unsigned n = 0; n < n_events && diverged == 0; n++) {
                Event e = (Event) g_rand_int_range(rand, 0, _EV_MAX);
                int i = g_rand_int_range(rand, 0, N_ITEMS);
                KnobValue word = WORDS[g_rand_int_range(rand, 0, 3)];
                int64_t v = i == KNOB     ? word
                            : i == DEFRAG ? DEFRAG_WORDS[g_rand_int_range(rand, 0, 5)]
                                          : PAGES[g_rand_int_range(rand, 0, 4)];
                Owner before[N_ITEMS];

                for (int j = 0; j < N_ITEMS; j++)
                        before[j] = r.items[j].owner;
                char buf[24];

                run_event(&t, &w, &r, e, i, v, word);
                event_counts[e]++;
                g_string_append_printf(trace, "%u: %s (%s %" PRIi64 ", override %s):", n + 1, event_names[e], ITEMS[i],
                                       v, knob_value_to_string(E, word, buf));
                for (int j = 0; j < N_ITEMS; j++) {
                        RefItem *it = &r.items[j];

                        conflicts_begun += before[j] != OWNER_WRITER && it->owner == OWNER_WRITER;
                        g_string_append_printf(trace, " [%s %" PRIi64 "/%" PRIi64 ", baseline %" PRIi64 "/%" PRIi64
                                               ", %s/%s]", ITEMS[j], w.kernel[j], it->kernel, w.baseline[j],
                                               it->baseline, owner_to_string(*owner_of(&t, j)), owner_to_string(it->owner));
                        if (w.kernel[j] != it->kernel || w.baseline[j] != it->baseline || *owner_of(&t, j) != it->owner)
                                diverged = n + 1;
                }
                g_string_append_c(trace, '\n');
        }
        sut_forget(&t);
        g_string_free(w.record, TRUE);
        g_rand_free(rand);
        return diverged;
}

static unsigned env_unsigned(const char *name, unsigned dflt) {
        const char *s = getenv(name);
        uint64_t v;

        return s && parse_u64(s, &v) >= 0 && v > 0 && v <= UINT32_MAX ? (unsigned) v : dflt;
}

START_TEST(test_model) {
        unsigned sequences = env_unsigned("THPD_MODEL_SEQUENCES", 1000);
        unsigned events = MAX(env_unsigned("THPD_MODEL_EVENTS", 60), 50U);
        unsigned seed = env_unsigned("THPD_MODEL_SEED", 1);
        unsigned differences = 0;

        for (unsigned i = 0; i < sequences; i++) {
                g_autoptr(GString) trace = g_string_new(NULL);
                unsigned at = run_sequence(seed + i, events, trace);

                if (at == 0)
                        continue;
                if (differences++ == 0)
                        fprintf(stderr, "seed %u differs at event %u:\n%s", seed + i, at, trace->str);
        }
        fprintf(stderr, "ownership model: %u sequences x %u events, %u with a difference; %" PRIu64 " conflicts begun",
                sequences, events, differences, conflicts_begun);
        for (Event e = 0; e < _EV_MAX; e++)
                fprintf(stderr, "; %s: %" PRIu64, event_names[e], event_counts[e]);
        fputc('\n', stderr);
        ck_assert_uint_eq(differences, 0);
}
END_TEST

int main(void) {
        Suite *s = suite_create("ownership-model");
        TCase *tc = tcase_create("model");
        const char *words[] = { "always", "madvise", "never" };
        const char *defrag_words[] = { "always", "defer", "defer+madvise", "madvise", "never" };

        for (size_t i = 0; i < G_N_ELEMENTS(words); i++)
                if (knob_value_from_string(E, words[i], &WORDS[i]) < 0)
                        abort();
        for (size_t i = 0; i < G_N_ELEMENTS(defrag_words); i++)
                if (knob_value_from_string(KNOB_DEFRAG, defrag_words[i], &DEFRAG_WORDS[i]) < 0)
                        abort();
        MITIGATION = DEFRAG_WORDS[1];
        POLICY = (Policy) { .name = (char *) "app.conf", .path = (char *) "/etc/thpd/policy.d/app.conf" };
        FOREACH_KNOB(k)
                POLICY.knobs[k] = KNOB_VALUE_UNSET;
        POLICY.service_thp = KNOB_VALUE_UNSET;
        POLICY.knobs[E] = WORDS[2];
        POLICY.has_pool = true;
        POLICY.pool = (PoolRequest) { .page_size_kb = POOL_KB, .node = POOL_NODE_ANY, .pages = POOL_PAGES };

        tcase_set_timeout(tc, 0);
        tcase_add_test(tc, test_model);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}
