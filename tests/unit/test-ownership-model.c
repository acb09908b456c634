/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <stdlib.h>

#include "drift.h"
#include "ownership-record.h"
#include "ownership.h"
#include "plan.h"
#include "test-util.h"
#include "util.h"

/* Random sequences of events run through the core as the daemon wires it (plan(), drift_decide(),
 * the ownership transitions, the ownership record written and parsed back across restarts),
 * and beside them through a small reference model written from the table in
 * docs/how-it-decides.md. After every event the kernel's value, the baseline and whose value it
 * is must agree. One knob, enabled; pools are not modelled.
 *
 * THPD_MODEL_SEQUENCES=N runs N sequences instead of the unit suite's few; THPD_MODEL_EVENTS the
 * events in each (at least 50); THPD_MODEL_SEED the first seed. */

#define E KNOB_ENABLED
#define ITEM "enabled"
#define TUNED "tuned.service"
#define MAX_RESTORES 2U

static const DriftSettings SETTINGS = { .max_restores = MAX_RESTORES, .restore_window_usec = 3600 * USEC_PER_SEC };
static KnobValue WORDS[3]; /* always, madvise, never */
static Policy POLICY;      /* Units=app.service, Enabled=never */

/* What outlives thpd: the kernel, the records in /run/thpd, the units. */
typedef struct World {
        KnobValue kernel;
        bool fail_next;        /* the kernel refuses thpd's next write (EIO) */
        bool have_records;
        KnobValue baseline;    /* the baseline record */
        GString *record;       /* the ownership record */
        bool unit_running;
        bool tuned_running;
} World;

/* thpd's memory, lost at a kill. */
typedef struct Thpd {
        bool running;
        PlanState plan;
        DriftState drift;
        Ownership own;
        SourceKind source;     /* of the last apply's target */
        KnobValue applied;
        KnobValue override;
        char *line;            /* the record's line for the knob; NULL: none */
        bool wanted;           /* a "want" line not followed by the knob's state yet */
        uint64_t now;
} Thpd;

/* The reference: the table, and nothing else. */
typedef struct Ref {
        KnobValue kernel, baseline, override;
        Owner owner;
        bool conflict_tuned;   /* the conflict (owner WRITER) is TuneD's, else the admin's */
        unsigned restores_admin, restores_tuned;
        bool fail_next, unit_running, tuned_running;
} Ref;

static const char *word(KnobValue v, char buf[static 24]) {
        return knob_value_to_string(E, v, buf);
}

/* ---- the core, as the daemon wires it ---- */

static void sut_note(Thpd *t, World *w, Owner o, KnobValue v) {
        g_autoptr(GString) line = g_string_new(NULL);
        const DriftConflict *c;
        char buf[24];

        if (o == OWNER_THPD)
                ownership_record_append_thpd(line, ITEM, word(v, buf));
        else if (o == OWNER_WRITER) {
                c = drift_conflict(&t->drift, ITEM);
                ck_assert_ptr_nonnull(c);
                ownership_record_append_yield(line, ITEM, c->writer, c->value, c->since_realtime_usec);
        }
        if (o != OWNER_BASELINE) {
                if (!t->wanted && streq_ptr(t->line, line->str))
                        return;
                g_string_append(w->record, line->str);
                g_free(t->line);
                t->line = g_strdup(line->str);
        } else if (t->line || t->wanted) {
                ownership_record_append_baseline(w->record, ITEM);
                g_clear_pointer(&t->line, g_free);
        }
        t->wanted = false;
}

static void sut_sync_conflicts(Thpd *t) {
        t->own.knobs[E] = ownership_conflict(t->own.knobs[E], drift_conflict(&t->drift, ITEM) != NULL);
}

