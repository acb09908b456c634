/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <glib.h>

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
        /* Scope=auto: one of its running units was found with THP (it started before its
         * drop-in, or it is a unit thpd-generator cannot reach), so only a machine-wide vote
         * protects it. */
        bool unisolated;
        /* Scope=auto, set by resolve_per_service(): its services' own setting is enough, and it
         * withdraws the votes that only shaped its processes' THP (resolve_withdrawn()). */
        bool per_service;
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
        unsigned n_in_grace;  /* of those, the ones whose units stopped (ActivePolicy.pool_only) */
} PoolTarget;

typedef struct ResolveInput {
        const KnobValue *baseline;   /* [_KNOB_MAX]; UNSET where the kernel lacks the knob */
        const ActivePolicy *active;
        size_t n_active;
        const KnobValue *mitigation; /* NULL, or [_KNOB_MAX] with UNSET where it does not vote */
        const KnobValue *override;   /* NULL, or [_KNOB_MAX] with UNSET where it does not vote */
        const PoolBaseline *pool_baseline;
        size_t n_pool_baseline;
        /* khugepaged collapses to mTHP sizes on this kernel (7.2; the sysfs adapter probes
         * hugepages-<N>kB/stats/collapse_exceed_none_pte); pmd_knob, the per-size enabled knob of
         * the PMD size, which khugepaged always collapsed to; present, the knobs this kernel has
         * (NULL: all): what resolve_mthp_collapse_size() needs. */
        bool mthp_collapse;
        Knob pmd_knob;
        const bool *present;
} ResolveInput;

typedef struct Target {
        KnobValue value[_KNOB_MAX];
        Source source[_KNOB_MAX];
        PoolTarget pools[RESOLVE_MAX_POOLS];
        size_t n_pools;
        bool pools_truncated; /* more (size, node) pairs than RESOLVE_MAX_POOLS */
        /* The max_ptes_none the votes chose, where resolve_max_ptes_none() moved it to the
         * value in value[]; UNSET where it was not moved. */
        KnobValue max_ptes_none_voted;
} Target;

/* Which Scope=auto policies are met per service: those whose Enabled= is stricter than the
 * machine-wide value the others need. That value is the strictest Enabled= of the policies that
 * vote machine-wide whatever happens (Scope=global, and Scope=auto ones with an unisolated unit);
 * with none, the loosest Scope=auto value, since a policy asking its processes for madvise needs
 * at least madvise machine-wide. So a host with only Redis keeps never machine-wide, and MongoDB
 * 8's always next to it leaves Redis's processes, not the machine, without THP. Sets
 * per_service in place; called before resolve(). */
void resolve_per_service(ActivePolicy *active, size_t n_active);

/* Whether a policy met per service withdraws its vote on k: with never its processes allocate
 * no THP at all, so its Enabled=, Defrag=, per-size Enabled.<size>=, ShrinkUnderused=,
 * UseZeroPage= and khugepaged votes shaped nothing but everyone else's; with madvise its
 * processes still fault in huge pages where they advise, so it withdraws only the Enabled=
 * values. shmem_enabled, global and per size (ShmemEnabled.<size>=), reaches shared memory
 * (tmpfs files, SysV segments, memfd) that other processes may fault in too, and pools are
 * memory set aside: both stay votes. */
bool resolve_withdrawn(const ActivePolicy *a, Knob k);

/* Per knob: override > strictest of (active policies, mitigation) > baseline; then
 * khugepaged/max_ptes_none as resolve_max_ptes_none() says, unless it is the baseline's (thpd
 * leaves the admin's own value alone: Explain says what the kernel makes of it). A Scope=service
 * policy votes on no knob (its knobs[] are unset; thpd-generator isolates its services), nor does
 * a Scope=auto one met per service on the knobs it withdraws, but their pools count like any
 * other: a pool is machine-wide. Pools: baseline +
 * the sum of active policies' pools per (page size, node); baseline pools with no policy are
 * listed too, so restoring them is the same code path. */
void resolve(const ResolveInput *in, Target *ret);

/* Whether khugepaged's mTHP collapse applies: the kernel has it and some per-size enabled other
 * than the PMD size's is on (not never; inherit follows the global enabled). Returns the first
 * such per-size knob, or _KNOB_INVALID. value is the resolved target, with enabled and the
 * per-size knobs resolved. */
Knob resolve_mthp_collapse_size(const ResolveInput *in, const KnobValue value[_KNOB_MAX]);

/* khugepaged's mTHP collapse honours max_ptes_none only at 0 and 511: for any other value the
 * kernel logs "mTHP collapse does not support max_ptes_none values other than 0 or 511" once and
 * collapses as with 0, while the file still reads the value written. So, while that collapse
 * applies (collapse_on), a value between is moved to the allowed value in the stricter direction
 * (lower is stricter: 0), which thpd then writes and holds as its own. UNSET stays UNSET. */
KnobValue resolve_max_ptes_none(KnobValue v, bool collapse_on);

/* One vote on a knob, as resolve() weighed it. */
typedef struct Vote {
        KnobValue value;
        Source source; /* policy and unit borrowed from the input */
        bool winning;  /* the one resolve() took */
} Vote;

/* The votes on k that resolve(in) weighs, for explanations: the baseline, the active policies
 * that vote on k (not those holding only a pool, nor a vote withdrawn per service) in policy
 * order, storm mitigation, the override; each offered, whether or not it was counted (the
 * override outvotes mitigation without weighing it). t is what resolve(in) gave: the vote it took
 * is marked winning. Returns a GArray of Vote. */
GArray *resolve_votes(const ResolveInput *in, const Target *t, Knob k);

const PoolTarget *target_find_pool(const Target *t, uint64_t page_size_kb, int node);
