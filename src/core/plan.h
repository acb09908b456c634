/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <glib.h>

#include "isolation.h"
#include "knob.h"
#include "policy.h"
#include "resolve.h"

/* The decisions of an apply, apart from any I/O. The daemon observes (the wanted units and the
 * policies they match, the knobs this kernel has and their values, the time), plan() decides,
 * and the daemon carries the plan out, records it and tells whoever listens. */

/* Per policy file, what survives from one apply to the next. */
typedef struct PolicyRuntime {
        char *name;
        bool active;
        uint64_t pool_grace_until; /* CLOCK_MONOTONIC µs; 0: no pool held after a stop */
        GPtrArray *units;          /* char*: wanted units matching it, sorted */
} PolicyRuntime;

/* What the plan carries from one apply to the next; the daemon owns it and records parts of it
 * (the unit record) for its next instance. */
typedef struct PlanState {
        GHashTable *policy_runtime; /* name -> PolicyRuntime* */
        GHashTable *runtime_of;     /* Policy* -> its PolicyRuntime*, until the policies are replaced */
        /* Policy*: those active or holding a pool after a stop at the last apply; with the
         * wanted units' own policies, all an apply needs to look at. */
        GHashTable *live_policies;
        GHashTable *needs_restart;  /* unit -> policy name */
        GHashTable *seen_wanted;    /* units wanted at the last apply -> their stop count + 1 */
        /* Its names (the table's keys), sorted: the unit record is written at every start a
         * policy matches, and sorting every running unit's name each time was most of it. */
        GPtrArray *seen_sorted;
        /* The unit record's lines for what changed in seen_wanted and needs_restart since the
         * daemon last took them (unit-record.h): appended to the record rather than rewriting it
         * at every start. */
        GString *record_journal;
        bool forgot_active;         /* a reload dropped an active policy since the last plan */
        unsigned n_active;          /* live policies active (not only holding a pool) */
} PlanState;

void plan_state_init(PlanState *s);
/* A unit the last instance recorded as wanted (the unit record), before the first plan. */
void plan_state_add_seen(PlanState *s, const char *unit);
void plan_state_done(PlanState *s);
/* A reload replaced the policies: the live set pointed into the old ones, and a policy that is
 * gone is no longer active, whatever its units do. */
void plan_state_forget_policies(PlanState *s, GPtrArray *policies);

/* A wanted unit (start job queued, or active) that matches a policy. */
typedef struct PlanUnit {
        const char *name;
        bool running;   /* active with no start job: it mapped its memory before this apply */
        unsigned stops; /* how often it stopped while followed */
} PlanUnit;

/* Whether one unit's change, from before to now (each NULL when the unit is not wanted), can
 * change what the next plan() decides, given the policies its name matches: if not, the event
 * needs no apply. Only whether it runs changed is what most signals of a start tell, and that
 * counts only for a unit the plan has not counted yet (restart hints) or one of a
 * Scope=service policy (isolation checks). */
bool plan_unit_change_matters(const PlanState *s, const PlanUnit *before, const PlanUnit *now,
                              const Policy *const *policies, size_t n_policies);

/* A policy the apply looks at, with the wanted units it matches. */
typedef struct PlanCandidate {
        const Policy *policy;
        const PlanUnit *units;
        size_t n_units;
        /* A live policy none of whose units changed since the last apply: units is not given,
         * the state's list of them stands. Only for a policy that is not Scope=service, whose
         * running units are checked at every apply. */
        bool settled;
} PlanCandidate;

