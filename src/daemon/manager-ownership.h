/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "manager.h"
#include "pool-plan.h"

/* The ownership record (ownership-record.h), the daemon's side: what a restarted thpd reads of
 * it, the line appended before each write, and the lines that bring it up to each apply. */

void manager_ownership_init(Manager *m);
void manager_ownership_done(Manager *m);

/* thpd starting, the baseline in m->baseline: sets each item's owner (ownership_at_start())
 * from the kernel's values (current, pools read again), the record when the baseline record was
 * reused, and writes this instance's snapshot. */
void manager_ownership_start(Manager *m, const KnobValue current[_KNOB_MAX], bool reused);

/* A value thpd is about to write, for the next flush, which comes before the write (see
 * ownership-record.h). */
void manager_ownership_want(Manager *m, const char *item, const char *value);
/* Whose item is, holding value, for the record, in the lines the next flush appends (a yield
 * with its conflict, drift.h): after each apply (which ends a "want") and drift judgement. */
void manager_ownership_note(Manager *m, const char *item, Owner owner, const char *value);
void manager_ownership_flush(Manager *m);

/* A step of an apply, for an item found at start written while thpd was not running: once the
 * apply decided (restored, adopted, or nothing to do), reported as drift and forgotten. */
void manager_ownership_knob_judged(Manager *m, Knob k, const KnobStep *step);
void manager_ownership_pool_judged(Manager *m, const char *item, const PoolStep *step);

/* Whose value an item holds, as the Ownership property shows it. */
typedef struct OwnershipRow {
        char *item;   /* as drift.h names it */
        Owner owner;
        /* thpd's: what it holds the item for ("redis.conf for redis-server.service", "override",
         * "storm mitigation", "baseline from thpd.conf"), or "leftover, to give back"; a
         * writer's: the writer as drift.h names it ("tuned.service (profile hpc-compute)"), ""
         * for an unknown one; the baseline's: "". */
        char *detail;
} OwnershipRow;

/* A row per knob this kernel has, in knob order, then per pool in the baseline record. */
GArray *manager_ownership_rows(const Manager *m);

/* At a clean stop, with the baseline record. */
void manager_ownership_remove(Manager *m);
