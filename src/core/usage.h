/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How much THP a unit holds, and where the figure comes from. The parsers here take file content
 * (pure, so tests feed them recorded files); usage-read.c finds the files and probes the sources
 * in order. Parsers return -EBADMSG for content they do not understand and -ENODATA for a file
 * that lacks the figure (a kernel built without THP), so the next source is tried. */

/* A figure the source does not give, as systemd's properties say "not known" (MemoryCurrent). */
#define USAGE_UNKNOWN UINT64_MAX

typedef enum UsageSource {
        USAGE_SOURCE_NONE,      /* nothing could be read */
        USAGE_SOURCE_CGROUP_V2, /* memory.stat anon_thp and shmem_thp of the unit's cgroup */
        USAGE_SOURCE_CGROUP_V1, /* memory.stat total_rss_huge: anon only, v1 does not count shmem THP apart */
        USAGE_SOURCE_SMAPS,     /* the sum of AnonHugePages and ShmemPmdMapped of its processes */
        _USAGE_SOURCE_MAX,
} UsageSource;

typedef struct UnitUsage {
        uint64_t anon_thp_bytes;  /* USAGE_UNKNOWN when the source does not say */
        uint64_t shmem_thp_bytes; /* USAGE_UNKNOWN when the source does not say */
        UsageSource source;
} UnitUsage;

/* "cgroup-v2", "cgroup-v1", "smaps"; "" for USAGE_SOURCE_NONE. */
const char *usage_source_to_string(UsageSource s);

/* cgroup v2 memory.stat: anon_thp (required) and shmem_thp (USAGE_UNKNOWN on kernels without it). */
int usage_parse_memory_stat_v2(const char *content, UnitUsage *ret);
/* cgroup v1 memory.stat: total_rss_huge (its own and its children's anon THP). */
int usage_parse_memory_stat_v1(const char *content, UnitUsage *ret);
/* /proc/PID/smaps_rollup: AnonHugePages and ShmemPmdMapped in bytes (ret_shmem USAGE_UNKNOWN
 * without that line). An empty file (a kernel thread, a zombie: no memory)
 * holds nothing. */
int usage_parse_smaps_rollup(const char *content, uint64_t *ret_anon, uint64_t *ret_shmem);

/* The path of a process's cgroup in /proc/PID/cgroup: in the v1 hierarchy that has controller
 * ("memory"), or the v2 one for NULL. -ENOENT when that hierarchy is not listed. */
int usage_parse_pid_cgroup(const char *content, const char *controller, char **ret);

/* The deepest cgroup that holds every path ("/a/b/c", "/a/b/d" -> "/a/b"). NULL for no paths or
 * one that is not absolute or has a "." or ".." component (it would lead out of the cgroup
 * file system). */
char *usage_common_cgroup(char *const *paths, size_t n);
/* Whether path is parent or below it. */
bool usage_cgroup_contains(const char *parent, const char *path);

/* Sums b into a, keeping USAGE_UNKNOWN and saturating instead of wrapping. */
uint64_t usage_add(uint64_t a, uint64_t b);
