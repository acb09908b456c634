/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>

#include "log.h"
#include "manager-drift.h"
#include "manager-ownership.h"
#include "manager-pools.h"
#include "ownership-record.h"
#include "runtime-file.h"
#include "unit-record.h"
#include "util.h"

/* thpd's, with nothing holding it: what thpd wrote and gives back at the next apply (or a write
 * that failed to give it back). */
#define LEFTOVER "leftover, to give back"

void manager_ownership_init(Manager *m) {
        m->own_recorded = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        m->own_wanted = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        m->own_journal = g_string_new(NULL);
        m->while_down = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
}

void manager_ownership_done(Manager *m) {
        g_clear_pointer(&m->own_recorded, g_hash_table_destroy);
        g_clear_pointer(&m->own_wanted, g_hash_table_destroy);
        if (m->own_journal)
                g_string_free(g_steal_pointer(&m->own_journal), TRUE);
        g_clear_pointer(&m->while_down, g_hash_table_destroy);
}

static int write_snapshot(Manager *m) {
        g_autoptr(GString) s = g_string_new(NULL);
        g_autoptr(GPtrArray) items = g_ptr_array_new();
        GHashTableIter iter;
        gpointer item;
        int r;

        g_hash_table_iter_init(&iter, m->own_recorded);
        while (g_hash_table_iter_next(&iter, &item, NULL))
                g_ptr_array_add(items, item);
        g_ptr_array_sort(items, compare_strings);
        ownership_record_begin(s);
        for (guint i = 0; i < items->len; i++)
                g_string_append(s, g_hash_table_lookup(m->own_recorded, g_ptr_array_index(items, i)));
        /* The lines not appended yet, "want" lines among them, say the same again after. */
        g_string_append(s, m->own_journal->str);
        r = runtime_file_write(m->runtime_dir, OWNERSHIP_RECORD_FILE, s->str);
        m->own_record_written = r >= 0;
        if (r < 0)
                return r;
        m->own_record_size = s->len;
        m->own_record_appended = 0;
        g_string_truncate(m->own_journal, 0);
        return 0;
}

/* Appends the lines noted since the last flush, fsynced; or writes the snapshot, which holds
 * them too, when appending failed or the appended lines grew as long as the snapshot. */
void manager_ownership_flush(Manager *m) {
        GString *journal = m->own_journal;
        int r;

        if (journal->len == 0)
                return;
        if (m->own_record_written &&
            unit_record_can_append(m->own_record_size, m->own_record_appended, journal->len, OWNERSHIP_RECORD_MAX)) {
                r = runtime_file_append(m->runtime_dir, OWNERSHIP_RECORD_FILE, journal->str);
                if (r >= 0) {
                        m->own_record_appended += journal->len;
                        g_string_truncate(journal, 0);
                        return;
                }
                log_debug_errno(r, "Cannot append to the ownership record in %s, writing it whole: %m", m->runtime_dir);
        }
        r = write_snapshot(m);
        if (r < 0) {
                g_string_truncate(journal, 0);
                log_warning_errno(r, "Cannot record what thpd wrote in %s (%m): after a crash, thpd would take its own "
                                  "leftover for a write made while it was down.", m->runtime_dir);
        }
}

/* The record's line for an item (with its newline), NULL for the baseline's. */
static char *record_line(Manager *m, const char *item, Owner owner, const char *value) {
        g_autoptr(GString) line = g_string_new(NULL);
        const DriftConflict *c;

        switch (owner) {
        case OWNER_THPD:
                ownership_record_append_thpd(line, item, value);
                break;
        case OWNER_WRITER:
                c = drift_conflict(&m->drift, item);
                ownership_record_append_yield(line, item, c ? c->writer : NULL, c ? c->writer_detail : NULL,
                                              c && c->value ? c->value : value,
                                              c ? c->since_realtime_usec : 0);
                break;
        default:
                return NULL;
        }
        return g_string_free(g_steal_pointer(&line), FALSE);
}

void manager_ownership_want(Manager *m, const char *item, const char *value) {
        ownership_record_append_want(m->own_journal, item, value);
        g_hash_table_add(m->own_wanted, g_strdup(item));
}

void manager_ownership_note(Manager *m, const char *item, Owner owner, const char *value) {
        g_autofree char *line = record_line(m, item, owner, value);
        const char *old = g_hash_table_lookup(m->own_recorded, item);
        bool wanted = g_hash_table_remove(m->own_wanted, item);

        if (line) {
                if (streq_ptr(old, line) && !wanted)
                        return;
                g_string_append(m->own_journal, line);
                g_hash_table_replace(m->own_recorded, g_strdup(item), g_steal_pointer(&line));
        } else if (old || wanted) {
                g_hash_table_remove(m->own_recorded, item);
                ownership_record_append_baseline(m->own_journal, item);
        }
}

