/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>

#include "config.h"
#include "log.h"
#include "manager-bus-internal.h"
#include "manager-bus-properties.h"
#include "manager-blanket.h"
#include "manager-isolation.h"
#include "manager-ownership.h"
#include "manager-status.h"
#include "thp-stats-read.h"
#include "util.h"

const char *bus_knob_value(Knob k, KnobValue v, char buf[static 24]) {
        return v == KNOB_VALUE_UNSET ? "" : knob_value_to_string(k, v, buf);
}

PolicyRuntime *bus_policy_runtime(const Manager *m, const char *policy_name) {
        return g_hash_table_lookup(m->plan.policy_runtime, policy_name);
}

bool bus_policy_is_active(const Manager *m, const char *policy_name) {
        PolicyRuntime *rt = bus_policy_runtime(m, policy_name);

        return rt && rt->active;
}

int bus_append_strings(sd_bus_message *reply, GPtrArray *strings) {
        int r;

        r = sd_bus_message_open_container(reply, 'a', "s");
        for (guint i = 0; r >= 0 && strings && i < strings->len; i++)
                r = sd_bus_message_append_basic(reply, 's', g_ptr_array_index(strings, i));
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}

/* ---- storms ---- */

/* The figures that tell a storm of this kind, as a{sd}. */
int bus_append_storm_figures(sd_bus_message *msg, StormKind kind, const StormFigures *f) {
        struct {
                const char *name;
                double value;
                bool shown;
        } rows[] = {
                { "window_seconds", 0, true },
                { "compact_stalls_per_sec", 0, kind == STORM_KIND_DIRECT_COMPACTION },
                { "compact_fail_ratio", 0, kind == STORM_KIND_DIRECT_COMPACTION },
                { "compact_scanned_per_sec", 0, kind != STORM_KIND_KHUGEPAGED },
                { "thp_fault_fallback_per_sec", 0, kind == STORM_KIND_DIRECT_COMPACTION },
                { "thp_fault_fallback_ratio", 0, kind == STORM_KIND_DIRECT_COMPACTION },
                { "allocstalls_per_sec", 0, kind == STORM_KIND_DIRECT_COMPACTION },
                { "thp_collapse_failed_per_sec", 0, kind == STORM_KIND_KHUGEPAGED },
                { "khugepaged_cpu_percent", 0, kind == STORM_KIND_KHUGEPAGED },
                { "compact_daemon_wakes_per_sec", 0, kind == STORM_KIND_KCOMPACTD },
                { "kcompactd_cpu_percent", 0, kind == STORM_KIND_KCOMPACTD },
                { "psi_memory_some_percent", 0, false },
                { "psi_memory_full_percent", 0, false },
                { "thp_split_per_sec", 0, kind == STORM_KIND_DIRECT_COMPACTION },
                { "mthp_fault_fallback_per_sec", 0, kind == STORM_KIND_DIRECT_COMPACTION },
                { "mthp_split_per_sec", 0, kind == STORM_KIND_DIRECT_COMPACTION },
                { "mthp_size_kb", 0, kind == STORM_KIND_DIRECT_COMPACTION },
                { "mthp_size_fault_fallback_per_sec", 0, kind == STORM_KIND_DIRECT_COMPACTION },
        };
        int r;

        r = sd_bus_message_open_container(msg, 'a', "{sd}");
        if (r < 0)
                return r;
        if (f) {
                rows[0].value = (double) f->window_usec / (double) USEC_PER_SEC;
                rows[1].value = f->compact_stalls_per_sec;
                rows[2].value = f->compact_fail_ratio;
                rows[3].value = f->compact_scanned_per_sec;
                rows[4].value = f->thp_fault_fallback_per_sec;
                rows[5].value = f->thp_fault_fallback_ratio;
                rows[6].value = f->allocstalls_per_sec;
                rows[7].value = f->thp_collapse_failed_per_sec;
                rows[8].value = f->khugepaged_cpu_percent;
                rows[9].value = f->compact_daemon_wakes_per_sec;
                rows[10].value = f->kcompactd_cpu_percent;
                rows[11].value = f->psi_memory_some_percent;
                rows[11].shown = f->has_psi_memory;
                rows[12].value = f->psi_memory_full_percent;
                rows[12].shown = f->has_psi_memory;
                rows[13].value = f->thp_split_per_sec;
                rows[14].value = f->mthp_fault_fallback_per_sec;
                rows[15].value = f->mthp_split_per_sec;
                rows[16].value = (double) f->mthp_size_kb;
                rows[17].value = f->mthp_size_fault_fallback_per_sec;
                for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                        if (!rows[i].shown)
                                continue;
                        r = sd_bus_message_append(msg, "{sd}", rows[i].name, rows[i].value);
                        if (r < 0)
                                return r;
                }
        }
        return sd_bus_message_close_container(msg);
}

