/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "knob.h"
#include "policy.h"
#include "scope-dropin.h"

/* The services of Scope=service and Scope=auto policies: does the process a unit runs have THP
 * disabled (by the manager's MemoryTHP=, or by thpd-exec in front of ExecStart=, whichever
 * thpd-generator's drop-in uses)? A unit started before
 * the drop-in existed, or before the daemon-reload that made it, is not, and is listed as
 * needing a restart. The daemon asks the kernel once per start of the unit, never polls; the
 * plan only reads what it found. */

typedef enum IsolationState {
        ISOLATION_CHECKING,     /* its processes are being asked for */
        ISOLATION_ISOLATED,     /* every process reads THP_enabled: 0 */
        ISOLATION_NOT_ISOLATED, /* a process reads THP_enabled: 1 */
        ISOLATION_UNVERIFIED,   /* madvise (the kernel shows only the full disable), or no answer */
        _ISOLATION_STATE_MAX,
} IsolationState;

typedef struct Isolation {
        char *unit;
        char *policy;     /* the policy file name */
        KnobValue mode;   /* what it asks for its processes: never or madvise (an Enabled= value), or
                           * always (policy_inverts()): then only its drop-in is read */
        PolicyScope scope;
        ScopeVia via;     /* how thpd-generator's drop-in for it isolates it, as found at the check */
        char *via_value;  /* SCOPE_VIA_MEMORY_THP: the MemoryTHP= value it sets */
        unsigned stops;   /* the unit's stop count when asked: after a restart it is asked again */
        IsolationState state;
        char *note;       /* what was found, such as "PID 123 (redis-server) has THP_enabled: 1" */
} Isolation;

/* What one of the unit's processes says, from its THP_enabled: and its command name. */
typedef enum IsolationProcess {
        ISOLATION_PROCESS_DISABLED, /* THP_enabled: 0 */
        /* THP_enabled: 1 before its command runs, on the way to the drop-in's setting: the
         * service manager's child (or the executor) before MemoryTHP= or the exec of thpd-exec,
         * or thpd-exec before its prctl. A Type=simple unit is active as soon as it forked, and
         * waiting for that process would mean polling. */
        ISOLATION_PROCESS_STARTING,
        ISOLATION_PROCESS_ENABLED,  /* THP_enabled: 1, and no drop-in is about to change it */
} IsolationProcess;

/* comm: the process's name as /proc/PID/status gives it; via: the unit's drop-in. Without a
 * drop-in a process still starting keeps THP: nothing on its way sets it. */
IsolationProcess isolation_classify_process(bool thp_enabled, const char *comm, ScopeVia via);

/* What one check of a unit's processes found, each process as isolation_classify_process()
 * says. */
typedef struct IsolationFound {
        unsigned disabled; /* ISOLATION_PROCESS_DISABLED */
        unsigned starting; /* ISOLATION_PROCESS_STARTING */
        unsigned enabled;  /* ISOLATION_PROCESS_ENABLED */
} IsolationFound;

/* Before its processes are asked, for a unit whose policy asks its processes for mode (never or
 * madvise) through via: ISOLATION_CHECKING when they can tell, ISOLATION_NOT_ISOLATED when no
 * drop-in took THP from a madvise unit, which its processes could not show. */
IsolationState isolation_before_asking(KnobValue mode, ScopeVia via);
/* What the processes found tell. THP_enabled: shows only the full disable (never): under madvise
 * (PR_THP_DISABLE_EXCEPT_ADVISED) a process reads 1 as it does with THP on, so there a process
 * with THP_enabled: 1 leaves the unit unverified rather than not isolated. No process read is
 * unverified too; any process read and none with THP, isolated. */
IsolationState isolation_judge(KnobValue mode, const IsolationFound *found);

const char *isolation_state_to_string(IsolationState s);
Isolation *isolation_free(Isolation *i);
/* For the tables of isolation answers (GDestroyNotify). */
void isolation_free_void(void *p);
/* "MemoryTHP=disable", "thpd-exec" or "no drop-in": how its processes get their setting. */
char *isolation_describe_via(const Isolation *i);
