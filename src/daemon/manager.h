/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <glib.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "baseline.h"
#include "candidates.h"
#include "cmdline.h"
#include "drift.h"
#include "isolation.h"
#include "metrics.h"
#include "ownership.h"
#include "plan.h"
#include "policy-dirs.h"
#include "policy.h"
#include "resolve.h"
#include "service-notify.h"
#include "settings.h"
#include "storm.h"
#include "sysfs.h"
#include "units.h"

/* The daemon's state: the policies, the units that activate them, what the kernel reports, and
 * the one function (manager_apply) that turns them into sysfs writes: observe, plan (plan.h),
 * actuate, persist, and publish to the listeners (the bus, the metrics file, the service
 * status, the isolation checks), which the daemon attaches (daemon-listeners.h). */

typedef struct ManagerOptions {
        const char *sysfs_root;
        const char *procfs_root;
        const char *cgroupfs_root; /* where the cgroup hierarchies are mounted, for GetUnitUsage */
        const char *runtime_dir;
        char **policy_dirs;     /* highest precedence first; NULL: the default search path */
        const char *config_path;/* NULL: thpd.conf and thpd.conf.d/ */
        bool user;              /* session bus and the user's systemd manager */
        bool no_restore;
} ManagerOptions;

typedef struct PoolStatus {
        uint64_t page_size_kb;
        int node;
        uint64_t target;
        uint64_t allocated;
        uint64_t free;
        char *shortfall;           /* NULL, or what went wrong */
} PoolStatus;

typedef struct KnobChange {
        Knob knob;
        KnobValue old_value;
        KnobValue new_value;
        char *reason;
} KnobChange;

typedef struct DriftWatch DriftWatch;

typedef struct Manager {
        sd_event *event;
        sd_bus *bus;
        ManagerOptions options;
        char *sysfs_root, *procfs_root, *cgroupfs_root, *runtime_dir, *config_path;
        char **policy_dirs;

        Settings settings;
        GPtrArray *policies;           /* Policy*, lexical order */
        /* Which policies and units an apply looks at, and the policy index (candidates.h). */
        CandidateState candidates;
        GPtrArray *policy_files;       /* PolicyFile*, the drop-in view (for ListPolicies) */
        Diagnostics policy_diagnostics; /* what the last policy load found wrong (PolicyDiagnostics) */
        PlanState plan;                /* what the plan carries from one apply to the next */
        UnitTracker *units;

        bool present[_KNOB_MAX];       /* knobs this kernel has */
        SysfsThpFeatures features;     /* and what else its THP has */
        CmdlineThp cmdline;            /* the THP boot parameters, read once at start */
        KnobFiles knob_files;          /* the present knobs' files, kept open */
        PoolFiles pool_files;          /* the pools' counter files, kept open */
        Baseline baseline;             /* what "no vote" means: the recorded kernel values + thpd.conf */
        Ownership own;                 /* whose value each knob and pool holds (ownership.h) */
        /* The ownership record in the runtime directory (manager-ownership.c): each item's
         * line as it says it (item -> line), the lines not yet appended, whether this instance
         * wrote its snapshot, how long that was and how much was appended since. */
        GHashTable *own_recorded;
        GHashTable *own_wanted;        /* items with a "want" line not followed by their state yet */
        GString *own_journal;
        bool own_record_written;
        size_t own_record_size, own_record_appended;
        /* Items found at start written while thpd was not running: item -> the value thpd
         * expected (its own, or the baseline), until the first apply that judges them. */
        GHashTable *while_down;
        KnobValue applied[_KNOB_MAX];  /* what the kernel reported after the last apply */
        KnobValue override[_KNOB_MAX];
        uint64_t override_expires_realtime; /* 0: until cleared */
        KnobValue mitigation[_KNOB_MAX];
        Target target;
        /* ActivePolicy: what the last apply's resolve() weighed into target, for Explain. Like
         * target it points into the policies and the plan's state until the next apply. */
        GArray *active;
        GArray *pools;                 /* PoolStatus */
        GHashTable *isolation;         /* unit -> Isolation*: running units of Scope=service policies */
        struct BlanketWatch *blanket;  /* the services the blanket reaches (manager-blanket.c) */

        sd_event_source *sigterm, *sigint, *sighup;
        sd_event_source *grace_timer, *override_timer;
        sd_event_source *apply_event;  /* coalesces a burst of unit signals into one apply */
        sd_event_source *trim_timer;   /* hands freed heap back to the kernel after a burst */
        /* SIGTERM came from a restart job: the next instance takes over the knobs as they are. */
        bool handing_over;
        bool applied_once;
        unsigned apply_generation;
        ServiceNotifier *notifier;     /* READY=1, STATUS= to the service manager */
        /* The unit record in the runtime directory: whether this instance wrote its snapshot
         * (then changes are appended), how long that was and how much has been appended since. */
        bool unit_record_written;
        size_t unit_record_size, unit_record_appended;

        DriftState drift;              /* knobs written behind thpd's back (manager-drift.c) */
        DriftWatch *drift_watch;       /* watches, job signals, TuneD (manager-drift.c) */
        GHashTable *drift_counts;      /* "knob\nwriter" -> times found changed, for the metrics */

        struct StormWatcher *storm;    /* NULL until the storm watcher runs */
        unsigned mitigation_level;     /* as last reported by the storm watcher */

        uint64_t start_time_usec;      /* CLOCK_REALTIME */
        MetricsCounters counters;
        unsigned last_apply_errors;    /* knobs and pools the last apply could not read or set */

        /* Names of the Scope=auto policies the last apply met per service (resolve_per_service()). */
        GHashTable *per_service;

        GArray *listeners;             /* ManagerListenerEntry */
} Manager;

