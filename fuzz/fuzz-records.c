/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The records a restarted thpd reads back from its runtime directory: the baseline
 * (baseline_load), the unit record (unit_record_parse) and the ownership record
 * (ownership_record_parse). /run/thpd outlives the process, so what is there may have been cut
 * short by a crash, or written by someone else. The same input is given to all three: the
 * baseline is read by path, from a scratch directory. A record that parses is written back and
 * read again, and must give the same result. */
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "baseline.h"
#include "fuzz.h"
#include "ownership-record.h"
#include "unit-record.h"
#include "util.h"

/* mkdtemp(3) replaces the six X's with a unique name. */
#define RECORDS_DIR_TEMPLATE "fuzz-records-XXXXXX"

static char *dir;
static char *path;

static void remove_dir(void) {
        g_autofree char *tmp = g_strconcat(path, ".tmp", NULL);

        (void) unlink(path);
        (void) unlink(tmp);
        (void) rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        fuzz_quiet_log();
        /* On a tmpfs, as /run is, where the records' fsync costs nothing; else in $TMPDIR. */
        dir = g_build_filename("/dev/shm", RECORDS_DIR_TEMPLATE, NULL);
        if (!g_mkdtemp(dir)) {
                g_free(dir);
                dir = g_dir_make_tmp(RECORDS_DIR_TEMPLATE, NULL);
        }
        if (!dir)
                abort();
        path = g_build_filename(dir, BASELINE_FILE, NULL);
        atexit(remove_dir);
        return 0;
}

static void check_baseline(const uint8_t *data, size_t size) {
        Baseline b, again;

        if (!g_file_set_contents(path, (const char *) data, (gssize) size, NULL))
                abort();
        if (baseline_load(dir, &b) < 0)
                return;
        if (baseline_save(dir, &b) < 0 || baseline_load(dir, &again) < 0 || b.n_pools != again.n_pools)
                abort();
        FOREACH_KNOB(k)
                if (b.knobs[k] != again.knobs[k])
                        abort();
        for (size_t i = 0; i < b.n_pools; i++)
                if (b.pools[i].page_size_kb != again.pools[i].page_size_kb || b.pools[i].node != again.pools[i].node ||
                    b.pools[i].pages != again.pools[i].pages)
                        abort();
}

static void check_unit_record(const uint8_t *data, size_t size) {
        g_autoptr(GHashTable) started = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        g_autoptr(GHashTable) needs_restart = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        g_autoptr(GHashTable) started2 = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        g_autoptr(GHashTable) needs_restart2 = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        g_autoptr(GPtrArray) units = g_ptr_array_new();
        g_autofree char *text = g_strndup((const char *) data, size);
        g_autofree char *formatted = NULL;
        GHashTableIter iter;
        gpointer key;

        if (unit_record_parse(text, started, needs_restart) < 0)
                return;
        g_hash_table_iter_init(&iter, started);
        while (g_hash_table_iter_next(&iter, &key, NULL))
                g_ptr_array_add(units, key);
        g_hash_table_iter_init(&iter, needs_restart);
        while (g_hash_table_iter_next(&iter, &key, NULL))
                if (!g_hash_table_contains(started, key))
                        g_ptr_array_add(units, key);
        g_ptr_array_sort(units, compare_strings);
        formatted = unit_record_format(units, needs_restart);
        if (unit_record_parse(formatted, started2, needs_restart2) < 0 ||
            g_hash_table_size(started2) + g_hash_table_size(needs_restart2) != units->len)
                abort();
}

static bool same_item(const OwnershipRecordItem *a, const OwnershipRecordItem *b) {
        return b && streq_ptr(a->value, b->value) && streq_ptr(a->wanted, b->wanted) && a->yielded == b->yielded &&
               streq_ptr(a->writer, b->writer) && streq_ptr(a->writer_detail, b->writer_detail) &&
               streq_ptr(a->writer_value, b->writer_value) &&
               a->since_usec == b->since_usec;
}

static void check_ownership_record(const uint8_t *data, size_t size) {
        g_autoptr(GHashTable) items = ownership_record_items_new();
        g_autoptr(GHashTable) again = ownership_record_items_new();
        g_autofree char *text = g_strndup((const char *) data, size);
        g_autoptr(GString) s = g_string_new(NULL);
        GHashTableIter iter;
        gpointer item, value;

        if (ownership_record_parse(text, items) < 0)
                return;
        ownership_record_begin(s);
        g_hash_table_iter_init(&iter, items);
        while (g_hash_table_iter_next(&iter, &item, &value)) {
                const OwnershipRecordItem *it = value;

                if (it->value)
                        ownership_record_append_thpd(s, item, it->value);
                if (it->wanted)
                        ownership_record_append_want(s, item, it->wanted);
                if (it->yielded)
                        ownership_record_append_yield(s, item, it->writer, it->writer_detail, it->writer_value, it->since_usec);
        }
        if (ownership_record_parse(s->str, again) < 0 || g_hash_table_size(again) != g_hash_table_size(items))
                abort();
        g_hash_table_iter_init(&iter, items);
        while (g_hash_table_iter_next(&iter, &item, &value))
                if (!same_item(value, g_hash_table_lookup(again, item)))
                        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        check_baseline(data, size);
        check_unit_record(data, size);
        check_ownership_record(data, size);
        return 0;
}
