/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib/gstdio.h>

#include "config.h"
#include "log.h"
#include "manager-probe.h"
#include "policy-dirs.h"
#include "policy.h"
#include "scope-dropin.h"
#include "unit-exec.h"
#include "unit-files.h"
#include "util.h"

/* thpd-generator NORMAL_DIR [EARLY_DIR LATE_DIR]: for every service a Scope=service or
 * Scope=auto policy names, a drop-in in NORMAL_DIR that sets the manager's own MemoryTHP= where
 * it has one, or else re-states its ExecStart= lines through thpd-exec, which sets
 * prctl(PR_SET_THP_DISABLE) and execs the command. For a Scope=service policy that wants always,
 * the blanket NORMAL_DIR/service.d/ drop-in that gives every service MemoryTHP=madvise, and its
 * services' exemption. See thpd-generator(8).
 *
 * A generator runs before anything else at boot and at every daemon-reload, with no bus: it
 * reads files only, and never fails the manager's start over one bad unit. */

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

static gint compare_policy_path(gconstpointer a, gconstpointer b) {
        return strcmp((*(const Policy *const *) a)->path, (*(const Policy *const *) b)->path);
}

static bool has_glob(const char *s) {
        return strpbrk(s, "*?[") != NULL;
}

/* unit -> the strictest Policy* (borrowed) that isolates it: never before madvise, before the
 * always of policy_inverts() (its exemption from the blanket), then the first policy in lexical
 * order, as resolution breaks ties. */
static void collect(GHashTable *wanted, const Policy *p, const char *unit) {
        const Policy *old = g_hash_table_lookup(wanted, unit);

        if (!old || p->service_thp < old->service_thp)
                g_hash_table_insert(wanted, g_strdup(unit), (gpointer) p);
}

static GHashTable *units_to_isolate(GPtrArray *policies, GPtrArray *unit_files) {
        GHashTable *wanted = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);

        for (guint i = 0; i < policies->len; i++) {
                const Policy *p = g_ptr_array_index(policies, i);

                if (!policy_isolates(p) && !policy_inverts(p))
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

typedef struct Platform {
        ScopeVia via;
        bool kernel_except_advised;
} Platform;

static int write_dropin(const char *dir, const Platform *platform, const Policy *p, const char *unit,
                        char *const *unit_path) {
        g_autofree char *fragment = NULL, *text = NULL, *d = NULL, *path = NULL;
        g_autoptr(GError) error = NULL;
        const char *bad_line = NULL;
        UnitExec exec;
        int r;

        /* An exemption from the blanket sets no ExecStart=, and is written for a unit not
         * installed yet too: once installed, it must not run under the blanket. */
        if (policy_inverts(p)) {
                unit_exec_init(&exec);
                r = 0;
        } else
                r = unit_files_load_exec(unit_path, unit, &exec, &fragment);
        if (r == -ENOENT)
                /* A name in Units= that is not installed: nothing to isolate, nothing to say. */
                return 0;
        if (r == -ERFKILL)
                return 0;
        if (r < 0)
                return log_warning_errno(r, "%s: cannot read the unit files of %s: %m", p->path, unit);

        r = scope_dropin_text(&(ScopeDropinRequest) {
                                      .policy = p,
                                      .unit = unit,
                                      .fragment = fragment,
                                      .exec = &exec,
                                      .helper = exec_helper(),
                                      .via = platform->via,
                                      .kernel_except_advised = platform->kernel_except_advised,
                              },
                              &text, &bad_line);
        unit_exec_done(&exec);
        if (r == -ENOEXEC) {
                log_warning("%s: cannot isolate %s: it has no ExecStart=", p->path, unit);
                return 0;
        }
        if (r < 0) {
                log_warning("%s: cannot isolate %s: ExecStart=%s has no command", p->path, unit, bad_line);
                return 0;
        }

        d = g_strdup_printf("%s/%s.d", dir, unit);
        path = g_build_filename(d, SCOPE_DROPIN_NAME, NULL);
        if (g_mkdir_with_parents(d, 0755) < 0)
                return log_error_errno(errno, "Cannot create %s: %m", d);
        if (!g_file_set_contents(path, text, -1, &error))
                return log_error_errno(-EIO, "Cannot write %s: %s", path, error->message);
        return 1;
}

/* The blanket, when a policy that wants always (policy_inverts()) has a unit exempted from it
 * and the platform allows it. Elsewhere those units' drop-ins say why there is none. */
static int write_blanket(const char *dir, const Platform *platform, GHashTable *wanted) {
        g_autoptr(GPtrArray) inverting = g_ptr_array_new();
        g_autofree char *d = NULL, *path = NULL, *text = NULL;
        g_autoptr(GError) error = NULL;
        GHashTableIter iter;
        const Policy *p;

        g_hash_table_iter_init(&iter, wanted);
        while (g_hash_table_iter_next(&iter, NULL, (gpointer *) &p))
                if (policy_inverts(p) && !g_ptr_array_find(inverting, p, NULL))
                        g_ptr_array_add(inverting, (gpointer) p);
        if (inverting->len == 0 || scope_blanket_unavailable(platform->via, platform->kernel_except_advised))
                return 0;
        /* In policy file order, whatever order the table gave them in. */
        g_ptr_array_sort(inverting, compare_policy_path);

        d = g_build_filename(dir, SCOPE_BLANKET_DIR, NULL);
        path = g_build_filename(d, SCOPE_BLANKET_NAME, NULL);
        text = scope_blanket_text((const Policy *const *) inverting->pdata, inverting->len);
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
        Platform platform = {};
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
        if (units) {
                /* Asked only when there is a service to isolate: most reloads have none. A
                 * manager that cannot tell gets the helper, which works everywhere. */
                platform.via = manager_has_memory_thp() > 0 ? SCOPE_VIA_MEMORY_THP : SCOPE_VIA_HELPER;
                platform.kernel_except_advised = kernel_has_thp_except_advised();
        }
        for (GList *l = units; l; l = l->next) {
                r = write_dropin(dir, &platform, g_hash_table_lookup(wanted, l->data), l->data, unit_path);
                if (r < 0)
                        ret = r;
        }
        r = write_blanket(dir, &platform, wanted);
        if (r < 0)
                ret = r;
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
