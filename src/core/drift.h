/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "knob.h"

/* Knobs and hugetlb pools written behind thpd's back (TuneD's vm plugin, sysfsutils, an admin's
 * oneshot unit): who likely wrote them, and whether thpd restores its value, adopts the new one
 * as the baseline, or stops fighting a writer that keeps rewriting it. No I/O: the daemon reads
 * them when a unit's job ends or before answering a status call, and hands this what it found.
 * An item is named as the file below /sys/kernel/mm/ that users know: a knob by its name
 * ("enabled", "khugepaged/defrag"), a pool as "hugepages-2048kB/nr_hugepages" (with "nodeN/"
 * in front for one NUMA node); values are text, as the kernel shows them. */

#define DRIFT_DEFAULT_MAX_RESTORES 3U
#define DRIFT_DEFAULT_RESTORE_WINDOW_USEC (10 * 60 * UINT64_C(1000000))
/* A change found this long after a unit's job ended is still credited to that unit. The daemon
 * reads the knobs as soon as the signal comes, so this only bounds a slow event loop; a change
 * found later may have been made by anyone. */
#define DRIFT_ATTRIBUTION_USEC (2 * UINT64_C(1000000))
/* How many drift events "thpd-ctl status" and the RecentDrift property list. */
#define DRIFT_RECENT_MAX 8U

typedef struct DriftSettings {
        unsigned max_restores;         /* restores per writer and knob within the window */
        uint64_t restore_window_usec;
} DriftSettings;

/* A unit's job that ended, as the systemd manager signalled it. */
typedef struct DriftJob {
        const char *unit;
        uint64_t ended_usec; /* CLOCK_MONOTONIC, when the signal came */
} DriftJob;

typedef enum DriftAction {
        DRIFT_ACTION_RESTORE, /* a source holds the knob: thpd writes its value back */
        DRIFT_ACTION_ADOPT,   /* nothing holds it: the baseline follows the writer */
        DRIFT_ACTION_YIELD,   /* the writer keeps rewriting it: thpd no longer restores it */
        _DRIFT_ACTION_MAX,
} DriftAction;

const char *drift_action_to_string(DriftAction a);

typedef struct DriftEvent {
        char *item;
        char *expected;       /* what thpd had applied */
        char *found;
        char *writer;         /* the unit credited with the change; NULL: unknown writer */
        uint64_t job_age_usec;/* with a writer: how long before the change was found its job ended */
        DriftAction action;
        uint64_t when_usec;   /* CLOCK_REALTIME, for people */
} DriftEvent;

/* A writer thpd stopped fighting over an item. */
typedef struct DriftConflict {
        char *item;
        char *writer;         /* NULL: unknown writer */
        char *value;          /* what the writer keeps setting */
        uint64_t since_realtime_usec;
        /* The writer was seen running (activating, active, reloading) since: it can stop. A
         * oneshot that writes and exits never runs, and its conflict lasts until a reload. */
        bool writer_ran;
} DriftConflict;

typedef struct DriftState {
        GHashTable *restores; /* "item\nwriter" -> GArray of CLOCK_MONOTONIC µs of restores */
        GArray *conflicts;    /* DriftConflict, at most one per item */
        GArray *recent;       /* DriftEvent, oldest first, at most DRIFT_RECENT_MAX */
} DriftState;

void drift_state_init(DriftState *s);
void drift_state_done(DriftState *s);
/* A reload: every writer gets a fresh start. */
void drift_reset(DriftState *s);

/* The unit whose job ended just before the change was found, or NULL (unknown writer): no job,
 * or one that ended more than DRIFT_ATTRIBUTION_USEC before. */
const char *drift_attribute(const DriftJob *job, uint64_t found_usec);

/* Whether a pool found at `found` pages, after thpd set `target` and the kernel kept
 * `allocated`, is only finishing that resize: pages still in use when a pool shrinks stay
 * (as surplus) until their users exit, and then the kernel frees them without anyone writing
 * nr_hugepages. Not drift. */
bool drift_pool_settling(uint64_t target, uint64_t allocated, uint64_t found);

/* What to do about an item found at `found` instead of the value thpd applied. held: a policy,
 * override, storm mitigation or a pinned baseline wants the item's value (or thpd moved it from
 * the baseline), so the change is undone, unless this writer (NULL: unknown) already changed it
 * more than max_restores times within the window, or the item is in conflict already. Records
 * the restore (now_usec, CLOCK_MONOTONIC, for the window) or the conflict (now_realtime_usec,
 * for people). */
DriftAction drift_decide(DriftState *s, const DriftSettings *settings, const char *item, bool held,
                         const char *writer, const char *found, uint64_t now_usec, uint64_t now_realtime_usec);

/* Keeps the event (taking its strings) among the recent ones. */
void drift_record(DriftState *s, DriftEvent *event);
void drift_event_clear(DriftEvent *event);

const DriftConflict *drift_conflict(const DriftState *s, const char *item);
/* Knobs in conflict: thpd leaves them at whatever the writer set (pools: drift_conflict()). */
void drift_yielded(const DriftState *s, bool ret[_KNOB_MAX]);
/* Whether a conflict names the unit as its writer. */
bool drift_has_writer(const DriftState *s, const char *unit);
/* What the systemd manager says of a writer in conflict after one of its jobs ended: running, or
 * not. Seen running, then not: it stopped, and its conflicts and restore counts go. Returns
 * whether a conflict went, which the daemon answers with an apply. */
bool drift_writer_state(DriftState *s, const char *unit, bool running);

/* "likely written by tuned.service (its job finished 12 ms before)" or "unknown writer". */
char *drift_describe_writer(const char *writer, uint64_t job_age_usec);
/* "tuned.service keeps setting enabled=never: thpd no longer restores it". */
char *drift_describe_conflict(const DriftConflict *c);
