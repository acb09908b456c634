/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>

#include "ctl-bus.h"
#include "log.h"
#include "util.h"

/* "  Policies: " and the indent of continuation lines under it. */
#define LABEL_WIDTH 10

static void print_label(const char *label) {
        printf("  %-*s", LABEL_WIDTH, label);
}

static void print_continuation(void) {
        printf("  %-*s", LABEL_WIDTH, "");
}

static bool knob_pending(const CtlKnob *k) {
        return k->target[0] != '\0' && !streq(k->applied, k->target);
}

static CtlColor overall_color(const CtlProperties *p) {
        bool warn = p->needs_restart->len > 0 || !streq_ptr(p->storm_state, "calm");

        if (streq_ptr(p->storm_state, "storm"))
                return CTL_COLOR_RED;
        for (guint i = 0; i < p->knobs->len; i++)
                if (knob_pending(&g_array_index(p->knobs, CtlKnob, i)))
                        return CTL_COLOR_RED;
        for (guint i = 0; i < p->pools->len; i++)
                warn = warn || g_array_index(p->pools, CtlPool, i).shortfall[0] != '\0';
        return warn ? CTL_COLOR_YELLOW : CTL_COLOR_GREEN;
}

static char *knob_reason(const CtlKnob *k) {
        if (streq(k->source, "policy"))
                return k->unit[0] ? g_strdup_printf("%s for %s", k->policy, k->unit) : g_strdup(k->policy);
        if (streq(k->source, "mitigation"))
                return g_strdup("storm mitigation");
        if (k->source[0] == '\0')
                return g_strdup("not resolved yet");
        return g_strdup(k->source);
}

static void print_policies(const CtlProperties *p) {
        print_label("Policies:");
        if (p->active_policies->len == 0)
                printf("%snone active%s\n", ctl_color(CTL_COLOR_GREY), ctl_color(CTL_COLOR_NORMAL));
        for (guint i = 0; i < p->active_policies->len; i++) {
                const CtlActivePolicy *a = &g_array_index(p->active_policies, CtlActivePolicy, i);
                g_autofree char *units = g_strjoinv(", ", a->units);

                if (i > 0)
                        print_continuation();
                printf("%s (%s)\n", a->name, units);
        }
}

static void print_knobs(const CtlProperties *p) {
        int name_width = 0, value_width = 0, baseline_width = 0;
        g_autoptr(GPtrArray) baselines = g_ptr_array_new_with_free_func(g_free);

        for (guint i = 0; i < p->knobs->len; i++) {
                const CtlKnob *k = &g_array_index(p->knobs, CtlKnob, i);
                char *b = streq(k->applied, k->baseline) ? g_strdup("") : g_strdup_printf("(baseline %s)", k->baseline);

                name_width = MAX(name_width, (int) strlen(k->name));
                value_width = MAX(value_width, (int) strlen(k->applied));
                baseline_width = MAX(baseline_width, (int) strlen(b));
                g_ptr_array_add(baselines, b);
        }

        print_label("Knobs:");
        if (p->knobs->len == 0)
                printf("none on this kernel\n");
        for (guint i = 0; i < p->knobs->len; i++) {
                const CtlKnob *k = &g_array_index(p->knobs, CtlKnob, i);
                const char *baseline = g_ptr_array_index(baselines, i);
                g_autofree char *reason = knob_reason(k);
                bool moved = baseline[0] != '\0';

                if (i > 0)
                        print_continuation();
                printf("%-*s  %s%-*s%s  %-*s  %s%s%s", name_width, k->name, moved ? ctl_color(CTL_COLOR_BOLD) : "",
                       value_width, k->applied, moved ? ctl_color(CTL_COLOR_NORMAL) : "", baseline_width, baseline,
                       streq(k->source, "baseline") ? ctl_color(CTL_COLOR_GREY) : "", reason,
                       streq(k->source, "baseline") ? ctl_color(CTL_COLOR_NORMAL) : "");
                if (knob_pending(k))
                        printf("%s — target %s is not applied%s", ctl_color(CTL_COLOR_RED), k->target, ctl_color(CTL_COLOR_NORMAL));
                printf("\n");
        }
}

static void print_pools(const CtlProperties *p) {
        print_label("Pools:");
        if (p->pools->len == 0)
                printf("%snone%s\n", ctl_color(CTL_COLOR_GREY), ctl_color(CTL_COLOR_NORMAL));
        for (guint i = 0; i < p->pools->len; i++) {
                const CtlPool *pool = &g_array_index(p->pools, CtlPool, i);
                g_autofree char *where = NULL;
                char size[24];

                format_page_size(pool->page_size_kb, size);
                where = pool->node < 0 ? g_strdup(size) : g_strdup_printf("%s node %" PRIi32, size, pool->node);
                if (i > 0)
                        print_continuation();
                printf("%s  %" PRIu64 "/%" PRIu64 " pages, %" PRIu64 " free", where, pool->allocated, pool->target, pool->free);
                if (pool->shortfall[0])
                        printf("; %s%s%s", ctl_color(CTL_COLOR_YELLOW), pool->shortfall, ctl_color(CTL_COLOR_NORMAL));
                printf("\n");
        }
}

