/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <getopt.h>
#include <glib.h>
#include <stdarg.h>

#include "config.h"
#include "ctl-bus.h"
#include "ctl.h"
#include "log.h"
#include "util.h"

static const CtlVerb verbs[] = {
        { "status", 0, 0, verb_status, "",
          "Show the knobs, active policies, pools, storms and policy problems", CTL_OPTION_JSON, CTL_VERB_CUT_LINES },
        { "show", 0, CTL_ARGS_ANY, verb_show, "[PROPERTY...]",
          "Show the daemon's properties as Key=Value", CTL_OPTION_JSON | CTL_OPTION_PROPERTY | CTL_OPTION_VALUE, 0 },
        { "list", 0, 0, verb_list, "",
          "List the policy files, their state and problems", CTL_OPTION_JSON | CTL_OPTION_NO_LEGEND, CTL_VERB_CUT_LINES },
        { "explain", 0, 1, verb_explain, "[KNOB]",
          "Show every vote on a knob and which one wins", CTL_OPTION_JSON, CTL_VERB_CUT_LINES },
        { "cat", 1, 1, verb_cat, "NAME",
          "Show the policy file in effect, what it overrides and its problems", CTL_OPTION_JSON, 0 },
        { "verify", 0, CTL_ARGS_ANY, verb_verify, "[FILE...]",
          "Check policy files strictly; without FILE, the installed ones", CTL_OPTION_JSON | CTL_OPTION_POLICY_DIR, 0 },
        { "reload", 0, 0, verb_reload, "",
          "Re-read policies and settings; fail if a policy is broken", 0, 0 },
        { "override", 0, CTL_ARGS_ANY, verb_override, "KNOB=VALUE...",
          "Add knob values to the override (--for=, --replace, --clear)",
          CTL_OPTION_FOR | CTL_OPTION_CLEAR | CTL_OPTION_REPLACE, 0 },
        { "monitor", 0, 0, verb_monitor, "",
          "Follow changes and storms until interrupted", CTL_OPTION_JSON, 0 },
        { "await", 1, 1, verb_await, "UNIT",
          "Wait until the policy of UNIT is applied (for ExecStartPre=)", CTL_OPTION_JSON | CTL_OPTION_TIMEOUT, 0 },
        { "metrics", 0, 0, verb_metrics, "",
          "Print the state as Prometheus metrics (text exposition format)", 0, 0 },
        { "help", 0, 0, verb_help, "",
          "Show this help", 0, 0 },
};

static void help(FILE *f) {
        fprintf(f, "thpd-ctl [OPTIONS...] COMMAND ...\n\n"
                "Query and control thpd, the Transparent Huge Pages policy daemon.\n\n"
                "Commands:\n");
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                fprintf(f, "  %-8s %-16s %s\n", verbs[i].name, verbs[i].usage, verbs[i].summary);
        fprintf(f, "\nOptions:\n"
                "  -h --help            Show this help\n"
                "     --version         Show the version\n"
                "     --user            Talk to the thpd on the session bus (thpd --user)\n"
                "     --json            Print JSON (status, show, list, explain, cat, verify,\n"
                "                       monitor, await); the schema is in thpd-ctl(1)\n"
                "     --no-legend       Omit the header and footer of list\n"
                "  -l --full            Do not cut lines at the terminal width or shorten lists\n"
                "     --no-pager        Accepted for habit's sake: thpd-ctl never pages\n"
                "  -p --property=NAME   Show only these properties (show; repeatable, or NAME,NAME)\n"
                "     --value           Print values only, without Key= (show)\n"
                "     --for=DURATION    How long an override lasts (30s, 10min, 2h, 1d; at most 365d)\n"
                "     --replace         Replace the whole override instead of adding to it\n"
                "     --clear           Drop the override (override --clear)\n"
                "     --timeout=DURATION  How long await waits (default 30s)\n"
                "     --policy-dir=DIR  Search DIR instead of the default policy directories\n"
                "                       (verify; repeatable, highest precedence first)\n"
                "\nExit status, the same for every command:\n"
                "  0  success\n"
                "  1  failure: thpd or the kernel refused, a policy file is broken, a wait timed out\n"
                "  2  bad usage: an unknown command, option, property or knob, or a bad value\n"
                "  3  thpd is not running\n"
                "\nSee thpd-ctl(1) for details.\n");
}

int verb_help(const CtlOptions *o, CtlOutput *out, int argc, char *argv[]) {
        help(out->f);
        return ctl_output_flush(out) == 0 ? CTL_EXIT_OK : CTL_EXIT_FAILURE;
}

int ctl_usage_error(const char *format, ...) {
        g_autofree char *message = NULL;
        va_list ap;

        va_start(ap, format);
        message = g_strdup_vprintf(format, ap);
        va_end(ap);
        log_error("%s See 'thpd-ctl --help' and thpd-ctl(1).", message);
        return CTL_EXIT_USAGE;
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
        ctl_usage_error("--%s=%s is not a duration; use e.g. 30s, 10min, 2h or 1d.", option, value);
        return false;
}

/* -p NAME,NAME and repeated -p add up, as with systemctl show. */
static void add_properties(GPtrArray *properties, const char *value) {
        g_auto(GStrv) names = g_strsplit(value, ",", -1);

        for (char **n = names; *n; n++)
                if (**n)
                        g_ptr_array_add(properties, g_strdup(*n));
}

