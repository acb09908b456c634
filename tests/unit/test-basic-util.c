/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "test-util.h"
#include "util.h"

typedef enum Fruit {
        FRUIT_APPLE,
        FRUIT_PEAR,
        FRUIT_PLUM,
        _FRUIT_MAX,
        _FRUIT_INVALID = -EINVAL,
} Fruit;

/* A hole, as a table gets when a value has no name yet: from_string() must step over it. */
static const char *const fruit_table[_FRUIT_MAX] = {
        [FRUIT_APPLE] = "apple",
        [FRUIT_PLUM] = "plum",
};

/* What a header would declare; -Wmissing-prototypes wants them. */
const char *fruit_to_string(Fruit f);
Fruit fruit_from_string(const char *s);

DEFINE_STRING_TABLE_LOOKUP(fruit, Fruit);

START_TEST(test_string_table) {
        ck_assert_str_eq(fruit_to_string(FRUIT_APPLE), "apple");
        ck_assert_str_eq(fruit_to_string(FRUIT_PLUM), "plum");
        ck_assert_ptr_null(fruit_to_string(FRUIT_PEAR));
        ck_assert_ptr_null(fruit_to_string(_FRUIT_MAX));
        ck_assert_ptr_null(fruit_to_string(_FRUIT_INVALID));
        ck_assert_ptr_null(fruit_to_string((Fruit) -1));

        ck_assert_int_eq(fruit_from_string("apple"), FRUIT_APPLE);
        ck_assert_int_eq(fruit_from_string("plum"), FRUIT_PLUM);
        ck_assert_int_eq(fruit_from_string("pear"), -EINVAL);
        ck_assert_int_eq(fruit_from_string("Apple"), -EINVAL);
        ck_assert_int_eq(fruit_from_string(""), -EINVAL);
        ck_assert_int_eq(fruit_from_string(NULL), -EINVAL);
}
END_TEST

START_TEST(test_parse_u64) {
        uint64_t v = 7;

        ck_assert_int_eq(parse_u64("0", &v), 0);
        ck_assert_uint_eq(v, 0);
        ck_assert_int_eq(parse_u64("18446744073709551615", &v), 0);
        ck_assert_uint_eq(v, UINT64_MAX);

        /* Refused, and v is left as it was. */
        v = 7;
        ck_assert_int_eq(parse_u64("18446744073709551616", &v), -ERANGE);
        ck_assert_int_eq(parse_u64("", &v), -EINVAL);
        ck_assert_int_eq(parse_u64(NULL, &v), -EINVAL);
        ck_assert_int_eq(parse_u64("+1", &v), -EINVAL);
        ck_assert_int_eq(parse_u64("-1", &v), -EINVAL);
        ck_assert_int_eq(parse_u64("0x10", &v), -EINVAL);
        ck_assert_int_eq(parse_u64("1k", &v), -EINVAL);
        ck_assert_int_eq(parse_u64(" 1", &v), -EINVAL);
        ck_assert_int_eq(parse_u64("1 ", &v), -EINVAL);
        ck_assert_uint_eq(v, 7);
}
END_TEST

