/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "pools.h"

/* PoolOps on a sysfs and procfs root. */
typedef struct PoolRoots {
        const char *sysfs_root;
        const char *procfs_root;
} PoolRoots;

PoolOps pool_ops_sysfs(const PoolRoots *roots);
