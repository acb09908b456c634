/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <systemd/sd-daemon.h>
#include <time.h>

#include "log.h"
#include "manager-bus.h"
#include "manager-isolation.h"
#include "manager-metrics.h"
#include "manager-pools.h"
#include "manager.h"
#include "runtime-file.h"
#include "storm.h"
#include "sysfs.h"
#include "unit-record.h"
#include "util.h"

#define USEC_PER_SEC_ACCURACY UINT64_C(1000000)

static void policy_runtime_free(gpointer p) {
        PolicyRuntime *r = p;

        if (!r)
                return;
        g_free(r->name);
        g_ptr_array_unref(r->units);
        g_free(r);
}

static void pool_status_clear(gpointer p) {
        PoolStatus *s = p;

        g_clear_pointer(&s->shortfall, g_free);
}

static void policy_free_void(gpointer p) {
        policy_free(p);
}

static void policy_file_free_void(gpointer p) {
        policy_file_free(p);
}

static uint64_t now_usec(clockid_t clock) {
        struct timespec ts;

        clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

static void unset_knobs(KnobValue *values) {
        FOREACH_KNOB(k)
                values[k] = KNOB_VALUE_UNSET;
}

int manager_new(sd_event *event, const ManagerOptions *options, Manager **ret) {
        Manager *m = g_new0(Manager, 1);

        m->event = sd_event_ref(event);
        m->options = *options;
        m->sysfs_root = g_strdup(options->sysfs_root);
        m->procfs_root = g_strdup(options->procfs_root);
        m->cgroupfs_root = g_strdup(options->cgroupfs_root);
        m->runtime_dir = g_strdup(options->runtime_dir);
        m->config_path = g_strdup(options->config_path);
        m->policy_dirs = g_strdupv(options->policy_dirs);
        m->options.sysfs_root = m->sysfs_root;
        m->options.procfs_root = m->procfs_root;
        m->options.cgroupfs_root = m->cgroupfs_root;
        m->options.runtime_dir = m->runtime_dir;
        m->options.config_path = m->config_path;
        m->options.policy_dirs = m->policy_dirs;
        m->start_time_usec = now_usec(CLOCK_REALTIME);

        settings_init(&m->settings);
        m->policies = g_ptr_array_new_with_free_func(policy_free_void);
        m->policy_index = policy_index_new(m->policies);
        m->live_policies = g_hash_table_new(g_direct_hash, g_direct_equal);
        m->apply_all_policies = true;
        m->policy_files = g_ptr_array_new_with_free_func(policy_file_free_void);
        diagnostics_init(&m->policy_diagnostics);
        m->policy_runtime = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, policy_runtime_free);
        m->pools = g_array_new(FALSE, TRUE, sizeof(PoolStatus));
        g_array_set_clear_func(m->pools, pool_status_clear);
        m->needs_restart = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        m->seen_wanted = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        manager_isolation_init(m);
        baseline_init(&m->baseline);
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
        manager_bus_free(m);
        unit_tracker_free(m->units);
        sd_event_source_disable_unref(m->sigterm);
        sd_event_source_disable_unref(m->sigint);
        sd_event_source_disable_unref(m->sighup);
        sd_event_source_disable_unref(m->grace_timer);
        sd_event_source_disable_unref(m->apply_event);
        sd_event_source_disable_unref(m->trim_timer);
        sd_event_source_disable_unref(m->override_timer);
        if (m->bus)
                sd_bus_flush_close_unref(m->bus);
        /* After the bus: freeing it ends the calls in flight, which leave this list. */
        g_clear_pointer(&m->usage_requests, g_ptr_array_unref);
        policy_index_free(m->policy_index);
        if (m->live_policies)
                g_hash_table_unref(m->live_policies);
        g_ptr_array_unref(m->policies);
        g_ptr_array_unref(m->policy_files);
        diagnostics_clear(&m->policy_diagnostics);
        g_hash_table_destroy(m->policy_runtime);
        g_array_unref(m->pools);
        g_hash_table_destroy(m->needs_restart);
        g_hash_table_destroy(m->seen_wanted);
        manager_isolation_free(m);
        g_free(m->unit_record);
        g_free(m->status);
        g_free(m->metrics_path);
        g_free(m->metrics_text);
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

GPtrArray *manager_policies_for_unit(Manager *m, const char *unit) {
        GPtrArray *found = g_ptr_array_new();

        (void) policy_index_lookup(m->policy_index, unit, found);
        return found;
}

static bool unit_filter(const char *unit, void *userdata) {
        Manager *m = userdata;

        return policy_index_matches(m->policy_index, unit);
}

static void on_units_changed(UnitTracker *t, bool start_queued, void *userdata) {
        if (start_queued)
                manager_apply(userdata);
        else
                manager_queue_apply(userdata);
}

static int on_apply_event(sd_event_source *s, void *userdata) {
        manager_apply(userdata);
        return 0;
}

void manager_queue_apply(Manager *m) {
        int r;

        if (!m->apply_event) {
                r = sd_event_add_defer(m->event, &m->apply_event, on_apply_event, m);
                if (r >= 0)
                        r = sd_event_source_set_priority(m->apply_event, SD_EVENT_PRIORITY_IDLE);
                if (r < 0) {
                        log_warning_errno(r, "Cannot queue an apply, applying at once: %s", strerror(-r));
                        m->apply_event = sd_event_source_disable_unref(m->apply_event);
                        manager_apply(m);
                        return;
                }
        }
        (void) sd_event_source_set_enabled(m->apply_event, SD_EVENT_ONESHOT);
}

/* A burst of applies leaves freed heap fragments glibc keeps; give them back once it is over,
 * so a long-running daemon does not creep. */
#define TRIM_DELAY_USEC (5 * UINT64_C(1000000))

static int on_trim_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        malloc_trim(0);
        return 0;
}

