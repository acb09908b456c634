/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "knob.h"
#include "resolve.h"

/* The kernel's values before thpd's first write. Kept in the runtime directory so that a daemon
 * restarted after a crash restores the machine's own settings, not the ones a policy left. */

typedef struct Baseline {
        KnobValue knobs[_KNOB_MAX];              /* UNSET: the kernel lacks the knob */
        PoolBaseline pools[RESOLVE_MAX_POOLS];
        size_t n_pools;
} Baseline;

#define BASELINE_FILE "baseline"

void baseline_init(Baseline *b);
/* -ENOENT when nothing was recorded; -EBADMSG for a file we cannot trust (then record anew). */
int baseline_load(const char *runtime_dir, Baseline *ret);
/* Writes atomically (temporary file, fsync, rename): a crash mid-write leaves the old record. */
int baseline_save(const char *runtime_dir, const Baseline *b);
int baseline_remove(const char *runtime_dir);

/* Returns the recorded pool or NULL. */
const PoolBaseline *baseline_find_pool(const Baseline *b, uint64_t page_size_kb, int node);
/* Adds or replaces a pool record; -E2BIG when the table is full. */
int baseline_set_pool(Baseline *b, uint64_t page_size_kb, int node, uint64_t pages);
