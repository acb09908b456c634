/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib.h>
#include <inttypes.h>

#include "metrics.h"
#include "policy.h"
#include "util.h"


typedef struct Family {
        const char *name;
        const char *type; /* "gauge" or "counter" */
        const char *help; /* no backslash or newline: it is not escaped */
        bool started;
} Family;

#define FAMILY(n, t, h) (&(Family) { .name = (n), .type = (t), .help = (h) })

/* A label value in the exposition format: UTF-8, with backslash, double quote and line feed
 * escaped. Unit names carry backslashes ("dev-disk-by\x2duuid-….service"). */
static void append_label_value(GString *out, const char *value) {
        g_autofree char *valid = g_utf8_make_valid(value ?: "", -1);

        for (const char *c = valid; *c; c++)
                switch (*c) {
                case '\\':
                        g_string_append(out, "\\\\");
                        break;
                case '"':
                        g_string_append(out, "\\\"");
                        break;
                case '\n':
                        g_string_append(out, "\\n");
                        break;
                default:
                        g_string_append_c(out, *c);
                }
}

/* labels: name, value, name, value, ..., NULL (or NULL for none). */
static void sample(GString *out, Family *f, const char *const *labels, const char *value) {
        if (!f->started) {
                g_string_append_printf(out, "# HELP %s %s\n# TYPE %s %s\n", f->name, f->help, f->name, f->type);
                f->started = true;
        }
        g_string_append(out, f->name);
        for (size_t i = 0; labels && labels[i]; i += 2) {
                g_string_append_printf(out, "%s%s=\"", i == 0 ? "{" : ",", labels[i]);
                append_label_value(out, labels[i + 1]);
                g_string_append_c(out, '"');
                if (!labels[i + 2])
                        g_string_append_c(out, '}');
        }
        g_string_append_printf(out, " %s\n", value);
}

static void sample_u64(GString *out, Family *f, const char *const *labels, uint64_t value) {
        char buf[24];

        snprintf(buf, sizeof buf, "%" PRIu64, value);
        sample(out, f, labels, buf);
}

/* Seconds, as Prometheus wants times and durations, exact to the µs. */
static void sample_seconds(GString *out, Family *f, const char *const *labels, uint64_t usec) {
        char buf[32];

        if (usec % USEC_PER_SEC == 0)
                snprintf(buf, sizeof buf, "%" PRIu64, usec / USEC_PER_SEC);
        else
                snprintf(buf, sizeof buf, "%" PRIu64 ".%06" PRIu64, usec / USEC_PER_SEC, usec % USEC_PER_SEC);
        sample(out, f, labels, buf);
}

static const char *value_or_empty(Knob k, KnobValue v, char buf[static 24]) {
        return v == KNOB_VALUE_UNSET ? "" : knob_value_to_string(k, v, buf);
}

static void format_health(GString *out, const MetricsInput *in) {
        const MetricsCounters *c = in->counters;

        sample(out, FAMILY("thpd_build_info", "gauge", "The version of the running thpd; always 1."),
               (const char *[]) { "version", in->version, NULL }, "1");
        sample_seconds(out, FAMILY("thpd_start_time_seconds", "gauge", "When thpd started, in seconds since the epoch."),
                       NULL, in->start_time_usec);
        sample(out, FAMILY("thpd_systemd_manager_ready", "gauge",
                           "1 once the systemd manager answered and its units were listed, else 0: thpd cannot follow units."),
               NULL, in->units_ready ? "1" : "0");
        sample_u64(out, FAMILY("thpd_last_apply_errors", "gauge",
                               "Knobs and hugetlb pools the last apply could not read or set; 0 when it fully succeeded."),
                   NULL, in->last_apply_errors);
        sample_u64(out, FAMILY("thpd_knob_writes_total", "counter", "Knob values written that the kernel took."),
                   NULL, c->knob_writes);
        sample_u64(out, FAMILY("thpd_knob_errors_total", "counter", "Knob reads and writes that failed."),
                   NULL, c->knob_errors);
        sample_u64(out, FAMILY("thpd_reloads_total", "counter", "Reloads of policies and settings (SIGHUP, Reload())."),
                   NULL, c->reloads);
}

