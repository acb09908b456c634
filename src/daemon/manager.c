/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <signal.h>

#include "log.h"
#include "manager-blanket.h"
#include "manager-pools.h"
#include "manager-drift.h"
#include "manager-ownership.h"
#include "manager.h"
#include "procfs-parse.h"
#include "procfs.h"
#include "runtime-file.h"
#include "sysfs.h"
#include "unit-record.h"
#include "util.h"

static void pool_status_clear(gpointer p) {
        PoolStatus *s = p;

        g_clear_pointer(&s->shortfall, g_free);
}

static void unset_knobs(KnobValue *values) {
        FOREACH_KNOB(k)
                values[k] = KNOB_VALUE_UNSET;
}

int manager_new(sd_event *event, const ManagerOptions *options, Manager **ret) {
        Manager *m = g_new0(Manager, 1);
        int r;

        r = service_notifier_new(&m->notifier);
        if (r < 0) {
                g_free(m);
                return log_error_errno(r, "Cannot open a socket to the service manager: %m");
        }

        m->event = sd_event_ref(event);
        m->options = *options;
        m->sysfs_root = g_strdup(options->sysfs_root);
        m->procfs_root = g_strdup(options->procfs_root);
        m->cgroupfs_root = g_strdup(options->cgroupfs_root);
        m->runtime_dir = g_strdup(options->runtime_dir);
        m->config_path = g_strdup(options->config_path);
        m->policy_dirs = g_strdupv(options->policy_dirs);
        m->options.sysfs_root = m->sysfs_root;
        knob_files_init(&m->knob_files);
        pool_files_init(&m->pool_files);
        /* No boot parameter until the command line is read. */
        (void) cmdline_parse_thp("", NULL, &m->cmdline);
        m->options.procfs_root = m->procfs_root;
        m->options.cgroupfs_root = m->cgroupfs_root;
        m->options.runtime_dir = m->runtime_dir;
        m->options.config_path = m->config_path;
        m->options.policy_dirs = m->policy_dirs;
        m->start_time_usec = now_usec(CLOCK_REALTIME);

        settings_init(&m->settings);
        m->policies = g_ptr_array_new_with_free_func(policy_free_void);
        candidate_state_init(&m->candidates, m->policies);
        m->policy_files = g_ptr_array_new_with_free_func(policy_file_free_void);
        diagnostics_init(&m->policy_diagnostics);
        plan_state_init(&m->plan);
        drift_state_init(&m->drift);
        m->pools = g_array_new(FALSE, TRUE, sizeof(PoolStatus));
        g_array_set_clear_func(m->pools, pool_status_clear);
        m->isolation = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, isolation_free_void);
        m->per_service = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        m->listeners = g_array_new(FALSE, FALSE, sizeof(ManagerListenerEntry));
        baseline_init(&m->baseline);
        ownership_init(&m->own);
        manager_ownership_init(m);
        unset_knobs(m->applied);
        unset_knobs(m->override);
        unset_knobs(m->mitigation);

        *ret = m;
        return 0;
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;

        storm_watcher_free(m->storm);
        for (guint i = m->listeners->len; i > 0; i--) {
                const ManagerListenerEntry *e = &g_array_index(m->listeners, ManagerListenerEntry, i - 1);

                if (e->listener->free)
                        e->listener->free(m, e->userdata);
        }
        unit_tracker_free(m->units);
        sd_event_source_disable_unref(m->sigterm);
        sd_event_source_disable_unref(m->sigint);
        sd_event_source_disable_unref(m->sighup);
        sd_event_source_disable_unref(m->grace_timer);
        sd_event_source_disable_unref(m->apply_event);
        sd_event_source_disable_unref(m->trim_timer);
        sd_event_source_disable_unref(m->override_timer);
        manager_drift_stop(m);
        manager_blanket_stop(m);
        if (m->bus)
                sd_bus_flush_close_unref(m->bus);
        candidate_state_done(&m->candidates);
        g_ptr_array_unref(m->policies);
        g_ptr_array_unref(m->policy_files);
        diagnostics_clear(&m->policy_diagnostics);
        plan_state_done(&m->plan);
        drift_state_done(&m->drift);
        manager_ownership_done(m);
        g_clear_pointer(&m->drift_counts, g_hash_table_destroy);
        g_array_unref(m->pools);
        g_hash_table_destroy(m->isolation);
        g_hash_table_destroy(m->per_service);
        g_clear_pointer(&m->active, g_array_unref);
        g_array_unref(m->listeners);
        knob_files_close(&m->knob_files);
        pool_files_close(&m->pool_files);
        service_notifier_free(m->notifier);
        settings_done(&m->settings);
        g_free(m->sysfs_root);
        g_free(m->procfs_root);
        g_free(m->cgroupfs_root);
        g_free(m->runtime_dir);
        g_free(m->config_path);
        g_strfreev(m->policy_dirs);
        sd_event_unref(m->event);
        g_free(m);
        return NULL;
}

