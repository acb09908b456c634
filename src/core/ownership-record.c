/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>

#include "ownership-record.h"
#include "unit-record.h"
#include "util.h"

#define OWNERSHIP_RECORD_HEADER "# thpd ownership v1: what thpd wrote, per knob and pool\n"

static void item_free(gpointer p) {
        OwnershipRecordItem *it = p;

        g_free(it->value);
        g_free(it->wanted);
        g_free(it->writer);
        g_free(it->writer_detail);
        g_free(it->writer_value);
        g_free(it);
}

GHashTable *ownership_record_items_new(void) {
        return g_hash_table_new_full(g_str_hash, g_str_equal, g_free, item_free);
}

static OwnershipRecordItem *get_item(GHashTable *items, const char *item) {
        OwnershipRecordItem *it = g_hash_table_lookup(items, item);

        if (!it) {
                it = g_new0(OwnershipRecordItem, 1);
                g_hash_table_insert(items, g_strdup(item), it);
        }
        return it;
}

/* thpd writes only what it did not yield, or no longer yields: a "want" or "thpd" line ends a
 * yield, writer and all. */
static void end_yield(OwnershipRecordItem *it) {
        it->yielded = false;
        it->since_usec = 0;
        g_clear_pointer(&it->writer, g_free);
        g_clear_pointer(&it->writer_detail, g_free);
        g_clear_pointer(&it->writer_value, g_free);
}

static void set_thpd(GHashTable *items, const char *item, const char *value) {
        OwnershipRecordItem *it = get_item(items, item);

        end_yield(it);
        g_clear_pointer(&it->wanted, g_free);
        g_free(it->value);
        it->value = g_strdup(value);
}

int ownership_record_parse(const char *text, GHashTable *items) {
        g_autoptr(GHashTable) parsed = ownership_record_items_new();
        g_autoptr(GPtrArray) lines = NULL;
        GHashTableIter iter;
        gpointer item, it;
        uint64_t since;
        int r;

        r = record_split_lines(text, OWNERSHIP_RECORD_HEADER, &lines);
        if (r < 0)
                return r;
        for (guint i = 0; i < lines->len; i++) {
                char **words = g_ptr_array_index(lines, i);
                guint n_words = g_strv_length(words);

                if (streq(words[0], "thpd") && n_words == 3 && record_word_valid(words[2]))
                        set_thpd(parsed, words[1], words[2]);
                else if (streq(words[0], "want") && n_words == 3 && record_word_valid(words[2])) {
                        OwnershipRecordItem *w = get_item(parsed, words[1]);

                        end_yield(w);
                        g_free(w->wanted);
                        w->wanted = g_strdup(words[2]);
                }
                else if (streq(words[0], "baseline") && n_words == 2)
                        g_hash_table_remove(parsed, words[1]);
                else if (streq(words[0], "yield") && n_words >= 5 && record_word_valid(words[2]) &&
                         record_word_valid(words[3]) && parse_u64(words[4], &since) >= 0) {
                        OwnershipRecordItem *y = get_item(parsed, words[1]);
                        g_autofree char *detail = n_words > 5 ? g_strjoinv(" ", words + 5) : NULL;

                        if (detail && (detail[0] == '\0' || !g_utf8_validate(detail, -1, NULL)))
                                return -EBADMSG;
                        y->yielded = true;
                        g_free(y->writer);
                        y->writer = streq(words[2], "-") ? NULL : g_strdup(words[2]);
                        g_free(y->writer_detail);
                        y->writer_detail = y->writer ? g_steal_pointer(&detail) : NULL;
                        g_free(y->writer_value);
                        y->writer_value = g_strdup(words[3]);
                        y->since_usec = since;
                } else
                        return -EBADMSG;
        }

        g_hash_table_iter_init(&iter, parsed);
        while (g_hash_table_iter_next(&iter, &item, &it)) {
                g_hash_table_iter_steal(&iter);
                g_hash_table_replace(items, item, it);
        }
        return 0;
}

void ownership_record_begin(GString *s) {
        g_string_append(s, OWNERSHIP_RECORD_HEADER);
}

void ownership_record_append_want(GString *s, const char *item, const char *value) {
        g_string_append_printf(s, "want %s %s\n", item, value);
}

void ownership_record_append_thpd(GString *s, const char *item, const char *value) {
        g_string_append_printf(s, "thpd %s %s\n", item, value);
}

void ownership_record_append_baseline(GString *s, const char *item) {
        g_string_append_printf(s, "baseline %s\n", item);
}

void ownership_record_append_yield(GString *s, const char *item, const char *writer, const char *detail,
                                   const char *value, uint64_t since_usec) {
        g_string_append_printf(s, "yield %s %s %s %" PRIu64, item, writer ?: "-", value, since_usec);
        if (writer && detail && detail[0] != '\0' && !strchr(detail, '\n'))
                g_string_append_printf(s, " %s", detail);
        g_string_append_c(s, '\n');
}

static bool knob_is(Knob k, const char *text, KnobValue v) {
        KnobValue parsed;

        return text && knob_value_from_string(k, text, &parsed) >= 0 && parsed == v;
}

bool ownership_record_knob_left(const OwnershipRecordItem *it, Knob k, KnobValue current) {
        return it && (knob_is(k, it->value, current) || knob_is(k, it->wanted, current));
}

bool ownership_record_pool_left(const OwnershipRecordItem *it, uint64_t baseline, uint64_t current) {
        uint64_t to, from = baseline;

        if (!it || (it->value && parse_u64(it->value, &from) < 0))
                return false;
        if (!it->wanted)
                return it->value && current == from;
        if (parse_u64(it->wanted, &to) < 0)
                return false;
        return current >= MIN(from, to) && current <= MAX(from, to);
}
