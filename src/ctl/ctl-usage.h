/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <glib.h>
#include <systemd/sd-bus.h>

#include "ctl-json.h"

/* How much THP each unit with a policy holds (GetUnitUsage). */

typedef struct CtlUnitUsage {
        char *unit, *policy;
        uint64_t anon_thp_bytes, shmem_thp_bytes; /* UINT64_MAX: the source does not say */
        char *source;                             /* "" when no source could be read */
        bool read_by_ctl;                         /* thpd could not tell; thpd-ctl read it (see ctl-usage.c) */
} CtlUnitUsage;

/* Calls GetUnitUsage. Not fatal for the caller: *ret is NULL when the daemon cannot tell (a thpd
 * without the method, a manager that does not answer; the latter is logged as a warning). A unit
 * whose figure thpd cannot read is read here, with the caller's own privileges. */
/* GetUnitUsage, sent before the GetAll that status also needs and read after it, so that the
 * two round trips (and the manager calls thpd makes for the first) overlap. */
typedef struct CtlUsageCall {
        sd_bus_slot *slot;
        sd_bus_message *reply;
} CtlUsageCall;
int ctl_unit_usage_call(sd_bus *bus, CtlUsageCall *c);
void ctl_unit_usage_finish(sd_bus *bus, CtlUsageCall *c, GArray **ret);
void ctl_unit_usage_call_clear(CtlUsageCall *c);
/* The row of a unit, or NULL. */
const CtlUnitUsage *ctl_unit_usage_find(GArray *usage, const char *unit);
/* anon + shmem as far as known; UINT64_MAX when neither is. */
uint64_t ctl_unit_usage_total(const CtlUnitUsage *u);
/* "unit_usage": [...], or null for NULL. */
void ctl_unit_usage_to_json(GArray *usage, CtlJson *b);