/* ---- properties ---- */

int property_get_version(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "s", THPD_VERSION);
}

/* One entry of Knobs: name, applied, target, baseline, source, policy, unit. */
typedef struct KnobRow {
        const char *fields[7];
        char applied[24], target[24], baseline[24];
} KnobRow;

static void knob_row(const Manager *m, Knob k, const KnobValue baseline[_KNOB_MAX], KnobRow *row) {
        const Source *s = &m->target.source[k];
        bool resolved = manager_knob_resolved(m, k);

        row->fields[0] = knob_name(k);
        row->fields[1] = bus_knob_value(k, m->applied[k], row->applied);
        row->fields[2] = bus_knob_value(k, resolved ? m->target.value[k] : KNOB_VALUE_UNSET, row->target);
        row->fields[3] = bus_knob_value(k, baseline[k], row->baseline);
        row->fields[4] = resolved ? source_kind_to_string(s->kind) : "";
        row->fields[5] = resolved && s->kind == SOURCE_POLICY ? s->policy->name : "";
        row->fields[6] = resolved && s->kind == SOURCE_POLICY && s->unit ? s->unit : "";
}

int property_get_knobs(sd_bus *bus, const char *path, const char *interface, const char *property,
                              sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const Manager *m = bus_manager(userdata);
        KnobValue baseline[_KNOB_MAX];
        int r;

        manager_effective_baseline(m, baseline);
        r = sd_bus_message_open_container(reply, 'a', "(sssssss)");
        if (r < 0)
                return r;
        FOREACH_KNOB(k) {
                KnobRow row;

                if (!m->present[k])
                        continue;
                knob_row(m, k, baseline, &row);
                r = sd_bus_message_open_container(reply, 'r', "sssssss");
                for (size_t i = 0; r >= 0 && i < ELEMENTSOF(row.fields); i++)
                        r = sd_bus_message_append_basic(reply, 's', row.fields[i]);
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
                if (r < 0)
                        return r;
        }
        return sd_bus_message_close_container(reply);
}

/* Digests are taken at every apply to tell what changed; each feeds what its getter shows, from
 * the state, never through a message built only to be read back. */
uint64_t property_digest_knobs(const BusData *d) {
        const Manager *m = d->m;
        KnobValue baseline[_KNOB_MAX];
        uint64_t h = FNV1A_OFFSET;

        manager_effective_baseline(m, baseline);
        FOREACH_KNOB(k) {
                KnobRow row;

                if (!m->present[k])
                        continue;
                knob_row(m, k, baseline, &row);
                for (size_t i = 0; i < ELEMENTSOF(row.fields); i++)
                        h = fnv1a_feed_string(h, row.fields[i]);
        }
        return h;
}

int property_get_active_policies(sd_bus *bus, const char *path, const char *interface, const char *property,
                                        sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const Manager *m = bus_manager(userdata);
        g_autoptr(GPtrArray) live = manager_live_policies(m);
        int r;

        r = sd_bus_message_open_container(reply, 'a', "(sas)");
        if (r < 0)
                return r;
        for (guint i = 0; i < live->len; i++) {
                const Policy *p = g_ptr_array_index(live, i);
                PolicyRuntime *rt = bus_policy_runtime(m, p->name);

                if (!rt || !rt->active)
                        continue;
                r = sd_bus_message_open_container(reply, 'r', "sas");
                if (r >= 0)
                        r = sd_bus_message_append_basic(reply, 's', p->name);
                if (r >= 0)
                        r = bus_append_strings(reply, rt->units);
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
                if (r < 0)
                        return r;
        }
        return sd_bus_message_close_container(reply);
}

/* Counted where the plan reports a change (emit_changed_properties()): going through every
 * active policy's units at each apply is what this property would cost. */
