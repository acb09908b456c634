/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <glib.h>

#include "thp-stats.h"
#include "util.h"

static const char *const thp_stat_table[_THP_STAT_MAX] = {
        [THP_STAT_ANON_FAULT_ALLOC] = "anon_fault_alloc",
        [THP_STAT_ANON_FAULT_FALLBACK] = "anon_fault_fallback",
        [THP_STAT_ANON_FAULT_FALLBACK_CHARGE] = "anon_fault_fallback_charge",
        [THP_STAT_NR_ANON] = "nr_anon",
        [THP_STAT_NR_ANON_PARTIALLY_MAPPED] = "nr_anon_partially_mapped",
        [THP_STAT_SPLIT] = "split",
        [THP_STAT_SPLIT_FAILED] = "split_failed",
        [THP_STAT_SPLIT_DEFERRED] = "split_deferred",
        [THP_STAT_SHMEM_ALLOC] = "shmem_alloc",
        [THP_STAT_SHMEM_FALLBACK] = "shmem_fallback",
        [THP_STAT_SHMEM_FALLBACK_CHARGE] = "shmem_fallback_charge",
        [THP_STAT_SWPOUT] = "swpout",
        [THP_STAT_SWPOUT_FALLBACK] = "swpout_fallback",
        [THP_STAT_ZSWPOUT] = "zswpout",
        [THP_STAT_SWPIN] = "swpin",
        [THP_STAT_SWPIN_FALLBACK] = "swpin_fallback",
        [THP_STAT_SWPIN_FALLBACK_CHARGE] = "swpin_fallback_charge",
        [THP_STAT_COLLAPSE_ALLOC] = "collapse_alloc",
        [THP_STAT_COLLAPSE_ALLOC_FAILED] = "collapse_alloc_failed",
        [THP_STAT_COLLAPSE_EXCEED_NONE_PTE] = "collapse_exceed_none_pte",
        [THP_STAT_COLLAPSE_EXCEED_SWAP_PTE] = "collapse_exceed_swap_pte",
        [THP_STAT_COLLAPSE_EXCEED_SHARED_PTE] = "collapse_exceed_shared_pte",
};

DEFINE_STRING_TABLE_LOOKUP(thp_stat, ThpStat);

/* ThpSizeStats.present has a bit per counter. */
G_STATIC_ASSERT(_THP_STAT_MAX <= 32);

bool thp_stat_is_gauge(ThpStat s) {
        return s == THP_STAT_NR_ANON || s == THP_STAT_NR_ANON_PARTIALLY_MAPPED;
}

int thp_size_dir_parse(const char *name, uint64_t *ret_size_kb) {
        g_autofree char *number = NULL;
        const char *p;
        uint64_t kb;
        size_t len;

        assert(ret_size_kb);

        if (!name || !g_str_has_prefix(name, "hugepages-") || !g_str_has_suffix(name, "kB"))
                return -EINVAL;
        p = name + strlen("hugepages-");
        len = strlen(p) - strlen("kB");
        number = g_strndup(p, len);
        if (parse_u64(number, &kb) < 0 || kb == 0)
                return -EINVAL;

        *ret_size_kb = kb;
        return 0;
}

int thp_size_stats_set(ThpSizeStats *s, const char *name, const char *content) {
        g_autofree char *number = NULL;
        ThpStat stat;
        uint64_t v;
        size_t len;

        assert(s);

        stat = thp_stat_from_string(name);
        if (stat < 0)
                return -ENOENT;
        if (!content)
                return -EBADMSG;

        len = strlen(content);
        if (len > 0 && content[len - 1] == '\n')
                len--;
        number = g_strndup(content, len);
        if (parse_u64(number, &v) < 0)
                return -EBADMSG;

        s->value[stat] = v;
        s->present |= 1u << stat;
        return 0;
}

KnobValue thp_size_effective_enabled(KnobValue size_enabled, KnobValue global_enabled) {
        if (size_enabled == KNOB_MTHP_INHERIT)
                return global_enabled;
        return size_enabled;
}

bool thp_size_stats_shown(const ThpSizeStats *s, KnobValue effective_enabled) {
        assert(s);

        if (thp_size_stats_has(s, THP_STAT_NR_ANON) && s->value[THP_STAT_NR_ANON] > 0)
                return true;
        /* Unknown is not on: a size without a per-size "enabled" has no anonymous THP at all
         * (6.18's 8 kB is for shmem only), and one that holds pages is shown above anyway. */
        return effective_enabled != KNOB_ENABLED_NEVER && effective_enabled != KNOB_VALUE_UNSET;
}
