/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <glib.h>
#include <systemd/sd-bus.h>

#include "ctl.h"
#include "thpd-bus.h"

/* What the D-Bus verbs of thpd-ctl share: the connection, calls with errors turned into a
 * message and an exit code. */


#define CTL_DEFAULT_AWAIT_TIMEOUT_USEC (30 * UINT64_C(1000000))
/* The longest override thpd accepts (org.thpd1.Error.InvalidDuration beyond). */
#define CTL_OVERRIDE_MAX_USEC (365 * 24 * 3600 * UINT64_C(1000000))

/* Connects to the bus thpd is on: the system bus, or the session bus with --user. Logs and
 * returns a CtlExit code (CTL_EXIT_OK on success). */
int ctl_bus_open(const CtlOptions *o, sd_bus **ret);

/* A method call to org.thpd1.Manager, for arguments ctl_call() cannot take. Returns a CtlExit
 * code. */
int ctl_new_call(sd_bus *bus, const char *method, sd_bus_message **ret);
/* Sends call and waits for the reply; the same contract as ctl_call(). */
int ctl_call_message(const CtlOptions *o, sd_bus *bus, sd_bus_message *call, uint64_t timeout_usec, const char *what,
                     sd_bus_message **ret_reply);

/* Calls an org.thpd1.Manager method (timeout_usec 0: sd-bus's default). what names the action
 * for the error message ("set the override"). Returns a CtlExit code; the reply is set on
 * success only. */
int ctl_call(const CtlOptions *o, sd_bus *bus, const char *method, uint64_t timeout_usec, const char *what,
             sd_bus_message **ret_reply, const char *types, ...);

/* Logs a failed call the way a person can act on it and returns the exit code: CTL_EXIT_NOT_RUNNING
 * (with a hint how to start thpd, or that it answers on the other bus) when nobody owns
 * org.thpd1; CTL_EXIT_USAGE when thpd refused an argument (an unknown knob, a bad value or
 * duration); else CTL_EXIT_FAILURE. */
int ctl_log_bus_error(const CtlOptions *o, const sd_bus_error *error, int r, const char *what);
