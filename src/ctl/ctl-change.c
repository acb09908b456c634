/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <time.h>

#include "ctl-bus.h"
#include "ctl-format.h"
#include "ctl-properties.h"
#include "log.h"
#include "util.h"

/* Reload answers once the policies are re-read, so PolicyDiagnostics then describes this reload:
 * a broken file is shown and fails the command, which "systemctl reload thpd" passes on. */
int verb_reload(const CtlOptions *o, CtlOutput *out, int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        g_autoptr(GArray) diagnostics = NULL;
        unsigned errors;
        int r;

        r = ctl_bus_open(o, &bus);
        if (r != CTL_EXIT_OK)
                return r;
        r = ctl_call(o, bus, "Reload", 0, "reload thpd", NULL, NULL);
        if (r != CTL_EXIT_OK)
                return r;
        r = ctl_get_diagnostics(o, bus, &diagnostics);
        if (r != CTL_EXIT_OK)
                return r;

        ctl_print_diagnostics(CTL_OUTPUT_UNCUT(stderr), diagnostics, "");
        errors = ctl_count_errors(diagnostics);
        if (errors > 0) {
                log_error("thpd reloaded, but %u problem%s keep%s policies from loading; the others apply.", errors,
                          errors == 1 ? "" : "s", errors == 1 ? "s" : "");
                return CTL_EXIT_FAILURE;
        }
        return CTL_EXIT_OK;
}

static int clear_override(const CtlOptions *o, int argc) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        int r;

        if (argc > 0 || o->has_for || o->replace)
                return ctl_usage_error("override --clear takes no KNOB=VALUE, --for or --replace.");
        r = ctl_bus_open(o, &bus);
        if (r != CTL_EXIT_OK)
                return r;
        return ctl_call(o, bus, "ClearOverride", 0, "clear the override", NULL, NULL);
}

/* Adds KNOB=VALUE to values, replacing an earlier value of the same knob. */
static void set_value(GPtrArray *knobs, GPtrArray *values, const char *knob, const char *value) {
        for (guint i = 0; i < knobs->len; i++)
                if (streq(g_ptr_array_index(knobs, i), knob)) {
                        g_free(g_ptr_array_index(values, i));
                        g_ptr_array_index(values, i) = g_strdup(value);
                        return;
                }
        g_ptr_array_add(knobs, g_strdup(knob));
        g_ptr_array_add(values, g_strdup(value));
}

/* Prints the override in force, as status shows it. */
static int print_override(const CtlOptions *o, CtlOutput *out, sd_bus *bus) {
        CtlProperties p;
        g_autoptr(GString) values = g_string_new(NULL);
        int r;

        r = ctl_get_properties(o, bus, &p);
        if (r != CTL_EXIT_OK)
                return r;
        for (guint i = 0; i < p.override->len; i++) {
                const CtlPair *pair = &g_array_index(p.override, CtlPair, i);

                g_string_append_printf(values, " %s=%s", pair->key, pair->value);
        }
        if (p.override_expires_at > 0) {
                g_autofree char *when = ctl_format_timestamp(p.override_expires_at);

                ctl_printf(out, "Override:%s until %s\n", values->str, when);
        } else
                ctl_printf(out, "Override:%s until cleared\n", values->str);
        ctl_properties_done(&p);
        return ctl_output_flush(out) == 0 ? CTL_EXIT_OK : CTL_EXIT_FAILURE;
}

/* The override is one set with one end. KNOB=VALUE adds to the set in force (--replace: starts a
 * new one); --for= sets when the whole set ends, and without it the set keeps the end it had. */
int verb_override(const CtlOptions *o, CtlOutput *out, int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;
        g_autoptr(GPtrArray) knobs = g_ptr_array_new_with_free_func(g_free);
        g_autoptr(GPtrArray) values = g_ptr_array_new_with_free_func(g_free);
        uint64_t duration = o->has_for ? o->for_usec : 0;
        int r;

        if (o->clear)
                return clear_override(o, argc);
        if (argc == 0)
                return ctl_usage_error("override needs KNOB=VALUE (e.g. enabled=never), or --clear.");
        for (int i = 0; i < argc; i++) {
                const char *eq = strchr(argv[i], '=');

                if (!eq || eq == argv[i] || eq[1] == '\0')
                        return ctl_usage_error("'%s' is not KNOB=VALUE (e.g. enabled=never).", argv[i]);
                for (int j = 0; j < i; j++)
                        if (strncmp(argv[j], argv[i], (size_t) (eq - argv[i]) + 1) == 0)
                                return ctl_usage_error("%.*s is given more than once.", (int) (eq - argv[i]), argv[i]);
        }

        r = ctl_bus_open(o, &bus);
        if (r != CTL_EXIT_OK)
                return r;

        if (!o->replace) {
                CtlProperties p;
                uint64_t now = now_usec(CLOCK_REALTIME);

                r = ctl_get_properties(o, bus, &p);
                if (r != CTL_EXIT_OK)
                        return r;
                /* An override about to end is not worth keeping. */
                if (p.override_expires_at == 0 || p.override_expires_at > now) {
                        for (guint i = 0; i < p.override->len; i++) {
                                const CtlPair *pair = &g_array_index(p.override, CtlPair, i);

                                set_value(knobs, values, pair->key, pair->value);
                        }
                        if (!o->has_for && p.override->len > 0 && p.override_expires_at > 0)
                                duration = p.override_expires_at - now;
                }
                ctl_properties_done(&p);
        }
        for (int i = 0; i < argc; i++) {
                g_autofree char *knob = g_strndup(argv[i], (gsize) (strchr(argv[i], '=') - argv[i]));

                set_value(knobs, values, knob, strchr(argv[i], '=') + 1);
        }

        r = ctl_new_call(bus, "SetOverride", &call);
        if (r != CTL_EXIT_OK)
                return r;
        r = sd_bus_message_open_container(call, 'a', "{ss}");
        for (guint i = 0; r >= 0 && i < knobs->len; i++)
                r = sd_bus_message_append(call, "{ss}", (const char *) g_ptr_array_index(knobs, i),
                                          (const char *) g_ptr_array_index(values, i));
        if (r >= 0)
                r = sd_bus_message_close_container(call);
        if (r >= 0)
                r = sd_bus_message_append(call, "t", duration);
        if (r < 0)
                /* Not UTF-8, typically: D-Bus strings must be. */
                return ctl_usage_error("Cannot pass these values to thpd: %s.", strerror(-r));
        r = ctl_call_message(o, bus, call, 0, "set the override", NULL);
        if (r != CTL_EXIT_OK)
                return r;
        return print_override(o, out, bus);
}
