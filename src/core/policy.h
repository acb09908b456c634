/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <glib.h>

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
                               * thpd-generator(8)); votes on no knob, but its pool still counts;
                               * with Enabled=always, policy_inverts() */
        POLICY_SCOPE_AUTO,    /* isolates its services too, and votes machine-wide unless another
                               * active policy wants a looser Enabled= (resolve_per_service()) */
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
        /* Bit k set: knobs[k] is UNSET, so resolution need not look at it (policies vote on a
         * few of the knobs, and every active one is resolved at every apply). The parser sets
         * it; 0 claims nothing, and every knob is looked at. */
        uint64_t unset_knobs;
        unsigned knob_lines[_KNOB_MAX]; /* where each vote was set, for explanations */
        bool has_pool;
        PoolRequest pool;
        PolicyScope scope;
        /* POLICY_SCOPE_SERVICE and _AUTO: the Enabled= value its services get (never or
         * madvise, or always with _SERVICE). With _SERVICE knobs[] is all UNSET, so nothing votes
         * on the global knobs by mistake, unless it wants always (policy_inverts()); with _AUTO
         * knobs[] keeps the votes it casts while it is not met per service. */
        KnobValue service_thp;
} Policy;

_Static_assert(_KNOB_MAX < 64, "Policy.unset_knobs has a bit per knob");

Policy *policy_free(Policy *p);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Policy, policy_free)
/* For arrays of policies (GDestroyNotify). */
void policy_free_void(void *p);

typedef enum PolicyParseFlags {
        /* Unknown sections and keys are errors (thpd-ctl verify: a typo must not ship) rather
         * than warnings (the daemon: a policy written for a newer thpd still loads). */
        POLICY_PARSE_STRICT = 1 << 0,
} PolicyParseFlags;

/* Parses one policy from its text. "path" names the file in diagnostics. Every problem is
 * added to diag (which may be NULL) as FILE:LINE; returns -EINVAL (ret untouched) when there is
 * at least one error, so a bad file never half-applies. Warnings (unknown keys, unless strict)
 * do not fail the parse. */
int policy_parse_text(const char *text, size_t size, const char *path, PolicyParseFlags flags, Diagnostics *diag,
                      Policy **ret);

/* The same parse, fed the file piece by piece as it is read: after binary data or too many
 * errors the parser has given up, and the rest of the file (say a 100 MB log dropped into a
 * policy directory) need not be read at all. */
typedef struct PolicyParser PolicyParser;

int policy_parser_new(const char *path, PolicyParseFlags flags, Diagnostics *diag, PolicyParser **ret);
PolicyParser *policy_parser_free(PolicyParser *p);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PolicyParser, policy_parser_free)
/* Takes the next bytes of the file, in pieces of any size. Returns 1 while it wants more, 0 once
 * the rest of the file would only be ignored. */
int policy_parser_feed(PolicyParser *p, const char *data, size_t size);
/* The file could not be read to its end (error: an errno): reported, and the parse fails. */
void policy_parser_read_error(PolicyParser *p, int error);
/* The end of the file: as policy_parse_text() returns. Call it once, then free the parser. */
int policy_parser_finish(PolicyParser *p, Policy **ret);

/* Scope=service or Scope=auto with never or madvise: thpd-generator isolates its services'
 * processes. */
bool policy_isolates(const Policy *p);
/* Scope=service with Enabled=always: always for its services alone. It votes machine-wide as a
 * Scope=global policy does, and thpd-generator gives every other service MemoryTHP=madvise
 * where the manager and the kernel allow it (docs/scope-service.md). */
bool policy_inverts(const Policy *p);

/* True when any Units= entry matches the unit name (fnmatch globs; "foo@.service" matches every
 * instance of the template). */
bool policy_matches_unit(const Policy *p, const char *unit);
/* One Units= entry against a unit name, as policy_matches_unit() tries each. */
bool policy_unit_pattern_matches(const char *pattern, const char *unit);