int manager_defer_once(Manager *m, sd_event_source **source, int64_t priority, sd_event_handler_t handler) {
        int r;

        if (!*source) {
                r = sd_event_add_defer(m->event, source, handler, m);
                if (r >= 0)
                        r = sd_event_source_set_priority(*source, priority);
                if (r < 0) {
                        *source = sd_event_source_disable_unref(*source);
                        return r;
                }
        }
        return sd_event_source_set_enabled(*source, SD_EVENT_ONESHOT);
}

void manager_add_listener(Manager *m, const ManagerListener *listener, void *userdata) {
        ManagerListenerEntry e = { .listener = listener, .userdata = userdata };

        g_array_append_val(m->listeners, e);
}

GPtrArray *manager_policies_for_unit(const Manager *m, const char *unit) {
        GPtrArray *found = g_ptr_array_new();

        (void) policy_index_lookup(m->candidates.index, unit, found);
        return found;
}

GPtrArray *manager_needs_restart_sorted(const Manager *m) {
        GPtrArray *units = g_ptr_array_new();
        GHashTableIter iter;
        gpointer unit;

        g_hash_table_iter_init(&iter, m->plan.needs_restart);
        while (g_hash_table_iter_next(&iter, &unit, NULL))
                g_ptr_array_add(units, unit);
        g_ptr_array_sort(units, compare_strings);
        return units;
}

char *manager_generator_dir(const Manager *m) {
        const char *runtime = g_getenv("XDG_RUNTIME_DIR");

        if (m->options.user)
                return runtime ? g_build_filename(runtime, "systemd", "generator", NULL) : NULL;
        return g_strdup("/run/systemd/generator");
}

/* Remembered per name (candidate_state_matches()): every signal about a unit asks, and globs
 * are matched one by one. */
static bool unit_filter(const char *unit, void *userdata) {
        Manager *m = userdata;

        return candidate_state_matches(&m->candidates, unit)->len > 0;
}

static CandidateUnit *candidate_unit(const char *unit, const UnitView *v, CandidateUnit *buf) {
        if (!v)
                return NULL;
        *buf = (CandidateUnit) { .name = unit, .wanted = v->wanted, .running = v->running, .stops = v->stops };
        return buf;
}

static void on_units_changed(UnitTracker *t, const char *unit, const UnitView *before, const UnitView *now,
                             bool start_queued, void *userdata) {
        Manager *m = userdata;
        CandidateUnit b, n;

        candidate_state_note_changed(&m->candidates, unit);
        if (unit && !candidate_state_change_matters(&m->candidates, &m->plan, unit, candidate_unit(unit, before, &b),
                                                    candidate_unit(unit, now, &n)))
                return;
        if (start_queued)
                manager_apply(m);
        else
                manager_queue_apply(m);
}

static int load_settings(Manager *m) {
        g_auto(GStrv) default_paths = NULL;
        Diagnostics diag;
        int r;

        settings_done(&m->settings);
        settings_init(&m->settings);
        diagnostics_init(&diag);
        if (m->config_path) {
                const char *paths[] = { m->config_path, NULL };
                r = settings_load_files(&m->settings, paths, &diag);
        } else {
                r = settings_default_paths(&default_paths);
                if (r >= 0)
                        r = settings_load_files(&m->settings, (const char *const *) default_paths, &diag);
        }
        diagnostics_log(&diag);
        diagnostics_clear(&diag);
        if (r < 0)
                return log_error_errno(r, "Cannot read the daemon settings: %m");

        if (m->settings.log_level >= 0)
                log_set_max_level(m->settings.log_level);
        return 0;
}

