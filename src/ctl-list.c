/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "ctl-bus.h"
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

/* Calls ListPolicies; returns a CtlExit code and the rows (PolicyRow) on success. */
static int list_policies(const CtlOptions *o, GArray **ret) {
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

        r = sd_bus_message_enter_container(reply, 'a', "(ssssbasas)");
        while (r >= 0 && (r = sd_bus_message_enter_container(reply, 'r', "ssssbasas")) > 0) {
                PolicyRow row = {};

                r = read_row(reply, &row);
                g_array_append_val(rows, row);
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
        }
        if (r < 0) {
                log_error("Cannot parse the list of policies: %s", strerror(-r));
                return CTL_EXIT_FAILURE;
        }
        *ret = TAKE_PTR(rows);
        return CTL_EXIT_OK;
}

static void row_to_json(const PolicyRow *row, Json *j) {
        json_string(j, "name", row->name);
        json_string(j, "state", policy_state(row));
        json_string(j, "path", row->path);
        json_string(j, "masked_by", row->masked_by);
        json_string(j, "description", row->description);
        json_bool(j, "active", row->active);
        json_strv(j, "units", row->units);
        json_strv(j, row->masked_by[0] ? "masks" : "overrides", row->shadowed);
}

static CtlColor state_color(const char *state) {
        if (streq(state, "active"))
                return CTL_COLOR_GREEN;
        if (streq(state, "invalid"))
                return CTL_COLOR_RED;
        if (streq(state, "masked"))
                return CTL_COLOR_GREY;
        return CTL_COLOR_NORMAL;
}

int verb_list(const CtlOptions *o, int argc, char *argv[]) {
        g_autoptr(GArray) rows = NULL;
        int name_width = (int) strlen("NAME"), state_width = (int) strlen("inactive"), units_width = (int) strlen("UNITS");
        int r;

        r = list_policies(o, &rows);
        if (r != CTL_EXIT_OK)
                return r;

        if (o->json) {
                Json j;

                json_init(&j);
                json_begin_array(&j, NULL);
                for (guint i = 0; i < rows->len; i++) {
                        json_begin_object(&j, NULL);
                        row_to_json(&g_array_index(rows, PolicyRow, i), &j);
                        json_end_object(&j);
                }
                json_end_array(&j);
                return json_print(&j);
        }

        g_autoptr(GPtrArray) units = g_ptr_array_new_with_free_func(g_free);
        for (guint i = 0; i < rows->len; i++) {
                const PolicyRow *row = &g_array_index(rows, PolicyRow, i);
                char *u = row->units && row->units[0] ? g_strjoinv(" ", row->units) : g_strdup("-");

                name_width = MAX(name_width, (int) strlen(row->name));
                units_width = MAX(units_width, (int) strlen(u));
                g_ptr_array_add(units, u);
        }

        if (!o->no_legend)
                printf("%s%-*s  %-*s  %-*s  %s%s\n", ctl_color(CTL_COLOR_BOLD), name_width, "NAME", state_width, "STATE",
                       units_width, "UNITS", "PATH", ctl_color(CTL_COLOR_NORMAL));
        for (guint i = 0; i < rows->len; i++) {
                const PolicyRow *row = &g_array_index(rows, PolicyRow, i);
                const char *state = policy_state(row);
                g_autofree char *path = row->masked_by[0] ? g_strdup_printf("%s (mask)", row->masked_by) : g_strdup(row->path);

                printf("%-*s  %s%-*s%s  %-*s  %s\n", name_width, row->name, ctl_color(state_color(state)), state_width, state,
                       ctl_color(CTL_COLOR_NORMAL), units_width, (const char *) g_ptr_array_index(units, i), path);
        }
        if (!o->no_legend)
                printf("\n%u policy file%s listed.\n", rows->len, rows->len == 1 ? "" : "s");
        return fflush(stdout) == 0 ? CTL_EXIT_OK : CTL_EXIT_FAILURE;
}

int verb_cat(const CtlOptions *o, int argc, char *argv[]) {
        g_autoptr(GArray) rows = NULL;
        g_autoptr(GError) error = NULL;
        g_autofree char *name = NULL, *content = NULL;
        const PolicyRow *row = NULL;
        int r;

        name = g_str_has_suffix(argv[0], ".conf") ? g_strdup(argv[0]) : g_strconcat(argv[0], ".conf", NULL);
        r = list_policies(o, &rows);
        if (r != CTL_EXIT_OK)
                return r;
        for (guint i = 0; i < rows->len; i++)
                if (streq(g_array_index(rows, PolicyRow, i).name, name))
                        row = &g_array_index(rows, PolicyRow, i);
        if (!row) {
                log_error("No policy named %s; 'thpd-ctl list' shows them.", name);
                return CTL_EXIT_FAILURE;
        }

        if (!row->masked_by[0] && !g_file_get_contents(row->path, &content, NULL, &error)) {
                log_error("Cannot read %s: %s", row->path, error->message);
                return CTL_EXIT_FAILURE;
        }

        if (o->json) {
                Json j;

                json_init(&j);
                json_begin_object(&j, NULL);
                row_to_json(row, &j);
                json_string(&j, "content", content);
                json_end_object(&j);
                return json_print(&j);
        }

        if (row->masked_by[0]) {
                printf("%s# %s is masked by %s%s\n", ctl_color(CTL_COLOR_GREY), row->name, row->masked_by, ctl_color(CTL_COLOR_NORMAL));
                for (size_t i = 0; row->shadowed && row->shadowed[i]; i++)
                        printf("%s# masks %s%s\n", ctl_color(CTL_COLOR_GREY), row->shadowed[i], ctl_color(CTL_COLOR_NORMAL));
        } else {
                printf("%s# %s%s\n", ctl_color(CTL_COLOR_GREY), row->path, ctl_color(CTL_COLOR_NORMAL));
                for (size_t i = 0; row->shadowed && row->shadowed[i]; i++)
                        printf("%s# overrides %s%s\n", ctl_color(CTL_COLOR_GREY), row->shadowed[i], ctl_color(CTL_COLOR_NORMAL));
                fputs(content, stdout);
                if (content[0] && !g_str_has_suffix(content, "\n"))
                        printf("\n");
        }
        return fflush(stdout) == 0 ? CTL_EXIT_OK : CTL_EXIT_FAILURE;
}
