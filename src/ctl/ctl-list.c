/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "ctl-bus.h"
#include "ctl-json.h"
#include "ctl-properties.h"
#include "ctl-table.h"
#include "log.h"
#include "util.h"

/* One row of ListPolicies. */
typedef struct PolicyRow {
        char *name, *path, *masked_by, *description;
        bool active;
        char **units;
        char **shadowed; /* overridden files, or the files a mask hides */
} PolicyRow;

static void policy_row_clear(gpointer p) {
        PolicyRow *row = p;

        g_free(row->name);
        g_free(row->path);
        g_free(row->masked_by);
        g_free(row->description);
        g_strfreev(row->units);
        g_strfreev(row->shadowed);
}

/* A file that failed to parse has no Units=, which every valid policy must have. */
static const char *policy_state(const PolicyRow *row) {
        if (row->masked_by[0])
                return "masked";
        if (!row->units || !row->units[0])
                return "invalid";
        return row->active ? "active" : "inactive";
}

static int read_row(sd_bus_message *m, PolicyRow *row) {
        const char *name, *path, *masked_by, *description;
        int active, r;

        r = sd_bus_message_read(m, "ssssb", &name, &path, &masked_by, &description, &active);
        if (r < 0)
                return r;
        row->name = g_strdup(name);
        row->path = g_strdup(path);
        row->masked_by = g_strdup(masked_by);
        row->description = g_strdup(description);
        row->active = active;
        r = sd_bus_message_read_strv(m, &row->units);
        if (r < 0)
                return r;
        return sd_bus_message_read_strv(m, &row->shadowed);
}

/* Calls ListPolicies and reads PolicyDiagnostics; returns a CtlExit code, and on success the rows
 * (PolicyRow) and the diagnostics (CtlDiagnostic). */
static int list_policies(const CtlOptions *o, GArray **ret, GArray **ret_diagnostics) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        g_autoptr(GArray) rows = g_array_new(FALSE, TRUE, sizeof(PolicyRow));
        int r;

        g_array_set_clear_func(rows, policy_row_clear);
        r = ctl_bus_open(o, &bus);
        if (r != CTL_EXIT_OK)
                return r;
        r = ctl_call(o, bus, "ListPolicies", 0, "list the policies", &reply, NULL);
        if (r != CTL_EXIT_OK)
                return r;
        r = ctl_get_diagnostics(o, bus, ret_diagnostics);
        if (r != CTL_EXIT_OK)
                return r;

        r = sd_bus_message_enter_container(reply, 'a', "(ssssbasas)");
        while (r >= 0 && (r = sd_bus_message_enter_container(reply, 'r', "ssssbasas")) > 0) {
                PolicyRow row = {};

                r = read_row(reply, &row);
                g_array_append_val(rows, row);
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
        }
        if (r < 0) {
                log_error_errno(r, "Cannot parse the list of policies: %m");
                return CTL_EXIT_FAILURE;
        }
        *ret = TAKE_PTR(rows);
        return CTL_EXIT_OK;
}

static bool about(const CtlDiagnostic *d, const PolicyRow *row) {
        return streq_ptr(d->policy, row->name);
}

/* The columns of a policy row, in the order of its JSON members; text shows NAME, STATE, UNITS
 * and PATH, where PATH says what masks a masked policy. */
enum {
        COLUMN_POLICY,
        COLUMN_STATE,
        COLUMN_PATH,
        COLUMN_MASKED_BY,
        COLUMN_DESCRIPTION,
        COLUMN_UNITS,
        COLUMN_OVERRIDES,
        COLUMN_DIAGNOSTICS,
        COLUMN_PATH_TEXT,
};

static CtlColor state_color(const char *state) {
        if (streq(state, "active"))
                return CTL_COLOR_GREEN;
        if (streq(state, "invalid"))
                return CTL_COLOR_RED;
        if (streq(state, "masked"))
                return CTL_COLOR_GREY;
        return CTL_COLOR_NORMAL;
}

