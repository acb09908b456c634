/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Parsers of procfs file content: pure, so tests and the fuzzer feed them recorded files.
 * They return -EBADMSG for content they do not understand. procfs.h reads the files. */

/* The /proc/vmstat counters a storm shows up in (kernel-facts §2). A counter this kernel does
 * not have (no CONFIG_COMPACTION, an older kernel) reads as 0, which is also what it would
 * count. */
typedef struct VmStat {
        uint64_t compact_stall;            /* entries into direct compaction */
        uint64_t compact_fail;
        uint64_t compact_success;
        uint64_t compact_migrate_scanned;
        uint64_t compact_free_scanned;
        uint64_t compact_daemon_wake;      /* kcompactd wake-ups */
        uint64_t thp_fault_alloc;
        uint64_t thp_fault_fallback;
        uint64_t thp_collapse_alloc;
        uint64_t thp_collapse_alloc_failed;
        uint64_t thp_split_page;           /* PMD-sized THPs split */
        uint64_t allocstall;               /* the sum of allocstall_<zone> ("allocstall" before 4.10) */
} VmStat;

int procfs_parse_vmstat(const char *content, VmStat *ret);

/* One line of a /proc/pressure/<resource> file. Averages are percentages of wall time; total is
 * the stall time in microseconds since boot. */
typedef struct PressureLine {
        bool present;
        double avg10, avg60, avg300;
        uint64_t total_usec;
} PressureLine;

typedef struct Pressure {
        PressureLine some;
        PressureLine full; /* absent in the cpu file of kernels before 5.13 */
} Pressure;

int procfs_parse_pressure(const char *content, Pressure *ret);

/* The fields of /proc/PID/stat (proc_pid_stat(5)) the watcher needs. comm is what the kernel
 * shows between the parentheses, truncated to fit. */
#define PROC_STAT_COMM_MAX 64
#define PROC_FLAG_KTHREAD 0x00200000U /* PF_KTHREAD in field 9 */

typedef struct ProcStat {
        pid_t pid;
        char comm[PROC_STAT_COMM_MAX];
        char state;
        pid_t ppid;
        unsigned flags;
        uint64_t utime_ticks; /* field 14, in sysconf(_SC_CLK_TCK) units */
        uint64_t stime_ticks; /* field 15 */
} ProcStat;

int procfs_parse_pid_stat(const char *content, ProcStat *ret);

/* From /proc/PID/status: "THP_enabled:" (Linux 5.0) is false only when the process disabled THP
 * entirely with prctl(PR_SET_THP_DISABLE); the global knob does not show there, nor does the
 * 6.18 "except advised" mode. -ENODATA when the kernel has no such line. */
typedef struct ProcThpStatus {
        char name[16];    /* "Name:", the command name (the kernel's comm, at most 15 bytes) */
        bool thp_enabled;
} ProcThpStatus;

int procfs_parse_thp_status(const char *status, ProcThpStatus *ret);

/* True for "khugepaged" / "kcompactd<digits>". */
bool procfs_is_khugepaged_comm(const char *comm);
bool procfs_is_kcompactd_comm(const char *comm);

/* The unit a process runs in, from /proc/PID/cgroup: the deepest component of its cgroup v2
 * path ("0::/...") that names a service or scope ("tuned.service", "session-4.scope",
 * "thpd-test-writer.service" below a user manager). -ENOENT when there is none (the root
 * cgroup, a kernel thread), -EBADMSG for content without a v2 line. */
int procfs_parse_cgroup_unit(const char *content, char **ret_unit);

/* From /proc/PID/mountinfo: whether the mount that holds path is read-only: the one with the
 * longest mount point above it (the last of those, which hides the ones below). -ENOENT when
 * none is, -EBADMSG for a line that is not mountinfo. */
int procfs_parse_path_read_only(const char *mountinfo, const char *path, bool *ret);
