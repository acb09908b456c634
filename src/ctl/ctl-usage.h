/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <glib.h>
#include <systemd/sd-bus.h>

#include "ctl-bus.h"
#include "ctl-json.h"
#include "ctl-table.h"

/* How much THP each unit with a policy holds (GetUnitUsage). */

typedef struct CtlUnitUsage {
        char *unit, *policy;
        uint64_t anon_thp_bytes, shmem_thp_bytes; /* UINT64_MAX: the source does not say */
        char *source;                             /* "" when no source could be read */
        bool read_by_ctl;                         /* thpd could not tell; thpd-ctl read it (see ctl-usage.c) */
} CtlUnitUsage;

/* GetUnitUsage, sent with GetAll and waited for with it (CtlAsyncCall, ctl_bus_wait()). Not
 * fatal for the caller: the result is NULL when the daemon cannot tell (a thpd without the
 * method, a manager that does not answer; the latter is logged as a warning). A unit whose figure
 * thpd cannot read is read here, with the caller's own privileges: as soon as thpd's answer is
 * in, the manager is asked for the processes of each such unit, so that those calls too overlap
 * with GetAll rather than follow it. */
typedef struct CtlUsageCall {
        unsigned *pending;
        sd_bus_slot *slot;
        sd_bus_message *reply;  /* thpd's answer, an error included */
        GArray *usage;          /* CtlUnitUsage, once the answer is decoded */
        int read_error;         /* decoding the answer failed */
        GPtrArray *unit_calls;  /* the GetUnitProcesses calls for units read here */
} CtlUsageCall;
/* Returns 0 or a negative errno (nothing was sent). */
int ctl_unit_usage_call(sd_bus *bus, unsigned *pending, CtlUsageCall *c);
/* Once ctl_bus_wait() returned 0: the rows, or NULL (see above). */
GArray *ctl_unit_usage_finish(CtlUsageCall *c);
void ctl_unit_usage_call_done(CtlUsageCall *c);
/* The row of a unit, or NULL. */
const CtlUnitUsage *ctl_unit_usage_find(GArray *usage, const char *unit);
/* anon + shmem as far as known; UINT64_MAX when neither is. */
uint64_t ctl_unit_usage_total(const CtlUnitUsage *u);
/* n units as a table: JSON has each unit's figures (null where unknown), text its name and a line
 * that says them ("2.7 GiB anon, 4.0 MiB shmem (cgroup-v2)"). */
CtlTable *ctl_unit_usage_table(const CtlUnitUsage *const *units, size_t n);
/* "unit_usage": [...], or null for NULL. */
void ctl_unit_usage_to_json(GArray *usage, CtlJson *b);