uint64_t property_digest_active_policies(const BusData *d) {
        return d->active_policies_changes;
}

int property_get_pools(sd_bus *bus, const char *path, const char *interface, const char *property,
                              sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const Manager *m = bus_manager(userdata);
        int r;

        r = sd_bus_message_open_container(reply, 'a', "(tittts)");
        if (r < 0)
                return r;
        for (guint i = 0; i < m->pools->len; i++) {
                const PoolStatus *p = &g_array_index(m->pools, PoolStatus, i);

                r = sd_bus_message_append(reply, "(tittts)", p->page_size_kb, (int32_t) p->node, p->target, p->allocated,
                                          p->free, p->shortfall ?: "");
                if (r < 0)
                        return r;
        }
        return sd_bus_message_close_container(reply);
}

uint64_t property_digest_pools(const BusData *d) {
        const Manager *m = d->m;
        uint64_t h = FNV1A_OFFSET;

        for (guint i = 0; i < m->pools->len; i++) {
                const PoolStatus *p = &g_array_index(m->pools, PoolStatus, i);

                h = fnv1a_feed_u64(h, p->page_size_kb);
                h = fnv1a_feed_u64(h, (uint64_t) p->node);
                h = fnv1a_feed_u64(h, p->target);
                h = fnv1a_feed_u64(h, p->allocated);
                h = fnv1a_feed_u64(h, p->free);
                h = fnv1a_feed_string(h, p->shortfall ?: "");
        }
        return h;
}

/* A Scope=auto policy not met per service votes machine-wide, as one that wants always does. */
static bool isolation_machine_wide(const Manager *m, const Isolation *iso) {
        return (iso->scope == POLICY_SCOPE_AUTO && !g_hash_table_contains(m->per_service, iso->policy)) ||
               iso->mode == KNOB_ENABLED_ALWAYS;
}

int property_get_isolated_services(sd_bus *bus, const char *path, const char *interface,
                                          const char *property, sd_bus_message *reply, void *userdata,
                                          sd_bus_error *error) {
        const Manager *m = bus_manager(userdata);
        g_autoptr(GPtrArray) list = manager_isolation_list(m);
        int r;

        r = sd_bus_message_open_container(reply, 'a', "(sssssssb)");
        for (guint i = 0; r >= 0 && i < list->len; i++) {
                const Isolation *iso = g_ptr_array_index(list, i);
                /* The note quotes a command line, which need not be UTF-8. */
                g_autofree char *note = g_utf8_make_valid(iso->note ?: "", -1);
                g_autofree char *via = isolation_describe_via(iso);
                bool machine_wide = isolation_machine_wide(m, iso);
                char buf[24];

                r = sd_bus_message_append(reply, "(sssssssb)", iso->unit, iso->policy,
                                          knob_value_to_string(KNOB_ENABLED, iso->mode, buf),
                                          isolation_state_to_string(iso->state), note,
                                          policy_scope_to_string(iso->scope), via, machine_wide);
        }
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}

/* The note as it is, before the getter makes it valid UTF-8, and via_value even where the getter
 * leaves it out (via is not MemoryTHP=): either can only announce a change the getter does not
 * show, never hide one. */
uint64_t property_digest_isolated_services(const BusData *d) {
        const Manager *m = d->m;
        g_autoptr(GPtrArray) list = manager_isolation_list(m);
        uint64_t h = FNV1A_OFFSET;

        for (guint i = 0; i < list->len; i++) {
                const Isolation *iso = g_ptr_array_index(list, i);

                h = fnv1a_feed_string(h, iso->unit);
                h = fnv1a_feed_string(h, iso->policy);
                h = fnv1a_feed_u64(h, (uint64_t) iso->mode);
                h = fnv1a_feed_u64(h, iso->state);
                h = fnv1a_feed_string(h, iso->note ?: "");
                h = fnv1a_feed_u64(h, iso->scope);
                h = fnv1a_feed_u64(h, iso->via);
                h = fnv1a_feed_string(h, iso->via_value ?: "");
                h = fnv1a_feed_u64(h, isolation_machine_wide(m, iso));
        }
        return h;
}

/* The plan's rows, then the services started before the blanket, for the policy whose blanket
 * it is: a policy's own unit is never under the blanket, so no unit is in both. */
