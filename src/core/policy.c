/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <fnmatch.h>

#include "policy.h"
#include "util.h"

/* The policy syntax is inih's (sections, Key=Value or Key:Value, ';' and '#' comments, inline
 * ';' comments after whitespace, indented continuation lines), but the lexer is ours: inih
 * reports only the first bad line, counts a line longer than its buffer as several lines and
 * cuts a line short at a NUL byte, where every problem must be reported at its own FILE:LINE.
 * The parser is fed bytes rather than handed a file, so that the core does no I/O, and so that
 * whoever reads the file can stop as soon as the parser has given up on it. */

#define HUGETLB_NODE_MAX 1023 /* the kernel's NODES_SHIFT is at most 10 */
#define DEFAULT_PAGE_SIZE (UINT64_C(2) << 20)

static const char *const known_sections[] = { "Policy", "TransparentHugePages", "Khugepaged", "HugeTLB" };

static const char *const unit_types[] = {
        "service", "socket", "scope", "slice", "target", "timer",
        "mount", "path", "swap", "device", "automount",
};

/* The longest line, not counting the line break: the limit inih's 200-byte line buffer set,
 * kept so that a file that loaded before still loads. */
#define POLICY_LINE_MAX 197U

#define COMMENT_PREFIXES ";#"
#define INLINE_COMMENT_PREFIXES ";"
#define UTF8_BOM "\xEF\xBB\xBF"

/* What an indented continuation line adds to. Only the two free-form keys take continuations: a
 * long Units= list can go on several lines that way, since a line is short (POLICY_LINE_MAX).
 * For every other key a continuation is an error, because "Enabled=never" followed by an
 * indented "always" has no sensible meaning; and a key that was already reported (unknown key,
 * duplicate, outside a known section) swallows its continuations silently. Repeating a key on
 * a line of its own is always a duplicate-key error, Units= included. */
typedef enum ContinuationTarget {
        CONTINUE_IGNORE,
        CONTINUE_UNITS,
        CONTINUE_DESCRIPTION,
        CONTINUE_REJECT,
} ContinuationTarget;

/* Errors reported for one file before the parser gives up on it. */
#define POLICY_ERRORS_MAX 50U

struct PolicyParser {
        char *path;
        Diagnostics *diag;
        Diagnostics local_diag; /* diag when the caller wants none */
        bool strict; /* POLICY_PARSE_STRICT */

        /* The line being fed: its first bytes (one more than fit, to tell a line that is too
         * long), its full length, and what marks it as binary. */
        char buf[POLICY_LINE_MAX + 2];
        size_t stored, len;
        bool cr, binary;

        unsigned line;
        uint64_t n_bytes;
        bool stop;     /* binary data, a read error or too many errors: the rest is not read */
        unsigned errors_before; /* diag->n_errors when this file started */

        /* Lexer state */
        bool have_prev_key; /* an indented line continues the last key */
        char *section;
        bool section_known;

        /* What the handler collected */
        ContinuationTarget continuation;
        char *continuation_key;
        unsigned policy_section_line, hugetlb_section_line;
        unsigned description_line, units_line, scope_line;
        PolicyScope scope;
        unsigned size_line, pages_line, page_size_line, node_line;
        unsigned knob_seen[_KNOB_MAX];
        GString *description;
        GPtrArray *units; /* char* */
        uint64_t size_bytes, pages, page_size_bytes, node;
        KnobValue knobs[_KNOB_MAX];
};

Policy *policy_free(Policy *p) {
        if (!p)
                return NULL;
        g_free(p->name);
        g_free(p->path);
        g_free(p->description);
        g_strfreev(p->units);
        g_free(p);
        return NULL;
}

void policy_free_void(void *p) {
        policy_free(p);
}

PolicyParser *policy_parser_free(PolicyParser *p) {
        if (!p)
                return NULL;
        g_free(p->path);
        g_free(p->section);
        g_free(p->continuation_key);
        g_string_free(p->description, true);
        if (p->units)
                g_ptr_array_unref(p->units);
        diagnostics_clear(&p->local_diag);
        g_free(p);
        return NULL;
}

