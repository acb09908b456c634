/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <string.h>

#include "drift.h"
#include "util.h"

static const char *const drift_action_table[_DRIFT_ACTION_MAX] = {
        [DRIFT_ACTION_RESTORE] = "restored",
        [DRIFT_ACTION_ADOPT] = "adopted",
        [DRIFT_ACTION_YIELD] = "yielded",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(drift_action, DriftAction);

static void restores_free(gpointer p) {
        g_array_unref(p);
}

static void conflict_clear(gpointer p) {
        DriftConflict *c = p;

        g_free(c->item);
        g_free(c->writer);
        g_free(c->writer_detail);
        g_free(c->value);
}

void drift_event_done(DriftEvent *e) {
        g_clear_pointer(&e->item, g_free);
        g_clear_pointer(&e->expected, g_free);
        g_clear_pointer(&e->found, g_free);
        g_clear_pointer(&e->writer, g_free);
        g_clear_pointer(&e->writer_detail, g_free);
}

static void event_clear(gpointer p) {
        drift_event_done(p);
}

void drift_state_init(DriftState *s) {
        *s = (DriftState) {
                .restores = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, restores_free),
                .conflicts = g_array_new(FALSE, TRUE, sizeof(DriftConflict)),
                .recent = g_array_new(FALSE, TRUE, sizeof(DriftEvent)),
        };
        g_array_set_clear_func(s->conflicts, conflict_clear);
        g_array_set_clear_func(s->recent, event_clear);
}

void drift_state_done(DriftState *s) {
        g_clear_pointer(&s->restores, g_hash_table_destroy);
        g_clear_pointer(&s->conflicts, g_array_unref);
        g_clear_pointer(&s->recent, g_array_unref);
}

void drift_reset(DriftState *s) {
        g_hash_table_remove_all(s->restores);
        g_array_set_size(s->conflicts, 0);
}

bool drift_pool_settling(uint64_t target, uint64_t allocated, uint64_t found) {
        return target < allocated && found >= target && found < allocated;
}

const char *drift_attribute(const DriftCause *cause, uint64_t found_usec, DriftCredit *ret_credit,
                            uint64_t *ret_job_age_usec) {
        const DriftJob *ended = cause->ended;

        if (cause->process_known && (cause->process_unit || cause->process_outside_units)) {
                *ret_credit = DRIFT_CREDIT_PROCESS;
                *ret_job_age_usec = 0;
                return cause->process_unit;
        }
        if (cause->running && cause->running->unit) {
                *ret_credit = DRIFT_CREDIT_JOB_RUNNING;
                *ret_job_age_usec = 0;
                return cause->running->unit;
        }
        if (ended && ended->unit && found_usec >= ended->usec &&
            (cause->write_usec > 0 ? ended->usec >= cause->write_usec
                                   : found_usec - ended->usec <= DRIFT_ATTRIBUTION_USEC)) {
                *ret_credit = DRIFT_CREDIT_JOB_ENDED;
                *ret_job_age_usec = found_usec - ended->usec;
                return ended->unit;
        }
        *ret_credit = cause->process_known ? DRIFT_CREDIT_PROCESS : DRIFT_CREDIT_NONE;
        *ret_job_age_usec = 0;
        return NULL;
}

/* The unknown writer is counted too: thpd must not fight anyone without end. */
static char *restores_key(const char *item, const char *writer) {
        return g_strdup_printf("%s\n%s", item, writer ?: "");
}

static DriftConflict *find_conflict(const DriftState *s, const char *item) {
        for (guint i = 0; i < s->conflicts->len; i++) {
                DriftConflict *c = &g_array_index(s->conflicts, DriftConflict, i);

                if (streq(c->item, item))
                        return c;
        }
        return NULL;
}

DriftAction drift_decide(DriftState *s, const DriftSettings *settings, const char *item, bool held,
                         const char *writer, const char *found, uint64_t now_usec, uint64_t now_realtime_usec) {
        DriftConflict *c;
        GArray *times;
        char *key;

        if (!held)
                return DRIFT_ACTION_ADOPT;

        /* Once thpd gave an item up, any writer may set it until the conflict is over. */
        c = find_conflict(s, item);
        if (c) {
                g_free(c->value);
                c->value = g_strdup(found);
                return DRIFT_ACTION_YIELD;
        }

        key = restores_key(item, writer);
        times = g_hash_table_lookup(s->restores, key);
        if (!times) {
                times = g_array_new(FALSE, FALSE, sizeof(uint64_t));
                g_hash_table_insert(s->restores, key, times);
        } else
                g_free(key);

        /* Only restores within the window count: a writer that changes the knob once a day,
         * like a nightly configuration-management run, is corrected every time. */
        while (times->len > 0 && now_usec - g_array_index(times, uint64_t, 0) >= settings->restore_window_usec)
                g_array_remove_index(times, 0);

        if (times->len >= settings->max_restores) {
                DriftConflict new_conflict = {
                        .item = g_strdup(item),
                        .writer = g_strdup(writer),
                        .value = g_strdup(found),
                        .since_realtime_usec = now_realtime_usec,
                };

                g_array_append_val(s->conflicts, new_conflict);
                return DRIFT_ACTION_YIELD;
        }
        g_array_append_val(times, now_usec);
        return DRIFT_ACTION_RESTORE;
}