static void schedule_trim(Manager *m) {
        int r;

        if (!m->trim_timer) {
                r = sd_event_add_time_relative(m->event, &m->trim_timer, CLOCK_MONOTONIC, TRIM_DELAY_USEC,
                                               USEC_PER_SEC_ACCURACY, on_trim_timer, m);
                if (r < 0)
                        log_debug_errno(r, "Cannot arm the heap trim timer: %s", strerror(-r));
                return;
        }
        (void) sd_event_source_set_time_relative(m->trim_timer, TRIM_DELAY_USEC);
        (void) sd_event_source_set_enabled(m->trim_timer, SD_EVENT_ONESHOT);
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
                return log_error_errno(r, "Cannot read the daemon settings: %s", strerror(-r));

        if (m->settings.log_level >= 0)
                log_set_max_level(m->settings.log_level);
        return 0;
}

static bool have_policy(const Manager *m, const char *name) {
        for (guint i = 0; i < m->policies->len; i++)
                if (streq(((const Policy *) g_ptr_array_index(m->policies, i))->name, name))
                        return true;
        return false;
}

/* A policy a reload removed is no longer active, whatever its units do. */
static void forget_removed_policies(Manager *m) {
        GHashTableIter iter;
        PolicyRuntime *rt;

        g_hash_table_iter_init(&iter, m->policy_runtime);
        while (g_hash_table_iter_next(&iter, NULL, (gpointer *) &rt))
                if (!have_policy(m, rt->name))
                        g_hash_table_iter_remove(&iter);
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
                log_error_errno(r, "Cannot read the policy directories, keeping the previous policies: %s", strerror(-r));
                return;
        }

        /* Kept for the bus, so that a broken file shows where admins look, not only in the log. */
        diagnostics_clear(&m->policy_diagnostics);
        m->policy_diagnostics = diag;

        /* The live set points into the old policies; the next apply looks at every policy. */
        g_hash_table_remove_all(m->live_policies);
        m->apply_all_policies = true;
        m->policy_index = policy_index_free(m->policy_index);
        g_ptr_array_unref(m->policies);
        m->policies = TAKE_PTR(policies);
        m->policy_index = policy_index_new(m->policies);
        g_ptr_array_unref(m->policy_files);
        m->policy_files = TAKE_PTR(files);
        forget_removed_policies(m);
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
                log_warning_errno(r, "Ignoring the unit record in %s (%s); running units of policies will be listed as "
                                  "needing a restart.", m->runtime_dir, strerror(-r));
                return;
        }
        /* This instance's tracker counts stops from zero. */
        g_hash_table_iter_init(&iter, started);
        while (g_hash_table_iter_next(&iter, (gpointer *) &name, NULL))
                g_hash_table_insert(m->seen_wanted, g_strdup(name), GUINT_TO_POINTER(1));
        g_hash_table_iter_init(&iter, restart);
        while (g_hash_table_iter_next(&iter, (gpointer *) &name, (gpointer *) &policy)) {
                g_hash_table_insert(m->seen_wanted, g_strdup(name), GUINT_TO_POINTER(1));
                g_hash_table_insert(m->needs_restart, g_strdup(name), g_strdup(policy));
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
        FOREACH_KNOB(k) {
                current[k] = KNOB_VALUE_UNSET;
                if (m->present[k] && sysfs_read_knob(m->sysfs_root, k, &current[k]) < 0)
                        m->present[k] = false;
        }

        r = baseline_load(m->runtime_dir, &recorded);
        reused = r >= 0;
        if (r == -EBADMSG)
                log_warning("Ignoring an unreadable baseline record in %s; recording the current values.", m->runtime_dir);
        else if (r < 0 && r != -ENOENT)
                log_warning_errno(r, "Cannot read the baseline record in %s (%s); recording the current values.",
                                  m->runtime_dir, strerror(-r));
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
                log_warning_errno(r, "Cannot record the baseline in %s (%s): a crash would lose it.",
                                  m->runtime_dir, strerror(-r));

        m->baseline = recorded;
        FOREACH_KNOB(k)
                m->owned[k] = m->present[k] && current[k] != recorded.knobs[k];
        for (size_t i = 0; i < m->baseline.n_pools; i++) {
                const PoolBaseline *p = &m->baseline.pools[i];
                PoolState state;

                m->pool_owned[i] = sysfs_read_pool(m->sysfs_root, p->page_size_kb, p->node, &state) >= 0 &&
                                   state.nr != p->pages;
        }

        if (reused) {
                log_info("Reusing the baseline recorded in %s by an earlier run.", m->runtime_dir);
                load_unit_record(m);
        }
        return 0;
}