#define error_at(p, line, ...) diagnostics_add((p)->diag, DIAGNOSTIC_ERROR, (p)->path, (line), __VA_ARGS__)
#define warning_at(p, line, ...) diagnostics_add((p)->diag, DIAGNOSTIC_WARNING, (p)->path, (line), __VA_ARGS__)
/* What the daemon ignores so that a newer policy still loads on an older thpd, and what verify
 * fails on, so that a typo does not ship. */
#define unknown_at(p, line, ...) \
        diagnostics_add((p)->diag, (p)->strict ? DIAGNOSTIC_ERROR : DIAGNOSTIC_WARNING, (p)->path, (line), __VA_ARGS__)

static const char *const policy_keys[] = { "Description", "Units", "Scope" };
static const char *const hugetlb_keys[] = { "Size", "Pages", "PageSize", "Node" };

/* The keys a known section takes; NULL for an unknown section. */
static GPtrArray *section_keys(const char *section) {
        GPtrArray *keys = g_ptr_array_new();

        if (streq(section, "Policy"))
                for (size_t i = 0; i < ELEMENTSOF(policy_keys); i++)
                        g_ptr_array_add(keys, (gpointer) policy_keys[i]);
        else if (streq(section, "HugeTLB"))
                for (size_t i = 0; i < ELEMENTSOF(hugetlb_keys); i++)
                        g_ptr_array_add(keys, (gpointer) hugetlb_keys[i]);
        else
                FOREACH_KNOB(k)
                        if (streq(knob_info(k)->section, section))
                                g_ptr_array_add(keys, (gpointer) knob_info(k)->key);
        return keys;
}

/* "; did you mean Enabled=?", "; Defrag= belongs in [Khugepaged]" or "": a hint for an unknown
 * key. A key of another section is named first, since a near miss in this one is likelier a
 * coincidence ("Defrag" is a key of both knob sections, so it is never misplaced). */
static char *unknown_key_hint(const char *section, const char *key) {
        g_autoptr(GPtrArray) keys = section_keys(section);
        const char *match;

        for (size_t i = 0; i < ELEMENTSOF(known_sections); i++) {
                g_autoptr(GPtrArray) other = NULL;

                if (streq(known_sections[i], section))
                        continue;
                other = section_keys(known_sections[i]);
                for (guint j = 0; j < other->len; j++)
                        if (g_ascii_strcasecmp(g_ptr_array_index(other, j), key) == 0)
                                return g_strdup_printf("; %s= belongs in [%s]", (const char *) g_ptr_array_index(other, j),
                                                       known_sections[i]);
        }
        match = closest_match(key, (const char *const *) keys->pdata, keys->len);
        return match ? g_strdup_printf("; did you mean %s=?", match) : g_strdup("");
}

static char *skip_space(char *s) {
        while (*s && isspace((unsigned char) *s))
                s++;
        return s;
}

static void strip_trailing_space(char *s) {
        char *e = s + strlen(s);

        while (e > s && isspace((unsigned char) e[-1]))
                *--e = '\0';
}

/* The first of "chars", or an inline comment prefix that follows whitespace, or the end. */
static char *find_chars_or_comment(char *s, const char *chars) {
        bool was_space = false;

        for (; *s; s++) {
                if (chars && strchr(chars, *s))
                        break;
                if (was_space && strchr(INLINE_COMMENT_PREFIXES, *s))
                        break;
                was_space = isspace((unsigned char) *s);
        }
        return s;
}

static void begin_section(PolicyParser *p, const char *name) {
        g_free(p->section);
        p->section = g_strdup(name);
        p->section_known = false;
        for (size_t i = 0; i < ELEMENTSOF(known_sections); i++)
                if (streq(name, known_sections[i]))
                        p->section_known = true;

        if (!p->section_known) {
                const char *match = closest_match(name, known_sections, ELEMENTSOF(known_sections));

                if (match)
                        unknown_at(p, p->line, "unknown section [%s], its keys are ignored; did you mean [%s]?", name,
                                   match);
                else
                        unknown_at(p, p->line, "unknown section [%s], its keys are ignored", name);
        }
        else if (streq(name, "Policy") && p->policy_section_line == 0)
                p->policy_section_line = p->line;
        else if (streq(name, "HugeTLB") && p->hugetlb_section_line == 0)
                p->hugetlb_section_line = p->line;
}

