/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "ctl-bus.h"
#include "ctl-format.h"
#include "ctl-json.h"
#include "log.h"
#include "util.h"

/* For ExecStartPre=-thpd-ctl await %n: returns once thpd has applied the policy of the unit (or
 * at once if none matches), so the service maps its memory under that policy. */
int verb_await(const CtlOptions *o, CtlOutput *out, int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL, *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        uint64_t timeout = o->timeout_usec > 0 ? o->timeout_usec : CTL_DEFAULT_AWAIT_TIMEOUT_USEC;
        const char *unit = argv[0], *policy;
        int has_policy, r;

        r = ctl_bus_open(o, &bus);
        if (r != CTL_EXIT_OK)
                return r;
        r = ctl_new_call(bus, "Await", &call);
        if (r != CTL_EXIT_OK)
                return r;
        r = sd_bus_message_append(call, "s", unit);
        if (r < 0) {
                log_error_errno(r, "Cannot pass '%s' to thpd: %m", unit);
                return CTL_EXIT_USAGE;
        }

        r = sd_bus_call(bus, call, timeout, &error, &reply);
        if (r < 0 && (r == -ETIMEDOUT || sd_bus_error_has_name(&error, SD_BUS_ERROR_NO_REPLY))) {
                g_autofree char *d = ctl_format_duration(timeout);

                log_error("thpd has not applied the policy for %s within %s; giving up.", unit, d);
                return CTL_EXIT_FAILURE;
        }
        if (r < 0) {
                g_autofree char *what = g_strdup_printf("wait for the policy of %s", unit);

                return ctl_log_bus_error(o, &error, r, what);
        }
        r = sd_bus_message_read(reply, "bs", &has_policy, &policy);
        if (r < 0) {
                log_error_errno(r, "Cannot parse thpd's answer: %m");
                return CTL_EXIT_FAILURE;
        }

        if (o->json) {
                g_autoptr(CtlJson) b = ctl_json_new();

                ctl_json_begin_object(b, NULL);
                ctl_json_string(b, "unit", unit);
                ctl_json_string(b, "policy", has_policy ? policy : NULL);
                ctl_json_end_object(b);
                return ctl_json_print(b, out->f);
        }
        return CTL_EXIT_OK;
}
