/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "manager.h"

/* The service status line: what the knobs read, how many policies are active, and what waits
 * (the unit list, a storm, restarts, drift conflicts); the Status property shows it too. Free
 * it with g_free(). */
char *manager_status_text(const Manager *m);

/* Adds the listener that tells the service manager: STATUS= when the line changes, READY=1
 * after the first apply that knows the units. */
void manager_status_attach(Manager *m);
