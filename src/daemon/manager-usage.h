/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "manager-bus-internal.h"

/* GetUnitUsage(): the THP each unit of an active policy holds, read when a client asks and
 * never otherwise (an idle thpd reads nothing). The units' processes and cgroups come from the
 * systemd manager's GetUnitProcesses, asked asynchronously; the reply goes out once every unit
 * is answered. Handler of the method in manager-bus.c's vtable; userdata is its BusData. */
int method_get_unit_usage(sd_bus_message *msg, void *userdata, sd_bus_error *error);
/* At exit: the calls still waiting get an error instead of a vanished peer. */
void manager_usage_fail_pending(BusData *d);
/* From the bus listener's free callback: answers the calls still waiting, as above, and drops
 * the list of requests, d->usage_requests. */
void manager_usage_release(BusData *d);
