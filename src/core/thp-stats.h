/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "knob.h"

/* The per-size THP counters of transparent_hugepage/hugepages-<N>kB/stats/ (6.10 and later;
 * kernel-facts "Since 6.10"), machine-wide: the kernel keeps no per-cgroup version. A kernel has
 * any subset of them, or none; a counter it lacks is absent, not 0. Parsing and the rules on
 * them only: shared/thp-stats-read.c reads the files. */

typedef enum ThpStat {
        THP_STAT_ANON_FAULT_ALLOC,
        THP_STAT_ANON_FAULT_FALLBACK,
        THP_STAT_ANON_FAULT_FALLBACK_CHARGE,
        THP_STAT_NR_ANON,                 /* a gauge: anonymous THPs of this size mapped now */
        THP_STAT_NR_ANON_PARTIALLY_MAPPED, /* a gauge: of them, those partly unmapped */
        THP_STAT_SPLIT,
        THP_STAT_SPLIT_FAILED,
        THP_STAT_SPLIT_DEFERRED,
        THP_STAT_SHMEM_ALLOC,
        THP_STAT_SHMEM_FALLBACK,
        THP_STAT_SHMEM_FALLBACK_CHARGE,
        THP_STAT_SWPOUT,
        THP_STAT_SWPOUT_FALLBACK,
        THP_STAT_ZSWPOUT,
        THP_STAT_SWPIN,
        THP_STAT_SWPIN_FALLBACK,
        THP_STAT_SWPIN_FALLBACK_CHARGE,
        THP_STAT_COLLAPSE_ALLOC,          /* 7.2: khugepaged mTHP collapse */
        THP_STAT_COLLAPSE_ALLOC_FAILED,
        THP_STAT_COLLAPSE_EXCEED_NONE_PTE,
        THP_STAT_COLLAPSE_EXCEED_SWAP_PTE,
        THP_STAT_COLLAPSE_EXCEED_SHARED_PTE,
        _THP_STAT_MAX,
        _THP_STAT_INVALID = -EINVAL,
} ThpStat;

/* The file name under stats/, which is also the counter's name in D-Bus, JSON and metrics. */
const char *thp_stat_to_string(ThpStat s);
ThpStat thp_stat_from_string(const char *s);
/* nr_anon and nr_anon_partially_mapped count pages held now; every other counter only grows. */
bool thp_stat_is_gauge(ThpStat s);

typedef struct ThpSizeStats {
        uint64_t size_kb;
        uint32_t present;                 /* bit (1u << ThpStat) for each counter the kernel has */
        uint64_t value[_THP_STAT_MAX];
} ThpSizeStats;

static inline bool thp_size_stats_has(const ThpSizeStats *s, ThpStat stat) {
        return s->present & (1u << stat);
}

/* The size of a directory name "hugepages-64kB": -EINVAL for any other name. */
int thp_size_dir_parse(const char *name, uint64_t *ret_size_kb);

/* Sets the counter named by a file of stats/ from the file's text ("123\n"). -ENOENT for a file
 * thpd does not know (a newer kernel's, left out), -EBADMSG for text that is not one decimal
 * number; s is unchanged on error. */
int thp_size_stats_set(ThpSizeStats *s, const char *name, const char *content);

/* What a size's anonymous THP does, as a KNOB_ENABLED_* value: its per-size "enabled", with
 * "inherit" following the global "enabled". KNOB_VALUE_UNSET when a value it needs is. */
KnobValue thp_size_effective_enabled(KnobValue size_enabled, KnobValue global_enabled);

/* Whether status shows the size: it may get anonymous pages (effective known and not "never"),
 * or holds some. */
bool thp_size_stats_shown(const ThpSizeStats *s, KnobValue effective_enabled);
