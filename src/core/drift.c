/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>

#include "drift.h"
#include "util.h"

static const char *const drift_action_table[_DRIFT_ACTION_MAX] = {
        [DRIFT_ACTION_RESTORE] = "restored",
        [DRIFT_ACTION_ADOPT] = "adopted",
        [DRIFT_ACTION_YIELD] = "yielded",
};

const char *drift_action_to_string(DriftAction a) {
        return a >= 0 && a < _DRIFT_ACTION_MAX ? drift_action_table[a] : NULL;
}

static void restores_free(gpointer p) {
        g_array_unref(p);
}

static void conflict_clear(gpointer p) {
        g_free(((DriftConflict *) p)->writer);
}

static void event_clear(gpointer p) {
        g_free(((DriftEvent *) p)->writer);
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

const char *drift_attribute(const DriftJob *job, uint64_t found_usec) {
        if (!job || !job->unit || found_usec < job->ended_usec)
                return NULL;
        return found_usec - job->ended_usec <= DRIFT_ATTRIBUTION_USEC ? job->unit : NULL;
}

/* The unknown writer is counted too: thpd must not fight anyone without end. */
static char *restores_key(Knob k, const char *writer) {
        return g_strdup_printf("%s\n%s", knob_name(k), writer ?: "");
}

static DriftConflict *find_conflict(const DriftState *s, Knob k) {
        for (guint i = 0; i < s->conflicts->len; i++) {
                DriftConflict *c = &g_array_index(s->conflicts, DriftConflict, i);

                if (c->knob == k)
                        return c;
        }
        return NULL;
}

DriftAction drift_decide(DriftState *s, const DriftSettings *settings, Knob k, bool held, const char *writer,
                         KnobValue found, uint64_t now_usec, uint64_t now_realtime_usec) {
        DriftConflict *c;
        GArray *times;
        char *key;

        if (!held)
                return DRIFT_ACTION_ADOPT;

        /* Once thpd gave a knob up, any writer may set it until the conflict is over. */
        c = find_conflict(s, k);
        if (c) {
                c->value = found;
                return DRIFT_ACTION_YIELD;
        }

        key = restores_key(k, writer);
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
                        .knob = k,
                        .writer = g_strdup(writer),
                        .value = found,
                        .since_realtime_usec = now_realtime_usec,
                };

                g_array_append_val(s->conflicts, new_conflict);
                return DRIFT_ACTION_YIELD;
        }
        g_array_append_val(times, now_usec);
        return DRIFT_ACTION_RESTORE;
}

void drift_record(DriftState *s, DriftEvent *event) {
        if (s->recent->len >= DRIFT_RECENT_MAX)
                g_array_remove_index(s->recent, 0);
        g_array_append_val(s->recent, *event);
        event->writer = NULL;
}

const DriftConflict *drift_conflict(const DriftState *s, Knob k) {
        return find_conflict(s, k);
}

void drift_yielded(const DriftState *s, bool ret[_KNOB_MAX]) {
        FOREACH_KNOB(k)
                ret[k] = find_conflict(s, k);
}

bool drift_has_writer(const DriftState *s, const char *unit) {
        for (guint i = 0; i < s->conflicts->len; i++)
                if (streq_ptr(g_array_index(s->conflicts, DriftConflict, i).writer, unit))
                        return true;
        return false;
}

bool drift_writer_state(DriftState *s, const char *unit, bool running) {
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
                else if (c->writer_ran) {
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

char *drift_describe_writer(const char *writer, uint64_t job_age_usec) {
        if (!writer)
                return g_strdup("unknown writer");
        return g_strdup_printf("likely written by %s (its job finished %" PRIu64 " ms before)", writer,
                               job_age_usec / USEC_PER_MSEC);
}

char *drift_describe_conflict(const DriftConflict *c) {
        char buf[24];

        return g_strdup_printf("%s keeps setting %s=%s: thpd no longer restores it",
                               c->writer ?: "an unknown writer", knob_name(c->knob),
                               knob_value_to_string(c->knob, c->value, buf));
}
