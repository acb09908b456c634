/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "ctl-bus.h"
#include "ctl-json.h"
#include "ctl-properties.h"
#include "ctl-table.h"
#include "log.h"
#include "util.h"

const char *const ctl_property_names[] = {
        "Version", "Status", "Knobs", "ActivePolicies", "HugeTLBPools", "NeedsRestart", "IsolatedServices", "Override",
        "OverrideExpiresAt", "StormState", "StormAction", "Storms", "PolicyDiagnostics", "DriftConflicts", "RecentDrift", NULL,
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
        { "DriftConflicts", "drift_conflicts" },
        { "RecentDrift", "recent_drift" },
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

void ctl_properties_done(CtlProperties *p) {
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
        g_clear_pointer(&p->drift_conflicts, g_array_unref);
        g_clear_pointer(&p->recent_drift, g_array_unref);
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
        g_free(i->scope);
        g_free(i->via);
}

static int read_isolated(sd_bus_message *m, GArray *isolated) {
        const char *unit, *policy, *thp, *state, *note, *scope, *via;
        int machine_wide, r;

        r = sd_bus_message_enter_container(m, 'a', "(sssssssb)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(m, "(sssssssb)", &unit, &policy, &thp, &state, &note, &scope, &via,
                                        &machine_wide)) > 0) {
                CtlIsolation i = {
                        .unit = g_strdup(unit),
                        .policy = g_strdup(policy),
                        .thp = g_strdup(thp),
                        .state = g_strdup(state),
                        .note = g_strdup(note),
                        .scope = g_strdup(scope),
                        .via = g_strdup(via),
                        .machine_wide = machine_wide,
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

static void drift_conflict_clear(gpointer p) {
        CtlDriftConflict *c = p;

        g_free(c->knob);
        g_free(c->writer);
        g_free(c->value);
        g_free(c->text);
}

static void drift_clear(gpointer p) {
        CtlDrift *d = p;

        g_free(d->knob);
        g_free(d->expected);
        g_free(d->found);
        g_free(d->writer);
        g_free(d->action);
        g_free(d->who);
}

static int read_drift_conflicts(sd_bus_message *m, GArray *conflicts) {
        const char *knob, *writer, *value, *text;
        uint64_t since;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "(sssts)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(m, "(sssts)", &knob, &writer, &value, &since, &text)) > 0) {
                CtlDriftConflict c = {
                        .knob = g_strdup(knob), .writer = g_strdup(writer), .value = g_strdup(value),
                        .since = since, .text = g_strdup(text),
                };

                g_array_append_val(conflicts, c);
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

char *ctl_drift_action(const CtlDrift *d) {
        if (d->wrong_usec == 0)
                return g_strdup(d->action);
        return g_strdup_printf("%s after %" PRIu64 " ms", d->action, d->wrong_usec / 1000);
}

static int read_recent_drift(sd_bus_message *m, GArray *drift) {
        const char *knob, *expected, *found, *writer, *action, *who;
        uint64_t when, written, wrong;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "(sssssttts)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(m, "(sssssttts)", &knob, &expected, &found, &writer, &action, &when, &written,
                                        &wrong, &who)) > 0) {
                CtlDrift d = {
                        .knob = g_strdup(knob), .expected = g_strdup(expected), .found = g_strdup(found),
                        .writer = g_strdup(writer), .action = g_strdup(action), .who = g_strdup(who),
                        .when = when, .written = written, .wrong_usec = wrong,
                };

                g_array_append_val(drift, d);
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
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
        else if (streq(name, "IsolatedServices") && streq(contents, "a(sssssssb)"))
                r = read_isolated(m, p->isolated);
        else if (streq(name, "Override") && streq(contents, "a{ss}"))
                r = read_pairs(m, "{ss}", p->override);
        else if (streq(name, "Storms") && streq(contents, "a(ssa{sd})"))
                r = read_storms(m, p->storms);
        else if (streq(name, "PolicyDiagnostics") && streq(contents, DIAGNOSTICS_SIGNATURE))
                r = read_diagnostics(m, p->diagnostics);
        else if (streq(name, "DriftConflicts") && streq(contents, "a(sssts)"))
                r = read_drift_conflicts(m, p->drift_conflicts);
        else if (streq(name, "RecentDrift") && streq(contents, "a(sssssttts)"))
                r = read_recent_drift(m, p->recent_drift);
        else
                /* A property from a newer daemon: not ours to show. */
                r = sd_bus_message_skip(m, contents);
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

/* Decodes a GetAll reply. Returns a CtlExit code; ret is set on success only. */
static int properties_from_reply(sd_bus_message *reply, CtlProperties *ret) {
        CtlProperties p = {
                .knobs = array_new(sizeof(CtlKnob), knob_clear),
                .active_policies = array_new(sizeof(CtlActivePolicy), active_policy_clear),
                .pools = array_new(sizeof(CtlPool), pool_clear),
                .needs_restart = array_new(sizeof(CtlPair), pair_clear),
                .isolated = array_new(sizeof(CtlIsolation), isolation_clear),
                .override = array_new(sizeof(CtlPair), pair_clear),
                .storms = array_new(sizeof(CtlStorm), storm_clear),
                .diagnostics = diagnostics_new(),
                .drift_conflicts = array_new(sizeof(CtlDriftConflict), drift_conflict_clear),
                .recent_drift = array_new(sizeof(CtlDrift), drift_clear),
        };
        const char *name;
        int r;

        r = sd_bus_message_enter_container(reply, 'a', "{sv}");
        while (r >= 0 && (r = sd_bus_message_enter_container(reply, 'e', "sv")) > 0) {
                r = sd_bus_message_read(reply, "s", &name);
                if (r >= 0)
                        r = read_property(reply, name, &p);
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
        }
        if (r < 0) {
                ctl_properties_done(&p);
                log_error_errno(r, "Cannot parse thpd's state: %m");
                return CTL_EXIT_FAILURE;
        }

        *ret = p;
        return CTL_EXIT_OK;
}

int ctl_get_properties(const CtlOptions *o, sd_bus *bus, CtlProperties *ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        r = sd_bus_call_method(bus, THPD_BUS_NAME, THPD_BUS_PATH, "org.freedesktop.DBus.Properties", "GetAll", &error,
                               &reply, "s", THPD_BUS_INTERFACE);
        if (r < 0)
                return ctl_log_bus_error(o, &error, r, "read thpd's state");
        return properties_from_reply(reply, ret);
}

int ctl_get_properties_async(const CtlOptions *o, sd_bus *bus, unsigned *pending, CtlAsyncCall *c) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;
        int r;

        r = sd_bus_message_new_method_call(bus, &call, THPD_BUS_NAME, THPD_BUS_PATH, "org.freedesktop.DBus.Properties",
                                           "GetAll");
        if (r >= 0)
                r = sd_bus_message_append(call, "s", THPD_BUS_INTERFACE);
        if (r >= 0)
                r = ctl_call_async(bus, call, 0, pending, c);
        if (r < 0)
                return ctl_log_bus_error(o, &SD_BUS_ERROR_NULL, r, "read thpd's state");
        return CTL_EXIT_OK;
}

int ctl_get_properties_finish(const CtlOptions *o, sd_bus *bus, CtlAsyncCall *c, CtlProperties *ret) {
        int r;

        r = ctl_check_reply(o, bus, c->reply, "read thpd's state");
        if (r != CTL_EXIT_OK)
                return r;
        return properties_from_reply(c->reply, ret);
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
                log_error_errno(r, "Cannot parse thpd's policy diagnostics: %m");
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

void ctl_print_diagnostics(CtlOutput *out, GArray *diagnostics, const char *indent) {
        for (guint i = 0; i < diagnostics->len; i++) {
                const CtlDiagnostic *d = &g_array_index(diagnostics, CtlDiagnostic, i);
                g_autofree char *text = ctl_diagnostic_format(d);
                /* Colour is decided for stdout; stderr gets it only when it is the same terminal. */
                bool color = out->f == stdout || isatty(fileno(out->f));

                ctl_printf(out, "%s%s%s%s\n", indent, color ? ctl_color(is_error(d) ? CTL_COLOR_RED : CTL_COLOR_YELLOW) : "",
                           text, color ? ctl_color(CTL_COLOR_NORMAL) : "");
        }
}

void ctl_diagnostic_to_json(CtlJson *b, const CtlDiagnostic *d, bool with_policy) {
        ctl_json_begin_object(b, NULL);
        if (with_policy)
                ctl_json_string(b, "policy", d->policy);
        ctl_json_string(b, "file", d->file);
        if (d->line > 0)
                ctl_json_uint(b, "line", d->line);
        else
                ctl_json_null(b, "line");
        ctl_json_string(b, "severity", d->severity);
        ctl_json_string(b, "message", d->message);
        ctl_json_end_object(b);
}

static bool wanted(char *const *names, const char *name) {
        return !names || g_strv_contains((const char *const *) names, name);
}

/* The list properties as tables: JSON keys for --json, titles for show's NAME.ID.TITLE=. A column's
 * title is its name in show; the first titled column names the row. "" on the bus means "none":
 * JSON says null, show an empty value. */
static CtlTable *knobs_table(const CtlProperties *p) {
        CtlTable *t = ctl_table_new();

        ctl_table_add_column(t, "Knob", "knob");
        ctl_table_add_column(t, "Applied", "applied");
        ctl_table_add_column(t, "Target", "target");
        ctl_table_add_column(t, "Baseline", "baseline");
        ctl_table_add_column(t, "Source", "source");
        ctl_table_add_column(t, "Policy", "policy");
        ctl_table_add_column(t, "Unit", "unit");
        for (guint i = 0; i < p->knobs->len; i++) {
                const CtlKnob *k = &g_array_index(p->knobs, CtlKnob, i);

                ctl_table_add_string(t, k->name);
                ctl_table_add_string(t, empty_to_null(k->applied));
                ctl_table_add_string(t, empty_to_null(k->target));
                ctl_table_add_string(t, empty_to_null(k->baseline));
                ctl_table_add_string(t, empty_to_null(k->source));
                ctl_table_add_string(t, empty_to_null(k->policy));
                ctl_table_add_string(t, empty_to_null(k->unit));
        }
        return t;
}

static CtlTable *active_policies_table(const CtlProperties *p) {
        CtlTable *t = ctl_table_new();

        ctl_table_add_column(t, "Policy", "policy");
        ctl_table_add_column(t, "Units", "units");
        for (guint i = 0; i < p->active_policies->len; i++) {
                const CtlActivePolicy *a = &g_array_index(p->active_policies, CtlActivePolicy, i);

                ctl_table_add_string(t, a->name);
                ctl_table_add_strv(t, a->units);
        }
        return t;
}

/* show names a pool "2048kB" or "2048kB.node0"; JSON gives the size and node apart. */
static CtlTable *pools_table(const CtlProperties *p) {
        CtlTable *t = ctl_table_new();

        ctl_table_add_column(t, NULL, "page_size_kb");
        ctl_table_add_column(t, NULL, "node");
        ctl_table_add_column(t, "Pool", NULL);
        ctl_table_add_column(t, "Target", "target");
        ctl_table_add_column(t, "Allocated", "allocated");
        ctl_table_add_column(t, "Free", "free");
        ctl_table_add_column(t, "Shortfall", "shortfall");
        for (guint i = 0; i < p->pools->len; i++) {
                const CtlPool *pool = &g_array_index(p->pools, CtlPool, i);
                g_autofree char *id = pool->node < 0 ? g_strdup_printf("%" PRIu64 "kB", pool->page_size_kb)
                                                     : g_strdup_printf("%" PRIu64 "kB.node%" PRIi32, pool->page_size_kb, pool->node);

                ctl_table_add_uint(t, pool->page_size_kb);
                if (pool->node >= 0)
                        ctl_table_add_uint(t, (uint64_t) pool->node);
                else
                        ctl_table_add_string(t, NULL);
                ctl_table_add_string(t, id);
                ctl_table_add_uint(t, pool->target);
                ctl_table_add_uint(t, pool->allocated);
                ctl_table_add_uint(t, pool->free);
                ctl_table_add_string(t, empty_to_null(pool->shortfall));
        }
        return t;
}

static CtlTable *needs_restart_table(const CtlProperties *p) {
        CtlTable *t = ctl_table_new();

        ctl_table_add_column(t, "Unit", "unit");
        ctl_table_add_column(t, "Policy", "policy");
        for (guint i = 0; i < p->needs_restart->len; i++) {
                const CtlPair *pair = &g_array_index(p->needs_restart, CtlPair, i);

                ctl_table_add_string(t, pair->key);
                ctl_table_add_string(t, pair->value);
        }
        return t;
}

static CtlTable *isolated_table(const CtlProperties *p) {
        CtlTable *t = ctl_table_new();

        ctl_table_add_column(t, "Unit", "unit");
        ctl_table_add_column(t, "Policy", "policy");
        ctl_table_add_column(t, "THP", "thp");
        ctl_table_add_column(t, "State", "state");
        ctl_table_add_column(t, "Note", "note");
        ctl_table_add_column(t, "Scope", "scope");
        ctl_table_add_column(t, "Via", "via");
        ctl_table_add_column(t, "MachineWide", "machine_wide");
        for (guint i = 0; i < p->isolated->len; i++) {
                const CtlIsolation *iso = &g_array_index(p->isolated, CtlIsolation, i);

                ctl_table_add_string(t, iso->unit);
                ctl_table_add_string(t, iso->policy);
                ctl_table_add_string(t, iso->thp);
                ctl_table_add_string(t, iso->state);
                ctl_table_add_string(t, empty_to_null(iso->note));
                ctl_table_add_string(t, iso->scope);
                ctl_table_add_string(t, iso->via);
                ctl_table_add_bool(t, iso->machine_wide);
        }
        return t;
}

static CtlTable *drift_conflicts_table(const CtlProperties *p, const char *only_knob) {
        CtlTable *t = ctl_table_new();

        ctl_table_add_column(t, "Knob", "knob");
        ctl_table_add_column(t, "Writer", "writer");
        ctl_table_add_column(t, "Value", "value");
        ctl_table_add_column(t, "Since", "since");
        ctl_table_add_column(t, "Message", "message");
        for (guint i = 0; i < p->drift_conflicts->len; i++) {
                const CtlDriftConflict *c = &g_array_index(p->drift_conflicts, CtlDriftConflict, i);

                if (only_knob && !streq(c->knob, only_knob))
                        continue;
                ctl_table_add_string(t, c->knob);
                ctl_table_add_string(t, empty_to_null(c->writer));
                ctl_table_add_string(t, c->value);
                ctl_table_add_time(t, c->since);
                ctl_table_add_string(t, c->text);
        }
        return t;
}

/* JSON only: show gives each event one line of its own (see show_recent_drift()). */
static CtlTable *recent_drift_table(const CtlProperties *p, const char *only_knob) {
        CtlTable *t = ctl_table_new();

        ctl_table_add_column(t, NULL, "knob");
        ctl_table_add_column(t, NULL, "expected");
        ctl_table_add_column(t, NULL, "found");
        ctl_table_add_column(t, NULL, "writer");
        ctl_table_add_column(t, NULL, "writer_text");
        ctl_table_add_column(t, NULL, "action");
        ctl_table_add_column(t, NULL, "when");
        ctl_table_add_column(t, NULL, "written");
        ctl_table_add_column(t, NULL, "wrong_usec");
        for (guint i = 0; i < p->recent_drift->len; i++) {
                const CtlDrift *d = &g_array_index(p->recent_drift, CtlDrift, i);

                if (only_knob && !streq(d->knob, only_knob))
                        continue;
                ctl_table_add_string(t, d->knob);
                ctl_table_add_string(t, empty_to_null(d->expected));
                ctl_table_add_string(t, empty_to_null(d->found));
                ctl_table_add_string(t, empty_to_null(d->writer));
                ctl_table_add_string(t, d->who);
                ctl_table_add_string(t, d->action);
                ctl_table_add_time(t, d->when);
                ctl_table_add_time(t, d->written);
                if (d->wrong_usec > 0)
                        ctl_table_add_uint(t, d->wrong_usec);
                else
                        ctl_table_add_string(t, NULL);
        }
        return t;
}

CtlTable *ctl_property_table(const CtlProperties *p, const char *name, const char *only_knob) {
        if (streq(name, "Knobs"))
                return knobs_table(p);
        if (streq(name, "ActivePolicies"))
                return active_policies_table(p);
        if (streq(name, "HugeTLBPools"))
                return pools_table(p);
        if (streq(name, "NeedsRestart"))
                return needs_restart_table(p);
        if (streq(name, "IsolatedServices"))
                return isolated_table(p);
        if (streq(name, "DriftConflicts"))
                return drift_conflicts_table(p, only_knob);
        if (streq(name, "RecentDrift"))
                return recent_drift_table(p, only_knob);
        return NULL;
}

static void override_to_json(const CtlProperties *p, const char *key, CtlJson *b) {
        ctl_json_begin_object(b, key);
        for (guint i = 0; i < p->override->len; i++) {
                const CtlPair *pair = &g_array_index(p->override, CtlPair, i);

                ctl_json_string(b, pair->key, pair->value);
        }
        ctl_json_end_object(b);
}

static void storms_to_json(const CtlProperties *p, const char *key, CtlJson *b) {
        ctl_json_begin_array(b, key);
        for (guint i = 0; i < p->storms->len; i++) {
                const CtlStorm *st = &g_array_index(p->storms, CtlStorm, i);

                ctl_json_begin_object(b, NULL);
                ctl_json_string(b, "kind", st->kind);
                ctl_json_string(b, "phase", st->phase);
                ctl_json_begin_object(b, "figures");
                for (guint f = 0; f < st->figures->len; f++) {
                        const CtlFigure *fig = &g_array_index(st->figures, CtlFigure, f);

                        ctl_json_double(b, fig->name, fig->value);
                }
                ctl_json_end_object(b);
                ctl_json_end_object(b);
        }
        ctl_json_end_array(b);
}

static void diagnostics_to_json(const CtlProperties *p, const char *key, CtlJson *b) {
        ctl_json_begin_array(b, key);
        for (guint i = 0; i < p->diagnostics->len; i++)
                ctl_diagnostic_to_json(b, &g_array_index(p->diagnostics, CtlDiagnostic, i), true);
        ctl_json_end_array(b);
}

static void property_to_json(const CtlProperties *p, const char *name, CtlJson *b) {
        const char *key = ctl_property_json_key(name);
        g_autoptr(CtlTable) t = ctl_property_table(p, name, NULL);

        if (t)
                ctl_table_to_json(t, b, key);
        else if (streq(name, "Version"))
                ctl_json_string(b, key, p->version);
        else if (streq(name, "Status"))
                ctl_json_string(b, key, p->status);
        else if (streq(name, "Override"))
                override_to_json(p, key, b);
        else if (streq(name, "OverrideExpiresAt"))
                ctl_json_time(b, key, p->override_expires_at);
        else if (streq(name, "StormState"))
                ctl_json_string(b, key, p->storm_state);
        else if (streq(name, "StormAction"))
                ctl_json_string(b, key, p->storm_action);
        else if (streq(name, "Storms"))
                storms_to_json(p, key, b);
        else if (streq(name, "PolicyDiagnostics"))
                diagnostics_to_json(p, key, b);
}

void ctl_properties_json_members(const CtlProperties *p, char *const *names, CtlJson *b) {
        for (size_t i = 0; ctl_property_names[i]; i++)
                if (wanted(names, ctl_property_names[i]))
                        property_to_json(p, ctl_property_names[i], b);
}
