/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <limits.h>

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
} CtlOptions;

/* argv holds the verb's arguments only (not the verb); returns a CtlExit code. */
typedef int (*CtlVerbFunction)(const CtlOptions *o, int argc, char *argv[]);

#define CTL_ARGS_ANY UINT_MAX

typedef struct CtlVerb {
        const char *name;
        unsigned min_args, max_args;
        CtlVerbFunction run;
        const char *usage;   /* argument synopsis for --help */
        const char *summary; /* one line for --help */
} CtlVerb;

int verb_verify(const CtlOptions *o, int argc, char *argv[]);
