/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "manager-status.h"
#include "util.h"

/* The one line systemctl status shows (STATUS=), and READY=1 once the units are listed. */

char *manager_status_text(const Manager *m) {
        GString *s = g_string_new(NULL);
        unsigned n_active = m->plan.n_active;
        char buf[24], buf2[24];

        g_string_append_printf(s, "enabled=%s defrag=%s; %u active polic%s",
                               knob_value_to_string(KNOB_ENABLED, m->applied[KNOB_ENABLED], buf),
                               knob_value_to_string(KNOB_DEFRAG, m->applied[KNOB_DEFRAG], buf2),
                               n_active, n_active == 1 ? "y" : "ies");
        if (m->units && !unit_tracker_is_ready(m->units))
                g_string_append(s, "; waiting for the systemd manager");
        if (manager_storm_phase(m) == STORM_PHASE_STORM)
                g_string_append(s, "; compaction/khugepaged storm");
        if (g_hash_table_size(m->plan.needs_restart) > 0)
                g_string_append_printf(s, "; %u unit(s) need a restart", g_hash_table_size(m->plan.needs_restart));
        if (m->drift.conflicts->len > 0)
                g_string_append_printf(s, "; %u knob(s) left to a writer that keeps rewriting them",
                                       m->drift.conflicts->len);
        return g_string_free(s, FALSE);
}

/* The listener's own state: what it last told the service manager. */
typedef struct ServiceStatus {
        char *sent;     /* the last STATUS= text */
        bool ready_sent;
} ServiceStatus;

static void update_status(Manager *m, ServiceStatus *st) {
        g_autofree char *text = manager_status_text(m);
        g_autofree char *line = NULL;

        if (streq_ptr(st->sent, text))
                return;
        line = g_strconcat("STATUS=", text, NULL);
        (void) service_notify(m->notifier, line);
        g_free(st->sent);
        st->sent = TAKE_PTR(text);
}

static void on_applied(Manager *m, const ApplyReport *report, void *userdata) {
        ServiceStatus *st = userdata;

        update_status(m, st);
        if (!st->ready_sent && m->units && unit_tracker_is_ready(m->units)) {
                (void) service_notify(m->notifier, "READY=1");
                st->ready_sent = true;
        }
}

static void on_storm_event(Manager *m, StormEvent event, StormKind kind, const StormFigures *figures,
                           void *userdata) {
        update_status(m, userdata);
}

/* The line counts the drift conflicts, which change without an apply when one ends; the Status
 * property reads the same text at once. */
static void on_drift(Manager *m, const DriftEvent *events, size_t n_events, void *userdata) {
        update_status(m, userdata);
}

static void on_free(Manager *m, void *userdata) {
        ServiceStatus *st = userdata;

        g_free(st->sent);
        g_free(st);
}

static const ManagerListener status_listener = {
        .applied = on_applied,
        .storm_event = on_storm_event,
        .drift = on_drift,
        .free = on_free,
};

void manager_status_attach(Manager *m) {
        manager_add_listener(m, &status_listener, g_new0(ServiceStatus, 1));
}
