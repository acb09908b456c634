/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "unit-record.h"
#include "util.h"

/* Appended lines may grow this long even after a short snapshot: a host with few units then
 * rewrites its record once in a hundred starts or so, not at every one. */
#define APPEND_MIN 4096U

#define UNIT_RECORD_HEADER "# thpd units v1: units of active policies (started under them, or needing a restart)\n"

bool record_word_valid(const char *s) {
        return s && s[0] != '\0' && !strpbrk(s, " \t\n") && g_utf8_validate(s, -1, NULL);
}

int record_split_lines(const char *text, const char *header, GPtrArray **ret) {
        g_autoptr(GPtrArray) split = g_ptr_array_new_with_free_func((GDestroyNotify) g_strfreev);
        g_auto(GStrv) lines = NULL;
        size_t n;

        if (!g_str_has_prefix(text, header))
                return -EBADMSG;
        lines = g_strsplit(text + strlen(header), "\n", -1);
        /* After the last newline: "" for a whole record, or a line whose write was cut short
         * (g_strsplit() gives no string at all for an empty record). */
        n = g_strv_length(lines);
        if (n > 0)
                n--;
        for (size_t i = 0; i < n; i++) {
                char **words;

                if (lines[i][0] == '\0')
                        continue;
                words = g_strsplit(lines[i], " ", -1);
                g_ptr_array_add(split, words);
                if (g_strv_length(words) < 2 || !record_word_valid(words[1]))
                        return -EBADMSG;
        }
        *ret = g_steal_pointer(&split);
        return 0;
}

int unit_record_parse(const char *text, GHashTable *started, GHashTable *needs_restart) {
        g_autoptr(GHashTable) wanted = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        g_autoptr(GHashTable) hints = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        g_autoptr(GPtrArray) lines = NULL;
        GHashTableIter iter;
        gpointer unit, policy;
        int r;

        r = record_split_lines(text, UNIT_RECORD_HEADER, &lines);
        if (r < 0)
                return r;
        for (guint i = 0; i < lines->len; i++) {
                char **words = g_ptr_array_index(lines, i);
                guint n_words = g_strv_length(words);

                if (streq(words[0], "started") && n_words == 2)
                        g_hash_table_add(wanted, g_strdup(words[1]));
                else if (streq(words[0], "restart") && n_words == 3 && record_word_valid(words[2])) {
                        g_hash_table_add(wanted, g_strdup(words[1]));
                        g_hash_table_insert(hints, g_strdup(words[1]), g_strdup(words[2]));
                } else if (streq(words[0], "unhint") && n_words == 2)
                        g_hash_table_remove(hints, words[1]);
                else if (streq(words[0], "gone") && n_words == 2) {
                        g_hash_table_remove(wanted, words[1]);
                        g_hash_table_remove(hints, words[1]);
                } else
                        return -EBADMSG;
        }

        g_hash_table_iter_init(&iter, wanted);
        while (g_hash_table_iter_next(&iter, &unit, NULL))
                if (!g_hash_table_contains(hints, unit))
                        g_hash_table_add(started, g_strdup(unit));
        g_hash_table_iter_init(&iter, hints);
        while (g_hash_table_iter_next(&iter, &unit, &policy))
                g_hash_table_insert(needs_restart, g_strdup(unit), g_strdup(policy));
        return 0;
}

void unit_record_append_change(GString *journal, UnitRecordChange change, const char *unit, const char *policy) {
        static const char *const words[] = {
                [UNIT_RECORD_STARTED] = "started ",
                [UNIT_RECORD_RESTART] = "restart ",
                [UNIT_RECORD_UNHINT] = "unhint ",
                [UNIT_RECORD_GONE] = "gone ",
        };

        g_string_append(journal, words[change]);
        g_string_append(journal, unit);
        if (change == UNIT_RECORD_RESTART) {
                g_string_append_c(journal, ' ');
                g_string_append(journal, policy);
        }
        g_string_append_c(journal, '\n');
}

static GPtrArray *sorted_keys(GHashTable *table) {
        GPtrArray *keys = g_ptr_array_sized_new(g_hash_table_size(table));
        GHashTableIter iter;
        gpointer key;

        g_hash_table_iter_init(&iter, table);
        while (g_hash_table_iter_next(&iter, &key, NULL))
                g_ptr_array_add(keys, key);
        g_ptr_array_sort(keys, compare_strings);
        return keys;
}

char *unit_record_format(const GPtrArray *units, GHashTable *needs_restart) {
        g_autoptr(GPtrArray) restart = sorted_keys(needs_restart);
        GString *s = g_string_new(UNIT_RECORD_HEADER);

        /* Written at every start of a policy's unit: appends, not printf. */
        for (guint i = 0; i < units->len; i++) {
                const char *unit = g_ptr_array_index(units, i);

                if (restart->len > 0 && g_hash_table_contains(needs_restart, unit))
                        continue;
                g_string_append(s, "started ");
                g_string_append(s, unit);
                g_string_append_c(s, '\n');
        }
        for (guint i = 0; i < restart->len; i++) {
                const char *unit = g_ptr_array_index(restart, i);

                g_string_append(s, "restart ");
                g_string_append(s, unit);
                g_string_append_c(s, ' ');
                g_string_append(s, g_hash_table_lookup(needs_restart, unit));
                g_string_append_c(s, '\n');
        }
        return g_string_free(s, FALSE);
}

bool unit_record_can_append(size_t snapshot, size_t appended, size_t adding, size_t read_limit) {
        size_t after = appended + adding;

        return after >= appended && after <= MAX(snapshot, APPEND_MIN) && snapshot <= read_limit &&
               after <= read_limit - snapshot;
}