START_TEST(test_parse_size) {
        uint64_t v = 7;

        ck_assert_int_eq(parse_size("4096", &v), 0);
        ck_assert_uint_eq(v, 4096);
        ck_assert_int_eq(parse_size("4096B", &v), 0);
        ck_assert_uint_eq(v, 4096);
        ck_assert_int_eq(parse_size("2048kB", &v), 0);
        ck_assert_uint_eq(v, 2ULL << 20);
        ck_assert_int_eq(parse_size("1KiB", &v), 0);
        ck_assert_uint_eq(v, 1024);
        ck_assert_int_eq(parse_size("1GB", &v), 0);
        ck_assert_uint_eq(v, 1ULL << 30);
        ck_assert_int_eq(parse_size("8G", &v), 0);
        ck_assert_uint_eq(v, 8ULL << 30);
        ck_assert_int_eq(parse_size("2M", &v), 0);
        ck_assert_uint_eq(v, 2ULL << 20);
        ck_assert_int_eq(parse_size("16777215T", &v), 0);
        ck_assert_uint_eq(v, 16777215ULL << 40);
        ck_assert_int_eq(parse_size("18446744073709551615B", &v), 0);
        ck_assert_uint_eq(v, UINT64_MAX);

        v = 7;
        ck_assert_int_eq(parse_size("16777216T", &v), -ERANGE);
        ck_assert_int_eq(parse_size("18446744073709551615K", &v), -ERANGE);
        ck_assert_int_eq(parse_size("17179869184T", &v), -ERANGE);
        ck_assert_int_eq(parse_size("99999999999999999999", &v), -ERANGE);
        ck_assert_int_eq(parse_size("2X", &v), -EINVAL);
        ck_assert_int_eq(parse_size("1g", &v), -EINVAL);
        ck_assert_int_eq(parse_size("1 G", &v), -EINVAL);
        ck_assert_int_eq(parse_size("1GiBB", &v), -EINVAL);
        ck_assert_int_eq(parse_size("1s", &v), -EINVAL);
        ck_assert_int_eq(parse_size("G", &v), -EINVAL);
        ck_assert_int_eq(parse_size("", &v), -EINVAL);
        ck_assert_int_eq(parse_size(NULL, &v), -EINVAL);
        ck_assert_uint_eq(v, 7);
}
END_TEST

START_TEST(test_parse_duration_usec) {
        uint64_t v = 7;

        ck_assert_int_eq(parse_duration_usec("30", &v), 0);
        ck_assert_uint_eq(v, 30 * USEC_PER_SEC);
        ck_assert_int_eq(parse_duration_usec("30sec", &v), 0);
        ck_assert_uint_eq(v, 30 * USEC_PER_SEC);
        ck_assert_int_eq(parse_duration_usec("250us", &v), 0);
        ck_assert_uint_eq(v, 250);
        ck_assert_int_eq(parse_duration_usec("100ms", &v), 0);
        ck_assert_uint_eq(v, 100 * USEC_PER_MSEC);
        ck_assert_int_eq(parse_duration_usec("1m", &v), 0);
        ck_assert_uint_eq(v, 60 * USEC_PER_SEC);
        ck_assert_int_eq(parse_duration_usec("5min", &v), 0);
        ck_assert_uint_eq(v, 300 * USEC_PER_SEC);
        ck_assert_int_eq(parse_duration_usec("2h", &v), 0);
        ck_assert_uint_eq(v, 7200 * USEC_PER_SEC);
        ck_assert_int_eq(parse_duration_usec("213503982d", &v), 0);
        ck_assert_uint_eq(v, 213503982ULL * 86400 * USEC_PER_SEC);

        v = 7;
        ck_assert_int_eq(parse_duration_usec("213503983d", &v), -ERANGE);
        ck_assert_int_eq(parse_duration_usec("18446744073709551616us", &v), -ERANGE);
        ck_assert_int_eq(parse_duration_usec("5mins", &v), -EINVAL);
        ck_assert_int_eq(parse_duration_usec("-5", &v), -EINVAL);
        ck_assert_int_eq(parse_duration_usec("1.5s", &v), -EINVAL);
        ck_assert_int_eq(parse_duration_usec("1M", &v), -EINVAL);
        ck_assert_int_eq(parse_duration_usec("s", &v), -EINVAL);
        ck_assert_int_eq(parse_duration_usec(NULL, &v), -EINVAL);
        ck_assert_uint_eq(v, 7);
}
END_TEST

