/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <langinfo.h>
#include <math.h>
#include <sys/ioctl.h>
#include <systemd/sd-daemon.h>
#include <time.h>

#include "ctl-bus.h"
#include "log.h"
#include "util.h"

#define USEC_PER_SEC UINT64_C(1000000)

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
                log_error("Cannot connect to the %s bus: %s", o->user ? "session" : "system", strerror(-r));
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
                                      "org.freedesktop.systemd1.NoSuchUnit", "org.freedesktop.systemd1.UnitMasked") ||
               (e->name && g_str_has_prefix(e->name, "org.freedesktop.DBus.Error.Spawn."));
}

/* thpd refused an argument the user typed: the command line is wrong, as with a local check. */
static bool error_means_usage(const sd_bus_error *e) {
        return sd_bus_error_has_names(e, "org.thpd1.Error.UnknownKnob", "org.thpd1.Error.InvalidValue",
                                      "org.thpd1.Error.InvalidDuration", SD_BUS_ERROR_INVALID_ARGS);
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
                log_error("Cannot %s: %s", what, strerror(-r));
        return CTL_EXIT_FAILURE;
}

int ctl_new_call(sd_bus *bus, const char *method, sd_bus_message **ret) {
        int r;

        r = sd_bus_message_new_method_call(bus, ret, THPD_BUS_NAME, THPD_BUS_PATH, THPD_BUS_INTERFACE, method);
        if (r < 0) {
                log_error("Cannot build the %s call: %s", method, strerror(-r));
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
                        log_error("Cannot build the %s call: %s", method, strerror(-r));
                        return CTL_EXIT_FAILURE;
                }
        }
        return ctl_call_message(o, bus, call, timeout_usec, what, ret_reply);
}

/* ---- properties ---- */

const char *const ctl_property_names[] = {
        "Version", "Status", "Knobs", "ActivePolicies", "HugeTLBPools", "NeedsRestart", "IsolatedServices", "Override",
        "OverrideExpiresAt", "StormState", "StormAction", "Storms", "PolicyDiagnostics", NULL,
};

/* JSON keys are snake_case everywhere, so a property's key is not derived from its name. */
static const struct {
        const char *name, *key;
} property_keys[] = {
        { "Version", "version" },
        { "Status", "status" },
        { "Knobs", "knobs" },
        { "ActivePolicies", "active_policies" },
        { "HugeTLBPools", "hugetlb_pools" },
        { "NeedsRestart", "needs_restart" },
        { "IsolatedServices", "isolated_services" },
        { "Override", "override" },
        { "OverrideExpiresAt", "override_expires_at" },
        { "StormState", "storm_state" },
        { "StormAction", "storm_action" },
        { "Storms", "storms" },
        { "PolicyDiagnostics", "policy_diagnostics" },
};

const char *ctl_property_json_key(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(property_keys); i++)
                if (streq(property_keys[i].name, name))
                        return property_keys[i].key;
        return NULL;
}

static void knob_clear(gpointer p) {
        CtlKnob *k = p;

        g_free(k->name);
        g_free(k->applied);
        g_free(k->target);
        g_free(k->baseline);
        g_free(k->source);
        g_free(k->policy);
        g_free(k->unit);
}

static void active_policy_clear(gpointer p) {
        CtlActivePolicy *a = p;

        g_free(a->name);
        g_strfreev(a->units);
}

static void pool_clear(gpointer p) {
        g_free(((CtlPool *) p)->shortfall);
}

static void pair_clear(gpointer p) {
        CtlPair *pair = p;

        g_free(pair->key);
        g_free(pair->value);
}

static void figure_clear(gpointer p) {
        g_free(((CtlFigure *) p)->name);
}

static void diagnostic_clear(gpointer p) {
        CtlDiagnostic *d = p;

        g_free(d->policy);
        g_free(d->file);
        g_free(d->severity);
        g_free(d->message);
}

static void storm_clear(gpointer p) {
        CtlStorm *s = p;

        g_free(s->kind);
        g_free(s->phase);
        g_array_unref(s->figures);
}

static GArray *array_new(size_t element_size, GDestroyNotify clear) {
        GArray *a = g_array_new(FALSE, TRUE, (guint) element_size);

        g_array_set_clear_func(a, clear);
        return a;
}

