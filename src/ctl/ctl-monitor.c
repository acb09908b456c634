/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <signal.h>
#include <systemd/sd-event.h>

#include "ctl-bus.h"
#include "ctl-format.h"
#include "ctl-json.h"
#include "ctl-properties.h"
#include "ctl-table.h"
#include "log.h"
#include "util.h"

typedef struct Monitor {
        const CtlOptions *o;
        CtlOutput *out;
        bool write_failed;
} Monitor;

/* Starts a text line with the local time; or a JSON line with the event's common fields, whose
 * builder it returns. */
static CtlJson *begin_event(Monitor *mon, const char *name) {
        uint64_t now = ctl_now_usec();
        g_autofree char *clock = NULL;
        CtlJson *b;

        if (mon->o->json) {
                b = ctl_json_new();
                ctl_json_begin_object(b, NULL);
                ctl_json_string(b, "signal", name);
                ctl_json_time(b, "time", now);
                return b;
        }

        clock = ctl_format_clock(now);
        ctl_printf(mon->out, "%s%s%s %s%s%s", ctl_color(CTL_COLOR_GREY), clock, ctl_color(CTL_COLOR_NORMAL),
                   ctl_color(CTL_COLOR_BOLD), name, ctl_color(CTL_COLOR_NORMAL));
        return NULL;
}

static void end_event(Monitor *mon, CtlJson *b) {
        if (mon->o->json) {
                ctl_json_end_object(b);
                if (ctl_json_print(b, mon->out->f) != CTL_EXIT_OK)
                        mon->write_failed = true;
                return;
        }
        ctl_printf(mon->out, "\n");
        if (ctl_output_flush(mon->out) < 0)
                mon->write_failed = true;
}

/* A member of the JSON of a signal's rows: its key (NULL: only the text shows it), and whether ""
 * on the bus is null there. */
typedef struct Member {
        const char *key;
        bool null_if_empty;
} Member;

/* Reads the rest of an array of rows of strings, contents "ss...", into values, a row's strings
 * after each other, borrowed from m; the rows read before an error stay. */
static int read_string_rows(sd_bus_message *m, const char *contents, GPtrArray *values) {
        size_t n = strlen(contents);
        g_autofree const char **row = g_new0(const char *, n);
        int r;

        while ((r = sd_bus_message_enter_container(m, 'r', contents)) > 0) {
                for (size_t i = 0; r >= 0 && i < n; i++)
                        r = sd_bus_message_read_basic(m, 's', &row[i]);
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
                for (size_t i = 0; i < n; i++)
                        g_ptr_array_add(values, (gpointer) row[i]);
        }
        return r;
}

/* The rows as an array of objects under key, one member a column. */
static void rows_to_json(CtlJson *b, const char *key, const Member *members, size_t n, GPtrArray *values) {
        g_autoptr(CtlTable) t = ctl_table_new();

        for (size_t i = 0; i < n; i++)
                ctl_table_add_column(t, NULL, members[i].key);
        for (guint i = 0; i < values->len; i++) {
                const char *value = g_ptr_array_index(values, i);

                ctl_table_add_string(t, members[i % n].null_if_empty ? empty_to_null(value) : value);
        }
        ctl_table_to_json(t, b, key);
}

/* Reads a signal that is an array of rows of strings, then writes its event: the rows as JSON
 * under key, or each as text through print_row(), which gets the row's index and its strings. */
static int on_string_rows(sd_bus_message *m, Monitor *mon, const char *name, const char *key, const Member *members, size_t n,
                          void (*print_row)(CtlOutput *out, guint index, const char *const *row)) {
        g_autofree char *contents = g_strnfill(n, 's'), *signature = g_strdup_printf("(%s)", contents);
        g_autoptr(GPtrArray) values = g_ptr_array_new();
        g_autoptr(CtlJson) b = NULL;
        int r;

        r = sd_bus_message_enter_container(m, 'a', signature);
        if (r < 0)
                return r;
        r = read_string_rows(m, contents, values);
        b = begin_event(mon, name);
        if (mon->o->json)
                rows_to_json(b, key, members, n, values);
        else
                for (guint i = 0; i < values->len / n; i++)
                        print_row(mon->out, i, (const char *const *) values->pdata + i * n);
        end_event(mon, b);
        return r;
}

static void print_applied(CtlOutput *out, guint index, const char *const *row) {
        ctl_printf(out, "%s %s %s %s %s (%s)", index == 0 ? ":" : ";", row[0], row[1], ctl_glyph(CTL_GLYPH_ARROW), row[2], row[3]);
}

