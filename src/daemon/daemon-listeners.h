/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "manager.h"

/* Attaches what publishes the manager's state, in this order: the service status, the bus, the
 * metrics file and the Scope=service isolation checks. */
void daemon_listeners_attach(Manager *m);
