/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>

#include "ctl-json.h"
#include "ctl-table.h"
#include "ctl-terminal.h"
#include "test-util.h"

#define BOLD "\x1b[1m"
#define GREEN "\x1b[0;32m"
#define RED "\x1b[0;31m"
#define NORMAL "\x1b[0m"

enum { NAME, STATE, UNITS, PATH, NOTE };

/* Two rows of what "thpd-ctl list" shows: a JSON-only column (note), a text-only one (PATH) and
 * text in another order than JSON. */
static CtlTable *sample(void) {
        static const size_t display[] = { NAME, STATE, PATH, UNITS };
        char *units[] = { (char *) "a.service", (char *) "b.service", NULL };
        CtlTable *t = ctl_table_new();
        g_autoptr(CtlJson) note = ctl_json_new();

        ck_assert_uint_eq(ctl_table_add_column(t, "NAME", "policy"), NAME);
        ck_assert_uint_eq(ctl_table_add_column(t, "STATE", "state"), STATE);
        ck_assert_uint_eq(ctl_table_add_column(t, "UNITS", "units"), UNITS);
        ck_assert_uint_eq(ctl_table_add_column(t, "PATH", NULL), PATH);
        ck_assert_uint_eq(ctl_table_add_column(t, NULL, "note"), NOTE);
        ctl_table_set_minimum_width(t, STATE, 8);
        ctl_table_set_display(t, display, G_N_ELEMENTS(display));
        ctl_table_set_empty_string(t, "-");

        ctl_json_begin_array(note, NULL);
        ctl_json_uint(note, NULL, 1);
        ctl_json_end_array(note);
        ctl_table_add_string(t, "redis.conf");
        ctl_table_add_string(t, "active");
        ctl_table_set_color(t, CTL_COLOR_GREEN);
        ctl_table_add_strv(t, units);
        ctl_table_add_string(t, "/etc/redis.conf");
        ctl_table_add_json(t, note);

        /* A wide name: padded by the columns it takes, not by its bytes. */
        ctl_table_add_string(t, "漢字.conf");
        ctl_table_add_string(t, "invalid");
        ctl_table_set_color(t, CTL_COLOR_RED);
        ctl_table_add_strv(t, NULL);
        ctl_table_add_string(t, NULL);
        ctl_table_add_json(t, note);
        return t;
}

/* keyed: print as show prints the property of that name instead, with header as its list line and
 * value_only as --value. */
static char *printed(const CtlTable *t, size_t columns, bool header, const char *keyed, bool value_only) {
        g_autofree char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        CtlOutput out;

        ck_assert_ptr_nonnull(f);
        ctl_output_init(&out, f, columns);
        if (keyed)
                ctl_table_print_keyed(t, &out, keyed, header, value_only);
        else
                ctl_table_print(t, &out, header);
        ck_assert_int_eq(ctl_output_flush(&out), 0);
        ck_assert_int_eq(ctl_output_done(&out), 0);
        ck_assert_int_eq(fclose(f), 0);
        return g_strndup(buf, size);
}

START_TEST(test_table_text) {
        g_autoptr(CtlTable) t = sample();
        g_autofree char *text = printed(t, 0, true, NULL, false);

        ck_assert_uint_eq(ctl_table_rows(t), 2);
        /* Two blanks between columns, the last one not padded, the colour around the padded cell,
         * the state column as wide as its minimum. */
        ck_assert_str_eq(text,
                         BOLD "NAME        STATE     PATH             UNITS" NORMAL "\n"
                         "redis.conf  " GREEN "active  " NORMAL "  /etc/redis.conf  a.service b.service\n"
                         "漢字.conf   " RED "invalid " NORMAL "  -                -\n");
}
END_TEST

START_TEST(test_table_without_header) {
        g_autoptr(CtlTable) t = ctl_table_new();
        g_autofree char *text = NULL;

        ctl_table_add_column(t, "NAME", NULL);
        ctl_table_add_column(t, "VALUE", NULL);
        ctl_table_add_string(t, "x");
        ctl_table_add_string(t, "1");
        /* The titles still count: the columns do not move with --no-legend. */
        text = printed(t, 0, false, NULL, false);
        ck_assert_str_eq(text, "x     1\n");
}
END_TEST