/* Values thpd.conf pins are part of the baseline and enforced even with no policy active. */
void manager_effective_baseline(const Manager *m, KnobValue out[_KNOB_MAX]) {
        FOREACH_KNOB(k) {
                out[k] = m->present[k] ? m->baseline.knobs[k] : KNOB_VALUE_UNSET;
                if (m->present[k] && m->settings.baseline[k] != KNOB_VALUE_UNSET)
                        out[k] = m->settings.baseline[k];
        }
}

static PolicyRuntime *policy_runtime(Manager *m, const Policy *p) {
        PolicyRuntime *r = g_hash_table_lookup(m->policy_runtime, p->name);

        if (!r) {
                r = g_new0(PolicyRuntime, 1);
                r->name = g_strdup(p->name);
                r->units = g_ptr_array_new_with_free_func(g_free);
                g_hash_table_insert(m->policy_runtime, r->name, r);
        }
        return r;
}

static gint compare_positions(gconstpointer a, gconstpointer b) {
        guint x = *(const guint *) a, y = *(const guint *) b;

        return x < y ? -1 : x > y;
}

static gint compare_strings(gconstpointer a, gconstpointer b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static int on_grace_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        manager_queue_apply(userdata);
        return 0;
}

static void arm_grace_timer(Manager *m, uint64_t when) {
        int r;

        if (when == 0) {
                if (m->grace_timer)
                        (void) sd_event_source_set_enabled(m->grace_timer, SD_EVENT_OFF);
                return;
        }
        if (!m->grace_timer) {
                r = sd_event_add_time(m->event, &m->grace_timer, CLOCK_MONOTONIC, when, 0, on_grace_timer, m);
                if (r < 0)
                        log_error_errno(r, "Cannot arm the pool grace timer; pools shrink at the next change: %s", strerror(-r));
                return;
        }
        (void) sd_event_source_set_time(m->grace_timer, when);
        (void) sd_event_source_set_enabled(m->grace_timer, SD_EVENT_ONESHOT);
}

/* Until the manager has listed the units (or turned out absent), thpd knows nothing of what runs. */
static bool units_known(const Manager *m) {
        return !m->units || unit_tracker_has_answered(m->units);
}

