/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "manager.h"

/* The daemon's side of Scope=service isolation (isolation.h): it asks the systemd manager for a
 * unit's processes (GetUnitProcesses) once per start, reads their THP_enabled, and queues an
 * apply with the answer, which the plan turns into NeedsRestart. */

/* Checks the units the plan names (ApplyReport.isolation_checks) and forgets those no longer
 * wanted. */
extern const ManagerListener manager_isolation_listener;

/* Isolation*, sorted by unit name; borrowed. */
GPtrArray *manager_isolation_list(const Manager *m);
