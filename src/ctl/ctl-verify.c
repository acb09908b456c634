/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib.h>
#include <limits.h>

#include "ctl-json.h"
#include "ctl-properties.h"
#include "ctl-table.h"
#include "ctl.h"
#include "diagnostics.h"
#include "log.h"
#include "manager-probe.h"
#include "policy-dirs.h"
#include "policy.h"
#include "procfs.h"
#include "scope-dropin.h"
#include "sysfs.h"
#include "util.h"

/* verify parses strictly: an unknown section or key, which the daemon only warns about (a newer
 * policy on an older thpd), is an error here, so that a typo does not ship. */

/* One file verify reports on: a FILE argument, or the file in effect for a policy name. */
typedef struct Checked {
        char *policy;       /* "redis.conf" */
        char *path;         /* NULL when masked */
        char *masked_by;
        GPtrArray *shadowed; /* char*: what it overrides, or what the mask hides */
        bool valid;
        Policy *parsed;      /* NULL when it does not parse */
} Checked;

static void checked_clear(gpointer p) {
        Checked *c = p;

        g_free(c->policy);
        g_free(c->path);
        g_free(c->masked_by);
        if (c->shadowed)
                g_ptr_array_unref(c->shadowed);
        g_clear_pointer(&c->parsed, policy_free);
}

static const char *const *search_dirs(const CtlOptions *o) {
        return o->policy_dirs ? (const char *const *) o->policy_dirs : policy_default_dirs;
}

/* With --prefix=/usr/local the vendor directory is also the local one. */
static bool listed_before(const char *const *dirs, size_t i) {
        for (size_t j = 0; j < i; j++)
                if (streq(dirs[j], dirs[i]))
                        return true;
        return false;
}

/* True when the daemon reads the file where it is: it lies in one of the policy directories. */
static bool in_policy_dir(const char *const *dirs, const char *path) {
        g_autofree char *parent = g_path_get_dirname(path);
        char real_parent[PATH_MAX], real_dir[PATH_MAX];

        if (!realpath(parent, real_parent))
                return false;
        for (size_t i = 0; dirs[i]; i++)
                if (realpath(dirs[i], real_dir) && streq(real_dir, real_parent))
                        return true;
        return false;
}

/* A file given by name: parsed, and checked for what would make the daemon ignore it. Where the
 * daemon reads it, that is an error; elsewhere (a package's build tree) a warning, as the
 * installed copy may well be owned by root. */
static void verify_file(const char *const *dirs, const char *path, Diagnostics *diag, GArray *checked) {
        g_autoptr(Policy) p = NULL;
        DiagnosticLevel level = in_policy_dir(dirs, path) ? DIAGNOSTIC_ERROR : DIAGNOSTIC_WARNING;
        Checked c = {
                .policy = g_path_get_basename(path),
                .path = g_strdup(path),
                .shadowed = g_ptr_array_new_with_free_func(g_free),
        };
        bool trusted;

        trusted = policy_file_check_trusted(path, level, diag) || level == DIAGNOSTIC_WARNING;
        c.valid = policy_load(path, POLICY_PARSE_STRICT, diag, &p) >= 0 && trusted;
        c.parsed = g_steal_pointer(&p);
        g_array_append_val(checked, c);
}

/* Which file wins for each policy name, each winner parsed as the daemon would, strictly. */
static int verify_dirs(const char *const *dirs, Diagnostics *diag, GArray *checked) {
        g_autoptr(GPtrArray) files = NULL;
        int r;

        /* Trouble with a directory or a file is in diag; r < 0 means we could not even start. */
        r = policy_dirs_enumerate(dirs, diag, &files);
        if (r < 0)
                return r;

        for (guint i = 0; i < files->len; i++) {
                const PolicyFile *f = g_ptr_array_index(files, i);
                g_autoptr(Policy) p = NULL;
                Checked c = {
                        .policy = g_strdup(f->name),
                        .path = g_strdup(f->path),
                        .masked_by = g_strdup(f->masked_by),
                        .shadowed = g_ptr_array_new_with_free_func(g_free),
                        .valid = true,
                };

                for (guint j = 0; j < f->shadowed->len; j++)
                        g_ptr_array_add(c.shadowed, g_strdup(g_ptr_array_index(f->shadowed, j)));
                if (f->path)
                        c.valid = policy_load(f->path, POLICY_PARSE_STRICT, diag, &p) >= 0;
                c.parsed = g_steal_pointer(&p);
                g_array_append_val(checked, c);
        }
        return 0;
}