static void print_storms(const CtlProperties *p) {
        bool calm = streq_ptr(p->storm_state, "calm");
        CtlColor color = streq_ptr(p->storm_state, "storm") ? CTL_COLOR_RED : CTL_COLOR_YELLOW;

        print_label("Storms:");
        printf("%s%s%s", calm ? "" : ctl_color(color), p->storm_state ?: "unknown", calm ? "" : ctl_color(CTL_COLOR_NORMAL));
        for (guint i = 0, shown = 0; i < p->storms->len; i++) {
                const CtlStorm *s = &g_array_index(p->storms, CtlStorm, i);

                if (streq(s->phase, "calm"))
                        continue;
                printf("%s%s %s", shown++ == 0 ? " — " : ", ", s->kind, s->phase);
        }
        printf(" (action: %s)\n", p->storm_action ?: "unknown");
}

static void print_override(const CtlProperties *p) {
        g_autoptr(GString) values = g_string_new(NULL);

        if (p->override->len == 0)
                return;
        for (guint i = 0; i < p->override->len; i++) {
                const CtlPair *pair = &g_array_index(p->override, CtlPair, i);

                g_string_append_printf(values, "%s%s=%s", i > 0 ? " " : "", pair->key, pair->value);
        }
        print_label("Override:");
        if (p->override_expires_at > 0) {
                g_autofree char *when = ctl_format_timestamp(p->override_expires_at);

                printf("%s until %s\n", values->str, when);
        } else
                printf("%s until cleared\n", values->str);
}

static void print_needs_restart(const CtlProperties *p) {
        static const char label[] = "Restart needed: ";

        for (guint i = 0; i < p->needs_restart->len; i++) {
                const CtlPair *pair = &g_array_index(p->needs_restart, CtlPair, i);

                printf("  %-*s%s%s%s (%s applied after it started)\n", (int) strlen(label), i == 0 ? label : "",
                       ctl_color(CTL_COLOR_YELLOW), pair->key, ctl_color(CTL_COLOR_NORMAL), pair->value);
        }
}

static void print_status(const CtlProperties *p) {
        printf("%s●%s thpd %s — %s\n", ctl_color(overall_color(p)), ctl_color(CTL_COLOR_NORMAL), p->version ?: "(unknown version)",
               p->status ?: "");
        print_policies(p);
        print_knobs(p);
        print_pools(p);
        print_storms(p);
        print_override(p);
        print_needs_restart(p);
}

/* Reads every property once and prints it: as JSON (only the named properties; NULL for all)
 * with --json, otherwise through print_text. */
static int print_properties(const CtlOptions *o, char *const *names,
                            void (*print_text)(const CtlProperties *p, char *const *names)) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        CtlProperties p;
        int r;

        r = ctl_bus_open(o, &bus);
        if (r != CTL_EXIT_OK)
                return r;
        r = ctl_get_properties(o, bus, &p);
        if (r != CTL_EXIT_OK)
                return r;

        if (o->json) {
                Json j;

                json_init(&j);
                ctl_properties_to_json(&p, names, &j);
                r = json_print(&j);
        } else {
                print_text(&p, names);
                r = fflush(stdout) == 0 ? CTL_EXIT_OK : CTL_EXIT_FAILURE;
        }
        ctl_properties_clear(&p);
        return r;
}

static void print_status_text(const CtlProperties *p, char *const *names) {
        print_status(p);
}

int verb_status(const CtlOptions *o, int argc, char *argv[]) {
        return print_properties(o, NULL, print_status_text);
}

/* ---- show ---- */

static void show_string(const char *key, const char *value) {
        printf("%s=%s\n", key, value ?: "");
}

static void show_knobs(const CtlProperties *p) {
        for (guint i = 0; i < p->knobs->len; i++) {
                const CtlKnob *k = &g_array_index(p->knobs, CtlKnob, i);

                printf("Knobs.%s.Applied=%s\n", k->name, k->applied);
                printf("Knobs.%s.Target=%s\n", k->name, k->target);
                printf("Knobs.%s.Baseline=%s\n", k->name, k->baseline);
                printf("Knobs.%s.Source=%s\n", k->name, k->source);
                printf("Knobs.%s.Policy=%s\n", k->name, k->policy);
                printf("Knobs.%s.Unit=%s\n", k->name, k->unit);
        }
}

static void show_active_policies(const CtlProperties *p) {
        printf("ActivePolicies=");
        for (guint i = 0; i < p->active_policies->len; i++)
                printf("%s%s", i > 0 ? " " : "", g_array_index(p->active_policies, CtlActivePolicy, i).name);
        printf("\n");
        for (guint i = 0; i < p->active_policies->len; i++) {
                const CtlActivePolicy *a = &g_array_index(p->active_policies, CtlActivePolicy, i);
                g_autofree char *units = g_strjoinv(" ", a->units);

                printf("ActivePolicies.%s.Units=%s\n", a->name, units);
        }
}

