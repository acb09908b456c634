/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>
#include <syslog.h>
#include <systemd/sd-journal.h>

#include "log.h"
#include "manager-drift.h"
#include "manager-ownership.h"
#include "manager-pools.h"
#include "sysfs.h"
#include "unit-state.h"
#include "util.h"
#include "writer-watch.h"

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

/* TuneD's bus API, as its daemon owns it on the system bus (tuned/consts.py); its unit. */
#define TUNED_BUS_NAME "com.redhat.tuned"
#define TUNED_BUS_PATH "/Tuned"
#define TUNED_BUS_INTERFACE "com.redhat.tuned.control"
#define TUNED_UNIT "tuned.service"

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
        g_autofree char *who = drift_describe_writer(e);
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
        MANAGER_FOREACH_LISTENER(m, e)
                if (e->listener->drift)
                        e->listener->drift(m, events, n_events, e->userdata);
}

/* A knob file or pool counter thpd watches for writes. */
typedef struct WatchedItem {
        struct DriftWatch *watch;
        sd_event_source *source;
        bool is_pool;
        Knob knob;
        uint64_t page_size_kb;
        int node;
        dev_t dev;            /* the file watched, to match fanotify's events */
        ino_t ino;
        bool fanotify;        /* fanotify reports its writes (and inotify only replacements) */
        bool dirty;           /* written since the last look */
} WatchedItem;

/* A restore on its way: how long the item was wrong is known once the apply wrote it. */
typedef struct PendingRestore {
        char *item;
        char *expected;
        uint64_t since_usec;  /* CLOCK_MONOTONIC: the write seen, or the change found */
} PendingRestore;

typedef struct RunningJob {
        uint32_t id;
        uint64_t usec;
} RunningJob;

struct DriftWatch {
        sd_event_source *look;    /* after the bus messages already received, before a queued apply */
        bool look_everything;     /* a job end queued the look: every item, not only those written */
        GPtrArray *items;         /* WatchedItem*, armed or not */
        bool stale;               /* an item lost its watch, or a pool is new: arm again */
        bool unwatched;           /* an item has no watch (it could not be added): job ends look at all */
        size_t armed_pools;
        GHashTable *running;      /* unit -> RunningJob*: jobs queued and not yet ended */
        char *ended_unit;         /* the last job end since the last look */
        uint64_t ended_usec;
        uint64_t write_usec;      /* CLOCK_MONOTONIC, the first write seen since the last look; 0: none */
        uint64_t write_realtime_usec;
        GArray *pending;          /* PendingRestore */
        sd_bus_slot *tuned_slot;
        WriterWatch *writers;     /* NULL without CAP_SYS_ADMIN */
        bool process_known;       /* fanotify named a writer since the last change judged */
        bool process_outside_units; /* ... and found it in no unit */
        uint64_t process_usec;    /* CLOCK_MONOTONIC, when */
        char *process_unit, *process_text;
};

static void watched_item_free(gpointer p) {
        WatchedItem *i = p;

        sd_event_source_disable_unref(i->source);
        g_free(i);
}

static void pending_restore_clear(gpointer p) {
        PendingRestore *r = p;

        g_free(r->item);
        g_free(r->expected);
}

static void on_writer_state(const char *unit, int r, const char *active_state, bool reached_active, void *userdata) {
        Manager *m = userdata;
        UnitSettled settled;
        bool running;

        if (r < 0) {
                log_debug_errno(r, "Cannot tell whether %s stopped: %m", unit);
                return;
        }
        settled = unit_state_settled(active_state);
        if (settled == UNIT_SETTLED_NO)
                return;
        running = settled == UNIT_SETTLED_RUNNING;
        if (running)
                log_debug("%s runs: its conflict ends when it stops.", unit);
        if (!drift_writer_state(&m->drift, unit, running, reached_active))
                return;
        manager_drift_conflicts_changed(m);
        log_notice("%s stopped; thpd restores what it gave up to it again.", unit);
        publish_drift(m, NULL, 0);
        manager_apply(m);
}

