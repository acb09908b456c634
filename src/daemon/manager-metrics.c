/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <sys/stat.h>

#include "config.h"
#include "log.h"
#include "manager-drift.h"
#include "manager-metrics.h"
#include "runtime-file.h"
#include "storm.h"
#include "thp-stats-read.h"
#include "util.h"

/* node_exporter runs as its own user; thpd.service's UMask=0077 would hide the file from it. */
#define METRICS_FILE_MODE 0644

/* Each knob this kernel has, with n_override counted as the knobs are listed. */
static GArray *metrics_knobs(const Manager *m, unsigned *ret_n_override) {
        GArray *knobs = g_array_new(FALSE, TRUE, sizeof(MetricsKnob));
        KnobValue baseline[_KNOB_MAX];
        unsigned n_override = 0;

        manager_effective_baseline(m, baseline);
        FOREACH_KNOB(k) {
                const Source *s = &m->target.source[k];
                /* As the Knobs property: no target or source before the first resolution. */
                bool resolved = manager_knob_resolved(m, k);
                bool by_policy = resolved && s->kind == SOURCE_POLICY;

                if (!m->present[k])
                        continue;
                g_array_append_val(knobs, ((MetricsKnob) {
                        .knob = k,
                        .applied = m->applied[k],
                        .target = resolved ? m->target.value[k] : KNOB_VALUE_UNSET,
                        .baseline = baseline[k],
                        .source = resolved ? s->kind : SOURCE_NONE,
                        .policy = by_policy ? s->policy->name : NULL,
                        .unit = by_policy ? s->unit : NULL,
                }));
                n_override += m->override[k] != KNOB_VALUE_UNSET;
        }
        *ret_n_override = n_override;
        return knobs;
}

static GArray *metrics_policies(const Manager *m) {
        GArray *policies = g_array_new(FALSE, TRUE, sizeof(MetricsPolicy));

        /* m->policies, not the runtime table: that one remembers policies a reload removed. */
        for (guint i = 0; i < m->policies->len; i++) {
                const Policy *p = g_ptr_array_index(m->policies, i);
                const PolicyRuntime *rt = g_hash_table_lookup(m->plan.policy_runtime, p->name);

                g_array_append_val(policies, ((MetricsPolicy) {
                        .name = p->name,
                        .active = rt && rt->active,
                        .units = rt ? (const char *const *) rt->units->pdata : NULL,
                        .n_units = rt ? rt->units->len : 0,
                }));
        }
        return policies;
}

static GArray *metrics_pools(const Manager *m) {
        GArray *pools = g_array_new(FALSE, TRUE, sizeof(MetricsPool));

        for (guint i = 0; i < m->pools->len; i++) {
                const PoolStatus *p = &g_array_index(m->pools, PoolStatus, i);
                const PoolTarget *t = target_find_pool(&m->target, p->page_size_kb, p->node);
                const PoolBaseline *b = baseline_find_pool(&m->baseline, p->page_size_kb, p->node);

                g_array_append_val(pools, ((MetricsPool) {
                        .page_size_kb = p->page_size_kb,
                        .node = p->node,
                        .baseline = b ? b->pages : 0,
                        .requested = t ? t->requested : 0,
                        .target = p->target,
                        .allocated = p->allocated,
                        .free = p->free,
                }));
        }
        return pools;
}

static GArray *metrics_restarts(const Manager *m) {
        GArray *restarts = g_array_new(FALSE, TRUE, sizeof(MetricsRestart));
        g_autoptr(GPtrArray) units = manager_needs_restart_sorted(m);

        for (guint i = 0; i < units->len; i++) {
                const char *u = g_ptr_array_index(units, i);

                g_array_append_val(restarts, ((MetricsRestart) { .unit = u, .policy = g_hash_table_lookup(m->plan.needs_restart, u) }));
        }
        return restarts;
}