/* thp_anon= on this machine's command line started the PMD size as never, so a global Enabled=
 * reaches no PMD-sized page unless some policy sets that size: a warning, as it depends on the
 * machine verify runs on, not on the file. The roots move as the daemon's do (THPD_SYSFS,
 * THPD_PROCFS). */
static void warn_pmd_unreachable(GArray *checked, Diagnostics *diag) {
        const char *sysfs = getenv("THPD_SYSFS"), *procfs = getenv("THPD_PROCFS");
        bool present[_KNOB_MAX];
        SysfsThpFeatures f;
        CmdlineThp cmdline;
        Knob pmd;

        sysfs = sysfs && *sysfs ? sysfs : "/sys";
        procfs = procfs && *procfs ? procfs : "/proc";
        sysfs_probe_knobs(sysfs, present);
        sysfs_probe_features(sysfs, present, &f);
        pmd = f.pmd_knob;
        if (!knob_is_mthp(pmd) || procfs_read_cmdline_thp(procfs, present, &cmdline) < 0 ||
            cmdline.origin[pmd] != CMDLINE_THP_ANON || cmdline.value[pmd] != KNOB_ENABLED_NEVER)
                return;
        for (guint i = 0; i < checked->len; i++) {
                const Policy *p = g_array_index(checked, Checked, i).parsed;

                if (p && p->knobs[pmd] != KNOB_VALUE_UNSET)
                        return;
        }
        for (guint i = 0; i < checked->len; i++) {
                const Checked *c = &g_array_index(checked, Checked, i);
                KnobValue v = c->parsed ? c->parsed->knobs[KNOB_ENABLED] : KNOB_VALUE_UNSET;
                char buf[24];

                if (v == KNOB_VALUE_UNSET || v == KNOB_ENABLED_NEVER || c->parsed->scope == POLICY_SCOPE_SERVICE)
                        continue;
                diagnostics_add(diag, DIAGNOSTIC_WARNING, c->path, 0,
                                "Enabled=%s does not reach %" PRIu64 " kB pages on this machine: thp_anon= on the kernel "
                                "command line set %s to never, and no policy sets %s=",
                                knob_value_to_string(KNOB_ENABLED, v, buf), knob_mthp_size_kb(pmd), knob_name(pmd),
                                knob_info(pmd)->key);
        }
}

/* Which way a policy that wants always for its services alone takes on this host, asked as
 * thpd-generator asks (manager-probe.c), so that a packager or admin learns it before the service
 * runs: the blanket, or where thpd-generator cannot write it a machine-wide always (a warning).
 * Returns whether such a policy was checked; *ret_why is NULL on the blanket's path. */
static bool always_path(GArray *checked, Diagnostics *diag, const char **ret_why) {
        const char *why = NULL;
        bool asked = false;

        for (guint i = 0; i < checked->len; i++) {
                const Checked *c = &g_array_index(checked, Checked, i);

                if (!c->parsed || !policy_inverts(c->parsed))
                        continue;
                if (!asked) {
                        why = scope_blanket_unavailable(manager_has_memory_thp() > 0 ? SCOPE_VIA_MEMORY_THP : SCOPE_VIA_HELPER,
                                                        kernel_has_thp_except_advised());
                        asked = true;
                }
                if (why)
                        diagnostics_add(diag, DIAGNOSTIC_WARNING, c->path, 0,
                                        "Scope=service with Enabled=always is a machine-wide always on this host, for every "
                                        "service: no blanket MemoryTHP=madvise for the others, as %s", why);
        }
        *ret_why = why;
        return asked;
}

