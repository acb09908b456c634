/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "ctl-bus.h"
#include "ctl-json.h"
#include "ctl-properties.h"
#include "ctl-table.h"
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

/* The votes of one knob, [start, end): text shows the winner's arrow before its value and why
 * each vote was cast; JSON has each vote's fields, "" on the bus being null. */
static CtlTable *votes_table(GArray *votes, guint start, guint end) {
        const char *arrow = ctl_glyph(CTL_GLYPH_ARROW);
        CtlTable *t = ctl_table_new();

        ctl_table_add_column(t, "", NULL);
        ctl_table_add_json_columns(t, "value", "source", "policy", "unit", "wins", NULL);
        ctl_table_add_column(t, "", NULL);
        for (guint i = start; i < end; i++) {
                const Vote *v = &g_array_index(votes, Vote, i);
                g_autofree char *reason = vote_reason(v), *marked = NULL;

                /* A loser gets blanks as wide as the arrow, so that the values line up. */
                if (v->wins)
                        marked = g_strdup_printf("%s%s%s %s", ctl_color(CTL_COLOR_GREEN), arrow, ctl_color(CTL_COLOR_NORMAL), v->value);
                else
                        marked = g_strdup_printf("%*s %s", (int) g_utf8_strlen(arrow, -1), "", v->value);
                ctl_table_add_string(t, marked);
                ctl_table_add_string(t, v->value);
                ctl_table_add_string(t, v->source);
                ctl_table_add_string(t, empty_to_null(v->policy));
                ctl_table_add_string(t, empty_to_null(v->unit));
                ctl_table_add_bool(t, v->wins);
                ctl_table_add_string(t, reason);
        }
        return t;
}

/* The knob whose votes begin at start: its winner (NULL: none) and its votes as a table. Returns
 * the index after them. */
static guint read_group(GArray *votes, guint start, const Vote **ret_winner, CtlTable **ret_votes) {
        guint end = group_end(votes, start);

        *ret_winner = group_winner(votes, start, end);
        *ret_votes = votes_table(votes, start, end);
        return end;
}

/* KnobNotes' sentences about knob, borrowed from props. */
static GPtrArray *knob_notes(const CtlProperties *props, const char *knob) {
        GPtrArray *notes = g_ptr_array_new();

        for (guint i = 0; i < props->knob_notes->len; i++) {
                const CtlKnobNote *n = &g_array_index(props->knob_notes, CtlKnobNote, i);

                if (streq(n->knob, knob))
                        g_ptr_array_add(notes, n->note);
        }
        return notes;
}

/* The target the daemon resolved for knob, where it is not the winning vote's value (a value
 * moved after the votes, see KnobNotes); NULL otherwise. Borrowed from props. */
static const char *moved_target(const CtlProperties *props, const Vote *winner) {
        for (guint i = 0; winner && i < props->knobs->len; i++) {
                const CtlKnob *k = &g_array_index(props->knobs, CtlKnob, i);

                if (streq(k->name, winner->knob))
                        return streq(k->target, winner->value) || k->target[0] == '\0' ? NULL : k->target;
        }
        return NULL;
}

/* "" on the bus means "none"; JSON says null. */
static int print_json(CtlOutput *out, GArray *votes, const CtlProperties *props, const char *only_knob) {
        static const char *const members[] = { "IsolatedServices", "DriftConflicts", "RecentDrift" };
        g_autoptr(CtlJson) b = ctl_json_new();

        ctl_json_begin_object(b, NULL);
        ctl_json_begin_array(b, "knobs");
        for (guint start = 0, end; start < votes->len; start = end) {
                g_autoptr(CtlTable) t = NULL;
                g_autoptr(GPtrArray) notes = NULL;
                const Vote *winner;

                end = read_group(votes, start, &winner, &t);
                notes = knob_notes(props, g_array_index(votes, Vote, start).knob);
                ctl_json_begin_object(b, NULL);
                ctl_json_string(b, "knob", g_array_index(votes, Vote, start).knob);
                ctl_json_string(b, "target", moved_target(props, winner) ?: (winner ? winner->value : NULL));
                ctl_json_string(b, "source", winner ? winner->source : NULL);
                ctl_table_to_json(t, b, "votes");
                ctl_json_begin_array(b, "notes");
                for (guint i = 0; i < notes->len; i++)
                        ctl_json_string(b, NULL, g_ptr_array_index(notes, i));
                ctl_json_end_array(b);
                ctl_json_end_object(b);
        }
        ctl_json_end_array(b);
        for (size_t i = 0; i < ELEMENTSOF(members); i++) {
                g_autoptr(CtlTable) t = ctl_property_table(props, members[i], only_knob);

                ctl_table_to_json(t, b, ctl_property_json_key(members[i]));
        }
        ctl_json_end_object(b);
        return ctl_json_print(b, out->f);
}