static bool unit_type_matches(const char *suffix) {
        for (size_t i = 0; i < ELEMENTSOF(unit_types); i++)
                if (fnmatch(suffix, unit_types[i], FNM_NOESCAPE) == 0)
                        return true;
        return false;
}

/* A Units= entry that can never match a unit name is almost certainly a typo. */
static void check_unit_entry(PolicyParser *p, const char *entry) {
        const char *dot;

        if (strlen(entry) > 255) {
                warning_at(p, p->line, "Units= entry '%.32s…' is longer than a unit name can be; it never matches",
                           entry);
                return;
        }
        for (const char *c = entry; *c; c++)
                if (!g_ascii_isalnum(*c) && !strchr(":-_.\\@*?[]!", *c)) {
                        warning_at(p, p->line, "Units= entry '%s' contains '%c', which no unit name has; it never matches",
                                   entry, *c);
                        return;
                }

        dot = strrchr(entry, '.');
        if (!dot || !unit_type_matches(dot + 1))
                warning_at(p, p->line,
                           "Units= entry '%s' has no unit type suffix (.service, .socket, .scope, .slice, ...); "
                           "it never matches", entry);
}

static void add_units(PolicyParser *p, const char *value) {
        g_auto(GStrv) entries = g_strsplit_set(value, " \t", -1);

        for (char **e = entries; *e; e++) {
                if (**e == '\0')
                        continue;
                check_unit_entry(p, *e);
                g_ptr_array_add(p->units, g_strdup(*e));
        }
}

static bool check_duplicate(PolicyParser *p, unsigned *seen_line, const char *key) {
        if (*seen_line != 0) {
                error_at(p, p->line, "duplicate key %s= (first set on line %u)", key, *seen_line);
                return true;
        }
        *seen_line = p->line;
        return false;
}

static void unknown_key(PolicyParser *p, const char *key) {
        g_autofree char *hint = unknown_key_hint(p->section, key);

        unknown_at(p, p->line, "unknown key %s= in [%s], ignored%s", key, p->section, hint);
}

static const char *const policy_scope_table[_POLICY_SCOPE_MAX] = {
        [POLICY_SCOPE_GLOBAL] = "global",
        [POLICY_SCOPE_SERVICE] = "service",
        [POLICY_SCOPE_AUTO] = "auto",
};

DEFINE_STRING_TABLE_LOOKUP(policy_scope, PolicyScope);

static ContinuationTarget handle_policy_key(PolicyParser *p, const char *key, const char *value) {
        if (streq(key, "Description")) {
                if (check_duplicate(p, &p->description_line, key))
                        return CONTINUE_IGNORE;
                g_string_assign(p->description, value);
                return CONTINUE_DESCRIPTION;
        }
        if (streq(key, "Units")) {
                if (check_duplicate(p, &p->units_line, key))
                        return CONTINUE_IGNORE;
                add_units(p, value);
                return CONTINUE_UNITS;
        }
        if (streq(key, "Scope")) {
                PolicyScope scope;

                if (check_duplicate(p, &p->scope_line, key))
                        return CONTINUE_IGNORE;
                scope = policy_scope_from_string(value);
                if (scope < 0)
                        error_at(p, p->line, "invalid Scope=%s; accepted: global, service, auto", value);
                else
                        p->scope = scope;
                return CONTINUE_REJECT;
        }
        unknown_key(p, key);
        return CONTINUE_IGNORE;
}

static bool is_power_of_two(uint64_t n) {
        return n != 0 && (n & (n - 1)) == 0;
}

