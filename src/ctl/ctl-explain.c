/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "ctl-bus.h"
#include "log.h"
#include "util.h"

typedef struct Vote {
        const char *knob, *value, *source, *policy, *unit; /* borrowed from the reply */
        bool wins;
} Vote;

static char *vote_reason(const Vote *v) {
        if (streq(v->source, "policy"))
                return v->unit[0] ? g_strdup_printf("%s for %s", v->policy, v->unit) : g_strdup(v->policy);
        if (streq(v->source, "mitigation"))
                return g_strdup("storm mitigation");
        if (streq(v->source, "override"))
                return g_strdup("admin override");
        return g_strdup(v->source);
}

/* Votes of one knob are adjacent in the reply; returns the index after the group. */
static guint group_end(GArray *votes, guint start) {
        const char *knob = g_array_index(votes, Vote, start).knob;
        guint end = start;

        while (end < votes->len && streq(g_array_index(votes, Vote, end).knob, knob))
                end++;
        return end;
}

static const Vote *group_winner(GArray *votes, guint start, guint end) {
        for (guint i = start; i < end; i++)
                if (g_array_index(votes, Vote, i).wins)
                        return &g_array_index(votes, Vote, i);
        return NULL;
}

/* "" on the bus means "none"; JSON says null. */
static const char *or_null(const char *s) {
        return s && s[0] ? s : NULL;
}

static int print_json(GArray *votes, GArray *isolated) {
        Json j;

        json_init(&j);
        json_begin_object(&j, NULL);
        json_begin_array(&j, "knobs");
        for (guint start = 0, end; start < votes->len; start = end) {
                const Vote *winner;

                end = group_end(votes, start);
                winner = group_winner(votes, start, end);
                json_begin_object(&j, NULL);
                json_string(&j, "knob", g_array_index(votes, Vote, start).knob);
                json_string(&j, "target", winner ? winner->value : NULL);
                json_string(&j, "source", winner ? winner->source : NULL);
                json_begin_array(&j, "votes");
                for (guint i = start; i < end; i++) {
                        const Vote *v = &g_array_index(votes, Vote, i);

                        json_begin_object(&j, NULL);
                        json_string(&j, "value", v->value);
                        json_string(&j, "source", v->source);
                        json_string(&j, "policy", or_null(v->policy));
                        json_string(&j, "unit", or_null(v->unit));
                        json_bool(&j, "wins", v->wins);
                        json_end_object(&j);
                }
                json_end_array(&j);
                json_end_object(&j);
        }
        json_end_array(&j);
        json_begin_array(&j, "isolated_services");
        for (guint i = 0; i < isolated->len; i++) {
                const CtlIsolation *iso = &g_array_index(isolated, CtlIsolation, i);

                json_begin_object(&j, NULL);
                json_string(&j, "unit", iso->unit);
                json_string(&j, "policy", iso->policy);
                json_string(&j, "thp", iso->thp);
                json_string(&j, "state", iso->state);
                json_string(&j, "note", or_null(iso->note));
                json_end_object(&j);
        }
        json_end_array(&j);
        json_end_object(&j);
        return json_print(&j);
}

static void print_text(GArray *votes) {
        for (guint start = 0, end; start < votes->len; start = end) {
                const Vote *winner;
                int value_width = 0;

                end = group_end(votes, start);
                winner = group_winner(votes, start, end);
                for (guint i = start; i < end; i++)
                        value_width = MAX(value_width, (int) strlen(g_array_index(votes, Vote, i).value));

                if (start > 0)
                        printf("\n");
                if (winner) {
                        g_autofree char *reason = vote_reason(winner);

                        printf("%s%s = %s%s, from %s\n", ctl_color(CTL_COLOR_BOLD), winner->knob, winner->value,
                               ctl_color(CTL_COLOR_NORMAL), reason);
                } else
                        printf("%s%s%s: no vote decides it\n", ctl_color(CTL_COLOR_BOLD), g_array_index(votes, Vote, start).knob,
                               ctl_color(CTL_COLOR_NORMAL));
                for (guint i = start; i < end; i++) {
                        const Vote *v = &g_array_index(votes, Vote, i);
                        g_autofree char *reason = vote_reason(v);

                        const char *arrow = ctl_glyph(CTL_GLYPH_ARROW);
                        /* A loser gets blanks as wide as the arrow, so that the values line up. */
                        int arrow_columns = (int) g_utf8_strlen(arrow, -1);

                        if (v->wins)
                                printf("  %s%s%s", ctl_color(CTL_COLOR_GREEN), arrow, ctl_color(CTL_COLOR_NORMAL));
                        else
                                printf("  %*s", arrow_columns, "");
                        printf(" %-*s  %s\n", value_width, v->value, reason);
                }
        }
}

/* Scope=service policies cast no vote, but they decide what their services' processes get. */
static void print_isolated(GArray *isolated) {
        if (isolated->len == 0)
                return;
        printf("\n%sNot voting%s (Scope=service: THP taken away from these services' processes only, by "
               "thpd-exec at their start):\n", ctl_color(CTL_COLOR_BOLD), ctl_color(CTL_COLOR_NORMAL));
        for (guint i = 0; i < isolated->len; i++) {
                const CtlIsolation *iso = &g_array_index(isolated, CtlIsolation, i);

                printf("    %s  %s for %s: %s%s%s\n", iso->thp, iso->policy, iso->unit, iso->state,
                       iso->note[0] ? ", " : "", iso->note);
        }
}

int verb_explain(const CtlOptions *o, int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        g_autoptr(GArray) votes = g_array_new(FALSE, TRUE, sizeof(Vote));
        _cleanup_(ctl_properties_clear) CtlProperties props = {};
        GArray *isolated;
        Vote v;
        int wins, r;

        r = ctl_bus_open(o, &bus);
        if (r != CTL_EXIT_OK)
                return r;
        r = ctl_call(o, bus, "Explain", 0, "explain", &reply, "s", argc > 0 ? argv[0] : "");
        if (r != CTL_EXIT_OK)
                return r;

        r = sd_bus_message_enter_container(reply, 'a', "(sssssb)");
        while (r >= 0 &&
               (r = sd_bus_message_read(reply, "(sssssb)", &v.knob, &v.value, &v.source, &v.policy, &v.unit, &wins)) > 0) {
                v.wins = wins;
                g_array_append_val(votes, v);
        }
        if (r < 0) {
                log_error("Cannot parse thpd's explanation: %s", strerror(-r));
                return CTL_EXIT_FAILURE;
        }

        /* They concern the enabled knob only; the property is read after the votes, so that an
         * unknown knob fails as Explain says. */
        r = ctl_get_properties(o, bus, &props);
        if (r != CTL_EXIT_OK)
                return r;
        isolated = props.isolated;
        if (argc > 0 && !streq(argv[0], "enabled"))
                g_array_set_size(isolated, 0);

        if (o->json)
                return print_json(votes, isolated);
        print_text(votes);
        print_isolated(isolated);
        return fflush(stdout) == 0 ? CTL_EXIT_OK : CTL_EXIT_FAILURE;
}
