/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "manager-status.h"
#include "util.h"

/* The one line systemctl status shows (STATUS=), and READY=1 once the units are listed. */

static void update_status(Manager *m) {
        g_autoptr(GString) s = g_string_new(NULL);
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

        if (!streq_ptr(m->status, s->str)) {
                g_free(m->status);
                m->status = g_strdup(s->str);
                g_string_prepend(s, "STATUS=");
                (void) service_notify(m->notifier, s->str);
        }
}

static void on_applied(Manager *m, const ApplyReport *report, void *userdata) {
        update_status(m);
        if (!m->ready_sent && m->units && unit_tracker_is_ready(m->units)) {
                (void) service_notify(m->notifier, "READY=1");
                m->ready_sent = true;
        }
}

static void on_storm_event(Manager *m, StormEvent event, StormKind kind, const StormFigures *figures,
                           void *userdata) {
        update_status(m);
}

const ManagerListener manager_status_listener = {
        .applied = on_applied,
        .storm_event = on_storm_event,
};