int property_get_needs_restart(sd_bus *bus, const char *path, const char *interface, const char *property,
                                      sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const Manager *m = bus_manager(userdata);
        g_autoptr(GPtrArray) units = manager_needs_restart_sorted(m);
        g_autoptr(GPtrArray) blanket = manager_blanket_services(m);
        const char *blanket_policy = manager_blanket_policy(m);
        int r;

        r = sd_bus_message_open_container(reply, 'a', "(ss)");
        for (guint i = 0; r >= 0 && i < units->len; i++) {
                const char *unit = g_ptr_array_index(units, i);

                r = sd_bus_message_append(reply, "(ss)", unit, (const char *) g_hash_table_lookup(m->plan.needs_restart, unit));
        }
        for (guint i = 0; r >= 0 && blanket_policy && i < blanket->len; i++) {
                const BlanketService *s = g_ptr_array_index(blanket, i);

                if (s->class == BLANKET_BEFORE && !g_hash_table_contains(m->plan.needs_restart, s->unit))
                        r = sd_bus_message_append(reply, "(ss)", s->unit, blanket_policy);
        }
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}

/* The plan's rows counted where the plan reports a change, as ActivePolicies; the blanket's
 * as BlanketServices. */
uint64_t property_digest_needs_restart(const BusData *d) {
        uint64_t h = fnv1a_feed_u64(FNV1A_OFFSET, d->needs_restart_changes);

        h = fnv1a_feed_string(h, manager_blanket_policy(d->m) ?: "");
        return fnv1a_feed_u64(h, property_digest_blanket_services(d));
}

int property_get_blanket_since(sd_bus *bus, const char *path, const char *interface, const char *property,
                               sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "t", manager_blanket_since(bus_manager(userdata)));
}

uint64_t property_digest_blanket_since(const BusData *d) {
        return manager_blanket_since(d->m);
}

int property_get_blanket_services(sd_bus *bus, const char *path, const char *interface, const char *property,
                                  sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        g_autoptr(GPtrArray) list = manager_blanket_services(bus_manager(userdata));
        int r;

        r = sd_bus_message_open_container(reply, 'a', "(ss)");
        for (guint i = 0; r >= 0 && i < list->len; i++) {
                const BlanketService *s = g_ptr_array_index(list, i);

                r = sd_bus_message_append(reply, "(ss)", s->unit, blanket_class_to_string(s->class));
        }
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}

uint64_t property_digest_blanket_services(const BusData *d) {
        g_autoptr(GPtrArray) list = manager_blanket_services(d->m);
        uint64_t h = FNV1A_OFFSET;

        for (guint i = 0; i < list->len; i++) {
                const BlanketService *s = g_ptr_array_index(list, i);

                h = fnv1a_feed_string(h, s->unit);
                h = fnv1a_feed_u64(h, (uint64_t) s->class);
        }
        return h;
}

int property_get_override(sd_bus *bus, const char *path, const char *interface, const char *property,
                                 sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const Manager *m = bus_manager(userdata);
        int r;

        r = sd_bus_message_open_container(reply, 'a', "{ss}");
        if (r < 0)
                return r;
        FOREACH_KNOB(k) {
                char buf[24];

                if (m->override[k] == KNOB_VALUE_UNSET)
                        continue;
                r = sd_bus_message_append(reply, "{ss}", knob_name(k), knob_value_to_string(k, m->override[k], buf));
                if (r < 0)
                        return r;
        }
        return sd_bus_message_close_container(reply);
}

uint64_t property_digest_override(const BusData *d) {
        return fnv1a_feed(FNV1A_OFFSET, d->m->override, sizeof d->m->override);
}

int property_get_override_expires_at(sd_bus *bus, const char *path, const char *interface, const char *property,
                                            sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const Manager *m = bus_manager(userdata);

        return sd_bus_message_append(reply, "t", m->override_expires_realtime);
}

/* A property of one number or one enum is its own digest. */
uint64_t property_digest_override_expires_at(const BusData *d) {
        return d->m->override_expires_realtime;
}

int property_get_storm_state(sd_bus *bus, const char *path, const char *interface, const char *property,
                                    sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "s", storm_phase_to_string(manager_storm_phase(bus_manager(userdata))));
}