/* (knob, old, new, reason) */
static int on_applied(sd_bus_message *m, Monitor *mon) {
        static const Member members[] = { { "knob", false }, { "old", true }, { "new", true }, { "reason", false } };

        return on_string_rows(m, mon, "Applied", "changes", members, ELEMENTSOF(members), print_applied);
}

static void print_drift(CtlOutput *out, guint index, const char *const *row) {
        ctl_printf(out, "%s %s=%s instead of %s, %s; %s", index == 0 ? ":" : ";", row[0], row[2], row[1], row[5], row[4]);
}

/* (knob, expected, found, writer, action, text); JSON leaves the text out. */
static int on_drift(sd_bus_message *m, Monitor *mon) {
        static const Member members[] = {
                { "knob", false }, { "expected", true }, { "found", true }, { "writer", true }, { "action", false }, { NULL, false },
        };

        return on_string_rows(m, mon, "Drift", "drift", members, ELEMENTSOF(members), print_drift);
}

static int on_storm_detected(sd_bus_message *m, Monitor *mon) {
        const char *kind, *name;
        double value;
        g_autoptr(CtlJson) b = NULL;
        int r;

        r = sd_bus_message_read(m, "s", &kind);
        if (r >= 0)
                r = sd_bus_message_enter_container(m, 'a', "{sd}");
        if (r < 0)
                return r;
        b = begin_event(mon, "StormDetected");
        if (mon->o->json) {
                ctl_json_string(b, "kind", kind);
                ctl_json_begin_object(b, "figures");
        } else
                ctl_printf(mon->out, ": %s%s storm%s", ctl_color(CTL_COLOR_RED), kind, ctl_color(CTL_COLOR_NORMAL));
        for (unsigned n = 0; (r = sd_bus_message_read(m, "{sd}", &name, &value)) > 0; n++) {
                char buf[G_ASCII_DTOSTR_BUF_SIZE];

                if (mon->o->json)
                        ctl_json_double(b, name, value);
                else
                        ctl_printf(mon->out, "%s%s=%s", n == 0 ? " (" : ", ", name, g_ascii_formatd(buf, sizeof buf, "%.3g", value));
        }
        if (mon->o->json)
                ctl_json_end_object(b);
        else if (r >= 0)
                ctl_printf(mon->out, ")");
        end_event(mon, b);
        return r;
}

static int on_storm_cleared(sd_bus_message *m, Monitor *mon) {
        const char *kind;
        uint64_t duration;
        g_autoptr(CtlJson) b = NULL;
        int r;

        r = sd_bus_message_read(m, "st", &kind, &duration);
        if (r < 0)
                return r;
        b = begin_event(mon, "StormCleared");
        if (mon->o->json) {
                ctl_json_string(b, "kind", kind);
                ctl_json_uint(b, "duration_usec", duration);
        } else {
                g_autofree char *d = ctl_format_duration(duration);

                ctl_printf(mon->out, ": %s storm over after %s", kind, d);
        }
        end_event(mon, b);
        return 0;
}

