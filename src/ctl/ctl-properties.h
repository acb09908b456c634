/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <glib.h>
#include <systemd/sd-bus.h>

#include "ctl-bus.h"
#include "ctl-json.h"
#include "ctl-table.h"
#include "ctl-terminal.h"
#include "ctl.h"

/* The daemon's properties, from GetAll: decoded, and mapped to JSON. */

typedef struct CtlKnob {
        char *name, *applied, *target, *baseline, *source, *policy, *unit;
} CtlKnob;

typedef struct CtlActivePolicy {
        char *name;
        char **units;
} CtlActivePolicy;

typedef struct CtlPool {
        uint64_t page_size_kb;
        int32_t node;
        uint64_t target, allocated, free;
        char *shortfall;
        char *name; /* as show names it: "2048kB", "2048kB.node0" */
} CtlPool;

typedef struct CtlPair {
        char *key, *value;
} CtlPair;

/* A running unit of a Scope=service policy (IsolatedServices). */
typedef struct CtlIsolation {
        char *unit, *policy, *thp, *state, *note;
        char *scope;       /* the policy's Scope=: service or auto */
        char *via;         /* "MemoryTHP=disable", "thpd-exec" or "no drop-in" */
        bool machine_wide; /* Scope=auto: it also votes on the machine-wide knobs */
} CtlIsolation;

typedef struct CtlFigure {
        char *name;
        double value;
} CtlFigure;

typedef struct CtlStorm {
        char *kind, *phase;
        GArray *figures; /* CtlFigure */
} CtlStorm;

typedef struct CtlCounter {
        char *name;
        uint64_t value;
} CtlCounter;

/* One THP size's counters (SizeStats). */
typedef struct CtlSizeStat {
        uint64_t size_kb;
        char *name;      /* "64kB" */
        char *enabled;   /* "never", "madvise", "always"; "": unknown */
        GArray *counters; /* CtlCounter, in the bus' order */
} CtlSizeStat;

/* A problem in a policy file, from the PolicyDiagnostics property. */
typedef struct CtlDiagnostic {
        char *policy;  /* "redis.conf", or NULL for a directory's problem */
        char *file;
        unsigned line; /* 0: the whole file */
        char *severity; /* "error" or "warning" */
        char *message;
        char *text;     /* as ctl_diagnostic_format() gives it; NULL where the caller made the struct */
} CtlDiagnostic;

/* A writer thpd gave a knob up to (DriftConflicts). */
typedef struct CtlDriftConflict {
        char *knob, *writer, *value, *text; /* writer "": unknown */
        uint64_t since;                      /* CLOCK_REALTIME µs */
} CtlDriftConflict;

/* A knob found changed behind thpd's back (RecentDrift). */
typedef struct CtlDrift {
        char *knob, *expected, *found, *writer, *action; /* writer "": unknown */
        char *who;                                        /* "written by tuned.service (profile ...)" */
        uint64_t when, written;                           /* CLOCK_REALTIME µs; written 0: not seen */
        uint64_t wrong_usec;                              /* 0: not restored (yet) */
} CtlDrift;

/* Whose value a knob or pool holds (Ownership). */
typedef struct CtlOwnership {
        char *item;   /* a knob, or a pool as drift names it: "hugepages-2048kB/nr_hugepages" */
        char *whose;  /* "baseline", "thpd" or "writer" */
        char *detail; /* what thpd holds it for, or the writer; "" for none (the baseline's, an unknown writer) */
} CtlOwnership;

/* A sentence thpd has about a knob besides its votes (KnobNotes). */
typedef struct CtlKnobNote {
        char *knob, *kind, *note; /* kind: "baseline", "mthp-collapse", "shrinker", "pmd-unreachable", ... */
} CtlKnobNote;

/* "restored after 3 ms", or the action as the bus says it ("adopted", "yielded"). */
char *ctl_drift_action(const CtlDrift *d);

typedef struct CtlProperties {
        char *version, *status, *storm_state, *storm_action;
        GArray *knobs;           /* CtlKnob */
        GArray *active_policies; /* CtlActivePolicy */
        GArray *pools;           /* CtlPool */
        GArray *needs_restart;   /* CtlPair: unit, policy */
        GArray *isolated;        /* CtlIsolation */
        uint64_t blanket_since;  /* CLOCK_REALTIME µs; 0: no blanket */
        GArray *blanket;         /* CtlPair: unit, "under" | "before" | "exempt" */
        GArray *override;        /* CtlPair: knob, value */
        uint64_t override_expires_at;
        GArray *storms;          /* CtlStorm */
        GArray *size_stats;      /* CtlSizeStat, smallest first */
        GArray *diagnostics;     /* CtlDiagnostic */
        GArray *drift_conflicts; /* CtlDriftConflict */
        GArray *recent_drift;    /* CtlDrift, oldest first */
        GArray *ownership;       /* CtlOwnership: knobs, then pools */
        GArray *knob_notes;      /* CtlKnobNote */
} CtlProperties;

/* The property names, in the order status and show print them. */
extern const char *const ctl_property_names[];
/* The JSON key of a property: "HugeTLBPools" -> "hugetlb_pools"; NULL for an unknown name. */
const char *ctl_property_json_key(const char *name);

/* "FILE:LINE: error: message", as verify and the daemon's log put it. */
char *ctl_diagnostic_format(const CtlDiagnostic *d);
/* Reads the PolicyDiagnostics property alone, for verbs that need nothing else. */
int ctl_get_diagnostics(const CtlOptions *o, sd_bus *bus, GArray **ret);
/* Prints diagnostics to out, red or yellow by severity on a terminal; indent before each. */
void ctl_print_diagnostics(CtlOutput *out, GArray *diagnostics, const char *indent);
unsigned ctl_count_errors(GArray *diagnostics);

/* GetAll on org.thpd1.Manager. Returns a CtlExit code; ret is set on success only. */
int ctl_get_properties(const CtlOptions *o, sd_bus *bus, CtlProperties *ret);
/* The same in two steps, for a verb that makes other calls at the same time: sends GetAll (see
 * CtlAsyncCall), then, after ctl_bus_wait(), decodes its reply. Both return a CtlExit code. */
int ctl_get_properties_async(const CtlOptions *o, sd_bus *bus, unsigned *pending, CtlAsyncCall *c);
int ctl_get_properties_finish(const CtlOptions *o, sd_bus *bus, CtlAsyncCall *c, CtlProperties *ret);
void ctl_properties_done(CtlProperties *p);

/* {"file", "line", "severity", "message"}, for list and verify, which give a problem under its
 * policy. PolicyDiagnostics, which names the policy too, is a table (ctl_property_table()). */
void ctl_diagnostic_to_json(CtlJson *b, const CtlDiagnostic *d);
/* A property that is a list of rows (Knobs, IsolatedServices, ...) as a table, for its JSON and
 * for show; a dictionary (Override) as a table of one row and one column; NULL for any other.
 * only_knob: for DriftConflicts and RecentDrift, the rows of that knob only. */
CtlTable *ctl_property_table(const CtlProperties *p, const char *name, const char *only_knob);
/* The value of a property that is a string or a time (in µs) as show prints it, "" for a string
 * thpd did not send; NULL for a list. Freed with g_free(). */
char *ctl_property_text(const CtlProperties *p, const char *name);
/* The properties as members of the JSON object being built (only those in names, if names is
 * not NULL). */
void ctl_properties_json_members(const CtlProperties *p, char *const *names, CtlJson *b);
