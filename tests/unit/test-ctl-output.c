/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ctl-format.h"
#include "ctl-json.h"
#include "ctl-terminal.h"
#include "test-util.h"

#define SEC CTL_USEC_PER_SEC
#define MINUTE (60 * SEC)
#define HOUR (60 * MINUTE)
#define DAY (24 * HOUR)
/* Sat 2025-11-22 10:00:00 UTC */
#define SATURDAY_USEC (UINT64_C(1763805600) * SEC)

#define RED "\x1b[0;31m"
#define NORMAL "\x1b[0m"

static void assert_cut(const char *line, size_t columns, const char *expected) {
        g_autofree char *cut = ctl_cut_line(line, columns);

        ck_assert_str_eq(cut, expected);
}

START_TEST(test_cut_ascii) {
        assert_cut("abcdefghij", 10, "abcdefghij");
        assert_cut("abcdefghij", 20, "abcdefghij");
        /* One column over: the ellipsis takes the last column. */
        assert_cut("abcdefghijk", 10, "abcdefghi…");
        assert_cut("abcdefghij", 1, "…");
        assert_cut("abcdefghij", 0, "…");
        assert_cut("", 0, "");
}
END_TEST

START_TEST(test_cut_multibyte) {
        /* "●" and "—" are three bytes and one column each: counted by columns, never cut inside. */
        assert_cut("● thpd — running", 16, "● thpd — running");
        assert_cut("● thpd — running", 10, "● thpd — …");
        assert_cut("● thpd — running", 8, "● thpd …");
        /* A wide character takes two columns and does not fit into one. */
        assert_cut("ab漢字cd", 8, "ab漢字cd");
        assert_cut("ab漢字cd", 6, "ab漢…");
        assert_cut("ab漢字cd", 5, "ab漢…");
        assert_cut("ab漢字cd", 4, "ab…");
        /* Invalid UTF-8 takes a column per byte and is copied as it is. */
        assert_cut("a\xff\xfe" "bcd", 4, "a\xff\xfe…");
}
END_TEST

START_TEST(test_cut_escapes) {
        /* Escape sequences take no column: this line is 10 columns wide and fits. */
        assert_cut(RED "error" NORMAL ": bad", 10, RED "error" NORMAL ": bad");
        /* Cut inside the colour: the sequences before the cut are kept, and a reset closes it. */
        assert_cut(RED "error: policy broken" NORMAL, 8, RED "error: …" NORMAL);
        /* The reset after the cut point is dropped, and the added one restores the colours. */
        assert_cut("x " RED "● failed" NORMAL " — more", 6, "x " RED "● f…" NORMAL);
}
END_TEST

static char *written(char **buf, size_t *size, FILE *f) {
        ck_assert_int_eq(fclose(f), 0);
        return g_strndup(*buf, *size);
}

START_TEST(test_output_cuts_lines) {
        g_autofree char *buf = NULL, *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        CtlOutput out;

        ck_assert_ptr_nonnull(f);
        ctl_output_init(&out, f, 8);
        /* A line made of several writes is cut once it is finished. */
        ctl_printf(&out, "%s", "  Knobs: ");
        ctl_printf(&out, "enabled=%s\n", "never");
        ctl_puts(&out, "short\nand a line without end");
        ck_assert_int_eq(ctl_output_flush(&out), 0);
        ck_assert_int_eq(ctl_output_done(&out), 0);
        text = written(&buf, &size, f);
        ck_assert_str_eq(text, "  Knobs…\nshort\nand a l…");
}
END_TEST

START_TEST(test_output_uncut) {
        g_autofree char *buf = NULL, *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        CtlOutput out;

        ck_assert_ptr_nonnull(f);
        ctl_output_init(&out, f, 0);
        ctl_printf(&out, "%-6s|%s\n", "name", "a line longer than any terminal would care about");
        ctl_puts(CTL_OUTPUT_UNCUT(f), "tail");
        ck_assert_int_eq(ctl_output_flush(&out), 0);
        ck_assert_int_eq(ctl_output_done(&out), 0);
        text = written(&buf, &size, f);
        ck_assert_str_eq(text, "name  |a line longer than any terminal would care about\ntail");
}
END_TEST

