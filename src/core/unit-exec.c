/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>

#include "unit-exec.h"
#include "util.h"

void unit_exec_init(UnitExec *u) {
        *u = (UnitExec) { .exec_start = g_ptr_array_new_with_free_func(g_free) };
}

void unit_exec_done(UnitExec *u) {
        g_clear_pointer(&u->exec_start, g_ptr_array_unref);
}

static void apply_assignment(UnitExec *u, const char *key, const char *value) {
        if (streq(key, "ExecStart")) {
                if (*value == '\0')
                        g_ptr_array_set_size(u->exec_start, 0);
                else
                        g_ptr_array_add(u->exec_start, g_strdup(value));
        } else if (streq(key, "NoExecPaths"))
                u->no_exec_paths = *value != '\0';
}

static void apply_line(UnitExec *u, char *line, bool *in_service) {
        char *eq;

        g_strstrip(line);
        if (*line == '\0' || *line == '#' || *line == ';')
                return;
        if (*line == '[') {
                *in_service = streq(line, "[Service]");
                return;
        }
        eq = strchr(line, '=');
        if (!*in_service || !eq)
                return;
        *eq = '\0';
        apply_assignment(u, g_strstrip(line), g_strstrip(eq + 1));
}

void unit_exec_apply_text(UnitExec *u, const char *text) {
        g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
        g_autoptr(GString) logical = g_string_new(NULL);
        bool in_service = false, continued = false;

        for (char **l = lines; *l; l++) {
                const char *start = *l;
                size_t len;

                /* systemd skips comment lines inside a continued line. */
                while (continued && isspace((unsigned char) *start))
                        start++;
                if (continued && (*start == '#' || *start == ';'))
                        continue;

                len = strlen(start);
                if (len > 0 && start[len - 1] == '\r')
                        len--;
                if (len > 0 && start[len - 1] == '\\') {
                        /* The backslash becomes a blank, as in systemd's config parser. */
                        g_string_append_len(logical, start, (gssize) len - 1);
                        g_string_append_c(logical, ' ');
                        continued = true;
                        continue;
                }
                g_string_append_len(logical, start, (gssize) len);
                apply_line(u, logical->str, &in_service);
                g_string_truncate(logical, 0);
                continued = false;
        }
        if (logical->len > 0)
                apply_line(u, logical->str, &in_service);
}

/* The end of the word at s as systemd splits it (quotes and backslash escapes keep blanks
 * inside a word); the word itself is kept as written, so that systemd unquotes it later. */
static const char *word_end(const char *s) {
        char quote = 0;

        for (; *s; s++) {
                if (*s == '\\' && s[1])
                        s++;
                else if (quote && *s == quote)
                        quote = 0;
                else if (!quote && (*s == '"' || *s == '\''))
                        quote = *s;
                else if (!quote && isspace((unsigned char) *s))
                        break;
        }
        return s;
}

static const char *skip_blanks(const char *s) {
        while (isspace((unsigned char) *s))
                s++;
        return s;
}

int exec_start_wrap(const char *value, const char *helper, const char *mode, char **ret) {
        g_autoptr(GString) prefixes = g_string_new(NULL), out = NULL;
        const char *p = skip_blanks(value), *end;
        bool argv0 = false;

        for (; *p && strchr("-@:+!", *p); p++)
                if (*p == '@')
                        argv0 = true;
                else
                        g_string_append_c(prefixes, *p);
        if (*p == '\0' || isspace((unsigned char) *p))
                return -EINVAL;

        out = g_string_new(prefixes->str);
        g_string_append_printf(out, "%s --thp=%s", helper, mode);
        if (argv0) {
                /* "@/usr/bin/foo name args": the helper runs /usr/bin/foo with argv[0] "name". */
                const char *cmd = p, *cmd_end = word_end(p), *name = skip_blanks(cmd_end);

                if (*name == '\0')
                        return -EINVAL;
                end = word_end(name);
                g_string_append(out, " --argv0 ");
                g_string_append_len(out, name, end - name);
                g_string_append(out, " -- ");
                g_string_append_len(out, cmd, cmd_end - cmd);
                g_string_append(out, end);
        } else {
                g_string_append(out, " -- ");
                g_string_append(out, p);
        }
        *ret = g_string_free(g_steal_pointer(&out), false);
        return 0;
}
