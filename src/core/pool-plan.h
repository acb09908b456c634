/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "resolve.h"

/* What an apply does to one hugetlb pool, decided like a knob's step (plan.h) from what was read
 * just before: the daemon only carries it out. */

typedef enum PoolAction {
        POOL_ACTION_MISSING,    /* this kernel has no such pool (page size, or NUMA node) */
        POOL_ACTION_UNREADABLE, /* its count could not be read: an error of this apply */
        POOL_ACTION_FOLLOW,     /* nobody asks and thpd never resized it: the admin's, as recorded */
        POOL_ACTION_ADOPT,      /* the same, and the admin resized it: the baseline follows */
        POOL_ACTION_OWN,        /* a per-node pool's first use: its count becomes its baseline,
                                 * then it grows by what the policies ask */
        POOL_ACTION_YIELD,      /* another writer keeps resizing it: left as that writer set it */
        POOL_ACTION_GRACE,      /* at its target, held only for policies whose units stopped */
        POOL_ACTION_KEEP,       /* at its target */
        POOL_ACTION_RESIZE,     /* to its target: grown for the policies, or given back */
        _POOL_ACTION_MAX,
} PoolAction;

const char *pool_action_to_string(PoolAction a);

typedef struct PoolObservation {
        bool has_baseline;      /* a baseline is recorded for it */
        uint64_t baseline;
        bool readable;          /* current was read */
        uint64_t current;       /* nr_hugepages now */
        bool owned;             /* not the baseline's: thpd's, or yielded (ownership.h) */
        bool yielded;           /* another writer's, that thpd yielded to (ownership.h) */
} PoolObservation;

typedef struct PoolStep {
        PoolAction action;
        uint64_t current;
        uint64_t target;        /* the pages wanted (OWN: its count now plus the requests) */
        uint64_t baseline;      /* the baseline after the step: changed by ADOPT and OWN */
        /* ADOPT, OWN: the new baseline must be persisted before anything is written, so that a
         * thpd killed right after the write still knows what to give back. */
        bool persist_baseline;
} PoolStep;

/* The step for target t (from resolve()) given what was read. */
void pool_plan_step(const PoolTarget *t, const PoolObservation *o, PoolStep *ret);
