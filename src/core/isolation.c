/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib.h>

#include "isolation.h"
#include "util.h"

/* systemd names its child after the last 8 characters of the binary in parentheses
 * (rename_process_from_path()); between fork() and that rename it still has the manager's own
 * name, and since systemd 255 the start is handed to the executor. */
static bool comm_is_starting(const char *comm) {
        return streq(comm, "thpd-exec") || streq(comm, "(hpd-exec)") || streq(comm, "systemd") ||
               g_str_has_prefix(comm, "systemd-executo") || g_str_has_prefix(comm, "(sd-exec");
}

IsolationProcess isolation_classify_process(bool thp_enabled, const char *comm, ScopeVia via) {
        if (!thp_enabled)
                return ISOLATION_PROCESS_DISABLED;
        if (via != SCOPE_VIA_NONE && comm && comm_is_starting(comm))
                return ISOLATION_PROCESS_STARTING;
        return ISOLATION_PROCESS_ENABLED;
}

IsolationState isolation_before_asking(KnobValue mode, ScopeVia via) {
        return via == SCOPE_VIA_NONE && mode != KNOB_ENABLED_NEVER ? ISOLATION_NOT_ISOLATED : ISOLATION_CHECKING;
}

IsolationState isolation_judge(KnobValue mode, const IsolationFound *found) {
        if (found->enabled > 0)
                return mode == KNOB_ENABLED_NEVER ? ISOLATION_NOT_ISOLATED : ISOLATION_UNVERIFIED;
        if (found->disabled + found->starting == 0)
                return ISOLATION_UNVERIFIED;
        return ISOLATION_ISOLATED;
}

static const char *const isolation_state_table[_ISOLATION_STATE_MAX] = {
        [ISOLATION_CHECKING] = "checking",
        [ISOLATION_ISOLATED] = "isolated",
        [ISOLATION_NOT_ISOLATED] = "not-isolated",
        [ISOLATION_UNVERIFIED] = "unverified",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(isolation_state, IsolationState);

Isolation *isolation_free(Isolation *i) {
        if (!i)
                return NULL;

        g_free(i->unit);
        g_free(i->policy);
        g_free(i->note);
        g_free(i->via_value);
        g_free(i);
        return NULL;
}

void isolation_free_void(void *p) {
        isolation_free(p);
}

char *isolation_describe_via(const Isolation *i) {
        switch (i->via) {
        case SCOPE_VIA_MEMORY_THP:
                return g_strdup_printf("MemoryTHP=%s", i->via_value ?: "");
        case SCOPE_VIA_HELPER:
                return g_strdup("thpd-exec");
        case SCOPE_VIA_MACHINE_WIDE:
                return g_strdup("machine-wide");
        default:
                return g_strdup("no drop-in");
        }
}