char *manager_metrics_render(const Manager *m) {
        g_autoptr(GArray) knobs = NULL;
        g_autoptr(GArray) policies = metrics_policies(m);
        g_autoptr(GArray) pools = metrics_pools(m);
        g_autoptr(GArray) restarts = metrics_restarts(m);
        g_autoptr(GArray) drift = manager_drift_counts(m);
        g_autofree ThpSizeStats *size_stats = NULL;
        int r;
        MetricsInput in = {
                .version = THPD_VERSION,
                .start_time_usec = m->start_time_usec,
                .units_ready = m->units && unit_tracker_is_ready(m->units),
                .last_apply_errors = m->last_apply_errors,
                .policy_diagnostics = &m->policy_diagnostics,
                .override_expires_usec = m->override_expires_realtime,
                .storm_watching = m->storm != NULL,
                .storm_action = m->settings.storm.action,
                .mitigation_level = m->mitigation_level,
                .counters = &m->counters,
                .policies = (const MetricsPolicy *) policies->data,
                .n_policies = policies->len,
                .pools = (const MetricsPool *) pools->data,
                .n_pools = pools->len,
                .needs_restart = (const MetricsRestart *) restarts->data,
                .n_needs_restart = restarts->len,
                .drift = (const MetricsDrift *) drift->data,
                .n_drift = drift->len,
                .n_drift_conflicts = m->drift.conflicts->len,
        };

        /* Unreadable counters are left out, as on a kernel without them; the log says so once
         * at debug level, like the SizeStats property. */
        r = thp_stats_read(m->sysfs_root, &size_stats, &in.n_size_stats);
        if (r < 0)
                log_debug_errno(r, "Cannot list the per-size THP counters under %s: %m", m->sysfs_root);
        in.size_stats = size_stats;
        knobs = metrics_knobs(m, &in.n_override);
        in.knobs = (const MetricsKnob *) knobs->data;
        in.n_knobs = knobs->len;
        for (StormKind k = 0; m->storm && k < _STORM_KIND_MAX; k++)
                in.storm_phases[k] = storm_watcher_get_phase(m->storm, k);
        return metrics_format(&in);
}

/* The listener's own state: what it last wrote, and where. */
typedef struct MetricsFile {
        char *path;     /* the file last written, or NULL */
        char *text;     /* what it holds */
        int error;      /* the last error writing it, logged once */
} MetricsFile;

static void metrics_remove(MetricsFile *f) {
        if (!f->path)
                return;
        if (unlink(f->path) < 0 && errno != ENOENT)
                log_warning_errno(errno, "Cannot remove the metrics file %s: %m", f->path);
        g_clear_pointer(&f->path, g_free);
        g_clear_pointer(&f->text, g_free);
}

static void metrics_update(Manager *m, MetricsFile *f) {
        const char *path = m->settings.metrics_textfile;
        g_autofree char *text = NULL;
        int r;

        /* A reload moved or dropped the file: the old one would go stale where it is. */
        if (!streq_ptr(path, f->path))
                metrics_remove(f);
        if (!path)
                return;

        text = manager_metrics_render(m);
        if (streq_ptr(text, f->text))
                return;

        r = file_replace(path, text, METRICS_FILE_MODE);
        if (r < 0) {
                /* Tried again at the next change; said once, not at every apply. */
                if (r != f->error)
                        log_warning_errno(r, "Cannot write the metrics file %s: %m", path);
                f->error = r;
                return;
        }
        if (f->error != 0)
                log_info("Metrics file %s written again.", path);
        else
                log_debug("Metrics file %s written.", path);
        f->error = 0;
        g_free(f->path);
        f->path = g_strdup(path);
        g_free(f->text);
        f->text = TAKE_PTR(text);
}

/* Not before the unit list: a file saying that no policy is active could be scraped meanwhile. */
static void on_applied(Manager *m, const ApplyReport *report, void *userdata) {
        if (manager_units_known(m))
                metrics_update(m, userdata);
}

static void on_storm_event(Manager *m, StormEvent event, StormKind kind, const StormFigures *figures,
                           void *userdata) {
        if (manager_units_known(m))
                metrics_update(m, userdata);
}

/* Series of a thpd that is gone must not look current to a fleet; the instance a restart hands
 * over to rewrites the file. */
static void on_stopping(Manager *m, void *userdata) {
        if (!m->handing_over)
                metrics_remove(userdata);
}

static void on_free(Manager *m, void *userdata) {
        MetricsFile *f = userdata;

        g_free(f->path);
        g_free(f->text);
        g_free(f);
}

static const ManagerListener metrics_listener = {
        .applied = on_applied,
        .storm_event = on_storm_event,
        .stopping = on_stopping,
        .free = on_free,
};

void manager_metrics_attach(Manager *m) {
        manager_add_listener(m, &metrics_listener, g_new0(MetricsFile, 1));
}
