/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "config.h"
#include "log.h"
#include "manager-probe.h"
#include "util.h"

#ifndef PR_THP_DISABLE_EXCEPT_ADVISED
#define PR_THP_DISABLE_EXCEPT_ADVISED (1UL << 1) /* Linux 6.18 */
#endif

/* "systemd --dump-configuration-items" lists every unit file setting the binary parses, one
 * "Key=TYPE" per line under its section: the same parser that will read our drop-in. A version
 * number would say nothing about a backport or a distribution's patch.
 * $THPD_MEMORY_THP=yes|no decides instead, for tests that run a manager other than the one
 * installed. */
int manager_has_memory_thp(void) {
        const char *e = getenv("THPD_MEMORY_THP");
        const char *binary = getenv("THPD_SYSTEMD_BINARY") ?: SYSTEMD_BINARY_PATH;
        const char *argv[] = { binary, "--dump-configuration-items", NULL };
        g_autofree char *out = NULL;
        g_autoptr(GError) error = NULL;
        int status;

        if (e) {
                if (streq(e, "yes"))
                        return 1;
                if (streq(e, "no"))
                        return 0;
                return log_error_errno(-EINVAL, "THPD_MEMORY_THP=%s: expected yes or no", e);
        }
        if (!g_spawn_sync(NULL, (char **) argv, NULL, G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, &out, NULL, &status,
                          &error))
                return log_warning_errno(-ENOEXEC, "Cannot run %s: %s", binary, error->message);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                return log_warning_errno(-EIO, "%s --dump-configuration-items failed", binary);
        return strstr(out, "\nMemoryTHP=") != NULL;
}

/* The flag is tried on this process, which exits soon, and the setting is cleared again. */
bool kernel_has_thp_except_advised(void) {
        if (prctl(PR_SET_THP_DISABLE, 1UL, PR_THP_DISABLE_EXCEPT_ADVISED, 0UL, 0UL) < 0)
                return false;
        (void) prctl(PR_SET_THP_DISABLE, 0UL, 0UL, 0UL, 0UL);
        return true;
}
