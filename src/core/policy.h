/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <glib.h>
#include <stdio.h>

#include "diagnostics.h"
#include "knob.h"

/* One policy drop-in: which units it matches and the knob values / hugetlb pool it wants. */

#define POOL_NODE_ANY (-1)

typedef struct PoolRequest {
        uint64_t page_size_kb; /* 2048 unless PageSize= says otherwise */
        int node;              /* POOL_NODE_ANY: the global pool */
        uint64_t pages;        /* Pages=, or Size= rounded up to whole pages */
} PoolRequest;

/* Scope=: whom the [TransparentHugePages] Enabled= value is for. */
typedef enum PolicyScope {
        POLICY_SCOPE_GLOBAL,  /* votes on the machine-wide knobs (the default) */
        POLICY_SCOPE_SERVICE, /* isolates the processes of its services only (prctl at exec, see
                               * thpd-generator(8)); votes on no knob, but its pool still counts */
        _POLICY_SCOPE_MAX,
        _POLICY_SCOPE_INVALID = -EINVAL,
} PolicyScope;

const char *policy_scope_to_string(PolicyScope s);
PolicyScope policy_scope_from_string(const char *s);

typedef struct Policy {
        char *name;        /* file name ("redis.conf"): a policy's identity across directories */
        char *path;        /* the file it was read from */
        char *description;
        char **units;      /* NULL-terminated unit names or globs */
        KnobValue knobs[_KNOB_MAX];     /* KNOB_VALUE_UNSET where the policy does not vote */
        unsigned knob_lines[_KNOB_MAX]; /* where each vote was set, for explanations */
        bool has_pool;
        PoolRequest pool;
        PolicyScope scope;
        /* POLICY_SCOPE_SERVICE: the Enabled= value its services get (never or madvise);
         * knobs[] is then all UNSET, so nothing votes on the global knobs by mistake. */
        KnobValue service_thp;
} Policy;

Policy *policy_free(Policy *p);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Policy, policy_free)

typedef enum PolicyParseFlags {
        /* Unknown sections and keys are errors (thpd-ctl verify: a typo must not ship) rather
         * than warnings (the daemon: a policy written for a newer thpd still loads). */
        POLICY_PARSE_STRICT = 1 << 0,
} PolicyParseFlags;

/* Parses one policy. "path" names the file in diagnostics. Every problem is added to diag as
 * FILE:LINE; returns -EINVAL (ret untouched) when there is at least one error, so a bad file
 * never half-applies. Warnings (unknown keys, unless strict) do not fail the parse. */
int policy_parse_file(FILE *f, const char *path, PolicyParseFlags flags, Diagnostics *diag, Policy **ret);

/* True when any Units= entry matches the unit name (fnmatch globs; "foo@.service" matches every
 * instance of the template). */
bool policy_matches_unit(const Policy *p, const char *unit);
/* One Units= entry against a unit name, as policy_matches_unit() tries each. */
bool policy_unit_pattern_matches(const char *pattern, const char *unit);
