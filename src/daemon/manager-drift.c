/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <syslog.h>
#include <systemd/sd-journal.h>

#include <inttypes.h>

#include "log.h"
#include "manager-drift.h"
#include "manager-pools.h"
#include "sysfs.h"
#include "util.h"

typedef struct DriftCount {
        char *knob;
        char *writer;
        uint64_t count;
} DriftCount;

static void drift_count_free(gpointer p) {
        DriftCount *c = p;

        g_free(c->knob);
        g_free(c->writer);
        g_free(c);
}

/* The metrics label of a change nobody could be credited with; no unit is named like this. */
#define UNKNOWN_WRITER_LABEL "unknown"

static void count_drift(Manager *m, const char *item, const char *writer) {
        g_autofree char *key = g_strdup_printf("%s\n%s", item, writer ?: "");
        DriftCount *c;

        if (!m->drift_counts)
                m->drift_counts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, drift_count_free);
        c = g_hash_table_lookup(m->drift_counts, key);
        if (!c) {
                c = g_new0(DriftCount, 1);
                c->knob = g_strdup(item);
                c->writer = g_strdup(writer ?: UNKNOWN_WRITER_LABEL);
                g_hash_table_insert(m->drift_counts, g_steal_pointer(&key), c);
        }
        c->count++;
}

static gint compare_counts(gconstpointer a, gconstpointer b) {
        const MetricsDrift *x = a, *y = b;
        int r = strcmp(x->knob, y->knob);

        return r != 0 ? r : strcmp(x->writer, y->writer);
}

GArray *manager_drift_counts(const Manager *m) {
        GArray *counts = g_array_new(FALSE, TRUE, sizeof(MetricsDrift));
        GHashTableIter iter;
        DriftCount *c;

        if (!m->drift_counts)
                return counts;
        g_hash_table_iter_init(&iter, m->drift_counts);
        while (g_hash_table_iter_next(&iter, NULL, (gpointer *) &c)) {
                MetricsDrift d = { .knob = c->knob, .writer = c->writer, .count = c->count };

                g_array_append_val(counts, d);
        }
        g_array_sort(counts, compare_counts);
        return counts;
}

/* Whether a source wants the knob's value: exactly the knobs the plan would not adopt. */
static bool knob_held(const Manager *m, Knob k) {
        return m->target.source[k].kind != SOURCE_BASELINE || m->owned[k] ||
               m->settings.baseline[k] != KNOB_VALUE_UNSET;
}

/* Why thpd holds the item, for a restore. */
static char *item_reason(Manager *m, const char *item) {
        Knob k;

        if (knob_from_name(item, &k) >= 0)
                return manager_knob_reason(m, k);
        for (guint i = 0; i < m->pools->len; i++) {
                const PoolStatus *p = &g_array_index(m->pools, PoolStatus, i);
                g_autofree char *name = manager_pool_item(p->page_size_kb, p->node);

                if (streq(name, item))
                        return manager_pool_reason(m, p->page_size_kb, p->node);
        }
        return g_strdup("no source");
}

static char *describe_event(Manager *m, const DriftEvent *e) {
        g_autofree char *who = drift_describe_writer(e->writer, e->job_age_usec);
        g_autofree char *what = NULL;

        switch (e->action) {
        case DRIFT_ACTION_RESTORE: {
                g_autofree char *reason = item_reason(m, e->item);

                what = g_strdup_printf("restoring %s (%s)", e->expected, reason);
                break;
        }
        case DRIFT_ACTION_ADOPT:
                what = g_strdup("no policy holds it; taking it as the baseline");
                break;
        default: {
                const DriftConflict *c = drift_conflict(&m->drift, e->item);

                what = c ? drift_describe_conflict(c) : g_strdup("thpd no longer restores it");
                break;
        }
        }
        return g_strdup_printf("%s: found %s instead of %s, %s; %s", e->item, e->found, e->expected, who, what);
}

