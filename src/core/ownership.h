/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "drift.h"
#include "knob.h"
#include "plan.h"
#include "pool-plan.h"
#include "resolve.h"

/* Whose value the kernel holds, per knob and per hugetlb pool, and how each event changes it:
 * the one place that says so (docs/how-it-decides.md has the table). No I/O: the daemon hands
 * in what it saw or did and carries out what comes back. */

typedef enum Owner {
        OWNER_BASELINE, /* the machine's or the admin's value, as recorded */
        OWNER_THPD,     /* thpd's: written (or tried) for a policy, an override, a mitigation or a
                         * pinned baseline, or a leftover of such a write it must give back */
        OWNER_WRITER,   /* another writer's, that thpd yielded to (drift.h) */
        _OWNER_MAX,
} Owner;

const char *owner_to_string(Owner o);

/* Per knob and per pool (by index into the baseline record's pools, which only grow). */
typedef struct Ownership {
        Owner knobs[_KNOB_MAX];
        Owner pools[RESOLVE_MAX_POOLS];
        /* Found at start written while thpd was not running, and not judged yet: whether a
         * policy holds it is known once the unit list is in (pools wait for it anyway). */
        bool knobs_unjudged[_KNOB_MAX];
} Ownership;

void ownership_init(Ownership *o);

/* What the plan reads of it (plan.h): owned, the knob is not the baseline's (thpd's or
 * yielded), so the plan gives it back rather than adopting it; yielded, it is left as the
 * writer set it. A knob written while thpd was down counts as owned until the unit list is in,
 * so that the plan holds it rather than adopting a value a running service's policy may undo. */
void ownership_plan_flags(const Ownership *o, bool units_known, bool ret_owned[_KNOB_MAX], bool ret_yielded[_KNOB_MAX]);

/* A write thpd planned, carried out: done, failed or, for a pool, partly done. What decides is
 * what the kernel holds after it, not whether the write worked: held (a source wants the item,
 * or thpd moves it off the baseline) or off the baseline, it is thpd's, even after a failed
 * write or a shrink that fell short; a write that cannot hand an item on cannot lose anyone's
 * value. Back at the baseline with nothing holding it, it is the baseline's. A yield outlasts
 * any step: it ends only as a conflict does (ownership_conflict()). */
Owner ownership_after_write(Owner before, bool held, bool at_baseline);

/* A knob's step (plan.h) carried out; one that decides (not HOLD, not UNREADABLE) judges a knob
 * written while thpd was down. write_failed: a WRITE the kernel refused; *applied then
 * holds what the kernel kept (read back by the caller). Otherwise *applied and *recorded are
 * updated as plan_knob_commit() says. baseline: the effective baseline (Plan.baseline). Returns
 * whether the baseline record changed: it is saved before thpd writes anything it protects. */
bool ownership_knob_commit(Ownership *o, Knob k, const KnobStep *step, bool write_failed, KnobValue baseline,
                           KnobValue *applied, KnobValue *recorded);

/* A pool's step (pool-plan.h) carried out, leaving `pages` in the pool (after a resize, what it
 * allocated; after a failed one, what it had). */
Owner ownership_pool_step(Owner before, const PoolTarget *t, const PoolStep *step, uint64_t pages);

/* Whether the drift watch restores a change (drift_decide()'s held): a source wants the value,
 * or the item is not the baseline's. */
bool ownership_knob_held(Owner o, SourceKind source, bool pinned);
bool ownership_pool_held(Owner o, uint64_t requested);

/* A change the drift watch judged: adopted, the baseline follows it; yielded, the writer's;
 * restored, unchanged until the write that restores it. */
Owner ownership_after_drift(Owner before, DriftAction action);

/* Whether the item is in conflict now (drift.h): a conflict that begins makes it the writer's;
 * one that ended (its writer stopped, or a reload) gives it back to thpd, whose next apply
 * writes what the sources want or gives it back to the baseline. */
Owner ownership_conflict(Owner before, bool in_conflict);

/* thpd starting, with what its records say of an item. */
typedef struct OwnershipStart {
        bool at_baseline;  /* the kernel holds the recorded (or pinned) baseline */
        /* An ownership record was read (ownership-record.h): without one (an older thpd, or the
         * record was lost) nothing tells a leftover from another's write, and an item off its
         * baseline is taken for thpd's leftover, as the safer guess for the services running. */
        bool recorded;
        bool thpd_left;    /* the record says the kernel holds what thpd wrote (or may have left) */
        bool yielded;      /* the record says thpd yielded it to another writer */
} OwnershipStart;

/* Yielded: still the writer's, whatever the kernel holds, until the conflict would have ended
 * anyway (its writer stops, or a reload): a restart does not start the fight again.
 * Off the baseline and not what thpd left: written while thpd was not running (*ret_while_down),
 * and judged like drift by the first apply: the baseline's until then, so that the apply adopts
 * it where nothing holds it and restores it where something does. A restart never takes
 * anyone's value for thpd's leftover. */
Owner ownership_at_start(const OwnershipStart *s, bool *ret_while_down);

typedef enum OwnershipStop {
        OWNERSHIP_STOP_NOTHING, /* at its baseline, or not thpd's to touch */
        OWNERSHIP_STOP_RESTORE, /* thpd's, off the baseline: give the baseline back */
        OWNERSHIP_STOP_LEAVE,   /* another writer's: it stays, and the journal says so */
        _OWNERSHIP_STOP_MAX,
} OwnershipStop;

/* thpd stopping, restoring (not handing over to a next instance). */
OwnershipStop ownership_at_stop(Owner o, bool at_baseline);
/* Whether a stop leaves the records in place: something was left to another writer, whose yield
 * outlasts thpd until it would have ended anyway (a start, with the records, takes it up). */
bool ownership_keep_records(const Ownership *o, size_t n_pools);
