/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Messages to the service manager (READY=1, STATUS=...) over one socket kept open.
 * sd_notify() opens, tunes and closes a socket per message: ten system calls, where STATUS=
 * changes at every unit start a policy matches, so a burst of starts paid more for the status
 * line than for reading the knobs. */
typedef struct ServiceNotifier ServiceNotifier;

/* Reads $NOTIFY_SOCKET once. Without it, messages go nowhere, as with sd_notify(). */
int service_notifier_new(ServiceNotifier **ret);
ServiceNotifier *service_notifier_free(ServiceNotifier *n);

/* Returns 0 also where nobody listens. */
int service_notify(ServiceNotifier *n, const char *state);