static void load_policies(Manager *m) {
        const char *const *dirs = m->policy_dirs ? (const char *const *) m->policy_dirs : policy_default_dirs;
        g_autoptr(GPtrArray) files = NULL;
        g_autoptr(GPtrArray) policies = NULL;
        Diagnostics diag;
        int r;

        diagnostics_init(&diag);
        /* Both walk the same directories; only the load reports, so each problem shows once. */
        r = policy_dirs_enumerate(dirs, NULL, &files);
        if (r >= 0)
                r = policy_dirs_load(dirs, &diag, &policies);
        diagnostics_log(&diag);
        if (r < 0) {
                diagnostics_clear(&diag);
                log_error_errno(r, "Cannot read the policy directories, keeping the previous policies: %m");
                return;
        }

        /* Kept for the bus, so that a broken file shows where admins look, not only in the log. */
        diagnostics_clear(&m->policy_diagnostics);
        m->policy_diagnostics = diag;

        /* The live set points into the old policies; the next apply looks at every policy. */
        candidate_state_set_policies(&m->candidates, policies);
        g_ptr_array_unref(m->policies);
        m->policies = TAKE_PTR(policies);
        g_ptr_array_unref(m->policy_files);
        m->policy_files = TAKE_PTR(files);
        plan_state_forget_policies(&m->plan, m->policies);
        log_info("Loaded %u policy file(s).", m->policies->len);
}

/* The units the earlier run saw start under their policies are not listed as needing a restart. */
static void load_unit_record(Manager *m) {
        g_autoptr(GHashTable) started = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        g_autoptr(GHashTable) restart = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        GHashTableIter iter;
        const char *name, *policy;
        int r;

        r = unit_record_load(m->runtime_dir, started, restart);
        if (r == -ENOENT)
                return;
        if (r < 0) {
                log_warning_errno(r, "Ignoring the unit record in %s (%m); running units of policies will be listed as "
                                  "needing a restart.", m->runtime_dir);
                return;
        }
        /* This instance's tracker counts stops from zero. */
        g_hash_table_iter_init(&iter, started);
        while (g_hash_table_iter_next(&iter, (gpointer *) &name, NULL))
                plan_state_add_seen(&m->plan, name);
        g_hash_table_iter_init(&iter, restart);
        while (g_hash_table_iter_next(&iter, (gpointer *) &name, (gpointer *) &policy)) {
                plan_state_add_seen(&m->plan, name);
                g_hash_table_insert(m->plan.needs_restart, g_strdup(name), g_strdup(policy));
        }
}

/* A recorded baseline means an earlier thpd wrote knobs and may have died before restoring:
 * whatever differs from the record now is ours to put back. */
static int setup_baseline(Manager *m) {
        KnobValue current[_KNOB_MAX];
        Baseline recorded;
        bool reused;
        int r;

        sysfs_probe_knobs(m->sysfs_root, m->present);
        /* Without it (no THP on this kernel) every knob is absent and reads go by path. */
        knob_files_open(&m->knob_files, m->sysfs_root);
        FOREACH_KNOB(k) {
                current[k] = KNOB_VALUE_UNSET;
                if (m->present[k] && sysfs_read_knob(m->sysfs_root, k, &current[k]) < 0)
                        m->present[k] = false;
        }
        sysfs_probe_features(m->sysfs_root, m->present, &m->features);
        /* Only for explanations: without it thpd says nothing of where the baseline came from. */
        r = procfs_read_cmdline_thp(m->procfs_root, m->present, &m->cmdline);
        if (r < 0)
                log_debug_errno(r, "Cannot read %s/cmdline, the boot parameters will not be explained: %m", m->procfs_root);

        r = baseline_load(m->runtime_dir, &recorded);
        reused = r >= 0;
        if (r == -EBADMSG)
                log_warning("Ignoring an unreadable baseline record in %s; recording the current values.", m->runtime_dir);
        else if (r < 0 && r != -ENOENT)
                log_warning_errno(r, "Cannot read the baseline record in %s (%m); recording the current values.",
                                  m->runtime_dir);
        if (!reused)
                baseline_init(&recorded);

        FOREACH_KNOB(k) {
                if (!m->present[k])
                        continue;
                if (recorded.knobs[k] == KNOB_VALUE_UNSET)
                        recorded.knobs[k] = current[k];
                m->applied[k] = current[k];
        }
        manager_record_pool_baselines(m, &recorded);

        r = baseline_save(m->runtime_dir, &recorded);
        if (r < 0)
                log_warning_errno(r, "Cannot record the baseline in %s (%m): a crash would lose it.",
                                  m->runtime_dir);

        m->baseline = recorded;
        manager_ownership_start(m, current, reused);

        if (reused) {
                log_info("Reusing the baseline recorded in %s by an earlier run.", m->runtime_dir);
                load_unit_record(m);
        }
        return 0;
}

