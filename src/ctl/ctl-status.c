/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>

#include "ctl-bus.h"
#include "ctl-format.h"
#include "ctl-json.h"
#include "ctl-properties.h"
#include "ctl-table.h"
#include "ctl-usage.h"
#include "log.h"
#include "thp-stats.h"
#include "util.h"

/* "  Policies: " and the indent of continuation lines under it. */
#define LABEL_WIDTH 10

/* With more active policies or units than this, status lists this many and counts the rest, so
 * that a host running a postgresql@ instance per database still gets a page, not hundreds of
 * lines; --full lists them all, as "thpd-ctl list" does. */
#define STATUS_LIST_MAX 8

static void print_label(CtlOutput *out, const char *label) {
        ctl_printf(out, "  %-*s", LABEL_WIDTH, label);
}

static void print_continuation(CtlOutput *out) {
        ctl_printf(out, "  %-*s", LABEL_WIDTH, "");
}

/* What print_label() prints, for a table's lines; "" gives what print_continuation() does. */
static char *label_prefix(const char *label) {
        return g_strdup_printf("  %-*s", LABEL_WIDTH, label);
}

/* A block of lines under a label wider than the others ("Restart needed:"), the continuation
 * lines indented as far. */
static void print_block_wide(const CtlTable *t, CtlOutput *out, const char *label, int width) {
        g_autofree char *first = g_strdup_printf("  %-*s", width, label), *rest = g_strdup_printf("  %-*s", width, "");

        ctl_table_print_block(t, out, first, rest);
}

/* A table of n columns for a block of status lines: no titles, so that only the cells set the
 * widths. Blocks of one column keep the parts of a line apart by one blank, unaligned, as status
 * has always shown pools, drift and the services it isolates. */
static CtlTable *block_table(size_t n) {
        CtlTable *t = ctl_table_new();

        for (size_t i = 0; i < n; i++)
                ctl_table_add_column(t, "", NULL);
        return t;
}

static bool arg_full;

/* How many of n items to print, and the line that counts the rest. */
static guint list_limit(guint n) {
        return arg_full || n <= STATUS_LIST_MAX ? n : STATUS_LIST_MAX;
}

static void print_more(CtlOutput *out, guint n, guint shown, const char *what) {
        if (shown == n)
                return;
        print_continuation(out);
        ctl_printf(out, "%s%s and %u more %s (--full lists them all)%s\n", ctl_color(CTL_COLOR_GREY),
                   ctl_glyph(CTL_GLYPH_ELLIPSIS), n - shown, what, ctl_color(CTL_COLOR_NORMAL));
}

static const CtlDriftConflict *knob_conflict(const CtlProperties *p, const char *knob) {
        for (guint i = 0; i < p->drift_conflicts->len; i++)
                if (streq(g_array_index(p->drift_conflicts, CtlDriftConflict, i).knob, knob))
                        return &g_array_index(p->drift_conflicts, CtlDriftConflict, i);
        return NULL;
}

/* Off its target, and not because thpd left it to another writer on purpose. */
static bool knob_pending(const CtlProperties *p, const CtlKnob *k) {
        return k->target[0] != '\0' && !streq(k->applied, k->target) && !knob_conflict(p, k->name);
}

