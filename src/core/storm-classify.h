/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "knob.h"
#include "procfs-parse.h"
#include "util.h"

/* Storm classification: a pure function from counter samples to a per-kind phase. No I/O here;
 * storm.c reads the samples and reports what this decides. */

typedef enum StormKind {
        STORM_KIND_DIRECT_COMPACTION, /* faulting tasks stall in direct compaction */
        STORM_KIND_KHUGEPAGED,        /* khugepaged burns CPU collapsing (and compacting for it) */
        STORM_KIND_KCOMPACTD,         /* kcompactd burns CPU compacting in the background */
        _STORM_KIND_MAX,
        _STORM_KIND_INVALID = -EINVAL,
} StormKind;

typedef enum StormPhase {
        STORM_PHASE_CALM,
        STORM_PHASE_SUSPECT, /* hot windows seen, not yet for StormAfter= */
        STORM_PHASE_STORM,
        STORM_PHASE_COOLING, /* no longer hot, not yet for CoolAfter= */
        _STORM_PHASE_MAX,
        _STORM_PHASE_INVALID = -EINVAL,
} StormPhase;

typedef enum StormAction {
        STORM_ACTION_LOG,
        STORM_ACTION_MITIGATE,
        _STORM_ACTION_MAX,
        _STORM_ACTION_INVALID = -EINVAL,
} StormAction;

const char *storm_kind_to_string(StormKind k);
StormKind storm_kind_from_string(const char *s);
const char *storm_phase_to_string(StormPhase p);
StormPhase storm_phase_from_string(const char *s);
const char *storm_action_to_string(StormAction a);
StormAction storm_action_from_string(const char *s);

/* [Storm] in thpd.conf. The same text, in man page form, is man/thpd.conf-storm.txt.
 *
 * Action=log|mitigate            (log) log/signal only, or also vote for softer knobs
 * FailRatio=RATIO                (0.5) compact_fail / (compact_fail + compact_success) above this
 * CompactFailsPerSec=RATE        (10) failed direct compactions (as many as THP faults of any size) per second:
 *                                hot on their own
 * CompactStallsPerSec=RATE       (1) direct compaction stalls per second: hot with pressure
 * PressurePercent=PERCENT        (10) PSI memory "some" over a window, for the path above
 * KthreadCpuPercent=PERCENT      (25) CPU of khugepaged, or of all kcompactd threads together
 * Window=DURATION                (1s) the span the rates above are averaged over
 * StormAfter=DURATION            (3s) consecutive hot windows before a storm is declared
 * CoolAfter=DURATION             (60s) consecutive calm windows before it is cleared
 * EscalateAfter=DURATION         (2min) a storm outlasting a mitigation step gets the next one
 * HoldDown=DURATION              (10min) a mitigation step stays at least this long
 * MitigationDefrag=defer|never   (defer) what step 1 votes for "defrag"
 * SampleInterval=DURATION        (1s) sampling rate while pressure or a storm lasts
 * IdlePollInterval=DURATION      (10s) look this often when PSI triggers are unavailable */

#define STORM_DEFAULT_ACTION STORM_ACTION_LOG
#define STORM_DEFAULT_FAIL_RATIO 0.5
#define STORM_DEFAULT_COMPACT_FAILS_PER_SEC 10.0
#define STORM_DEFAULT_COMPACT_STALLS_PER_SEC 1.0
#define STORM_DEFAULT_PRESSURE_PERCENT 10.0
#define STORM_DEFAULT_KTHREAD_CPU_PERCENT 25.0
#define STORM_DEFAULT_WINDOW_USEC (1 * USEC_PER_SEC)
#define STORM_DEFAULT_STORM_AFTER_USEC (3 * USEC_PER_SEC)
#define STORM_DEFAULT_COOL_AFTER_USEC (60 * USEC_PER_SEC)
#define STORM_DEFAULT_ESCALATE_AFTER_USEC (120 * USEC_PER_SEC)
#define STORM_DEFAULT_HOLD_DOWN_USEC (600 * USEC_PER_SEC)
#define STORM_DEFAULT_MITIGATION_DEFRAG "defer"
#define STORM_DEFAULT_SAMPLE_INTERVAL_USEC (1 * USEC_PER_SEC)
#define STORM_DEFAULT_IDLE_POLL_INTERVAL_USEC (10 * USEC_PER_SEC)