void manager_save_baseline(Manager *m) {
        int r;

        r = baseline_save(m->runtime_dir, &m->baseline);
        if (r < 0)
                log_warning_errno(r, "Cannot update the baseline record in %s (%m): a crash would lose the change.",
                                  m->runtime_dir);
}

/* Values thpd.conf pins are part of the baseline and enforced even with no policy active. */
void manager_effective_baseline(const Manager *m, KnobValue out[_KNOB_MAX]) {
        plan_effective_baseline(m->present, m->baseline.knobs, m->settings.baseline, out);
}

static void knob_note_clear(gpointer p) {
        g_free(((KnobNote *) p)->text);
}

static void add_note(GArray *notes, const char *kind, char *text) {
        KnobNote n = { .kind = kind, .text = text };

        g_array_append_val(notes, n);
}

static void note_max_ptes_none(const Manager *m, KnobValue value, GArray *notes) {
        const Knob mpn = KNOB_KHUGEPAGED_MAX_PTES_NONE;
        const ResolveInput in = {
                .mthp_collapse = m->features.mthp_collapse,
                .pmd_knob = m->features.pmd_knob,
                .present = m->present,
        };
        Knob size = resolve_mthp_collapse_size(&in, m->target.value);
        const char *why = "khugepaged on this kernel also collapses to mTHP sizes, and honours max_ptes_none there "
                          "only at 0 or 511: for another value the kernel logs \"mTHP collapse does not support "
                          "max_ptes_none values other than 0 or 511\" and collapses as with 0";

        /* The size is the one the last apply found on; the features do not change after the
         * probe, but name none rather than trust that. */
        if (m->target.max_ptes_none_voted != KNOB_VALUE_UNSET)
                add_note(notes, "mthp-collapse",
                         g_strdup_printf("moved from %" PRIi64 " to %" PRIi64 ", the stricter allowed value, while %s is on: %s",
                                         m->target.max_ptes_none_voted, value, size >= 0 ? knob_name(size) : "an mTHP size",
                                         why));
        else if (size >= 0 && resolve_max_ptes_none(value, true) != value)
                add_note(notes, "mthp-collapse",
                         g_strdup_printf("the kernel takes %" PRIi64 " as 0 while %s is on (%s); thpd leaves the baseline's "
                                         "value as it is",
                                         value, knob_name(size), why));
        if (m->features.shrink_underused)
                add_note(notes, "shrinker", g_strdup_printf(
                        "it also drives the underused-THP shrinker (shrink_underused): under memory pressure a huge page "
                        "with more than max_ptes_none zero-filled subpages is split, on the whole machine%s",
                        value == 0 ? "; at 0 that is every huge page not fully used"
                        : value == (KnobValue) knob_info(mpn)->max ? "; at 511 it splits almost none" : ""));
}

/* thp_anon= set the PMD size to never and nothing votes on it: a policy's global enabled cannot
 * reach PMD-sized pages, whatever it says. */
static void note_pmd_unreachable(const Manager *m, KnobValue baseline, GArray *notes) {
        Knob pmd = m->features.pmd_knob;
        char buf[24];

        if (!knob_is_mthp(pmd) || m->cmdline.origin[pmd] != CMDLINE_THP_ANON || m->cmdline.value[pmd] != KNOB_ENABLED_NEVER ||
            baseline != KNOB_ENABLED_NEVER || m->target.value[pmd] != KNOB_ENABLED_NEVER ||
            m->target.source[pmd].kind != SOURCE_BASELINE || m->target.source[KNOB_ENABLED].kind == SOURCE_BASELINE ||
            m->target.value[KNOB_ENABLED] == KNOB_ENABLED_NEVER)
                return;
        add_note(notes, "pmd-unreachable",
                 g_strdup_printf("%s does not reach %" PRIu64 " kB pages: thp_anon= on the kernel command line set %s to "
                                 "never, and no policy sets %s=",
                                 knob_value_to_string(KNOB_ENABLED, m->target.value[KNOB_ENABLED], buf),
                                 knob_mthp_size_kb(pmd), knob_name(pmd), knob_info(pmd)->key));
}

