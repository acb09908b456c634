/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "diagnostics.h"
#include "policy.h"

/* Opens and parses one policy file, reading only as far as the parser wants (PolicyParser). */
int policy_load(const char *path, PolicyParseFlags flags, Diagnostics *diag, Policy **ret);

/* The policy search path, highest precedence first. */
extern const char *const policy_default_dirs[];

/* The outcome of drop-in precedence for one file name. */
typedef struct PolicyFile {
        char *name;
        char *path;          /* the winning file; NULL when masked */
        char *masked_by;     /* the /dev/null symlink or empty file that masks it, or NULL */
        GPtrArray *shadowed; /* char*: same-named files in lower directories, highest first */
} PolicyFile;

PolicyFile *policy_file_free(PolicyFile *f);
/* For arrays of them (GDestroyNotify). */
void policy_file_free_void(void *p);

/* Applies systemd drop-in rules across dirs (highest precedence first): *.conf only, same name
 * in a higher directory replaces a lower one, a /dev/null symlink or an empty file masks it,
 * lexical order, untrusted (not root-owned, or group/world-writable) files and directories are
 * skipped with a diagnostic. Missing directories are fine. ret: PolicyFile*, sorted by name.
 * dirs (NULL-terminated) and ret must not be NULL. */
int policy_dirs_enumerate(const char *const *dirs, Diagnostics *diag, GPtrArray **ret);

/* Enumerates and parses: ret holds Policy* of every good, unmasked file in lexical order. */
int policy_dirs_load(const char *const *dirs, Diagnostics *diag, GPtrArray **ret);

/* Whether the daemon would trust the file where it is: owned by the trusted uid, writable by
 * nobody else, in a directory that is the same. Says why not in diag, at level. False also for
 * what is not a regular file (without a diagnostic: loading it tells). */
bool policy_file_check_trusted(const char *path, DiagnosticLevel level, Diagnostics *diag);

/* The uid that owns trusted files: 0, or THPD_TRUSTED_UID for tests run without root. */
uid_t policy_trusted_uid(void);
