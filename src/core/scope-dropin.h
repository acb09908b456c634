/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "policy.h"
#include "unit-exec.h"

/* The drop-in thpd-generator writes for a service of a policy that isolates it (Scope=service or
 * Scope=auto), and what thpd reads back from it to say how a unit is isolated. Pure text. */

/* Last in the drop-in directory, so that its ExecStart= reset comes after the unit's own. */
#define SCOPE_DROPIN_NAME "zz-thpd-scope.conf"

/* The top-level drop-in that gives every service MemoryTHP=madvise while a policy wants always for
 * its own services (policy_inverts()), in the generator's directory. systemd applies the drop-ins
 * of all directories in the order of their file names, so this one must sort before
 * SCOPE_DROPIN_NAME (the exemption of those services, and the isolation of services that ask for
 * never), and it sorts before the usual names of an admin's drop-ins (override.conf, 50-...). */
#define SCOPE_BLANKET_DIR "service.d"
#define SCOPE_BLANKET_NAME "10-thpd-madvise.conf"
/* The comment line of a unit's drop-in that says why no blanket was written. */
#define SCOPE_NO_BLANKET_PREFIX "# No blanket: "

typedef enum ScopeVia {
        SCOPE_VIA_NONE,       /* no drop-in: the unit was not there at the last daemon-reload, or
                               * it is transient */
        SCOPE_VIA_HELPER,     /* ExecStart= through thpd-exec, for managers without MemoryTHP= */
        SCOPE_VIA_MEMORY_THP, /* the manager's own MemoryTHP= (systemd 260 and later) */
        SCOPE_VIA_MACHINE_WIDE, /* Enabled=always with no blanket: always machine-wide, for every
                                 * service */
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

/* Why the blanket cannot be written on this platform (a sentence), or NULL when it can: it needs
 * the manager's MemoryTHP= (systemd 260) and PR_THP_DISABLE_EXCEPT_ADVISED (Linux 6.18), without
 * which MemoryTHP=madvise would fail every service's start. */
const char *scope_blanket_unavailable(ScopeVia via, bool kernel_except_advised);

/* The blanket's text, naming the policies (policy_inverts()) whose services are exempt. */
char *scope_blanket_text(const Policy *const *policies, size_t n_policies);

/* The drop-in's text. For a policy that wants always (policy_inverts()): the exemption from the
 * blanket (MemoryTHP=inherit) where scope_blanket_unavailable() says the blanket can be written,
 * else a file of comments only that says why always is machine-wide. -EINVAL when an ExecStart= value has no command (*ret_bad_line, if
 * given, then points at it), -ENOEXEC when the unit has no ExecStart= to wrap. */
int scope_dropin_text(const ScopeDropinRequest *req, char **ret, const char **ret_bad_line);

/* How a drop-in of ours isolates its unit: SCOPE_VIA_MEMORY_THP with *ret_value set to the
 * MemoryTHP= value ("disable", "madvise", or "inherit" for an exemption from the blanket, copied),
 * SCOPE_VIA_HELPER, SCOPE_VIA_MACHINE_WIDE with *ret_value set to why there is no blanket, or
 * SCOPE_VIA_NONE for a file that does none of these. */
ScopeVia scope_dropin_parse(const char *text, char **ret_value);

/* Where a running service stands with the blanket, as the service manager loaded its drop-ins
 * and started it (scope_blanket_classify()). */
typedef enum BlanketClass {
        BLANKET_UNDER,  /* started after the blanket took effect: its processes run at madvise */
        BLANKET_BEFORE, /* started before: it keeps the machine's value until it restarts */
        BLANKET_EXEMPT, /* the blanket does not apply: a drop-in that sorts after it sets MemoryTHP=
                         * (a policy's own unit, a service that asks for never), or the blanket is
                         * not among its drop-ins */
        _BLANKET_CLASS_MAX,
        _BLANKET_CLASS_INVALID = -EINVAL,
} BlanketClass;

const char *blanket_class_to_string(BlanketClass c);

/* What the service manager says of one running service. */
typedef struct BlanketFacts {
        bool has_blanket;      /* the blanket is among its DropInPaths */
        bool overridden;       /* a drop-in after the blanket sets MemoryTHP= */
        uint64_t started_usec; /* CLOCK_REALTIME, when its main process started; 0: not said */
} BlanketFacts;

/* since_usec: when the blanket took effect (CLOCK_REALTIME, not 0). A service whose start the
 * manager does not tell may predate the blanket, so it counts as started before it. */
BlanketClass scope_blanket_classify(const BlanketFacts *f, uint64_t since_usec);

/* Whether path, one of a unit's DropInPaths, is the blanket: SCOPE_BLANKET_NAME in a top-level
 * SCOPE_BLANKET_DIR. */
bool scope_dropin_is_blanket(const char *path);
/* Whether a drop-in's text assigns MemoryTHP=, which wins over the blanket's when it sorts after. */
bool scope_dropin_sets_memory_thp(const char *text);
