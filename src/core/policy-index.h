/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <glib.h>
#include <stdbool.h>

#include "policy.h"

/* Which policies match a unit name, without trying every policy: Units= entries that are plain
 * names are found by hashing the unit name, template entries ("foo@.service") by hashing the
 * part up to its '@', and only entries with glob characters are tried one by one. Gives exactly
 * policy_matches_unit()'s answers. Holds pointers to the policies, which must outlive it. */
typedef struct PolicyIndex PolicyIndex;

PolicyIndex *policy_index_new(const GPtrArray *policies);
PolicyIndex *policy_index_free(PolicyIndex *idx);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PolicyIndex, policy_index_free)

/* Appends the policies that match unit to out, each once, in the order of the policies array
 * the index was built from; returns how many it appended. */
unsigned policy_index_lookup(const PolicyIndex *idx, const char *unit, GPtrArray *out);
bool policy_index_matches(const PolicyIndex *idx, const char *unit);
/* The position of p in the array the index was built from; -1 when it is not in it. */
int policy_index_position(const PolicyIndex *idx, const Policy *p);