/* The blanket's path is no problem, so it is said on stdout rather than as a diagnostic. */
static void print_blanket_path(CtlOutput *out, GArray *checked) {
        for (guint i = 0; i < checked->len; i++) {
                const Checked *c = &g_array_index(checked, Checked, i);

                if (c->parsed && policy_inverts(c->parsed))
                        ctl_printf(out,
                                   "%s: Scope=service with Enabled=always takes the blanket's path on this host: the service "
                                   "manager has MemoryTHP= and the kernel PR_THP_DISABLE_EXCEPT_ADVISED, so thpd-generator "
                                   "gives every other service MemoryTHP=madvise (" SCOPE_BLANKET_DIR "/" SCOPE_BLANKET_NAME
                                   "); services started before the daemon-reload that loads it keep always until they "
                                   "restart (thpd-ctl status lists them)\n",
                                   c->path);
        }
}

static void diagnostic_to_json(CtlJson *b, const Diagnostic *d) {
        CtlDiagnostic c = {
                .file = d->file,
                .line = d->line,
                .severity = (char *) (d->level == DIAGNOSTIC_ERROR ? "error" : "warning"),
                .message = d->message,
        };

        ctl_diagnostic_to_json(b, &c);
}

/* A diagnostic belongs to the entry of the file it names, or, for verify without FILE, to the
 * policy of the same file name (an untrusted file that lost its place to a lower one). */
static bool belongs_to(const Diagnostic *d, const Checked *c, bool by_name) {
        g_autofree char *base = NULL;

        if (streq_ptr(d->file, c->path) || streq_ptr(d->file, c->masked_by))
                return true;
        if (!by_name)
                return false;
        base = g_path_get_basename(d->file);
        return streq(base, c->policy);
}

/* What text shows of an entry: where the policy comes from, then a line for each file it
 * overrides or masks. The lines are one cell, the only one text shows, so nothing pads them. */
static char *checked_text(const Checked *c) {
        g_autoptr(GString) text = g_string_new(NULL);

        if (c->masked_by)
                g_string_append_printf(text, "%s: masked by %s", c->policy, c->masked_by);
        else
                g_string_append_printf(text, "%s: %s", c->policy, c->path);
        for (guint j = 0; j < c->shadowed->len; j++)
                g_string_append_printf(text, "\n        %s %s", c->masked_by ? "masks" : "overrides",
                                       (const char *) g_ptr_array_index(c->shadowed, j));
        return g_string_free(g_steal_pointer(&text), FALSE);
}

/* One row per entry, for text and JSON alike; each diagnostic that belongs to an entry is
 * marked in attached (diag->items->len of them). */
static CtlTable *checked_table(GArray *checked, bool by_name, const Diagnostics *diag, bool *attached) {
        CtlTable *t = ctl_table_new();

        ctl_table_add_column(t, "", NULL);
        ctl_table_add_json_columns(t, "policy", "state", "path", "masked_by", "overrides", "diagnostics", NULL);
        for (guint i = 0; i < checked->len; i++) {
                const Checked *c = &g_array_index(checked, Checked, i);
                g_autofree char *text = checked_text(c);
                g_autofree char **shadowed = g_new0(char *, c->shadowed->len + 1);
                g_autoptr(CtlJson) diagnostics = ctl_json_new();

                /* Copied one by one: an empty GPtrArray has no pdata to copy from. */
                for (guint j = 0; j < c->shadowed->len; j++)
                        shadowed[j] = g_ptr_array_index(c->shadowed, j);
                ctl_json_begin_array(diagnostics, NULL);
                for (guint k = 0; k < diag->items->len; k++) {
                        const Diagnostic *d = g_ptr_array_index(diag->items, k);

                        if (!belongs_to(d, c, by_name))
                                continue;
                        diagnostic_to_json(diagnostics, d);
                        attached[k] = true;
                }
                ctl_json_end_array(diagnostics);

                ctl_table_add_string(t, text);
                ctl_table_add_string(t, c->policy);
                ctl_table_add_string(t, c->masked_by ? "masked" : c->valid ? "valid" : "invalid");
                ctl_table_add_string(t, c->path);
                ctl_table_add_string(t, c->masked_by);
                ctl_table_add_strv(t, shadowed);
                ctl_table_add_json(t, diagnostics);
        }
        return t;
}