static CtlColor overall_color(const CtlProperties *p) {
        bool warn = p->needs_restart->len > 0 || !streq_ptr(p->storm_state, "calm") || p->diagnostics->len > 0 ||
                    p->drift_conflicts->len > 0;

        if (streq_ptr(p->storm_state, "storm") || ctl_count_errors(p->diagnostics) > 0)
                return CTL_COLOR_RED;
        for (guint i = 0; i < p->knobs->len; i++)
                if (knob_pending(p, &g_array_index(p->knobs, CtlKnob, i)))
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

static void print_policies(CtlOutput *out, const CtlProperties *p) {
        guint shown = list_limit(p->active_policies->len);

        print_label(out, "Policies:");
        if (p->active_policies->len == 0)
                ctl_printf(out, "%snone active%s\n", ctl_color(CTL_COLOR_GREY), ctl_color(CTL_COLOR_NORMAL));
        for (guint i = 0; i < shown; i++) {
                const CtlActivePolicy *a = &g_array_index(p->active_policies, CtlActivePolicy, i);
                g_autofree char *units = g_strjoinv(", ", a->units);

                if (i > 0)
                        print_continuation(out);
                ctl_printf(out, "%s (%s)\n", a->name, units);
        }
        print_more(out, p->active_policies->len, shown, "active policies");
}

/* Unknown (UINT64_MAX) counts as nothing: the units known to hold the most come first. */
static uint64_t held_or_zero(const CtlUnitUsage *u) {
        uint64_t held = ctl_unit_usage_total(u);

        return held == UINT64_MAX ? 0 : held;
}

static gint compare_usage_held(gconstpointer a, gconstpointer b) {
        uint64_t x = held_or_zero(*(const CtlUnitUsage *const *) a);
        uint64_t y = held_or_zero(*(const CtlUnitUsage *const *) b);

        return x > y ? -1 : x < y;
}

/* Cut to the units that hold the most. has_sizes: the kernel counts THP sizes (6.10 and later). */
static void print_usage(CtlOutput *out, GArray *usage, bool has_sizes) {
        g_autoptr(GPtrArray) units = NULL;
        g_autoptr(CtlTable) t = NULL;
        g_autofree char *label = label_prefix("THP held:"), *continuation = label_prefix("");
        guint shown;

        if (!usage || usage->len == 0)
                return;
        units = g_ptr_array_sized_new(usage->len);
        for (guint i = 0; i < usage->len; i++)
                g_ptr_array_add(units, &g_array_index(usage, CtlUnitUsage, i));
        shown = list_limit(units->len);
        if (shown < units->len)
                g_ptr_array_sort(units, compare_usage_held);
        t = ctl_unit_usage_table((const CtlUnitUsage *const *) units->pdata, shown);
        ctl_table_print_block(t, out, label, continuation);
        print_more(out, units->len, shown, "units");
        /* smaps AnonHugePages and memcg anon_thp count PMD-sized THPs only, and the per-size
         * counters have no per-cgroup version: a service's mTHP use cannot be shown. */
        print_continuation(out);
        ctl_printf(out, "%sPMD-sized THP only: %s%s\n", ctl_color(CTL_COLOR_GREY),
                   has_sizes ? "the kernel counts smaller sizes machine-wide (Sizes), not per service"
                             : "the kernel counts no smaller size per service",
                   ctl_color(CTL_COLOR_NORMAL));
}

/* The first KnobNotes row of this kind about knob, or NULL. */
static const CtlKnobNote *knob_note(const CtlProperties *p, const char *knob, const char *kind) {
        for (guint i = 0; i < p->knob_notes->len; i++) {
                const CtlKnobNote *n = &g_array_index(p->knob_notes, CtlKnobNote, i);

                if (streq(n->knob, knob) && streq(n->kind, kind))
                        return n;
        }
        return NULL;
}

static void print_knobs(CtlOutput *out, const CtlProperties *p) {
        g_autoptr(CtlTable) t = block_table(4);
        g_autofree char *label = label_prefix("Knobs:"), *continuation = label_prefix("");

        if (p->knobs->len == 0) {
                ctl_printf(out, "%snone on this kernel\n", label);
                return;
        }
        for (guint i = 0; i < p->knobs->len; i++) {
                const CtlKnob *k = &g_array_index(p->knobs, CtlKnob, i);
                bool moved = !streq(k->applied, k->baseline), baseline = streq(k->source, "baseline");
                g_autofree char *reason = knob_reason(k), *moved_from = NULL;
                g_autoptr(GString) why = g_string_new(NULL);
                const CtlDriftConflict *conflict;
                const CtlKnobNote *from_boot = knob_note(p, k->name, "baseline");

                /* "baseline never (thp_anon= on the kernel command line)" says where it came from. */
                if (baseline && from_boot) {
                        g_free(reason);
                        reason = g_strdup(from_boot->note);
                }

                g_string_append_printf(why, "%s%s%s", baseline ? ctl_color(CTL_COLOR_GREY) : "", reason,
                                       baseline ? ctl_color(CTL_COLOR_NORMAL) : "");
                if (knob_pending(p, k))
                        g_string_append_printf(why, "%s %s target %s is not applied%s", ctl_color(CTL_COLOR_RED),
                                               ctl_glyph(CTL_GLYPH_DASH), k->target, ctl_color(CTL_COLOR_NORMAL));
                else if (!streq(k->applied, k->target) && (conflict = knob_conflict(p, k->name)))
                        g_string_append_printf(why, "%s %s target %s left to %s (see Conflict)%s", ctl_color(CTL_COLOR_YELLOW),
                                               ctl_glyph(CTL_GLYPH_DASH), k->target,
                                               conflict->writer[0] ? conflict->writer : "another writer", ctl_color(CTL_COLOR_NORMAL));
                if (knob_note(p, k->name, "mthp-collapse") || knob_note(p, k->name, "pmd-unreachable"))
                        g_string_append_printf(why, " %s see thpd-ctl explain %s", ctl_glyph(CTL_GLYPH_DASH), k->name);
                if (moved)
                        moved_from = g_strdup_printf("(baseline %s)", k->baseline);

                ctl_table_add_string(t, k->name);
                ctl_table_add_string(t, k->applied);
                if (moved)
                        ctl_table_set_color(t, CTL_COLOR_BOLD);
                ctl_table_add_string(t, moved_from);
                ctl_table_add_string(t, why->str);
        }
        ctl_table_print_block(t, out, label, continuation);
}

static void print_pools(CtlOutput *out, const CtlProperties *p) {
        g_autoptr(CtlTable) t = block_table(1);
        g_autofree char *label = label_prefix("Pools:"), *continuation = label_prefix("");

        if (p->pools->len == 0) {
                ctl_table_add_string(t, "none");
                ctl_table_set_color(t, CTL_COLOR_GREY);
        }
        for (guint i = 0; i < p->pools->len; i++) {
                const CtlPool *pool = &g_array_index(p->pools, CtlPool, i);
                g_autoptr(GString) line = g_string_new(NULL);
                char size[24];

                format_page_size(pool->page_size_kb, size);
                g_string_append(line, size);
                if (pool->node >= 0)
                        g_string_append_printf(line, " node %" PRIi32, pool->node);
                g_string_append_printf(line, "  %" PRIu64 "/%" PRIu64 " pages, %" PRIu64 " free", pool->allocated, pool->target,
                                       pool->free);
                if (pool->shortfall[0])
                        g_string_append_printf(line, "; %s%s%s", ctl_color(CTL_COLOR_YELLOW), pool->shortfall,
                                               ctl_color(CTL_COLOR_NORMAL));
                ctl_table_add_string(t, line->str);
        }
        ctl_table_print_block(t, out, label, continuation);
}

/* Whose value an item holds, as a status line says it after the items. */
static char *whose_text(const CtlOwnership *o) {
        if (streq(o->whose, "thpd"))
                return o->detail[0] ? g_strdup_printf("thpd's (%s)", o->detail) : g_strdup("thpd's");
        if (streq(o->whose, "writer"))
                return o->detail[0] ? g_strdup_printf("the writer's, %s, which thpd yielded to", o->detail)
                                    : g_strdup("an unknown writer's, which thpd yielded to");
        if (streq(o->whose, "baseline"))
                return g_strdup("the baseline's");
        return g_strdup(o->whose);
}

/* Items of one owner, for print_ownership(). */
typedef struct OwnerItems {
        char *owner;    /* whose_text() */
        GString *items; /* "enabled, defrag" */
} OwnerItems;

static void owner_items_clear(gpointer p) {
        OwnerItems *o = p;

        g_free(o->owner);
        g_string_free(o->items, TRUE);
}

/* A line per owner, naming the items it holds: "enabled, defrag: thpd's (redis.conf for
 * redis-server.service)", in the order of the first item each holds; then the baseline's, not
 * named: most of a kernel's knobs are, and show and --json name them. */
static void print_ownership(CtlOutput *out, const CtlProperties *p) {
        g_autoptr(CtlTable) t = block_table(1);
        g_autofree char *label = label_prefix("Whose:"), *continuation = label_prefix("");
        g_autoptr(GArray) owners = g_array_new(FALSE, TRUE, sizeof(OwnerItems));
        bool baseline = false;

        if (p->ownership->len == 0)
                return;
        g_array_set_clear_func(owners, owner_items_clear);
        for (guint i = 0; i < p->ownership->len; i++) {
                const CtlOwnership *o = &g_array_index(p->ownership, CtlOwnership, i);
                g_autofree char *owner = NULL;
                OwnerItems *found = NULL;

                if (streq(o->whose, "baseline")) {
                        baseline = true;
                        continue;
                }
                owner = whose_text(o);
                for (guint j = 0; !found && j < owners->len; j++)
                        if (streq(g_array_index(owners, OwnerItems, j).owner, owner))
                                found = &g_array_index(owners, OwnerItems, j);
                if (found)
                        g_string_append_printf(found->items, ", %s", o->item);
                else
                        g_array_append_val(owners, ((OwnerItems) { g_steal_pointer(&owner), g_string_new(o->item) }));
        }
        for (guint i = 0; i < owners->len; i++) {
                const OwnerItems *o = &g_array_index(owners, OwnerItems, i);
                g_autofree char *line = g_strdup_printf("%s: %s", o->items->str, o->owner);

                ctl_table_add_string(t, line);
        }
        if (baseline) {
                ctl_table_add_string(t, owners->len > 0 ? "every other knob and pool: the baseline's"
                                                        : "every knob and pool: the baseline's");
                ctl_table_set_color(t, CTL_COLOR_GREY);
        }
        ctl_table_print_block(t, out, label, continuation);
}

/* The counters of a size as the core's rules take them. */
static void size_stats_from_ctl(const CtlSizeStat *c, ThpSizeStats *ret) {
        *ret = (ThpSizeStats) { .size_kb = c->size_kb };
        for (guint i = 0; i < c->counters->len; i++) {
                const CtlCounter *counter = &g_array_index(c->counters, CtlCounter, i);
                ThpStat stat = thp_stat_from_string(counter->name);

                if (stat < 0)
                        continue;
                ret->value[stat] = counter->value;
                ret->present |= 1u << stat;
        }
}

/* "1200 faults allocated, 30 fell back; 512 pages, 3 partly mapped; 4 splits", from the counters
 * this kernel has. */
static char *size_stats_text(const ThpSizeStats *s) {
        g_autoptr(GString) text = g_string_new(NULL);

#define PART(sep, stat, fmt)                                                                                  \
        do {                                                                                                \
                if (thp_size_stats_has(s, stat))                                                            \
                        g_string_append_printf(text, "%s" fmt, text->len > 0 ? sep : "", s->value[stat]);  \
        } while (false)
        PART("; ", THP_STAT_ANON_FAULT_ALLOC, "%" PRIu64 " faults allocated");
        PART(", ", THP_STAT_ANON_FAULT_FALLBACK, "%" PRIu64 " fell back");
        PART("; ", THP_STAT_NR_ANON, "%" PRIu64 " pages");
        PART(", ", THP_STAT_NR_ANON_PARTIALLY_MAPPED, "%" PRIu64 " partly mapped");
        PART("; ", THP_STAT_SPLIT, "%" PRIu64 " splits");
#undef PART
        if (text->len == 0)
                g_string_append(text, "no counters on this kernel");
        return g_string_free(g_steal_pointer(&text), FALSE);
}

/* Each size that is on or holds pages, with its machine-wide counters since boot. */
static void print_sizes(CtlOutput *out, const CtlProperties *p) {
        g_autoptr(CtlTable) t = block_table(3);
        g_autofree char *label = label_prefix("Sizes:"), *continuation = label_prefix("");

        for (guint i = 0; i < p->size_stats->len; i++) {
                const CtlSizeStat *c = &g_array_index(p->size_stats, CtlSizeStat, i);
                g_autofree char *text = NULL;
                KnobValue enabled = KNOB_VALUE_UNSET;
                ThpSizeStats s;

                size_stats_from_ctl(c, &s);
                if (c->enabled[0] && knob_value_from_string(KNOB_ENABLED, c->enabled, &enabled) < 0)
                        enabled = KNOB_VALUE_UNSET;
                if (!thp_size_stats_shown(&s, enabled))
                        continue;
                text = size_stats_text(&s);
                ctl_table_add_string(t, c->name);
                ctl_table_add_string(t, c->enabled[0] ? c->enabled : "unknown");
                ctl_table_add_string(t, text);
        }
        ctl_table_print_block(t, out, label, continuation);
}

/* " at 64K": the THP size whose faults fall back the most in a storm's figures, where the kernel
 * counts sizes other than the PMD one. */
static void print_storm_size(CtlOutput *out, const CtlStorm *s) {
        for (guint i = 0; i < s->figures->len; i++) {
                const CtlFigure *f = &g_array_index(s->figures, CtlFigure, i);
                char size[24];

                if (!streq(f->name, "mthp_size_kb") || f->value < 1)
                        continue;
                format_page_size((uint64_t) f->value, size);
                ctl_printf(out, " at %s", size);
        }
}

static void print_storms(CtlOutput *out, const CtlProperties *p) {
        bool calm = streq_ptr(p->storm_state, "calm");
        CtlColor color = streq_ptr(p->storm_state, "storm") ? CTL_COLOR_RED : CTL_COLOR_YELLOW;

        print_label(out, "Storms:");
        ctl_printf(out, "%s%s%s", calm ? "" : ctl_color(color), p->storm_state ?: "unknown", calm ? "" : ctl_color(CTL_COLOR_NORMAL));
        for (guint i = 0, shown = 0; i < p->storms->len; i++) {
                const CtlStorm *s = &g_array_index(p->storms, CtlStorm, i);

                if (streq(s->phase, "calm"))
                        continue;
                if (shown++ == 0)
                        ctl_printf(out, " %s %s %s", ctl_glyph(CTL_GLYPH_DASH), s->kind, s->phase);
                else
                        ctl_printf(out, ", %s %s", s->kind, s->phase);
                print_storm_size(out, s);
        }
        ctl_printf(out, " (action: %s)\n", p->storm_action ?: "unknown");
}

/* The override as show gives it, and how long it lasts. */
static void print_override(CtlOutput *out, const CtlProperties *p) {
        g_autoptr(CtlTable) t = NULL;
        g_autofree char *values = NULL;

        if (p->override->len == 0)
                return;
        t = ctl_property_table(p, "Override", NULL);
        values = ctl_table_cell_text(t, 0, 0);
        print_label(out, "Override:");
        if (p->override_expires_at > 0) {
                g_autofree char *when = ctl_format_timestamp(p->override_expires_at);

                ctl_printf(out, "%s until %s\n", values, when);
        } else
                ctl_printf(out, "%s until cleared\n", values);
}

/* What a unit that started before its policy still holds: a THP change affects new allocations
 * only, so that is what a restart would give back. */
static void print_needs_restart(CtlOutput *out, const CtlProperties *p, GArray *usage) {
        static const char label[] = "Restart needed:";
        g_autoptr(CtlTable) t = block_table(1);
        guint shown = list_limit(p->needs_restart->len);

        for (guint i = 0; i < shown; i++) {
                const CtlPair *pair = &g_array_index(p->needs_restart, CtlPair, i);
                const CtlUnitUsage *u = ctl_unit_usage_find(usage, pair->key);
                uint64_t held = u ? ctl_unit_usage_total(u) : UINT64_MAX;
                g_autoptr(GString) line = g_string_new(NULL);

                g_string_append_printf(line, "%s%s%s", ctl_color(CTL_COLOR_YELLOW), pair->key, ctl_color(CTL_COLOR_NORMAL));
                if (held == UINT64_MAX)
                        g_string_append_printf(line, " (%s applied after it started)", pair->value);
                else if (held == 0)
                        g_string_append_printf(line, " (%s applied after it started; it holds no THP from before)", pair->value);
                else {
                        g_autofree char *size = ctl_format_bytes(held);

                        g_string_append_printf(line, " holds %s in THP from before %s", size, pair->value);
                }
                ctl_table_add_string(t, line->str);
        }
        if (shown < p->needs_restart->len) {
                g_autofree char *more = g_strdup_printf("%s and %u more units (--full lists them all)", ctl_glyph(CTL_GLYPH_ELLIPSIS),
                                                        p->needs_restart->len - shown);

                ctl_table_add_string(t, more);
                ctl_table_set_color(t, CTL_COLOR_GREY);
        }
        /* The label and one blank. */
        print_block_wide(t, out, label, (int) sizeof(label));
}

/* Services of Scope=service and Scope=auto policies: THP taken away from their processes only,
 * or always kept for them alone, and how; what a Scope=auto service votes, and a note, on lines
 * of their own below it. */
static void print_isolated(CtlOutput *out, const CtlProperties *p) {
        g_autoptr(CtlTable) t = block_table(1);
        g_autofree char *label = label_prefix("Isolated:"), *continuation = label_prefix("");

        for (guint i = 0; i < p->isolated->len; i++) {
                const CtlIsolation *iso = &g_array_index(p->isolated, CtlIsolation, i);
                bool bad = streq(iso->state, "not-isolated");
                g_autofree char *line = NULL;

                line = g_strdup_printf("%s THP %s for its processes only%s (%s, Scope=%s, via %s): %s%s%s", iso->unit, iso->thp,
                                       streq(iso->via, "machine-wide") ? " where the platform allows it" : "",
                                       iso->policy, iso->scope, iso->via, ctl_color(bad ? CTL_COLOR_YELLOW : CTL_COLOR_NORMAL),
                                       iso->state, ctl_color(CTL_COLOR_NORMAL));
                ctl_table_add_string(t, line);
                if (streq(iso->scope, "auto"))
                        ctl_table_add_string(t, iso->machine_wide
                                                        ? "  also votes machine-wide: no other active policy wants a looser enabled"
                                                        : "  met per service: its machine-wide votes stand aside for a policy that "
                                                          "wants a looser enabled");
                if (iso->note[0]) {
                        g_autofree char *note = g_strconcat("  ", iso->note, NULL);

                        ctl_table_add_string(t, note);
                }
        }
        ctl_table_print_block(t, out, label, continuation);
}

/* The blanket MemoryTHP=madvise of a Scope=service policy with Enabled=always: since when, and
 * how many running services it reaches. Where there is none but such a policy runs, say so: then
 * every service has the machine's always and nothing is counted. */
static void print_blanket(CtlOutput *out, const CtlProperties *p) {
        g_autoptr(GString) line = g_string_new(NULL);
        g_autoptr(GPtrArray) before = g_ptr_array_new();
        g_autofree char *since = NULL;
        unsigned under = 0, exempt = 0;

        if (p->blanket_since == 0) {
                for (guint i = 0; i < p->isolated->len; i++) {
                        const CtlIsolation *iso = &g_array_index(p->isolated, CtlIsolation, i);
                        const char *why = strstr(iso->note, "no blanket, as ");

                        if (!streq(iso->via, "machine-wide"))
                                continue;
                        print_label(out, "Blanket:");
                        ctl_printf(out, "none, so every service runs at the machine's enabled; no service counted (%s)\n",
                                   why ? why + strlen("no blanket, as ") : iso->note);
                        return;
                }
                return;
        }
        for (guint i = 0; i < p->blanket->len; i++) {
                const CtlPair *row = &g_array_index(p->blanket, CtlPair, i);

                if (streq(row->value, "under"))
                        under++;
                else if (streq(row->value, "before"))
                        g_ptr_array_add(before, row->key);
                else
                        exempt++;
        }
        since = ctl_format_timestamp(p->blanket_since);
        g_string_append_printf(line, "since %s: %u %s at madvise under it; ", since, under,
                               under == 1 ? "service" : "services");
        if (before->len == 0)
                g_string_append(line, "none started before it");
        else {
                guint shown = list_limit(before->len);

                g_string_append_printf(line, "%s%u started before it (restart to apply):", ctl_color(CTL_COLOR_YELLOW),
                                       before->len);
                for (guint i = 0; i < shown; i++)
                        g_string_append_printf(line, "%s %s", i > 0 ? "," : "", (const char *) g_ptr_array_index(before, i));
                if (shown < before->len)
                        g_string_append_printf(line, " %s and %u more (--full lists them all)", ctl_glyph(CTL_GLYPH_ELLIPSIS),
                                               before->len - shown);
                g_string_append(line, ctl_color(CTL_COLOR_NORMAL));
        }
        g_string_append_printf(line, "; %u exempt\n", exempt);
        print_label(out, "Blanket:");
        ctl_printf(out, "%s", line->str);
}

/* Writers thpd stopped fighting, then the last knobs found changed behind its back. */
static void print_drift(CtlOutput *out, const CtlProperties *p) {
        g_autoptr(CtlTable) conflicts = block_table(1), drift = block_table(1);
        g_autofree char *conflict_label = label_prefix("Conflict:"), *drift_label = label_prefix("Drift:"),
                        *continuation = label_prefix("");

        for (guint i = 0; i < p->drift_conflicts->len; i++) {
                const CtlDriftConflict *c = &g_array_index(p->drift_conflicts, CtlDriftConflict, i);
                g_autofree char *since = ctl_format_timestamp(c->since), *line = NULL;

                line = g_strdup_printf("%s%s%s (since %s; until thpd-ctl reload or %s stops)", ctl_color(CTL_COLOR_YELLOW), c->text,
                                       ctl_color(CTL_COLOR_NORMAL), since, c->writer[0] ? c->writer : "the writer");
                ctl_table_add_string(conflicts, line);
        }
        for (guint i = 0; i < p->recent_drift->len; i++) {
                const CtlDrift *d = &g_array_index(p->recent_drift, CtlDrift, i);
                g_autofree char *when = ctl_format_timestamp(d->written ?: d->when), *action = ctl_drift_action(d), *line = NULL;

                line = g_strdup_printf("%s %s=%s instead of %s, %s; %s", when, d->knob, d->found, d->expected, d->who, action);
                ctl_table_add_string(drift, line);
        }
        ctl_table_print_block(conflicts, out, conflict_label, continuation);
        ctl_table_print_block(drift, out, drift_label, continuation);
}

/* "; policy files: 1 error, 2 warnings" for the header, or "". */
static char *problems_summary(const CtlProperties *p) {
        unsigned errors = ctl_count_errors(p->diagnostics), warnings = p->diagnostics->len - errors;

        if (p->diagnostics->len == 0)
                return g_strdup("");
        if (errors > 0 && warnings > 0)
                return g_strdup_printf("; policy files: %u error%s, %u warning%s", errors, errors == 1 ? "" : "s", warnings,
                                       warnings == 1 ? "" : "s");
        if (errors > 0)
                return g_strdup_printf("; policy files: %u error%s", errors, errors == 1 ? "" : "s");
        return g_strdup_printf("; policy files: %u warning%s", warnings, warnings == 1 ? "" : "s");
}

static void print_problems(CtlOutput *out, const CtlProperties *p) {
        if (p->diagnostics->len == 0)
                return;
        ctl_printf(out, "\n  Problems:\n");
        ctl_print_diagnostics(out, p->diagnostics, "    ");
}

static void print_status(CtlOutput *out, const CtlProperties *p, GArray *usage) {
        g_autofree char *problems = problems_summary(p);

        ctl_printf(out, "%s%s%s thpd %s %s %s%s\n", ctl_color(overall_color(p)), ctl_glyph(CTL_GLYPH_BULLET),
                   ctl_color(CTL_COLOR_NORMAL), p->version ?: "(unknown version)", ctl_glyph(CTL_GLYPH_DASH), p->status ?: "",
                   problems);
        print_policies(out, p);
        print_usage(out, usage, p->size_stats->len > 0);
        print_knobs(out, p);
        print_pools(out, p);
        print_sizes(out, p);
        print_ownership(out, p);
        print_storms(out, p);
        print_override(out, p);
        print_isolated(out, p);
        print_blanket(out, p);
        print_needs_restart(out, p, usage);
        print_drift(out, p);
        print_problems(out, p);
}

/* Reads every property once and prints it: as JSON (only the named properties; NULL for all)
 * with --json, otherwise through print_text. With usage (status), also what GetUnitUsage says. */
static int print_properties(const CtlOptions *o, CtlOutput *out, char *const *names, bool usage,
                            void (*print_text)(CtlOutput *out, const CtlProperties *p, char *const *names, GArray *usage)) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(ctl_async_call_done) CtlAsyncCall get_all = {};
        _cleanup_(ctl_unit_usage_call_done) CtlUsageCall usage_call = {};
        g_autoptr(GArray) unit_usage = NULL;
        unsigned pending = 0;
        bool usage_sent = false;
        CtlProperties p;
        int r;

        r = ctl_bus_open(o, &bus);
        if (r != CTL_EXIT_OK)
                return r;
        /* GetUnitUsage first: thpd answers in order, and its answer may need calls to the manager
         * (here or in thpd) that can run while thpd works out GetAll. */
        if (usage) {
                r = ctl_unit_usage_call(bus, &pending, &usage_call);
                if (r < 0)
                        log_warning_errno(r, "Cannot ask how much THP the units hold: %m");
                usage_sent = r >= 0;
        }
        r = ctl_get_properties_async(o, bus, &pending, &get_all);
        if (r != CTL_EXIT_OK)
                return r;
        r = ctl_bus_wait(bus, &pending);
        if (r < 0)
                return ctl_log_bus_error(o, &SD_BUS_ERROR_NULL, r, "read thpd's state");
        r = ctl_get_properties_finish(o, bus, &get_all, &p);
        if (r != CTL_EXIT_OK)
                return r;
        if (usage_sent)
                unit_usage = ctl_unit_usage_finish(&usage_call);

        if (o->json) {
                g_autoptr(CtlJson) b = ctl_json_new();

                ctl_json_begin_object(b, NULL);
                ctl_properties_json_members(&p, names, b);
                if (usage)
                        ctl_unit_usage_to_json(unit_usage, b);
                ctl_json_end_object(b);
                r = ctl_json_print(b, out->f);
        } else {
                print_text(out, &p, names, unit_usage);
                r = ctl_output_flush(out) == 0 ? CTL_EXIT_OK : CTL_EXIT_FAILURE;
        }
        ctl_properties_done(&p);
        return r;
}