uint64_t property_digest_storm_state(const BusData *d) {
        return manager_storm_phase(d->m);
}

int property_get_storms(sd_bus *bus, const char *path, const char *interface, const char *property,
                               sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const Manager *m = bus_manager(userdata);
        int r;

        r = sd_bus_message_open_container(reply, 'a', "(ssa{sd})");
        if (r < 0)
                return r;
        for (StormKind k = 0; m->storm && k < _STORM_KIND_MAX; k++) {
                r = sd_bus_message_open_container(reply, 'r', "ssa{sd}");
                if (r >= 0)
                        r = sd_bus_message_append(reply, "ss", storm_kind_to_string(k),
                                                  storm_phase_to_string(storm_watcher_get_phase(m->storm, k)));
                if (r >= 0)
                        r = bus_append_storm_figures(reply, k, storm_watcher_get_latest(m->storm));
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
                if (r < 0)
                        return r;
        }
        return sd_bus_message_close_container(reply);
}

/* ---- per-size counters ---- */

/* What a size's anonymous THP does now, from the knobs as last read or written. */
static KnobValue size_effective_enabled(const Manager *m, uint64_t size_kb) {
        KnobValue global = m->present[KNOB_ENABLED] ? m->applied[KNOB_ENABLED] : KNOB_VALUE_UNSET;
        Knob k;

        if (knob_mthp_from_size_kb(size_kb, &k) < 0 || !m->present[k] || m->applied[k] == KNOB_VALUE_UNSET)
                return KNOB_VALUE_UNSET;
        return thp_size_effective_enabled(m->applied[k], global);
}

int property_get_size_stats(sd_bus *bus, const char *path, const char *interface, const char *property,
                            sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const Manager *m = bus_manager(userdata);
        g_autofree ThpSizeStats *sizes = NULL;
        size_t n = 0;
        int r;

        /* Read at each call: the counters are not part of thpd's state, and an unreadable tree
         * only leaves the list empty, as on a kernel without them. */
        r = thp_stats_read(m->sysfs_root, &sizes, &n);
        if (r < 0)
                log_debug_errno(r, "Cannot list the per-size THP counters under %s: %m", m->sysfs_root);

        r = sd_bus_message_open_container(reply, 'a', "(tsa{st})");
        for (size_t i = 0; r >= 0 && i < n; i++) {
                KnobValue e = size_effective_enabled(m, sizes[i].size_kb);
                char buf[24];

                r = sd_bus_message_open_container(reply, 'r', "tsa{st}");
                if (r >= 0)
                        r = sd_bus_message_append(reply, "ts", sizes[i].size_kb, bus_knob_value(KNOB_ENABLED, e, buf));
                if (r >= 0)
                        r = sd_bus_message_open_container(reply, 'a', "{st}");
                for (ThpStat s = 0; r >= 0 && s < _THP_STAT_MAX; s++)
                        if (thp_size_stats_has(&sizes[i], s))
                                r = sd_bus_message_append(reply, "{st}", thp_stat_to_string(s), sizes[i].value[s]);
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
        }
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}

int property_get_storm_action(sd_bus *bus, const char *path, const char *interface, const char *property,
                                     sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const Manager *m = bus_manager(userdata);

        return sd_bus_message_append(reply, "s", storm_action_to_string(m->settings.storm.action));
}

uint64_t property_digest_storm_action(const BusData *d) {
        return d->m->settings.storm.action;
}

int property_get_status(sd_bus *bus, const char *path, const char *interface, const char *property,
                               sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        g_autofree char *text = manager_status_text(bus_manager(userdata));

        return sd_bus_message_append(reply, "s", text);
}

/* The text itself: it is short, and made from counts, the storm phase and two knobs, which a
 * digest of its parts would have to follow by hand. */
uint64_t property_digest_status(const BusData *d) {
        g_autofree char *text = manager_status_text(d->m);

        return fnv1a_feed_string(FNV1A_OFFSET, text);
}

/* The policy a diagnostic is about: the file name of a *.conf directly in a policy directory;
 * NULL for a directory's own problem. */
