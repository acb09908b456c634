/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <getopt.h>
#include <glib.h>

#include "config.h"
#include "ctl.h"
#include "log.h"
#include "util.h"

static const CtlVerb verbs[] = {
        { "verify", 0, CTL_ARGS_ANY, verb_verify, "[FILE...]",
          "Check policy files; without FILE, the installed policies and their precedence" },
};

static void help(void) {
        printf("thpd-ctl [OPTIONS...] COMMAND ...\n\n"
               "Query and control thpd, the Transparent Huge Pages policy daemon.\n\n"
               "Commands:\n");
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                printf("  %s %-16s %s\n", verbs[i].name, verbs[i].usage, verbs[i].summary);
        printf("\nOptions:\n"
               "  -h --help            Show this help\n"
               "     --version         Show the version\n"
               "     --policy-dir=DIR  Search DIR instead of the default policy directories\n"
               "                       (repeatable, highest precedence first; for verify)\n");
}

typedef enum ParseResult {
        PARSE_CONTINUE,
        PARSE_EXIT_OK,
        PARSE_EXIT_USAGE,
} ParseResult;

static ParseResult parse_argv(int argc, char *argv[], GPtrArray *policy_dirs) {
        enum {
                ARG_VERSION = 0x100,
                ARG_POLICY_DIR,
        };
        static const struct option options[] = {
                { "help",       no_argument,       NULL, 'h'            },
                { "version",    no_argument,       NULL, ARG_VERSION    },
                { "policy-dir", required_argument, NULL, ARG_POLICY_DIR },
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
                default:
                        /* getopt_long() has already named the bad option. */
                        return PARSE_EXIT_USAGE;
                }

        return PARSE_CONTINUE;
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

        p = parse_argv(argc, argv, policy_dirs);
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