/* What an apply did, for the listeners to publish. */
typedef struct ApplyReport {
        const KnobChange *changes;
        size_t n_changes;
        const IsolationRequest *isolation_checks; /* units whose processes nobody checked yet */
        size_t n_isolation_checks;
        GHashTable *wanted;                       /* unit names wanted now; NULL before the unit list */
        /* Whether ActivePolicies and NeedsRestart changed: with many units running, building
         * them to compare costs more than the rest of an apply. */
        bool active_policies_changed;
        bool needs_restart_changed;
} ApplyReport;

/* Those who publish the manager's state. Every member may be NULL. Called in the order added. */
typedef struct ManagerListener {
        /* Once connected to the bus, before anything is recorded or written: a second instance
         * must fail here. */
        int (*connected)(Manager *m, void *userdata);
        void (*applied)(Manager *m, const ApplyReport *report, void *userdata);
        /* After the manager acted on the storm watcher's event. */
        void (*storm_event)(Manager *m, StormEvent event, StormKind kind, const StormFigures *figures,
                            void *userdata);
        /* Knobs were found changed behind thpd's back, before the apply that acts on them; also
         * with n_events == 0 when a conflict ended. */
        void (*drift)(Manager *m, const DriftEvent *events, size_t n_events, void *userdata);
        /* The daemon stops; m->handing_over says whether a next instance takes over. */
        void (*stopping)(Manager *m, void *userdata);
        /* From manager_free(), before the bus connection closes. */
        void (*free)(Manager *m, void *userdata);
} ManagerListener;

typedef struct ManagerListenerEntry {
        const ManagerListener *listener;
        void *userdata;
} ManagerListenerEntry;

/* Adds a listener; userdata is its own state, handed to each of its callbacks and released by
 * its free callback. */
/* Runs handler (with m) once, at priority, after the events already pending: *source is made
 * on first use and then re-armed. On failure the caller does the work at once (a source that
 * could not be made is left NULL). */
int manager_defer_once(Manager *m, sd_event_source **source, int64_t priority, sd_event_handler_t handler);
void manager_add_listener(Manager *m, const ManagerListener *listener, void *userdata);