/* Only when the sets changed: unit churn outside policies costs no write. */
static void save_unit_record(Manager *m) {
        g_autoptr(GHashTable) started = g_hash_table_new(g_str_hash, g_str_equal);
        g_autofree char *text = NULL;
        GHashTableIter iter;
        const char *name;
        int r;

        g_hash_table_iter_init(&iter, m->seen_wanted);
        while (g_hash_table_iter_next(&iter, (gpointer *) &name, NULL))
                if (!g_hash_table_contains(m->needs_restart, name))
                        g_hash_table_add(started, (gpointer) name);
        text = unit_record_format(started, m->needs_restart);
        if (streq_ptr(text, m->unit_record))
                return;
        r = runtime_file_write(m->runtime_dir, UNIT_RECORD_FILE, text);
        if (r < 0)
                log_warning_errno(r, "Cannot record the units of active policies in %s (%s): after a restart, "
                                  "thpd would list them as needing a restart.", m->runtime_dir, strerror(-r));
        g_free(m->unit_record);
        m->unit_record = TAKE_PTR(text);
}

/* A running unit of a service-scoped policy needs a restart while its process is not isolated;
 * the answer comes later for a unit that just started (the apply it queues gets here again). */
static void update_isolation(Manager *m, const Policy *p, const TrackedUnit *u) {
        const Isolation *i;

        if (!tracked_unit_is_running(u))
                return;
        i = manager_isolation_check(m, p, u);
        if (i->state == ISOLATION_NOT_ISOLATED)
                g_hash_table_insert(m->needs_restart, g_strdup(u->name), g_strdup(p->name));
        else if (i->state == ISOLATION_ISOLATED && streq_ptr(g_hash_table_lookup(m->needs_restart, u->name), p->name))
                g_hash_table_remove(m->needs_restart, u->name);
}

static void array_unref(gpointer a) {
        g_ptr_array_unref(a);
}

/* The policies an apply must look at, by position, in order: those of the wanted units (with
 * those units, as TrackedUnit*, in by_policy) and those that were active or held a pool at the
 * last apply. After a (re)load every policy, since a changed file may no longer match. */
static GArray *candidate_policies(Manager *m, GHashTable *units, GHashTable *by_policy) {
        GArray *positions = g_array_new(FALSE, FALSE, sizeof(guint));
        g_autoptr(GPtrArray) matched = g_ptr_array_new();
        g_autoptr(GHashTable) seen = g_hash_table_new(g_direct_hash, g_direct_equal);
        GHashTableIter iter;
        TrackedUnit *u;
        const Policy *p;

        if (units) {
                g_hash_table_iter_init(&iter, units);
                while (g_hash_table_iter_next(&iter, NULL, (gpointer *) &u)) {
                        if (!tracked_unit_is_wanted(u))
                                continue;
                        g_ptr_array_set_size(matched, 0);
                        (void) policy_index_lookup(m->policy_index, u->name, matched);
                        for (guint i = 0; i < matched->len; i++) {
                                GPtrArray *list;

                                p = g_ptr_array_index(matched, i);
                                list = g_hash_table_lookup(by_policy, p);
                                if (!list) {
                                        list = g_ptr_array_new();
                                        g_hash_table_insert(by_policy, (gpointer) p, list);
                                }
                                g_ptr_array_add(list, u);
                        }
                }
        }

        if (m->apply_all_policies) {
                for (guint i = 0; i < m->policies->len; i++)
                        g_array_append_val(positions, i);
                m->apply_all_policies = false;
                return positions;
        }

        g_hash_table_iter_init(&iter, by_policy);
        while (g_hash_table_iter_next(&iter, (gpointer *) &p, NULL))
                g_hash_table_add(seen, (gpointer) p);
        g_hash_table_iter_init(&iter, m->live_policies);
        while (g_hash_table_iter_next(&iter, (gpointer *) &p, NULL))
                g_hash_table_add(seen, (gpointer) p);
        g_hash_table_iter_init(&iter, seen);
        while (g_hash_table_iter_next(&iter, (gpointer *) &p, NULL)) {
                int position = policy_index_position(m->policy_index, p);

                if (position >= 0)
                        g_array_append_val(positions, position);
        }
        g_array_sort(positions, compare_positions);
        return positions;
}