GArray *manager_knob_notes(const Manager *m, Knob k) {
        GArray *notes = g_array_new(FALSE, FALSE, sizeof(KnobNote));
        KnobValue baseline[_KNOB_MAX];
        char buf[24];

        g_array_set_clear_func(notes, knob_note_clear);
        manager_effective_baseline(m, baseline);
        /* Only while the baseline is still what the command line chose, not what an admin or
         * thpd.conf set since. */
        if (m->cmdline.origin[k] >= 0 && baseline[k] == m->cmdline.value[k] && m->settings.baseline[k] == KNOB_VALUE_UNSET)
                add_note(notes, "baseline",
                         g_strdup_printf("baseline %s (%s on the kernel command line)", knob_value_to_string(k, baseline[k], buf),
                                         cmdline_param_to_string(m->cmdline.origin[k])));
        if (k == KNOB_KHUGEPAGED_MAX_PTES_NONE && m->target.value[k] != KNOB_VALUE_UNSET)
                note_max_ptes_none(m, m->target.value[k], notes);
        if (k == KNOB_ENABLED || k == m->features.pmd_knob)
                note_pmd_unreachable(m, baseline[m->features.pmd_knob], notes);
        return notes;
}

/* Gives back what is thpd's and leaves what it yielded to another writer, saying so. */
static int restore(Manager *m) {
        KnobValue baseline[_KNOB_MAX];
        Knob order[_KNOB_MAX];
        int failed = 0, r;

        manager_effective_baseline(m, baseline);
        knob_write_order(baseline, order);
        for (size_t i = 0; i < _KNOB_MAX; i++) {
                Knob k = order[i];
                KnobValue want = baseline[k], cur;
                char a[24], b[24];

                if (want == KNOB_VALUE_UNSET)
                        continue;
                r = sysfs_read_knob(m->sysfs_root, k, &cur);
                switch (ownership_at_stop(m->own.knobs[k], r >= 0 && cur == want)) {
                case OWNERSHIP_STOP_LEAVE: {
                        const DriftConflict *c = drift_conflict(&m->drift, knob_name(k));

                        log_notice("%s: leaving %s, the value of %s, which thpd yielded to (the baseline is %s)",
                                   knob_name(k), knob_value_to_string(k, cur, a),
                                   c && c->writer ? c->writer : "an unknown writer", knob_value_to_string(k, want, b));
                        continue;
                }
                case OWNERSHIP_STOP_RESTORE:
                        break;
                default:
                        continue;
                }
                r = sysfs_write_knob(m->sysfs_root, k, want);
                if (r < 0 && r != -EIO) {
                        log_error_errno(r, "%s: cannot restore %s: %m", knob_name(k), knob_value_to_string(k, want, a));
                        failed = r;
                        continue;
                }
                log_info("%s: %s -> %s (restoring the baseline)", knob_name(k), knob_value_to_string(k, cur, b),
                         knob_value_to_string(k, want, a));
                /* Restored, then written again by another writer before the read-back (see
                 * write_knob()): a value written after thpd's is that writer's to keep. */
                if (r == -EIO)
                        log_notice("%s: another writer changed %s right after the restore; leaving its value",
                                   knob_name(k), knob_value_to_string(k, want, a));
        }

        r = manager_restore_pools(m);
        if (r < 0)
                failed = r;
        return failed;
}