static void format_knobs(GString *out, const MetricsInput *in) {
        Family *info = FAMILY("thpd_knob_info", "gauge",
                              "One series per knob: its value as the kernel reports it, the target, the baseline, and the "
                              "source of the target (policy file and unit for a policy); always 1.");
        Family *value = FAMILY("thpd_knob_value", "gauge", "The value the kernel reports for each numeric knob.");

        for (size_t i = 0; i < in->n_knobs; i++) {
                const MetricsKnob *k = &in->knobs[i];
                char applied[24], target[24], baseline[24];

                sample(out, info,
                       (const char *[]) {
                               "knob", knob_name(k->knob),
                               "value", value_or_empty(k->knob, k->applied, applied),
                               "target", value_or_empty(k->knob, k->target, target),
                               "baseline", value_or_empty(k->knob, k->baseline, baseline),
                               "source", k->source == SOURCE_NONE ? "" : source_kind_to_string(k->source),
                               "policy", k->policy ?: "",
                               "unit", k->unit ?: "",
                               NULL },
                       "1");
        }
        for (size_t i = 0; i < in->n_knobs; i++) {
                const MetricsKnob *k = &in->knobs[i];

                if (knob_info(k->knob)->kind == KNOB_KIND_NUMBER && k->applied != KNOB_VALUE_UNSET)
                        sample_u64(out, value, (const char *[]) { "knob", knob_name(k->knob), NULL }, (uint64_t) k->applied);
        }
}

typedef struct FileProblems {
        const char *file;
        unsigned errors, warnings;
} FileProblems;

static void format_policies(GString *out, const MetricsInput *in) {
        g_autoptr(GArray) files = g_array_new(FALSE, TRUE, sizeof(FileProblems));
        const GPtrArray *items = in->policy_diagnostics ? in->policy_diagnostics->items : NULL;
        Family *problems = FAMILY("thpd_policy_problems", "gauge",
                                  "Problems the last policy load found, per file and severity (error: the file is ignored).");
        Family *active = FAMILY("thpd_policy_active", "gauge",
                                "1 while a unit of the policy is starting or running, else 0.");
        Family *units = FAMILY("thpd_active_unit_info", "gauge", "One series per unit that keeps a policy active; always 1.");
        Family *restart = FAMILY("thpd_unit_needs_restart_info", "gauge",
                                 "One series per unit that started before its policy applied and keeps what it mapped "
                                 "until it restarts; always 1.");
        unsigned invalid = 0;

        /* Per file, in the order of the first problem, so that the same load gives the same text. */
        for (guint i = 0; items && i < items->len; i++) {
                const Diagnostic *d = g_ptr_array_index(items, i);
                FileProblems *f = NULL;

                for (guint j = 0; j < files->len && !f; j++)
                        if (streq(g_array_index(files, FileProblems, j).file, d->file))
                                f = &g_array_index(files, FileProblems, j);
                if (!f) {
                        g_array_append_val(files, ((FileProblems) { .file = d->file }));
                        f = &g_array_index(files, FileProblems, files->len - 1);
                }
                if (d->level == DIAGNOSTIC_ERROR)
                        f->errors++;
                else
                        f->warnings++;
        }
        for (guint j = 0; j < files->len; j++)
                invalid += g_array_index(files, FileProblems, j).errors > 0;

        sample_u64(out, FAMILY("thpd_policies_loaded", "gauge", "Policy files loaded and in use."), NULL, in->n_policies);
        sample_u64(out, FAMILY("thpd_policy_files_invalid", "gauge",
                               "Policy files (or directories) with an error: thpd ignores them."),
                   NULL, invalid);
        for (guint j = 0; j < files->len; j++) {
                const FileProblems *f = &g_array_index(files, FileProblems, j);

                if (f->errors > 0)
                        sample_u64(out, problems, (const char *[]) { "file", f->file, "severity", "error", NULL }, f->errors);
                if (f->warnings > 0)
                        sample_u64(out, problems, (const char *[]) { "file", f->file, "severity", "warning", NULL },
                                   f->warnings);
        }

        for (size_t i = 0; i < in->n_policies; i++)
                sample(out, active, (const char *[]) { "policy", in->policies[i].name, NULL },
                       in->policies[i].active ? "1" : "0");
        for (size_t i = 0; i < in->n_policies; i++) {
                const MetricsPolicy *p = &in->policies[i];

                for (size_t j = 0; p->active && j < p->n_units; j++)
                        sample(out, units, (const char *[]) { "policy", p->name, "unit", p->units[j], NULL }, "1");
        }
        for (size_t i = 0; i < in->n_needs_restart; i++)
                sample(out, restart,
                       (const char *[]) { "unit", in->needs_restart[i].unit, "policy", in->needs_restart[i].policy, NULL },
                       "1");

        sample_u64(out, FAMILY("thpd_override_knobs", "gauge", "Knobs an admin override sets (thpd-ctl override)."), NULL,
                   in->n_override);
        if (in->n_override > 0 && in->override_expires_usec > 0)
                sample_seconds(out, FAMILY("thpd_override_expiry_timestamp_seconds", "gauge",
                                           "When the admin override expires, in seconds since the epoch."),
                               NULL, in->override_expires_usec);
}

