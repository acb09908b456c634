/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <getopt.h>
#include <sys/prctl.h>

#include "log.h"
#include "util.h"

/* thpd-exec --thp=never|madvise [--argv0=NAME] -- COMMAND [ARGUMENT...]: takes THP away from
 * itself with prctl(PR_SET_THP_DISABLE), which fork and execve keep, and execs COMMAND. A
 * process cannot set it on another one, so thpd-generator puts this helper in front of a
 * service's ExecStart= commands. See thpd-generator(8). */

#ifndef PR_THP_DISABLE_EXCEPT_ADVISED
#define PR_THP_DISABLE_EXCEPT_ADVISED (1UL << 1) /* Linux 6.18 */
#endif

#define EXIT_EXEC_FAILED 127 /* what env(1) and the shells return when a command cannot run */

static int thp_disable(bool except_advised) {
        if (except_advised) {
                if (prctl(PR_SET_THP_DISABLE, 1UL, PR_THP_DISABLE_EXCEPT_ADVISED, 0UL, 0UL) == 0)
                        return 0;
                if (errno != EINVAL)
                        return -errno;
                /* Older kernels reject the flag. THP off entirely is the stricter side of what
                 * the policy asked for, as resolution always picks the stricter value. */
                log_warning("thpd-exec: this kernel has no PR_THP_DISABLE_EXCEPT_ADVISED (Linux 6.18), "
                            "disabling THP entirely instead of Enabled=madvise");
        }
        if (prctl(PR_SET_THP_DISABLE, 1UL, 0UL, 0UL, 0UL) < 0)
                return -errno;
        return 0;
}

static void help(void) {
        printf("Usage: thpd-exec --thp=never|madvise [--argv0=NAME] -- COMMAND [ARGUMENT...]\n\n"
               "Disables Transparent Huge Pages for itself (prctl PR_SET_THP_DISABLE; with madvise,\n"
               "except where the program asks for them) and executes COMMAND, which keeps that\n"
               "setting. thpd-generator puts it in front of the ExecStart= commands of services\n"
               "whose policy has Scope=service.\n\n"
               "  -h --help          Show this help and exit\n"
               "     --thp=MODE      never or madvise\n"
               "     --argv0=NAME    argv[0] for COMMAND (ExecStart=@...)\n"
               "\nSee thpd-generator(8) and thpd.policy(5).\n");
}

int main(int argc, char *argv[]) {
        enum { ARG_THP = 0x100, ARG_ARGV0 };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "thp", required_argument, NULL, ARG_THP },
                { "argv0", required_argument, NULL, ARG_ARGV0 },
                {}
        };
        const char *mode = NULL, *argv0 = NULL, *command;
        int c, r;

        while ((c = getopt_long(argc, argv, "+h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return EXIT_SUCCESS;
                case ARG_THP:
                        mode = optarg;
                        break;
                case ARG_ARGV0:
                        argv0 = optarg;
                        break;
                default:
                        return EXIT_EXEC_FAILED;
                }

        if (!mode || (!streq(mode, "never") && !streq(mode, "madvise")) || optind >= argc) {
                log_error("thpd-exec: usage: thpd-exec --thp=never|madvise [--argv0=NAME] -- COMMAND [ARGUMENT...]");
                return EXIT_EXEC_FAILED;
        }

        /* The service still starts if this fails (it cannot on any kernel since 3.15): thpd
         * lists a service whose main process is not isolated as needing a restart. */
        r = thp_disable(streq(mode, "madvise"));
        if (r < 0)
                log_warning_errno(r, "thpd-exec: prctl(PR_SET_THP_DISABLE) failed, %s runs with THP: %m", argv[optind]);

        command = argv[optind];
        if (argv0)
                argv[optind] = (char *) argv0;
        execvp(command, &argv[optind]);
        log_error_errno(errno, "thpd-exec: cannot execute %s: %m", command);
        return EXIT_EXEC_FAILED;
}
