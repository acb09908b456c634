/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "ctl-bus.h"
#include "log.h"
#include "util.h"

int verb_reload(const CtlOptions *o, int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        int r;

        r = ctl_bus_open(o, &bus);
        if (r != CTL_EXIT_OK)
                return r;
        return ctl_call(o, bus, "Reload", 0, "reload thpd", NULL, NULL);
}

static int clear_override(const CtlOptions *o, int argc) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        int r;

        if (argc > 0 || o->has_for) {
                log_error("override --clear takes no KNOB=VALUE and no --for.");
                return CTL_EXIT_USAGE;
        }
        r = ctl_bus_open(o, &bus);
        if (r != CTL_EXIT_OK)
                return r;
        return ctl_call(o, bus, "ClearOverride", 0, "clear the override", NULL, NULL);
}

int verb_override(const CtlOptions *o, int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;
        int r;

        if (o->clear)
                return clear_override(o, argc);
        if (argc == 0) {
                log_error("override needs KNOB=VALUE (e.g. enabled=never), or --clear.");
                return CTL_EXIT_USAGE;
        }
        for (int i = 0; i < argc; i++) {
                const char *eq = strchr(argv[i], '=');

                if (!eq || eq == argv[i] || eq[1] == '\0') {
                        log_error("'%s' is not KNOB=VALUE (e.g. enabled=never).", argv[i]);
                        return CTL_EXIT_USAGE;
                }
        }

        r = ctl_bus_open(o, &bus);
        if (r != CTL_EXIT_OK)
                return r;
        r = ctl_new_call(bus, "SetOverride", &call);
        if (r != CTL_EXIT_OK)
                return r;

        r = sd_bus_message_open_container(call, 'a', "{ss}");
        for (int i = 0; r >= 0 && i < argc; i++) {
                g_autofree char *knob = g_strndup(argv[i], (gsize) (strchr(argv[i], '=') - argv[i]));

                r = sd_bus_message_append(call, "{ss}", knob, strchr(argv[i], '=') + 1);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(call);
        if (r >= 0)
                r = sd_bus_message_append(call, "t", o->has_for ? o->for_usec : UINT64_C(0));
        if (r < 0) {
                /* Not UTF-8, typically: D-Bus strings must be. */
                log_error("Cannot pass these values to thpd: %s", strerror(-r));
                return CTL_EXIT_USAGE;
        }
        return ctl_call_message(o, bus, call, 0, "set the override", NULL);
}