static ContinuationTarget handle_hugetlb_key(PolicyParser *p, const char *key, const char *value) {
        int r;

        if (streq(key, "Size")) {
                if (check_duplicate(p, &p->size_line, key))
                        return CONTINUE_IGNORE;
                r = parse_size(value, &p->size_bytes);
                if (r < 0 || p->size_bytes == 0)
                        error_at(p, p->line, "invalid Size=%s; expected a size above zero such as 512M or 8G", value);
                else if (p->pages_line != 0)
                        error_at(p, p->line, "Size= and Pages= (line %u) both set; use one of them", p->pages_line);
                return CONTINUE_REJECT;
        }
        if (streq(key, "Pages")) {
                if (check_duplicate(p, &p->pages_line, key))
                        return CONTINUE_IGNORE;
                r = parse_u64(value, &p->pages);
                if (r < 0 || p->pages == 0)
                        error_at(p, p->line, "invalid Pages=%s; expected a page count above zero", value);
                else if (p->size_line != 0)
                        error_at(p, p->line, "Size= (line %u) and Pages= both set; use one of them", p->size_line);
                return CONTINUE_REJECT;
        }
        if (streq(key, "PageSize")) {
                if (check_duplicate(p, &p->page_size_line, key))
                        return CONTINUE_IGNORE;
                r = parse_size(value, &p->page_size_bytes);
                if (r < 0 || !is_power_of_two(p->page_size_bytes) || p->page_size_bytes < 4096)
                        error_at(p, p->line, "invalid PageSize=%s; expected a power of two of at least 4K, usually 2M or 1G",
                                 value);
                return CONTINUE_REJECT;
        }
        if (streq(key, "Node")) {
                if (check_duplicate(p, &p->node_line, key))
                        return CONTINUE_IGNORE;
                r = parse_u64(value, &p->node);
                if (r < 0 || p->node > HUGETLB_NODE_MAX)
                        error_at(p, p->line, "invalid Node=%s; expected a NUMA node number (0-%d)", value,
                                 HUGETLB_NODE_MAX);
                return CONTINUE_REJECT;
        }
        unknown_key(p, key);
        return CONTINUE_IGNORE;
}

static ContinuationTarget handle_knob_key(PolicyParser *p, const char *key, const char *value) {
        char buf[96];
        Knob k;
        int r;

        r = knob_from_policy_key(p->section, key, &k);
        if (r < 0) {
                if (g_str_has_prefix(key, "Enabled.") && streq(p->section, "TransparentHugePages"))
                        unknown_at(p, p->line, "unknown key %s= in [%s], ignored; per-size keys are Enabled.8K, "
                                   "Enabled.16K, ... Enabled.2M, ... Enabled.16G", key, p->section);
                else if (g_str_has_prefix(key, "ShmemEnabled.") && streq(p->section, "TransparentHugePages"))
                        unknown_at(p, p->line, "unknown key %s= in [%s], ignored; per-size keys are ShmemEnabled.8K, "
                                   "ShmemEnabled.16K, ... ShmemEnabled.2M, ... ShmemEnabled.16G", key, p->section);
                else
                        unknown_key(p, key);
                return CONTINUE_IGNORE;
        }
        if (check_duplicate(p, &p->knob_seen[k], key))
                return CONTINUE_IGNORE;

        r = knob_value_from_string(k, value, &p->knobs[k]);
        if (r == -ERANGE)
                error_at(p, p->line, "%s=%s is out of range; accepted: %s", key, value, knob_describe_values(k, buf));
        else if (r < 0)
                error_at(p, p->line, "invalid value '%s' for %s=; accepted: %s", value, key,
                         knob_describe_values(k, buf));
        return CONTINUE_REJECT;
}

static void handle_continuation(PolicyParser *p, const char *value) {
        switch (p->continuation) {
        case CONTINUE_UNITS:
                add_units(p, value);
                break;
        case CONTINUE_DESCRIPTION:
                g_string_append_printf(p->description, " %s", value);
                break;
        case CONTINUE_REJECT:
                error_at(p, p->line, "%s= takes a single value; this indented line continues it", p->continuation_key);
                break;
        case CONTINUE_IGNORE:
                break;
        }
}