START_TEST(test_table_block) {
        g_autoptr(CtlTable) t = ctl_table_new();
        g_autofree char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        CtlOutput out;

        ctl_table_add_column(t, "", NULL);
        ctl_table_add_column(t, "", NULL);
        ctl_table_add_string(t, "enabled");
        ctl_table_add_string(t, "never");
        ctl_table_add_string(t, "defrag");
        ctl_table_add_string(t, "madvise");
        ck_assert_ptr_nonnull(f);
        ctl_output_init(&out, f, 0);
        /* A label before the first line, its width in blanks before the others; empty titles
         * take no room. */
        ctl_table_print_block(t, &out, "  Knobs: ", "         ");
        ck_assert_int_eq(ctl_output_flush(&out), 0);
        ck_assert_int_eq(ctl_output_done(&out), 0);
        ck_assert_int_eq(fclose(f), 0);
        ck_assert_str_eq(buf, "  Knobs: enabled  never\n         defrag   madvise\n");
}
END_TEST

START_TEST(test_table_cut) {
        g_autoptr(CtlTable) t = sample();
        g_autofree char *text = printed(t, 16, true, NULL, false);

        /* Lines are cut as the output cuts them; the colours stay balanced. */
        ck_assert_str_eq(text,
                         BOLD "NAME        STA…" NORMAL "\n"
                         "redis.conf  " GREEN "act…" NORMAL "\n"
                         "漢字.conf   " RED "inv…" NORMAL "\n");
}
END_TEST

START_TEST(test_table_json) {
        g_autoptr(CtlTable) t = sample();
        g_autoptr(CtlJson) all = ctl_json_new(), one = ctl_json_new();

        /* JSON has every column with a key, in the order they were added, and no text-only one. */
        ctl_json_begin_object(all, NULL);
        ctl_table_to_json(t, all, "policies");
        ctl_json_end_object(all);
        ck_assert_str_eq(ctl_json_text(all),
                         "{\"policies\":["
                         "{\"policy\":\"redis.conf\",\"state\":\"active\",\"units\":[\"a.service\",\"b.service\"],\"note\":[1]},"
                         "{\"policy\":\"漢字.conf\",\"state\":\"invalid\",\"units\":[],\"note\":[1]}]}");

        ctl_json_begin_object(one, NULL);
        ctl_table_row_to_json(t, 1, one);
        ctl_json_string(one, "content", NULL);
        ctl_json_end_object(one);
        ck_assert_str_eq(ctl_json_text(one), "{\"policy\":\"漢字.conf\",\"state\":\"invalid\",\"units\":[],\"note\":[1],\"content\":null}");
}
END_TEST

START_TEST(test_table_empty) {
        g_autoptr(CtlTable) t = ctl_table_new();
        g_autoptr(CtlJson) j = ctl_json_new();
        g_autofree char *text = NULL;

        ctl_table_add_column(t, "NAME", "name");
        ctl_table_add_column(t, "STATE", "state");
        text = printed(t, 0, true, NULL, false);
        ck_assert_str_eq(text, BOLD "NAME  STATE" NORMAL "\n");
        ctl_table_to_json(t, j, NULL);
        ck_assert_str_eq(ctl_json_text(j), "[]");
}
END_TEST

/* A pool as show and --json give it: JSON-only columns before the one that names the row. */
static CtlTable *pools(void) {
        CtlTable *t = ctl_table_new();

        ctl_table_add_json_columns(t, "size", "node", NULL);
        ctl_table_add_column(t, "Pool", NULL);
        ctl_table_add_column(t, "Free", "free");
        ctl_table_add_column(t, "Spare", "spare");
        ctl_table_add_column(t, "Since", "since");
        ctl_table_add_column(t, "Note", "note");
        ctl_table_add_uint(t, 2048);
        ctl_table_add_string(t, NULL);
        ctl_table_add_string(t, "2048kB");
        ctl_table_add_uint(t, 3);
        ctl_table_add_bool(t, true);
        ctl_table_add_time(t, 0);
        ctl_table_add_string(t, NULL);
        return t;
}

