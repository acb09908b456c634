/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "unit-record.h"
#include "util.h"

#define UNIT_RECORD_HEADER "# thpd units v1: units of active policies (started under them, or needing a restart)\n"

static bool valid_word(const char *s) {
        return s && s[0] != '\0' && !strpbrk(s, " \t\n") && g_utf8_validate(s, -1, NULL);
}

int unit_record_parse(const char *text, GHashTable *started, GHashTable *needs_restart) {
        g_auto(GStrv) lines = NULL;

        if (!g_str_has_prefix(text, UNIT_RECORD_HEADER))
                return -EBADMSG;
        lines = g_strsplit(text + strlen(UNIT_RECORD_HEADER), "\n", -1);
        for (size_t i = 0; lines[i]; i++) {
                g_auto(GStrv) words = NULL;

                if (lines[i][0] == '\0')
                        continue;
                words = g_strsplit(lines[i], " ", -1);
                if (streq(words[0], "started") && g_strv_length(words) == 2 && valid_word(words[1]))
                        g_hash_table_add(started, g_strdup(words[1]));
                else if (streq(words[0], "restart") && g_strv_length(words) == 3 && valid_word(words[1]) &&
                         valid_word(words[2]))
                        g_hash_table_insert(needs_restart, g_strdup(words[1]), g_strdup(words[2]));
                else
                        return -EBADMSG;
        }
        return 0;
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
