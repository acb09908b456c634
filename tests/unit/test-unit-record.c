/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib.h>
#include <stdint.h>

#include "runtime-file.h"
#include "sysfs.h"
#include "test-util.h"
#include "unit-record.h"
#include "util.h"

#define HEADER "# thpd units v1: units of active policies (started under them, or needing a restart)\n"

static GHashTable *new_set(void) {
        return g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
}

static GHashTable *new_map(void) {
        return g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
}

/* unit_record_format() takes the wanted units sorted, as the plan keeps them. */
static char *format(GHashTable *started, GHashTable *restart) {
        g_autoptr(GPtrArray) units = g_ptr_array_new();
        GHashTableIter iter;
        gpointer key;

        g_hash_table_iter_init(&iter, started);
        while (g_hash_table_iter_next(&iter, &key, NULL))
                g_ptr_array_add(units, key);
        g_ptr_array_sort(units, compare_strings);
        return unit_record_format(units, restart);
}

START_TEST(test_round_trip_is_sorted) {
        g_autoptr(GHashTable) started = new_set(), restart = new_map();
        g_autoptr(GHashTable) started2 = new_set(), restart2 = new_map();
        g_autofree char *text = NULL, *again = NULL;

        g_hash_table_add(started, g_strdup("redis-server.service"));
        g_hash_table_add(started, g_strdup("postgresql@15-main.service"));
        g_hash_table_insert(restart, g_strdup("mongod.service"), g_strdup("mongodb.conf"));

        text = format(started, restart);
        ck_assert_str_eq(text, HEADER "started postgresql@15-main.service\nstarted redis-server.service\n"
                               "restart mongod.service mongodb.conf\n");
        ck_assert_int_eq(unit_record_parse(text, started2, restart2), 0);
        ck_assert_uint_eq(g_hash_table_size(started2), 2);
        ck_assert(g_hash_table_contains(started2, "redis-server.service"));
        ck_assert_str_eq(g_hash_table_lookup(restart2, "mongod.service"), "mongodb.conf");
        again = format(started2, restart2);
        ck_assert_str_eq(again, text);
}
END_TEST

START_TEST(test_empty_record) {
        g_autoptr(GHashTable) started = new_set(), restart = new_map();
        g_autofree char *text = format(started, restart);

        ck_assert_str_eq(text, HEADER);
        ck_assert_int_eq(unit_record_parse(text, started, restart), 0);
        ck_assert_uint_eq(g_hash_table_size(started), 0);
}
END_TEST

/* Changes appended after the snapshot replay in order; a unit is either started or hinted. */
START_TEST(test_changes_replayed) {
        g_autoptr(GHashTable) started = new_set(), restart = new_map();
        g_autoptr(GString) text = g_string_new(HEADER "started a.service\nstarted b.service\nrestart c.service c.conf\n");

        unit_record_append_change(text, UNIT_RECORD_STARTED, "d.service", NULL);
        unit_record_append_change(text, UNIT_RECORD_RESTART, "a.service", "a.conf");
        unit_record_append_change(text, UNIT_RECORD_UNHINT, "c.service", NULL);
        unit_record_append_change(text, UNIT_RECORD_GONE, "b.service", NULL);
        unit_record_append_change(text, UNIT_RECORD_RESTART, "e.service", "e.conf");
        unit_record_append_change(text, UNIT_RECORD_GONE, "e.service", NULL);
        ck_assert_str_eq(text->str + strlen(HEADER),
                         "started a.service\nstarted b.service\nrestart c.service c.conf\nstarted d.service\n"
                         "restart a.service a.conf\nunhint c.service\ngone b.service\nrestart e.service e.conf\n"
                         "gone e.service\n");

        ck_assert_int_eq(unit_record_parse(text->str, started, restart), 0);
        ck_assert_uint_eq(g_hash_table_size(started), 2);
        ck_assert(g_hash_table_contains(started, "c.service"));
        ck_assert(g_hash_table_contains(started, "d.service"));
        ck_assert_uint_eq(g_hash_table_size(restart), 1);
        ck_assert_str_eq(g_hash_table_lookup(restart, "a.service"), "a.conf");
}
END_TEST

/* A write cut short leaves part of a line at the end: what came before it stands. */
START_TEST(test_cut_last_line_ignored) {
        g_autoptr(GHashTable) started = new_set(), restart = new_map();

        ck_assert_int_eq(unit_record_parse(HEADER "started a.service\ngone a.ser", started, restart), 0);
        ck_assert(g_hash_table_contains(started, "a.service"));
        ck_assert_int_eq(unit_record_parse(HEADER "started b.service\nrest", started, restart), 0);
        ck_assert(g_hash_table_contains(started, "b.service"));
}
END_TEST

/* The appended lines stay no longer than the snapshot (4 KiB for a short one), and the whole
 * record within what a restarted thpd reads of it. */