typedef struct PlanInput {
        /* The policies of the wanted units and those live at the last apply, in policy order. */
        const PlanCandidate *candidates;
        size_t n_candidates;
        /* Only what changed since the last apply, so that a unit start costs in proportion to
         * its own policies: the candidates not settled are those of the units that changed
         * (each with all its wanted units), and released names those of them no longer wanted.
         * A wanted unit not among the candidates is as at the last apply. Needs units_known,
         * now and at the last apply. */
        bool changes_only;
        const char *const *released;
        size_t n_released;
        GHashTable *isolation;      /* unit -> Isolation*, what the daemon found; NULL: none */
        bool units_known;           /* the systemd manager listed the units (or is absent) */
        uint64_t now_usec;          /* CLOCK_MONOTONIC */
        uint64_t pool_grace_usec;   /* thpd.conf PoolGraceSec= */

        const bool *present;        /* [_KNOB_MAX] the knobs this kernel has */
        const KnobValue *current;   /* [_KNOB_MAX] as read; UNSET where the read failed */
        const bool *owned;          /* [_KNOB_MAX] not the baseline's: thpd's or yielded (ownership.h) */
        const KnobValue *recorded;  /* [_KNOB_MAX] the baseline record */
        const KnobValue *pinned;    /* [_KNOB_MAX] thpd.conf's baseline values; UNSET: none */
        const KnobValue *mitigation;/* [_KNOB_MAX] storm mitigation votes; UNSET: none */
        const KnobValue *override;  /* [_KNOB_MAX] the admin override; UNSET: none */
        /* [_KNOB_MAX] knobs yielded to a writer that keeps rewriting them (ownership.h);
         * NULL: none. */
        const bool *yielded;
        const PoolBaseline *pool_baseline;
        size_t n_pool_baseline;
        bool mthp_collapse;         /* as ResolveInput's */
        Knob pmd_knob;              /* as ResolveInput's */
} PlanInput;

/* A running unit of a Scope=service policy whose processes nobody checked since it started. */
typedef struct IsolationRequest {
        const Policy *policy;
        const char *unit;
        unsigned stops;
} IsolationRequest;

typedef enum KnobAction {
        KNOB_ACTION_NONE,       /* no target: left alone */
        KNOB_ACTION_ABSENT,     /* a vote for a knob this kernel lacks: ignored */
        KNOB_ACTION_UNREADABLE, /* its value could not be read: an error of this apply */
        KNOB_ACTION_FOLLOW,     /* nobody votes and thpd never moved it: it stays the admin's */
        KNOB_ACTION_ADOPT,      /* the same, and the admin changed it: the baseline follows */
        KNOB_ACTION_HOLD,       /* the unit list is not in yet: any write could loosen it */
        KNOB_ACTION_YIELD,      /* another writer keeps rewriting it: left as that writer set it */
        KNOB_ACTION_KEEP,       /* at its target already */
        KNOB_ACTION_WRITE,
} KnobAction;

typedef struct KnobStep {
        KnobAction action;
        KnobValue current;
        KnobValue target;
        bool owned; /* KEEP and WRITE: whether thpd owns the knob once it holds the target */
} KnobStep;

typedef struct Plan {
        GArray *active;           /* ActivePolicy, in policy order; units borrowed from the state */
        GArray *isolation_checks; /* IsolationRequest */
        /* Unit names wanted now (borrowed from the input): with changes_only, those of the
         * candidates not settled; NULL before the unit list, when what the last instance
         * recorded is kept. All wanted units are PlanState.seen_wanted once it is in. */
        GHashTable *wanted;
        uint64_t next_grace_usec; /* when the first pool grace period ends; 0: none */
        /* What changed, so that publishing and persisting can skip what did not: a policy
         * turned active or inactive or its units changed; a restart hint was added or dropped;
         * a unit became wanted or stopped being wanted (PlanState.seen_wanted). */
        bool runtime_changed;
        bool restart_hints_changed;
        bool wanted_units_changed;
        KnobValue baseline[_KNOB_MAX]; /* what "no vote" resolves to */
        KnobStep knobs[_KNOB_MAX];
} Plan;

/* Updates the state (runtime of the candidate policies, restart hints, wanted units), resolves
 * into target and fills the plan. Holds before the unit list: then no knob is written and no
 * hint dropped. The target is the caller's (the daemon keeps it for explanations), not part of
 * the plan: at 2 kB, one copy less on the stack of every apply. */
void plan(PlanState *s, const PlanInput *in, Target *target, Plan *ret);
void plan_done(Plan *p);

/* What the daemon keeps of a knob once its step is carried out (a WRITE only when the write
 * succeeded), as the next plan reads it: the value the kernel has (applied), whether thpd owns
 * the knob, and the baseline record, which follows the admin's value on ADOPT. Returns true when
 * the record changed: it is saved before thpd writes anything it protects. */
bool plan_knob_commit(const KnobStep *step, KnobValue *applied, bool *owned, KnobValue *recorded);

/* Per knob: the recorded baseline, or the value thpd.conf pins; UNSET for knobs this kernel
 * lacks. */
void plan_effective_baseline(const bool *present, const KnobValue *recorded, const KnobValue *pinned,
                             KnobValue ret[_KNOB_MAX]);
