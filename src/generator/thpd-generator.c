/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib/gstdio.h>

#include "config.h"
#include "log.h"
#include "policy-dirs.h"
#include "policy.h"
#include "unit-exec.h"
#include "unit-files.h"
#include "util.h"

/* thpd-generator NORMAL_DIR [EARLY_DIR LATE_DIR]: for every service a Scope=service policy
 * names, a drop-in in NORMAL_DIR that re-states its ExecStart= lines through thpd-exec, which
 * sets prctl(PR_SET_THP_DISABLE) and execs the command. See thpd-generator(8).
 *
 * A generator runs before anything else at boot and at every daemon-reload, with no bus: it
 * reads files only, and never fails the manager's start over one bad unit. */

#define DROPIN_NAME "zz-thpd-scope.conf"

static const char *exec_helper(void) {
        const char *e = getenv("THPD_EXEC_HELPER");

        return e ? e : THPD_EXEC_PATH;
}

/* $THPD_POLICY_PATH (colon-separated, highest precedence first) moves the policy directories
 * for tests, as --policy-dir does for thpd. */
static char **policy_search_path(void) {
        const char *e = getenv("THPD_POLICY_PATH");

        return e ? g_strsplit(e, ":", -1) : g_strdupv((char **) policy_default_dirs);
}

static bool has_glob(const char *s) {
        return strpbrk(s, "*?[") != NULL;
}

/* unit -> the strictest Policy* (borrowed) that isolates it: never before madvise, then the
 * first policy in lexical order, as resolution breaks ties. */
static void collect(GHashTable *wanted, const Policy *p, const char *unit) {
        const Policy *old = g_hash_table_lookup(wanted, unit);

        if (!old || p->service_thp < old->service_thp)
                g_hash_table_insert(wanted, g_strdup(unit), (gpointer) p);
}

static GHashTable *units_to_isolate(GPtrArray *policies, GPtrArray *unit_files) {
        GHashTable *wanted = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);

        for (guint i = 0; i < policies->len; i++) {
                const Policy *p = g_ptr_array_index(policies, i);

                if (p->scope != POLICY_SCOPE_SERVICE)
                        continue;
                /* Globs match the unit files present now; a plain name also matches an
                 * instance that has no file of its own ("foo@bar.service" of "foo@.service"). */
                for (guint j = 0; j < unit_files->len; j++)
                        if (policy_matches_unit(p, g_ptr_array_index(unit_files, j)))
                                collect(wanted, p, g_ptr_array_index(unit_files, j));
                for (char **u = p->units; *u; u++)
                        if (!has_glob(*u) && g_str_has_suffix(*u, ".service"))
                                collect(wanted, p, *u);
        }
        return wanted;
}

static char *dropin_text(const Policy *p, const char *unit, const char *fragment, const UnitExec *exec,
                         const char *helper) {
        g_autoptr(GString) s = g_string_new(NULL);
        char buf[24];
        const char *mode = knob_value_to_string(KNOB_ENABLED, p->service_thp, buf);

        g_string_append_printf(s,
                               "# Written by thpd-generator for %s\n"
                               "# (Scope=service, Enabled=%s): the ExecStart= commands of %s,\n"
                               "# as %s and its drop-ins say, run through\n"
                               "# thpd-exec, which sets prctl(PR_SET_THP_DISABLE) and execs them.\n"
                               "# After a change to ExecStart=, \"systemctl daemon-reload\" updates this file.\n"
                               "[Service]\n"
                               "ExecStart=\n",
                               p->path, mode, unit, fragment);
        for (guint i = 0; i < exec->exec_start->len; i++) {
                g_autofree char *line = NULL;
                int r;

                r = exec_start_wrap(g_ptr_array_index(exec->exec_start, i), helper, mode, &line);
                if (r < 0) {
                        log_warning("%s: cannot isolate %s: ExecStart=%s has no command", p->path, unit,
                                    (const char *) g_ptr_array_index(exec->exec_start, i));
                        return NULL;
                }
                g_string_append_printf(s, "ExecStart=%s\n", line);
        }
        /* Units sandboxed with NoExecPaths= (Debian's redis-server) could not exec the helper. */
        if (exec->no_exec_paths)
                g_string_append_printf(s, "ExecPaths=%s\n", helper);
        return g_string_free(g_steal_pointer(&s), false);
}

static int write_dropin(const char *dir, const Policy *p, const char *unit, char *const *unit_path) {
        g_autofree char *fragment = NULL, *text = NULL, *d = NULL, *path = NULL;
        g_autoptr(GError) error = NULL;
        UnitExec exec;
        int r;

        r = unit_files_load_exec(unit_path, unit, &exec, &fragment);
        if (r == -ENOENT)
                /* A name in Units= that is not installed: nothing to wrap, nothing to say. */
                return 0;
        if (r == -ERFKILL)
                return 0;
        if (r < 0)
                return log_warning_errno(r, "%s: cannot read the unit files of %s: %m", p->path, unit);

        if (exec.exec_start->len == 0) {
                log_warning("%s: cannot isolate %s: it has no ExecStart=", p->path, unit);
                unit_exec_done(&exec);
                return 0;
        }
        text = dropin_text(p, unit, fragment, &exec, exec_helper());
        unit_exec_done(&exec);
        if (!text)
                return 0;

        d = g_strdup_printf("%s/%s.d", dir, unit);
        path = g_build_filename(d, DROPIN_NAME, NULL);
        if (g_mkdir_with_parents(d, 0755) < 0)
                return log_error_errno(errno, "Cannot create %s: %m", d);
        if (!g_file_set_contents(path, text, -1, &error))
                return log_error_errno(-EIO, "Cannot write %s: %s", path, error->message);
        return 1;
}

static int run(const char *dir) {
        g_auto(GStrv) policy_dirs = policy_search_path();
        g_auto(GStrv) unit_path = unit_search_path(streq_ptr(getenv("SYSTEMD_SCOPE"), "user"));
        g_autoptr(GPtrArray) policies = NULL, unit_files = NULL;
        g_autoptr(GHashTable) wanted = NULL;
        g_autoptr(GList) units = NULL;
        Diagnostics diag;
        int r, ret = 0;

        /* thpd reports what is wrong with a policy (FILE:LINE); a bad one is skipped here, as
         * there. */
        diagnostics_init(&diag);
        r = policy_dirs_load((const char *const *) policy_dirs, &diag, &policies);
        diagnostics_clear(&diag);
        if (r < 0)
                return log_error_errno(r, "Cannot read the policy directories: %m");

        unit_files = unit_files_list_services(unit_path);
        wanted = units_to_isolate(policies, unit_files);
        units = g_list_sort(g_hash_table_get_keys(wanted), (GCompareFunc) strcmp);
        for (GList *l = units; l; l = l->next) {
                r = write_dropin(dir, g_hash_table_lookup(wanted, l->data), l->data, unit_path);
                if (r < 0)
                        ret = r;
        }
        return ret;
}

int main(int argc, char *argv[]) {
        if (argc != 2 && argc != 4) {
                fprintf(stderr, "Usage: %s NORMAL_DIR [EARLY_DIR LATE_DIR]\n"
                        "A systemd generator, see thpd-generator(8).\n", program_invocation_short_name);
                return EXIT_FAILURE;
        }
        return run(argv[1]) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
