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

/* A call whose reply is waited for together with the other calls of a verb: all are sent first,
 * then ctl_bus_wait() runs the bus once until every reply is in, so that their round trips (and
 * what thpd and the manager do for each) overlap instead of adding up. pending is the caller's
 * count of calls in flight, shared by all of them. */
typedef struct CtlAsyncCall {
        sd_bus_slot *slot;
        sd_bus_message *reply; /* once in: the method return or the error, a timeout included */
        unsigned *pending;
} CtlAsyncCall;

/* Sends call; returns 0 or a negative errno (nothing was sent). */
int ctl_call_async(sd_bus *bus, sd_bus_message *call, uint64_t timeout_usec, unsigned *pending, CtlAsyncCall *c);
void ctl_async_call_done(CtlAsyncCall *c);
/* Runs the bus until *pending is 0. Returns 0, or a negative errno when the connection failed
 * before that. */
int ctl_bus_wait(sd_bus *bus, const unsigned *pending);
/* Checks the reply of a call the way ctl_call() does: CTL_EXIT_OK for a method return, else
 * logs and returns the exit code. */
int ctl_check_reply(const CtlOptions *o, sd_bus *bus, sd_bus_message *reply, const char *what);

/* Logs a failed call the way a person can act on it and returns the exit code: CTL_EXIT_NOT_RUNNING
 * (with a hint how to start thpd, or that it answers on the other bus) when nobody owns
 * org.thpd1; CTL_EXIT_USAGE when thpd refused an argument (an unknown knob, a bad value or
 * duration); else CTL_EXIT_FAILURE. */
int ctl_log_bus_error(const CtlOptions *o, const sd_bus_error *error, int r, const char *what);
