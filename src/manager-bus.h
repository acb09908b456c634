/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "manager.h"

#define THPD_BUS_NAME "org.thpd1"
#define THPD_BUS_PATH "/org/thpd1"
#define THPD_BUS_INTERFACE "org.thpd1.Manager"

/* The org.thpd1.Manager object: registers the vtable and requests the name. */
int manager_bus_register(Manager *m);
void manager_bus_free(Manager *m);

/* Called by manager_apply after every pass: emits Applied for changes (if any) and
 * PropertiesChanged, and answers Await() calls whose unit's policy is now applied. */
void manager_bus_after_apply(Manager *m, const KnobChange *changes, size_t n_changes);
