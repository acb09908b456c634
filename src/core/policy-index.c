/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <string.h>

#include "policy-index.h"
#include "util.h"

typedef struct TemplateEntry {
        guint position;
        const char *suffix; /* what follows the '@' of "foo@.service": ".service" */
} TemplateEntry;

typedef struct GlobEntry {
        guint position;
        const char *pattern;
} GlobEntry;

struct PolicyIndex {
        const GPtrArray *policies;
        GHashTable *positions; /* Policy* -> position + 1 */
        GHashTable *exact;     /* unit name -> GArray of guint positions */
        GHashTable *templates; /* "foo@" -> GArray of TemplateEntry */
        GArray *globs;         /* GlobEntry */
};

static void array_unref(gpointer a) {
        g_array_unref(a);
}

static GArray *bucket(GHashTable *table, char *key, size_t element_size) {
        GArray *a = g_hash_table_lookup(table, key);

        if (a) {
                g_free(key);
                return a;
        }
        a = g_array_new(FALSE, FALSE, element_size);
        g_hash_table_insert(table, key, a);
        return a;
}

static bool is_glob(const char *pattern) {
        /* fnmatch() with FNM_NOESCAPE: a backslash is an ordinary character. */
        return strpbrk(pattern, "*?[") != NULL;
}

PolicyIndex *policy_index_new(const GPtrArray *policies) {
        PolicyIndex *idx = g_new0(PolicyIndex, 1);

        idx->policies = policies;
        idx->positions = g_hash_table_new(g_direct_hash, g_direct_equal);
        idx->exact = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, array_unref);
        idx->templates = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, array_unref);
        idx->globs = g_array_new(FALSE, FALSE, sizeof(GlobEntry));

        for (guint i = 0; i < policies->len; i++) {
                const Policy *p = g_ptr_array_index(policies, i);

                g_hash_table_insert(idx->positions, (gpointer) p, GUINT_TO_POINTER(i + 1));
                for (char **u = p->units; u && *u; u++) {
                        const char *at = strchr(*u, '@');

                        if (is_glob(*u)) {
                                GlobEntry e = { .position = i, .pattern = *u };

                                g_array_append_val(idx->globs, e);
                        } else if (at && at[1] == '.') {
                                TemplateEntry e = { .position = i, .suffix = at + 1 };

                                g_array_append_val(bucket(idx->templates, g_strndup(*u, at - *u + 1),
                                                          sizeof(TemplateEntry)), e);
                        } else
                                g_array_append_val(bucket(idx->exact, g_strdup(*u), sizeof(guint)), i);
                }
        }
        return idx;
}

PolicyIndex *policy_index_free(PolicyIndex *idx) {
        if (!idx)
                return NULL;
        g_hash_table_unref(idx->positions);
        g_hash_table_unref(idx->exact);
        g_hash_table_unref(idx->templates);
        g_array_unref(idx->globs);
        g_free(idx);
        return NULL;
}

static gint compare_positions(gconstpointer a, gconstpointer b) {
        guint x = *(const guint *) a, y = *(const guint *) b;

        return x < y ? -1 : x > y;
}

static void add_position(GArray *found, guint position) {
        for (guint i = 0; i < found->len; i++)
                if (g_array_index(found, guint, i) == position)
                        return;
        g_array_append_val(found, position);
}

static void find_positions(const PolicyIndex *idx, const char *unit, GArray *found) {
        const GArray *exact = g_hash_table_lookup(idx->exact, unit);
        const char *at = strchr(unit, '@');

        for (guint i = 0; exact && i < exact->len; i++)
                add_position(found, g_array_index(exact, guint, i));

        /* A template's "foo@" has no other '@', so an instance of it has its first '@' there. */
        if (at) {
                g_autofree char *prefix = g_strndup(unit, at - unit + 1);
                const GArray *templates = g_hash_table_lookup(idx->templates, prefix);
                size_t rest = strlen(at + 1);

                for (guint i = 0; templates && i < templates->len; i++) {
                        const TemplateEntry *e = &g_array_index(templates, TemplateEntry, i);
                        size_t n = strlen(e->suffix);

                        if (rest >= n && streq(at + 1 + rest - n, e->suffix))
                                add_position(found, e->position);
                }
        }

        for (guint i = 0; i < idx->globs->len; i++) {
                const GlobEntry *e = &g_array_index(idx->globs, GlobEntry, i);

                if (policy_unit_pattern_matches(e->pattern, unit))
                        add_position(found, e->position);
        }
}

unsigned policy_index_lookup(const PolicyIndex *idx, const char *unit, GPtrArray *out) {
        g_autoptr(GArray) found = g_array_new(FALSE, FALSE, sizeof(guint));

        if (!idx || !unit)
                return 0;
        find_positions(idx, unit, found);
        g_array_sort(found, compare_positions);
        for (guint i = 0; i < found->len; i++)
                g_ptr_array_add(out, g_ptr_array_index(idx->policies, g_array_index(found, guint, i)));
        return found->len;
}

bool policy_index_matches(const PolicyIndex *idx, const char *unit) {
        g_autoptr(GArray) found = g_array_new(FALSE, FALSE, sizeof(guint));

        if (!idx || !unit)
                return false;
        find_positions(idx, unit, found);
        return found->len > 0;
}

int policy_index_position(const PolicyIndex *idx, const Policy *p) {
        return idx ? (int) GPOINTER_TO_UINT(g_hash_table_lookup(idx->positions, p)) - 1 : -1;
}
