/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>

#include "config.h"
#include "log.h"
#include "manager-bus-internal.h"
#include "manager-bus-properties.h"
#include "manager-bus.h"
#include "manager-drift.h"
#include "manager-metrics.h"
#include "manager-usage.h"
#include "polkit.h"
#include "util.h"

#define OVERRIDE_MAX_USEC (365 * 24 * 3600 * USEC_PER_SEC)

/* A caller's string for a message: quoted and cut, so a megabyte of junk does not echo back. */
char *bus_quote(const char *s) {
        if (g_utf8_strlen(s, -1) <= QUOTE_MAX)
                return g_strdup_printf("\"%s\"", s);

        g_autofree char *head = g_utf8_substring(s, 0, QUOTE_MAX);
        return g_strdup_printf("\"%s…\"", head);
}

static const Policy *find_policy(const Manager *m, const char *name) {
        for (guint i = 0; i < m->policies->len; i++) {
                const Policy *p = g_ptr_array_index(m->policies, i);

                if (streq(p->name, name))
                        return p;
        }
        return NULL;
}

/* Comma-separated names of the knobs this kernel has, for error messages. */
static char *present_knob_names(const Manager *m) {
        GString *s = g_string_new(NULL);

        FOREACH_KNOB(k)
                if (m->present[k])
                        g_string_append_printf(s, "%s%s", s->len > 0 ? ", " : "", knob_name(k));
        return g_string_free(s, FALSE);
}

/* What announcing needs of each row of MANAGER_PROPERTIES() that emits PropertiesChanged. */
#define TRACKED_ROW(id, name, signature, get, digest) [TRACKED_##id] = { name, digest },
static const struct {
        const char *name;
        uint64_t (*digest)(const BusData *d);
} tracked_properties[_TRACKED_MAX] = {
        MANAGER_PROPERTIES(TRACKED_ROW, PROPERTY_IGNORE)
};
#undef TRACKED_ROW

/* A row that would emit without a digest would never be named in PropertiesChanged. */
#define EMITS_SIGNAL (SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE | SD_BUS_VTABLE_PROPERTY_EMITS_INVALIDATION)
#define PLAIN_IS_SILENT(name, signature, get, flags) \
        _Static_assert(((flags) & EMITS_SIGNAL) == 0, name " emits PropertiesChanged: make it TRACKED, with a digest");
MANAGER_PROPERTIES(PROPERTY_IGNORE, PLAIN_IS_SILENT)
#undef EMITS_SIGNAL
#undef PLAIN_IS_SILENT

static void announce_changed_properties(BusData *d) {
        const char *changed[_TRACKED_MAX + 1];
        size_t n = 0;
        int r;

        for (size_t i = 0; i < _TRACKED_MAX; i++) {
                uint64_t now = tracked_properties[i].digest(d);

                if (d->announced_once && now == d->announced[i])
                        continue;
                d->announced[i] = now;
                changed[n++] = tracked_properties[i].name;
        }
        d->announced_once = true;
        if (n == 0)
                return;
        d->last_announced_usec = now_usec(CLOCK_MONOTONIC);
        changed[n] = NULL;
        r = sd_bus_emit_properties_changed_strv(d->m->bus, THPD_BUS_PATH, THPD_BUS_INTERFACE, (char **) changed);
        if (r < 0)
                log_warning_errno(r, "Cannot send PropertiesChanged: %m");
}

static int on_announce_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        announce_changed_properties(userdata);
        return 0;
}

/* A burst of unit starts changes ActivePolicies at every one, and building it is what costs
 * with hundreds active: within ANNOUNCE_INTERVAL_USEC of the last PropertiesChanged, an
 * apply's waits for the end of that interval and carries everything changed meanwhile. The
 * first change after a quiet spell goes out at once; knob writes and Applied never wait, nor
 * does a storm event (no report; it changes neither counted property), which is rare and whose
 * phase change watchers want as it happens. */