/* Works out which policies the wanted units activate, and which stopped ones still hold their
 * pool during the grace period. Only the policies of wanted units and those active or in their
 * grace period at the last apply can change, so only they are looked at. */
static GArray *collect_active(Manager *m) {
        GArray *active = g_array_new(FALSE, TRUE, sizeof(ActivePolicy));
        GHashTable *units = m->units ? unit_tracker_units(m->units) : NULL;
        uint64_t now = now_usec(CLOCK_MONOTONIC), next_grace = 0;
        /* name -> its stop count + 1, as seen_wanted */
        g_autoptr(GHashTable) wanted_now = g_hash_table_new(g_str_hash, g_str_equal);
        /* Policy* -> GPtrArray of the wanted TrackedUnit* it matches */
        g_autoptr(GHashTable) by_policy = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, array_unref);
        g_autoptr(GArray) positions = candidate_policies(m, units, by_policy);

        for (guint i = 0; i < positions->len; i++) {
                const Policy *p = g_ptr_array_index(m->policies, g_array_index(positions, guint, i));
                PolicyRuntime *rt = policy_runtime(m, p);
                GPtrArray *matching = g_hash_table_lookup(by_policy, p);

                g_ptr_array_set_size(rt->units, 0);
                for (guint j = 0; matching && j < matching->len; j++) {
                        TrackedUnit *u = g_ptr_array_index(matching, j);
                        gpointer seen;
                        bool known = g_hash_table_lookup_extended(m->seen_wanted, u->name, NULL, &seen);

                        g_ptr_array_add(rt->units, g_strdup(u->name));
                        g_hash_table_insert(wanted_now, u->name, GUINT_TO_POINTER(u->stops + 1));
                        /* Already running when it first counted: its memory was mapped before
                         * this policy applied. One that stopped since the last apply started
                         * again under it. A service-scoped policy changes no knob: what counts
                         * is whether the process runs isolated. */
                        if (p->scope == POLICY_SCOPE_SERVICE)
                                update_isolation(m, p, u);
                        else if (!known && tracked_unit_is_running(u))
                                g_hash_table_insert(m->needs_restart, g_strdup(u->name), g_strdup(p->name));
                        else if (known && GPOINTER_TO_UINT(seen) != u->stops + 1)
                                g_hash_table_remove(m->needs_restart, u->name);
                }
                g_ptr_array_sort(rt->units, compare_strings);

                if (rt->units->len > 0) {
                        ActivePolicy a = { .policy = p, .unit = g_ptr_array_index(rt->units, 0) };

                        rt->active = true;
                        rt->pool_grace_until = 0;
                        g_array_append_val(active, a);
                        g_hash_table_add(m->live_policies, (gpointer) p);
                        continue;
                }

                if (rt->active && p->has_pool && m->settings.pool_grace_usec > 0)
                        rt->pool_grace_until = now + m->settings.pool_grace_usec;
                rt->active = false;

                if (rt->pool_grace_until > now) {
                        ActivePolicy a = { .policy = p, .unit = NULL, .pool_only = true };

                        g_array_append_val(active, a);
                        g_hash_table_add(m->live_policies, (gpointer) p);
                        if (next_grace == 0 || rt->pool_grace_until < next_grace)
                                next_grace = rt->pool_grace_until;
                } else {
                        rt->pool_grace_until = 0;
                        g_hash_table_remove(m->live_policies, p);
                }
        }

        /* Before the first unit list nothing is known yet: keep what the last instance recorded. */
        if (units_known(m)) {
                /* Units no longer wanted start afresh: their next start maps memory under the policy. */
                g_hash_table_remove_all(m->seen_wanted);
                GHashTableIter iter;
                const char *name;
                gpointer stops;
                g_hash_table_iter_init(&iter, wanted_now);
                while (g_hash_table_iter_next(&iter, (gpointer *) &name, &stops))
                        g_hash_table_insert(m->seen_wanted, g_strdup(name), stops);
                g_hash_table_iter_init(&iter, m->needs_restart);
                while (g_hash_table_iter_next(&iter, (gpointer *) &name, NULL))
                        if (!g_hash_table_contains(wanted_now, name))
                                g_hash_table_iter_remove(&iter);
                manager_isolation_prune(m, wanted_now);
                save_unit_record(m);
        }

        arm_grace_timer(m, next_grace);
        return active;
}