static void format_pools(GString *out, const MetricsInput *in) {
        static const char *const help[] = {
                "Pages the hugetlb pool has without any policy.",
                "Pages active policies add to the hugetlb pool (and stopped ones during their grace period).",
                "Pages thpd sizes the hugetlb pool to: baseline plus requested.",
                "Pages the hugetlb pool has (nr_hugepages as read back).",
                "Free pages of the hugetlb pool, as of the last change thpd made or saw.",
                "Pages the kernel did not give: target minus allocated; 0 when the target was reached.",
        };
        Family families[] = {
                { "thpd_hugetlb_pool_baseline_pages", "gauge", help[0], false },
                { "thpd_hugetlb_pool_requested_pages", "gauge", help[1], false },
                { "thpd_hugetlb_pool_target_pages", "gauge", help[2], false },
                { "thpd_hugetlb_pool_allocated_pages", "gauge", help[3], false },
                { "thpd_hugetlb_pool_free_pages", "gauge", help[4], false },
                { "thpd_hugetlb_pool_shortfall_pages", "gauge", help[5], false },
        };

        /* Family by family: the format wants each family's samples together. */
        for (size_t f = 0; f < ELEMENTSOF(families); f++)
                for (size_t i = 0; i < in->n_pools; i++) {
                        const MetricsPool *p = &in->pools[i];
                        const uint64_t values[] = {
                                p->baseline, p->requested, p->target, p->allocated, p->free,
                                p->target > p->allocated ? p->target - p->allocated : 0,
                        };
                        char size[24], node[16];

                        format_page_size(p->page_size_kb, size);
                        if (p->node == POOL_NODE_ANY)
                                snprintf(node, sizeof node, "all");
                        else
                                snprintf(node, sizeof node, "%d", p->node);
                        sample_u64(out, &families[f], (const char *[]) { "page_size", size, "node", node, NULL }, values[f]);
                }
}

