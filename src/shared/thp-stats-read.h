/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>

#include "thp-stats.h"

/* Reads every size's stats/ under <sysfs_root>/kernel/mm/transparent_hugepage/, sorted by size;
 * a size without stats/ (before 6.10) is left out, a counter the kernel lacks is absent. A file
 * that cannot be read or parsed is left out too and logged at debug level: counters are for
 * showing, and one bad file must not hide the others. 0 with no sizes on a kernel without them;
 * negative only when the directory itself cannot be read for another reason than its absence.
 * Free *ret with g_free(). */
int thp_stats_read(const char *sysfs_root, ThpSizeStats **ret, size_t *ret_n);
/* The same, reading only the counters of mask (bit 1u << ThpStat each): the storm watcher reads
 * three a second while it samples, not every file. */
int thp_stats_read_some(const char *sysfs_root, uint32_t mask, ThpSizeStats **ret, size_t *ret_n);

/* The PMD size in kB, from transparent_hugepage/hpage_pmd_size (bytes). */
int thp_stats_read_pmd_size_kb(const char *sysfs_root, uint64_t *ret);