static void print_status_text(CtlOutput *out, const CtlProperties *p, char *const *names, GArray *usage) {
        print_status(out, p, usage);
}

int verb_status(const CtlOptions *o, CtlOutput *out, int argc, char *argv[]) {
        arg_full = o->full;
        return print_properties(o, out, NULL, true, print_status_text);
}

/* ---- show ---- */

/* --value: only what follows "Key=". */
static bool value_only;

static void kv(CtlOutput *out, const char *key, const char *value) {
        if (value_only)
                ctl_printf(out, "%s\n", value);
        else
                ctl_printf(out, "%s=%s\n", key, value);
}

/* A list property's rows as NAME.ID.FIELD=, but for those with a form of their own: a problem as
 * verify prints it and a drift event each in one line, the override in one. Knobs lists no names
 * first: every knob the kernel has is there. */
static void show_property(CtlOutput *out, const CtlProperties *p, const char *name) {
        bool one_line = streq(name, "PolicyDiagnostics") || streq(name, "RecentDrift") || streq(name, "Override");
        g_autoptr(CtlTable) t = ctl_property_table(p, name, NULL);
        g_autofree char *value = ctl_property_text(p, name);

        if (value)
                kv(out, name, value);
        else if (t && one_line)
                ctl_table_print_lines(t, out, name, value_only);
        else if (t)
                ctl_table_print_keyed(t, out, name, !streq(name, "Knobs"), value_only);
}