static void handle_key(PolicyParser *p, const char *name, const char *value) {
        p->continuation = CONTINUE_IGNORE;
        g_free(p->continuation_key);
        p->continuation_key = g_strdup(name);
        if (*name == '\0') {
                error_at(p, p->line, "syntax error: missing key name before '='");
                return;
        }
        if (!p->section) {
                unknown_at(p, p->line, "%s= is outside of any section, ignored", name);
                return;
        }
        if (!p->section_known)
                return;
        if (*value == '\0') {
                error_at(p, p->line, "%s= has no value", name);
                return;
        }

        if (streq(p->section, "Policy"))
                p->continuation = handle_policy_key(p, name, value);
        else if (streq(p->section, "HugeTLB"))
                p->continuation = handle_hugetlb_key(p, name, value);
        else
                p->continuation = handle_knob_key(p, name, value);
}

static void parse_line(PolicyParser *p, char *line) {
        char *start, *end, *value;

        strip_trailing_space(line);
        start = skip_space(line);

        if (*start == '\0' || strchr(COMMENT_PREFIXES, *start))
                return;

        /* An indented line continues the last key's value; after a section header or a key
         * without a name there is nothing to continue, and it is read as a line of its own. */
        if (p->have_prev_key && start > line) {
                handle_continuation(p, start);
                return;
        }

        if (*start == '[') {
                end = find_chars_or_comment(start + 1, "]");
                if (*end != ']') {
                        error_at(p, p->line, "syntax error: a section header needs a closing ']'");
                        return;
                }
                *end = '\0';
                p->have_prev_key = false;
                begin_section(p, start + 1);
                return;
        }

        end = find_chars_or_comment(start, "=:");
        if (*end != '=' && *end != ':') {
                error_at(p, p->line, "syntax error: expected Key=Value, [Section] or a comment");
                return;
        }
        *end = '\0';
        strip_trailing_space(start);

        value = end + 1;
        *find_chars_or_comment(value, NULL) = '\0';
        value = skip_space(value);
        strip_trailing_space(value);

        p->have_prev_key = *start != '\0';
        handle_key(p, start, value);
}

/* True for bytes that never occur in a text file. A CR is allowed only before the newline. */
static bool is_binary_byte(unsigned char c) {
        return c == '\0' || c == 0x7f || (c < 0x20 && c != '\t' && c != '\r');
}

/* The line fed so far is complete: check it as text, then parse it. */
static void end_line(PolicyParser *p) {
        size_t len = p->len, stored = p->stored;
        bool binary = p->binary;
        char *text = p->buf;

        if (p->cr) {
                len--;
                stored = MIN(stored, len);
        }
        p->buf[stored] = '\0';
        p->stored = p->len = 0;
        p->cr = p->binary = false;
        p->line++;

        /* Everything after the first binary byte is noise: one error, and stop reading. */
        if (binary) {
                error_at(p, p->line, "binary data (a NUL byte or control character): not a policy file");
                p->stop = true;
                return;
        }

        if (len > POLICY_LINE_MAX)
                error_at(p, p->line, "line too long (%zu bytes, at most %u)", len, POLICY_LINE_MAX);
        else if (!g_utf8_validate(text, stored, NULL))
                error_at(p, p->line, "line is not valid UTF-8");
        else {
                if (p->line == 1 && g_str_has_prefix(text, UTF8_BOM))
                        text += strlen(UTF8_BOM);
                parse_line(p, text);
        }

        /* A file that is not a policy (a log, a 100 MB dump) would otherwise log one error per
         * line at every reload. */
        if (p->diag->n_errors - p->errors_before >= POLICY_ERRORS_MAX) {
                error_at(p, p->line, "too many errors (%u): the rest of the file is not read", POLICY_ERRORS_MAX);
                p->stop = true;
        }
}

/* A service-scoped policy reaches its services through prctl(PR_SET_THP_DISABLE), which has one
 * setting per process: THP off, or (6.18) only where advised. Every other knob is machine-wide,
 * so voting on it would impose the service's wish on everyone; the daemon ignores such a key
 * (warning), verify fails on it. A Scope=auto policy votes machine-wide too, so its other keys
 * stay, and so does a Scope=service one that wants always: always for a few services is always
 * machine-wide with every other service opted out (policy_inverts()), so it votes as a global
 * policy does. */