static void print_text(CtlOutput *out, GArray *votes, const CtlProperties *props) {
        for (guint start = 0, end; start < votes->len; start = end) {
                g_autoptr(CtlTable) t = NULL;
                g_autoptr(GPtrArray) notes = NULL;
                const Vote *winner;

                end = read_group(votes, start, &winner, &t);
                notes = knob_notes(props, g_array_index(votes, Vote, start).knob);

                if (start > 0)
                        ctl_printf(out, "\n");
                if (winner) {
                        g_autofree char *reason = vote_reason(winner);
                        const char *moved = moved_target(props, winner);

                        ctl_printf(out, "%s%s = %s%s, from %s%s%s%s\n", ctl_color(CTL_COLOR_BOLD), winner->knob,
                                   moved ?: winner->value, ctl_color(CTL_COLOR_NORMAL), reason, moved ? " (its vote " : "",
                                   moved ? winner->value : "", moved ? ", moved: see below)" : "");
                } else
                        ctl_printf(out, "%s%s%s: no vote decides it\n", ctl_color(CTL_COLOR_BOLD), g_array_index(votes, Vote, start).knob,
                                   ctl_color(CTL_COLOR_NORMAL));
                ctl_table_print_block(t, out, "  ", "  ");
                for (guint i = 0; i < notes->len; i++)
                        ctl_printf(out, "  %s %s\n", ctl_glyph(CTL_GLYPH_DASH), (const char *) g_ptr_array_index(notes, i));
        }
}

/* Policies that isolate their services decide what those services' processes get; a Scope=auto
 * one votes above as well unless it is met per service. */
static void print_isolated(CtlOutput *out, GArray *isolated) {
        if (isolated->len == 0)
                return;
        ctl_printf(out, "\n%sIsolated%s (THP taken away from these services' processes only, at their start):\n",
                   ctl_color(CTL_COLOR_BOLD), ctl_color(CTL_COLOR_NORMAL));
        for (guint i = 0; i < isolated->len; i++) {
                const CtlIsolation *iso = &g_array_index(isolated, CtlIsolation, i);

                ctl_printf(out, "    %s  %s for %s: %s (Scope=%s, via %s%s)%s%s\n", iso->thp, iso->policy, iso->unit,
                           iso->state, iso->scope, iso->via,
                           !streq(iso->scope, "auto") ? "" : iso->machine_wide ? "; also voting machine-wide"
                                                                                : "; met per service, not voting",
                           iso->note[0] ? ", " : "", iso->note);
        }
}

/* A knob's value in force may not be the target: another tool wrote it, thpd restored it or gave
 * it up to that tool. */
static void print_drift(CtlOutput *out, const CtlProperties *props, const char *only_knob) {
        bool header = false;

        for (guint i = 0; i < props->drift_conflicts->len; i++) {
                const CtlDriftConflict *c = &g_array_index(props->drift_conflicts, CtlDriftConflict, i);

                if (only_knob && !streq(c->knob, only_knob))
                        continue;
                ctl_printf(out, "\n%sConflict:%s %s%s%s (until thpd-ctl reload or %s stops)\n", ctl_color(CTL_COLOR_BOLD),
                           ctl_color(CTL_COLOR_NORMAL), ctl_color(CTL_COLOR_YELLOW), c->text, ctl_color(CTL_COLOR_NORMAL),
                           c->writer[0] ? c->writer : "the writer");
        }
        for (guint i = 0; i < props->recent_drift->len; i++) {
                const CtlDrift *d = &g_array_index(props->recent_drift, CtlDrift, i);
                g_autofree char *action = NULL;

                if (only_knob && !streq(d->knob, only_knob))
                        continue;
                action = ctl_drift_action(d);
                if (!header)
                        ctl_printf(out, "\n%sChanged behind thpd's back%s (the last ones):\n", ctl_color(CTL_COLOR_BOLD),
                                   ctl_color(CTL_COLOR_NORMAL));
                header = true;
                ctl_printf(out, "    %s=%s instead of %s, %s; %s\n", d->knob, d->found, d->expected, d->who, action);
        }
}

int verb_explain(const CtlOptions *o, CtlOutput *out, int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        g_autoptr(GArray) votes = g_array_new(FALSE, TRUE, sizeof(Vote));
        _cleanup_(ctl_properties_done) CtlProperties props = {};
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
                log_error_errno(r, "Cannot parse thpd's explanation: %m");
                return CTL_EXIT_FAILURE;
        }

        /* They concern the enabled knob, and the others only where a Scope=auto policy stood
         * aside (Explain lists no vote it withdrew); the property is read after the votes, so
         * that an unknown knob fails as Explain says. */
        r = ctl_get_properties(o, bus, &props);
        if (r != CTL_EXIT_OK)
                return r;
        isolated = props.isolated;
        if (argc > 0 && !streq(argv[0], "enabled"))
                for (guint i = isolated->len; i > 0; i--) {
                        const CtlIsolation *iso = &g_array_index(isolated, CtlIsolation, i - 1);

                        if (!streq(iso->scope, "auto") || iso->machine_wide)
                                g_array_remove_index(isolated, i - 1);
                }

        if (o->json)
                return print_json(out, votes, &props, argc > 0 ? argv[0] : NULL);
        print_text(out, votes, &props);
        print_isolated(out, isolated);
        print_drift(out, &props, argc > 0 ? argv[0] : NULL);
        return ctl_output_flush(out) == 0 ? CTL_EXIT_OK : CTL_EXIT_FAILURE;
}
