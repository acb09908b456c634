/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "diagnostics.h"
#include "resolve.h"
#include "storm-classify.h"
#include "thp-stats.h"

/* thpd's state in the Prometheus text exposition format (0.0.4), for "thpd-ctl metrics" and
 * node_exporter's textfile collector. A pure function of MetricsInput: the daemon fills it from
 * its state, tests from literals. Equal input gives equal text, which is how the daemon tells
 * that its metrics file needs rewriting. The metric names are listed in thpd(8). */

typedef struct MetricsKnob {
        Knob knob;
        KnobValue applied;  /* KNOB_VALUE_UNSET: could not be read */
        KnobValue target;   /* KNOB_VALUE_UNSET: not resolved yet */
        KnobValue baseline;
        SourceKind source;  /* SOURCE_NONE: not resolved yet */
        const char *policy; /* SOURCE_POLICY: the winning policy's name; else NULL */
        const char *unit;   /* SOURCE_POLICY: the unit that activated it; else NULL */
} MetricsKnob;

typedef struct MetricsPolicy {
        const char *name;
        bool active;
        const char *const *units; /* n_units units that activate it */
        size_t n_units;
} MetricsPolicy;

typedef struct MetricsPool {
        uint64_t page_size_kb;
        int node;           /* POOL_NODE_ANY: the global pool */
        uint64_t baseline;  /* pages the pool has without any policy */
        uint64_t requested; /* pages active policies add */
        uint64_t target;    /* pages thpd sizes the pool to */
        uint64_t allocated; /* nr_hugepages as read back */
        uint64_t free;      /* free_hugepages at the last apply */
} MetricsPool;

typedef struct MetricsRestart {
        const char *unit, *policy;
} MetricsRestart;

/* How often a knob was found changed behind thpd's back, per writer. */
typedef struct MetricsDrift {
        const char *knob;
        const char *writer; /* the unit credited with the change, or "unknown" */
        uint64_t count;
} MetricsDrift;

/* Counted since the daemon started; exported as Prometheus counters. */
typedef struct MetricsCounters {
        uint64_t knob_writes;  /* values the kernel took */
        uint64_t knob_errors;  /* knob reads and writes that failed */
        uint64_t reloads;
        uint64_t storms_detected[_STORM_KIND_MAX];
        uint64_t storm_usec[_STORM_KIND_MAX];               /* time spent in storms that cleared */
        uint64_t storm_last_detected_usec[_STORM_KIND_MAX]; /* CLOCK_REALTIME; 0: never */
        uint64_t mitigation_steps;                          /* raises of the mitigation level */
} MetricsCounters;

typedef struct MetricsInput {
        const char *version;
        uint64_t start_time_usec; /* CLOCK_REALTIME */
        bool units_ready;         /* the systemd manager answered and its units were listed */
        unsigned last_apply_errors;

        const MetricsKnob *knobs; /* the knobs this kernel has */
        size_t n_knobs;
        const MetricsPolicy *policies; /* the policies loaded */
        size_t n_policies;
        const Diagnostics *policy_diagnostics; /* NULL: none */
        const MetricsPool *pools;
        size_t n_pools;
        const MetricsRestart *needs_restart;
        size_t n_needs_restart;
        unsigned n_override;           /* knobs an admin override sets */
        uint64_t override_expires_usec; /* CLOCK_REALTIME; 0: no override, or one until cleared */

        bool storm_watching;      /* false: storm detection is off (no vmstat) */
        StormAction storm_action;
        StormPhase storm_phases[_STORM_KIND_MAX];
        unsigned mitigation_level;

        const ThpSizeStats *size_stats; /* the kernel's per-size counters, read for this text */
        size_t n_size_stats;

        const MetricsCounters *counters;
        const MetricsDrift *drift;     /* sorted by knob and writer */
        size_t n_drift;
        unsigned n_drift_conflicts;    /* knobs thpd gave up to a writer that keeps rewriting them */
} MetricsInput;

/* The exposition text, one family after the other, each with # HELP and # TYPE; families
 * without a sample are left out. Free with g_free(). */
char *metrics_format(const MetricsInput *in);
