/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "knob.h"

/* Knobs and hugetlb pools written behind thpd's back (TuneD's vm plugin, sysfsutils, an admin's
 * oneshot unit or shell): who likely wrote them, and whether thpd restores its value, adopts the
 * new one as the baseline, or stops fighting a writer that keeps rewriting it. No I/O: the daemon
 * sees the write (inotify), or finds the change when a unit's job ends or a status call reads,
 * and hands this what it found.
 * An item is named as the file below /sys/kernel/mm/ that users know: a knob by its name
 * ("enabled", "khugepaged/defrag"), a pool as "hugepages-2048kB/nr_hugepages" (with "nodeN/"
 * in front for one NUMA node); values are text, as the kernel shows them. */

#define DRIFT_DEFAULT_MAX_RESTORES 3U
#define DRIFT_DEFAULT_RESTORE_WINDOW_USEC (10 * 60 * UINT64_C(1000000))
/* A change found this long after a unit's job ended is still credited to that unit. The daemon
 * reads the knobs as soon as the signal comes, so this only bounds a slow event loop; a change
 * found later may have been made by anyone. */
#define DRIFT_ATTRIBUTION_USEC (2 * UINT64_C(1000000))
/* A writer that announces its change once it is done (TuneD's profile_changed comes after the
 * whole profile is applied, which takes seconds with some plugins) is credited with the changes
 * nobody could be named for this long before the announcement. */
#define DRIFT_ANNOUNCE_USEC (10 * UINT64_C(1000000))
/* How many drift events "thpd-ctl status" and the RecentDrift property list. */
#define DRIFT_RECENT_MAX 8U

typedef struct DriftSettings {
        unsigned max_restores;         /* restores per writer and knob within the window */
        uint64_t restore_window_usec;
} DriftSettings;

/* A unit's job, as the systemd manager signalled it. */
typedef struct DriftJob {
        const char *unit;
        uint64_t usec; /* CLOCK_MONOTONIC, when JobNew (running) or JobRemoved (ended) came */
} DriftJob;

/* What the daemon knew when it found an item changed. */
typedef struct DriftCause {
        const DriftJob *running; /* the job started last of those still running, or NULL */
        const DriftJob *ended;   /* the job that ended last, or NULL */
        uint64_t write_usec;     /* CLOCK_MONOTONIC, when the write was seen; 0: only found later */
        bool process_known;      /* fanotify named the writing process */
        const char *process_unit;/* ... and the unit it runs in, or NULL */
        bool process_outside_units;/* ... its cgroup read: it runs in no unit (a shell outside logind) */
} DriftCause;

/* How a writer was named, best first. */
typedef enum DriftCredit {
        DRIFT_CREDIT_NONE,        /* unknown writer */
        DRIFT_CREDIT_ANNOUNCED,   /* the writer said so itself (TuneD's profile_changed) */
        DRIFT_CREDIT_JOB_RUNNING, /* a unit whose job was running when the write came */
        DRIFT_CREDIT_JOB_ENDED,   /* a unit whose job ended just before the change was found */
        DRIFT_CREDIT_PROCESS,     /* the writing process, from fanotify (needs CAP_SYS_ADMIN) */
        DRIFT_CREDIT_WHILE_DOWN,  /* found at start: written while thpd was not running (ownership.h) */
        _DRIFT_CREDIT_MAX,
} DriftCredit;

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
        char *writer_detail;  /* what the writer said of it ("profile hpc-compute"), or NULL */
        DriftCredit credit;
        uint64_t job_age_usec;/* DRIFT_CREDIT_JOB_ENDED: how long before the change was found its job ended */
        DriftAction action;
        uint64_t when_usec;   /* CLOCK_REALTIME, when found, for people */
        uint64_t written_usec;/* CLOCK_REALTIME, when the write was seen; 0: only found later */
        uint64_t wrong_usec;  /* restored: from the write seen (or found) to the restore */
} DriftEvent;

/* A writer thpd stopped fighting over an item. */
typedef struct DriftConflict {
        char *item;
        char *writer;         /* NULL: unknown writer */
        char *writer_detail;  /* what the writer said of it ("profile hpc-compute"), or NULL */
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

/* The unit to credit with a change found at found_usec (CLOCK_MONOTONIC), or NULL (unknown
 * writer). The writing process, where fanotify named it with its unit or found it outside any,
 * is a fact and goes first; one whose cgroup could not be read (already exited) comes after the
 * jobs. A job still
 * running when the change is found wrote it likely; a job that ended
 * after the write was seen was running when it came. A change only found later (at a job end
 * or a status call) goes to a job that ended at most DRIFT_ATTRIBUTION_USEC before. Sets
 * *ret_credit, and *ret_job_age_usec for a job that ended. */
const char *drift_attribute(const DriftCause *cause, uint64_t found_usec, DriftCredit *ret_credit,
                            uint64_t *ret_job_age_usec);

/* A writer announced a change it made (TuneD: "tuned.service", "profile hpc-compute"): the
 * recent events found since since_realtime_usec that name nobody are its, and so is a conflict
 * with the unknown writer on their items (which then ends when that writer stops); a conflict
 * already its takes the new detail. Restores
 * stay counted for the unknown writer, as they were decided: a writer that keeps switching
 * meets MaxRestores= there. Returns the items it credited (for the daemon's counts), oldest
 * first. */
GPtrArray *drift_credit_announced(DriftState *s, const char *writer, const char *detail,
                                  uint64_t since_realtime_usec);

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
void drift_event_done(DriftEvent *event);

const DriftConflict *drift_conflict(const DriftState *s, const char *item);
/* A conflict the last instance recorded (ownership-record.h), taken up again at start: it ends
 * as any other, when its writer is seen to stop (drift_writer_state()) or at a reload. */
void drift_restore_conflict(DriftState *s, const char *item, const char *writer, const char *writer_detail,
                            const char *value, uint64_t since_realtime_usec);
/* Whether a conflict names the unit as its writer. */
bool drift_has_writer(const DriftState *s, const char *unit);
/* What the systemd manager says of a writer in conflict, asked after one of its jobs ended or
 * told as its state changed: running, or not, and whether its last run reached active. Seen running, then not: it stopped, and its
 * conflicts and restore counts go. Not running, but its last run reached active: it ran and
 * stopped before the answer to an earlier look came, the same. A oneshot that writes and exits
 * never reaches active. Returns whether a conflict went, which the daemon answers with an
 * apply. */
bool drift_writer_state(DriftState *s, const char *unit, bool running, bool reached_active);

/* How a writing process is named: "root in session 4: bash, pid 1234" for a login session's
 * scope, "tuned.service (tuned, pid 812)" for any other unit, "bash, pid 1234" without one. */
char *drift_describe_process(const char *unit, const char *user, const char *comm, int pid);

/* "written by tuned.service (profile hpc-compute)", "likely written by backup.service (its job
 * was running)", "likely written by tuned.service (its job finished 12 ms before)", "written
 * while thpd was not running" or "unknown writer". */
char *drift_describe_writer(const DriftEvent *e);
/* The writer of a conflict as people read it: "tuned.service (profile hpc-compute)",
 * "tuned.service"; NULL for an unknown writer. */
char *drift_describe_conflict_writer(const DriftConflict *c);
/* "tuned.service keeps setting enabled=never: thpd no longer restores it". */
char *drift_describe_conflict(const DriftConflict *c);