static void sut_apply(Thpd *t, World *w) {
        bool present[_KNOB_MAX] = {}, owned[_KNOB_MAX], yielded[_KNOB_MAX], failed = false;
        KnobValue unset[_KNOB_MAX], current[_KNOB_MAX], recorded[_KNOB_MAX], override[_KNOB_MAX];
        PlanUnit unit = { .name = "app.service", .running = true };
        PlanCandidate c = { .policy = &POLICY, .units = &unit, .n_units = w->unit_running ? 1 : 0 };
        Target target;
        Plan p;
        KnobStep step;
        char buf[24];

        FOREACH_KNOB(k)
                unset[k] = current[k] = recorded[k] = override[k] = KNOB_VALUE_UNSET;
        present[E] = true;
        current[E] = w->kernel;
        recorded[E] = w->baseline;
        override[E] = t->override;
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
                        .mitigation = unset,
                        .override = override,
                        .yielded = yielded,
                }, &target, &p);
        step = p.knobs[E];
        if (step.action == KNOB_ACTION_WRITE) {
                ownership_record_append_want(w->record, ITEM, word(step.target, buf));
                t->wanted = true;
                if (w->fail_next) {
                        w->fail_next = false;
                        failed = true;
                        t->applied = w->kernel;
                } else
                        w->kernel = step.target;
        }
        (void) ownership_knob_commit(&t->own, E, &step, failed, p.baseline[E], &t->applied, &w->baseline);
        sut_note(t, w, t->own.knobs[E], t->applied);
        t->source = target.source[E].kind;
        plan_done(&p);
}

static void sut_forget(Thpd *t) {
        plan_state_done(&t->plan);
        drift_state_done(&t->drift);
        g_clear_pointer(&t->line, g_free);
        t->running = false;
}

static void sut_start(Thpd *t, World *w) {
        g_autoptr(GHashTable) items = ownership_record_items_new();
        const OwnershipRecordItem *it = NULL;
        g_autoptr(GString) snapshot = g_string_new(NULL);
        bool recorded = w->have_records, down;

        *t = (Thpd) { .running = true, .override = KNOB_VALUE_UNSET, .now = t->now };
        plan_state_init(&t->plan);
        drift_state_init(&t->drift);
        ownership_init(&t->own);
        if (!w->have_records) {
                w->have_records = true;
                w->baseline = w->kernel;
        } else {
                ck_assert_int_eq(ownership_record_parse(w->record->str, items), 0);
                it = g_hash_table_lookup(items, ITEM);
        }
        t->own.knobs[E] = ownership_at_start(&(OwnershipStart) {
                        .at_baseline = w->kernel == w->baseline,
                        .recorded = recorded,
                        .thpd_left = ownership_record_knob_left(it, E, w->kernel),
                        .yielded = it && it->yielded,
                }, &down);
        t->own.knobs_unjudged[E] = down;
        if (t->own.knobs[E] == OWNER_WRITER) {
                drift_restore_conflict(&t->drift, ITEM, it->writer, it->writer_value, it->since_usec);
                /* thpd asks the manager about the writer: one that stopped ends its conflict. */
                if (streq_ptr(it->writer, TUNED) && !w->tuned_running &&
                    drift_writer_state(&t->drift, TUNED, false, true))
                        sut_sync_conflicts(t);
        }
        t->applied = w->kernel;
        /* This instance's snapshot. */
        g_string_truncate(w->record, 0);
        ownership_record_begin(w->record);
        sut_note(t, w, t->own.knobs[E], w->kernel);
        sut_apply(t, w);
}

/* SIGTERM: gives back what is thpd's; the records go unless something was left to a writer or a
 * restore failed. */
static void sut_stop(Thpd *t, World *w) {
        bool failed = false;

        if (ownership_at_stop(t->own.knobs[E], w->kernel == w->baseline) == OWNERSHIP_STOP_RESTORE) {
                if (w->fail_next) {
                        w->fail_next = false;
                        failed = true;
                } else
                        w->kernel = w->baseline;
        }
        if (!failed && !ownership_keep_records(&t->own, 0)) {
                w->have_records = false;
                g_string_truncate(w->record, 0);
        }
        sut_forget(t);
}