/* On the heap: a policy path can be PATH_MAX long, and a buffer that size in apply_knobs() made
 * the stack deeper for good (the kernel keeps stack pages once touched). */
char *manager_knob_reason(const Manager *m, Knob k) {
        const Source *s = &m->target.source[k];

        switch (s->kind) {
        case SOURCE_POLICY:
                return g_strdup_printf("%s for %s", s->policy->path, s->unit);
        case SOURCE_BASELINE:
                return g_strdup("baseline, no policy votes");
        case SOURCE_MITIGATION:
                return g_strdup("storm mitigation");
        case SOURCE_OVERRIDE:
                return g_strdup("admin override");
        default:
                return g_strdup("no source");
        }
}

/* Returns the number of knobs that could not be read or set. */
static unsigned apply_knobs(Manager *m, GArray *changes) {
        /* Until the manager has listed what runs, any write could loosen a knob a running
         * service needs (a restarted thpd finds its predecessor's values in place). */
        bool hold = !units_known(m);
        bool baseline_dirty = false;
        unsigned errors = 0;

        FOREACH_KNOB(k) {
                KnobValue want = m->target.value[k], cur;
                bool from_baseline = m->target.source[k].kind == SOURCE_BASELINE;
                char a[24], b[24];
                int r;

                if (want == KNOB_VALUE_UNSET)
                        continue;
                if (!m->present[k]) {
                        if (!from_baseline) {
                                g_autofree char *reason = manager_knob_reason(m, k);

                                log_debug("%s: not on this kernel, ignoring the vote (%s)", knob_name(k),
                                          reason);
                        }
                        continue;
                }

                r = sysfs_read_knob(m->sysfs_root, k, &cur);
                if (r < 0) {
                        log_error_errno(r, "%s: cannot read: %s", knob_name(k), strerror(-r));
                        errors++;
                        continue;
                }

                /* Nobody votes and thpd never moved it: the admin owns it, and the baseline
                 * follows what they set. */
                if (from_baseline && !m->owned[k] && m->settings.baseline[k] == KNOB_VALUE_UNSET) {
                        if (cur != m->baseline.knobs[k]) {
                                log_info("%s: now %s, set outside thpd; taking it as the baseline", knob_name(k),
                                         knob_value_to_string(k, cur, a));
                                m->baseline.knobs[k] = cur;
                                baseline_dirty = true;
                        }
                        m->applied[k] = cur;
                        continue;
                }

                if (hold) {
                        m->applied[k] = cur;
                        continue;
                }

                if (cur != want) {
                        g_autofree char *reason = manager_knob_reason(m, k);

                        r = sysfs_write_knob(m->sysfs_root, k, want);
                        if (r < 0) {
                                log_error_errno(r, "%s: cannot set %s (%s): %s", knob_name(k),
                                                knob_value_to_string(k, want, a), reason, strerror(-r));
                                (void) sysfs_read_knob(m->sysfs_root, k, &m->applied[k]);
                                errors++;
                                continue;
                        }
                        m->counters.knob_writes++;
                        log_info("%s: %s -> %s (%s)", knob_name(k), knob_value_to_string(k, cur, a),
                                 knob_value_to_string(k, want, b), reason);
                        KnobChange change = {
                                .knob = k,
                                .old_value = cur,
                                .new_value = want,
                                .reason = g_steal_pointer(&reason),
                        };
                        g_array_append_val(changes, change);
                }
                m->applied[k] = want;
                m->owned[k] = !from_baseline || want != m->baseline.knobs[k];
        }

        if (baseline_dirty) {
                int r = baseline_save(m->runtime_dir, &m->baseline);
                if (r < 0)
                        log_warning_errno(r, "Cannot update the baseline record: %s", strerror(-r));
        }
        m->counters.knob_errors += errors;
        return errors;
}

/* Not before the unit list: a file saying that no policy is active could be scraped meanwhile. */
static void update_metrics(Manager *m) {
        if (units_known(m))
                manager_metrics_update(m);
}

