/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "manager.h"

/* Metrics, the daemon's side: the Prometheus text of the manager's state (metrics.c formats
 * it), and the file for node_exporter's textfile collector ([Metrics] TextfilePath=). */

/* The exposition text of the current state; free with g_free(). */
char *manager_metrics_render(const Manager *m);

/* Adds the listener that owns the metrics file: it rewrites it when its text changed, and
 * removes the one an earlier setting named, after every apply and storm event once the units
 * are known, never on a timer: an idle thpd writes nothing. It removes it when thpd stops for
 * good. */
void manager_metrics_attach(Manager *m);