int manager_stop(Manager *m, int exit_code) {
        int r;

        /* A restart job is under way: the next instance takes the knobs over (see on_terminate). */
        if (!m->handing_over) {
                if (m->options.no_restore || !m->settings.restore_on_exit)
                        log_info("Leaving the knobs as they are (%s).",
                                 m->options.no_restore ? "--no-restore" : "RestoreOnExit=no");
                else if (exit_code == 0) {
                        r = restore(m);
                        if (r >= 0 && ownership_keep_records(&m->own, m->baseline.n_pools))
                                log_info("Keeping the records in %s: what thpd left to other writers stays theirs when "
                                         "it starts again.", m->runtime_dir);
                        else if (r >= 0) {
                                (void) baseline_remove(m->runtime_dir);
                                manager_ownership_remove(m);
                                (void) runtime_file_remove(m->runtime_dir, UNIT_RECORD_FILE);
                        } else {
                                log_error("Some knobs could not be restored; keeping the baseline record in %s for the next start.",
                                          m->runtime_dir);
                                exit_code = 1;
                        }
                }
        }

        MANAGER_FOREACH_LISTENER(m, e)
                if (e->listener->stopping)
                        e->listener->stopping(m, e->userdata);
        return exit_code;
}

int manager_read_knob(Manager *m, Knob k, KnobValue *ret) {
        return knob_files_read(&m->knob_files, m->sysfs_root, k, ret);
}

bool manager_knob_resolved(const Manager *m, Knob k) {
        return m->applied_once && m->target.source[k].kind != SOURCE_NONE;
}

GPtrArray *manager_live_policies(const Manager *m) {
        /* The selection keeps them in policy order from the last apply (candidates_commit()):
         * not sorted again for every ActivePolicies built. */
        const GArray *live = m->candidates.live;
        GPtrArray *ret = g_ptr_array_sized_new(live ? live->len : 0);

        for (guint i = 0; live && i < live->len; i++)
                g_ptr_array_add(ret, (gpointer) g_array_index(live, CandidateLive, i).policy);
        return ret;
}

static unsigned phase_severity(StormPhase p) {
        switch (p) {
        case STORM_PHASE_STORM:
                return 3;
        case STORM_PHASE_COOLING:
                return 2;
        case STORM_PHASE_SUSPECT:
                return 1;
        default:
                return 0;
        }
}

StormPhase manager_storm_phase(const Manager *m) {
        StormPhase worst = STORM_PHASE_CALM;

        if (!m->storm)
                return worst;
        for (StormKind k = 0; k < _STORM_KIND_MAX; k++) {
                StormPhase p = storm_watcher_get_phase(m->storm, k);

                if (phase_severity(p) > phase_severity(worst))
                        worst = p;
        }
        return worst;
}

static int on_override_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        log_info("The admin override expired.");
        manager_clear_override(m);
        return 0;
}

int manager_set_override(Manager *m, const KnobValue values[_KNOB_MAX], uint64_t duration_usec) {
        int r;

        memcpy(m->override, values, sizeof(m->override));
        m->override_expires_realtime = 0;
        if (duration_usec > 0) {
                uint64_t now = now_usec(CLOCK_MONOTONIC);

                if (duration_usec > UINT64_MAX - now)
                        return -ERANGE;
                m->override_expires_realtime = now_usec(CLOCK_REALTIME) + duration_usec;
                if (!m->override_timer)
                        r = sd_event_add_time(m->event, &m->override_timer, CLOCK_MONOTONIC, now + duration_usec, 0,
                                              on_override_timer, m);
                else {
                        r = sd_event_source_set_time(m->override_timer, now + duration_usec);
                        if (r >= 0)
                                r = sd_event_source_set_enabled(m->override_timer, SD_EVENT_ONESHOT);
                }
                if (r < 0)
                        return r;
        } else if (m->override_timer)
                (void) sd_event_source_set_enabled(m->override_timer, SD_EVENT_OFF);

        manager_apply(m);
        return 0;
}

void manager_clear_override(Manager *m) {
        unset_knobs(m->override);
        m->override_expires_realtime = 0;
        if (m->override_timer)
                (void) sd_event_source_set_enabled(m->override_timer, SD_EVENT_OFF);
        manager_apply(m);
}

static void update_mitigation(Manager *m) {
        unsigned level = m->storm ? storm_watcher_get_mitigation_level(m->storm) : 0;
        KnobValue votes[_KNOB_MAX];
        int r;

        unset_knobs(m->mitigation);
        if (level == 0)
                return;
        r = storm_mitigation_votes(&m->settings.storm, level, votes);
        if (r < 0) {
                log_error_errno(r, "Cannot work out the storm mitigation for level %u: %m", level);
                return;
        }
        /* Knobs this kernel lacks cannot be softened; keep them out of the explanations too. */
        FOREACH_KNOB(k)
                if (m->present[k])
                        m->mitigation[k] = votes[k];
}

