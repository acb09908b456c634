/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>

/* Sizing a hugetlb pool against a kernel that may give fewer pages than asked: the kernel
 * reports a partial allocation as success, so the only truth is the read-back. The kernel is
 * reached through PoolOps so the retry logic can be tested against a stingy fake. */

typedef struct PoolOps {
        /* Writes nr_hugepages and returns the count actually present. */
        int (*write)(void *userdata, uint64_t page_size_kb, int node, uint64_t pages, uint64_t *ret_pages);
        /* Asks the kernel to compact memory so that contiguous blocks exist for a retry. */
        int (*compact)(void *userdata);
        void *userdata;
} PoolOps;

typedef struct PoolResult {
        uint64_t allocated;  /* pages present after the last attempt */
        unsigned attempts;   /* writes done */
        unsigned compactions;
} PoolResult;

/* Grows or shrinks a pool to "pages". Growing that falls short compacts and retries up to
 * "retries" more times; shrinking never needs a retry. Returns 0 with ret->allocated below
 * "pages" on a shortfall, a negative errno when the kernel refused the write. */
int pool_resize(const PoolOps *ops, uint64_t page_size_kb, int node, uint64_t pages, unsigned retries,
                PoolResult *ret);
