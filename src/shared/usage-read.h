/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <sys/types.h>

#include "usage.h"

/* One process of a unit, as the systemd manager's GetUnitProcesses lists it
 * (unit_processes_read()). */
typedef struct UnitProcess {
        pid_t pid;
        char *cgroup;  /* its cgroup path, e.g. "/system.slice/redis-server.service" */
        char *cmdline; /* NULL where the reader does not need it */
} UnitProcess;

/* Frees what one UnitProcess owns, for g_array_set_clear_func(). */
void unit_process_clear(void *p);

/* The THP a unit holds, from the first source that answers: cgroup v2 memory.stat of the cgroup
 * that holds all its processes (where that v2 hierarchy has the memory controller), the cgroup v1
 * memory controller's memory.stat (where the processes are in that cgroup of it), or the sum of
 * their smaps_rollup. cgroupfs_root and procfs_root are the relocatable roots (/sys/fs/cgroup,
 * /proc). A unit without processes holds no THP by the last source. Returns -errno when no
 * source could be read (-EACCES for a process procfs hides); a process that has exited by the time
 * it is read is skipped. */
int usage_read_unit(const char *cgroupfs_root, const char *procfs_root, const UnitProcess *processes, size_t n,
                    UnitUsage *ret);