typedef struct StormConfig {
        StormAction action;
        double fail_ratio;             /* 0..1 */
        double compact_fails_per_sec;
        double compact_stalls_per_sec;
        double pressure_percent;       /* 0..100 */
        double kthread_cpu_percent;    /* of one CPU */
        uint64_t window_usec;
        uint64_t storm_after_usec;
        uint64_t cool_after_usec;
        uint64_t escalate_after_usec;
        uint64_t hold_down_usec;
        KnobValue mitigation_defrag;   /* a KNOB_DEFRAG value: defer or never */
        uint64_t sample_interval_usec;
        uint64_t idle_poll_interval_usec;
} StormConfig;

/* The level of the PSI trigger that wakes the watcher, in percent of its window (4 ms of 2 s):
 * far below PressurePercent=, because the recorded compaction storm kept memory "some" at 1-2 %
 * (4.4 ms in its first second) and only a wake-up lets the failed stalls be counted. Ordinary
 * pressure wakes the watcher too; it then samples once a second until it is quiet again. */
#define STORM_WAKE_PERCENT 0.2

void storm_config_init_defaults(StormConfig *cfg);
/* STORM_WAKE_PERCENT, or PressurePercent= when that is lower. */
double storm_config_wake_percent(const StormConfig *cfg);
/* Sets one [Storm] key from thpd.conf. -ENOENT for an unknown key, -EINVAL for a value that does
 * not parse (NULL included), -ERANGE for one outside the key's range; cfg is unchanged on error.
 * cfg and key must not be NULL. */
int storm_config_set(StormConfig *cfg, const char *key, const char *value);

/* The per-size counters (hugepages-<N>kB/stats/) the watcher follows, for one size. The PMD
 * size's duplicate vmstat's thp_fault_* and thp_split_page, so the classifier leaves it out. */
typedef struct StormSizeCounters {
        uint64_t size_kb;          /* 0: an unused slot */
        uint64_t fault_alloc;      /* anon_fault_alloc */
        uint64_t fault_fallback;   /* anon_fault_fallback */
        uint64_t split;
} StormSizeCounters;

/* Sizes from 8 kB to the PMD size and beyond: more than any architecture has. */
#define STORM_SIZES_MAX 16

/* One reading of every signal, taken at timestamp_usec (CLOCK_MONOTONIC). */
typedef struct StormSample {
        uint64_t timestamp_usec;
        VmStat vmstat;
        bool has_khugepaged, has_kcompactd;
        uint64_t khugepaged_cpu_usec;   /* utime + stime */
        uint64_t kcompactd_cpu_usec;    /* summed over every kcompactd<N> */
        /* Changes whenever the set of kthreads read changes (one exited, another appeared): CPU
         * times of different sets cannot be subtracted. */
        unsigned kthreads_generation;
        StormSizeCounters sizes[STORM_SIZES_MAX]; /* the sizes read, in any order */
        uint64_t pmd_size_kb;           /* the size whose counters vmstat has; 0: unknown */
        bool has_psi_memory, has_psi_cpu;
        uint64_t psi_memory_some_usec;  /* PSI "total=" */
        uint64_t psi_memory_full_usec;
        uint64_t psi_cpu_some_usec;
} StormSample;

/* Rates over a window (or one interval): what is reported and what is compared to thresholds. */
typedef struct StormFigures {
        uint64_t window_usec;
        double compact_stalls_per_sec;
        double compact_fails_per_sec;
        double compact_fail_ratio;            /* 0 when no compaction finished */
        double compact_scanned_per_sec;       /* migrate + free scanner pages */
        double thp_faults_per_sec;            /* PMD-sized THP faults: alloc + fallback */
        double thp_fault_fallback_per_sec;
        double thp_fault_fallback_ratio;      /* fallback / (alloc + fallback); 0 without faults */
        double thp_collapse_failed_per_sec;
        double thp_split_per_sec;             /* PMD-sized THPs split (vmstat thp_split_page) */
        double mthp_faults_per_sec;           /* the other sizes' anonymous faults: alloc + fallback */
        double mthp_fault_fallback_per_sec;
        double mthp_split_per_sec;
        uint64_t mthp_size_kb;                /* the size with the most fallbacks (or splits); 0: none */
        double mthp_size_fault_fallback_per_sec; /* ... its fallbacks */
        double allocstalls_per_sec;
        double compact_daemon_wakes_per_sec;
        double khugepaged_cpu_percent;        /* of one CPU */
        double kcompactd_cpu_percent;
        bool has_psi_memory, has_psi_cpu;
        double psi_memory_some_percent;
        double psi_memory_full_percent;
        double psi_cpu_some_percent;
} StormFigures;

/* Counter increases accumulated over the current window. A signal that was not there for the
 * whole window (khugepaged started, a PSI read failed) is averaged over the time it covered. */