START_TEST(test_output_columns_not_a_terminal) {
        FILE *f = tmpfile();

        ck_assert_ptr_nonnull(f);
        setenv("COLUMNS", "40", 1);
        /* COLUMNS only counts for a terminal: a file's lines are never cut. */
        ck_assert_uint_eq(ctl_output_columns(f), 0);
        unsetenv("COLUMNS");
        fclose(f);
}
END_TEST

static void assert_duration(uint64_t usec, const char *expected) {
        g_autofree char *d = ctl_format_duration(usec);

        ck_assert_str_eq(d, expected);
}

START_TEST(test_duration) {
        assert_duration(0, "0ms");
        assert_duration(999999, "999ms");
        assert_duration(SEC, "1s");
        assert_duration(90 * SEC, "1min 30s");
        assert_duration(29 * MINUTE + 999999, "29min");
        assert_duration(2 * HOUR + 5 * MINUTE + 3 * SEC, "2h 5min");
        assert_duration(3 * DAY + 4 * HOUR + 59 * MINUTE, "3d 4h");
        /* Two units counted from the largest, zero or not: the seconds of "1d 0h" are dropped. */
        assert_duration(DAY + 30 * SEC, "1d");
        assert_duration(HOUR + 30 * SEC, "1h");
        assert_duration(365 * DAY, "365d");
}
END_TEST

static void assert_timestamp(uint64_t when, uint64_t now, const char *expected) {
        g_autofree char *t = ctl_format_timestamp_relative(when, now);

        ck_assert_str_eq(t, expected);
}

START_TEST(test_timestamp) {
        assert_timestamp(SATURDAY_USEC, SATURDAY_USEC - 29 * MINUTE, "Sat 2025-11-22 10:00:00 UTC (in 29min)");
        assert_timestamp(SATURDAY_USEC, SATURDAY_USEC, "Sat 2025-11-22 10:00:00 UTC (in 0ms)");
        assert_timestamp(SATURDAY_USEC + 500000, SATURDAY_USEC + 5 * SEC, "Sat 2025-11-22 10:00:00 UTC (4s ago)");
        assert_timestamp(SATURDAY_USEC + DAY + 90 * SEC, SATURDAY_USEC, "Sun 2025-11-23 10:01:30 UTC (in 1d)");
}
END_TEST

START_TEST(test_timestamp_zone) {
        g_autoptr(GTimeZone) tz = NULL;
        g_autoptr(GDateTime) t = NULL;

        /* A POSIX zone string: no tzdata needed, and the local time is no longer UTC. */
        setenv("TZ", "JST-9", 1);
        tzset();
        assert_timestamp(SATURDAY_USEC, SATURDAY_USEC + 2 * HOUR, "Sat 2025-11-22 19:00:00 JST (2h ago)");
        g_autofree char *clock = ctl_format_clock(SATURDAY_USEC + 999999);
        ck_assert_str_eq(clock, "2025-11-22 19:00:00.999");
        setenv("TZ", "UTC", 1);
        tzset();
}
END_TEST

START_TEST(test_clock_and_iso8601) {
        g_autofree char *clock = ctl_format_clock(SATURDAY_USEC + 123456);
        g_autofree char *iso = ctl_format_iso8601(SATURDAY_USEC + 123456);
        g_autofree char *whole = ctl_format_iso8601(SATURDAY_USEC);
        g_autofree char *epoch = ctl_format_iso8601(1);

        ck_assert_str_eq(clock, "2025-11-22 10:00:00.123");
        ck_assert_str_eq(iso, "2025-11-22T10:00:00.123456Z");
        ck_assert_str_eq(whole, "2025-11-22T10:00:00.000000Z");
        ck_assert_str_eq(epoch, "1970-01-01T00:00:00.000001Z");
        /* Beyond year 9999. */
        ck_assert_ptr_null(ctl_format_iso8601(UINT64_MAX));
}
END_TEST

static void assert_bytes(uint64_t bytes, const char *expected) {
        g_autofree char *s = ctl_format_bytes(bytes);

        ck_assert_str_eq(s, expected);
}