static void sut_write(Thpd *t, World *w, const char *writer, KnobValue v) {
        DriftAction a;
        char buf[24];
        bool held;

        w->kernel = v;
        if (!t->running || v == t->applied)
                return;
        held = ownership_knob_held(t->own.knobs[E], t->source, false);
        t->now += USEC_PER_SEC;
        a = drift_decide(&t->drift, &SETTINGS, ITEM, held, writer, word(v, buf), t->now, t->now);
        t->own.knobs[E] = ownership_after_drift(t->own.knobs[E], a);
        if (t->own.knobs[E] == OWNER_WRITER)
                sut_note(t, w, OWNER_WRITER, v);
        t->applied = v;
        sut_apply(t, w);
}

/* ---- the reference ---- */

static void ref_apply(Ref *r) {
        bool held = r->override != KNOB_VALUE_UNSET || r->unit_running;
        KnobValue target = r->override != KNOB_VALUE_UNSET ? r->override : r->unit_running ? POLICY.knobs[E] : r->baseline;

        if (r->owner == OWNER_WRITER)
                return;
        if (r->owner == OWNER_BASELINE && !held) {
                r->baseline = r->kernel;
                return;
        }
        if (r->kernel != target) {
                if (r->fail_next)
                        r->fail_next = false;
                else
                        r->kernel = target;
        }
        r->owner = held || r->kernel != r->baseline ? OWNER_THPD : OWNER_BASELINE;
}

static void ref_write(Ref *r, bool tuned, KnobValue v) {
        bool held = r->override != KNOB_VALUE_UNSET || r->unit_running || r->owner != OWNER_BASELINE;
        unsigned *restores = tuned ? &r->restores_tuned : &r->restores_admin;

        if (v == r->kernel)
                return;
        r->kernel = v;
        if (!held)
                r->owner = OWNER_BASELINE;
        else if (r->owner == OWNER_WRITER)
                return;
        else if (*restores >= MAX_RESTORES) {
                r->owner = OWNER_WRITER;
                r->conflict_tuned = tuned;
                return;
        } else
                (*restores)++;
        ref_apply(r);
}

static void ref_conflict_ends(Ref *r) {
        if (r->owner == OWNER_WRITER)
                r->owner = OWNER_THPD;
}

/* A start with the records of the last instance; changed: written while thpd was down. */
static void ref_restart(Ref *r, bool changed) {
        r->override = KNOB_VALUE_UNSET;
        r->restores_admin = r->restores_tuned = 0;
        if (r->owner == OWNER_WRITER) {
                if (r->conflict_tuned && !r->tuned_running)
                        r->owner = OWNER_THPD;
        } else if (r->kernel == r->baseline)
                r->owner = OWNER_BASELINE;
        else if (changed)
                /* Written while thpd was down: judged like drift, by the apply. */
                r->owner = OWNER_BASELINE;
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
        _EV_MAX,
} Event;

static const char *const event_names[_EV_MAX] = {
        "unit starts", "unit stops", "admin writes", "TuneD writes", "TuneD writes again and again", "TuneD stops", "next write fails",
        "SIGKILL, restart", "SIGKILL, admin writes, restart", "SIGKILL, TuneD stops, restart",
        "SIGTERM, start", "reload", "override", "override expires",
};

