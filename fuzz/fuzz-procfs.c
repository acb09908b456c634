/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The procfs parsers of the storm watcher: /proc/vmstat, /proc/pressure/<resource> and
 * /proc/PID/stat. Every input goes through all three, as any of these files could hold
 * anything (a procfs root moved for tests, a kernel that formats them differently). */
#include <stdlib.h>

#include "fuzz.h"
#include "procfs.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        fuzz_quiet_log();
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *s = fuzz_string(data, size);
        VmStat vm;
        Pressure psi;
        ProcStat st;

        (void) procfs_parse_vmstat(s, &vm);
        (void) procfs_parse_pressure(s, &psi);
        if (procfs_parse_pid_stat(s, &st) >= 0) {
                (void) procfs_is_khugepaged_comm(st.comm);
                (void) procfs_is_kcompactd_comm(st.comm);
        }
        free(s);
        return 0;
}
