/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "manager.h"
#include "scope-dropin.h"

/* Which running services the blanket MemoryTHP=madvise of a Scope=service Enabled=always policy
 * reaches (scope-dropin.h). The kernel does not show the except-advised flag, so this asks the
 * service manager: each running service's DropInPaths and ExecMainStartTimestamp, compared with
 * when the blanket took effect. Asked when the manager finishes a reload and when a service
 * becomes active, never polled; nothing is asked while no blanket exists. */

typedef struct BlanketService {
        char *unit;
        BlanketClass class; /* _BLANKET_CLASS_INVALID until both answers came */
} BlanketService;

typedef struct BlanketEntry {
        BlanketService service; /* first: the list hands these out */
        BlanketFacts facts;
        bool dropins_known, started_known;
        /* ActiveEnterTimestamp as the last signal said (0: listed, no signal yet): a restart shows
         * as a new one, even when the manager's signals skip the inactive state between. */
        uint64_t active_enter;
} BlanketEntry;

/* Manager.blanket, from manager_blanket_start(). */
typedef struct BlanketWatch {
        sd_bus_slot *reloading_slot, *changed_slot;
        uint64_t since;
        GHashTable *services; /* unit -> BlanketEntry* */
        unsigned generation;  /* bumps at every listing: answers to an older one are dropped */
        bool reloading;       /* between Reloading(true) and (false): unit signals say little */
} BlanketWatch;

/* Reads the blanket, lists the running services and follows the manager's signals. */
int manager_blanket_start(Manager *m);
void manager_blanket_stop(Manager *m);

/* When the blanket took effect (CLOCK_REALTIME µs): the manager's reload that loaded it as thpd
 * first saw it, kept in the runtime directory across a restart of thpd; 0 while there is none. */
uint64_t manager_blanket_since(const Manager *m);
/* BlanketService*, classified ones only, sorted by unit; borrowed. */
GPtrArray *manager_blanket_services(const Manager *m);
/* The policy whose blanket it is, for the restart hints: the first that wants always for its own
 * services (policy_inverts()), or NULL. */
const char *manager_blanket_policy(const Manager *m);
