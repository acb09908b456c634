/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "unit-state.h"
#include "util.h"

static bool is_up(const char *active_state) {
        return streq_ptr(active_state, "active") || streq_ptr(active_state, "reloading");
}

static bool is_down(const char *active_state) {
        return streq_ptr(active_state, "deactivating") || streq_ptr(active_state, "inactive") ||
               streq_ptr(active_state, "failed");
}

bool unit_sub_state_exited(const char *sub_state) {
        return streq_ptr(sub_state, "exited");
}

/* A service that stays "active" after its main process is gone (RemainAfterExit=yes, e.g.
 * Debian's postgresql.service umbrella that only starts the clusters) runs nothing a policy
 * could be for, unless it left processes behind: "exited" only says the main process ended. */
static bool has_exited(const UnitFacts *u) {
        return unit_sub_state_exited(u->sub_state) && !u->exited_with_processes;
}

bool unit_state_wanted(const UnitFacts *u) {
        if (u->start_job)
                return true;
        if (streq_ptr(u->active_state, "activating") || streq_ptr(u->active_state, "reloading"))
                return true;
        return streq_ptr(u->active_state, "active") && !has_exited(u);
}

bool unit_state_running(const UnitFacts *u) {
        return !u->start_job && is_up(u->active_state) && !has_exited(u);
}

bool unit_state_stopped(const char *before, const char *after) {
        return before && !is_down(before) && is_down(after);
}

bool unit_job_type_is_start(const char *type) {
        return streq_ptr(type, "start") || streq_ptr(type, "restart") || streq_ptr(type, "try-restart") ||
               streq_ptr(type, "reload-or-start") || streq_ptr(type, "verify-active");
}

/* The manager runs a restart job as "restart" until the stop half is done. */
bool unit_job_type_is_restart(const char *type) {
        return streq_ptr(type, "restart") || streq_ptr(type, "try-restart") || streq_ptr(type, "reload-or-restart");
}

/* Not "activating": a oneshot writer is seen at its write while it runs its job, and it has not
 * stopped when it exits: its conflict lasts until a reload. Nor "deactivating": a writer may
 * write once more as it stops, as TuneD does. */
UnitSettled unit_state_settled(const char *active_state) {
        if (is_up(active_state))
                return UNIT_SETTLED_RUNNING;
        if (streq_ptr(active_state, "inactive") || streq_ptr(active_state, "failed"))
                return UNIT_SETTLED_STOPPED;
        return UNIT_SETTLED_NO;
}
