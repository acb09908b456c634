/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "knob.h"
#include "policy.h"

/* target = resolve(baseline, active policies, mitigation, override): a pure function. */

typedef enum SourceKind {
        SOURCE_NONE,       /* no vote and no baseline: the knob is left alone */
        SOURCE_BASELINE,
        SOURCE_POLICY,
        SOURCE_MITIGATION,
        SOURCE_OVERRIDE,
        _SOURCE_KIND_MAX,
} SourceKind;

const char *source_kind_to_string(SourceKind k);

typedef struct Source {
        SourceKind kind;
        const Policy *policy; /* SOURCE_POLICY only; borrowed */
        const char *unit;     /* SOURCE_POLICY only; the unit that activated it; borrowed */
} Source;

typedef struct ActivePolicy {
        const Policy *policy;
        const char *unit;     /* the first matching unit, for explanations */
        bool pool_only;       /* stopped but inside its pool grace period: votes for its pool only */
} ActivePolicy;

typedef struct PoolBaseline {
        uint64_t page_size_kb;
        int node;
        uint64_t pages;
} PoolBaseline;

#define RESOLVE_MAX_POOLS 32

typedef struct PoolTarget {
        uint64_t page_size_kb;
        int node;
        uint64_t baseline;
        uint64_t requested;   /* sum over policies */
        uint64_t pages;       /* baseline + requested */
        unsigned n_policies;
} PoolTarget;

typedef struct ResolveInput {
        const KnobValue *baseline;   /* [_KNOB_MAX]; UNSET where the kernel lacks the knob */
        const ActivePolicy *active;
        size_t n_active;
        const KnobValue *mitigation; /* NULL, or [_KNOB_MAX] with UNSET where it does not vote */
        const KnobValue *override;   /* NULL, or [_KNOB_MAX] with UNSET where it does not vote */
        const PoolBaseline *pool_baseline;
        size_t n_pool_baseline;
} ResolveInput;

typedef struct Target {
        KnobValue value[_KNOB_MAX];
        Source source[_KNOB_MAX];
        PoolTarget pools[RESOLVE_MAX_POOLS];
        size_t n_pools;
        bool pools_truncated; /* more (size, node) pairs than RESOLVE_MAX_POOLS */
} Target;

/* Per knob: override > strictest of (active policies, mitigation) > baseline. A Scope=service
 * policy votes on no knob (its knobs[] are unset; thpd-generator isolates its services), but its
 * pool counts like any other: a pool is machine-wide. Pools: baseline +
 * the sum of active policies' pools per (page size, node); baseline pools with no policy are
 * listed too, so restoring them is the same code path. */
void resolve(const ResolveInput *in, Target *ret);

const PoolTarget *target_find_pool(const Target *t, uint64_t page_size_kb, int node);
