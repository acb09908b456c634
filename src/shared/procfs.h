/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cmdline.h"
#include "procfs-parse.h"

/* What the storm watcher reads from procfs: small readers that find the files under a
 * relocatable procfs root and hand them to procfs-parse.h. They return -errno from open/read,
 * -EFBIG for a file larger than any of these should be, and -EBADMSG for content the parser does
 * not understand. */

/* The whole content of a virtual file (st_size 0) below root, NUL-terminated; free with free().
 * Also for cgroup files, which are read the same way. */
int procfs_read_file(const char *root, const char *relpath, char **ret);
/* The same for file in /proc/<pid>/; -EINVAL for a pid no process can have. */
int procfs_read_pid_file(const char *procfs_root, pid_t pid, const char *file, char **ret);

int procfs_read_vmstat(const char *procfs_root, VmStat *ret);
/* resource: "memory", "cpu" or "io". -ENOENT when the kernel has no PSI (or psi=0). */
int procfs_read_pressure(const char *procfs_root, const char *resource, Pressure *ret);
int procfs_read_pid_stat(const char *procfs_root, pid_t pid, ProcStat *ret);

/* <procfs>/cmdline's THP boot parameters (cmdline.h); present as cmdline_parse_thp() takes it. */
int procfs_read_cmdline_thp(const char *procfs_root, const bool *present, CmdlineThp *ret);

int procfs_read_thp_status(const char *procfs_root, pid_t pid, ProcThpStatus *ret);

/* The kernel threads whose CPU time shows khugepaged and kcompactd storms. */
typedef struct ProcfsKthreads {
        pid_t khugepaged;     /* 0: not running (THP off everywhere, or no THP) */
        pid_t *kcompactd;     /* one per NUMA node with memory, ascending by pid */
        size_t n_kcompactd;
} ProcfsKthreads;

void procfs_kthreads_done(ProcfsKthreads *k);

/* Scans <procfs>/<pid>/stat for "khugepaged" and "kcompactd<N>". Only tasks flagged PF_KTHREAD
 * count: any process can name itself "khugepaged" with prctl(PR_SET_NAME), and it must not be
 * able to fake a storm. Finding none of them is not an error. */
int procfs_find_kthreads(const char *procfs_root, ProcfsKthreads *ret);