void manager_drift_conflicts_changed(Manager *m) {
        FOREACH_KNOB(k)
                m->own.knobs[k] = ownership_conflict(m->own.knobs[k], drift_conflict(&m->drift, knob_name(k)) != NULL);
        for (size_t i = 0; i < m->baseline.n_pools; i++) {
                g_autofree char *item = manager_pool_item(m->baseline.pools[i].page_size_kb, m->baseline.pools[i].node);

                m->own.pools[i] = ownership_conflict(m->own.pools[i], drift_conflict(&m->drift, item) != NULL);
        }
}

/* Followed from its signals too: a writer stopped before the answer to a query came may be
 * unloaded by then, and the manager no longer knows that its run reached active. */
static bool is_writer_in_conflict(const char *unit, void *userdata) {
        Manager *m = userdata;

        return drift_has_writer(&m->drift, unit);
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
        drift_event_done(p);
}

/* The job started last among those still running. */
static bool last_running_job(const DriftWatch *w, DriftJob *ret) {
        DriftJob last = {};
        GHashTableIter iter;
        const char *unit;
        RunningJob *job;

        g_hash_table_iter_init(&iter, w->running);
        while (g_hash_table_iter_next(&iter, (gpointer *) &unit, (gpointer *) &job))
                if (!last.unit || job->usec > last.usec)
                        last = (DriftJob) { .unit = unit, .usec = job->usec };
        if (!last.unit)
                return false;
        *ret = last;
        return true;
}

typedef struct Look {
        GArray *events;
        const char *writer;
        const char *detail;
        DriftCredit credit;
        uint64_t job_age, now, now_realtime, written_realtime;
} Look;

/* Decides, counts, logs and keeps one item found changed; its owner follows. */
static void found_changed(Manager *m, Look *l, const char *item, Owner *owner, bool held, char *expected, char *found) {
        DriftEvent e = {
                .item = g_strdup(item),
                .expected = expected,
                .found = found,
                .writer = g_strdup(l->writer),
                .writer_detail = g_strdup(l->detail),
                .credit = l->credit,
                .job_age_usec = l->job_age,
                .when_usec = l->now_realtime,
                .written_usec = l->written_realtime,
        };

        e.action = drift_decide(&m->drift, &m->settings.drift, item, held, l->writer, found, l->now, l->now_realtime);
        *owner = ownership_after_drift(*owner, e.action);
        /* A yield is recorded at once: a thpd killed before the apply must not fight again. */
        if (*owner == OWNER_WRITER)
                manager_ownership_note(m, item, OWNER_WRITER, found);
        count_drift(m, item, l->writer);
        journal_event(m, &e);
        g_array_append_val(l->events, e);
}

void manager_drift_found_while_down(Manager *m, const char *item, DriftAction action, const char *expected,
                                    const char *found) {
        DriftEvent e = {
                .item = g_strdup(item),
                .expected = g_strdup(expected),
                .found = g_strdup(found),
                .credit = DRIFT_CREDIT_WHILE_DOWN,
                .action = action,
                .when_usec = now_usec(CLOCK_REALTIME),
        };

        count_drift(m, item, NULL);
        journal_event(m, &e);
        publish_drift(m, &e, 1);
        drift_record(&m->drift, &e);
}

static WatchedItem *find_item(const DriftWatch *w, bool is_pool, Knob k, uint64_t size, int node) {
        for (guint i = 0; i < w->items->len; i++) {
                WatchedItem *it = g_ptr_array_index(w->items, i);

                if (it->is_pool == is_pool && (is_pool ? it->page_size_kb == size && it->node == node : it->knob == k))
                        return it;
        }
        return NULL;
}

/* Whether a look reads the item: every item, or those written since the last look. */
static bool item_wanted(const DriftWatch *w, bool everything, bool is_pool, Knob k, uint64_t size, int node) {
        const WatchedItem *it;

        if (everything)
                return true;
        it = find_item(w, is_pool, k, size, node);
        return it && it->dirty;
}

static void arm_watches(Manager *m);

static void clear_process(DriftWatch *w) {
        w->process_known = false;
        w->process_outside_units = false;
        g_clear_pointer(&w->process_unit, g_free);
        g_clear_pointer(&w->process_text, g_free);
}

/* The held knobs the watch says were written (or all, everything): each that changed from what
 * thpd applied is judged; one that cannot be read is marked in unreadable. */