static void emit_changed_properties(BusData *d, const ApplyReport *report) {
        uint64_t due = d->last_announced_usec + ANNOUNCE_INTERVAL_USEC;
        int r;

        if (report) {
                d->active_policies_changes += report->active_policies_changed;
                d->needs_restart_changes += report->needs_restart_changed;
        }
        if (!report || d->last_announced_usec == 0 || now_usec(CLOCK_MONOTONIC) >= due) {
                if (d->announce_timer)
                        (void) sd_event_source_set_enabled(d->announce_timer, SD_EVENT_OFF);
                announce_changed_properties(d);
                return;
        }
        if (!d->announce_timer) {
                r = sd_event_add_time(d->m->event, &d->announce_timer, CLOCK_MONOTONIC, due, 0, on_announce_timer, d);
                if (r < 0) {
                        log_debug_errno(r, "Cannot defer PropertiesChanged, sending it now: %m");
                        announce_changed_properties(d);
                }
                return;
        }
        /* Already armed for this interval: it will carry this change too. */
        if (sd_event_source_get_enabled(d->announce_timer, NULL) > 0)
                return;
        r = sd_event_source_set_time(d->announce_timer, due);
        if (r >= 0)
                r = sd_event_source_set_enabled(d->announce_timer, SD_EVENT_ONESHOT);
        if (r < 0) {
                log_debug_errno(r, "Cannot defer PropertiesChanged, sending it now: %m");
                announce_changed_properties(d);
        }
}

/* ---- authorization ---- */

/* 1: go ahead; 0: pending, the handler must return 1 without replying; < 0: denied (error set). */
static int verify_manage(BusData *d, sd_bus_message *msg, uid_t *ret_uid, sd_bus_error *error) {
        const Manager *m = d->m;
        PolkitPolicy policy = {
                .action = THPD_POLKIT_ACTION,
                /* A --user daemon belongs to the user who started it; polkit only knows callers on
                 * the system bus. */
                .trusted_uid = m->options.user ? geteuid() : (uid_t) -1,
                .polkit_bus = m->options.user ? NULL : m->bus,
        };

        return polkit_verify_async(d->polkit, &policy, msg, ret_uid, error);
}

/* ---- methods ---- */

