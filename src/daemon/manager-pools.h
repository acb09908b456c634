/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "manager.h"

/* hugetlb pools, the manager's side: what the kernel has at start, sizing them to the target
 * with the policies and units that asked named in the log, and putting them back on exit. */

void manager_record_pool_baselines(Manager *m, Baseline *b);
/* Returns the number of pools that could not be read or written (a shortfall is not counted). */
unsigned manager_apply_pools(Manager *m);
/* A pool as drift.h names it: "hugepages-2048kB/nr_hugepages", "node0/hugepages-1048576kB/nr_hugepages". */
char *manager_pool_item(uint64_t page_size_kb, int node);
/* "/etc/thpd/policy.d/postgresql.conf for postgresql.service, ..." for the policies holding
 * this pool (by_name: "postgresql.conf for ..."); NULL for none. */
char *manager_pool_holders(const Manager *m, uint64_t page_size_kb, int node, bool by_name);
/* The same for the log, "baseline, no policy holds it" for none. */
char *manager_pool_reason(Manager *m, uint64_t page_size_kb, int node);
/* Returns 0, or the last error of a pool that could not be restored. */
int manager_restore_pools(Manager *m);
