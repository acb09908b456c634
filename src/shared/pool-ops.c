/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "pool-ops.h"
#include "procfs.h"
#include "sysfs.h"

static int sysfs_pool_write(void *userdata, uint64_t page_size_kb, int node, uint64_t pages, uint64_t *ret_pages) {
        const PoolRoots *roots = userdata;

        return sysfs_write_pool(roots->sysfs_root, page_size_kb, node, pages, ret_pages);
}

static int sysfs_pool_compact(void *userdata) {
        const PoolRoots *roots = userdata;

        return procfs_compact_memory(roots->procfs_root);
}

PoolOps pool_ops_sysfs(const PoolRoots *roots) {
        return (PoolOps) { .write = sysfs_pool_write, .compact = sysfs_pool_compact, .userdata = (void *) roots };
}