static void format_storms(GString *out, const MetricsInput *in) {
        const MetricsCounters *c = in->counters;
        Family *phase = FAMILY("thpd_storm_phase", "gauge",
                               "1 for the phase each storm kind is in (calm, suspect, storm, cooling), 0 for the others.");
        Family *detected = FAMILY("thpd_storms_detected_total", "counter", "Storms detected, per kind.");
        Family *seconds = FAMILY("thpd_storm_seconds_total", "counter",
                                 "Time spent in storms that have cleared, from detection to clearing, per kind.");
        Family *last = FAMILY("thpd_storm_last_detected_timestamp_seconds", "gauge",
                              "When the last storm of each kind was detected, in seconds since the epoch.");

        sample(out, FAMILY("thpd_storm_detection_enabled", "gauge",
                           "1 while thpd watches for compaction and khugepaged storms, 0 when it cannot."),
               NULL, in->storm_watching ? "1" : "0");
        sample(out, FAMILY("thpd_storm_action_info", "gauge",
                           "What thpd does about a storm (thpd.conf [Storm] Action=): log or mitigate; always 1."),
               (const char *[]) { "action", storm_action_to_string(in->storm_action), NULL }, "1");
        if (!in->storm_watching)
                return;

        for (StormKind k = 0; k < _STORM_KIND_MAX; k++)
                for (StormPhase p = 0; p < _STORM_PHASE_MAX; p++)
                        sample(out, phase,
                               (const char *[]) { "kind", storm_kind_to_string(k), "phase", storm_phase_to_string(p), NULL },
                               in->storm_phases[k] == p ? "1" : "0");
        for (StormKind k = 0; k < _STORM_KIND_MAX; k++)
                sample_u64(out, detected, (const char *[]) { "kind", storm_kind_to_string(k), NULL }, c->storms_detected[k]);
        for (StormKind k = 0; k < _STORM_KIND_MAX; k++)
                sample_seconds(out, seconds, (const char *[]) { "kind", storm_kind_to_string(k), NULL }, c->storm_usec[k]);
        for (StormKind k = 0; k < _STORM_KIND_MAX; k++)
                if (c->storm_last_detected_usec[k] > 0)
                        sample_seconds(out, last, (const char *[]) { "kind", storm_kind_to_string(k), NULL },
                                       c->storm_last_detected_usec[k]);
        sample_u64(out, FAMILY("thpd_storm_mitigation_level", "gauge",
                               "The storm mitigation step in force: 0 none, 1 defrag, 2 khugepaged, 3 enabled=madvise."),
                   NULL, in->mitigation_level);
        sample_u64(out, FAMILY("thpd_storm_mitigation_steps_total", "counter",
                               "Times storm mitigation went a step further (Action=mitigate)."),
                   NULL, c->mitigation_steps);
}

/* One family per counter of hugepages-<N>kB/stats/, a sample per size that has it: the kernel's
 * counters as they are when the text is made, so the metrics file has them as of its last write. */
static void format_size_stats(GString *out, const MetricsInput *in) {
        for (ThpStat stat = 0; stat < _THP_STAT_MAX; stat++) {
                bool gauge = thp_stat_is_gauge(stat);
                g_autofree char *name = g_strdup_printf("thpd_thp_size_%s%s", thp_stat_to_string(stat), gauge ? "" : "_total");
                g_autofree char *help = g_strdup_printf(
                        gauge ? "The kernel's %s of each THP size (hugepages-<N>kB/stats/), machine-wide, now."
                              : "The kernel's %s of each THP size (hugepages-<N>kB/stats/), machine-wide, since boot.",
                        thp_stat_to_string(stat));
                Family family = { .name = name, .type = gauge ? "gauge" : "counter", .help = help };

                for (size_t i = 0; i < in->n_size_stats; i++) {
                        const ThpSizeStats *s = &in->size_stats[i];
                        char size[24];

                        if (!thp_size_stats_has(s, stat))
                                continue;
                        format_page_size(s->size_kb, size);
                        sample_u64(out, &family, (const char *[]) { "size", size, NULL }, s->value[stat]);
                }
        }
}

static void format_drift(GString *out, const MetricsInput *in) {
        Family *drift = FAMILY("thpd_knob_drift_total", "counter",
                               "Times a knob was found changed behind thpd's back, per knob and the unit credited with "
                               "the change (\"unknown\" when none could be).");

        for (size_t i = 0; i < in->n_drift; i++)
                sample_u64(out, drift, (const char *[]) { "knob", in->drift[i].knob, "writer", in->drift[i].writer, NULL },
                           in->drift[i].count);
        sample_u64(out, FAMILY("thpd_knob_drift_conflicts", "gauge",
                               "Knobs thpd no longer restores because one writer keeps rewriting them (Drift.MaxRestores=)."),
                   NULL, in->n_drift_conflicts);
}

char *metrics_format(const MetricsInput *in) {
        GString *out = g_string_sized_new(8192);

        format_health(out, in);
        format_knobs(out, in);
        format_policies(out, in);
        format_pools(out, in);
        format_storms(out, in);
        format_size_stats(out, in);
        format_drift(out, in);
        return g_string_free(out, FALSE);
}
