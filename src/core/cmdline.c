/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <string.h>

#include <glib.h>

#include "cmdline.h"
#include "util.h"

static const char *const cmdline_param_table[_CMDLINE_PARAM_MAX] = {
        [CMDLINE_TRANSPARENT_HUGEPAGE] = "transparent_hugepage=",
        [CMDLINE_THP_ANON] = "thp_anon=",
        [CMDLINE_TRANSPARENT_HUGEPAGE_SHMEM] = "transparent_hugepage_shmem=",
        [CMDLINE_THP_SHMEM] = "thp_shmem=",
        [CMDLINE_TRANSPARENT_HUGEPAGE_TMPFS] = "transparent_hugepage_tmpfs=",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(cmdline_param, CmdlineParam);

/* The words shmem_parse_huge() takes, for transparent_hugepage_shmem= and _tmpfs=, and those of
 * thp_shmem=. */
static const char *const shmem_words[] = { "never", "always", "within_size", "advise", "deny", "force" };
static const char *const shmem_size_words[] = { "always", "inherit", "within_size", "advise", "never" };

static bool is_space(char c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* The kernel's next_arg(): one parameter, up to unquoted white space; quotes around the whole
 * parameter or its value are dropped. Cuts args in place; returns the rest. */
static char *next_arg(char *args, char **ret_param, char **ret_val) {
        size_t i, equals = 0;
        bool in_quote = false, quoted = false;
        char *next;

        if (*args == '"') {
                args++;
                in_quote = quoted = true;
        }
        for (i = 0; args[i]; i++) {
                if (is_space(args[i]) && !in_quote)
                        break;
                if (equals == 0 && args[i] == '=')
                        equals = i;
                if (args[i] == '"')
                        in_quote = !in_quote;
        }

        *ret_param = args;
        *ret_val = NULL;
        if (equals > 0) {
                args[equals] = '\0';
                *ret_val = args + equals + 1;
                if (**ret_val == '"') {
                        (*ret_val)++;
                        if (args[i - 1] == '"')
                                args[i - 1] = '\0';
                }
        }
        if (quoted && i > 0 && args[i - 1] == '"')
                args[i - 1] = '\0';

        next = args + i;
        if (*next)
                *next++ = '\0';
        while (is_space(*next))
                next++;
        return next;
}

/* parameqn(): '-' and '_' are the same in a parameter's name. */
static bool param_is(const char *param, const char *name) {
        size_t n = strlen(name) - 1; /* without the "=" */

        if (strlen(param) != n)
                return false;
        for (size_t i = 0; i < n; i++) {
                char a = param[i] == '-' ? '_' : param[i], b = name[i] == '-' ? '_' : name[i];

                if (a != b)
                        return false;
        }
        return true;
}

static int word_in(const char *const *words, size_t n, const char *s) {
        for (size_t i = 0; i < n; i++)
                if (streq(words[i], s))
                        return (int) i;
        return -EINVAL;
}

/* memparse(): a number in C notation (0x hex, 0 octal) and an optional K, M, G, T, P or E;
 * what follows is not looked at. The arithmetic wraps as the kernel's unsigned long long does. */
static uint64_t memparse(const char *s) {
        unsigned base = 10;
        uint64_t n = 0;
        unsigned shift = 0;

        if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && g_ascii_isxdigit(s[2])) {
                base = 16;
                s += 2;
        } else if (s[0] == '0')
                base = 8;
        for (;; s++) {
                int d = g_ascii_isdigit(*s) ? *s - '0' : g_ascii_isxdigit(*s) ? g_ascii_tolower(*s) - 'a' + 10 : 99;

                if (d >= (int) base)
                        break;
                n = n * base + (uint64_t) d;
        }
        /* Each suffix is 1024 times the one before it. */
        if (*s != '\0') {
                static const char suffixes[] = "KMGTPE";
                const char *suffix = strchr(suffixes, g_ascii_toupper(*s));

                if (suffix)
                        shift = 10 * (unsigned) (suffix - suffixes + 1);
        }
        return shift >= 64 ? 0 : n << shift;
}

/* get_order_from_str(): a power of two the kernel has a per-size directory for, as the index of
 * its knob (k - KNOB_MTHP_FIRST); -EINVAL otherwise. */
static int size_slot(const char *s, const bool *present) {
        uint64_t bytes = memparse(s);
        Knob k;

        if (bytes == 0 || (bytes & (bytes - 1)) != 0 || bytes % 1024 != 0)
                return -EINVAL;
        if (knob_mthp_from_size_kb(bytes / 1024, &k) < 0 || (present && !present[k]))
                return -EINVAL;
        return (int) (k - KNOB_MTHP_FIRST);
}

/* The "16K-64K:always;128K,512K:inherit" of thp_anon= and thp_shmem=: each listed size gets the
 * index of its policy in words, into slots (which keep earlier parameters' values, as the
 * kernel's bitmaps do). All or nothing: -EINVAL leaves slots as they were. */
static int parse_sizes(const char *value, const bool *present, const char *const *words, size_t n_words,
                       int slots[KNOB_MTHP_SLOTS]) {
        g_autofree char *copy = g_strdup(value);
        int out[KNOB_MTHP_SLOTS];
        char *p = copy, *token;

        memcpy(out, slots, sizeof out);
        while ((token = strsep(&p, ";"))) {
                char *range = strsep(&token, ":"), *policy = token, *sub;
                int w;

                if (!policy)
                        return -EINVAL;
                w = word_in(words, n_words, policy);
                if (w < 0)
                        return -EINVAL;
                while ((sub = strsep(&range, ","))) {
                        char *dash = strchr(sub, '-');
                        int start, end;

                        if (dash)
                                *dash = '\0';
                        start = size_slot(sub, present);
                        end = dash ? size_slot(dash + 1, present) : start;
                        if (start < 0 || end < 0 || start > end)
                                return -EINVAL;
                        for (int i = start; i <= end; i++)
                                out[i] = w;
                }
        }
        memcpy(slots, out, sizeof out);
        return 0;
}

int cmdline_parse_thp(const char *cmdline, const bool *present, CmdlineThp *ret) {
        g_autofree char *copy = NULL;
        int anon[KNOB_MTHP_SLOTS], shmem[KNOB_MTHP_SLOTS];
        bool anon_set = false, shmem_set = false;
        CmdlineThp c = {};
        char *args;

        if (!cmdline)
                return -EINVAL;
        FOREACH_KNOB(k) {
                c.origin[k] = _CMDLINE_PARAM_INVALID;
                c.value[k] = KNOB_VALUE_UNSET;
        }
        for (size_t i = 0; i < KNOB_MTHP_SLOTS; i++)
                anon[i] = shmem[i] = -1;

        copy = g_strdup(cmdline);
        args = copy;
        while (is_space(*args))
                args++;
        while (*args) {
                char *param, *val;
                KnobValue v;
                int w;

                args = next_arg(args, &param, &val);
                /* What follows is init's. */
                if (!val && streq(param, "--"))
                        break;
                if (!val)
                        continue;

                if (param_is(param, cmdline_param_table[CMDLINE_TRANSPARENT_HUGEPAGE])) {
                        /* The three words, compared exactly (setup_transparent_hugepage()). */
                        if (word_in((const char *const[]) { "never", "madvise", "always" }, 3, val) >= 0 &&
                            knob_value_from_string(KNOB_ENABLED, val, &v) >= 0) {
                                c.origin[KNOB_ENABLED] = CMDLINE_TRANSPARENT_HUGEPAGE;
                                c.value[KNOB_ENABLED] = v;
                        } else
                                c.n_ignored++;
                } else if (param_is(param, cmdline_param_table[CMDLINE_THP_ANON])) {
                        static const char *const anon_words[] = { "never", "madvise", "always", "inherit" };

                        if (parse_sizes(val, present, anon_words, ELEMENTSOF(anon_words), anon) >= 0)
                                anon_set = true;
                        else
                                c.n_ignored++;
                } else if (param_is(param, cmdline_param_table[CMDLINE_TRANSPARENT_HUGEPAGE_SHMEM])) {
                        w = word_in(shmem_words, ELEMENTSOF(shmem_words), val);
                        if (w >= 0 && knob_value_from_string(KNOB_SHMEM_ENABLED, val, &v) >= 0) {
                                c.origin[KNOB_SHMEM_ENABLED] = CMDLINE_TRANSPARENT_HUGEPAGE_SHMEM;
                                c.value[KNOB_SHMEM_ENABLED] = v;
                        } else
                                c.n_ignored++;
                } else if (param_is(param, cmdline_param_table[CMDLINE_THP_SHMEM])) {
                        if (parse_sizes(val, NULL, shmem_size_words, ELEMENTSOF(shmem_size_words), shmem) >= 0)
                                shmem_set = true;
                        else
                                c.n_ignored++;
                } else if (param_is(param, cmdline_param_table[CMDLINE_TRANSPARENT_HUGEPAGE_TMPFS])) {
                        w = word_in(shmem_words, ELEMENTSOF(shmem_words), val);
                        if (w >= 0)
                                g_strlcpy(c.tmpfs, shmem_words[w], sizeof c.tmpfs);
                        else
                                c.n_ignored++;
                }
        }

        /* The kernel's bitmaps start empty: once either parameter took effect, a size it did not
         * list is never (anon: the words' index is the knob value, never first). */
        c.thp_anon = anon_set;
        c.thp_shmem = shmem_set;
        for (size_t i = 0; i < KNOB_MTHP_SLOTS; i++) {
                Knob k = KNOB_MTHP_FIRST + (Knob) i;

                if (anon_set && (!present || present[k])) {
                        c.origin[k] = CMDLINE_THP_ANON;
                        c.value[k] = anon[i] < 0 ? KNOB_ENABLED_NEVER : anon[i];
                }
                k = KNOB_MTHP_SHMEM_FIRST + (Knob) i;
                if (shmem_set && (!present || present[k]) &&
                    knob_value_from_string(k, shmem[i] < 0 ? "never" : shmem_size_words[shmem[i]], &c.value[k]) >= 0)
                        c.origin[k] = CMDLINE_THP_SHMEM;
        }
        *ret = c;
        return 0;
}
