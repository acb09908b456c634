/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "knob.h"

/* The kernel side: every path lives under a root (sysfs "/sys", procfs "/proc") so tests run on
 * a scratch tree. Errors come back as the kernel gave them: -ENOENT (no such knob on this
 * kernel), -EACCES (not root), -EROFS (read-only sysfs, e.g. a container), -EINVAL (the kernel
 * rejected the value), -EBADMSG (content we cannot parse), -EIO (the read-back disagrees). */

#define SYSFS_THP_DIR "kernel/mm/transparent_hugepage"
#define SYSFS_HUGETLB_DIR "kernel/mm/hugepages"
#define SYSFS_NODE_DIR "devices/system/node"

/* <sysfs_root>/kernel/mm/transparent_hugepage/<knob name>; free with g_free(). NULL for an
 * invalid knob. */
char *sysfs_knob_path(const char *sysfs_root, Knob k);

int sysfs_read_knob(const char *sysfs_root, Knob k, KnobValue *ret);

/* The knob files, kept open between reads. Every unit start costs an apply and a look for drift,
 * each reading every knob: an open attribute read again from offset 0 asks the kernel afresh,
 * without the path walk, open and close each time (3.7 µs a knob on this machine's sysfs, under
 * 1 µs kept open). A file removed or replaced since (its inode has no name left) is opened
 * anew; anything but a regular file (a FIFO in a test tree) is read once and closed. */
typedef struct KnobFiles {
        int dir_fd; /* the transparent_hugepage directory, O_PATH; -1: reads go by path */
        int fd[_KNOB_MAX];
} KnobFiles;

void knob_files_init(KnobFiles *f);
/* Without the directory (no THP on this kernel) every read goes by path. */
void knob_files_open(KnobFiles *f, const char *sysfs_root);
void knob_files_close(KnobFiles *f);
int knob_files_read(KnobFiles *f, const char *sysfs_root, Knob k, KnobValue *ret);

/* From then on every knob and pool write of this process fails with -EROFS, as it would on a
 * read-only /sys: for a system whose /sys is read-only while the service's own mount of it is
 * not (see manager.c, sysfs_guard_read_only()). */
void sysfs_refuse_writes(void);

/* Writes the bare word or number, then reads back and returns -EIO if the kernel reports
 * something else: the write was taken, and another writer wrote after it (the kernel refuses a
 * value with an error, -EINVAL). */
int sysfs_write_knob(const char *sysfs_root, Knob k, KnobValue v);

/* Marks which knobs this kernel has (probing files, never the kernel version). */
void sysfs_probe_knobs(const char *sysfs_root, bool present[_KNOB_MAX]);

/* What this kernel's THP offers besides the knobs, probed by its files like them. */
typedef struct SysfsThpFeatures {
        /* khugepaged collapses to mTHP sizes (7.2): some hugepages-<N>kB/stats/ has
         * collapse_exceed_none_pte. */
        bool mthp_collapse;
        /* shrink_underused (6.12): the underused-THP shrinker, which max_ptes_none also drives. */
        bool shrink_underused;
        /* The per-size enabled knob of the PMD size, from hpage_pmd_size; without that file the
         * largest size present (the per-size directories end at the PMD order); KNOB_ENABLED,
         * which is no per-size knob, when there is none. */
        Knob pmd_knob;
} SysfsThpFeatures;

void sysfs_probe_features(const char *sysfs_root, const bool present[_KNOB_MAX], SysfsThpFeatures *ret);

/* hugetlb page sizes in kB, ascending (hugepages-<N>kB directories); free with g_free(). -ENOENT
 * when the kernel has no hugetlb directory. */
int sysfs_list_hugetlb_sizes(const char *sysfs_root, uint64_t **ret_sizes, size_t *ret_n);
/* NUMA nodes that have a hugepages directory for this size, ascending; free with g_free().
 * -ENOENT when the kernel has no node directory (CONFIG_NUMA=n). */
int sysfs_list_pool_nodes(const char *sysfs_root, uint64_t page_size_kb, int **ret_nodes, size_t *ret_n);

typedef struct PoolState {
        uint64_t nr;      /* nr_hugepages */
        uint64_t free;    /* free_hugepages */
        uint64_t surplus; /* surplus_hugepages */
} PoolState;

#define POOL_NODE_ANY (-1)

/* Parses what a pool file (nr_hugepages, free_hugepages, ...) holds: a decimal number and at
 * most one trailing newline. -EBADMSG for anything else. Pure: sysfs_read_pool() reads the file
 * and calls it. */
int sysfs_parse_pool_number(const char *content, uint64_t *ret);

/* node is POOL_NODE_ANY for the global pool or a NUMA node number. */
char *sysfs_pool_path(const char *sysfs_root, uint64_t page_size_kb, int node);
int sysfs_read_pool(const char *sysfs_root, uint64_t page_size_kb, int node, PoolState *ret);

/* The pools' counter files, kept open as the knobs' are (KnobFiles): every apply reads the
 * counters of every pool, and the drift check nr_hugepages. Pools beyond POOL_FILES_MAX are read
 * by path. */
typedef enum PoolCounter {
        POOL_COUNTER_NR,
        POOL_COUNTER_FREE,
        POOL_COUNTER_SURPLUS,
        _POOL_COUNTER_MAX,
} PoolCounter;

#define POOL_FILES_MAX 16

typedef struct PoolFile {
        uint64_t page_size_kb;
        int node;
        int fd[_POOL_COUNTER_MAX];
} PoolFile;

typedef struct PoolFiles {
        PoolFile kept[POOL_FILES_MAX];
        size_t n;
} PoolFiles;

void pool_files_init(PoolFiles *f);
void pool_files_close(PoolFiles *f);
int pool_files_read(PoolFiles *f, const char *sysfs_root, uint64_t page_size_kb, int node, PoolState *ret);
/* Only nr_hugepages: what a check for changes behind thpd's back compares. */
int pool_files_read_pages(PoolFiles *f, const char *sysfs_root, uint64_t page_size_kb, int node, uint64_t *ret);

/* Writes nr_hugepages and reads it back. The kernel reports a partial allocation as success, so
 * the number actually present is returned in ret_pages (which may be below "pages"). */
int sysfs_write_pool(const char *sysfs_root, uint64_t page_size_kb, int node, uint64_t pages,
                     uint64_t *ret_pages);

/* Writes 1 to <procfs>/sys/vm/compact_memory. */
int procfs_compact_memory(const char *procfs_root);

#define SMALL_FILE_MAX (64U * 1024U)

/* Reads a whole small file (sysfs/procfs) into a NUL-terminated string; free with free().
 * -EFBIG beyond SMALL_FILE_MAX bytes, -EBADMSG for an embedded NUL. Never blocks in open(); something that is
 * not a regular file (a FIFO) is read until EOF or until it has nothing more for now, and gives
 * -ETIMEDOUT if no data (and no EOF) came within 1 s. */
int read_small_file(const char *path, char **ret);
/* The same with another limit: -EFBIG beyond max bytes. */
int read_file_max(const char *path, size_t max, char **ret);
/* Writes a string with a single write(), reporting the kernel's errno (not a buffered fclose).
 * Never creates the file: a missing one gives -ENOENT. Never blocks: a FIFO without a reader
 * gives -ENXIO, a full one -EAGAIN. */
int write_small_file(const char *path, const char *value);
