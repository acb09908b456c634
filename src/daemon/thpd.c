/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <getopt.h>
#include <signal.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include "baseline.h"
#include "config.h"
#include "log.h"
#include "daemon-listeners.h"
#include "manager.h"
#include "runtime-file.h"
#include "unit-record.h"
#include "util.h"

static const char *arg_sysfs = "/sys";
static const char *arg_procfs = "/proc";
static const char *arg_cgroupfs = "/sys/fs/cgroup";
static const char *arg_runtime_dir = "/run/thpd";
static const char *arg_config;
static GPtrArray *arg_policy_dirs;
static bool arg_user;
static bool arg_no_restore;

static void help(void) {
        printf("Usage: thpd [OPTIONS]\n\n"
               "Sets Transparent Huge Pages and hugetlb pools from the policies of the systemd\n"
               "services that are running, and restores the baseline when they stop.\n\n"
               "  -h --help              Show this help and exit\n"
               "     --version           Show the version and exit\n"
               "     --sysfs=DIR         Root of sysfs (env THPD_SYSFS, default /sys)\n"
               "     --procfs=DIR        Root of procfs (env THPD_PROCFS, default /proc)\n"
               "     --cgroupfs=DIR      Root of the cgroup file systems (env THPD_CGROUPFS,\n"
               "                         default /sys/fs/cgroup)\n"
               "     --runtime-dir=DIR   Where the baseline survives a crash\n"
               "                         (env THPD_RUNTIME_DIR, default /run/thpd)\n"
               "     --policy-dir=DIR    Read policies from DIR (repeatable, highest precedence\n"
               "                         first; replaces the default search path)\n"
               "     --config=FILE       Read settings from FILE instead of thpd.conf and\n"
               "                         thpd.conf.d/\n"
               "     --user              Follow the calling user's systemd manager and own\n"
               "                         org.thpd1 on the session bus\n"
               "     --no-restore        Leave the knobs as they are on exit\n"
               "     --log-level=LEVEL   emerg, alert, crit, err, warning, notice, info, debug\n"
               "\nSee thpd(8), thpd.conf(5) and thpd.policy(5).\n");
}

enum {
        ARG_VERSION = 0x100,
        ARG_SYSFS,
        ARG_PROCFS,
        ARG_CGROUPFS,
        ARG_RUNTIME_DIR,
        ARG_POLICY_DIR,
        ARG_CONFIG,
        ARG_USER,
        ARG_NO_RESTORE,
        ARG_LOG_LEVEL,
};

/* Returns 1 to run, 0 to exit successfully, a negative errno on bad usage. */
static int parse_argv(int argc, char *argv[]) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "sysfs", required_argument, NULL, ARG_SYSFS },
                { "procfs", required_argument, NULL, ARG_PROCFS },
                { "cgroupfs", required_argument, NULL, ARG_CGROUPFS },
                { "runtime-dir", required_argument, NULL, ARG_RUNTIME_DIR },
                { "policy-dir", required_argument, NULL, ARG_POLICY_DIR },
                { "config", required_argument, NULL, ARG_CONFIG },
                { "user", no_argument, NULL, ARG_USER },
                { "no-restore", no_argument, NULL, ARG_NO_RESTORE },
                { "log-level", required_argument, NULL, ARG_LOG_LEVEL },
                {}
        };
        const char *e;
        int c, level;

        if ((e = getenv("THPD_SYSFS")) && *e)
                arg_sysfs = e;
        if ((e = getenv("THPD_PROCFS")) && *e)
                arg_procfs = e;
        if ((e = getenv("THPD_CGROUPFS")) && *e)
                arg_cgroupfs = e;
        if ((e = getenv("THPD_RUNTIME_DIR")) && *e)
                arg_runtime_dir = e;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("thpd %s\n", THPD_VERSION);
                        return 0;
                case ARG_SYSFS:
                        arg_sysfs = optarg;
                        break;
                case ARG_PROCFS:
                        arg_procfs = optarg;
                        break;
                case ARG_CGROUPFS:
                        arg_cgroupfs = optarg;
                        break;
                case ARG_RUNTIME_DIR:
                        arg_runtime_dir = optarg;
                        break;
                case ARG_POLICY_DIR:
                        g_ptr_array_add(arg_policy_dirs, g_strdup(optarg));
                        break;
                case ARG_CONFIG:
                        arg_config = optarg;
                        break;
                case ARG_USER:
                        arg_user = true;
                        break;
                case ARG_NO_RESTORE:
                        arg_no_restore = true;
                        break;
                case ARG_LOG_LEVEL:
                        level = log_level_from_string(optarg);
                        if (level < 0) {
                                log_error("Unknown log level \"%s\"; use one of emerg, alert, crit, err, warning, notice, info, debug.", optarg);
                                return -EINVAL;
                        }
                        log_set_max_level(level);
                        break;
                case '?':
                        return -EINVAL;
                default:
                        g_assert_not_reached();
                }

        if (optind < argc) {
                log_error("thpd takes no arguments (got \"%s\"); see --help.", argv[optind]);
                return -EINVAL;
        }
        return 1;
}

static int run(int argc, char *argv[]) {
        g_autoptr(GPtrArray) policy_dirs = g_ptr_array_new_with_free_func(g_free);
        _cleanup_(sd_event_unrefp) sd_event *event = NULL;
        Manager *m = NULL;
        ManagerOptions options;
        sigset_t mask;
        int r, exit_code;

        arg_policy_dirs = policy_dirs;
        r = parse_argv(argc, argv);
        if (r <= 0)
                return r < 0 ? 2 : 0;
        g_ptr_array_add(policy_dirs, NULL);

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        /* stdout/stderr may be a pipe whose reader is gone (thpd | tee, a dead journald): a failed
         * log write must never kill thpd before it restores the baseline. */
        signal(SIGPIPE, SIG_IGN);

        r = sd_event_default(&event);
        if (r < 0) {
                log_error_errno(r, "Cannot create the event loop: %m");
                return 1;
        }

        options = (ManagerOptions) {
                .sysfs_root = arg_sysfs,
                .procfs_root = arg_procfs,
                .cgroupfs_root = arg_cgroupfs,
                .runtime_dir = arg_runtime_dir,
                .policy_dirs = policy_dirs->len > 1 ? (char **) policy_dirs->pdata : NULL,
                .config_path = arg_config,
                .user = arg_user,
                .no_restore = arg_no_restore,
        };

        r = manager_new(event, &options, &m);
        if (r < 0)
                return 1;
        daemon_listeners_attach(m);

        log_info("thpd %s starting (sysfs %s, runtime %s, %s bus)", THPD_VERSION, arg_sysfs, arg_runtime_dir,
                 arg_user ? "session" : "system");

        r = manager_start(m);
        if (r < 0) {
                manager_free(m);
                return 1;
        }

        r = sd_event_loop(event);
        exit_code = r < 0 ? 1 : r;
        if (r < 0)
                log_error_errno(r, "Event loop failed: %m");

        exit_code = manager_stop(m, exit_code);
        manager_free(m);
        return exit_code;
}

int main(int argc, char *argv[]) {
        return run(argc, argv);
}