static ParseResult parse_argv(int argc, char *argv[], GPtrArray *policy_dirs, GPtrArray *properties, CtlOptions *o) {
        enum {
                ARG_VERSION = 0x100,
                ARG_POLICY_DIR,
                ARG_USER,
                ARG_JSON,
                ARG_NO_LEGEND,
                ARG_NO_PAGER,
                ARG_VALUE,
                ARG_TIMEOUT,
                ARG_FOR,
                ARG_CLEAR,
                ARG_REPLACE,
        };
        static const struct option options[] = {
                { "help",       no_argument,       NULL, 'h'            },
                { "version",    no_argument,       NULL, ARG_VERSION    },
                { "policy-dir", required_argument, NULL, ARG_POLICY_DIR },
                { "user",       no_argument,       NULL, ARG_USER       },
                { "json",       no_argument,       NULL, ARG_JSON       },
                { "no-legend",  no_argument,       NULL, ARG_NO_LEGEND  },
                { "no-pager",   no_argument,       NULL, ARG_NO_PAGER   },
                { "full",       no_argument,       NULL, 'l'            },
                { "property",   required_argument, NULL, 'p'            },
                { "value",      no_argument,       NULL, ARG_VALUE      },
                { "timeout",    required_argument, NULL, ARG_TIMEOUT    },
                { "for",        required_argument, NULL, ARG_FOR        },
                { "clear",      no_argument,       NULL, ARG_CLEAR      },
                { "replace",    no_argument,       NULL, ARG_REPLACE    },
                {}
        };
        int c;

        /* getopt_long() names a bad option itself; opterr stays on. */
        while ((c = getopt_long(argc, argv, "hlp:", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help(stdout);
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
                case ARG_NO_PAGER:
                        break;
                case 'l':
                        o->full = true;
                        break;
                case 'p':
                        add_properties(properties, optarg);
                        break;
                case ARG_VALUE:
                        o->value = true;
                        break;
                case ARG_TIMEOUT:
                        if (!parse_duration_option("timeout", optarg, &o->timeout_usec))
                                return PARSE_EXIT_USAGE;
                        if (o->timeout_usec == 0) {
                                ctl_usage_error("--timeout must be longer than 0.");
                                return PARSE_EXIT_USAGE;
                        }
                        break;
                case ARG_FOR:
                        if (!parse_duration_option("for", optarg, &o->for_usec))
                                return PARSE_EXIT_USAGE;
                        /* thpd's limit, checked here too so that every bad --for is a usage error. */
                        if (o->for_usec > CTL_OVERRIDE_MAX_USEC) {
                                ctl_usage_error("--for=%s is longer than an override may last (365d).", optarg);
                                return PARSE_EXIT_USAGE;
                        }
                        o->has_for = true;
                        break;
                case ARG_CLEAR:
                        o->clear = true;
                        break;
                case ARG_REPLACE:
                        o->replace = true;
                        break;
                default:
                        /* getopt_long() has already named the bad option. */
                        ctl_usage_error("Unknown or incomplete option.");
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
                { CTL_OPTION_PROPERTY, o->properties != NULL, "--property" },
                { CTL_OPTION_VALUE, o->value, "--value" },
                { CTL_OPTION_REPLACE, o->replace, "--replace" },
                { CTL_OPTION_POLICY_DIR, o->policy_dirs != NULL, "--policy-dir" },
        };

        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                if (table[i].given && !(verb->options & table[i].option)) {
                        ctl_usage_error("'%s' does not take %s.", verb->name, table[i].name);
                        return false;
                }
        return true;
}

static int dispatch(const CtlOptions *o, int argc, char *argv[]) {
        const CtlVerb *verb = NULL;
        unsigned n_args;
        CtlOutput out;
        int r;

        if (argc < 1)
                return ctl_usage_error("Missing command.");
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(verbs[i].name, argv[0]))
                        verb = &verbs[i];
        if (!verb) {
                const char *names[ELEMENTSOF(verbs)], *match;

                for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                        names[i] = verbs[i].name;
                match = closest_match(argv[0], names, ELEMENTSOF(verbs));
                if (match)
                        return ctl_usage_error("Unknown command '%s'; did you mean '%s'?", argv[0], match);
                return ctl_usage_error("Unknown command '%s'.", argv[0]);
        }

        if (!verb_takes_options(o, verb))
                return CTL_EXIT_USAGE;

        n_args = (unsigned) argc - 1;
        if (n_args < verb->min_args || n_args > verb->max_args)
                return ctl_usage_error("Wrong number of arguments for '%s'; usage: thpd-ctl %s%s%s.", verb->name,
                                       verb->name, verb->usage[0] ? " " : "", verb->usage);

        /* A table or summary is cut at the terminal's width, as systemctl does; what scripts read
         * (JSON, --full) never is. */
        ctl_output_init(&out, stdout,
                        (verb->flags & CTL_VERB_CUT_LINES) && !o->full && !o->json ? ctl_output_columns(stdout) : 0);
        r = verb->run(o, &out, (int) n_args, argv + 1);
        if (ctl_output_done(&out) < 0 && r == CTL_EXIT_OK) {
                log_error("Cannot write the output.");
                r = CTL_EXIT_FAILURE;
        }
        return r;
}

int main(int argc, char *argv[]) {
        g_autoptr(GPtrArray) policy_dirs = g_ptr_array_new_with_free_func(g_free);
        g_autoptr(GPtrArray) properties = g_ptr_array_new_with_free_func(g_free);
        CtlOptions o = {};
        ParseResult p;

        p = parse_argv(argc, argv, policy_dirs, properties, &o);
        if (p == PARSE_EXIT_OK)
                return CTL_EXIT_OK;
        if (p == PARSE_EXIT_USAGE)
                return CTL_EXIT_USAGE;

        if (policy_dirs->len > 0) {
                g_ptr_array_add(policy_dirs, NULL);
                o.policy_dirs = (char **) policy_dirs->pdata;
        }
        if (properties->len > 0) {
                g_ptr_array_add(properties, NULL);
                o.properties = (char **) properties->pdata;
        }

        return dispatch(&o, argc - optind, argv + optind);
}