static void on_storm_event(StormWatcher *w, StormEvent event, StormKind kind, const StormFigures *figures,
                           void *userdata) {
        Manager *m = userdata;

        switch (event) {
        case STORM_EVENT_DETECTED:
                m->counters.storms_detected[kind]++;
                m->counters.storm_last_detected_usec[kind] = now_usec(CLOCK_REALTIME);
                break;
        case STORM_EVENT_CLEARED:
                m->counters.storm_usec[kind] += storm_kind_state_duration_usec(&storm_watcher_get_state(w)->kinds[kind]);
                break;
        case STORM_EVENT_MITIGATION_CHANGED: {
                unsigned level = storm_watcher_get_mitigation_level(w);

                log_notice("Storm mitigation now at level %u.", level);
                if (level > m->mitigation_level)
                        m->counters.mitigation_steps += level - m->mitigation_level;
                m->mitigation_level = level;
                update_mitigation(m);
                manager_apply(m);
                break;
        }
        default:
                break;
        }
        MANAGER_FOREACH_LISTENER(m, e)
                if (e->listener->storm_event)
                        e->listener->storm_event(m, event, kind, figures, e->userdata);
}

/* (Re)creates the watcher when its settings changed; a watcher that cannot read vmstat leaves
 * thpd running without storm detection rather than not running at all. */
static void setup_storm_watcher(Manager *m, bool config_changed) {
        int r;

        if (!config_changed && (m->storm || !m->settings.storm_watch))
                return;

        m->storm = storm_watcher_free(m->storm);
        m->mitigation_level = 0;
        unset_knobs(m->mitigation);
        if (!m->settings.storm_watch) {
                log_info("Storm detection is off (thpd.conf: [Storm] Watch=no).");
                return;
        }
        r = storm_watcher_new(m->event, m->procfs_root, m->sysfs_root, &m->settings.storm, on_storm_event, m, &m->storm);
        if (r < 0)
                log_warning_errno(r, "Storm detection is off: cannot read %s/vmstat: %m", m->procfs_root);
}

int manager_reload(Manager *m) {
        StormConfig old_storm = m->settings.storm;
        bool old_watch = m->settings.storm_watch;

        log_info("Reloading policies and settings.");
        (void) service_notify(m->notifier, "RELOADING=1");
        m->counters.reloads++;
        (void) load_settings(m);
        load_policies(m);
        /* A reload is how an admin says the fight is settled: every writer starts afresh. */
        drift_reset(&m->drift);
        manager_drift_conflicts_changed(m);
        /* The target points into the policies just replaced: resolve against the new ones before
         * anything (a property read, a storm event) looks at it. */
        manager_apply(m);
        setup_storm_watcher(m, memcmp(&old_storm, &m->settings.storm, sizeof old_storm) != 0 ||
                               old_watch != m->settings.storm_watch);
        if (m->units)
                (void) unit_tracker_rescan(m->units);
        manager_apply(m);
        (void) service_notify(m->notifier, "READY=1");
        return 0;
}

static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        return manager_reload(userdata);
}

static int on_terminate(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;

        (void) service_notify(m->notifier, "STOPPING=1");
        /* A restart (a package upgrade, "systemctl restart thpd") must not put the running
         * services under the baseline until the next instance is up: that one reuses the
         * baseline record and writes nothing before it has listed the units. */
        if (m->units && si->ssi_signo == SIGTERM && unit_tracker_restart_queued_for_pid(m->units, getpid()) > 0) {
                log_info("thpd's unit is restarting: leaving the knobs for the next instance, with the baseline record in %s.",
                         m->runtime_dir);
                m->handing_over = true;
        }
        return sd_event_exit(m->event, 0);
}

static const char *bus_kind(const Manager *m) {
        return m->options.user ? "session" : "system";
}

/* Without the bus thpd can neither see units start nor answer anyone. Exit non-zero, leaving
 * the knobs as they are (never looser than what runs) and the baseline record in place: the
 * unit's Restart= brings thpd back, and the next instance resolves from the recorded baseline. */
