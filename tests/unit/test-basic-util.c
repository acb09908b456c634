/* SPDX-License-Identifier: LGPL-2.1-or-later */
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

int main(void) {
        Suite *s = suite_create("basic-util");
        TCase *tc = tcase_create("string-table");

        tcase_add_test(tc, test_string_table);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}