START_TEST(test_when_to_append) {
        ck_assert(unit_record_can_append(100, 0, 40, 65536));
        ck_assert(unit_record_can_append(100, 4000, 96, 65536));
        ck_assert(!unit_record_can_append(100, 4000, 97, 65536));
        ck_assert(unit_record_can_append(20000, 19000, 1000, 65536));
        ck_assert(!unit_record_can_append(20000, 19000, 1001, 65536));
        /* A 40 KiB snapshot may not double: the read limit comes first. */
        ck_assert(unit_record_can_append(40960, 24576, 0, 65536));
        ck_assert(!unit_record_can_append(40960, 24576, 1, 65536));
        ck_assert(!unit_record_can_append(70000, 0, 1, 65536));
        ck_assert(!unit_record_can_append(100, SIZE_MAX, 2, 65536));
}
END_TEST

START_TEST(test_bad_records) {
        static const char *const bad[] = {
                "",
                "# thpd baseline v1: the kernel's values before thpd changed them\n",
                HEADER "started\n",
                HEADER "started a.service b.service\n",
                HEADER "restart a.service\n",
                HEADER "stopped a.service\n",
                HEADER "started \xff.service\n",
                HEADER "gone\n",
                HEADER "unhint a.service b.conf\n",
                HEADER "gone a.service b.service\n",
        };

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                g_autoptr(GHashTable) started = new_set(), restart = new_map();

                ck_assert_msg(unit_record_parse(bad[i], started, restart) == -EBADMSG, "accepted: %s", bad[i]);
        }
}
END_TEST

START_TEST(test_load_written_record) {
        g_autofree char *dir = test_mkdtemp();
        g_autofree char *sub = g_build_filename(dir, "run", NULL);
        g_autoptr(GHashTable) started = new_set(), restart = new_map();

        ck_assert_int_eq(unit_record_load(sub, started, restart), -ENOENT);
        ck_assert_int_eq(runtime_file_write(sub, UNIT_RECORD_FILE, HEADER "started a.service\n"), 0);
        ck_assert_int_eq(unit_record_load(sub, started, restart), 0);
        ck_assert(g_hash_table_contains(started, "a.service"));
        /* Changes are appended to a record written whole, never to a missing one. */
        ck_assert_int_eq(runtime_file_append(sub, UNIT_RECORD_FILE, "gone a.service\nstarted b.service\n"), 0);
        g_hash_table_remove_all(started);
        ck_assert_int_eq(unit_record_load(sub, started, restart), 0);
        ck_assert(!g_hash_table_contains(started, "a.service"));
        ck_assert(g_hash_table_contains(started, "b.service"));
        ck_assert_int_eq(runtime_file_remove(sub, UNIT_RECORD_FILE), 0);
        ck_assert_int_eq(runtime_file_append(sub, UNIT_RECORD_FILE, "started c.service\n"), -ENOENT);
        ck_assert_int_eq(runtime_file_remove(sub, UNIT_RECORD_FILE), 0);
        ck_assert_int_eq(unit_record_load(sub, started, restart), -ENOENT);
        test_rm_rf(dir);
}
END_TEST

/* The record is read with its own limit: 5,000 running units of policies make a snapshot well
 * past SMALL_FILE_MAX, the limit of the knob and policy files, and a restarted thpd still reads
 * it whole, appended lines too. */
START_TEST(test_load_past_small_file) {
        g_autofree char *dir = test_mkdtemp();
        g_autoptr(GPtrArray) units = g_ptr_array_new_with_free_func(g_free);
        g_autoptr(GHashTable) hints = new_map(), started = new_set(), restart = new_map();
        g_autofree char *text = NULL;

        for (unsigned i = 0; i < 5000; i++)
                g_ptr_array_add(units, g_strdup_printf("postgresql@%05u-main.service", i));
        text = unit_record_format(units, hints);
        ck_assert_uint_gt(strlen(text), SMALL_FILE_MAX);
        ck_assert_int_eq(runtime_file_write(dir, UNIT_RECORD_FILE, text), 0);
        ck_assert_int_eq(runtime_file_append(dir, UNIT_RECORD_FILE, "started late.service\n"), 0);

        ck_assert_int_eq(unit_record_load(dir, started, restart), 0);
        ck_assert_uint_eq(g_hash_table_size(started), 5001);
        ck_assert(g_hash_table_contains(started, "postgresql@04999-main.service"));
        ck_assert(g_hash_table_contains(started, "late.service"));
        test_rm_rf(dir);
}
END_TEST

int main(void) {
        return test_run_suite(TEST_SUITE("unit-record", "core", NULL, NULL,
                                         test_round_trip_is_sorted,
                                         test_empty_record,
                                         test_changes_replayed,
                                         test_cut_last_line_ignored,
                                         test_when_to_append,
                                         test_bad_records,
                                         test_load_written_record,
                                         test_load_past_small_file));
}