static void judge_knobs(Manager *m, Look *l, bool everything, bool unreadable[_KNOB_MAX]) {
        FOREACH_KNOB(k) {
                KnobValue found;
                char a[24], b[24];

                if (!m->present[k] || m->applied[k] == KNOB_VALUE_UNSET || m->target.source[k].kind == SOURCE_NONE ||
                    !item_wanted(m->drift_watch, everything, false, k, 0, 0))
                        continue;
                /* A knob that cannot be read (a write half done, truncated) is looked at again at
                 * the write's next event, or is the next apply's error to report: it stays marked
                 * as written, so that the apply reads it. */
                if (manager_read_knob(m, k, &found) < 0) {
                        unreadable[k] = true;
                        continue;
                }
                if (found == m->applied[k])
                        continue;
                found_changed(m, l, knob_name(k), &m->own.knobs[k],
                              ownership_knob_held(m->own.knobs[k], m->target.source[k].kind,
                                                  m->settings.baseline[k] != KNOB_VALUE_UNSET),
                              g_strdup(knob_value_to_string(k, m->applied[k], a)), g_strdup(knob_value_to_string(k, found, b)));
                m->applied[k] = found;
        }
}

/* The pools as the last apply left them. One that a policy sizes (or thpd moved from its
 * baseline) is held; any other follows whoever sized it, as the apply does. */
static void judge_pools(Manager *m, Look *l, bool everything) {
        for (guint i = 0; i < m->pools->len; i++) {
                PoolStatus *p = &g_array_index(m->pools, PoolStatus, i);
                const PoolTarget *t = target_find_pool(&m->target, p->page_size_kb, p->node);
                const PoolBaseline *b = baseline_find_pool(&m->baseline, p->page_size_kb, p->node);
                g_autofree char *item = NULL;
                Owner *owner;
                uint64_t nr;

                if (!b || !item_wanted(m->drift_watch, everything, true, 0, p->page_size_kb, p->node) ||
                    pool_files_read_pages(&m->pool_files, m->sysfs_root, p->page_size_kb, p->node, &nr) < 0 ||
                    nr == p->allocated || drift_pool_settling(p->target, p->allocated, nr))
                        continue;
                owner = &m->own.pools[b - m->baseline.pools];
                item = manager_pool_item(p->page_size_kb, p->node);
                found_changed(m, l, item, owner, ownership_pool_held(*owner, t ? t->requested : 0),
                              g_strdup_printf("%" PRIu64, p->allocated), g_strdup_printf("%" PRIu64, nr));
                p->allocated = nr;
        }
}

/* Each change judged goes into the drift history; a restore waits for the apply, timed from
 * since, the first write seen. */
static void record_events(Manager *m, GArray *events, uint64_t since) {
        for (guint i = 0; i < events->len; i++) {
                const DriftEvent *e = &g_array_index(events, DriftEvent, i);
                DriftEvent copy = *e;

                if (e->action == DRIFT_ACTION_RESTORE) {
                        PendingRestore r = { g_strdup(e->item), g_strdup(e->expected), since };

                        g_array_append_val(m->drift_watch->pending, r);
                }
                copy.item = g_strdup(e->item);
                copy.expected = g_strdup(e->expected);
                copy.found = g_strdup(e->found);
                copy.writer = g_strdup(e->writer);
                copy.writer_detail = g_strdup(e->writer_detail);
                drift_record(&m->drift, &copy);
        }
}

/* Reads the items (those written, or everything) and judges those that changed since the last
 * apply. The value found is the value in force from now on, for the properties too. act: apply
 * at once (a write seen, a job end); otherwise (a status call) only queue the apply, so that the
 * call that noticed the change writes nothing. */
