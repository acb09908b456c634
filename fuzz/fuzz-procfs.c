/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The procfs parsers of the storm watcher: /proc/vmstat, /proc/pressure/<resource> and
 * /proc/PID/stat, and those of THP usage: /proc/PID/smaps_rollup, /proc/PID/cgroup and the
 * cgroup v1 and v2 memory.stat. Every input goes through all of them, as any of these files
 * could hold anything (a root moved for tests, a kernel that formats them differently). */
#include <glib.h>
#include <stdlib.h>

#include "fuzz.h"
#include "procfs.h"
#include "usage.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        fuzz_quiet_log();
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *s = fuzz_string(data, size);
        VmStat vm;
        Pressure psi;
        ProcStat st;
        UnitUsage u;
        uint64_t anon, shmem;
        char *cgroup = NULL;

        (void) procfs_parse_vmstat(s, &vm);
        (void) procfs_parse_pressure(s, &psi);
        if (procfs_parse_pid_stat(s, &st) >= 0) {
                (void) procfs_is_khugepaged_comm(st.comm);
                (void) procfs_is_kcompactd_comm(st.comm);
        }
        (void) usage_parse_memory_stat_v2(s, &u);
        (void) usage_parse_memory_stat_v1(s, &u);
        (void) usage_parse_smaps_rollup(s, &anon, &shmem);
        if (usage_parse_pid_cgroup(s, "memory", &cgroup) >= 0) {
                char *common = usage_common_cgroup(&cgroup, 1);

                g_free(common);
                g_free(cgroup);
        }
        free(s);
        return 0;
}