START_TEST(test_bytes) {
        assert_bytes(0, "0 B");
        assert_bytes(1023, "1023 B");
        assert_bytes(1024, "1.0 KiB");
        assert_bytes(4 << 20, "4.0 MiB");
        assert_bytes(UINT64_C(512) << 20, "512 MiB");
        assert_bytes(UINT64_C(2899102924), "2.7 GiB");
        assert_bytes(UINT64_C(10) << 30, "10 GiB");
        assert_bytes(UINT64_MAX, "16 EiB");
}
END_TEST

START_TEST(test_json_values) {
        g_autoptr(CtlJson) b = ctl_json_new();
        char *units[] = { (char *) "redis.service", (char *) "a\"b", NULL };

        ctl_json_begin_object(b, NULL);
        ctl_json_string(b, "version", "0.1.0");
        ctl_json_string(b, "missing", NULL);
        ctl_json_null(b, "none");
        ctl_json_string(b, "escaped", "q\"b\\n\nt\t\x01");
        ctl_json_string(b, "invalid", "a\xff");
        ctl_json_uint(b, "page_size_kb", 2048);
        ctl_json_uint(b, "big", UINT64_C(9007199254740993));
        ctl_json_uint(b, "max", UINT64_MAX);
        ctl_json_int(b, "node", -1);
        ctl_json_bool(b, "wins", true);
        ctl_json_bool(b, "loses", false);
        ctl_json_strv(b, "units", units);
        ctl_json_strv(b, "empty", NULL);
        ctl_json_begin_object(b, "figures");
        ctl_json_double(b, "ratio", 0.5);
        ctl_json_double(b, "whole", 12.0);
        ctl_json_double(b, "negative", -3.0);
        ctl_json_double(b, "huge", 1.5e20);
        ctl_json_double(b, "exponent", 1e20);
        ctl_json_double(b, "tiny", 1e-300);
        ctl_json_double(b, "nan", NAN);
        ctl_json_double(b, "inf", INFINITY);
        ctl_json_end_object(b);
        ctl_json_begin_array(b, "list");
        ctl_json_begin_object(b, NULL);
        ctl_json_end_object(b);
        ctl_json_string(b, NULL, "x");
        ctl_json_end_array(b);
        ctl_json_end_object(b);
        ck_assert_str_eq(ctl_json_text(b),
                         "{\"version\":\"0.1.0\",\"missing\":null,\"none\":null,"
                         "\"escaped\":\"q\\\"b\\\\n\\nt\\t\\u0001\",\"invalid\":\"a\xef\xbf\xbd\","
                         "\"page_size_kb\":2048,\"big\":9007199254740993,\"max\":18446744073709551615,\"node\":-1,\"wins\":true,\"loses\":false,"
                         "\"units\":[\"redis.service\",\"a\\\"b\"],\"empty\":[],"
                         "\"figures\":{\"ratio\":0.5,\"whole\":12,\"negative\":-3,\"huge\":1.5e+20,\"exponent\":1e+20,\"tiny\":1e-300,"
                         "\"nan\":null,\"inf\":null},\"list\":[{},\"x\"]}");
}
END_TEST

/* RFC 8259, section 7: every control character escaped (the short form where there is one), the
 * quotation mark and the backslash escaped, in keys as in values; "/", DEL aside, and UTF-8
 * passed through as it is; an invalid sequence replaced, never passed on. */
