/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "ctl-bus.h"
#include "log.h"
#include "util.h"

/* Whether a thpd owns org.thpd1 on the other bus than the one asked for. NameHasOwner, not a
 * call to thpd: that would start it by D-Bus activation. */
static bool thpd_on_other_bus(bool user) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int has_owner = 0;

        if ((user ? sd_bus_open_system(&bus) : sd_bus_open_user(&bus)) < 0)
                return false;
        if (sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                               "NameHasOwner", NULL, &reply, "s", THPD_BUS_NAME) < 0 ||
            sd_bus_message_read(reply, "b", &has_owner) < 0)
                return false;
        return has_owner;
}

/* Says that thpd is not running, and what to do: use the other bus where it answers, or start
 * it in the way this machine can. */
static int log_not_running(const CtlOptions *o) {
        if (thpd_on_other_bus(o->user)) {
                if (o->user)
                        log_error("thpd is not running on the session bus, but it answers on the system bus; "
                                  "drop --user.");
                else
                        log_error("thpd is not running on the system bus, but a 'thpd --user' answers on the session "
                                  "bus; use 'thpd-ctl --user'.");
        } else if (o->user)
                log_error("thpd is not running on the session bus; start it with 'thpd --user'.");
        else if (sd_booted() > 0)
                log_error("thpd is not running; start it with 'systemctl start thpd' (or try 'thpd --user' and "
                          "'thpd-ctl --user').");
        else
                log_error("thpd is not running, and systemd does not run this machine to start it: run 'thpd' as "
                          "root, or try 'thpd --user' and 'thpd-ctl --user'.");
        return CTL_EXIT_NOT_RUNNING;
}

int ctl_bus_open(const CtlOptions *o, sd_bus **ret) {
        sd_bus *bus = NULL;
        int r;

        r = o->user ? sd_bus_open_user(&bus) : sd_bus_open_system(&bus);
        if (r < 0) {
                log_error_errno(r, "Cannot connect to the %s bus: %m", o->user ? "session" : "system");
                /* No bus to connect to means no thpd on it either. */
                if (r == -ENOENT || r == -ECONNREFUSED)
                        return log_not_running(o);
                return CTL_EXIT_FAILURE;
        }
        /* Lets an administrator in a desktop session answer polkit's password prompt. */
        (void) sd_bus_set_allow_interactive_authorization(bus, isatty(STDIN_FILENO));
        *ret = bus;
        return CTL_EXIT_OK;
}

static bool error_means_not_running(const sd_bus_error *e) {
        return sd_bus_error_has_names(e, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER,
                                      SYSTEMD_ERROR_NO_SUCH_UNIT, SYSTEMD_ERROR_UNIT_MASKED) ||
               (e->name && g_str_has_prefix(e->name, "org.freedesktop.DBus.Error.Spawn."));
}

/* thpd refused an argument the user typed: the command line is wrong, as with a local check. */
static bool error_means_usage(const sd_bus_error *e) {
        return sd_bus_error_has_names(e, THPD_ERROR_UNKNOWN_KNOB, THPD_ERROR_INVALID_VALUE,
                                      THPD_ERROR_INVALID_DURATION, SD_BUS_ERROR_INVALID_ARGS);
}

int ctl_log_bus_error(const CtlOptions *o, const sd_bus_error *error, int r, const char *what) {
        if (sd_bus_error_is_set(error) ? error_means_not_running(error) : r == -ENOENT || r == -ECONNREFUSED)
                return log_not_running(o);
        if (sd_bus_error_has_name(error, SD_BUS_ERROR_NO_REPLY) || r == -ETIMEDOUT)
                log_error("Cannot %s: thpd did not answer in time.", what);
        else if (sd_bus_error_is_set(error) && error_means_usage(error))
                return ctl_usage_error("Cannot %s: %s", what, error->message ?: error->name);
        else if (sd_bus_error_is_set(error))
                log_error("Cannot %s: %s", what, error->message ?: error->name);
        else
                log_error_errno(r, "Cannot %s: %m", what);
        return CTL_EXIT_FAILURE;
}

