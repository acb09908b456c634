/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "manager.h"
#include "storm.h"
#include "thpd-bus.h"

/* Adds the listener that owns the org.thpd1.Manager object and its state (BusData: the Await()
 * and GetUnitUsage() callers, the polkit verdicts, what PropertiesChanged last said). Once
 * connected it registers the vtable and requests the name; after every apply it emits Applied
 * for changes (if any) and PropertiesChanged for the properties whose value changed, and
 * answers Await() calls whose unit's policy is now applied; after a storm event, StormDetected
 * or StormCleared. Await() calls still pending when the event loop exits are answered with an
 * error (the daemon is stopping) before sd-bus closes the connection. */
void manager_bus_attach(Manager *m);