/* The "did you mean" hints: policy sections and keys, thpd-ctl verbs and properties. */
START_TEST(test_closest_match) {
        static const char *const knob_keys[] = { "Enabled", "Defrag", "ShmemEnabled", "PagesToScan" };
        static const char *const pool_keys[] = { "Enabled", "Defrag", "ShmemEnabled", "Node" };
        g_autofree char *very_long = g_strnfill(10000, 'E');
        char long_word[65];

        ck_assert_str_eq(closest_match("Enabeld", knob_keys, 4), "Enabled");     /* transposition */
        ck_assert_str_eq(closest_match("defrag", knob_keys, 4), "Defrag");       /* case */
        ck_assert_str_eq(closest_match("ShmemEnbled", knob_keys, 4), "ShmemEnabled");
        ck_assert_str_eq(closest_match("PagsToScn", knob_keys, 4), "PagesToScan");
        ck_assert_ptr_null(closest_match("Size", knob_keys, 4));
        ck_assert_ptr_null(closest_match("", knob_keys, 4));

        ck_assert_str_eq(closest_match("enabled", pool_keys, 4), "Enabled");
        ck_assert_str_eq(closest_match("Defrg", pool_keys, 4), "Defrag");
        ck_assert_str_eq(closest_match("ShmemEnable", pool_keys, 4), "ShmemEnabled");
        ck_assert_str_eq(closest_match("Nod", pool_keys, 4), "Node");
        ck_assert_ptr_null(closest_match("Nxyz", pool_keys, 4));
        ck_assert_ptr_null(closest_match("Colour", pool_keys, 4));
        ck_assert_ptr_null(closest_match("x", pool_keys, 0));

        /* Too long to be a typo of anything, and no overflow: 64 characters and more. */
        memset(long_word, 'a', 64);
        long_word[64] = '\0';
        ck_assert_ptr_null(closest_match(long_word, knob_keys, 4));
        ck_assert_ptr_null(closest_match(very_long, pool_keys, 4));
        ck_assert_str_eq(closest_match(long_word + 1, (const char *const[]) { long_word }, 1), long_word);
}
END_TEST

START_TEST(test_parse_duration_usec_in_range) {
        uint64_t v = 7;

        ck_assert_int_eq(parse_duration_usec_in_range("100ms", 100 * USEC_PER_MSEC, USEC_PER_SEC, &v), 0);
        ck_assert_uint_eq(v, 100 * USEC_PER_MSEC);
        ck_assert_int_eq(parse_duration_usec_in_range("1s", 100 * USEC_PER_MSEC, USEC_PER_SEC, &v), 0);
        ck_assert_uint_eq(v, USEC_PER_SEC);

        v = 7;
        ck_assert_int_eq(parse_duration_usec_in_range("99ms", 100 * USEC_PER_MSEC, USEC_PER_SEC, &v), -ERANGE);
        ck_assert_int_eq(parse_duration_usec_in_range("1001ms", 100 * USEC_PER_MSEC, USEC_PER_SEC, &v), -ERANGE);
        ck_assert_int_eq(parse_duration_usec_in_range("1x", 0, USEC_PER_DAY, &v), -EINVAL);
        ck_assert_int_eq(parse_duration_usec_in_range(NULL, 0, USEC_PER_DAY, &v), -EINVAL);
        ck_assert_uint_eq(v, 7);
}
END_TEST