static int method_list_policies(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const Manager *m = bus_manager(userdata);
        int r;

        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(ssssbasas)");
        for (guint i = 0; r >= 0 && i < m->policy_files->len; i++) {
                const PolicyFile *f = g_ptr_array_index(m->policy_files, i);
                const Policy *p = f->path ? find_policy(m, f->name) : NULL;

                r = sd_bus_message_open_container(reply, 'r', "ssssbasas");
                if (r >= 0)
                        r = sd_bus_message_append(reply, "ssssb", f->name, f->path ?: "", f->masked_by ?: "",
                                                  p && p->description ? p->description : "",
                                                  p && bus_policy_is_active(m, p->name));
                if (r >= 0)
                        r = sd_bus_message_append_strv(reply, p ? p->units : NULL);
                if (r >= 0)
                        r = bus_append_strings(reply, f->shadowed);
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

/* Parses a knob name from a caller; sets error for an unknown or absent knob. */
static int knob_from_caller(const Manager *m, const char *name, Knob *ret, sd_bus_error *error) {
        g_autofree char *q = bus_quote(name);
        Knob k;

        if (knob_from_name(name, &k) < 0) {
                g_autofree char *known = present_knob_names(m);

                return sd_bus_error_setf(error, THPD_ERROR_UNKNOWN_KNOB, "Unknown knob %s; this kernel has: %s.", q, known);
        }
        if (!m->present[k])
                return sd_bus_error_setf(error, THPD_ERROR_NOT_SUPPORTED,
                                         "This kernel has no %s knob (no such file under /sys/kernel/mm/transparent_hugepage/).",
                                         knob_name(k));
        *ret = k;
        return 0;
}

/* The votes on k as the resolver weighed them at the last apply (resolve_votes()). */
static int append_votes(const Manager *m, sd_bus_message *reply, Knob k, const KnobValue baseline[_KNOB_MAX]) {
        const ResolveInput in = {
                .baseline = baseline,
                .active = m->active ? (const ActivePolicy *) m->active->data : NULL,
                .n_active = m->active ? m->active->len : 0,
                .mitigation = m->mitigation,
                .override = m->override,
        };
        g_autoptr(GArray) votes = resolve_votes(&in, &m->target, k);
        int r = 0;

        for (guint i = 0; r >= 0 && i < votes->len; i++) {
                const Vote *v = &g_array_index(votes, Vote, i);
                char buf[24];

                r = sd_bus_message_append(reply, "(sssssb)", knob_name(k), knob_value_to_string(k, v->value, buf),
                                          source_kind_to_string(v->source.kind),
                                          v->source.policy ? v->source.policy->name : "", v->source.unit ?: "",
                                          v->winning);
        }
        return r;
}

static int method_explain(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const Manager *m = bus_manager(userdata);
        KnobValue baseline[_KNOB_MAX];
        const char *name;
        Knob only = _KNOB_INVALID;
        int r;

        r = sd_bus_message_read(msg, "s", &name);
        if (r < 0)
                return r;
        if (name[0] != '\0') {
                r = knob_from_caller(m, name, &only, error);
                if (r < 0)
                        return r;
        }

        manager_effective_baseline(m, baseline);
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(sssssb)");
        FOREACH_KNOB(k) {
                if (r < 0)
                        break;
                if (!m->present[k] || (only != _KNOB_INVALID && k != only))
                        continue;
                r = append_votes(m, reply, k, baseline);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int method_reload(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusData *d = userdata;
        Manager *m = d->m;
        uid_t uid;
        int r;

        r = verify_manage(d, msg, &uid, error);
        if (r <= 0)
                return r < 0 ? r : 1;

        log_info("Reload requested over D-Bus by uid %" PRIu32 " (%s).", (uint32_t) uid, sd_bus_message_get_sender(msg));
        r = manager_reload(m);
        if (r < 0)
                return sd_bus_error_setf(error, THPD_ERROR_FAILED, "Reloading failed: %s", strerror(-r));
        return sd_bus_reply_method_return(msg, NULL);
}

/* Reads SetOverride's arguments; every problem is an error naming the knob or value. */
static int read_override(Manager *m, sd_bus_message *msg, KnobValue values[_KNOB_MAX], uint64_t *ret_duration,
                         sd_bus_error *error) {
        const char *name, *value;
        unsigned n = 0;
        int r;

        FOREACH_KNOB(k)
                values[k] = KNOB_VALUE_UNSET;

        r = sd_bus_message_enter_container(msg, 'a', "{ss}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(msg, "{ss}", &name, &value)) > 0) {
                char accepted[96];
                KnobValue v;
                Knob k;

                r = knob_from_caller(m, name, &k, error);
                if (r < 0)
                        return r;
                if (values[k] != KNOB_VALUE_UNSET)
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "%s is given more than once.", knob_name(k));
                r = knob_value_from_string(k, value, &v);
                if (r < 0) {
                        g_autofree char *q = bus_quote(value);

                        return sd_bus_error_setf(error, THPD_ERROR_INVALID_VALUE, "%s is %s for %s; accepted: %s.", q,
                                                 r == -ERANGE ? "out of range" : "not a value", knob_name(k),
                                                 knob_describe_values(k, accepted));
                }
                values[k] = v;
                n++;
        }
        if (r < 0)
                return r;
        r = sd_bus_message_exit_container(msg);
        if (r < 0)
                return r;
        r = sd_bus_message_read(msg, "t", ret_duration);
        if (r < 0)
                return r;

        if (n == 0)
                return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS,
                                        "SetOverride needs at least one knob value; ClearOverride drops the override.");
        if (*ret_duration > OVERRIDE_MAX_USEC)
                return sd_bus_error_setf(error, THPD_ERROR_INVALID_DURATION,
                                         "An override lasts at most one year (365 days), not %" PRIu64
                                         " s; use 0 for one that lasts until it is cleared.",
                                         *ret_duration / USEC_PER_SEC);
        return 0;
}

static int method_set_override(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusData *d = userdata;
        Manager *m = d->m;
        g_autoptr(GString) summary = g_string_new(NULL);
        g_autoptr(GString) refused = g_string_new(NULL);
        KnobValue values[_KNOB_MAX];
        uint64_t duration;
        uid_t uid;
        int r;

        r = read_override(m, msg, values, &duration, error);
        if (r < 0)
                return r;
        r = verify_manage(d, msg, &uid, error);
        if (r <= 0)
                return r < 0 ? r : 1;

        r = manager_set_override(m, values, duration);
        if (r < 0)
                return sd_bus_error_setf(error, THPD_ERROR_FAILED, "Cannot set the override: %s", strerror(-r));

        FOREACH_KNOB(k) {
                char buf[24], have[24];
                const char *want;

                if (values[k] == KNOB_VALUE_UNSET)
                        continue;
                /* Enum values come back as static strings; buf holds numbers only. */
                want = knob_value_to_string(k, values[k], buf);
                g_string_append_printf(summary, " %s=%s", knob_name(k), want);
                if (m->applied[k] != values[k])
                        g_string_append_printf(refused, "%s%s=%s (it reads %s)", refused->len > 0 ? ", " : "", knob_name(k),
                                               want, bus_knob_value(k, m->applied[k], have));
        }
        if (duration > 0)
                log_info("Override set over D-Bus by uid %" PRIu32 " for %" PRIu64 " s:%s", (uint32_t) uid,
                         duration / USEC_PER_SEC, summary->str);
        else
                log_info("Override set over D-Bus by uid %" PRIu32 " until cleared:%s", (uint32_t) uid, summary->str);

        if (refused->len > 0)
                return sd_bus_error_setf(error, THPD_ERROR_FAILED,
                                         "The kernel did not take %s; the override stays and is tried again at the next change.",
                                         refused->str);
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_clear_override(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusData *d = userdata;
        Manager *m = d->m;
        bool had = false;
        uid_t uid;
        int r;

        r = verify_manage(d, msg, &uid, error);
        if (r <= 0)
                return r < 0 ? r : 1;

        FOREACH_KNOB(k)
                had = had || m->override[k] != KNOB_VALUE_UNSET;
        if (had) {
                log_info("Override cleared over D-Bus by uid %" PRIu32 ".", (uint32_t) uid);
                manager_clear_override(m);
        }
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_get_metrics(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        g_autofree char *text = manager_metrics_render(bus_manager(userdata));

        return sd_bus_reply_method_return(msg, "s", text);
}

#define VTABLE_TRACKED(id, name, signature, get, digest) \
        SD_BUS_PROPERTY(name, signature, get, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
#define VTABLE_PLAIN(name, signature, get, flags) SD_BUS_PROPERTY(name, signature, get, 0, flags),
const sd_bus_vtable bus_manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        MANAGER_PROPERTIES(VTABLE_TRACKED, VTABLE_PLAIN)

        /* Every method is UNPRIVILEGED for sd-bus, whose own check would demand CAP_SYS_ADMIN
         * with a blocking credentials query: the privileged ones are checked by verify_manage(). */
        SD_BUS_METHOD_WITH_ARGS("ListPolicies", SD_BUS_NO_ARGS, SD_BUS_RESULT("a(ssssbasas)", policies),
                                method_list_policies, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Explain", SD_BUS_ARGS("s", knob), SD_BUS_RESULT("a(sssssb)", votes), method_explain,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Reload", SD_BUS_NO_ARGS, SD_BUS_NO_RESULT, method_reload, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("SetOverride", SD_BUS_ARGS("a{ss}", values, "t", duration_usec), SD_BUS_NO_RESULT,
                                method_set_override, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ClearOverride", SD_BUS_NO_ARGS, SD_BUS_NO_RESULT, method_clear_override,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Await", SD_BUS_ARGS("s", unit), SD_BUS_RESULT("b", has_policy, "s", policy),
                                method_await, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetMetrics", SD_BUS_NO_ARGS, SD_BUS_RESULT("s", text), method_get_metrics,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetUnitUsage", SD_BUS_NO_ARGS, SD_BUS_RESULT("a(sstts)", usage), method_get_unit_usage,
                                SD_BUS_VTABLE_UNPRIVILEGED),

        SD_BUS_SIGNAL_WITH_ARGS("Applied", SD_BUS_ARGS("a(ssss)", changes), 0),
        SD_BUS_SIGNAL_WITH_ARGS("StormDetected", SD_BUS_ARGS("s", kind, "a{sd}", figures), 0),
        SD_BUS_SIGNAL_WITH_ARGS("StormCleared", SD_BUS_ARGS("s", kind, "t", duration_usec), 0),
        SD_BUS_SIGNAL_WITH_ARGS("Drift", SD_BUS_ARGS("a(ssssss)", changes), 0),
        SD_BUS_VTABLE_END
};
#undef VTABLE_TRACKED
#undef VTABLE_PLAIN

/* Runs before sd-bus's own exit handler, which flushes and closes the connection. */
static int on_event_loop_exit(sd_event_source *s, void *userdata) {
        BusData *d = userdata;

        bus_fail_awaiters(d);
        manager_usage_fail_pending(d);
        return 0;
}

/* Synchronous on purpose: a second thpd must learn that it is one before it writes anything,
 * or two daemons would fight over the same knobs. */
static int request_name(Manager *m) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        pid_t pid = 0;
        int r;

        r = sd_bus_request_name(m->bus, THPD_BUS_NAME, 0);
        if (r == -EEXIST) {
                if (sd_bus_get_name_creds(m->bus, THPD_BUS_NAME, SD_BUS_CREDS_PID, &creds) >= 0)
                        (void) sd_bus_creds_get_pid(creds, &pid);
                if (pid > 0)
                        log_error("Another thpd (PID %d) owns %s on this bus; exiting without touching any knob.",
                                  (int) pid, THPD_BUS_NAME);
                else
                        log_error("Another process owns %s on this bus; exiting without touching any knob.",
                                  THPD_BUS_NAME);
                return r;
        }
        if (r < 0)
                return log_error_errno(r, "Cannot own the bus name %s: %m", THPD_BUS_NAME);
        log_debug("Owning %s.", THPD_BUS_NAME);
        return 0;
}

/* A status read (GetAll of our interface, as thpd-ctl status, show and the Cockpit page do) or
 * an Explain call: the answer must show the values in force, so the knobs are read first. A
 * change a watch missed is reported and its restore queued, never written by the read. This
 * runs before sd-bus dispatches the call, and costs nothing while nobody asks. */
static int on_incoming(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        const char *interface = NULL;

        if (!sd_bus_message_is_method_call(msg, NULL, NULL) || !streq_ptr(sd_bus_message_get_path(msg), THPD_BUS_PATH))
                return 0;
        if (sd_bus_message_is_method_call(msg, THPD_BUS_INTERFACE, "Explain"))
                manager_drift_look(m);
        else if (sd_bus_message_is_method_call(msg, "org.freedesktop.DBus.Properties", "GetAll")) {
                if (sd_bus_message_read(msg, "s", &interface) >= 0 && streq(interface, THPD_BUS_INTERFACE))
                        manager_drift_look(m);
                (void) sd_bus_message_rewind(msg, true);
        }
        return 0;
}

static int on_connected(Manager *m, void *userdata) {
        BusData *d = userdata;
        int r;

        r = sd_event_add_exit(m->event, &d->exit_source, on_event_loop_exit, d);
        if (r >= 0)
                r = sd_event_source_set_priority(d->exit_source, SD_EVENT_PRIORITY_IMPORTANT);
        if (r < 0)
                return log_error_errno(r, "Cannot watch for the daemon's exit: %m");

        r = sd_bus_add_object_vtable(m->bus, &d->vtable_slot, THPD_BUS_PATH, THPD_BUS_INTERFACE, bus_manager_vtable, d);
        if (r < 0)
                return log_error_errno(r, "Cannot register %s: %m", THPD_BUS_PATH);
        r = sd_bus_add_filter(m->bus, &d->status_filter_slot, on_incoming, m);
        if (r < 0)
                return log_error_errno(r, "Cannot watch for status calls: %m");
        return request_name(m);
}

static void on_free(Manager *m, void *userdata) {
        BusData *d = userdata;

        bus_fail_awaiters(d);
        manager_usage_release(d);
        g_ptr_array_unref(d->awaiters);
        sd_event_source_disable_unref(d->exit_source);
        sd_event_source_disable_unref(d->announce_timer);
        sd_event_source_disable_unref(d->await_timer);
        polkit_registry_free(d->polkit);
        sd_bus_slot_unref(d->vtable_slot);
        sd_bus_slot_unref(d->status_filter_slot);
        g_free(d);
}

/* Not before the object is on the bus: a daemon that failed to start has nothing to publish. */
static bool bus_registered(const BusData *d) {
        return d->vtable_slot;
}

static void emit_applied(Manager *m, const KnobChange *changes, size_t n_changes) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *signal = NULL;
        int r;

        r = sd_bus_message_new_signal(m->bus, &signal, THPD_BUS_PATH, THPD_BUS_INTERFACE, "Applied");
        if (r >= 0)
                r = sd_bus_message_open_container(signal, 'a', "(ssss)");
        for (size_t i = 0; r >= 0 && i < n_changes; i++) {
                const KnobChange *c = &changes[i];
                char old_value[24], new_value[24];

                r = sd_bus_message_append(signal, "(ssss)", knob_name(c->knob),
                                          bus_knob_value(c->knob, c->old_value, old_value),
                                          bus_knob_value(c->knob, c->new_value, new_value), c->reason ?: "");
        }
        if (r >= 0)
                r = sd_bus_message_close_container(signal);
        if (r >= 0)
                r = sd_bus_send(m->bus, signal, NULL);
        if (r < 0)
                log_warning_errno(r, "Cannot send the Applied signal: %m");
}

static void on_applied(Manager *m, const ApplyReport *report, void *userdata) {
        BusData *d = userdata;

        if (!bus_registered(d))
                return;
        if (report->n_changes > 0)
                emit_applied(m, report->changes, report->n_changes);
        emit_changed_properties(d, report);
        bus_answer_awaiters(d);
}

static void on_storm_event(Manager *m, StormEvent event, StormKind kind, const StormFigures *figures,
                           void *userdata) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *signal = NULL;
        BusData *d = userdata;
        int r = 0;

        if (!bus_registered(d))
                return;

        if (event == STORM_EVENT_DETECTED) {
                r = sd_bus_message_new_signal(m->bus, &signal, THPD_BUS_PATH, THPD_BUS_INTERFACE, "StormDetected");
                if (r >= 0)
                        r = sd_bus_message_append(signal, "s", storm_kind_to_string(kind));
                if (r >= 0)
                        r = bus_append_storm_figures(signal, kind, figures);
        } else if (event == STORM_EVENT_CLEARED) {
                const StormKindState *ks = m->storm ? &storm_watcher_get_state(m->storm)->kinds[kind] : NULL;
                uint64_t duration = ks ? storm_kind_state_duration_usec(ks) : 0;

                r = sd_bus_message_new_signal(m->bus, &signal, THPD_BUS_PATH, THPD_BUS_INTERFACE, "StormCleared");
                if (r >= 0)
                        r = sd_bus_message_append(signal, "st", storm_kind_to_string(kind), duration);
        }
        if (r >= 0 && signal)
                r = sd_bus_send(m->bus, signal, NULL);
        if (r < 0)
                log_warning_errno(r, "Cannot send the storm signal: %m");

        emit_changed_properties(d, NULL);
}

static void on_drift(Manager *m, const DriftEvent *events, size_t n_events, void *userdata) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *signal = NULL;
        BusData *d = userdata;
        int r;

        if (!bus_registered(d))
                return;
        /* A conflict that ended, or a writer named afterwards: only the properties changed. */
        if (n_events == 0) {
                emit_changed_properties(d, NULL);
                return;
        }
        r = sd_bus_message_new_signal(m->bus, &signal, THPD_BUS_PATH, THPD_BUS_INTERFACE, "Drift");
        if (r >= 0)
                r = sd_bus_message_open_container(signal, 'a', "(ssssss)");
        for (size_t i = 0; r >= 0 && i < n_events; i++) {
                const DriftEvent *e = &events[i];
                g_autofree char *who = drift_describe_writer(e);

                r = sd_bus_message_append(signal, "(ssssss)", e->item, e->expected, e->found, e->writer ?: "",
                                          drift_action_to_string(e->action), who);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(signal);
        if (r >= 0)
                r = sd_bus_send(m->bus, signal, NULL);
        if (r < 0)
                log_warning_errno(r, "Cannot send the Drift signal: %m");
}

static const ManagerListener bus_listener = {
        .drift = on_drift,
        .connected = on_connected,
        .applied = on_applied,
        .storm_event = on_storm_event,
        .free = on_free,
};

void manager_bus_attach(Manager *m) {
        BusData *d = g_new0(BusData, 1);

        d->m = m;
        d->polkit = polkit_registry_new();
        d->awaiters = g_ptr_array_new_with_free_func(bus_awaiter_free);
        manager_add_listener(m, &bus_listener, d);
}