static int on_bus_disconnected(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;

        log_error("Lost the connection to the %s bus; exiting with the knobs as they are, keeping the baseline record in %s for the next start.",
                  bus_kind(m), m->runtime_dir);
        return sd_event_exit(m->event, EXIT_FAILURE);
}

static int connect_bus(Manager *m) {
        int r;

        r = m->options.user ? sd_bus_open_user(&m->bus) : sd_bus_open_system(&m->bus);
        if (r < 0)
                return log_error_errno(r, "Cannot connect to the %s bus: %m", bus_kind(m));
        r = sd_bus_match_signal(m->bus, NULL, "org.freedesktop.DBus.Local", "/org/freedesktop/DBus/Local",
                                "org.freedesktop.DBus.Local", "Disconnected", on_bus_disconnected, m);
        if (r < 0)
                return log_error_errno(r, "Cannot watch the bus connection: %m");
        r = sd_bus_attach_event(m->bus, m->event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return log_error_errno(r, "Cannot attach the bus to the event loop: %m");
        return 0;
}

/* systemd 257 and later give a service with PrivateNetwork= a sysfs mount of its own, and
 * ReadWritePaths= then binds the knob directory read-write in it even where the system's /sys
 * is read-only (a container that must not change its host's knobs). What the system meant is
 * what PID 1 sees: if the knobs are on a read-only mount for it and not for thpd, thpd writes
 * nothing, as on a read-only /sys. Only for the real /sys: a --sysfs tree is the caller's. */

static void sysfs_guard_read_only(Manager *m) {
        static const char knobs[] = "/sys/" SYSFS_THP_DIR;
        g_autofree char *init_path = g_build_filename(m->procfs_root, "1", "mountinfo", NULL);
        g_autofree char *self_path = g_build_filename(m->procfs_root, "self", "mountinfo", NULL);
        g_autofree char *init = NULL, *self = NULL;
        bool init_ro, self_ro;

        if (!streq(m->sysfs_root, "/sys"))
                return;
        if (!g_file_get_contents(init_path, &init, NULL, NULL) || !g_file_get_contents(self_path, &self, NULL, NULL))
                return;
        if (procfs_parse_path_read_only(init, knobs, &init_ro) < 0 ||
            procfs_parse_path_read_only(self, knobs, &self_ro) < 0)
                return;
        if (!init_ro || self_ro)
                return;
        log_warning("/sys is read-only for the system (PID 1's mount) but not in thpd's sandbox: thpd writes no "
                    "knob or pool, as on a read-only /sys.");
        sysfs_refuse_writes();
}

int manager_start(Manager *m) {
        int r;

        sysfs_guard_read_only(m);
        r = load_settings(m);
        if (r < 0)
                return r;
        load_policies(m);

        /* The bus name first: a second instance must exit before it records or writes anything. */
        r = connect_bus(m);
        if (r < 0)
                return r;
        MANAGER_FOREACH_LISTENER(m, e)
                if (e->listener->connected) {
                        r = e->listener->connected(m, e->userdata);
                        if (r < 0)
                                return r;
                }

        r = setup_baseline(m);
        if (r < 0)
                return r;

        r = sd_event_add_signal(m->event, &m->sigterm, SIGTERM, on_terminate, m);
        if (r >= 0)
                r = sd_event_add_signal(m->event, &m->sigint, SIGINT, on_terminate, m);
        if (r >= 0)
                r = sd_event_add_signal(m->event, &m->sighup, SIGHUP, on_sighup, m);
        if (r < 0)
                return log_error_errno(r, "Cannot watch signals: %m");

        /* Only wakes the loop when WatchdogSec= is set. */
        r = sd_event_set_watchdog(m->event, true);
        if (r < 0)
                log_warning_errno(r, "Cannot enable the watchdog: %m");

        r = unit_tracker_new(m->bus, m->event, unit_filter, on_units_changed, m, &m->units);
        if (r < 0)
                return r;
        r = manager_drift_start(m);
        if (r < 0)
                return r;
        r = manager_blanket_start(m);
        if (r < 0)
                return r;
        setup_storm_watcher(m, true);

        /* Resolves and reads the knobs for the properties; writes wait for the unit list. */
        manager_apply(m);

        return unit_tracker_start(m->units);
}