static void journal_event(Manager *m, const DriftEvent *e) {
        g_autofree char *message = describe_event(m, e);
        int priority = e->action == DRIFT_ACTION_YIELD ? LOG_WARNING : LOG_NOTICE;
        int r;

        r = sd_journal_send("MESSAGE=%s", message,
                            "MESSAGE_ID=" DRIFT_MESSAGE_ID,
                            "PRIORITY=%d", priority,
                            "SYSLOG_IDENTIFIER=%s", program_invocation_short_name,
                            "THPD_KNOB=%s", e->item,
                            "THPD_VALUE_EXPECTED=%s", e->expected,
                            "THPD_VALUE_FOUND=%s", e->found,
                            "THPD_WRITER=%s", e->writer ?: "",
                            "THPD_DRIFT_ACTION=%s", drift_action_to_string(e->action),
                            NULL);
        /* As for storms: under systemd stderr already goes to the journal, where the structured
         * entry is the one to keep; elsewhere the plain line is all there is. */
        if (r < 0 || !getenv("JOURNAL_STREAM"))
                log_full(priority, "%s", message);
}

static void publish_drift(Manager *m, const DriftEvent *events, size_t n_events) {
        for (guint i = 0; i < m->listeners->len; i++) {
                const ManagerListenerEntry *e = &g_array_index(m->listeners, ManagerListenerEntry, i);

                if (e->listener->drift)
                        e->listener->drift(m, events, n_events, e->userdata);
        }
}

static void on_writer_state(const char *unit, int r, const char *active_state, void *userdata) {
        Manager *m = userdata;
        bool running;

        if (r < 0) {
                log_debug_errno(r, "Cannot tell whether %s stopped: %m", unit);
                return;
        }
        running = streq(active_state, "active") || streq(active_state, "activating") ||
                  streq(active_state, "reloading");
        if (!drift_writer_state(&m->drift, unit, running))
                return;
        log_notice("%s stopped; thpd restores what it gave up to it again.", unit);
        publish_drift(m, NULL, 0);
        manager_apply(m);
}

/* A conflict lasts until its writer stops: ask only about writers in conflict. */
static void query_writer(Manager *m, const char *unit) {
        int r;

        if (!m->units || !drift_has_writer(&m->drift, unit))
                return;
        r = unit_tracker_query_active_state(m->units, unit, on_writer_state, m);
        if (r < 0)
                log_debug_errno(r, "Cannot ask whether %s stopped: %m", unit);
}

static void event_clear(gpointer p) {
        drift_event_clear(p);
}

/* Decides, counts, logs and keeps one item found changed. */
static void found_changed(Manager *m, GArray *events, const char *item, bool held, char *expected, char *found,
                          const char *writer, uint64_t job_age_usec, uint64_t now, uint64_t now_realtime) {
        DriftEvent e = {
                .item = g_strdup(item),
                .expected = expected,
                .found = found,
                .writer = g_strdup(writer),
                .job_age_usec = job_age_usec,
                .when_usec = now_realtime,
        };

        e.action = drift_decide(&m->drift, &m->settings.drift, item, held, writer, found, now, now_realtime);
        count_drift(m, item, writer);
        journal_event(m, &e);
        g_array_append_val(events, e);
}