static void show_properties(CtlOutput *out, const CtlProperties *p, char *const *names, GArray *usage) {
        for (size_t i = 0; names[i]; i++)
                show_property(out, p, names[i]);
}

/* PROPERTY arguments and -p/--property= name the same thing; either or both may be given. */
int verb_show(const CtlOptions *o, CtlOutput *out, int argc, char *argv[]) {
        g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);

        for (int i = 0; i < argc; i++)
                g_ptr_array_add(names, g_strdup(argv[i]));
        for (size_t i = 0; o->properties && o->properties[i]; i++)
                g_ptr_array_add(names, g_strdup(o->properties[i]));
        for (guint i = 0; i < names->len; i++) {
                const char *name = g_ptr_array_index(names, i);
                const char *match;

                if (g_strv_contains(ctl_property_names, name))
                        continue;
                match = closest_match(name, (const char *const *) ctl_property_names, g_strv_length((char **) ctl_property_names));
                if (match)
                        return ctl_usage_error("Unknown property '%s'; did you mean '%s'?", name, match);
                g_autofree char *known = g_strjoinv(", ", (char **) ctl_property_names);
                return ctl_usage_error("Unknown property '%s'; thpd has: %s.", name, known);
        }
        if (names->len == 0)
                for (size_t i = 0; ctl_property_names[i]; i++)
                        g_ptr_array_add(names, g_strdup(ctl_property_names[i]));
        g_ptr_array_add(names, NULL);

        value_only = o->value;
        return print_properties(o, out, (char *const *) names->pdata, false, show_properties);
}