static CtlTable *policy_table_new(void) {
        static const size_t display[] = { COLUMN_POLICY, COLUMN_STATE, COLUMN_UNITS, COLUMN_PATH_TEXT };
        CtlTable *t = ctl_table_new();

        ctl_table_add_column(t, "NAME", "policy");
        ctl_table_add_column(t, "STATE", "state");
        ctl_table_add_column(t, NULL, "path");
        ctl_table_add_column(t, NULL, "masked_by");
        ctl_table_add_column(t, NULL, "description");
        ctl_table_add_column(t, "UNITS", "units");
        ctl_table_add_column(t, NULL, "overrides");
        ctl_table_add_column(t, NULL, "diagnostics");
        ctl_table_add_column(t, "PATH", NULL);
        /* As wide as the longest state, so that the column stays put whichever states there are. */
        ctl_table_set_minimum_width(t, COLUMN_STATE, strlen("inactive"));
        ctl_table_set_display(t, display, ELEMENTSOF(display));
        ctl_table_set_empty_string(t, "-");
        return t;
}

/* "" on the bus means "none"; JSON says null. */
static void policy_table_add(CtlTable *t, const PolicyRow *row, GArray *diagnostics) {
        g_autoptr(CtlJson) mine = ctl_json_new();
        g_autofree char *path = row->masked_by[0] ? g_strdup_printf("%s (mask)", row->masked_by) : g_strdup(row->path);
        const char *state = policy_state(row);

        ctl_json_begin_array(mine, NULL);
        for (guint i = 0; i < diagnostics->len; i++)
                if (about(&g_array_index(diagnostics, CtlDiagnostic, i), row))
                        ctl_diagnostic_to_json(mine, &g_array_index(diagnostics, CtlDiagnostic, i));
        ctl_json_end_array(mine);

        ctl_table_add_string(t, row->name);
        ctl_table_add_string(t, state);
        ctl_table_set_color(t, state_color(state));
        ctl_table_add_string(t, empty_to_null(row->path));
        ctl_table_add_string(t, empty_to_null(row->masked_by));
        ctl_table_add_string(t, empty_to_null(row->description));
        ctl_table_add_strv(t, row->units);
        ctl_table_add_strv(t, row->shadowed);
        ctl_table_add_json(t, mine);
        ctl_table_add_string(t, path);
}

static bool has_row(GArray *rows, const CtlDiagnostic *d) {
        for (guint i = 0; i < rows->len; i++)
                if (about(d, &g_array_index(rows, PolicyRow, i)))
                        return true;
        return false;
}

static int list_json(CtlOutput *out, const CtlTable *t, GArray *rows, GArray *diagnostics) {
        g_autoptr(CtlJson) b = ctl_json_new();

        ctl_json_begin_object(b, NULL);
        ctl_table_to_json(t, b, "policies");
        /* What belongs to no listed policy: a directory's problems, or a file that was ignored. */
        ctl_json_begin_array(b, "diagnostics");
        for (guint i = 0; i < diagnostics->len; i++) {
                const CtlDiagnostic *d = &g_array_index(diagnostics, CtlDiagnostic, i);

                if (!has_row(rows, d))
                        ctl_diagnostic_to_json(b, d);
        }
        ctl_json_end_array(b);
        ctl_json_end_object(b);
        return ctl_json_print(b, out->f);
}

int verb_list(const CtlOptions *o, CtlOutput *out, int argc, char *argv[]) {
        g_autoptr(GArray) rows = NULL, diagnostics = NULL;
        g_autoptr(CtlTable) t = policy_table_new();
        unsigned invalid = 0;
        int r;

        r = list_policies(o, &rows, &diagnostics);
        if (r != CTL_EXIT_OK)
                return r;
        for (guint i = 0; i < rows->len; i++) {
                const PolicyRow *row = &g_array_index(rows, PolicyRow, i);

                policy_table_add(t, row, diagnostics);
                invalid += streq(policy_state(row), "invalid");
        }
        if (o->json)
                return list_json(out, t, rows, diagnostics);

        ctl_table_print(t, out, !o->no_legend);
        /* The reasons, where admins look; a script reading the table with --no-legend gets them on
         * stderr, out of its way. */
        if (diagnostics->len > 0 && !o->no_legend) {
                ctl_printf(out, "\n");
                ctl_print_diagnostics(out, diagnostics, "");
        } else if (diagnostics->len > 0) {
                (void) ctl_output_flush(out);
                ctl_print_diagnostics(CTL_OUTPUT_UNCUT(stderr), diagnostics, "");
        }
        if (!o->no_legend) {
                ctl_printf(out, "\n%u policy file%s listed", rows->len, rows->len == 1 ? "" : "s");
                if (invalid > 0)
                        ctl_printf(out, ", %u invalid", invalid);
                ctl_printf(out, ".\n");
        }
        return ctl_output_flush(out) == 0 ? CTL_EXIT_OK : CTL_EXIT_FAILURE;
}

