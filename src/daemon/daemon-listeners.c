/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "daemon-listeners.h"
#include "manager-bus.h"
#include "manager-isolation.h"
#include "manager-metrics.h"
#include "manager-status.h"

void daemon_listeners_attach(Manager *m) {
        manager_status_attach(m);
        manager_bus_attach(m);
        manager_metrics_attach(m);
        /* No state of its own: what it finds is the plan's input, Manager.isolation. */
        manager_add_listener(m, &manager_isolation_listener, NULL);
}