void manager_check_drift(Manager *m, const DriftJob *job) {
        g_autoptr(GArray) events = g_array_new(FALSE, TRUE, sizeof(DriftEvent));
        g_autofree char *pending_unit = NULL;
        DriftJob pending;
        uint64_t now, now_realtime, job_age;
        const char *writer;

        /* A status call right behind a job end: the change is that job's unit's, not unknown. */
        if (!job && m->drift_job_unit) {
                pending_unit = g_steal_pointer(&m->drift_job_unit);
                pending = (DriftJob) { .unit = pending_unit, .ended_usec = m->drift_job_usec };
                job = &pending;
        }
        if (m->drift_event)
                (void) sd_event_source_set_enabled(m->drift_event, SD_EVENT_OFF);

        /* Before the first apply with the unit list there is nothing thpd applied to compare. */
        if (!m->applied_once || !manager_units_known(m))
                return;

        g_array_set_clear_func(events, event_clear);
        now = now_usec(CLOCK_MONOTONIC);
        now_realtime = now_usec(CLOCK_REALTIME);
        writer = drift_attribute(job, now);

        job_age = writer ? now - job->ended_usec : 0;

        FOREACH_KNOB(k) {
                KnobValue found;
                char a[24], b[24];

                if (!m->present[k] || m->applied[k] == KNOB_VALUE_UNSET || m->target.source[k].kind == SOURCE_NONE)
                        continue;
                /* A knob that cannot be read is the next apply's error to report. */
                if (manager_read_knob(m, k, &found) < 0 || found == m->applied[k])
                        continue;
                found_changed(m, events, knob_name(k), knob_held(m, k),
                              g_strdup(knob_value_to_string(k, m->applied[k], a)),
                              g_strdup(knob_value_to_string(k, found, b)), writer, job_age, now, now_realtime);
        }

        /* The pools as the last apply left them. One that a policy sizes (or thpd moved from its
         * baseline) is held; any other follows whoever sized it, as the apply does. */
        for (guint i = 0; i < m->pools->len; i++) {
                const PoolStatus *p = &g_array_index(m->pools, PoolStatus, i);
                const PoolTarget *t = target_find_pool(&m->target, p->page_size_kb, p->node);
                const PoolBaseline *b = baseline_find_pool(&m->baseline, p->page_size_kb, p->node);
                g_autofree char *item = NULL;
                uint64_t nr;
                bool held;

                if (!b || pool_files_read_pages(&m->pool_files, m->sysfs_root, p->page_size_kb, p->node, &nr) < 0 ||
                    nr == p->allocated || drift_pool_settling(p->target, p->allocated, nr))
                        continue;
                held = (t && t->requested > 0) || m->pool_owned[b - m->baseline.pools];
                item = manager_pool_item(p->page_size_kb, p->node);
                found_changed(m, events, item, held, g_strdup_printf("%" PRIu64, p->allocated),
                              g_strdup_printf("%" PRIu64, nr), writer, job_age, now, now_realtime);
        }

        if (events->len == 0)
                return;
        /* A conflict that began now: whether its writer runs tells when it stops. */
        if (writer)
                query_writer(m, writer);
        for (guint i = 0; i < events->len; i++) {
                const DriftEvent *e = &g_array_index(events, DriftEvent, i);
                DriftEvent copy = *e;

                copy.item = g_strdup(e->item);
                copy.expected = g_strdup(e->expected);
                copy.found = g_strdup(e->found);
                copy.writer = g_strdup(e->writer);
                drift_record(&m->drift, &copy);
        }
        publish_drift(m, (const DriftEvent *) events->data, events->len);
        /* The plan restores what is held, adopts what is not and leaves the yielded alone. */
        manager_apply(m);
}

static int on_drift_event(sd_event_source *s, void *userdata) {
        manager_check_drift(userdata, NULL);
        return 0;
}

/* After the bus messages already received, before a queued apply (SD_EVENT_PRIORITY_IDLE): a
 * start or stop brings several job ends at once, and a signal handled late must not credit its
 * unit with a change the next job in the queue made. The last job end is credited. */
#define DRIFT_EVENT_PRIORITY (SD_EVENT_PRIORITY_IDLE - 1)

static void queue_check(Manager *m, const char *unit) {
        int r;

        g_free(m->drift_job_unit);
        m->drift_job_unit = g_strdup(unit);
        m->drift_job_usec = now_usec(CLOCK_MONOTONIC);
        if (!m->drift_event) {
                r = sd_event_add_defer(m->event, &m->drift_event, on_drift_event, m);
                if (r >= 0)
                        r = sd_event_source_set_priority(m->drift_event, DRIFT_EVENT_PRIORITY);
                if (r < 0) {
                        log_warning_errno(r, "Cannot queue a look at the knobs, looking at once: %m");
                        m->drift_event = sd_event_source_disable_unref(m->drift_event);
                        manager_check_drift(m, NULL);
                        return;
                }
        }
        (void) sd_event_source_set_enabled(m->drift_event, SD_EVENT_ONESHOT);
}

static void on_job_ended(UnitTracker *t, const char *unit, void *userdata) {
        Manager *m = userdata;

        queue_check(m, unit);
        query_writer(m, unit);
}

void manager_drift_start(Manager *m) {
        if (m->units)
                unit_tracker_set_job_ended(m->units, on_job_ended);
}
