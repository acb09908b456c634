/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>

#include "scope-dropin.h"
#include "util.h"

static const char *const scope_via_table[_SCOPE_VIA_MAX] = {
        [SCOPE_VIA_NONE] = "none",
        [SCOPE_VIA_HELPER] = "thpd-exec",
        [SCOPE_VIA_MEMORY_THP] = "MemoryTHP",
        [SCOPE_VIA_MACHINE_WIDE] = "machine-wide",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(scope_via, ScopeVia);

static const char *const blanket_class_table[_BLANKET_CLASS_MAX] = {
        [BLANKET_UNDER] = "under",
        [BLANKET_BEFORE] = "before",
        [BLANKET_EXEMPT] = "exempt",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(blanket_class, BlanketClass);

static const char *memory_thp_value(const ScopeDropinRequest *req, const char *mode) {
        if (streq(mode, "never"))
                return "disable";
        return req->kernel_except_advised ? "madvise" : "disable";
}

static int append_helper_lines(const ScopeDropinRequest *req, const char *mode, GString *s,
                               const char **ret_bad_line) {
        const UnitExec *exec = req->exec;

        if (exec->exec_start->len == 0)
                return -ENOEXEC;
        g_string_append(s, "ExecStart=\n");
        for (guint i = 0; i < exec->exec_start->len; i++) {
                const char *value = g_ptr_array_index(exec->exec_start, i);
                g_autofree char *line = NULL;

                if (exec_start_wrap(value, req->helper, mode, &line) < 0) {
                        if (ret_bad_line)
                                *ret_bad_line = value;
                        return -EINVAL;
                }
                g_string_append_printf(s, "ExecStart=%s\n", line);
        }
        /* Units sandboxed with NoExecPaths= (Debian's redis-server) could not exec the helper. */
        if (exec->no_exec_paths)
                g_string_append_printf(s, "ExecPaths=%s\n", req->helper);
        return 0;
}

const char *scope_blanket_unavailable(ScopeVia via, bool kernel_except_advised) {
        if (via != SCOPE_VIA_MEMORY_THP)
                return "the service manager has no MemoryTHP= (systemd 260 and later)";
        if (!kernel_except_advised)
                return "the kernel has no PR_THP_DISABLE_EXCEPT_ADVISED (Linux 6.18 and later)";
        return NULL;
}

char *scope_blanket_text(const Policy *const *policies, size_t n_policies) {
        GString *s = g_string_new("# Written by thpd-generator: THP always is for the services of\n");

        for (size_t i = 0; i < n_policies; i++)
                g_string_append_printf(s, "#   %s (Scope=service, Enabled=always)\n", policies[i]->path);
        g_string_append(s, "# alone. Every other service gets madvise at its start: THP only where its program asks.\n"
                           "# A drop-in of the service's own that sorts after this file wins: those services'\n"
                           "# " SCOPE_DROPIN_NAME " (MemoryTHP=inherit), and that of a service that asks for never.\n"
                           "[Service]\n"
                           "MemoryTHP=madvise\n");
        return g_string_free(s, false);
}

static void append_always(const ScopeDropinRequest *req, GString *s) {
        const char *why = scope_blanket_unavailable(req->via, req->kernel_except_advised);

        if (!why) {
                g_string_append_printf(s,
                                       "# (Scope=service, Enabled=always): %s keeps the machine-wide always,\n"
                                       "# exempt from the blanket MemoryTHP=madvise (" SCOPE_BLANKET_DIR "/" SCOPE_BLANKET_NAME
                                       ")\n# that every other service gets.\n"
                                       "[Service]\nMemoryTHP=inherit\n",
                                       req->unit);
                return;
        }
        /* Comments only: the file changes nothing for the manager, and tells thpd and the admin
         * why every service, not only this one, gets always. */
        g_string_append_printf(s,
                               "# (Scope=service, Enabled=always): THP is always machine-wide while %s runs,\n"
                               "# for every service: no blanket MemoryTHP=madvise was written for the others.\n"
                               SCOPE_NO_BLANKET_PREFIX "%s\n",
                               req->unit, why);
}

int scope_dropin_text(const ScopeDropinRequest *req, char **ret, const char **ret_bad_line) {
        g_autoptr(GString) s = g_string_new(NULL);
        const Policy *p = req->policy;
        char buf[24];
        const char *mode = knob_value_to_string(KNOB_ENABLED, p->service_thp, buf);
        const char *scope = policy_scope_to_string(p->scope);
        int r;

        g_string_append_printf(s, "# Written by thpd-generator for %s\n", p->path);
        if (policy_inverts(p))
                append_always(req, s);
        else if (req->via == SCOPE_VIA_MEMORY_THP) {
                const char *value = memory_thp_value(req, mode);

                g_string_append_printf(s,
                                       "# (Scope=%s, Enabled=%s): the service manager sets THP for the processes\n"
                                       "# of %s at their start.\n",
                                       scope, mode, req->unit);
                if (!streq(mode, "never") && streq(value, "disable"))
                        g_string_append(s, "# This kernel has no PR_THP_DISABLE_EXCEPT_ADVISED (Linux 6.18): THP is\n"
                                           "# off for them entirely, the stricter side of madvise.\n");
                g_string_append_printf(s, "[Service]\nMemoryTHP=%s\n", value);
        } else {
                g_string_append_printf(s,
                                       "# (Scope=%s, Enabled=%s): the ExecStart= commands of %s,\n"
                                       "# as %s and its drop-ins say, run through\n"
                                       "# thpd-exec, which sets prctl(PR_SET_THP_DISABLE) and execs them.\n"
                                       "# After a change to ExecStart=, \"systemctl daemon-reload\" updates this file.\n"
                                       "[Service]\n",
                                       scope, mode, req->unit, req->fragment);
                r = append_helper_lines(req, mode, s, ret_bad_line);
                if (r < 0)
                        return r;
        }
        *ret = g_string_free(g_steal_pointer(&s), false);
        return 0;
}

ScopeVia scope_dropin_parse(const char *text, char **ret_value) {
        bool helper = false;
        g_auto(GStrv) lines = g_strsplit(text ?: "", "\n", -1);

        for (char **l = lines; *l; l++) {
                const char *line = *l;

                if (g_str_has_prefix(line, "MemoryTHP=")) {
                        if (ret_value)
                                *ret_value = g_strstrip(g_strdup(line + strlen("MemoryTHP=")));
                        return SCOPE_VIA_MEMORY_THP;
                }
                if (g_str_has_prefix(line, SCOPE_NO_BLANKET_PREFIX)) {
                        if (ret_value)
                                *ret_value = g_strstrip(g_strdup(line + strlen(SCOPE_NO_BLANKET_PREFIX)));
                        return SCOPE_VIA_MACHINE_WIDE;
                }
                if (g_str_has_prefix(line, "ExecStart=") && strstr(line, " --thp="))
                        helper = true;
        }
        return helper ? SCOPE_VIA_HELPER : SCOPE_VIA_NONE;
}

BlanketClass scope_blanket_classify(const BlanketFacts *f, uint64_t since_usec) {
        assert(f);
        assert(since_usec > 0);

        if (!f->has_blanket || f->overridden)
                return BLANKET_EXEMPT;
        /* MemoryTHP= is applied when the main process is executed: one that ran before the
         * daemon-reload that loaded the blanket runs on with the machine's value. */
        if (f->started_usec == 0 || f->started_usec < since_usec)
                return BLANKET_BEFORE;
        return BLANKET_UNDER;
}

bool scope_dropin_is_blanket(const char *path) {
        static const char suffix[] = "/" SCOPE_BLANKET_DIR "/" SCOPE_BLANKET_NAME;

        return path && g_str_has_suffix(path, suffix);
}

bool scope_dropin_sets_memory_thp(const char *text) {
        g_auto(GStrv) lines = g_strsplit(text ?: "", "\n", -1);

        for (char **l = lines; *l; l++)
                if (g_str_has_prefix(g_strchug(*l), "MemoryTHP="))
                        return true;
        return false;
}
