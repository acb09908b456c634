/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib.h>
#include <signal.h>

#include "procfs.h"
#include "usage-read.h"
#include "util.h"

void unit_process_clear(void *p) {
        UnitProcess *process = p;

        g_clear_pointer(&process->cgroup, g_free);
        g_clear_pointer(&process->cmdline, g_free);
}

/* Where the v2 hierarchy is mounted: the root itself on a unified host, "unified" below it on a
 * hybrid one; NULL on a host with v1 alone. */
static const char *v2_hierarchy(const char *cgroupfs_root) {
        g_autofree char *unified = g_build_filename(cgroupfs_root, "cgroup.controllers", NULL);
        g_autofree char *hybrid = g_build_filename(cgroupfs_root, "unified", "cgroup.controllers", NULL);

        if (access(unified, F_OK) == 0)
                return "";
        if (access(hybrid, F_OK) == 0)
                return "unified";
        return NULL;
}

static int read_v2(const char *cgroupfs_root, const char *cgroup, UnitUsage *ret) {
        const char *hierarchy = v2_hierarchy(cgroupfs_root);
        g_autofree char *relpath = NULL;
        _cleanup_free_ char *content = NULL;
        int r;

        if (!hierarchy)
                return -ENOENT;
        /* memory.stat is there only where the memory controller is enabled for the cgroup. */
        relpath = g_build_filename(hierarchy, cgroup, "memory.stat", NULL);
        r = procfs_read_file(cgroupfs_root, relpath, &content);
        if (r < 0)
                return r;
        return usage_parse_memory_stat_v2(content, ret);
}

/* A v1 memory cgroup of the same path can exist without holding the unit's processes (the
 * manager realises controllers it was not delegated nowhere), so membership is checked on one
 * of them. */
static int read_v1(const char *cgroupfs_root, const char *procfs_root, const char *cgroup, pid_t pid,
                   UnitUsage *ret) {
        g_autofree char *relpath = NULL, *pid_cgroup = NULL;
        _cleanup_free_ char *content = NULL;
        int r;

        r = procfs_read_pid_file(procfs_root, pid, "cgroup", &content);
        if (r < 0)
                return r;
        r = usage_parse_pid_cgroup(content, "memory", &pid_cgroup);
        if (r < 0)
                return r;
        if (!usage_cgroup_contains(cgroup, pid_cgroup))
                return -ENOENT;

        free(TAKE_PTR(content));
        relpath = g_build_filename("memory", cgroup, "memory.stat", NULL);
        r = procfs_read_file(cgroupfs_root, relpath, &content);
        if (r < 0)
                return r;
        return usage_parse_memory_stat_v1(content, ret);
}

/* A process's procfs directory is missing both when it exited since the manager listed it and
 * when procfs hides it (hidepid=, ProtectProc=invisible): only the first means it holds
 * nothing. */
static bool process_gone(pid_t pid) {
        return kill(pid, 0) < 0 && errno == ESRCH;
}

static int read_smaps(const char *procfs_root, const UnitProcess *processes, size_t n, UnitUsage *ret) {
        UnitUsage sum = { .source = USAGE_SOURCE_SMAPS };

        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *content = NULL;
                uint64_t anon, shmem;
                int r;

                r = procfs_read_pid_file(procfs_root, processes[i].pid, "smaps_rollup", &content);
                if ((r == -ENOENT || r == -ESRCH) && process_gone(processes[i].pid))
                        continue;
                if (r == -ENOENT)
                        r = -EACCES; /* there, but hidden from thpd: its figure is not known */
                if (r >= 0)
                        r = usage_parse_smaps_rollup(content, &anon, &shmem);
                if (r < 0)
                        return r;
                sum.anon_thp_bytes = usage_add(sum.anon_thp_bytes, anon);
                sum.shmem_thp_bytes = usage_add(sum.shmem_thp_bytes, shmem);
        }
        *ret = sum;
        return 0;
}

int usage_read_unit(const char *cgroupfs_root, const char *procfs_root, const UnitProcess *processes, size_t n,
                    UnitUsage *ret) {
        g_autofree char **paths = g_new0(char *, n + 1);
        g_autofree char *cgroup = NULL;
        UnitUsage u;

        for (size_t i = 0; i < n; i++)
                paths[i] = processes[i].cgroup;
        cgroup = usage_common_cgroup(paths, n);

        if (cgroup && read_v2(cgroupfs_root, cgroup, &u) >= 0) {
                *ret = u;
                return 0;
        }
        if (cgroup && read_v1(cgroupfs_root, procfs_root, cgroup, processes[0].pid, &u) >= 0) {
                *ret = u;
                return 0;
        }
        return read_smaps(procfs_root, processes, n, ret);
}
