/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "unit-processes.h"
#include "util.h"

int unit_processes_read(sd_bus_message *reply, GArray **ret) {
        g_autoptr(GArray) processes = g_array_new(FALSE, TRUE, sizeof(UnitProcess));
        const char *cgroup, *cmdline;
        uint32_t pid;
        int r;

        g_array_set_clear_func(processes, unit_process_clear);
        r = sd_bus_message_enter_container(reply, 'a', "(sus)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(reply, "(sus)", &cgroup, &pid, &cmdline)) > 0) {
                UnitProcess p;

                if (pid == 0 || pid > INT32_MAX)
                        return -EBADMSG;
                p = (UnitProcess) { .pid = (pid_t) pid, .cgroup = g_strdup(cgroup), .cmdline = g_strdup(cmdline) };
                g_array_append_val(processes, p);
        }
        if (r < 0)
                return r;
        r = sd_bus_message_exit_container(reply);
        if (r < 0)
                return r;

        *ret = g_steal_pointer(&processes);
        return 0;
}