/* The one way to reach the listeners, in the order they were added. */
#define MANAGER_FOREACH_LISTENER(m, e)                                                                  \
        for (const ManagerListenerEntry *e = (const ManagerListenerEntry *) (m)->listeners->data;       \
             e < (const ManagerListenerEntry *) (m)->listeners->data + (m)->listeners->len; e++)

int manager_new(sd_event *event, const ManagerOptions *options, Manager **ret);
Manager *manager_free(Manager *m);

/* Loads settings and policies, records or reuses the baseline, connects to the bus. */
int manager_start(Manager *m);

/* Re-reads policies and thpd.conf (SIGHUP, Reload()). */
int manager_reload(Manager *m);

/* Resolves and writes what differs. Safe to call any time; cheap when nothing changed. */
void manager_apply(Manager *m);
/* Applies once the bus messages already received are handled: a unit start brings several
 * signals at once, and one apply after them is enough. */
void manager_queue_apply(Manager *m);

/* After the event loop: restores the baseline (or leaves the knobs to the instance a restart
 * hands over to) and removes the records. Returns the exit code, exit_code or 1 when some knob
 * could not be restored. */
int manager_stop(Manager *m, int exit_code);

/* True once the systemd manager listed the units (or turned out absent). */
bool manager_units_known(const Manager *m);
/* Reads a knob's value through its kept file (KnobFiles). */
int manager_read_knob(Manager *m, Knob k, KnobValue *ret);
/* Whether the Knobs property and the metrics show a target and source for the knob. */
bool manager_knob_resolved(const Manager *m, Knob k);
/* The policies active or holding a pool after a stop (borrowed Policy*), in policy order: with
 * thousands of policies loaded, what the properties list. */
GPtrArray *manager_live_policies(const Manager *m);
/* The most severe phase over the storm kinds; calm without a watcher. */
StormPhase manager_storm_phase(const Manager *m);

/* Policies whose Units= match the unit (borrowed Policy*). */
GPtrArray *manager_policies_for_unit(const Manager *m, const char *unit);
/* Where the service manager runs its generators' output from (thpd-generator's drop-ins), or
 * NULL for a user manager without XDG_RUNTIME_DIR; g_free() it. */
char *manager_generator_dir(const Manager *m);
/* The units that need a restart, sorted: a hash table's order would change what the bus and
 * the metrics file say without a change of state. The names belong to the manager. */
GPtrArray *manager_needs_restart_sorted(const Manager *m);

/* Validates and sets an override; an error names the bad knob or value. */
int manager_set_override(Manager *m, const KnobValue values[_KNOB_MAX], uint64_t duration_usec);
void manager_clear_override(Manager *m);

/* Why the knob has its target value ("POLICY-PATH for UNIT", "admin override", ...); free it. */
char *manager_knob_reason(const Manager *m, Knob k);

/* What "no vote" resolves to per knob: the recorded kernel value, or the one thpd.conf pins;
 * UNSET for knobs this kernel lacks. */
void manager_effective_baseline(const Manager *m, KnobValue out[_KNOB_MAX]);
/* One sentence Explain and status say of a knob besides its votes, and what it is about (the
 * KnobNotes property's kinds): "baseline", a baseline the kernel command line chose;
 * "mthp-collapse", a max_ptes_none moved (or taken as 0) for khugepaged's mTHP collapse;
 * "shrinker", what max_ptes_none also drives; "pmd-unreachable", a global enabled that thp_anon=
 * keeps from the PMD size. */
typedef struct KnobNote {
        const char *kind; /* static */
        char *text;
} KnobNote;

/* k's notes, a GArray of KnobNote that frees their text; empty when there is nothing to say. */
GArray *manager_knob_notes(const Manager *m, Knob k);
/* Records m->baseline in the runtime directory. Called as soon as the baseline changes, before
 * thpd acts on the new value: a thpd killed in between would put the old value back. */
void manager_save_baseline(Manager *m);