/* The entries only without FILE, where verify picked the files itself; the diagnostics on
 * stderr, as the daemon's log and the compiler put them. */
static void print_text(CtlOutput *out, const char *const *dirs, bool with_dirs, const CtlTable *t, const Diagnostics *diag) {
        if (with_dirs && ctl_table_rows(t) == 0) {
                ctl_printf(out, "No policy files in:");
                for (size_t i = 0; dirs[i]; i++)
                        if (!listed_before(dirs, i))
                                ctl_printf(out, " %s", dirs[i]);
                ctl_printf(out, "\n");
        }
        if (with_dirs)
                ctl_table_print(t, out, false);
        (void) ctl_output_flush(out);
        diagnostics_print(diag, stderr);
}

/* always_path, with a policy that wants always for its services alone: which way this host takes
 * ("blanket" or "machine-wide") and why not the blanket. */
static int print_json(CtlOutput *out, const CtlTable *t, const Diagnostics *diag, const bool *attached, bool inverts,
                      const char *why) {
        g_autoptr(CtlJson) b = ctl_json_new();

        ctl_json_begin_object(b, NULL);
        ctl_table_to_json(t, b, "policies");
        /* What belongs to no policy: a directory's problems, or an ignored file. */
        ctl_json_begin_array(b, "diagnostics");
        for (guint k = 0; k < diag->items->len; k++)
                if (!attached[k])
                        diagnostic_to_json(b, g_ptr_array_index(diag->items, k));
        ctl_json_end_array(b);
        ctl_json_uint(b, "errors", diag->n_errors);
        ctl_json_uint(b, "warnings", diag->n_warnings);
        if (inverts) {
                ctl_json_begin_object(b, "always_path");
                ctl_json_string(b, "path", why ? "machine-wide" : "blanket");
                ctl_json_string(b, "reason", why);
                ctl_json_end_object(b);
        }
        ctl_json_end_object(b);
        return ctl_json_print(b, out->f);
}

int verb_verify(const CtlOptions *o, CtlOutput *out, int argc, char *argv[]) {
        const char *const *dirs = search_dirs(o);
        g_autoptr(GArray) checked = g_array_new(FALSE, TRUE, sizeof(Checked));
        g_autoptr(CtlTable) t = NULL;
        g_autofree bool *attached = NULL;
        const char *why = NULL;
        bool inverts;
        Diagnostics diag;
        int r;

        g_array_set_clear_func(checked, checked_clear);
        diagnostics_init(&diag);

        if (argc == 0) {
                r = verify_dirs(dirs, &diag, checked);
                if (r < 0) {
                        diagnostics_clear(&diag);
                        log_error_errno(r, "Cannot enumerate the policy directories: %m");
                        return CTL_EXIT_FAILURE;
                }
        } else
                /* Every file is checked, also after a bad one; the outcome is in diag. */
                for (int i = 0; i < argc; i++)
                        verify_file(dirs, argv[i], &diag, checked);

        warn_pmd_unreachable(checked, &diag);
        inverts = always_path(checked, &diag, &why);
        attached = g_new0(bool, diag.items->len + 1);
        t = checked_table(checked, argc == 0, &diag, attached);
        if (o->json)
                r = print_json(out, t, &diag, attached, inverts, why);
        else {
                if (inverts && !why)
                        print_blanket_path(out, checked);
                print_text(out, dirs, argc == 0, t, &diag);
                r = CTL_EXIT_OK;
        }
        if (r == CTL_EXIT_OK && diag.n_errors > 0)
                r = CTL_EXIT_FAILURE;
        diagnostics_clear(&diag);
        return r;
}
