/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "manager.h"

/* Metrics, the daemon's side: the Prometheus text of the manager's state (metrics.c formats
 * it), and the file for node_exporter's textfile collector ([Metrics] TextfilePath=). */

/* The exposition text of the current state; free with g_free(). */
char *manager_metrics_render(Manager *m);

/* Rewrites the metrics file when its text changed, and removes the one an earlier setting named.
 * Called after every apply and storm event, never on a timer: an idle thpd writes nothing. */
void manager_metrics_update(Manager *m);

/* Removes the metrics file: the series of a thpd that is not running must not look current. */
void manager_metrics_remove(Manager *m);