static const char *diagnostic_policy(const Manager *m, const char *file) {
        const char *const *dirs = m->policy_dirs ? (const char *const *) m->policy_dirs : policy_default_dirs;
        const char *name;

        for (size_t i = 0; dirs[i]; i++) {
                size_t n = strlen(dirs[i]);

                if (strncmp(file, dirs[i], n) != 0 || file[n] != '/')
                        continue;
                name = file + n + 1;
                if (!strchr(name, '/') && g_str_has_suffix(name, ".conf"))
                        return name;
        }
        return NULL;
}

int property_get_policy_diagnostics(sd_bus *bus, const char *path, const char *interface, const char *property,
                                           sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const Manager *m = bus_manager(userdata);
        const GPtrArray *items = m->policy_diagnostics.items;
        int r;

        r = sd_bus_message_open_container(reply, 'a', "(ssuss)");
        for (guint i = 0; r >= 0 && items && i < items->len; i++) {
                const Diagnostic *d = g_ptr_array_index(items, i);
                /* D-Bus strings must be UTF-8, and a file name in a policy directory need not be. */
                g_autofree char *file = g_utf8_make_valid(d->file, -1), *message = g_utf8_make_valid(d->message, -1);
                const char *policy = diagnostic_policy(m, d->file);
                g_autofree char *name = policy ? g_utf8_make_valid(policy, -1) : g_strdup("");

                r = sd_bus_message_append(reply, "(ssuss)", name, file, (uint32_t) d->line,
                                          d->level == DIAGNOSTIC_ERROR ? "error" : "warning", message);
        }
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}

/* File and message as they are, before the getter makes them valid UTF-8. */
uint64_t property_digest_policy_diagnostics(const BusData *d) {
        const Manager *m = d->m;
        const GPtrArray *items = m->policy_diagnostics.items;
        uint64_t h = FNV1A_OFFSET;

        for (guint i = 0; items && i < items->len; i++) {
                const Diagnostic *diag = g_ptr_array_index(items, i);

                h = fnv1a_feed_string(h, diagnostic_policy(m, diag->file) ?: "");
                h = fnv1a_feed_string(h, diag->file);
                h = fnv1a_feed_u64(h, diag->line);
                h = fnv1a_feed_u64(h, diag->level);
                h = fnv1a_feed_string(h, diag->message);
        }
        return h;
}

int property_get_drift_conflicts(sd_bus *bus, const char *path, const char *interface, const char *property,
                                 sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const Manager *m = bus_manager(userdata);
        int r;

        r = sd_bus_message_open_container(reply, 'a', "(sssts)");
        for (guint i = 0; r >= 0 && i < m->drift.conflicts->len; i++) {
                const DriftConflict *c = &g_array_index(m->drift.conflicts, DriftConflict, i);
                g_autofree char *text = drift_describe_conflict(c);

                r = sd_bus_message_append(reply, "(sssts)", c->item, c->writer ?: "", c->value, c->since_realtime_usec,
                                          text);
        }
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}

/* What a row of DriftConflicts and one of RecentDrift both show: the item, the writer ("" for
 * none) and the sentence describing the row (a recent one's also says how its writer was
 * credited, which no field of the row shows). */
static uint64_t feed_drift_row(uint64_t h, const char *item, const char *writer, const char *text) {
        h = fnv1a_feed_string(h, item);
        h = fnv1a_feed_string(h, writer ?: "");
        return fnv1a_feed_string(h, text);
}

/* The digest of a drift array: every element, in order, fed by feed(). */
static uint64_t digest_drift_array(GArray *rows, uint64_t (*feed)(uint64_t h, const void *row)) {
        size_t size = g_array_get_element_size(rows);
        uint64_t h = FNV1A_OFFSET;

        for (guint i = 0; i < rows->len; i++)
                h = feed(h, rows->data + i * size);
        return h;
}

static uint64_t feed_conflict(uint64_t h, const void *row) {
        const DriftConflict *c = row;
        g_autofree char *text = drift_describe_conflict(c);

        h = feed_drift_row(h, c->item, c->writer, text);
        h = fnv1a_feed_string(h, c->value);
        return fnv1a_feed_u64(h, c->since_realtime_usec);
}

/* Few rows: a conflict per knob at most, rare. */
uint64_t property_digest_drift_conflicts(const BusData *d) {
        return digest_drift_array(d->m->drift.conflicts, feed_conflict);
}

