/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib.h>

#include "isolation.h"

const char *isolation_state_to_string(IsolationState s) {
        static const char *const names[_ISOLATION_STATE_MAX] = {
                [ISOLATION_CHECKING] = "checking",
                [ISOLATION_ISOLATED] = "isolated",
                [ISOLATION_NOT_ISOLATED] = "not-isolated",
                [ISOLATION_UNVERIFIED] = "unverified",
        };

        if (s < 0 || s >= _ISOLATION_STATE_MAX)
                return NULL;
        return names[s];
}

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
        default:
                return g_strdup("no drop-in");
        }
}