static char *pool_id(const CtlPool *pool) {
        if (pool->node < 0)
                return g_strdup_printf("%" PRIu64 "kB", pool->page_size_kb);
        return g_strdup_printf("%" PRIu64 "kB.node%" PRIi32, pool->page_size_kb, pool->node);
}

static void show_pools(const CtlProperties *p) {
        printf("HugeTLBPools=");
        for (guint i = 0; i < p->pools->len; i++) {
                g_autofree char *id = pool_id(&g_array_index(p->pools, CtlPool, i));

                printf("%s%s", i > 0 ? " " : "", id);
        }
        printf("\n");
        for (guint i = 0; i < p->pools->len; i++) {
                const CtlPool *pool = &g_array_index(p->pools, CtlPool, i);
                g_autofree char *id = pool_id(pool);

                printf("HugeTLBPools.%s.Target=%" PRIu64 "\n", id, pool->target);
                printf("HugeTLBPools.%s.Allocated=%" PRIu64 "\n", id, pool->allocated);
                printf("HugeTLBPools.%s.Free=%" PRIu64 "\n", id, pool->free);
                printf("HugeTLBPools.%s.Shortfall=%s\n", id, pool->shortfall);
        }
}

static void show_needs_restart(const CtlProperties *p) {
        printf("NeedsRestart=");
        for (guint i = 0; i < p->needs_restart->len; i++)
                printf("%s%s", i > 0 ? " " : "", g_array_index(p->needs_restart, CtlPair, i).key);
        printf("\n");
        for (guint i = 0; i < p->needs_restart->len; i++) {
                const CtlPair *pair = &g_array_index(p->needs_restart, CtlPair, i);

                printf("NeedsRestart.%s.Policy=%s\n", pair->key, pair->value);
        }
}

static void show_override(const CtlProperties *p) {
        printf("Override=");
        for (guint i = 0; i < p->override->len; i++) {
                const CtlPair *pair = &g_array_index(p->override, CtlPair, i);

                printf("%s%s=%s", i > 0 ? " " : "", pair->key, pair->value);
        }
        printf("\n");
}

static void show_storms(const CtlProperties *p) {
        printf("Storms=");
        for (guint i = 0; i < p->storms->len; i++)
                printf("%s%s", i > 0 ? " " : "", g_array_index(p->storms, CtlStorm, i).kind);
        printf("\n");
        for (guint i = 0; i < p->storms->len; i++) {
                const CtlStorm *s = &g_array_index(p->storms, CtlStorm, i);

                printf("Storms.%s.Phase=%s\n", s->kind, s->phase);
                for (guint f = 0; f < s->figures->len; f++) {
                        const CtlFigure *fig = &g_array_index(s->figures, CtlFigure, f);
                        char buf[G_ASCII_DTOSTR_BUF_SIZE];

                        printf("Storms.%s.%s=%s\n", s->kind, fig->name, g_ascii_formatd(buf, sizeof buf, "%.6g", fig->value));
                }
        }
}

static void show_property(const CtlProperties *p, const char *name) {
        if (streq(name, "Version"))
                show_string(name, p->version);
        else if (streq(name, "Status"))
                show_string(name, p->status);
        else if (streq(name, "Knobs"))
                show_knobs(p);
        else if (streq(name, "ActivePolicies"))
                show_active_policies(p);
        else if (streq(name, "HugeTLBPools"))
                show_pools(p);
        else if (streq(name, "NeedsRestart"))
                show_needs_restart(p);
        else if (streq(name, "Override"))
                show_override(p);
        else if (streq(name, "OverrideExpiresAt"))
                printf("OverrideExpiresAt=%" PRIu64 "\n", p->override_expires_at);
        else if (streq(name, "StormState"))
                show_string(name, p->storm_state);
        else if (streq(name, "StormAction"))
                show_string(name, p->storm_action);
        else if (streq(name, "Storms"))
                show_storms(p);
}

static void show_properties(const CtlProperties *p, char *const *names) {
        for (size_t i = 0; names[i]; i++)
                show_property(p, names[i]);
}

int verb_show(const CtlOptions *o, int argc, char *argv[]) {
        g_auto(GStrv) names = NULL;

        for (int i = 0; i < argc; i++)
                if (!g_strv_contains(ctl_property_names, argv[i])) {
                        g_autofree char *known = g_strjoinv(", ", (char **) ctl_property_names);

                        log_error("Unknown property '%s'; thpd has: %s.", argv[i], known);
                        return CTL_EXIT_USAGE;
                }
        if (argc > 0) {
                names = g_new0(char *, argc + 1);
                for (int i = 0; i < argc; i++)
                        names[i] = g_strdup(argv[i]);
        } else
                names = g_strdupv((char **) ctl_property_names);

        return print_properties(o, names, show_properties);
}