START_TEST(test_parse_double_in_range) {
        double d = 7.0;

        ck_assert_int_eq(parse_double_in_range("0.5", false, 0.0, true, 1.0, &d), 0);
        ck_assert_double_eq(d, 0.5);
        ck_assert_int_eq(parse_double_in_range("0", false, 0.0, true, 1.0, &d), 0);
        ck_assert_double_eq(d, 0.0);
        ck_assert_int_eq(parse_double_in_range("1", false, 0.0, true, 1.0, &d), 0);
        ck_assert_double_eq(d, 1.0);
        ck_assert_int_eq(parse_double_in_range("1e3", false, 0.0, false, HUGE_VAL, &d), 0);
        ck_assert_double_eq(d, 1000.0);
        ck_assert_int_eq(parse_double_in_range("12.5%", true, 0.0, false, 100.0, &d), 0);
        ck_assert_double_eq(d, 12.5);
        ck_assert_int_eq(parse_double_in_range("100", true, 0.0, false, 100.0, &d), 0);
        ck_assert_double_eq(d, 100.0);

        d = 7.0;
        /* The minimum only where it is inclusive; anything past either end. */
        ck_assert_int_eq(parse_double_in_range("0", false, 0.0, false, 1.0, &d), -ERANGE);
        ck_assert_int_eq(parse_double_in_range("0.0%", true, 0.0, false, 100.0, &d), -ERANGE);
        ck_assert_int_eq(parse_double_in_range("1.01", false, 0.0, true, 1.0, &d), -ERANGE);
        ck_assert_int_eq(parse_double_in_range("1e999", false, 0.0, true, HUGE_VAL, &d), -ERANGE);
        /* A '%' only where a percentage is wanted, and only once, at the end. */
        ck_assert_int_eq(parse_double_in_range("5%", false, 0.0, true, 100.0, &d), -EINVAL);
        ck_assert_int_eq(parse_double_in_range("5%%", true, 0.0, true, 100.0, &d), -EINVAL);
        ck_assert_int_eq(parse_double_in_range("%", true, 0.0, true, 100.0, &d), -EINVAL);
        ck_assert_int_eq(parse_double_in_range("-1", false, -2.0, true, 1.0, &d), -EINVAL);
        ck_assert_int_eq(parse_double_in_range("+1", false, 0.0, true, 1.0, &d), -EINVAL);
        ck_assert_int_eq(parse_double_in_range(" 1", false, 0.0, true, 1.0, &d), -EINVAL);
        ck_assert_int_eq(parse_double_in_range("1 ", false, 0.0, true, 1.0, &d), -EINVAL);
        ck_assert_int_eq(parse_double_in_range(".5", false, 0.0, true, 1.0, &d), -EINVAL);
        ck_assert_int_eq(parse_double_in_range("0,5", false, 0.0, true, 1.0, &d), -EINVAL);
        ck_assert_int_eq(parse_double_in_range("inf", false, 0.0, true, HUGE_VAL, &d), -EINVAL);
        ck_assert_int_eq(parse_double_in_range("nan", false, 0.0, true, HUGE_VAL, &d), -EINVAL);
        ck_assert_int_eq(parse_double_in_range("", false, 0.0, true, 1.0, &d), -EINVAL);
        ck_assert_int_eq(parse_double_in_range(NULL, false, 0.0, true, 1.0, &d), -EINVAL);
        ck_assert_double_eq(d, 7.0);
}
END_TEST

START_TEST(test_add_saturating) {
        ck_assert_uint_eq(add_saturating(0, 0), 0);
        ck_assert_uint_eq(add_saturating(2, 3), 5);
        ck_assert_uint_eq(add_saturating(UINT64_MAX - 1, 1), UINT64_MAX);
        ck_assert_uint_eq(add_saturating(UINT64_MAX - 1, 2), UINT64_MAX);
        ck_assert_uint_eq(add_saturating(1, UINT64_MAX), UINT64_MAX);
        ck_assert_uint_eq(add_saturating(UINT64_MAX, UINT64_MAX), UINT64_MAX);
}
END_TEST

int main(void) {
        Suite *s = suite_create("basic-util");
        TCase *tc = tcase_create("string-table"), *parse = tcase_create("parse"), *arith = tcase_create("arithmetic");

        tcase_add_test(tc, test_string_table);
        suite_add_tcase(s, tc);
        tcase_add_test(parse, test_parse_u64);
        tcase_add_test(parse, test_parse_size);
        tcase_add_test(parse, test_parse_duration_usec);
        tcase_add_test(parse, test_closest_match);
        tcase_add_test(parse, test_parse_duration_usec_in_range);
        tcase_add_test(parse, test_parse_double_in_range);
        suite_add_tcase(s, parse);
        tcase_add_test(arith, test_add_saturating);
        suite_add_tcase(s, arith);
        return test_run_suite(s);
}