START_TEST(test_json_escaping) {
        g_autoptr(CtlJson) b = ctl_json_new();
        g_autoptr(GString) controls = g_string_new(NULL), expected = g_string_new(NULL);
        g_autofree char *document = NULL;
        static const char *const short_forms[0x20] = {
                ['\b'] = "\\b", ['\t'] = "\\t", ['\n'] = "\\n", ['\f'] = "\\f", ['\r'] = "\\r",
        };

        for (int c = 1; c < 0x20; c++) {
                g_string_append_c(controls, (char) c);
                if (short_forms[c])
                        g_string_append(expected, short_forms[c]);
                else
                        g_string_append_printf(expected, "\\u%04x", c);
        }

        ctl_json_begin_object(b, NULL);
        ctl_json_string(b, "controls", controls->str);
        ctl_json_string(b, "quote\"back\\slash", "say \"hi\" \\ C:\\dir\\");
        ctl_json_string(b, "key\n\x1f", "value\x7f");
        ctl_json_string(b, "plain", "a/b <tag> & 'x' ~");
        ctl_json_string(b, "utf8", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xe2\x80\xa8");
        ctl_json_string(b, "bad\xc3", "trunc\xe2\x82 over\xc0\xaf end\xf5");
        ctl_json_string(b, "", "");
        ctl_json_end_object(b);

        document = g_strconcat("{\"controls\":\"", expected->str, "\","
                               "\"quote\\\"back\\\\slash\":\"say \\\"hi\\\" \\\\ C:\\\\dir\\\\\","
                               "\"key\\n\\u001f\":\"value\\u007f\","
                               "\"plain\":\"a/b <tag> & 'x' ~\","
                               "\"utf8\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xe2\x80\xa8\","
                               "\"bad\xef\xbf\xbd\":\"trunc\xef\xbf\xbd\xef\xbf\xbd over\xef\xbf\xbd\xef\xbf\xbd end\xef\xbf\xbd\","
                               "\"\":\"\"}",
                               NULL);
        ck_assert_str_eq(ctl_json_text(b), document);
}
END_TEST

/* Nesting: commas between members and elements, none after an opening bracket, a closed
 * container counted as one element of its parent. */
START_TEST(test_json_nesting) {
        g_autoptr(CtlJson) b = ctl_json_new();

        ctl_json_begin_array(b, NULL);
        ctl_json_begin_array(b, NULL);
        ctl_json_end_array(b);
        ctl_json_begin_object(b, NULL);
        ctl_json_begin_object(b, "a");
        ctl_json_begin_array(b, "b");
        ctl_json_int(b, NULL, 1);
        ctl_json_begin_object(b, NULL);
        ctl_json_end_object(b);
        ctl_json_int(b, NULL, 2);
        ctl_json_end_array(b);
        ctl_json_end_object(b);
        ctl_json_bool(b, "c", false);
        ctl_json_end_object(b);
        ctl_json_null(b, NULL);
        ctl_json_end_array(b);
        ck_assert_str_eq(ctl_json_text(b), "[[],{\"a\":{\"b\":[1,{},2]},\"c\":false},null]");
}
END_TEST

START_TEST(test_json_time) {
        g_autoptr(CtlJson) b = ctl_json_new();

        ctl_json_begin_object(b, NULL);
        ctl_json_time(b, "override_expires_at", 0);
        ctl_json_time(b, "time", SATURDAY_USEC + 42);
        ctl_json_end_object(b);
        ck_assert_str_eq(ctl_json_text(b), "{\"override_expires_at\":null,\"override_expires_at_usec\":null,"
                               "\"time\":\"2025-11-22T10:00:00.000042Z\",\"time_usec\":1763805600000042}");
}
END_TEST

START_TEST(test_json_print) {
        g_autoptr(CtlJson) b = ctl_json_new();
        g_autofree char *buf = NULL, *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        ck_assert_ptr_nonnull(f);
        ctl_json_begin_object(b, NULL);
        ctl_json_string(b, "unit", "redis.service");
        ctl_json_string(b, "policy", NULL);
        ctl_json_end_object(b);
        ck_assert_int_eq(ctl_json_print(b, f), 0);
        text = written(&buf, &size, f);
        ck_assert_str_eq(text, "{\"unit\":\"redis.service\",\"policy\":null}\n");
}
END_TEST

int main(void) {
        /* The UTF-8 glyphs and UTC, whatever the environment running the tests says. */
        setenv("LC_ALL", "C.UTF-8", 1);
        setenv("TZ", "UTC", 1);
        tzset();

        return test_run_suite(TEST_SUITE("ctl-output", "core", NULL, NULL,
                                         test_cut_ascii,
                                         test_cut_multibyte,
                                         test_cut_escapes,
                                         test_output_cuts_lines,
                                         test_output_uncut,
                                         test_output_columns_not_a_terminal,
                                         test_duration,
                                         test_timestamp,
                                         test_timestamp_zone,
                                         test_clock_and_iso8601,
                                         test_bytes,
                                         test_json_values,
                                         test_json_escaping,
                                         test_json_nesting,
                                         test_json_time,
                                         test_json_print));
}
