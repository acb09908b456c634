/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "policy.h"
#include "unit-exec.h"

/* The drop-in thpd-generator writes for a service of a policy that isolates it (Scope=service or
 * Scope=auto), and what thpd reads back from it to say how a unit is isolated. Pure text. */

/* Last in the drop-in directory, so that its ExecStart= reset comes after the unit's own. */
#define SCOPE_DROPIN_NAME "zz-thpd-scope.conf"

typedef enum ScopeVia {
        SCOPE_VIA_NONE,       /* no drop-in: the unit was not there at the last daemon-reload, or
                               * it is transient */
        SCOPE_VIA_HELPER,     /* ExecStart= through thpd-exec, for managers without MemoryTHP= */
        SCOPE_VIA_MEMORY_THP, /* the manager's own MemoryTHP= (systemd 260 and later) */
        _SCOPE_VIA_MAX,
        _SCOPE_VIA_INVALID = -EINVAL,
} ScopeVia;

const char *scope_via_to_string(ScopeVia v);

typedef struct ScopeDropinRequest {
        const Policy *policy;
        const char *unit;
        const char *fragment;       /* the unit file it was read from, for the comment */
        const UnitExec *exec;       /* its effective ExecStart= lines (SCOPE_VIA_HELPER) */
        const char *helper;         /* thpd-exec's path (SCOPE_VIA_HELPER) */
        ScopeVia via;
        /* The kernel has PR_THP_DISABLE_EXCEPT_ADVISED (Linux 6.18): without it MemoryTHP=madvise
         * would fail the unit's start, so it gets disable, the stricter side of what was asked. */
        bool kernel_except_advised;
} ScopeDropinRequest;

/* The drop-in's text. -EINVAL when an ExecStart= value has no command (*ret_bad_line, if
 * given, then points at it), -ENOEXEC when the unit has no ExecStart= to wrap. */
int scope_dropin_text(const ScopeDropinRequest *req, char **ret, const char **ret_bad_line);

/* How a drop-in of ours isolates its unit: SCOPE_VIA_MEMORY_THP with *ret_value set to the
 * MemoryTHP= value ("disable" or "madvise", borrowed from text up to the end of its line,
 * copied), SCOPE_VIA_HELPER, or SCOPE_VIA_NONE for a file that does neither. */
ScopeVia scope_dropin_parse(const char *text, char **ret_value);