int verb_cat(const CtlOptions *o, CtlOutput *out, int argc, char *argv[]) {
        g_autoptr(GArray) rows = NULL, diagnostics = NULL, mine = NULL;
        g_autoptr(GError) error = NULL;
        g_autofree char *name = NULL, *content = NULL;
        const PolicyRow *row = NULL;
        int r;

        name = g_str_has_suffix(argv[0], ".conf") ? g_strdup(argv[0]) : g_strconcat(argv[0], ".conf", NULL);
        r = list_policies(o, &rows, &diagnostics);
        if (r != CTL_EXIT_OK)
                return r;
        for (guint i = 0; i < rows->len; i++)
                if (streq(g_array_index(rows, PolicyRow, i).name, name))
                        row = &g_array_index(rows, PolicyRow, i);

        /* Only this policy's problems; the array keeps pointers into diagnostics. */
        mine = g_array_new(FALSE, TRUE, sizeof(CtlDiagnostic));
        for (guint i = 0; i < diagnostics->len; i++)
                if (streq_ptr(g_array_index(diagnostics, CtlDiagnostic, i).policy, name))
                        g_array_append_val(mine, g_array_index(diagnostics, CtlDiagnostic, i));

        if (!row) {
                /* An untrusted file is not listed, but thpd said why it ignored it. */
                ctl_print_diagnostics(CTL_OUTPUT_UNCUT(stderr), mine, "");
                log_error("No policy named %s; 'thpd-ctl list' shows them.", name);
                return CTL_EXIT_FAILURE;
        }

        if (!row->masked_by[0] && !g_file_get_contents(row->path, &content, NULL, &error)) {
                log_error("Cannot read %s: %s", row->path, error->message);
                return CTL_EXIT_FAILURE;
        }

        if (o->json) {
                g_autoptr(CtlTable) t = policy_table_new();
                g_autoptr(CtlJson) b = ctl_json_new();

                policy_table_add(t, row, diagnostics);
                ctl_json_begin_object(b, NULL);
                ctl_table_row_to_json(t, 0, b);
                ctl_json_string(b, "content", content);
                ctl_json_end_object(b);
                return ctl_json_print(b, out->f);
        }

        if (row->masked_by[0]) {
                ctl_printf(out, "%s# %s is masked by %s%s\n", ctl_color(CTL_COLOR_GREY), row->name, row->masked_by, ctl_color(CTL_COLOR_NORMAL));
                for (size_t i = 0; row->shadowed && row->shadowed[i]; i++)
                        ctl_printf(out, "%s# masks %s%s\n", ctl_color(CTL_COLOR_GREY), row->shadowed[i], ctl_color(CTL_COLOR_NORMAL));
        } else {
                ctl_printf(out, "%s# %s%s\n", ctl_color(CTL_COLOR_GREY), row->path, ctl_color(CTL_COLOR_NORMAL));
                for (size_t i = 0; row->shadowed && row->shadowed[i]; i++)
                        ctl_printf(out, "%s# overrides %s%s\n", ctl_color(CTL_COLOR_GREY), row->shadowed[i], ctl_color(CTL_COLOR_NORMAL));
        }
        /* As comments, so that the output still reads as a policy file. */
        ctl_print_diagnostics(out, mine, "# ");
        if (content) {
                ctl_puts(out, content);
                if (content[0] && !g_str_has_suffix(content, "\n"))
                        ctl_printf(out, "\n");
        }
        return ctl_output_flush(out) == 0 ? CTL_EXIT_OK : CTL_EXIT_FAILURE;
}
