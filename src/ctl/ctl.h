/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "ctl-terminal.h"
#include "util.h"

/* thpd-ctl: thpd-ctl.c parses the global options and dispatches to a verb; each verb lives in its
 * own ctl-*.c file and is declared here. */

/* The one exit-code table of every verb; thpd-ctl(1) and --help print it. */
typedef enum CtlExit {
        CTL_EXIT_OK = 0,
        CTL_EXIT_FAILURE = 1,     /* thpd or the kernel refused, a policy file is broken, a wait timed out */
        CTL_EXIT_USAGE = 2,       /* the command line is wrong: a verb, option, property, knob or value */
        CTL_EXIT_NOT_RUNNING = 3, /* the daemon is not on the bus */
} CtlExit;

typedef struct CtlOptions {
        char **policy_dirs; /* --policy-dir=, NULL-terminated; NULL: the default search path */
        bool user;          /* --user: the daemon on the session bus */
        bool json;          /* --json */
        bool no_legend;     /* --no-legend */
        bool full;          /* -l/--full: do not cut lines at the terminal width */
        char **properties;  /* -p/--property= (show), NULL-terminated; NULL: all */
        bool value;         /* --value (show) */
        bool replace;       /* --replace (override) */
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
        CTL_OPTION_PROPERTY = 1 << 5,
        CTL_OPTION_VALUE = 1 << 6,
        CTL_OPTION_REPLACE = 1 << 7,
        CTL_OPTION_POLICY_DIR = 1 << 8,
} CtlVerbOption;

/* How a verb's text output meets a terminal. */
typedef enum CtlVerbFlags {
        CTL_VERB_CUT_LINES = 1 << 0, /* a table or summary: lines are cut at the terminal width */
} CtlVerbFlags;

/* argv holds the verb's arguments only (not the verb); the verb's text goes to out. Returns a
 * CtlExit code. */
typedef int (*CtlVerbFunction)(const CtlOptions *o, CtlOutput *out, int argc, char *argv[]);

#define CTL_ARGS_ANY UINT_MAX

typedef struct CtlVerb {
        const char *name;
        unsigned min_args, max_args;
        CtlVerbFunction run;
        const char *usage;   /* argument synopsis for --help */
        const char *summary; /* one line for --help */
        unsigned options;    /* CtlVerbOption */
        unsigned flags;      /* CtlVerbFlags */
} CtlVerb;

/* Logs a usage error and returns CTL_EXIT_USAGE; the message ends with where to read more. */
int ctl_usage_error(const char *format, ...) _printf_(1, 2);

int verb_verify(const CtlOptions *o, CtlOutput *out, int argc, char *argv[]);
int verb_status(const CtlOptions *o, CtlOutput *out, int argc, char *argv[]);
int verb_show(const CtlOptions *o, CtlOutput *out, int argc, char *argv[]);
int verb_list(const CtlOptions *o, CtlOutput *out, int argc, char *argv[]);
int verb_cat(const CtlOptions *o, CtlOutput *out, int argc, char *argv[]);
int verb_explain(const CtlOptions *o, CtlOutput *out, int argc, char *argv[]);
int verb_reload(const CtlOptions *o, CtlOutput *out, int argc, char *argv[]);
int verb_override(const CtlOptions *o, CtlOutput *out, int argc, char *argv[]);
int verb_monitor(const CtlOptions *o, CtlOutput *out, int argc, char *argv[]);
int verb_await(const CtlOptions *o, CtlOutput *out, int argc, char *argv[]);
int verb_metrics(const CtlOptions *o, CtlOutput *out, int argc, char *argv[]);
int verb_help(const CtlOptions *o, CtlOutput *out, int argc, char *argv[]);
