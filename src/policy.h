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
int policy_load(const char *path, PolicyParseFlags flags, Diagnostics *diag, Policy **ret);

/* True when any Units= entry matches the unit name (fnmatch globs; "foo@.service" matches every
 * instance of the template). */
bool policy_matches_unit(const Policy *p, const char *unit);
/* One Units= entry against a unit name, as policy_matches_unit() tries each. */
bool policy_unit_pattern_matches(const char *pattern, const char *unit);

/* The policy search path, highest precedence first. */
extern const char *const policy_default_dirs[];

/* The outcome of drop-in precedence for one file name. */
typedef struct PolicyFile {
        char *name;
        char *path;          /* the winning file; NULL when masked */
        char *masked_by;     /* the /dev/null symlink or empty file that masks it, or NULL */
        GPtrArray *shadowed; /* char*: same-named files in lower directories, highest first */
} PolicyFile;

void policy_file_free(PolicyFile *f);

/* Applies systemd drop-in rules across dirs (highest precedence first): *.conf only, same name
 * in a higher directory replaces a lower one, a /dev/null symlink or an empty file masks it,
 * lexical order, untrusted (not root-owned, or group/world-writable) files and directories are
 * skipped with a diagnostic. Missing directories are fine. ret: PolicyFile*, sorted by name. */
int policy_dirs_enumerate(const char *const *dirs, Diagnostics *diag, GPtrArray **ret);

/* Enumerates and parses: ret holds Policy* of every good, unmasked file in lexical order. */
int policy_dirs_load(const char *const *dirs, Diagnostics *diag, GPtrArray **ret);

/* Whether the daemon would trust the file where it is: owned by the trusted uid, writable by
 * nobody else, in a directory that is the same. Says why not in diag, at level. False also for
 * what is not a regular file (without a diagnostic: loading it tells). */
bool policy_file_check_trusted(const char *path, DiagnosticLevel level, Diagnostics *diag);

/* The uid that owns trusted files: 0, or THPD_TRUSTED_UID for tests run without root. */
uid_t policy_trusted_uid(void);
