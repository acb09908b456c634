/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "diagnostics.h"
#include "drift.h"
#include "knob.h"
#include "storm-classify.h"

/* Daemon settings from thpd.conf (and thpd.conf.d/ drop-ins). */

#define SETTINGS_DEFAULT_POOL_GRACE_USEC (30 * UINT64_C(1000000))
/* An Await() call thpd has not answered by then gets an error: a caller that never leaves the
 * bus must not hold its slot for ever. Longer than any sensible start timeout. */
#define SETTINGS_DEFAULT_AWAIT_TIMEOUT_USEC (5 * 60 * UINT64_C(1000000))
#define SETTINGS_DEFAULT_POOL_ALLOC_RETRIES 3U
#define SETTINGS_MAX_POOL_ALLOC_RETRIES 100U
#define SETTINGS_MAX_DRIFT_RESTORES 1000U

typedef struct Settings {
        bool restore_on_exit;
        uint64_t pool_grace_usec;
        uint64_t await_timeout_usec;      /* [Daemon] AwaitTimeout= */
        unsigned pool_alloc_retries;
        int log_level;                    /* -1: not configured */
        KnobValue baseline[_KNOB_MAX];    /* explicit baseline values; UNSET = the kernel's own */
        bool storm_watch;                 /* [Storm] Watch=; false: no storm watcher at all */
        StormConfig storm;                /* [Storm], the rest */
        char *metrics_textfile;           /* [Metrics] TextfilePath=; NULL: no metrics file */
        DriftSettings drift;              /* [Drift] */
} Settings;

void settings_init(Settings *c);
/* Frees what settings_init() and settings_load_files() allocated; settings_init() may follow. */
void settings_done(Settings *c);

/* Reads files in order, later ones overriding earlier ones key by key. A file that cannot be
 * parsed leaves the settings it did not reach untouched; problems go to diag as FILE:LINE. */
int settings_load_files(Settings *c, const char *const *paths, Diagnostics *diag);

/* The default set: <sysconfdir>/thpd/thpd.conf, then thpd.conf.d/\*.conf in lexical order. */
int settings_default_paths(char ***ret);