void ctl_properties_clear(CtlProperties *p) {
        g_clear_pointer(&p->version, g_free);
        g_clear_pointer(&p->status, g_free);
        g_clear_pointer(&p->storm_state, g_free);
        g_clear_pointer(&p->storm_action, g_free);
        g_clear_pointer(&p->knobs, g_array_unref);
        g_clear_pointer(&p->active_policies, g_array_unref);
        g_clear_pointer(&p->pools, g_array_unref);
        g_clear_pointer(&p->needs_restart, g_array_unref);
        g_clear_pointer(&p->isolated, g_array_unref);
        g_clear_pointer(&p->override, g_array_unref);
        g_clear_pointer(&p->storms, g_array_unref);
        g_clear_pointer(&p->diagnostics, g_array_unref);
}

static int read_string(sd_bus_message *m, char **ret) {
        const char *s;
        int r;

        r = sd_bus_message_read(m, "s", &s);
        if (r < 0)
                return r;
        *ret = g_strdup(s);
        return 0;
}

static int read_knobs(sd_bus_message *m, GArray *knobs) {
        const char *v[7];
        int r;

        r = sd_bus_message_enter_container(m, 'a', "(sssssss)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(m, "(sssssss)", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6])) > 0) {
                CtlKnob k = {
                        .name = g_strdup(v[0]), .applied = g_strdup(v[1]), .target = g_strdup(v[2]),
                        .baseline = g_strdup(v[3]), .source = g_strdup(v[4]), .policy = g_strdup(v[5]),
                        .unit = g_strdup(v[6]),
                };
                g_array_append_val(knobs, k);
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

static int read_active_policies(sd_bus_message *m, GArray *policies) {
        int r;

        r = sd_bus_message_enter_container(m, 'a', "(sas)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(m, 'r', "sas")) > 0) {
                CtlActivePolicy a = {};

                r = read_string(m, &a.name);
                if (r >= 0)
                        r = sd_bus_message_read_strv(m, &a.units);
                g_array_append_val(policies, a);
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

static int read_pools(sd_bus_message *m, GArray *pools) {
        const char *shortfall;
        CtlPool p;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "(tittts)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(m, "(tittts)", &p.page_size_kb, &p.node, &p.target, &p.allocated, &p.free,
                                        &shortfall)) > 0) {
                p.shortfall = g_strdup(shortfall);
                g_array_append_val(pools, p);
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

/* element: "(ss)" or "{ss}", two strings either way. */
static int read_pairs(sd_bus_message *m, const char *element, GArray *pairs) {
        const char *key, *value;
        int r;

        r = sd_bus_message_enter_container(m, 'a', element);
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(m, element, &key, &value)) > 0) {
                CtlPair p = { .key = g_strdup(key), .value = g_strdup(value) };

                g_array_append_val(pairs, p);
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

static void isolation_clear(gpointer p) {
        CtlIsolation *i = p;

        g_free(i->unit);
        g_free(i->policy);
        g_free(i->thp);
        g_free(i->state);
        g_free(i->note);
}

static int read_isolated(sd_bus_message *m, GArray *isolated) {
        const char *unit, *policy, *thp, *state, *note;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "(sssss)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(m, "(sssss)", &unit, &policy, &thp, &state, &note)) > 0) {
                CtlIsolation i = {
                        .unit = g_strdup(unit),
                        .policy = g_strdup(policy),
                        .thp = g_strdup(thp),
                        .state = g_strdup(state),
                        .note = g_strdup(note),
                };

                g_array_append_val(isolated, i);
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

static int read_figures(sd_bus_message *m, GArray *figures) {
        const char *name;
        double value;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "{sd}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(m, "{sd}", &name, &value)) > 0) {
                CtlFigure f = { .name = g_strdup(name), .value = value };

                g_array_append_val(figures, f);
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

static int read_storms(sd_bus_message *m, GArray *storms) {
        int r;

        r = sd_bus_message_enter_container(m, 'a', "(ssa{sd})");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(m, 'r', "ssa{sd}")) > 0) {
                CtlStorm s = { .figures = array_new(sizeof(CtlFigure), figure_clear) };

                r = read_string(m, &s.kind);
                if (r >= 0)
                        r = read_string(m, &s.phase);
                if (r >= 0)
                        r = read_figures(m, s.figures);
                g_array_append_val(storms, s);
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

#define DIAGNOSTICS_SIGNATURE "a(ssuss)"

static int read_diagnostics(sd_bus_message *m, GArray *diagnostics) {
        const char *policy, *file, *severity, *message;
        uint32_t line;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "(ssuss)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(m, "(ssuss)", &policy, &file, &line, &severity, &message)) > 0) {
                CtlDiagnostic d = {
                        .policy = policy[0] ? g_strdup(policy) : NULL, .file = g_strdup(file), .line = line,
                        .severity = g_strdup(severity), .message = g_strdup(message),
                };

                g_array_append_val(diagnostics, d);
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

static GArray *diagnostics_new(void) {
        return array_new(sizeof(CtlDiagnostic), diagnostic_clear);
}

static int read_property(sd_bus_message *m, const char *name, CtlProperties *p) {
        const char *contents;
        int r;

        r = sd_bus_message_peek_type(m, NULL, &contents);
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(m, 'v', contents);
        if (r < 0)
                return r;

        if (streq(name, "Version") && streq(contents, "s"))
                r = read_string(m, &p->version);
        else if (streq(name, "Status") && streq(contents, "s"))
                r = read_string(m, &p->status);
        else if (streq(name, "StormState") && streq(contents, "s"))
                r = read_string(m, &p->storm_state);
        else if (streq(name, "StormAction") && streq(contents, "s"))
                r = read_string(m, &p->storm_action);
        else if (streq(name, "OverrideExpiresAt") && streq(contents, "t"))
                r = sd_bus_message_read(m, "t", &p->override_expires_at);
        else if (streq(name, "Knobs") && streq(contents, "a(sssssss)"))
                r = read_knobs(m, p->knobs);
        else if (streq(name, "ActivePolicies") && streq(contents, "a(sas)"))
                r = read_active_policies(m, p->active_policies);
        else if (streq(name, "HugeTLBPools") && streq(contents, "a(tittts)"))
                r = read_pools(m, p->pools);
        else if (streq(name, "NeedsRestart") && streq(contents, "a(ss)"))
                r = read_pairs(m, "(ss)", p->needs_restart);
        else if (streq(name, "IsolatedServices") && streq(contents, "a(sssss)"))
                r = read_isolated(m, p->isolated);
        else if (streq(name, "Override") && streq(contents, "a{ss}"))
                r = read_pairs(m, "{ss}", p->override);
        else if (streq(name, "Storms") && streq(contents, "a(ssa{sd})"))
                r = read_storms(m, p->storms);
        else if (streq(name, "PolicyDiagnostics") && streq(contents, DIAGNOSTICS_SIGNATURE))
                r = read_diagnostics(m, p->diagnostics);
        else
                /* A property from a newer daemon: not ours to show. */
                r = sd_bus_message_skip(m, contents);
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

int ctl_get_properties(const CtlOptions *o, sd_bus *bus, CtlProperties *ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        CtlProperties p = {
                .knobs = array_new(sizeof(CtlKnob), knob_clear),
                .active_policies = array_new(sizeof(CtlActivePolicy), active_policy_clear),
                .pools = array_new(sizeof(CtlPool), pool_clear),
                .needs_restart = array_new(sizeof(CtlPair), pair_clear),
                .isolated = array_new(sizeof(CtlIsolation), isolation_clear),
                .override = array_new(sizeof(CtlPair), pair_clear),
                .storms = array_new(sizeof(CtlStorm), storm_clear),
                .diagnostics = diagnostics_new(),
        };
        const char *name;
        int r;

        r = sd_bus_call_method(bus, THPD_BUS_NAME, THPD_BUS_PATH, "org.freedesktop.DBus.Properties", "GetAll", &error,
                               &reply, "s", THPD_BUS_INTERFACE);
        if (r < 0) {
                ctl_properties_clear(&p);
                return ctl_log_bus_error(o, &error, r, "read thpd's state");
        }

        r = sd_bus_message_enter_container(reply, 'a', "{sv}");
        while (r >= 0 && (r = sd_bus_message_enter_container(reply, 'e', "sv")) > 0) {
                r = sd_bus_message_read(reply, "s", &name);
                if (r >= 0)
                        r = read_property(reply, name, &p);
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
        }
        if (r < 0) {
                ctl_properties_clear(&p);
                log_error("Cannot parse thpd's state: %s", strerror(-r));
                return CTL_EXIT_FAILURE;
        }

        *ret = p;
        return CTL_EXIT_OK;
}

int ctl_get_diagnostics(const CtlOptions *o, sd_bus *bus, GArray **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        g_autoptr(GArray) diagnostics = diagnostics_new();
        int r;

        r = sd_bus_call_method(bus, THPD_BUS_NAME, THPD_BUS_PATH, "org.freedesktop.DBus.Properties", "Get", &error,
                               &reply, "ss", THPD_BUS_INTERFACE, "PolicyDiagnostics");
        if (r < 0)
                return ctl_log_bus_error(o, &error, r, "read thpd's policy diagnostics");
        r = sd_bus_message_enter_container(reply, 'v', DIAGNOSTICS_SIGNATURE);
        if (r >= 0)
                r = read_diagnostics(reply, diagnostics);
        if (r < 0) {
                log_error("Cannot parse thpd's policy diagnostics: %s", strerror(-r));
                return CTL_EXIT_FAILURE;
        }
        *ret = TAKE_PTR(diagnostics);
        return CTL_EXIT_OK;
}

char *ctl_diagnostic_format(const CtlDiagnostic *d) {
        if (d->line > 0)
                return g_strdup_printf("%s:%u: %s: %s", d->file, d->line, d->severity, d->message);
        return g_strdup_printf("%s: %s: %s", d->file, d->severity, d->message);
}

static bool is_error(const CtlDiagnostic *d) {
        return streq(d->severity, "error");
}

unsigned ctl_count_errors(GArray *diagnostics) {
        unsigned n = 0;

        for (guint i = 0; i < diagnostics->len; i++)
                n += is_error(&g_array_index(diagnostics, CtlDiagnostic, i));
        return n;
}

void ctl_print_diagnostics(FILE *f, GArray *diagnostics, const char *indent) {
        for (guint i = 0; i < diagnostics->len; i++) {
                const CtlDiagnostic *d = &g_array_index(diagnostics, CtlDiagnostic, i);
                g_autofree char *text = ctl_diagnostic_format(d);
                /* Colour is decided for stdout; stderr gets it only when it is the same terminal. */
                bool color = f == stdout || isatty(fileno(f));

                fprintf(f, "%s%s%s%s\n", indent, color ? ctl_color(is_error(d) ? CTL_COLOR_RED : CTL_COLOR_YELLOW) : "",
                        text, color ? ctl_color(CTL_COLOR_NORMAL) : "");
        }
}

/* ---- JSON ---- */

void json_init(Json *j) {
        *j = (Json) { .out = g_string_new(NULL) };
}

static void append_escaped(GString *out, const char *value) {
        g_autofree char *valid = g_utf8_make_valid(value ?: "", -1);

        g_string_append_c(out, '"');
        for (const unsigned char *c = (const unsigned char *) valid; *c; c++)
                switch (*c) {
                case '"':
                        g_string_append(out, "\\\"");
                        break;
                case '\\':
                        g_string_append(out, "\\\\");
                        break;
                case '\n':
                        g_string_append(out, "\\n");
                        break;
                case '\t':
                        g_string_append(out, "\\t");
                        break;
                default:
                        if (*c < 0x20 || *c == 0x7f)
                                g_string_append_printf(out, "\\u%04x", *c);
                        else
                                g_string_append_c(out, (char) *c);
                }
        g_string_append_c(out, '"');
}

static void json_prefix(Json *j, const char *key) {
        if (j->need_comma)
                g_string_append_c(j->out, ',');
        if (key) {
                append_escaped(j->out, key);
                g_string_append_c(j->out, ':');
        }
        j->need_comma = false;
}

void json_begin_object(Json *j, const char *key) {
        json_prefix(j, key);
        g_string_append_c(j->out, '{');
}

void json_end_object(Json *j) {
        g_string_append_c(j->out, '}');
        j->need_comma = true;
}

void json_begin_array(Json *j, const char *key) {
        json_prefix(j, key);
        g_string_append_c(j->out, '[');
}

void json_end_array(Json *j) {
        g_string_append_c(j->out, ']');
        j->need_comma = true;
}

void json_string(Json *j, const char *key, const char *value) {
        json_prefix(j, key);
        if (value)
                append_escaped(j->out, value);
        else
                g_string_append(j->out, "null");
        j->need_comma = true;
}

void json_null(Json *j, const char *key) {
        json_string(j, key, NULL);
}

void json_uint(Json *j, const char *key, uint64_t value) {
        json_prefix(j, key);
        g_string_append_printf(j->out, "%" PRIu64, value);
        j->need_comma = true;
}

void json_int(Json *j, const char *key, int64_t value) {
        json_prefix(j, key);
        g_string_append_printf(j->out, "%" PRIi64, value);
        j->need_comma = true;
}

void json_bool(Json *j, const char *key, bool value) {
        json_prefix(j, key);
        g_string_append(j->out, value ? "true" : "false");
        j->need_comma = true;
}

void json_double(Json *j, const char *key, double value) {
        char buf[G_ASCII_DTOSTR_BUF_SIZE];

        json_prefix(j, key);
        if (isfinite(value))
                g_string_append(j->out, g_ascii_dtostr(buf, sizeof buf, value));
        else
                g_string_append(j->out, "null");
        j->need_comma = true;
}

void json_strv(Json *j, const char *key, char *const *values) {
        json_begin_array(j, key);
        for (size_t i = 0; values && values[i]; i++)
                json_string(j, NULL, values[i]);
        json_end_array(j);
}

void json_time(Json *j, const char *key, uint64_t realtime_usec) {
        g_autofree char *usec_key = g_strconcat(key, "_usec", NULL);
        time_t t = (time_t) (realtime_usec / USEC_PER_SEC);
        struct tm tm;
        char buf[64];

        if (realtime_usec == 0 || !gmtime_r(&t, &tm) || strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
                json_null(j, key);
                json_null(j, usec_key);
                return;
        }
        g_autofree char *iso = g_strdup_printf("%s.%06" PRIu64 "Z", buf, realtime_usec % USEC_PER_SEC);
        json_string(j, key, iso);
        json_uint(j, usec_key, realtime_usec);
}

void json_diagnostic(Json *j, const CtlDiagnostic *d, bool with_policy) {
        json_begin_object(j, NULL);
        if (with_policy)
                json_string(j, "policy", d->policy);
        json_string(j, "file", d->file);
        if (d->line > 0)
                json_uint(j, "line", d->line);
        else
                json_null(j, "line");
        json_string(j, "severity", d->severity);
        json_string(j, "message", d->message);
        json_end_object(j);
}

int json_print(Json *j) {
        g_string_append_c(j->out, '\n');
        fputs(j->out->str, stdout);
        g_string_free(j->out, TRUE);
        j->out = NULL;
        if (fflush(stdout) != 0) {
                log_error("Cannot write the output: %s", strerror(errno));
                return CTL_EXIT_FAILURE;
        }
        return CTL_EXIT_OK;
}

static bool wanted(char *const *names, const char *name) {
        return !names || g_strv_contains((const char *const *) names, name);
}

/* "" on the bus means "none"; JSON says null. */
static const char *or_null(const char *s) {
        return s && s[0] ? s : NULL;
}

static void property_to_json(const CtlProperties *p, const char *name, Json *j) {
        const char *key = ctl_property_json_key(name);

        if (streq(name, "Version"))
                json_string(j, key, p->version);
        else if (streq(name, "Status"))
                json_string(j, key, p->status);
        else if (streq(name, "Knobs")) {
                json_begin_array(j, key);
                for (guint i = 0; i < p->knobs->len; i++) {
                        const CtlKnob *k = &g_array_index(p->knobs, CtlKnob, i);

                        json_begin_object(j, NULL);
                        json_string(j, "knob", k->name);
                        json_string(j, "applied", or_null(k->applied));
                        json_string(j, "target", or_null(k->target));
                        json_string(j, "baseline", or_null(k->baseline));
                        json_string(j, "source", or_null(k->source));
                        json_string(j, "policy", or_null(k->policy));
                        json_string(j, "unit", or_null(k->unit));
                        json_end_object(j);
                }
                json_end_array(j);
        } else if (streq(name, "ActivePolicies")) {
                json_begin_array(j, key);
                for (guint i = 0; i < p->active_policies->len; i++) {
                        const CtlActivePolicy *a = &g_array_index(p->active_policies, CtlActivePolicy, i);

                        json_begin_object(j, NULL);
                        json_string(j, "policy", a->name);
                        json_strv(j, "units", a->units);
                        json_end_object(j);
                }
                json_end_array(j);
        } else if (streq(name, "HugeTLBPools")) {
                json_begin_array(j, key);
                for (guint i = 0; i < p->pools->len; i++) {
                        const CtlPool *pool = &g_array_index(p->pools, CtlPool, i);

                        json_begin_object(j, NULL);
                        json_uint(j, "page_size_kb", pool->page_size_kb);
                        if (pool->node >= 0)
                                json_int(j, "node", pool->node);
                        else
                                json_null(j, "node");
                        json_uint(j, "target", pool->target);
                        json_uint(j, "allocated", pool->allocated);
                        json_uint(j, "free", pool->free);
                        json_string(j, "shortfall", or_null(pool->shortfall));
                        json_end_object(j);
                }
                json_end_array(j);
        } else if (streq(name, "NeedsRestart")) {
                json_begin_array(j, key);
                for (guint i = 0; i < p->needs_restart->len; i++) {
                        const CtlPair *pair = &g_array_index(p->needs_restart, CtlPair, i);

                        json_begin_object(j, NULL);
                        json_string(j, "unit", pair->key);
                        json_string(j, "policy", pair->value);
                        json_end_object(j);
                }
                json_end_array(j);
        } else if (streq(name, "IsolatedServices")) {
                json_begin_array(j, key);
                for (guint i = 0; i < p->isolated->len; i++) {
                        const CtlIsolation *iso = &g_array_index(p->isolated, CtlIsolation, i);

                        json_begin_object(j, NULL);
                        json_string(j, "unit", iso->unit);
                        json_string(j, "policy", iso->policy);
                        json_string(j, "thp", iso->thp);
                        json_string(j, "state", iso->state);
                        json_string(j, "note", or_null(iso->note));
                        json_end_object(j);
                }
                json_end_array(j);
        } else if (streq(name, "Override")) {
                json_begin_object(j, key);
                for (guint i = 0; i < p->override->len; i++) {
                        const CtlPair *pair = &g_array_index(p->override, CtlPair, i);

                        json_string(j, pair->key, pair->value);
                }
                json_end_object(j);
        } else if (streq(name, "OverrideExpiresAt"))
                json_time(j, key, p->override_expires_at);
        else if (streq(name, "StormState"))
                json_string(j, key, p->storm_state);
        else if (streq(name, "StormAction"))
                json_string(j, key, p->storm_action);
        else if (streq(name, "Storms")) {
                json_begin_array(j, key);
                for (guint i = 0; i < p->storms->len; i++) {
                        const CtlStorm *st = &g_array_index(p->storms, CtlStorm, i);

                        json_begin_object(j, NULL);
                        json_string(j, "kind", st->kind);
                        json_string(j, "phase", st->phase);
                        json_begin_object(j, "figures");
                        for (guint f = 0; f < st->figures->len; f++) {
                                const CtlFigure *fig = &g_array_index(st->figures, CtlFigure, f);

                                json_double(j, fig->name, fig->value);
                        }
                        json_end_object(j);
                        json_end_object(j);
                }
                json_end_array(j);
        } else if (streq(name, "PolicyDiagnostics")) {
                json_begin_array(j, key);
                for (guint i = 0; i < p->diagnostics->len; i++)
                        json_diagnostic(j, &g_array_index(p->diagnostics, CtlDiagnostic, i), true);
                json_end_array(j);
        }
}

void ctl_properties_json_members(const CtlProperties *p, char *const *names, Json *j) {
        for (size_t i = 0; ctl_property_names[i]; i++)
                if (wanted(names, ctl_property_names[i]))
                        property_to_json(p, ctl_property_names[i], j);
}

/* ---- terminal ---- */

/* 1 or 0 for what SYSTEMD_COLORS says, -1 when it says nothing we know. */
static int systemd_colors(void) {
        static const char *const on[] = { "1", "yes", "y", "true", "t", "on", "16", "256", "24bit" };
        static const char *const off[] = { "0", "no", "n", "false", "f", "off" };
        const char *e = getenv("SYSTEMD_COLORS");

        if (!e)
                return -1;
        for (size_t i = 0; i < ELEMENTSOF(on); i++)
                if (streq(e, on[i]))
                        return 1;
        for (size_t i = 0; i < ELEMENTSOF(off); i++)
                if (streq(e, off[i]))
                        return 0;
        return -1;
}

bool ctl_use_color(void) {
        static int cached = -1;
        const char *term;

        if (cached < 0) {
                term = getenv("TERM");
                cached = systemd_colors();
                if (cached < 0)
                        cached = isatty(STDOUT_FILENO) && !getenv("NO_COLOR") && !(term && streq(term, "dumb"));
        }
        return cached;
}

static bool locale_is_utf8(void) {
        /* Where the character set comes from, in the order libc looks. */
        static const char *const variables[] = { "LC_ALL", "LC_CTYPE", "LANG" };
        const char *set = NULL;

        for (size_t i = 0; i < ELEMENTSOF(variables) && !(set && set[0]); i++)
                set = getenv(variables[i]);
        /* No locale at all: a service's environment, shown on terminals that speak UTF-8, as
         * systemctl assumes. A locale asked for by name is taken at its word, so LC_ALL=C gets
         * ASCII; a UTF-8 locale that is not installed still names the terminal's. */
        if (!set || !set[0] || strcasestr(set, "UTF-8") || strcasestr(set, "utf8"))
                return true;
        return streq(nl_langinfo(CODESET), "UTF-8");
}

const char *ctl_glyph(CtlGlyph g) {
        static const char *const utf8[_CTL_GLYPH_MAX] = {
                [CTL_GLYPH_BULLET] = "●",
                [CTL_GLYPH_DASH] = "—",
                [CTL_GLYPH_ARROW] = "→",
                [CTL_GLYPH_ELLIPSIS] = "…",
        };
        static const char *const ascii[_CTL_GLYPH_MAX] = {
                [CTL_GLYPH_BULLET] = "*",
                [CTL_GLYPH_DASH] = "-",
                [CTL_GLYPH_ARROW] = "->",
                [CTL_GLYPH_ELLIPSIS] = "...",
        };
        static int cached = -1;

        if (cached < 0)
                cached = locale_is_utf8();
        return cached ? utf8[g] : ascii[g];
}

/* Length of the escape sequence ("\x1b[0;31m") at s, or 0. */
static size_t escape_length(const char *s) {
        size_t n = 2;

        if (s[0] != '\x1b' || s[1] != '[')
                return 0;
        while (s[n] && !(s[n] >= 0x40 && s[n] <= 0x7e))
                n++;
        return s[n] ? n + 1 : n;
}

/* Columns of the character at s (a wide one takes two); sets *len to its bytes. */
static size_t char_width(const char *s, size_t *len) {
        gunichar c = g_utf8_get_char_validated(s, -1);

        if (c == (gunichar) -1 || c == (gunichar) -2) {
                *len = 1;
                return 1;
        }
        *len = (size_t) (g_utf8_next_char(s) - s);
        return g_unichar_iswide(c) ? 2 : g_unichar_iszerowidth(c) ? 0 : 1;
}

static size_t visible_width(const char *s) {
        size_t width = 0, len;

        while (*s) {
                size_t esc = escape_length(s);

                if (esc > 0) {
                        s += esc;
                        continue;
                }
                width += char_width(s, &len);
                s += len;
        }
        return width;
}

char *ctl_cut_line(const char *line, size_t columns) {
        const char *ellipsis = ctl_glyph(CTL_GLYPH_ELLIPSIS);
        size_t room, width = 0, len;
        bool escaped = false;
        GString *out;

        if (visible_width(line) <= columns)
                return g_strdup(line);
        room = columns > visible_width(ellipsis) ? columns - visible_width(ellipsis) : 0;
        out = g_string_new(NULL);
        for (const char *s = line; *s;) {
                size_t esc = escape_length(s), w;

                if (esc > 0) {
                        /* Escape sequences are kept, so the colours after the cut stay balanced. */
                        g_string_append_len(out, s, (gssize) esc);
                        escaped = true;
                        s += esc;
                        continue;
                }
                w = char_width(s, &len);
                if (width + w > room)
                        break;
                g_string_append_len(out, s, (gssize) len);
                width += w;
                s += len;
        }
        g_string_append(out, ellipsis);
        if (escaped)
                g_string_append(out, "\x1b[0m");
        return g_string_free(out, FALSE);
}

/* The stream that stands in for stdout while lines are cut. */
typedef struct LineCutter {
        FILE *real;
        size_t columns;
        GString *pending;
        bool failed;
} LineCutter;

static LineCutter cutter;

static void cutter_emit(const char *line, bool newline) {
        g_autofree char *cut = ctl_cut_line(line, cutter.columns);

        if (fputs(cut, cutter.real) < 0 || (newline && fputc('\n', cutter.real) < 0))
                cutter.failed = true;
}

static ssize_t cutter_write(void *cookie, const char *buf, size_t size) {
        for (size_t i = 0; i < size; i++) {
                if (buf[i] != '\n') {
                        g_string_append_c(cutter.pending, buf[i]);
                        continue;
                }
                cutter_emit(cutter.pending->str, true);
                g_string_truncate(cutter.pending, 0);
        }
        return cutter.failed ? -1 : (ssize_t) size;
}

static size_t terminal_columns(void) {
        const char *e = getenv("COLUMNS");
        struct winsize ws = {};
        uint64_t n;

        if (e && parse_u64(e, &n) >= 0 && n > 0 && n < SIZE_MAX)
                return (size_t) n;
        if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) >= 0 && ws.ws_col > 0)
                return ws.ws_col;
        return 0;
}

void ctl_cut_lines_begin(void) {
        FILE *f;
        size_t columns;

        if (!isatty(STDOUT_FILENO))
                return;
        columns = terminal_columns();
        if (columns == 0)
                return;
        f = fopencookie(NULL, "w", (cookie_io_functions_t) { .write = cutter_write });
        if (!f)
                return;
        cutter = (LineCutter) { .real = stdout, .columns = columns, .pending = g_string_new(NULL) };
        stdout = f;
}

int ctl_cut_lines_end(void) {
        int r = 0;

        if (!cutter.real)
                return 0;
        if (fclose(stdout) != 0)
                cutter.failed = true;
        stdout = cutter.real;
        if (cutter.pending->len > 0)
                cutter_emit(cutter.pending->str, false);
        g_string_free(cutter.pending, TRUE);
        if (fflush(stdout) != 0 || cutter.failed)
                r = -EIO;
        cutter = (LineCutter) {};
        return r;
}

const char *ctl_color(CtlColor c) {
        static const char *const sequences[_CTL_COLOR_MAX] = {
                [CTL_COLOR_NORMAL] = "\x1b[0m",
                [CTL_COLOR_BOLD] = "\x1b[1m",
                [CTL_COLOR_GREEN] = "\x1b[0;32m",
                [CTL_COLOR_YELLOW] = "\x1b[0;33m",
                [CTL_COLOR_RED] = "\x1b[0;31m",
                [CTL_COLOR_GREY] = "\x1b[0;38;5;245m",
        };

        return ctl_use_color() ? sequences[c] : "";
}

char *ctl_format_duration(uint64_t usec) {
        static const struct {
                const char *suffix;
                uint64_t usec;
        } units[] = {
                { "d", 86400 * USEC_PER_SEC },
                { "h", 3600 * USEC_PER_SEC },
                { "min", 60 * USEC_PER_SEC },
                { "s", USEC_PER_SEC },
        };
        GString *s = g_string_new(NULL);
        unsigned shown = 0;

        if (usec < USEC_PER_SEC)
                return g_strdup_printf("%" PRIu64 "ms", usec / 1000);
        /* Two units are enough for a person: "2h 5min", not "2h 5min 3s". */
        for (size_t i = 0; i < ELEMENTSOF(units) && shown < 2; i++) {
                uint64_t n = usec / units[i].usec;

                if (n == 0 && shown == 0)
                        continue;
                if (n > 0)
                        g_string_append_printf(s, "%s%" PRIu64 "%s", s->len > 0 ? " " : "", n, units[i].suffix);
                usec -= n * units[i].usec;
                shown++;
        }
        return g_string_free(s, FALSE);
}

char *ctl_format_timestamp(uint64_t realtime_usec) {
        struct timespec now;
        uint64_t now_usec;
        time_t t = (time_t) (realtime_usec / USEC_PER_SEC);
        struct tm tm;
        char buf[64];

        clock_gettime(CLOCK_REALTIME, &now);
        now_usec = (uint64_t) now.tv_sec * USEC_PER_SEC + (uint64_t) now.tv_nsec / 1000;
        if (!localtime_r(&t, &tm) || strftime(buf, sizeof buf, "%a %Y-%m-%d %H:%M:%S %Z", &tm) == 0)
                snprintf(buf, sizeof buf, "@%" PRIu64, realtime_usec / USEC_PER_SEC);

        if (realtime_usec >= now_usec) {
                g_autofree char *d = ctl_format_duration(realtime_usec - now_usec);

                return g_strdup_printf("%s (in %s)", buf, d);
        }
        g_autofree char *d = ctl_format_duration(now_usec - realtime_usec);
        return g_strdup_printf("%s (%s ago)", buf, d);
}