static void load(Manager *m, GHashTable *items, bool *ret_recorded) {
        g_autofree char *path = g_build_filename(m->runtime_dir, OWNERSHIP_RECORD_FILE, NULL);
        _cleanup_free_ char *text = NULL;
        int r;

        r = read_file_max(path, OWNERSHIP_RECORD_MAX, &text);
        if (r >= 0)
                r = ownership_record_parse(text, items);
        if (r == -ENOENT)
                log_info("No ownership record in %s (written by an older thpd, or lost): every knob and pool off its "
                         "baseline is taken for the last instance's.", m->runtime_dir);
        else if (r < 0)
                log_warning_errno(r, "Ignoring the ownership record in %s (%m): every knob and pool off its baseline is "
                                  "taken for the last instance's.", m->runtime_dir);
        *ret_recorded = r >= 0;
}

/* Keeps the item's owner and its line for the snapshot; a yield is taken up again; one written
 * while thpd was down waits for the first apply that judges it. Returns whether it was. */
static bool started(Manager *m, Owner *owner, const char *item, const OwnershipRecordItem *it,
                    const OwnershipStart *s, const char *value, const char *expected) {
        g_autofree char *line = NULL;
        bool while_down;

        *owner = ownership_at_start(s, &while_down);
        if (*owner == OWNER_WRITER) {
                drift_restore_conflict(&m->drift, item, it->writer, it->writer_detail, it->writer_value, it->since_usec);
                /* A writer thpd could not name has no unit whose stop it could see. */
                if (it->writer)
                        log_notice("%s: left at %s to %s, which thpd yielded to before it restarted; the conflict "
                                   "ends when that writer stops or at a reload.", item, value, it->writer);
                else
                        log_notice("%s: left at %s to an unknown writer, which thpd yielded to before it restarted; "
                                   "the conflict ends at a reload.", item, value);
        }
        line = record_line(m, item, *owner, value);
        if (line)
                g_hash_table_replace(m->own_recorded, g_strdup(item), g_steal_pointer(&line));
        if (while_down)
                g_hash_table_replace(m->while_down, g_strdup(item), g_strdup(expected));
        return while_down;
}

void manager_ownership_start(Manager *m, const KnobValue current[_KNOB_MAX], bool reused) {
        g_autoptr(GHashTable) items = ownership_record_items_new();
        bool recorded = false;
        int r;

        if (reused)
                load(m, items, &recorded);
        FOREACH_KNOB(k) {
                const OwnershipRecordItem *it = g_hash_table_lookup(items, knob_name(k));
                char a[24], b[24];

                if (!m->present[k])
                        continue;
                m->own.knobs_unjudged[k] = started(m, &m->own.knobs[k], knob_name(k), it,
                        &(OwnershipStart) {
                                .at_baseline = current[k] == m->baseline.knobs[k],
                                .recorded = recorded,
                                .thpd_left = ownership_record_knob_left(it, k, current[k]),
                                .yielded = it && it->yielded,
                        },
                        knob_value_to_string(k, current[k], a),
                        it && it->value ? it->value : knob_value_to_string(k, m->baseline.knobs[k], b));
        }
        for (size_t i = 0; i < m->baseline.n_pools; i++) {
                const PoolBaseline *p = &m->baseline.pools[i];
                g_autofree char *item = manager_pool_item(p->page_size_kb, p->node);
                g_autofree char *value = NULL, *baseline = NULL;
                const OwnershipRecordItem *it = g_hash_table_lookup(items, item);
                PoolState state;

                /* One that cannot be read is the apply's error to report, not a leftover. */
                if (pool_files_read(&m->pool_files, m->sysfs_root, p->page_size_kb, p->node, &state) < 0)
                        continue;
                value = g_strdup_printf("%" PRIu64, state.nr);
                baseline = g_strdup_printf("%" PRIu64, p->pages);
                (void) started(m, &m->own.pools[i], item, it,
                        &(OwnershipStart) {
                                .at_baseline = state.nr == p->pages,
                                .recorded = recorded,
                                .thpd_left = ownership_record_pool_left(it, p->pages, state.nr),
                                .yielded = it && it->yielded,
                        },
                        value, it && it->value ? it->value : baseline);
        }

        r = write_snapshot(m);
        if (r < 0)
                log_warning_errno(r, "Cannot record what thpd wrote in %s (%m): after a crash, thpd would take its own "
                                  "leftover for a write made while it was down.", m->runtime_dir);
}