int property_get_recent_drift(sd_bus *bus, const char *path, const char *interface, const char *property,
                              sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const Manager *m = bus_manager(userdata);
        int r;

        r = sd_bus_message_open_container(reply, 'a', "(sssssttts)");
        for (guint i = 0; r >= 0 && i < m->drift.recent->len; i++) {
                const DriftEvent *e = &g_array_index(m->drift.recent, DriftEvent, i);
                g_autofree char *who = drift_describe_writer(e);

                r = sd_bus_message_append(reply, "(sssssttts)", e->item, e->expected, e->found, e->writer ?: "",
                                          drift_action_to_string(e->action), e->when_usec, e->written_usec,
                                          e->wrong_usec, who);
        }
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}

static uint64_t feed_recent(uint64_t h, const void *row) {
        const DriftEvent *e = row;
        g_autofree char *who = drift_describe_writer(e);

        h = feed_drift_row(h, e->item, e->writer, who);
        h = fnv1a_feed_string(h, e->expected);
        h = fnv1a_feed_string(h, e->found);
        h = fnv1a_feed_u64(h, e->action);
        h = fnv1a_feed_u64(h, e->when_usec);
        h = fnv1a_feed_u64(h, e->written_usec);
        return fnv1a_feed_u64(h, e->wrong_usec);
}

/* At most DRIFT_RECENT_MAX rows. */
uint64_t property_digest_recent_drift(const BusData *d) {
        return digest_drift_array(d->m->drift.recent, feed_recent);
}

int property_get_ownership(sd_bus *bus, const char *path, const char *interface, const char *property,
                           sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        g_autoptr(GArray) rows = manager_ownership_rows(bus_manager(userdata));
        int r;

        r = sd_bus_message_open_container(reply, 'a', "(sss)");
        for (guint i = 0; r >= 0 && i < rows->len; i++) {
                const OwnershipRow *row = &g_array_index(rows, OwnershipRow, i);
                /* D-Bus strings must be UTF-8, and a policy's file name, in the detail, need
                 * not be. */
                g_autofree char *detail = g_utf8_make_valid(row->detail, -1);

                r = sd_bus_message_append(reply, "(sss)", row->item, owner_to_string(row->owner), detail);
        }
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}

/* A row per knob and pool: few, and built from what the owners and the last apply's sources
 * say; the detail as it is, before the getter makes it valid UTF-8. */
uint64_t property_digest_ownership(const BusData *d) {
        g_autoptr(GArray) rows = manager_ownership_rows(d->m);
        uint64_t h = FNV1A_OFFSET;

        for (guint i = 0; i < rows->len; i++) {
                const OwnershipRow *row = &g_array_index(rows, OwnershipRow, i);

                h = fnv1a_feed_string(h, row->item);
                h = fnv1a_feed_u64(h, row->owner);
                h = fnv1a_feed_string(h, row->detail);
        }
        return h;
}

int property_get_knob_notes(sd_bus *bus, const char *path, const char *interface, const char *property,
                            sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const Manager *m = bus_manager(userdata);
        int r;

        r = sd_bus_message_open_container(reply, 'a', "(sss)");
        FOREACH_KNOB(k) {
                g_autoptr(GArray) notes = NULL;

                if (r < 0)
                        break;
                if (!m->present[k])
                        continue;
                notes = manager_knob_notes(m, k);
                for (guint i = 0; r >= 0 && i < notes->len; i++) {
                        const KnobNote *n = &g_array_index(notes, KnobNote, i);

                        r = sd_bus_message_append(reply, "(sss)", knob_name(k), n->kind, n->text);
                }
        }
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}

/* A few sentences over the knobs, made from the target, the baseline and what was probed at
 * start, as Ownership's rows are. */
uint64_t property_digest_knob_notes(const BusData *d) {
        uint64_t h = FNV1A_OFFSET;

        FOREACH_KNOB(k) {
                g_autoptr(GArray) notes = NULL;

                if (!d->m->present[k])
                        continue;
                notes = manager_knob_notes(d->m, k);
                for (guint i = 0; i < notes->len; i++) {
                        const KnobNote *n = &g_array_index(notes, KnobNote, i);

                        h = fnv1a_feed_u64(h, (uint64_t) k);
                        h = fnv1a_feed_string(h, n->kind);
                        h = fnv1a_feed_string(h, n->text);
                }
        }
        return h;
}