static void check_isolating_scope(PolicyParser *p) {
        const char *scope = policy_scope_to_string(p->scope);
        bool always = p->knob_seen[KNOB_ENABLED] != 0 && p->knobs[KNOB_ENABLED] == KNOB_ENABLED_ALWAYS;

        if (p->scope == POLICY_SCOPE_SERVICE && !always)
                FOREACH_KNOB(k)
                        if (k != KNOB_ENABLED && p->knob_seen[k] != 0)
                                unknown_at(p, p->knob_seen[k],
                                           "[%s] %s= is machine-wide and cannot apply to one service (Scope=service, "
                                           "line %u), ignored; move it to a policy with Scope=global or Scope=auto",
                                           knob_info(k)->section, knob_info(k)->key, p->scope_line);

        for (guint i = 0; i < p->units->len; i++) {
                const char *u = g_ptr_array_index(p->units, i);

                if (!g_str_has_suffix(u, ".service"))
                        unknown_at(p, p->units_line,
                                   "Units= entry '%s' is not a service: Scope=%s isolates the processes a "
                                   "service's ExecStart= starts, so it never applies to it", u, scope);
        }

        if (p->knob_seen[KNOB_ENABLED] == 0) {
                error_at(p, p->scope_line, "Scope=%s needs [TransparentHugePages] Enabled=never or madvise%s: "
                         "it is what the services get", scope, p->scope == POLICY_SCOPE_SERVICE ? " (or always)" : "");
                return;
        }
        if (always && p->scope != POLICY_SCOPE_SERVICE)
                error_at(p, p->knob_seen[KNOB_ENABLED], "Enabled=always cannot be asked for one service "
                         "(Scope=%s, line %u): a process can only opt out of THP; use Scope=service (always for its "
                         "services, madvise for every other) or Scope=global", scope, p->scope_line);
}

/* Checks that need the whole file. */
static void check_file(PolicyParser *p) {
        bool any_knob = false;

        FOREACH_KNOB(k)
                if (p->knob_seen[k] != 0)
                        any_knob = true;

        if (p->units_line == 0)
                error_at(p, p->policy_section_line, "[Policy] Units= is missing: the policy would never apply");

        if (p->hugetlb_section_line != 0 && p->size_line == 0 && p->pages_line == 0)
                error_at(p, p->hugetlb_section_line, "[HugeTLB] needs Size= or Pages=");

        if (!any_knob && p->size_line == 0 && p->pages_line == 0)
                error_at(p, 0, "no setting: the policy sets no [TransparentHugePages] or [Khugepaged] value "
                         "and no [HugeTLB] pool");
        else if (p->scope != POLICY_SCOPE_GLOBAL)
                check_isolating_scope(p);
}

static Policy *parser_build_policy(PolicyParser *p) {
        g_autoptr(Policy) policy = g_new0(Policy, 1);
        uint64_t page_size = p->page_size_bytes != 0 ? p->page_size_bytes : DEFAULT_PAGE_SIZE;

        policy->name = g_path_get_basename(p->path);
        policy->path = g_strdup(p->path);
        policy->description = p->description_line != 0 ? g_strdup(p->description->str) : NULL;
        g_ptr_array_add(p->units, NULL);
        policy->units = (char **) g_ptr_array_free(g_steal_pointer(&p->units), false);

        FOREACH_KNOB(k) {
                policy->knobs[k] = p->knob_seen[k] != 0 ? p->knobs[k] : KNOB_VALUE_UNSET;
                policy->knob_lines[k] = p->knob_seen[k];
        }
        policy->scope = p->scope;
        policy->service_thp = KNOB_VALUE_UNSET;
        if (p->scope != POLICY_SCOPE_GLOBAL)
                policy->service_thp = policy->knobs[KNOB_ENABLED];
        if (p->scope == POLICY_SCOPE_SERVICE && !policy_inverts(policy))
                FOREACH_KNOB(k)
                        policy->knobs[k] = KNOB_VALUE_UNSET;
        FOREACH_KNOB(k)
                if (policy->knobs[k] == KNOB_VALUE_UNSET)
                        policy->unset_knobs |= UINT64_C(1) << k;

        if (p->size_line != 0 || p->pages_line != 0) {
                policy->has_pool = true;
                policy->pool = (PoolRequest) {
                        .page_size_kb = page_size / 1024,
                        .node = p->node_line != 0 ? (int) p->node : POOL_NODE_ANY,
                        .pages = p->size_line != 0 ? p->size_bytes / page_size + !!(p->size_bytes % page_size)
                                                   : p->pages,
                };
        }
        return g_steal_pointer(&policy);
}

