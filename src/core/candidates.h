/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <glib.h>
#include <stdbool.h>

#include "plan.h"
#include "policy-index.h"
#include "policy.h"

/* Which policies an apply looks at, with which of their units (PlanInput.candidates), and what
 * that choice carries from one apply to the next. After a (re)load, the first unit list or a
 * rescan: every policy and every wanted unit. Otherwise only what changed: the policies of the
 * units noted since the last apply, each with all its wanted units, and the other live policies
 * settled, merged in policy order from the last apply's live list. A start then costs in
 * proportion to its own policies and the live set, not to every unit that runs. */

/* A unit as the selection reads it. */
typedef struct CandidateUnit {
        const char *name; /* the caller's, valid until the plan made from the selection is done */
        bool wanted;      /* a start job queued, or activating, active, reloading */
        bool running;     /* PlanUnit.running */
        unsigned stops;   /* PlanUnit.stops */
} CandidateUnit;

typedef void (*CandidateUnitFunc)(const CandidateUnit *u, void *data);

/* The caller's unit table, read through callbacks so that it keeps its own type. */
typedef struct CandidateUnits {
        /* Returns false when the table lacks the unit; ret is set only when it has it. */
        bool (*lookup)(void *userdata, const char *name, CandidateUnit *ret);
        /* Calls each with every unit, in any order. */
        void (*foreach)(void *userdata, CandidateUnitFunc each, void *data);
        size_t (*size)(void *userdata);
        void *userdata;
} CandidateUnits;

/* A live policy of the last apply, by its position in the policies. */
typedef struct CandidateLive {
        int position;
        const Policy *policy;
} CandidateLive;

typedef struct CandidateState {
        const GPtrArray *policies; /* Policy*, the caller's */
        PolicyIndex *index;        /* the policies by the unit names they match */
        /* Unit name -> GPtrArray of the Policy* it matches, looked up once per name until the
         * policies are replaced: globs are matched one by one, and every signal about a unit
         * asks. */
        GHashTable *matches;
        bool all_policies;         /* the policies were replaced: the live set pointed into the old ones */
        GHashTable *changed;       /* names of the units whose view changed since the last apply */
        bool all_changed;          /* any unit's may have (the unit list came, or came again) */
        bool units_known_at_apply; /* the last apply had the unit list */
        /* CandidateLive in policy order: the live policies (PlanState.live_policies) of the last
         * apply, none after the policies were replaced; NULL before the first apply. */
        GArray *live;
} CandidateState;

/* What one apply looks at. */
typedef struct Candidates {
        GArray *candidates;  /* PlanCandidate, in policy order */
        GArray *positions;   /* int: each candidate's policy position */
        PlanUnit *units;     /* the candidates' units, back to back */
        bool changes_only;   /* PlanInput.changes_only */
        GPtrArray *released; /* changed units no longer wanted; names borrowed from the state */
} Candidates;

/* policies: Policy*, the caller's; it outlives the state or the next
 * candidate_state_set_policies(). */
void candidate_state_init(CandidateState *s, const GPtrArray *policies);
void candidate_state_done(CandidateState *s);
/* The policies were reloaded: the next selection looks at every one, since a changed file may
 * no longer match. */
void candidate_state_set_policies(CandidateState *s, const GPtrArray *policies);
/* The policies that match unit, in policy order (borrowed, until the policies are replaced). */
const GPtrArray *candidate_state_matches(CandidateState *s, const char *unit);
/* A unit's view changed (NULL: any unit's may have): the next selection looks at it. */
void candidate_state_note_changed(CandidateState *s, const char *unit);
/* Whether a unit's change, from before to now (NULL: not known then), can change what the next
 * plan() decides (plan_unit_change_matters()); if not, it needs no apply. */
bool candidate_state_change_matters(CandidateState *s, const PlanState *plan, const char *unit,
                                    const CandidateUnit *before, const CandidateUnit *now);

/* The candidates of the next plan() on plan: units is NULL when there is no unit table (no
 * service manager), units_known whether the unit list is in (PlanInput.units_known). */
void candidates_select(CandidateState *s, const PlanState *plan, const CandidateUnits *units, bool units_known,
                       Candidates *ret);
/* After plan() made plan from c: the changed units are looked at, the live policies (plan's
 * active ones) are remembered for the next selection. c's released names are gone after it. */
void candidates_commit(CandidateState *s, const Candidates *c, const Plan *plan, bool units_known);
void candidates_done(Candidates *c);
