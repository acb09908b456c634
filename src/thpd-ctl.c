/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <getopt.h>
#include <glib.h>

#include "config.h"
#include "ctl.h"
#include "log.h"
#include "util.h"

static const CtlVerb verbs[] = {
        { "status", 0, 0, verb_status, "",
          "Show the knobs, active policies, pools and storms", CTL_OPTION_JSON },
        { "show", 0, CTL_ARGS_ANY, verb_show, "[PROPERTY...]",
          "Show the daemon's properties as Key=Value", CTL_OPTION_JSON },
        { "list", 0, 0, verb_list, "",
          "List the policy files and whether they are active", CTL_OPTION_JSON | CTL_OPTION_NO_LEGEND },
        { "explain", 0, 1, verb_explain, "[KNOB]",
          "Show every vote on a knob and which one wins", CTL_OPTION_JSON },
        { "cat", 1, 1, verb_cat, "NAME",
          "Show the policy file in effect and what it overrides", CTL_OPTION_JSON },
        { "verify", 0, CTL_ARGS_ANY, verb_verify, "[FILE...]",
          "Check policy files; without FILE, the installed policies and their precedence", 0 },
        { "reload", 0, 0, verb_reload, "",
          "Re-read policies and settings", 0 },
        { "override", 0, CTL_ARGS_ANY, verb_override, "KNOB=VALUE...",
          "Set knobs over every policy (--for=DURATION, or --clear)", CTL_OPTION_FOR | CTL_OPTION_CLEAR },
        { "monitor", 0, 0, verb_monitor, "",
          "Follow changes and storms until interrupted", CTL_OPTION_JSON },
        { "await", 1, 1, verb_await, "UNIT",
          "Wait until the policy of UNIT is applied (for ExecStartPre=)", CTL_OPTION_JSON | CTL_OPTION_TIMEOUT },
};

static void help(void) {
        printf("thpd-ctl [OPTIONS...] COMMAND ...\n\n"
               "Query and control thpd, the Transparent Huge Pages policy daemon.\n\n"
               "Commands:\n");
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                printf("  %-8s %-16s %s\n", verbs[i].name, verbs[i].usage, verbs[i].summary);
        printf("\nOptions:\n"
               "  -h --help            Show this help\n"
               "     --version         Show the version\n"
               "     --user            Talk to the thpd on the session bus (thpd --user)\n"
               "     --json            Print JSON (status, show, list, explain, cat, monitor,\n"
               "                       await)\n"
               "     --no-legend       Omit the header and footer of list\n"
               "     --for=DURATION    How long an override lasts (30s, 10min, 2h, 1d)\n"
               "     --clear           Drop the override (override --clear)\n"
               "     --timeout=DURATION  How long await waits (default 30s)\n"
               "     --policy-dir=DIR  Search DIR instead of the default policy directories\n"
               "                       (repeatable, highest precedence first; for verify)\n"
               "\nExit status: 0 success, 1 failure, 2 bad usage, 3 thpd is not running.\n");
}

typedef enum ParseResult {
        PARSE_CONTINUE,
        PARSE_EXIT_OK,
        PARSE_EXIT_USAGE,
} ParseResult;

/* Parses DURATION of an option; logs a usage error for anything else. */
static bool parse_duration_option(const char *option, const char *value, uint64_t *ret) {
        if (parse_duration_usec(value, ret) >= 0)
                return true;
        log_error("--%s=%s is not a duration; use e.g. 30s, 10min, 2h or 1d.", option, value);
        return false;
}