/* Names the properties that changed, and shows the new Status line. */
static int on_properties_changed(sd_bus_message *m, Monitor *mon) {
        g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
        g_autofree char *status = NULL;
        const char *interface, *name;
        g_autoptr(CtlJson) b = NULL;
        int r;

        r = sd_bus_message_read(m, "s", &interface);
        if (r < 0 || !streq(interface, THPD_BUS_INTERFACE))
                return r;
        r = sd_bus_message_enter_container(m, 'a', "{sv}");
        while (r >= 0 && (r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                r = sd_bus_message_read(m, "s", &name);
                if (r < 0)
                        break;
                /* As JSON names it elsewhere; a property of a newer daemon keeps its D-Bus name. */
                g_ptr_array_add(names, g_strdup(mon->o->json && ctl_property_json_key(name) ? ctl_property_json_key(name)
                                                                                             : name));
                if (streq(name, "Status")) {
                        const char *s;

                        r = sd_bus_message_read(m, "v", "s", &s);
                        status = g_strdup(s);
                } else
                        r = sd_bus_message_skip(m, "v");
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
        }
        if (r < 0)
                return r;

        b = begin_event(mon, "PropertiesChanged");
        if (mon->o->json) {
                ctl_json_begin_array(b, "changed");
                for (guint i = 0; i < names->len; i++)
                        ctl_json_string(b, NULL, g_ptr_array_index(names, i));
                ctl_json_end_array(b);
                if (status)
                        ctl_json_string(b, "status", status);
        } else {
                g_ptr_array_add(names, NULL);
                g_autofree char *joined = g_strjoinv(", ", (char **) names->pdata);

                ctl_printf(mon->out, ": %s", joined);
                if (status)
                        ctl_printf(mon->out, " (now: %s)", status);
        }
        end_event(mon, b);
        return 0;
}

static int on_signal(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        Monitor *mon = userdata;
        const char *member = sd_bus_message_get_member(m);
        int r = 0;

        if (sd_bus_message_is_signal(m, THPD_BUS_INTERFACE, "Applied"))
                r = on_applied(m, mon);
        else if (sd_bus_message_is_signal(m, THPD_BUS_INTERFACE, "StormDetected"))
                r = on_storm_detected(m, mon);
        else if (sd_bus_message_is_signal(m, THPD_BUS_INTERFACE, "StormCleared"))
                r = on_storm_cleared(m, mon);
        else if (sd_bus_message_is_signal(m, THPD_BUS_INTERFACE, "Drift"))
                r = on_drift(m, mon);
        else if (sd_bus_message_is_signal(m, "org.freedesktop.DBus.Properties", "PropertiesChanged"))
                r = on_properties_changed(m, mon);
        if (r < 0)
                log_warning_errno(r, "Cannot read thpd's %s signal: %m", member);
        if (mon->write_failed)
                return sd_event_exit(sd_bus_get_event(sd_bus_message_get_bus(m)), CTL_EXIT_FAILURE);
        return 0;
}

static int on_owner_changed(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        Monitor *mon = userdata;
        const char *name, *old_owner, *new_owner;
        g_autoptr(CtlJson) b = NULL;

        if (sd_bus_message_read(m, "sss", &name, &old_owner, &new_owner) < 0)
                return 0;
        b = begin_event(mon, new_owner[0] ? "Started" : "Stopped");
        if (!mon->o->json)
                ctl_printf(mon->out, ": %s", new_owner[0] ? "thpd is on the bus" : "thpd left the bus; waiting for it to come back");
        end_event(mon, b);
        return 0;
}

static int on_exit_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        return sd_event_exit(sd_event_source_get_event(s), CTL_EXIT_OK);
}

int verb_monitor(const CtlOptions *o, CtlOutput *out, int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_event_unrefp) sd_event *event = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        Monitor mon = { .o = o, .out = out };
        sigset_t mask;
        int r, code;

        r = ctl_bus_open(o, &bus);
        if (r != CTL_EXIT_OK)
                return r;

        /* Matches first, then the daemon check: nothing that happens after the check is missed. */
        r = sd_bus_match_signal(bus, NULL, THPD_BUS_NAME, THPD_BUS_PATH, THPD_BUS_INTERFACE, NULL, on_signal, &mon);
        if (r >= 0)
                r = sd_bus_match_signal(bus, NULL, THPD_BUS_NAME, THPD_BUS_PATH, "org.freedesktop.DBus.Properties",
                                        "PropertiesChanged", on_signal, &mon);
        if (r >= 0)
                r = sd_bus_add_match(bus, NULL,
                                     "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',"
                                     "member='NameOwnerChanged',arg0='" THPD_BUS_NAME "'",
                                     on_owner_changed, &mon);
        if (r < 0) {
                log_error_errno(r, "Cannot subscribe to thpd's signals: %m");
                return CTL_EXIT_FAILURE;
        }
        r = sd_bus_call_method(bus, THPD_BUS_NAME, THPD_BUS_PATH, "org.freedesktop.DBus.Peer", "Ping", &error, NULL, NULL);
        if (r < 0)
                return ctl_log_bus_error(o, &error, r, "reach thpd");

        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        r = sd_event_default(&event);
        if (r >= 0)
                r = sd_event_add_signal(event, NULL, SIGINT, on_exit_signal, NULL);
        if (r >= 0)
                r = sd_event_add_signal(event, NULL, SIGTERM, on_exit_signal, NULL);
        if (r >= 0)
                r = sd_bus_attach_event(bus, event, SD_EVENT_PRIORITY_NORMAL);
        if (r >= 0)
                r = sd_bus_set_exit_on_disconnect(bus, true);
        if (r < 0) {
                log_error_errno(r, "Cannot set up the event loop: %m");
                return CTL_EXIT_FAILURE;
        }

        fprintf(stderr, "Following thpd's signals; press Ctrl-C to stop.\n");
        r = sd_event_loop(event);
        if (r < 0) {
                log_error_errno(r, "The event loop failed: %m");
                return CTL_EXIT_FAILURE;
        }
        code = r;
        if (code != CTL_EXIT_OK && !mon.write_failed)
                log_error("Lost the connection to the bus.");
        return code == CTL_EXIT_OK ? CTL_EXIT_OK : CTL_EXIT_FAILURE;
}