START_TEST(test_table_keyed) {
        g_autoptr(CtlTable) t = pools();
        g_autofree char *listed = printed(t, 0, true, "Pools", false), *bare = printed(t, 0, false, "Pools", false);
        g_autofree char *values = printed(t, 0, true, "Pools", true);
        g_autoptr(CtlJson) j = ctl_json_new();

        ck_assert_str_eq(listed, "Pools=2048kB\nPools.2048kB.Free=3\nPools.2048kB.Spare=yes\nPools.2048kB.Since=0\nPools.2048kB.Note=\n");
        ck_assert_str_eq(bare, "Pools.2048kB.Free=3\nPools.2048kB.Spare=yes\nPools.2048kB.Since=0\nPools.2048kB.Note=\n");
        ck_assert_str_eq(values, "2048kB\n3\nyes\n0\n\n");

        /* A time of 0 is none: null, and its _usec twin too. */
        ctl_table_to_json(t, j, NULL);
        ck_assert_str_eq(ctl_json_text(j),
                         "[{\"size\":2048,\"node\":null,\"free\":3,\"spare\":true,\"since\":null,\"since_usec\":null,\"note\":null}]");
}
END_TEST

/* A dictionary: an object in JSON, KEY=TEXT in text, a keyed line per member in show. */
START_TEST(test_table_members) {
        char *keys[] = { (char *) "some", (char *) "full", NULL }, *texts[] = { (char *) "0.5", (char *) "12", NULL };
        char *none[] = { NULL };
        g_autoptr(CtlTable) t = ctl_table_new();
        g_autoptr(CtlJson) figures = ctl_json_new(), empty = ctl_json_new(), j = ctl_json_new();
        g_autofree char *keyed = NULL, *text = NULL;

        ctl_json_begin_object(figures, NULL);
        ctl_json_double(figures, "some", 0.5);
        ctl_json_double(figures, "full", 12);
        ctl_json_end_object(figures);
        ctl_json_begin_object(empty, NULL);
        ctl_json_end_object(empty);
        ctl_table_add_column(t, "Kind", "kind");
        ctl_table_add_column(t, "Figures", "figures");
        ctl_table_add_string(t, "compaction");
        ctl_table_add_members(t, keys, texts, figures);
        ctl_table_add_string(t, "reclaim");
        ctl_table_add_members(t, none, none, empty);

        keyed = printed(t, 0, true, "Storms", false);
        ck_assert_str_eq(keyed, "Storms=compaction reclaim\nStorms.compaction.some=0.5\nStorms.compaction.full=12\n");
        text = ctl_table_cell_text(t, 0, 1);
        ck_assert_str_eq(text, "some=0.5 full=12");
        ctl_table_to_json(t, j, NULL);
        ck_assert_str_eq(ctl_json_text(j), "[{\"kind\":\"compaction\",\"figures\":{\"some\":0.5,\"full\":12}},"
                                           "{\"kind\":\"reclaim\",\"figures\":{}}]");
}
END_TEST

/* show's line per row: NAME= and the shown columns' texts; a column's own empty string first. */
START_TEST(test_table_lines) {
        g_autoptr(CtlTable) t = sample(), none = ctl_table_new();
        g_autofree char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        CtlOutput out;

        ck_assert_ptr_nonnull(f);
        ctl_output_init(&out, f, 0);
        ctl_table_set_column_empty_string(t, PATH, "?");
        ctl_table_add_column(none, "Text", NULL);
        ctl_table_print_lines(t, &out, "Policies", false);
        ctl_table_print_lines(t, &out, "Policies", true);
        ctl_table_print_lines(none, &out, "Problems", false);
        ctl_table_print_lines(none, &out, "Problems", true);
        ck_assert_int_eq(ctl_output_done(&out), 0);
        ck_assert_int_eq(fclose(f), 0);
        ck_assert_str_eq(buf, "Policies=redis.conf active /etc/redis.conf a.service b.service\n"
                              "Policies=漢字.conf invalid ? -\n"
                              "redis.conf active /etc/redis.conf a.service b.service\n"
                              "漢字.conf invalid ? -\n"
                              "Problems=\n"
                              "\n");
}
END_TEST

START_TEST(test_table_free_null) {
        ctl_table_free(NULL);
}
END_TEST

int main(void) {
        /* The UTF-8 ellipsis, and colours though the output is not a terminal. */
        setenv("LC_ALL", "C.UTF-8", 1);
        setenv("SYSTEMD_COLORS", "1", 1);

        return test_run_suite(TEST_SUITE("ctl-table", "core", NULL, NULL,
                                         test_table_text,
                                         test_table_without_header,
                                         test_table_block,
                                         test_table_cut,
                                         test_table_json,
                                         test_table_empty,
                                         test_table_keyed,
                                         test_table_lines,
                                         test_table_members,
                                         test_table_free_null));
}
