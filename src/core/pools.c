/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "pools.h"
#include "util.h"

int pool_resize(const PoolOps *ops, uint64_t page_size_kb, int node, uint64_t pages, unsigned retries,
                PoolResult *ret) {
        PoolResult res = {};
        uint64_t got;
        int r;

        for (;;) {
                r = ops->write(ops->userdata, page_size_kb, node, pages, &got);
                if (r < 0)
                        return r;
                res.attempts++;
                res.allocated = got;
                if (got >= pages || res.attempts > retries)
                        break;
                /* Direct compaction inside the write already tried; an explicit pass over all
                 * zones frees more contiguous blocks before the next attempt. A failing compact
                 * is no reason to stop retrying. */
                if (ops->compact(ops->userdata) >= 0)
                        res.compactions++;
        }

        *ret = res;
        return 0;
}
