/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib.h>

#include "ctl.h"
#include "diagnostics.h"
#include "log.h"
#include "policy.h"
#include "util.h"

/* With --prefix=/usr/local the vendor directory is also the local one. */
static bool listed_before(const char *const *dirs, size_t i) {
        for (size_t j = 0; j < i; j++)
                if (streq(dirs[j], dirs[i]))
                        return true;
        return false;
}

/* Prints which file wins for each policy name, then parses the winners as the daemon would. */
static int verify_dirs(const char *const *dirs, Diagnostics *diag) {
        g_autoptr(GPtrArray) files = NULL;
        int r;

        /* Trouble with a directory or a file is in diag; r < 0 means we could not even start. */
        r = policy_dirs_enumerate(dirs, diag, &files);
        if (r < 0)
                return log_error_errno(r, "Failed to enumerate policy directories: %s", g_strerror(-r));

        if (files->len == 0) {
                printf("No policy files in:");
                for (size_t i = 0; dirs[i]; i++)
                        if (!listed_before(dirs, i))
                                printf(" %s", dirs[i]);
                printf("\n");
        }

        for (guint i = 0; i < files->len; i++) {
                const PolicyFile *f = g_ptr_array_index(files, i);
                g_autoptr(Policy) p = NULL;

                if (f->masked_by)
                        printf("%s: masked by %s\n", f->name, f->masked_by);
                else
                        printf("%s: %s\n", f->name, f->path);
                for (guint j = 0; j < f->shadowed->len; j++)
                        printf("        %s %s\n", f->masked_by ? "masks" : "overrides",
                               (const char *) g_ptr_array_index(f->shadowed, j));

                if (f->path)
                        (void) policy_load(f->path, POLICY_PARSE_STRICT, diag, &p);
        }
        return 0;
}

int verb_verify(const CtlOptions *o, int argc, char *argv[]) {
        Diagnostics diag;
        int ret;

        diagnostics_init(&diag);

        if (argc == 0) {
                if (verify_dirs(o->policy_dirs ? (const char *const *) o->policy_dirs : policy_default_dirs,
                                &diag) < 0) {
                        diagnostics_clear(&diag);
                        return CTL_EXIT_FAILURE;
                }
        } else
                for (int i = 0; i < argc; i++) {
                        g_autoptr(Policy) p = NULL;

                        /* The outcome is in diag, for every file. */
                        (void) policy_load(argv[i], POLICY_PARSE_STRICT, &diag, &p);
                }

        fflush(stdout);
        diagnostics_print(&diag, stderr);
        ret = diag.n_errors > 0 ? CTL_EXIT_FAILURE : CTL_EXIT_OK;
        diagnostics_clear(&diag);
        return ret;
}