static void update_status(Manager *m) {
        g_autoptr(GString) s = g_string_new(NULL);
        unsigned n_active = 0;
        GHashTableIter iter;
        PolicyRuntime *rt;
        char buf[24], buf2[24];

        g_hash_table_iter_init(&iter, m->policy_runtime);
        while (g_hash_table_iter_next(&iter, NULL, (gpointer *) &rt))
                n_active += rt->active;

        g_string_append_printf(s, "enabled=%s defrag=%s; %u active polic%s",
                               knob_value_to_string(KNOB_ENABLED, m->applied[KNOB_ENABLED], buf),
                               knob_value_to_string(KNOB_DEFRAG, m->applied[KNOB_DEFRAG], buf2),
                               n_active, n_active == 1 ? "y" : "ies");
        if (m->units && !unit_tracker_is_ready(m->units))
                g_string_append(s, "; waiting for the systemd manager");
        if (m->storm) {
                StormPhase worst = STORM_PHASE_CALM;

                for (StormKind k = 0; k < _STORM_KIND_MAX; k++)
                        if (storm_watcher_get_phase(m->storm, k) == STORM_PHASE_STORM)
                                worst = STORM_PHASE_STORM;
                if (worst == STORM_PHASE_STORM)
                        g_string_append(s, "; compaction/khugepaged storm");
        }
        if (g_hash_table_size(m->needs_restart) > 0)
                g_string_append_printf(s, "; %u unit(s) need a restart", g_hash_table_size(m->needs_restart));

        if (!streq_ptr(m->status, s->str)) {
                g_free(m->status);
                m->status = g_strdup(s->str);
                (void) sd_notifyf(false, "STATUS=%s", m->status);
        }
}

static void knob_change_clear(gpointer p) {
        KnobChange *c = p;

        g_free(c->reason);
}

void manager_apply(Manager *m) {
        g_autoptr(GArray) active = collect_active(m);
        g_autoptr(GArray) changes = g_array_new(FALSE, TRUE, sizeof(KnobChange));
        KnobValue baseline[_KNOB_MAX];
        ResolveInput in;

        g_array_set_clear_func(changes, knob_change_clear);
        manager_effective_baseline(m, baseline);

        in = (ResolveInput) {
                .baseline = baseline,
                .active = (const ActivePolicy *) active->data,
                .n_active = active->len,
                .mitigation = m->mitigation,
                .override = m->override,
                .pool_baseline = m->baseline.pools,
                .n_pool_baseline = m->baseline.n_pools,
        };
        resolve(&in, &m->target);
        if (m->target.pools_truncated)
                log_warning("More hugetlb pools requested than thpd tracks (%d); some are ignored.", RESOLVE_MAX_POOLS);

        m->last_apply_errors = apply_knobs(m, changes);
        if (units_known(m))
                m->last_apply_errors += manager_apply_pools(m);
        m->applied_once = true;
        m->apply_generation++;
        update_status(m);

        if (!m->ready_sent && m->units && unit_tracker_is_ready(m->units)) {
                (void) sd_notify(false, "READY=1");
                m->ready_sent = true;
        }
        manager_bus_after_apply(m, (const KnobChange *) changes->data, changes->len);
        update_metrics(m);
        schedule_trim(m);
}

int manager_restore(Manager *m) {
        KnobValue baseline[_KNOB_MAX];
        int failed = 0, r;

        manager_effective_baseline(m, baseline);
        FOREACH_KNOB(k) {
                KnobValue want = baseline[k], cur;
                char a[24], b[24];

                if (want == KNOB_VALUE_UNSET)
                        continue;
                r = sysfs_read_knob(m->sysfs_root, k, &cur);
                if (r >= 0 && cur == want)
                        continue;
                r = sysfs_write_knob(m->sysfs_root, k, want);
                if (r < 0) {
                        log_error_errno(r, "%s: cannot restore %s: %s", knob_name(k), knob_value_to_string(k, want, a), strerror(-r));
                        failed = r;
                        continue;
                }
                log_info("%s: %s -> %s (restoring the baseline)", knob_name(k), knob_value_to_string(k, cur, b),
                         knob_value_to_string(k, want, a));
        }

        r = manager_restore_pools(m);
        if (r < 0)
                failed = r;
        return failed;
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
                log_error_errno(r, "Cannot work out the storm mitigation for level %u: %s", level, strerror(-r));
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
        manager_bus_storm_event(m, event, kind, figures);
        update_status(m);
        update_metrics(m);
}