static void run_event(Thpd *t, World *w, Ref *r, Event e, KnobValue v) {
        switch (e) {
        case EV_UNIT_START:
        case EV_UNIT_STOP:
                w->unit_running = r->unit_running = e == EV_UNIT_START;
                sut_apply(t, w);
                ref_apply(r);
                break;
        case EV_ADMIN_WRITES:
                sut_write(t, w, NULL, v);
                ref_write(r, false, v);
                break;
        case EV_TUNED_WRITES:
                w->tuned_running = r->tuned_running = true;
                sut_write(t, w, TUNED, v);
                ref_write(r, true, v);
                break;
        case EV_TUNED_KEEPS_WRITING:
                w->tuned_running = r->tuned_running = true;
                for (unsigned i = 0; i <= MAX_RESTORES + 1; i++) {
                        sut_write(t, w, TUNED, v);
                        ref_write(r, true, v);
                }
                break;
        case EV_TUNED_STOPS:
                w->tuned_running = r->tuned_running = false;
                if (drift_writer_state(&t->drift, TUNED, false, true)) {
                        sut_sync_conflicts(t);
                        sut_apply(t, w);
                }
                if (r->owner == OWNER_WRITER && r->conflict_tuned) {
                        r->restores_tuned = 0;
                        ref_conflict_ends(r);
                        ref_apply(r);
                }
                break;
        case EV_WRITE_FAILS:
                w->fail_next = r->fail_next = true;
                break;
        case EV_KILL_RESTART:
        case EV_KILL_ADMIN_WRITES_RESTART:
        case EV_KILL_TUNED_STOPS_RESTART: {
                bool changed = e == EV_KILL_ADMIN_WRITES_RESTART && v != w->kernel;

                sut_forget(t);
                if (e == EV_KILL_ADMIN_WRITES_RESTART)
                        w->kernel = r->kernel = v;
                if (e == EV_KILL_TUNED_STOPS_RESTART)
                        w->tuned_running = r->tuned_running = false;
                sut_start(t, w);
                ref_restart(r, changed);
                break;
        }
        case EV_TERM_START: {
                bool failed = false;

                sut_stop(t, w);
                sut_start(t, w);
                if (r->owner == OWNER_THPD && r->kernel != r->baseline) {
                        if (r->fail_next) {
                                r->fail_next = false;
                                failed = true;
                        } else
                                r->kernel = r->baseline;
                }
                if (!failed && r->owner != OWNER_WRITER) {
                        /* The records went: a first start. */
                        r->baseline = r->kernel;
                        r->owner = OWNER_BASELINE;
                        r->override = KNOB_VALUE_UNSET;
                        r->restores_admin = r->restores_tuned = 0;
                        ref_apply(r);
                } else
                        ref_restart(r, false);
                break;
        }
        case EV_RELOAD:
                drift_reset(&t->drift);
                sut_sync_conflicts(t);
                sut_apply(t, w);
                r->restores_admin = r->restores_tuned = 0;
                ref_conflict_ends(r);
                ref_apply(r);
                break;
        case EV_OVERRIDE:
        case EV_OVERRIDE_EXPIRES:
                t->override = r->override = e == EV_OVERRIDE ? v : KNOB_VALUE_UNSET;
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
        World w = { .record = g_string_new(NULL), .kernel = WORDS[1] };
        Ref r = { .kernel = WORDS[1], .override = KNOB_VALUE_UNSET };
        Thpd t = {};
        unsigned diverged = 0;
        GRand *rand = g_rand_new_with_seed(seed);

        sut_start(&t, &w);
        r.baseline = r.kernel;
        ref_apply(&r);
        for (unsigned i = 0; i < n_events && diverged == 0; i++) {
                Event e = (Event) g_rand_int_range(rand, 0, _EV_MAX);
                KnobValue v = WORDS[g_rand_int_range(rand, 0, 3)];
                char a[24], b[24], c[24];

                Owner before = r.owner;

                run_event(&t, &w, &r, e, v);
                event_counts[e]++;
                conflicts_begun += before != OWNER_WRITER && r.owner == OWNER_WRITER;
                g_string_append_printf(trace, "%u: %s (%s): kernel %s/%s, baseline %s, owner %s/%s\n", i + 1,
                                       event_names[e], word(v, a), word(w.kernel, b), word(r.kernel, c),
                                       word(w.baseline, a), owner_to_string(t.own.knobs[E]), owner_to_string(r.owner));
                if (w.kernel != r.kernel || w.baseline != r.baseline || t.own.knobs[E] != r.owner)
                        diverged = i + 1;
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

        for (size_t i = 0; i < G_N_ELEMENTS(words); i++)
                if (knob_value_from_string(E, words[i], &WORDS[i]) < 0)
                        abort();
        POLICY = (Policy) { .name = (char *) "app.conf", .path = (char *) "/etc/thpd/policy.d/app.conf" };
        FOREACH_KNOB(k)
                POLICY.knobs[k] = KNOB_VALUE_UNSET;
        POLICY.service_thp = KNOB_VALUE_UNSET;
        POLICY.knobs[E] = WORDS[2];

        tcase_set_timeout(tc, 0);
        tcase_add_test(tc, test_model);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}