static ParseResult parse_argv(int argc, char *argv[], GPtrArray *policy_dirs, CtlOptions *o) {
        enum {
                ARG_VERSION = 0x100,
                ARG_POLICY_DIR,
                ARG_USER,
                ARG_JSON,
                ARG_NO_LEGEND,
                ARG_TIMEOUT,
                ARG_FOR,
                ARG_CLEAR,
        };
        static const struct option options[] = {
                { "help",       no_argument,       NULL, 'h'            },
                { "version",    no_argument,       NULL, ARG_VERSION    },
                { "policy-dir", required_argument, NULL, ARG_POLICY_DIR },
                { "user",       no_argument,       NULL, ARG_USER       },
                { "json",       no_argument,       NULL, ARG_JSON       },
                { "no-legend",  no_argument,       NULL, ARG_NO_LEGEND  },
                { "timeout",    required_argument, NULL, ARG_TIMEOUT    },
                { "for",        required_argument, NULL, ARG_FOR        },
                { "clear",      no_argument,       NULL, ARG_CLEAR      },
                {}
        };
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return PARSE_EXIT_OK;
                case ARG_VERSION:
                        printf("thpd-ctl %s\n", THPD_VERSION);
                        return PARSE_EXIT_OK;
                case ARG_POLICY_DIR:
                        g_ptr_array_add(policy_dirs, g_strdup(optarg));
                        break;
                case ARG_USER:
                        o->user = true;
                        break;
                case ARG_JSON:
                        o->json = true;
                        break;
                case ARG_NO_LEGEND:
                        o->no_legend = true;
                        break;
                case ARG_TIMEOUT:
                        if (!parse_duration_option("timeout", optarg, &o->timeout_usec))
                                return PARSE_EXIT_USAGE;
                        if (o->timeout_usec == 0) {
                                log_error("--timeout must be longer than 0.");
                                return PARSE_EXIT_USAGE;
                        }
                        break;
                case ARG_FOR:
                        if (!parse_duration_option("for", optarg, &o->for_usec))
                                return PARSE_EXIT_USAGE;
                        o->has_for = true;
                        break;
                case ARG_CLEAR:
                        o->clear = true;
                        break;
                default:
                        /* getopt_long() has already named the bad option. */
                        return PARSE_EXIT_USAGE;
                }

        return PARSE_CONTINUE;
}

static bool verb_takes_options(const CtlOptions *o, const CtlVerb *verb) {
        const struct {
                CtlVerbOption option;
                bool given;
                const char *name;
        } table[] = {
                { CTL_OPTION_JSON, o->json, "--json" },
                { CTL_OPTION_NO_LEGEND, o->no_legend, "--no-legend" },
                { CTL_OPTION_TIMEOUT, o->timeout_usec > 0, "--timeout" },
                { CTL_OPTION_FOR, o->has_for, "--for" },
                { CTL_OPTION_CLEAR, o->clear, "--clear" },
        };

        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                if (table[i].given && !(verb->options & table[i].option)) {
                        log_error("'%s' does not take %s; see 'thpd-ctl --help'.", verb->name, table[i].name);
                        return false;
                }
        return true;
}

static int dispatch(const CtlOptions *o, int argc, char *argv[]) {
        const CtlVerb *verb = NULL;
        unsigned n_args;

        if (argc < 1) {
                log_error("Missing command; see 'thpd-ctl --help'.");
                return CTL_EXIT_USAGE;
        }
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(verbs[i].name, argv[0]))
                        verb = &verbs[i];
        if (!verb) {
                log_error("Unknown command '%s'; see 'thpd-ctl --help'.", argv[0]);
                return CTL_EXIT_USAGE;
        }

        if (!verb_takes_options(o, verb))
                return CTL_EXIT_USAGE;

        n_args = (unsigned) argc - 1;
        if (n_args < verb->min_args || n_args > verb->max_args) {
                log_error("Wrong number of arguments for '%s'; usage: thpd-ctl %s %s", verb->name, verb->name,
                          verb->usage);
                return CTL_EXIT_USAGE;
        }
        return verb->run(o, (int) n_args, argv + 1);
}

int main(int argc, char *argv[]) {
        g_autoptr(GPtrArray) policy_dirs = g_ptr_array_new_with_free_func(g_free);
        CtlOptions o = {};
        ParseResult p;

        p = parse_argv(argc, argv, policy_dirs, &o);
        if (p == PARSE_EXIT_OK)
                return CTL_EXIT_OK;
        if (p == PARSE_EXIT_USAGE)
                return CTL_EXIT_USAGE;

        if (policy_dirs->len > 0) {
                g_ptr_array_add(policy_dirs, NULL);
                o.policy_dirs = (char **) policy_dirs->pdata;
        }

        return dispatch(&o, argc - optind, argv + optind);
}