/* (Re)creates the watcher when its settings changed; a watcher that cannot read vmstat leaves
 * thpd running without storm detection rather than not running at all. */
static void setup_storm_watcher(Manager *m, bool config_changed) {
        int r;

        manager_bus_set_storm_action(m, m->settings.storm.action);
        if (!config_changed && (m->storm || !m->settings.storm_watch))
                return;

        m->storm = storm_watcher_free(m->storm);
        m->mitigation_level = 0;
        unset_knobs(m->mitigation);
        if (!m->settings.storm_watch) {
                log_info("Storm detection is off (thpd.conf: [Storm] Watch=no).");
                return;
        }
        r = storm_watcher_new(m->event, m->procfs_root, &m->settings.storm, on_storm_event, m, &m->storm);
        if (r < 0)
                log_warning_errno(r, "Storm detection is off: cannot read %s/vmstat: %s", m->procfs_root, strerror(-r));
}

int manager_reload(Manager *m) {
        StormConfig old_storm = m->settings.storm;
        bool old_watch = m->settings.storm_watch;

        log_info("Reloading policies and settings.");
        (void) sd_notify(false, "RELOADING=1");
        m->counters.reloads++;
        (void) load_settings(m);
        load_policies(m);
        /* The target points into the policies just replaced: resolve against the new ones before
         * anything (a property read, a storm event) looks at it. */
        manager_apply(m);
        setup_storm_watcher(m, memcmp(&old_storm, &m->settings.storm, sizeof old_storm) != 0 ||
                               old_watch != m->settings.storm_watch);
        if (m->units)
                (void) unit_tracker_rescan(m->units);
        manager_apply(m);
        (void) sd_notify(false, "READY=1");
        return 0;
}

static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        return manager_reload(userdata);
}

static int on_terminate(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;

        (void) sd_notify(false, "STOPPING=1");
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
                return log_error_errno(r, "Cannot connect to the %s bus: %s", bus_kind(m), strerror(-r));
        r = sd_bus_match_signal(m->bus, NULL, "org.freedesktop.DBus.Local", "/org/freedesktop/DBus/Local",
                                "org.freedesktop.DBus.Local", "Disconnected", on_bus_disconnected, m);
        if (r < 0)
                return log_error_errno(r, "Cannot watch the bus connection: %s", strerror(-r));
        r = sd_bus_attach_event(m->bus, m->event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return log_error_errno(r, "Cannot attach the bus to the event loop: %s", strerror(-r));
        return 0;
}

int manager_start(Manager *m) {
        int r;

        r = load_settings(m);
        if (r < 0)
                return r;
        load_policies(m);

        /* The bus name first: a second instance must exit before it records or writes anything. */
        r = connect_bus(m);
        if (r < 0)
                return r;
        r = manager_bus_register(m);
        if (r < 0)
                return r;

        r = setup_baseline(m);
        if (r < 0)
                return r;

        r = sd_event_add_signal(m->event, &m->sigterm, SIGTERM, on_terminate, m);
        if (r >= 0)
                r = sd_event_add_signal(m->event, &m->sigint, SIGINT, on_terminate, m);
        if (r >= 0)
                r = sd_event_add_signal(m->event, &m->sighup, SIGHUP, on_sighup, m);
        if (r < 0)
                return log_error_errno(r, "Cannot watch signals: %s", strerror(-r));

        /* Only wakes the loop when WatchdogSec= is set. */
        r = sd_event_set_watchdog(m->event, true);
        if (r < 0)
                log_warning_errno(r, "Cannot enable the watchdog: %s", strerror(-r));

        r = unit_tracker_new(m->bus, m->event, unit_filter, on_units_changed, m, &m->units);
        if (r < 0)
                return r;
        setup_storm_watcher(m, true);

        /* Resolves and reads the knobs for the properties; writes wait for the unit list. */
        manager_apply(m);

        return unit_tracker_start(m->units);
}
