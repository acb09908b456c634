/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

/* thpd-ctl: thpd-ctl.c parses the global options and dispatches to a verb; each verb lives in its
 * own ctl-*.c file and is declared here. */

typedef enum CtlExit {
        CTL_EXIT_OK = 0,
        CTL_EXIT_FAILURE = 1,
        CTL_EXIT_USAGE = 2,
        CTL_EXIT_NOT_RUNNING = 3, /* the daemon is not on the bus */
} CtlExit;

typedef struct CtlOptions {
        char **policy_dirs; /* --policy-dir=, NULL-terminated; NULL: the default search path */
        bool user;          /* --user: the daemon on the session bus */
        bool json;          /* --json */
        bool no_legend;     /* --no-legend */
        uint64_t timeout_usec;  /* --timeout= (await); 0: the default */
        bool has_for;
        uint64_t for_usec;      /* --for= (override) */
        bool clear;             /* --clear (override) */
} CtlOptions;

/* The verb-specific options a verb accepts; any other one is a usage error. */
typedef enum CtlVerbOption {
        CTL_OPTION_JSON = 1 << 0,
        CTL_OPTION_NO_LEGEND = 1 << 1,
        CTL_OPTION_TIMEOUT = 1 << 2,
        CTL_OPTION_FOR = 1 << 3,
        CTL_OPTION_CLEAR = 1 << 4,
} CtlVerbOption;

/* argv holds the verb's arguments only (not the verb); returns a CtlExit code. */
typedef int (*CtlVerbFunction)(const CtlOptions *o, int argc, char *argv[]);

#define CTL_ARGS_ANY UINT_MAX

typedef struct CtlVerb {
        const char *name;
        unsigned min_args, max_args;
        CtlVerbFunction run;
        const char *usage;   /* argument synopsis for --help */
        const char *summary; /* one line for --help */
        unsigned options;    /* CtlVerbOption */
} CtlVerb;

int verb_verify(const CtlOptions *o, int argc, char *argv[]);
int verb_status(const CtlOptions *o, int argc, char *argv[]);
int verb_show(const CtlOptions *o, int argc, char *argv[]);
int verb_list(const CtlOptions *o, int argc, char *argv[]);
int verb_cat(const CtlOptions *o, int argc, char *argv[]);
int verb_explain(const CtlOptions *o, int argc, char *argv[]);
int verb_reload(const CtlOptions *o, int argc, char *argv[]);
int verb_override(const CtlOptions *o, int argc, char *argv[]);
int verb_monitor(const CtlOptions *o, int argc, char *argv[]);
int verb_await(const CtlOptions *o, int argc, char *argv[]);