static void judge(Manager *m, bool everything, bool act) {
        DriftWatch *w = m->drift_watch;
        g_autoptr(GArray) events = g_array_new(FALSE, TRUE, sizeof(DriftEvent));
        bool unreadable[_KNOB_MAX] = {};
        g_autofree char *ended_unit = g_steal_pointer(&w->ended_unit);
        DriftJob running, ended = { .unit = ended_unit, .usec = w->ended_usec };
        DriftCause cause = {
                .ended = ended_unit ? &ended : NULL,
                .write_usec = w->write_usec,
        };
        uint64_t since = w->write_usec;
        Look l = { .events = events, .written_realtime = w->write_realtime_usec };

        /* A job end looks at everything only where a write could go unseen. */
        everything = everything || (w->look_everything && w->unwatched);
        w->look_everything = false;
        w->write_usec = w->write_realtime_usec = 0;
        (void) sd_event_source_set_enabled(w->look, SD_EVENT_OFF);
        if (w->stale)
                arm_watches(m);

        /* Before the first apply with the unit list there is nothing thpd applied to compare;
         * what was written stays marked, for the apply to read. */
        if (!m->applied_once || !manager_units_known(m))
                return;

        g_array_set_clear_func(events, event_clear);
        if (last_running_job(w, &running))
                cause.running = &running;
        l.now = now_usec(CLOCK_MONOTONIC);
        l.now_realtime = now_usec(CLOCK_REALTIME);
        /* A writer named long ago, whose write changed nothing, is not this change's. */
        if (w->process_known && l.now - w->process_usec > DRIFT_ATTRIBUTION_USEC)
                clear_process(w);
        cause.process_known = w->process_known;
        cause.process_unit = w->process_unit;
        cause.process_outside_units = w->process_outside_units;
        l.writer = drift_attribute(&cause, l.now, &l.credit, &l.job_age);
        l.detail = l.credit == DRIFT_CREDIT_PROCESS ? w->process_text : NULL;
        if (since == 0)
                since = l.now;

        judge_knobs(m, &l, everything, unreadable);
        judge_pools(m, &l, everything);
        manager_ownership_flush(m);

        if (events->len == 0)
                goto done;
        /* A conflict that began now: whether its writer runs tells when it stops. A job still
         * running is asked about when it ends. */
        if (l.writer && l.credit != DRIFT_CREDIT_JOB_RUNNING)
                query_writer(m, l.writer);
        /* Named once: the writer fanotify saw goes with the change it made. Kept while nothing
         * changed: a shell's O_TRUNC is seen, and its writer named, before the write. Cleared
         * only here: l.writer and l.detail may point into it. */
        clear_process(w);
        record_events(m, events, since);
        publish_drift(m, (const DriftEvent *) events->data, events->len);
        /* The plan restores what is held, adopts what is not and leaves the yielded alone. */
        if (act)
                manager_apply(m);
        else
                manager_queue_apply(m);
done:
        for (guint i = 0; i < w->items->len; i++) {
                WatchedItem *it = g_ptr_array_index(w->items, i);

                it->dirty = !it->is_pool && unreadable[it->knob];
        }
}

static void look(Manager *m, bool everything, bool act) {
        /* What fanotify knows of the writes this look is about, first. */
        writer_watch_flush(m->drift_watch->writers);
        judge(m, everything, act);
}

void manager_drift_look(Manager *m) {
        if (m->drift_watch)
                look(m, true, false);
}

static int on_look(sd_event_source *s, void *userdata) {
        look(userdata, false, true);
        return 0;
}

/* After the bus messages already received, before a queued apply (SD_EVENT_PRIORITY_IDLE): a
 * start or stop brings several job ends at once, and a signal handled late must not credit its
 * unit with a change the next job in the queue made. */
#define DRIFT_LOOK_PRIORITY (SD_EVENT_PRIORITY_IDLE - 1)

static void queue_look(Manager *m) {
        int r;

        r = manager_defer_once(m, &m->drift_watch->look, DRIFT_LOOK_PRIORITY, on_look);
        if (r < 0) {
                log_warning_errno(r, "Cannot queue a look at the knobs, looking at once: %m");
                look(m, false, true);
        }
}

/* Before the bus messages and the job signals that come with them: the time of a write must be
 * taken before the JobRemoved of the unit that made it is handled. */
#define DRIFT_WATCH_PRIORITY SD_EVENT_PRIORITY_IMPORTANT