int policy_parser_new(const char *path, PolicyParseFlags flags, Diagnostics *diag, PolicyParser **ret) {
        PolicyParser *p;

        if (!path || !ret)
                return -EINVAL;

        p = g_new0(PolicyParser, 1);
        p->path = g_strdup(path);
        /* Callers that only want a yes or no need not collect diagnostics. */
        if (!diag) {
                diagnostics_init(&p->local_diag);
                diag = &p->local_diag;
        }
        p->diag = diag;
        p->strict = flags & POLICY_PARSE_STRICT;
        p->errors_before = diag->n_errors;
        p->description = g_string_new(NULL);
        p->units = g_ptr_array_new_with_free_func(g_free);

        *ret = p;
        return 0;
}

int policy_parser_feed(PolicyParser *p, const char *data, size_t size) {
        if (!p || (!data && size > 0))
                return -EINVAL;

        for (size_t i = 0; i < size && !p->stop; i++) {
                char c = data[i];

                p->n_bytes++;
                if (c == '\n') {
                        end_line(p);
                        continue;
                }
                if (is_binary_byte((unsigned char) c) || p->cr)
                        p->binary = true;
                p->cr = c == '\r';
                if (p->stored <= POLICY_LINE_MAX)
                        p->buf[p->stored++] = c;
                p->len++;
        }
        return !p->stop;
}

void policy_parser_read_error(PolicyParser *p, int error) {
        if (!p || p->stop)
                return;

        /* What was parsed stays reported, but without the rest of the file the checks that need
         * all of it would only add noise. */
        error_at(p, 0, "read error: %s", g_strerror(abs(error)));
        p->stop = true;
}

int policy_parser_finish(PolicyParser *p, Policy **ret) {
        if (!p || !ret)
                return -EINVAL;

        /* The last line need not end in a newline. */
        if (!p->stop && p->len > 0)
                end_line(p);

        if (p->n_bytes == 0 && !p->stop)
                error_at(p, 0, "empty file (in a policy directory an empty file masks the policy of that name)");
        else if (!p->stop)
                check_file(p);

        if (p->diag->n_errors > p->errors_before)
                return -EINVAL;
        *ret = parser_build_policy(p);
        return 0;
}

int policy_parse_text(const char *text, size_t size, const char *path, PolicyParseFlags flags, Diagnostics *diag,
                      Policy **ret) {
        g_autoptr(PolicyParser) p = NULL;
        int r;

        if (!text && size > 0)
                return -EINVAL;

        r = policy_parser_new(path, flags, diag, &p);
        if (r < 0)
                return r;
        r = policy_parser_feed(p, text, size);
        if (r < 0)
                return r;
        return policy_parser_finish(p, ret);
}

bool policy_unit_pattern_matches(const char *pattern, const char *unit) {
        g_autofree char *instances = NULL;
        const char *at;

        if (fnmatch(pattern, unit, FNM_NOESCAPE) == 0)
                return true;

        /* "foo@.service" names a template: it stands for every "foo@INSTANCE.service". */
        at = strchr(pattern, '@');
        if (!at || at[1] != '.')
                return false;
        instances = g_strdup_printf("%.*s*%s", (int) (at - pattern + 1), pattern, at + 1);
        return fnmatch(instances, unit, FNM_NOESCAPE) == 0;
}

bool policy_inverts(const Policy *p) {
        return p->scope == POLICY_SCOPE_SERVICE && p->service_thp == KNOB_ENABLED_ALWAYS;
}

bool policy_isolates(const Policy *p) {
        return (p->scope == POLICY_SCOPE_SERVICE || p->scope == POLICY_SCOPE_AUTO) && !policy_inverts(p);
}

bool policy_matches_unit(const Policy *p, const char *unit) {
        if (!p || !p->units || !unit)
                return false;
        for (char **u = p->units; *u; u++)
                if (policy_unit_pattern_matches(*u, unit))
                        return true;
        return false;
}
