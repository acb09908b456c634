/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <glib.h>
#include <inttypes.h>
#include <sys/stat.h>

#include "baseline.h"
#include "runtime-file.h"
#include "sysfs.h"
#include "util.h"

#define BASELINE_HEADER "# thpd baseline v1: the kernel's values before thpd changed them\n"

void baseline_init(Baseline *b) {
        *b = (Baseline) {};
        FOREACH_KNOB(k)
                b->knobs[k] = KNOB_VALUE_UNSET;
}

const PoolBaseline *baseline_find_pool(const Baseline *b, uint64_t page_size_kb, int node) {
        for (size_t i = 0; i < b->n_pools; i++)
                if (b->pools[i].page_size_kb == page_size_kb && b->pools[i].node == node)
                        return &b->pools[i];
        return NULL;
}

int baseline_set_pool(Baseline *b, uint64_t page_size_kb, int node, uint64_t pages) {
        PoolBaseline *p = (PoolBaseline *) baseline_find_pool(b, page_size_kb, node);

        if (!p) {
                if (b->n_pools >= RESOLVE_MAX_POOLS)
                        return -E2BIG;
                p = &b->pools[b->n_pools++];
        }
        *p = (PoolBaseline) { .page_size_kb = page_size_kb, .node = node, .pages = pages };
        return 0;
}

static int parse_line(Baseline *b, char *line) {
        g_auto(GStrv) words = g_strsplit(line, " ", -1);
        guint n = g_strv_length(words);
        uint64_t size, pages;
        int64_t node;
        Knob k;

        if (n == 3 && streq(words[0], "knob")) {
                if (knob_from_name(words[1], &k) < 0)
                        return 0; /* written by a thpd that knew more knobs: not ours to restore */
                return knob_value_from_string(k, words[2], &b->knobs[k]) < 0 ? -EBADMSG : 0;
        }
        if (n == 4 && streq(words[0], "pool")) {
                if (parse_u64(words[1], &size) < 0 || parse_u64(words[3], &pages) < 0)
                        return -EBADMSG;
                node = g_ascii_strtoll(words[2], NULL, 10);
                if (node < -1 || node > INT32_MAX)
                        return -EBADMSG;
                return baseline_set_pool(b, size, (int) node, pages) < 0 ? -EBADMSG : 0;
        }
        return -EBADMSG;
}

int baseline_load(const char *runtime_dir, Baseline *ret) {
        g_autofree char *path = g_build_filename(runtime_dir, BASELINE_FILE, NULL);
        _cleanup_free_ char *content = NULL;
        g_auto(GStrv) lines = NULL;
        Baseline b;
        int r;

        r = read_small_file(path, &content);
        if (r < 0)
                return r;
        if (!g_str_has_prefix(content, BASELINE_HEADER))
                return -EBADMSG;

        baseline_init(&b);
        lines = g_strsplit(content + strlen(BASELINE_HEADER), "\n", -1);
        for (size_t i = 0; lines[i]; i++) {
                if (lines[i][0] == '\0')
                        continue;
                r = parse_line(&b, lines[i]);
                if (r < 0)
                        return r;
        }

        *ret = b;
        return 0;
}

int baseline_save(const char *runtime_dir, const Baseline *b) {
        g_autoptr(GString) s = g_string_new(BASELINE_HEADER);
        char buf[24];

        FOREACH_KNOB(k)
                if (b->knobs[k] != KNOB_VALUE_UNSET)
                        g_string_append_printf(s, "knob %s %s\n", knob_name(k), knob_value_to_string(k, b->knobs[k], buf));
        for (size_t i = 0; i < b->n_pools; i++)
                g_string_append_printf(s, "pool %" PRIu64 " %d %" PRIu64 "\n",
                                       b->pools[i].page_size_kb, b->pools[i].node, b->pools[i].pages);
        return runtime_file_write(runtime_dir, BASELINE_FILE, s->str);
}

int baseline_remove(const char *runtime_dir) {
        return runtime_file_remove(runtime_dir, BASELINE_FILE);
}