static int on_write(sd_event_source *s, const struct inotify_event *event, void *userdata) {
        WatchedItem *item = userdata;
        DriftWatch *w = item->watch;

        /* Replaced, moved or gone (a package's tmpfiles, a test's scratch tree): watch the new
         * file, and look at what it holds. */
        if (event->mask & (IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) {
                item->source = sd_event_source_disable_unref(item->source);
                item->fanotify = false;
                w->stale = true;
        } else if (item->fanotify)
                /* fanotify reports the same write with its writer; inotify wakes the loop a
                 * moment sooner, and a look then would not know who wrote. */
                return 0;
        item->dirty = true;
        if (w->write_usec == 0) {
                w->write_usec = now_usec(CLOCK_MONOTONIC);
                w->write_realtime_usec = now_usec(CLOCK_REALTIME);
        }
        (void) sd_event_source_set_enabled(w->look, SD_EVENT_ONESHOT);
        return 0;
}

static void arm_item(Manager *m, bool is_pool, Knob k, uint64_t size, int node) {
        DriftWatch *w = m->drift_watch;
        WatchedItem *it = find_item(w, is_pool, k, size, node);
        g_autofree char *path = NULL;
        int r;

        if (it && it->source)
                return;
        if (!it) {
                it = g_new0(WatchedItem, 1);
                *it = (WatchedItem) { .watch = w, .is_pool = is_pool, .knob = k, .page_size_kb = size, .node = node };
                g_ptr_array_add(w->items, it);
        }
        path = is_pool ? sysfs_pool_path(m->sysfs_root, size, node) : sysfs_knob_path(m->sysfs_root, k);
        if (!path)
                return;
        r = sd_event_add_inotify(m->event, &it->source, path,
                                 IN_MODIFY | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF, on_write, it);
        if (r >= 0)
                r = sd_event_source_set_priority(it->source, DRIFT_WATCH_PRIORITY);
        if (r < 0) {
                it->source = sd_event_source_disable_unref(it->source);
                /* The job-end and status looks still see what this watch would. */
                log_debug_errno(r, "Cannot watch %s for writes: %m", path);
                return;
        }
        if (w->writers) {
                struct stat st;

                if (stat(path, &st) >= 0) {
                        it->dev = st.st_dev;
                        it->ino = st.st_ino;
                }
                r = writer_watch_add(w->writers, path);
                it->fanotify = r >= 0;
                if (r < 0)
                        log_debug_errno(r, "Cannot follow the writers of %s: %m", path);
        }
}

/* A write fanotify reported: thpd's own is not drift; any other is named now, while its process
 * may still run, and looked at. */
static void on_writer_seen(dev_t dev, ino_t ino, pid_t pid, void *userdata) {
        Manager *m = userdata;
        DriftWatch *w = m->drift_watch;
        g_autofree char *unit = NULL, *text = NULL;
        bool cgroup_read;
        WatchedItem *item = NULL;
        int r;

        if (pid == getpid())
                return;
        for (guint i = 0; i < w->items->len && !item; i++) {
                WatchedItem *it = g_ptr_array_index(w->items, i);

                if (it->dev == dev && it->ino == ino)
                        item = it;
        }
        if (!item)
                return;
        item->dirty = true;
        if (w->write_usec == 0) {
                w->write_usec = now_usec(CLOCK_MONOTONIC);
                w->write_realtime_usec = now_usec(CLOCK_REALTIME);
        }
        (void) sd_event_source_set_enabled(w->look, SD_EVENT_ONESHOT);

        r = writer_describe(pid, &unit, &cgroup_read, &text);
        if (r < 0) {
                log_debug_errno(r, "Cannot name pid %d, which wrote %s: %m", (int) pid,
                                item->is_pool ? "a pool" : knob_name(item->knob));
                return;
        }
        g_free(w->process_unit);
        g_free(w->process_text);
        w->process_unit = g_steal_pointer(&unit);
        w->process_text = g_steal_pointer(&text);
        w->process_known = true;
        w->process_outside_units = cgroup_read && !w->process_unit;
        w->process_usec = now_usec(CLOCK_MONOTONIC);
}

/* Every knob this kernel has and every pool with a baseline: one inotify watch each, no timer. */
static void arm_watches(Manager *m) {
        DriftWatch *w = m->drift_watch;

        w->stale = false;
        FOREACH_KNOB(k)
                if (m->present[k])
                        arm_item(m, false, k, 0, 0);
        for (size_t i = 0; i < m->baseline.n_pools; i++)
                arm_item(m, true, 0, m->baseline.pools[i].page_size_kb, m->baseline.pools[i].node);
        w->armed_pools = m->baseline.n_pools;
        w->unwatched = false;
        for (guint i = 0; i < w->items->len; i++)
                if (!((WatchedItem *) g_ptr_array_index(w->items, i))->source)
                        w->unwatched = true;
}

bool manager_drift_knob_unchanged(const Manager *m, Knob k) {
        const DriftWatch *w = m->drift_watch;
        const WatchedItem *it;

        if (!w || w->stale || m->applied[k] == KNOB_VALUE_UNSET)
                return false;
        it = find_item(w, false, k, 0, 0);
        return it && it->source && !it->dirty;
}

static PendingRestore *find_pending(DriftWatch *w, const char *item, guint *ret_index) {
        for (guint i = 0; i < w->pending->len; i++) {
                PendingRestore *r = &g_array_index(w->pending, PendingRestore, i);

                if (streq(r->item, item)) {
                        *ret_index = i;
                        return r;
                }
        }
        return NULL;
}

/* The value of an item as the apply left it, as text. */
static char *item_value(Manager *m, const char *item) {
        char buf[24];
        Knob k;

        if (knob_from_name(item, &k) >= 0)
                return g_strdup(knob_value_to_string(k, m->applied[k], buf));
        for (guint i = 0; i < m->pools->len; i++) {
                const PoolStatus *p = &g_array_index(m->pools, PoolStatus, i);
                g_autofree char *name = manager_pool_item(p->page_size_kb, p->node);

                if (streq(name, item))
                        return g_strdup_printf("%" PRIu64, p->allocated);
        }
        return NULL;
}

void manager_drift_applied(Manager *m) {
        DriftWatch *w = m->drift_watch;
        uint64_t now;

        if (!w)
                return;
        if (w->stale || w->armed_pools != m->baseline.n_pools)
                arm_watches(m);
        if (w->pending->len == 0)
                return;

        /* The newest event of each item is the one this apply answered. */
        now = now_usec(CLOCK_MONOTONIC);
        for (guint i = m->drift.recent->len; i > 0 && w->pending->len > 0; i--) {
                DriftEvent *e = &g_array_index(m->drift.recent, DriftEvent, i - 1);
                g_autofree char *value = NULL;
                PendingRestore *r;
                guint index;

                r = e->action == DRIFT_ACTION_RESTORE && e->wrong_usec == 0 ? find_pending(w, e->item, &index) : NULL;
                if (!r)
                        continue;
                value = item_value(m, e->item);
                if (streq_ptr(value, r->expected)) {
                        e->wrong_usec = MAX(now - r->since_usec, (uint64_t) 1);
                        log_info("%s: %s again, %.1f ms after the write of %s", e->item, r->expected,
                                 (double) e->wrong_usec / USEC_PER_MSEC, e->found);
                }
                g_array_remove_index(w->pending, index);
        }
        g_array_set_size(w->pending, 0);
}

static void on_job_new(UnitTracker *t, const char *unit, uint32_t id, void *userdata) {
        Manager *m = userdata;
        RunningJob *job = g_new(RunningJob, 1);

        *job = (RunningJob) { .id = id, .usec = now_usec(CLOCK_MONOTONIC) };
        g_hash_table_replace(m->drift_watch->running, g_strdup(unit), job);
}

static void on_job_ended(UnitTracker *t, const char *unit, uint32_t id, void *userdata) {
        Manager *m = userdata;
        DriftWatch *w = m->drift_watch;
        const RunningJob *job = g_hash_table_lookup(w->running, unit);

        if (job && job->id == id)
                g_hash_table_remove(w->running, unit);
        g_free(w->ended_unit);
        w->ended_unit = g_strdup(unit);
        w->ended_usec = now_usec(CLOCK_MONOTONIC);
        /* Where a watch is missing (a file that cannot be watched), a job end still finds what
         * its unit wrote. */
        w->look_everything = true;
        queue_look(m);
        query_writer(m, unit);
}

/* TuneD says which profile it switched to once it applied it, after its writes were seen and
 * restored: the changes nobody could be named for since are its. */
static int on_tuned_profile_changed(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        g_autoptr(GPtrArray) credited = NULL;
        g_autofree char *detail = NULL;
        const char *profile;
        int ok, r;

        r = sd_bus_message_read(msg, "sb", &profile, &ok);
        if (r < 0) {
                log_debug_errno(r, "Ignoring a malformed profile_changed signal from TuneD: %m");
                return 0;
        }
        /* TuneD wrote before it said so, but its signal can be handled before the look that
         * its writes queued (a bus message goes before it): look first. */
        if (sd_event_source_get_enabled(m->drift_watch->look, NULL) > 0)
                look(m, false, true);
        detail = g_strdup_printf("profile %s", profile);
        credited = drift_credit_announced(&m->drift, TUNED_UNIT, detail, now_usec(CLOCK_REALTIME) - DRIFT_ANNOUNCE_USEC);
        if (credited->len == 0)
                return 0;
        /* thpd_knob_drift_total keeps the label it counted under: a counter never goes down. */
        for (guint i = 0; i < credited->len; i++) {
                const char *item = g_ptr_array_index(credited, i);
                const DriftConflict *c = drift_conflict(&m->drift, item);

                log_notice("%s: the change thpd found was TuneD's (%s, %s).", item, TUNED_UNIT, detail);
                /* The yield's record names TuneD now: thpd restarted keeps to it until TuneD stops. */
                if (c)
                        manager_ownership_note(m, item, OWNER_WRITER, c->value);
        }
        manager_ownership_flush(m);
        /* A conflict it now has ends when it stops. */
        query_writer(m, TUNED_UNIT);
        publish_drift(m, NULL, 0);
        return 0;
}

int manager_drift_start(Manager *m) {
        DriftWatch *w = g_new0(DriftWatch, 1);
        int r;

        w->items = g_ptr_array_new_with_free_func(watched_item_free);
        w->running = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        w->pending = g_array_new(FALSE, TRUE, sizeof(PendingRestore));
        g_array_set_clear_func(w->pending, pending_restore_clear);
        w->stale = true;
        m->drift_watch = w;

        r = sd_event_add_defer(m->event, &w->look, on_look, m);
        if (r >= 0)
                r = sd_event_source_set_priority(w->look, DRIFT_LOOK_PRIORITY);
        if (r >= 0)
                r = sd_event_source_set_enabled(w->look, SD_EVENT_OFF);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the look for knobs written behind thpd's back: %m");

        r = writer_watch_new(m->event, DRIFT_WATCH_PRIORITY, on_writer_seen, m, &w->writers);
        if (r == -EPERM)
                log_info("Writers of the knobs are named from unit jobs and TuneD's signal: naming the writing "
                         "process (fanotify) needs CAP_SYS_ADMIN, which thpd does not have (see thpd.conf(5)).");
        else if (r < 0)
                log_warning_errno(r, "Cannot follow the processes writing the knobs (fanotify): %m");
        else
                log_info("Naming the processes that write the knobs (fanotify).");

        if (m->units) {
                unit_tracker_set_job_new(m->units, on_job_new);
                unit_tracker_set_job_ended(m->units, on_job_ended);
                unit_tracker_set_run_watch(m->units, is_writer_in_conflict, on_writer_state);
        }
        /* Conflicts the last instance recorded: a writer that stopped while thpd was down ends
         * its conflict at the answer. */
        for (guint i = 0; i < m->drift.conflicts->len; i++) {
                const char *writer = g_array_index(m->drift.conflicts, DriftConflict, i).writer;

                if (writer)
                        query_writer(m, writer);
        }
        r = sd_bus_match_signal_async(m->bus, &w->tuned_slot, TUNED_BUS_NAME, TUNED_BUS_PATH, TUNED_BUS_INTERFACE,
                                      "profile_changed", on_tuned_profile_changed, NULL, m);
        if (r < 0)
                log_warning_errno(r, "Cannot watch TuneD's profile switches; its writes will be unattributed: %m");
        return 0;
}

void manager_drift_stop(Manager *m) {
        DriftWatch *w = m->drift_watch;

        if (!w)
                return;
        sd_bus_slot_unref(w->tuned_slot);
        writer_watch_free(w->writers);
        g_free(w->process_unit);
        g_free(w->process_text);
        sd_event_source_disable_unref(w->look);
        g_ptr_array_unref(w->items);
        g_hash_table_destroy(w->running);
        g_array_unref(w->pending);
        g_free(w->ended_unit);
        g_free(w);
        m->drift_watch = NULL;
}