typedef struct StormDeltas {
        uint64_t duration_usec;
        VmStat vmstat;
        StormSizeCounters sizes[STORM_SIZES_MAX]; /* increases per size other than the PMD one */
        uint64_t khugepaged_cpu_usec, khugepaged_covered_usec;
        uint64_t kcompactd_cpu_usec, kcompactd_covered_usec;
        uint64_t psi_memory_some_usec, psi_memory_full_usec, psi_memory_covered_usec;
        uint64_t psi_cpu_some_usec, psi_cpu_covered_usec;
} StormDeltas;

typedef struct StormKindState {
        StormPhase phase;
        uint64_t phase_since_usec;   /* sample time the phase began */
        uint64_t hot_usec;           /* consecutive hot windows (SUSPECT, STORM) */
        uint64_t cool_usec;          /* consecutive calm windows (COOLING) */
        bool has_trip;
        uint64_t storm_since_usec;   /* when the last storm was declared */
        StormFigures trip;           /* the window that declared it */
} StormKindState;

#define STORM_MITIGATION_LEVEL_MAX 3U
/* Each storm that returns within the current hold-down of the last lift doubles it, up to this. */
#define STORM_HOLD_DOWN_FACTOR_MAX 8U

typedef struct StormState {
        StormKindState kinds[_STORM_KIND_MAX];
        StormDeltas window;
        bool has_latest;
        StormFigures latest;          /* the last complete window */
        /* A sampling run lasts from the first interval that is not quiet (or a PSI wake-up) until
         * every kind is calm, no mitigation is held and CoolAfter= has passed quietly. */
        bool active;
        uint64_t quiet_usec;
        unsigned mitigation_level;    /* 0: none; see storm_mitigation_votes() */
        uint64_t mitigation_changed_usec;
        /* HoldDown= is multiplied by this after a storm came back soon after its mitigation was
         * lifted, so that a workload the mitigation keeps calm does not flap every HoldDown=. */
        unsigned hold_down_factor;
        uint64_t mitigation_lifted_usec; /* 0: never lifted */
} StormState;

void storm_state_init(StormState *s);

/* How long the last storm of a kind lasted, from its detection to the start of the phase it is
 * in now: after STORM_EVENT_CLEARED, the whole storm including its cooling down. */
static inline uint64_t storm_kind_state_duration_usec(const StormKindState *ks) {
        return ks->phase_since_usec > ks->storm_since_usec ? ks->phase_since_usec - ks->storm_since_usec : 0;
}

typedef struct StormChanges {
        unsigned detected;            /* bit (1u << kind) for each kind that entered STORM */
        unsigned cleared;             /* ... and each that went from COOLING back to CALM */
        bool mitigation_changed;
        bool window_completed;
        bool interval_ignored;        /* a counter went backwards or the kthread set changed */
} StormChanges;

/* Advances the state by the interval prev -> cur. prev == NULL starts a sampling run after a
 * gap (a PSI wake-up): the partial window is dropped and the run counts as not quiet. An
 * interval in which any counter goes backwards (a wrap, a reset, a snapshot restore), time does
 * not advance, or the kthread set changed carries no data and is skipped whole. */
StormChanges storm_classify(const StormConfig *cfg, StormState *state, const StormSample *prev,
                            const StormSample *cur);

/* True when no sampling run is needed: see StormState.active. */
/* How long a sampling run lasts after everything turned quiet and calm: StormAfter= plus a
 * window. */
uint64_t storm_config_idle_after_usec(const StormConfig *cfg);
bool storm_state_is_idle(const StormState *s);

/* A one-line human summary of the figures that matter for kind; free with g_free(). */
char *storm_figures_describe(StormKind kind, const StormFigures *f);

/* The mitigation level a storm of this kind starts at: defrag cannot help khugepaged, whose
 * allocations have their own knobs, so that kind starts at step 2. */
unsigned storm_kind_mitigation_start(StormKind kind);

/* Fills votes like a policy's knob values (KNOB_VALUE_UNSET where it does not vote):
 *   level 1: defrag=MitigationDefrag= (defer)
 *   level 2: + khugepaged/defrag=0, scan_sleep_millisecs=30000, alloc_sleep_millisecs=120000,
 *            pages_to_scan=2048
 *   level 3: + enabled=madvise
 * Resolution counts them in the strictest-wins contest, so a stricter policy or an override is
 * never loosened. level is at most STORM_MITIGATION_LEVEL_MAX (asserted). */
int storm_mitigation_votes(const StormConfig *cfg, unsigned level, KnobValue ret[_KNOB_MAX]);