/* Reported as the drift it is, once an apply judged it: restored (a write) or adopted. */
static void judged(Manager *m, const char *item, bool decided, bool restored, bool adopted, const char *found) {
        const char *expected;

        if (!decided || g_hash_table_size(m->while_down) == 0)
                return;
        expected = g_hash_table_lookup(m->while_down, item);
        if (!expected)
                return;
        if (restored || adopted)
                manager_drift_found_while_down(m, item, restored ? DRIFT_ACTION_RESTORE : DRIFT_ACTION_ADOPT, expected,
                                               found);
        g_hash_table_remove(m->while_down, item);
}

void manager_ownership_knob_judged(Manager *m, Knob k, const KnobStep *step) {
        char buf[24];

        /* Held before the unit list, or unreadable: the next apply judges it. */
        judged(m, knob_name(k), step->action != KNOB_ACTION_HOLD && step->action != KNOB_ACTION_UNREADABLE,
               step->action == KNOB_ACTION_WRITE, step->action == KNOB_ACTION_ADOPT,
               knob_value_to_string(k, step->current, buf));
}

void manager_ownership_pool_judged(Manager *m, const char *item, const PoolStep *step) {
        g_autofree char *found = g_strdup_printf("%" PRIu64, step->current);

        judged(m, item, step->action != POOL_ACTION_UNREADABLE,
               step->action == POOL_ACTION_RESIZE || step->action == POOL_ACTION_OWN, step->action == POOL_ACTION_ADOPT,
               found);
}

static void ownership_row_clear(gpointer p) {
        OwnershipRow *row = p;

        g_free(row->item);
        g_free(row->detail);
}

/* What thpd holds a knob for: the source the last apply resolved. */
static char *knob_detail(const Manager *m, Knob k) {
        const Source *s = &m->target.source[k];

        if (!manager_knob_resolved(m, k))
                return g_strdup(LEFTOVER);
        switch (s->kind) {
        case SOURCE_POLICY:
                return s->unit ? g_strdup_printf("%s for %s", s->policy->name, s->unit) : g_strdup(s->policy->name);
        case SOURCE_OVERRIDE:
                return g_strdup("override");
        case SOURCE_MITIGATION:
                return g_strdup("storm mitigation");
        default:
                return g_strdup(m->settings.baseline[k] != KNOB_VALUE_UNSET ? "baseline from thpd.conf" : LEFTOVER);
        }
}

static char *row_detail(const Manager *m, const char *item, Owner owner, char *thpd_detail) {
        g_autofree char *held_for = thpd_detail;
        const DriftConflict *c;

        switch (owner) {
        case OWNER_THPD:
                return g_steal_pointer(&held_for);
        case OWNER_WRITER:
                c = drift_conflict(&m->drift, item);
                return (c ? drift_describe_conflict_writer(c) : NULL) ?: g_strdup("");
        default:
                return g_strdup("");
        }
}

GArray *manager_ownership_rows(const Manager *m) {
        GArray *rows = g_array_new(FALSE, TRUE, sizeof(OwnershipRow));

        g_array_set_clear_func(rows, ownership_row_clear);
        FOREACH_KNOB(k) {
                OwnershipRow row = { .owner = m->own.knobs[k] };

                if (!m->present[k])
                        continue;
                row.item = g_strdup(knob_name(k));
                row.detail = row_detail(m, row.item, row.owner, row.owner == OWNER_THPD ? knob_detail(m, k) : NULL);
                g_array_append_val(rows, row);
        }
        for (size_t i = 0; i < m->baseline.n_pools; i++) {
                const PoolBaseline *p = &m->baseline.pools[i];
                OwnershipRow row = { .item = manager_pool_item(p->page_size_kb, p->node), .owner = m->own.pools[i] };
                char *held_for = NULL;

                if (row.owner == OWNER_THPD)
                        held_for = manager_pool_holders(m, p->page_size_kb, p->node, true) ?: g_strdup(LEFTOVER);
                row.detail = row_detail(m, row.item, row.owner, held_for);
                g_array_append_val(rows, row);
        }
        return rows;
}

void manager_ownership_remove(Manager *m) {
        (void) runtime_file_remove(m->runtime_dir, OWNERSHIP_RECORD_FILE);
}
