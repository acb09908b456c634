/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

/* Follows the systemd manager on a bus: which units that matter to us (the filter says which)
 * have a start job queued or are activating/active/reloading. The tracker only observes; the
 * manager decides what a change means. */

typedef struct UnitTracker UnitTracker;

/* What an apply reads of a unit. */
typedef struct UnitView {
        bool wanted;
        bool running;
        unsigned stops;
} UnitView;

typedef struct TrackedUnit {
        char *name;
        char *path;           /* D-Bus object path, NULL until known */
        char *active_state;   /* NULL until known */
        char *sub_state;      /* NULL until known */
        uint32_t start_job;   /* id of a queued start/restart job, 0 if none */
        /* "exited" with processes left in its control group (asked with GetUnitProcesses when
         * it exited; a group that empties later is not followed). */
        bool exited_with_processes;
        /* How often it stopped while followed: a unit that restarts between two applies is
         * told from one that ran on, although both look the same at the second. */
        unsigned stops;
        /* What the last notification told of it: most of a start's signals change none of it. */
        bool notified;
        UnitView notified_view;
} TrackedUnit;

typedef bool (*UnitFilter)(const char *unit, void *userdata);
/* Called when a tracked unit changed whether it is wanted or running or how often it stopped,
 * with the unit's name and its view as last told (NULL: never told) and now; and after
 * (re-)enumeration with unit NULL: then everything may have changed. start_queued when a unit
 * got a start job, which a caller acts on at once: the signals of a whole start often arrive
 * together, and the knobs must be set before the service runs. */
typedef void (*UnitsChanged)(UnitTracker *t, const char *unit, const UnitView *before, const UnitView *now,
                             bool start_queued, void *userdata);

/* Called when a job of any unit ends, tracked or not, as the signal comes: whatever the job
 * did is done by then (a oneshot ran, a service started), which is when thpd looks for knobs
 * written behind its back. */
typedef void (*UnitJobEnded)(UnitTracker *t, const char *unit, uint32_t id, void *userdata);
/* Called when a job of any unit is queued, tracked or not: until it ends, what the unit runs may
 * write a knob, and thpd names it when one is written. */
typedef void (*UnitJobNew)(UnitTracker *t, const char *unit, uint32_t id, void *userdata);
/* A unit's ActiveState as the systemd manager answered ("active", "inactive", ...), and whether
 * its last run reached "active" (it entered active after it last left inactive); NULL and false
 * with r < 0 when it could not be read. */
typedef void (*UnitActiveState)(const char *unit, int r, const char *active_state, bool reached_active, void *userdata);
/* Which units' state changes are reported as they come, tracked or not. */
typedef bool (*UnitRunWatched)(const char *unit, void *userdata);

int unit_tracker_new(sd_bus *bus, sd_event *event, UnitFilter filter, UnitsChanged changed,
                     void *userdata, UnitTracker **ret);
UnitTracker *unit_tracker_free(UnitTracker *t);
void unit_tracker_set_job_ended(UnitTracker *t, UnitJobEnded job_ended);
void unit_tracker_set_job_new(UnitTracker *t, UnitJobNew job_new);
/* Every PropertiesChanged of a unit that watched picks is told to changed, with the facts a
 * query gives. Signals keep their order, so a run that began and ended before a query was answered is
 * still seen, which a query of a unit the manager has since unloaded cannot tell. */
void unit_tracker_set_run_watch(UnitTracker *t, UnitRunWatched watched, UnitActiveState changed);

/* Asks the systemd manager for a unit's ActiveState and timestamps, of any unit, tracked or not; answers
 * through callback, once (a unit it no longer has is "inactive"). */
int unit_tracker_query_active_state(UnitTracker *t, const char *unit, UnitActiveState callback, void *userdata);

/* Subscribes and enumerates asynchronously; when the manager does not answer it keeps
 * retrying on a timer. */
int unit_tracker_start(UnitTracker *t);

/* Re-enumerates, e.g. after the filter changed because policies were reloaded. */
int unit_tracker_rescan(UnitTracker *t);

/* True once a systemd manager answered and the first enumeration finished. */
bool unit_tracker_is_ready(const UnitTracker *t);
/* > 0 when the unit of pid has a restart job queued (thpd asks about itself on SIGTERM), 0 when
 * not, negative errno when the manager cannot tell. Synchronous, with a short timeout. */
int unit_tracker_restart_queued_for_pid(UnitTracker *t, pid_t pid);

/* True once the units were listed or no manager answered; stays true. */
bool unit_tracker_has_answered(const UnitTracker *t);

/* name -> TrackedUnit* */
GHashTable *unit_tracker_units(const UnitTracker *t);

/* unit_state_wanted() and unit_state_running() (core/unit-state.h) of what the tracker holds. */
bool tracked_unit_is_wanted(const TrackedUnit *u);
bool tracked_unit_is_running(const TrackedUnit *u);