GPtrArray *drift_credit_announced(DriftState *s, const char *writer, const char *detail,
                                  uint64_t since_realtime_usec) {
        GPtrArray *credited = g_ptr_array_new_with_free_func(g_free);

        for (guint i = 0; i < s->recent->len; i++) {
                DriftEvent *e = &g_array_index(s->recent, DriftEvent, i);
                if (!(e->credit == DRIFT_CREDIT_NONE || (e->credit == DRIFT_CREDIT_PROCESS && streq_ptr(e->writer, writer))) ||
                    e->when_usec < since_realtime_usec)
                        continue;
                g_free(e->writer);
                e->writer = g_strdup(writer);
                g_free(e->writer_detail);
                e->writer_detail = g_strdup(detail);
                e->credit = DRIFT_CREDIT_ANNOUNCED;
                g_ptr_array_add(credited, g_strdup(e->item));

                if (e->action == DRIFT_ACTION_YIELD) {
                        DriftConflict *c = find_conflict(s, e->item);

                        if (c && (!c->writer || streq(c->writer, writer))) {
                                g_free(c->writer);
                                c->writer = g_strdup(writer);
                                g_free(c->writer_detail);
                                c->writer_detail = g_strdup(detail);
                        }
                }
        }
        return credited;
}

void drift_record(DriftState *s, DriftEvent *event) {
        if (s->recent->len >= DRIFT_RECENT_MAX)
                g_array_remove_index(s->recent, 0);
        g_array_append_val(s->recent, *event);
        *event = (DriftEvent) {};
}

const DriftConflict *drift_conflict(const DriftState *s, const char *item) {
        return find_conflict(s, item);
}

void drift_restore_conflict(DriftState *s, const char *item, const char *writer, const char *writer_detail,
                            const char *value, uint64_t since_realtime_usec) {
        DriftConflict c;

        if (find_conflict(s, item))
                return;
        c = (DriftConflict) {
                .item = g_strdup(item),
                .writer = g_strdup(writer),
                .writer_detail = writer ? g_strdup(writer_detail) : NULL,
                .value = g_strdup(value),
                .since_realtime_usec = since_realtime_usec,
        };
        g_array_append_val(s->conflicts, c);
}

bool drift_has_writer(const DriftState *s, const char *unit) {
        for (guint i = 0; i < s->conflicts->len; i++)
                if (streq_ptr(g_array_index(s->conflicts, DriftConflict, i).writer, unit))
                        return true;
        return false;
}

bool drift_writer_state(DriftState *s, const char *unit, bool running, bool reached_active) {
        GHashTableIter iter;
        const char *key;
        bool forgot = false;

        for (guint i = 0; i < s->conflicts->len;) {
                DriftConflict *c = &g_array_index(s->conflicts, DriftConflict, i);

                if (!streq_ptr(c->writer, unit)) {
                        i++;
                        continue;
                }
                if (running)
                        c->writer_ran = true;
                else if (c->writer_ran || reached_active) {
                        g_array_remove_index(s->conflicts, i);
                        forgot = true;
                        continue;
                }
                i++;
        }
        if (!forgot)
                return false;

        g_hash_table_iter_init(&iter, s->restores);
        while (g_hash_table_iter_next(&iter, (gpointer *) &key, NULL)) {
                const char *writer = strchr(key, '\n');

                if (writer && streq(writer + 1, unit))
                        g_hash_table_iter_remove(&iter);
        }
        return true;
}

char *drift_describe_process(const char *unit, const char *user, const char *comm, int pid) {
        if (unit && g_str_has_prefix(unit, "session-") && g_str_has_suffix(unit, ".scope") &&
            strlen(unit) > strlen("session-.scope"))
                return g_strdup_printf("%s in session %.*s: %s, pid %d", user ?: "a user",
                                       (int) (strlen(unit) - strlen("session-.scope")), unit + strlen("session-"),
                                       comm, pid);
        if (unit)
                return g_strdup_printf("%s (%s, pid %d)", unit, comm, pid);
        return g_strdup_printf("%s, pid %d", comm, pid);
}

char *drift_describe_writer(const DriftEvent *e) {
        if (e->credit == DRIFT_CREDIT_PROCESS && e->writer_detail)
                return g_strdup_printf("written by %s", e->writer_detail);
        if (e->credit == DRIFT_CREDIT_WHILE_DOWN)
                return g_strdup("written while thpd was not running");
        switch (e->writer ? e->credit : DRIFT_CREDIT_NONE) {
        case DRIFT_CREDIT_ANNOUNCED:
                return e->writer_detail ? g_strdup_printf("written by %s (%s)", e->writer, e->writer_detail)
                                        : g_strdup_printf("written by %s", e->writer);
        case DRIFT_CREDIT_JOB_RUNNING:
                return g_strdup_printf("likely written by %s (its job was running)", e->writer);
        case DRIFT_CREDIT_JOB_ENDED:
                return g_strdup_printf("likely written by %s (its job finished %" PRIu64 " ms before)", e->writer,
                                       e->job_age_usec / USEC_PER_MSEC);
        default:
                return g_strdup("unknown writer");
        }
}

char *drift_describe_conflict_writer(const DriftConflict *c) {
        if (!c->writer)
                return NULL;
        return c->writer_detail ? g_strdup_printf("%s (%s)", c->writer, c->writer_detail) : g_strdup(c->writer);
}

char *drift_describe_conflict(const DriftConflict *c) {
        return g_strdup_printf("%s keeps setting %s=%s: thpd no longer restores it",
                               c->writer ?: "an unknown writer", c->item, c->value);
}