int ctl_new_call(sd_bus *bus, const char *method, sd_bus_message **ret) {
        int r;

        r = sd_bus_message_new_method_call(bus, ret, THPD_BUS_NAME, THPD_BUS_PATH, THPD_BUS_INTERFACE, method);
        if (r < 0) {
                log_error_errno(r, "Cannot build the %s call: %m", method);
                return CTL_EXIT_FAILURE;
        }
        return CTL_EXIT_OK;
}

int ctl_call_message(const CtlOptions *o, sd_bus *bus, sd_bus_message *call, uint64_t timeout_usec, const char *what,
                     sd_bus_message **ret_reply) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        r = sd_bus_call(bus, call, timeout_usec, &error, &reply);
        if (r < 0)
                return ctl_log_bus_error(o, &error, r, what);
        if (ret_reply)
                *ret_reply = TAKE_PTR(reply);
        return CTL_EXIT_OK;
}

int ctl_call(const CtlOptions *o, sd_bus *bus, const char *method, uint64_t timeout_usec, const char *what,
             sd_bus_message **ret_reply, const char *types, ...) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;
        va_list ap;
        int r;

        r = ctl_new_call(bus, method, &call);
        if (r != CTL_EXIT_OK)
                return r;
        if (types) {
                va_start(ap, types);
                r = sd_bus_message_appendv(call, types, ap);
                va_end(ap);
                if (r < 0) {
                        log_error_errno(r, "Cannot build the %s call: %m", method);
                        return CTL_EXIT_FAILURE;
                }
        }
        return ctl_call_message(o, bus, call, timeout_usec, what, ret_reply);
}

static int on_async_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        CtlAsyncCall *c = userdata;

        c->reply = sd_bus_message_ref(reply);
        (*c->pending)--;
        return 0;
}

int ctl_call_async(sd_bus *bus, sd_bus_message *call, uint64_t timeout_usec, unsigned *pending, CtlAsyncCall *c) {
        int r;

        *c = (CtlAsyncCall) { .pending = pending };
        r = sd_bus_call_async(bus, &c->slot, call, on_async_reply, c, timeout_usec);
        if (r < 0)
                return r;
        (*pending)++;
        return 0;
}

void ctl_async_call_done(CtlAsyncCall *c) {
        /* A call still in flight is forgotten: its reply would find no callback. */
        c->slot = sd_bus_slot_unref(c->slot);
        c->reply = sd_bus_message_unref(c->reply);
}

int ctl_bus_wait(sd_bus *bus, const unsigned *pending) {
        int r;

        while (*pending > 0) {
                r = sd_bus_process(bus, NULL);
                if (r < 0)
                        return r;
                /* A call that timed out is answered with 0, not 1: waiting then, with no call left
                 * to time out, would never end. */
                if (r > 0 || *pending == 0)
                        continue;
                /* No deadline here: sd-bus wakes up for the earliest timeout of the calls. */
                r = sd_bus_wait(bus, UINT64_MAX);
                if (r < 0 && r != -EINTR)
                        return r;
        }
        return 0;
}

int ctl_check_reply(const CtlOptions *o, sd_bus *bus, sd_bus_message *reply, const char *what) {
        const sd_bus_error *error = sd_bus_message_get_error(reply);

        if (!error)
                return CTL_EXIT_OK;
        /* sd-bus answers the calls in flight with NoReply when the connection goes away; a
         * synchronous call says so with ECONNRESET, not as a daemon that did not answer. */
        if (sd_bus_error_has_name(error, SD_BUS_ERROR_NO_REPLY) && sd_bus_is_open(bus) <= 0)
                return ctl_log_bus_error(o, &SD_BUS_ERROR_NULL, -ECONNRESET, what);
        return ctl_log_bus_error(o, error, -sd_bus_message_get_errno(reply), what);
}
