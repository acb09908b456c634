/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib.h>

#include "pools.h"
#include "test-util.h"
#include "util.h"

/* A kernel that hands out at most "available" pages per write, and "per_compaction" more
 * after every compaction: the shape of a fragmented machine. */
typedef struct StingyKernel {
        uint64_t pool;
        uint64_t available;
        uint64_t per_compaction;
        unsigned compactions;
        int write_error;
} StingyKernel;

static int stingy_write(void *userdata, uint64_t page_size_kb, int node, uint64_t pages, uint64_t *ret_pages) {
        StingyKernel *k = userdata;

        if (k->write_error)
                return k->write_error;
        k->pool = pages <= k->pool ? pages : MIN(pages, k->available);
        *ret_pages = k->pool;
        return 0;
}

static int stingy_compact(void *userdata) {
        StingyKernel *k = userdata;

        k->compactions++;
        k->available += k->per_compaction;
        return 0;
}

static PoolOps ops_for(StingyKernel *k) {
        return (PoolOps) { .write = stingy_write, .compact = stingy_compact, .userdata = k };
}

START_TEST(test_grow_at_once) {
        StingyKernel k = { .available = 100 };
        PoolOps ops = ops_for(&k);
        PoolResult res;

        ck_assert_int_eq(pool_resize(&ops, 2048, -1, 64, 3, &res), 0);
        ck_assert_uint_eq(res.allocated, 64);
        ck_assert_uint_eq(res.attempts, 1);
        ck_assert_uint_eq(k.compactions, 0);
}
END_TEST

START_TEST(test_compaction_closes_the_gap) {
        StingyKernel k = { .available = 40, .per_compaction = 15 };
        PoolOps ops = ops_for(&k);
        PoolResult res;

        ck_assert_int_eq(pool_resize(&ops, 2048, -1, 64, 3, &res), 0);
        ck_assert_uint_eq(res.allocated, 64);
        ck_assert_uint_eq(res.attempts, 3);
        ck_assert_uint_eq(res.compactions, 2);
}
END_TEST

START_TEST(test_shortfall_is_bounded_and_reported) {
        StingyKernel k = { .available = 10, .per_compaction = 1 };
        PoolOps ops = ops_for(&k);
        PoolResult res;

        ck_assert_int_eq(pool_resize(&ops, 2048, -1, 64, 3, &res), 0);
        ck_assert_uint_eq(res.allocated, 13);
        ck_assert_uint_eq(res.attempts, 4);
        ck_assert_uint_eq(k.compactions, 3);
}
END_TEST

START_TEST(test_shrink_needs_no_retry) {
        StingyKernel k = { .pool = 64, .available = 0 };
        PoolOps ops = ops_for(&k);
        PoolResult res;

        ck_assert_int_eq(pool_resize(&ops, 2048, -1, 0, 3, &res), 0);
        ck_assert_uint_eq(res.allocated, 0);
        ck_assert_uint_eq(res.attempts, 1);
}
END_TEST

START_TEST(test_write_error_is_returned) {
        StingyKernel k = { .write_error = -EINVAL };
        PoolOps ops = ops_for(&k);
        PoolResult res = { .allocated = 12345 };

        ck_assert_int_eq(pool_resize(&ops, 1048576, -1, 4, 3, &res), -EINVAL);
        ck_assert_uint_eq(res.allocated, 12345);
}
END_TEST

int main(void) {
        return test_run_suite(TEST_SUITE("pools", "core", NULL, NULL,
                                         test_grow_at_once,
                                         test_compaction_closes_the_gap,
                                         test_shortfall_is_bounded_and_reported,
                                         test_shrink_needs_no_retry,
                                         test_write_error_is_returned));
}
