/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <ctype.h>
#include <inttypes.h>

#include "knob.h"
#include "util.h"

enum {
        WORDS_ENABLED,
        WORDS_DEFRAG,
        WORDS_SHMEM,
        WORDS_MTHP_ENABLED,
        WORDS_MTHP_SHMEM,
};

/* Strictest first; an empty string ends a shorter list. Arrays, not pointers: see KnobInfo. */
static const char word_lists[][7][14] = {
        [WORDS_ENABLED] = { "never", "madvise", "always" },
        [WORDS_DEFRAG] = { "never", "defer", "madvise", "defer+madvise", "always" },
        [WORDS_SHMEM] = { "deny", "never", "advise", "within_size", "always", "force" },
        /* "inherit" sits last (KNOB_MTHP_INHERIT) because its strictness is borrowed, not its own. */
        [WORDS_MTHP_ENABLED] = { "never", "madvise", "always", "inherit" },
        /* The global shmem words without "deny" and "force", in the same order, so that a word's
         * rank is its index in WORDS_SHMEM (strictness_rank()); "inherit" last, as above. */
        [WORDS_MTHP_SHMEM] = { "never", "advise", "within_size", "always", "inherit" },
};

#define WORD_KNOB(n, s, k, w) { .name = n, .section = s, .key = k, .kind = KNOB_KIND_WORD, .word_list = w }
#define NUMBER_KNOB(n, k, lo, hi, higher) \
        { .name = n, .section = "Khugepaged", .key = k, .kind = KNOB_KIND_NUMBER, \
          .min = lo, .max = hi, .higher_is_stricter = higher }
/* A 0/1 file directly under transparent_hugepage/: a number, as the kernel shows it. */
#define FLAG_KNOB(n, k, higher) \
        { .name = n, .section = "TransparentHugePages", .key = k, .kind = KNOB_KIND_NUMBER, \
          .min = 0, .max = 1, .higher_is_stricter = higher }
#define MTHP_KNOB(kb, size) \
        WORD_KNOB("hugepages-" #kb "kB/enabled", "TransparentHugePages", "Enabled." size, WORDS_MTHP_ENABLED)
#define MTHP_SHMEM_KNOB(kb, size) \
        WORD_KNOB("hugepages-" #kb "kB/shmem_enabled", "TransparentHugePages", "ShmemEnabled." size, WORDS_MTHP_SHMEM)

static const KnobInfo knob_table[_KNOB_MAX] = {
        [KNOB_ENABLED] = WORD_KNOB("enabled", "TransparentHugePages", "Enabled", WORDS_ENABLED),
        [KNOB_DEFRAG] = WORD_KNOB("defrag", "TransparentHugePages", "Defrag", WORDS_DEFRAG),
        [KNOB_SHMEM_ENABLED] =
                WORD_KNOB("shmem_enabled", "TransparentHugePages", "ShmemEnabled", WORDS_SHMEM),
        [KNOB_KHUGEPAGED_DEFRAG] = NUMBER_KNOB("khugepaged/defrag", "Defrag", 0, 1, false),
        [KNOB_KHUGEPAGED_MAX_PTES_NONE] = NUMBER_KNOB("khugepaged/max_ptes_none", "MaxPtesNone", 0, 511, false),
        [KNOB_KHUGEPAGED_MAX_PTES_SWAP] = NUMBER_KNOB("khugepaged/max_ptes_swap", "MaxPtesSwap", 0, 511, false),
        [KNOB_KHUGEPAGED_MAX_PTES_SHARED] = NUMBER_KNOB("khugepaged/max_ptes_shared", "MaxPtesShared", 0, 511, false),
        [KNOB_KHUGEPAGED_PAGES_TO_SCAN] = NUMBER_KNOB("khugepaged/pages_to_scan", "PagesToScan", 1, UINT32_MAX, false),
        [KNOB_KHUGEPAGED_SCAN_SLEEP_MILLISECS] =
                NUMBER_KNOB("khugepaged/scan_sleep_millisecs", "ScanSleepMillisecs", 0, UINT32_MAX, true),
        [KNOB_KHUGEPAGED_ALLOC_SLEEP_MILLISECS] =
                NUMBER_KNOB("khugepaged/alloc_sleep_millisecs", "AllocSleepMillisecs", 0, UINT32_MAX, true),
        /* 1 is stricter: the shrinker splits THPs that are mostly zero-filled under memory
         * pressure, so 0 keeps more THP memory. */
        [KNOB_SHRINK_UNDERUSED] = FLAG_KNOB("shrink_underused", "ShrinkUnderused", true),
        /* 1 is stricter: a read fault maps the one shared huge zero page, where 0 makes it
         * allocate and zero a huge page of its own (do_huge_pmd_anonymous_page()). */
        [KNOB_USE_ZERO_PAGE] = FLAG_KNOB("use_zero_page", "UseZeroPage", true),
        [KNOB_MTHP_FIRST + 0] = MTHP_KNOB(8, "8K"),
        [KNOB_MTHP_FIRST + 1] = MTHP_KNOB(16, "16K"),
        [KNOB_MTHP_FIRST + 2] = MTHP_KNOB(32, "32K"),
        [KNOB_MTHP_FIRST + 3] = MTHP_KNOB(64, "64K"),
        [KNOB_MTHP_FIRST + 4] = MTHP_KNOB(128, "128K"),
        [KNOB_MTHP_FIRST + 5] = MTHP_KNOB(256, "256K"),
        [KNOB_MTHP_FIRST + 6] = MTHP_KNOB(512, "512K"),
        [KNOB_MTHP_FIRST + 7] = MTHP_KNOB(1024, "1M"),
        [KNOB_MTHP_FIRST + 8] = MTHP_KNOB(2048, "2M"),
        [KNOB_MTHP_FIRST + 9] = MTHP_KNOB(4096, "4M"),
        [KNOB_MTHP_FIRST + 10] = MTHP_KNOB(8192, "8M"),
        [KNOB_MTHP_FIRST + 11] = MTHP_KNOB(16384, "16M"),
        [KNOB_MTHP_FIRST + 12] = MTHP_KNOB(32768, "32M"),
        [KNOB_MTHP_FIRST + 13] = MTHP_KNOB(65536, "64M"),
        [KNOB_MTHP_FIRST + 14] = MTHP_KNOB(131072, "128M"),
        [KNOB_MTHP_FIRST + 15] = MTHP_KNOB(262144, "256M"),
        [KNOB_MTHP_FIRST + 16] = MTHP_KNOB(524288, "512M"),
        [KNOB_MTHP_FIRST + 17] = MTHP_KNOB(1048576, "1G"),
        [KNOB_MTHP_FIRST + 18] = MTHP_KNOB(2097152, "2G"),
        [KNOB_MTHP_FIRST + 19] = MTHP_KNOB(4194304, "4G"),
        [KNOB_MTHP_FIRST + 20] = MTHP_KNOB(8388608, "8G"),
        [KNOB_MTHP_FIRST + 21] = MTHP_KNOB(16777216, "16G"),
        [KNOB_MTHP_SHMEM_FIRST + 0] = MTHP_SHMEM_KNOB(8, "8K"),
        [KNOB_MTHP_SHMEM_FIRST + 1] = MTHP_SHMEM_KNOB(16, "16K"),
        [KNOB_MTHP_SHMEM_FIRST + 2] = MTHP_SHMEM_KNOB(32, "32K"),
        [KNOB_MTHP_SHMEM_FIRST + 3] = MTHP_SHMEM_KNOB(64, "64K"),
        [KNOB_MTHP_SHMEM_FIRST + 4] = MTHP_SHMEM_KNOB(128, "128K"),
        [KNOB_MTHP_SHMEM_FIRST + 5] = MTHP_SHMEM_KNOB(256, "256K"),
        [KNOB_MTHP_SHMEM_FIRST + 6] = MTHP_SHMEM_KNOB(512, "512K"),
        [KNOB_MTHP_SHMEM_FIRST + 7] = MTHP_SHMEM_KNOB(1024, "1M"),
        [KNOB_MTHP_SHMEM_FIRST + 8] = MTHP_SHMEM_KNOB(2048, "2M"),
        [KNOB_MTHP_SHMEM_FIRST + 9] = MTHP_SHMEM_KNOB(4096, "4M"),
        [KNOB_MTHP_SHMEM_FIRST + 10] = MTHP_SHMEM_KNOB(8192, "8M"),
        [KNOB_MTHP_SHMEM_FIRST + 11] = MTHP_SHMEM_KNOB(16384, "16M"),
        [KNOB_MTHP_SHMEM_FIRST + 12] = MTHP_SHMEM_KNOB(32768, "32M"),
        [KNOB_MTHP_SHMEM_FIRST + 13] = MTHP_SHMEM_KNOB(65536, "64M"),
        [KNOB_MTHP_SHMEM_FIRST + 14] = MTHP_SHMEM_KNOB(131072, "128M"),
        [KNOB_MTHP_SHMEM_FIRST + 15] = MTHP_SHMEM_KNOB(262144, "256M"),
        [KNOB_MTHP_SHMEM_FIRST + 16] = MTHP_SHMEM_KNOB(524288, "512M"),
        [KNOB_MTHP_SHMEM_FIRST + 17] = MTHP_SHMEM_KNOB(1048576, "1G"),
        [KNOB_MTHP_SHMEM_FIRST + 18] = MTHP_SHMEM_KNOB(2097152, "2G"),
        [KNOB_MTHP_SHMEM_FIRST + 19] = MTHP_SHMEM_KNOB(4194304, "4G"),
        [KNOB_MTHP_SHMEM_FIRST + 20] = MTHP_SHMEM_KNOB(8388608, "8G"),
        [KNOB_MTHP_SHMEM_FIRST + 21] = MTHP_SHMEM_KNOB(16777216, "16G"),
};

const KnobInfo *knob_info(Knob k) {
        if (k < 0 || k >= _KNOB_MAX)
                return NULL;
        return &knob_table[k];
}

const char *knob_word(const KnobInfo *info, KnobValue i) {
        if (!info || info->kind != KNOB_KIND_WORD || i < 0 || i >= (KnobValue) ELEMENTSOF(word_lists[0]))
                return NULL;
        return word_lists[info->word_list][i][0] ? word_lists[info->word_list][i] : NULL;
}

bool knob_is_mthp(Knob k) {
        return k >= KNOB_MTHP_FIRST && k < _KNOB_MAX;
}

bool knob_is_mthp_shmem(Knob k) {
        return k >= KNOB_MTHP_SHMEM_FIRST && k < _KNOB_MAX;
}

uint64_t knob_mthp_size_kb(Knob k) {
        if (!knob_is_mthp(k))
                return 0;
        return KNOB_MTHP_MIN_KB << ((k - KNOB_MTHP_FIRST) % KNOB_MTHP_SLOTS);
}

static int mthp_slot(Knob first, uint64_t size_kb, Knob *ret) {
        for (unsigned i = 0; i < KNOB_MTHP_SLOTS; i++)
                if ((KNOB_MTHP_MIN_KB << i) == size_kb) {
                        *ret = first + (Knob) i;
                        return 0;
                }
        return -ENOENT;
}

int knob_mthp_from_size_kb(uint64_t size_kb, Knob *ret) {
        return mthp_slot(KNOB_MTHP_FIRST, size_kb, ret);
}

int knob_mthp_shmem_from_size_kb(uint64_t size_kb, Knob *ret) {
        return mthp_slot(KNOB_MTHP_SHMEM_FIRST, size_kb, ret);
}

Knob knob_inherits_from(Knob k) {
        if (knob_is_mthp_shmem(k))
                return KNOB_SHMEM_ENABLED;
        if (knob_is_mthp(k))
                return KNOB_ENABLED;
        return _KNOB_INVALID;
}

int knob_from_name(const char *name, Knob *ret) {
        if (!name)
                return -EINVAL;
        FOREACH_KNOB(k)
                if (streq(knob_table[k].name, name)) {
                        *ret = k;
                        return 0;
                }
        return -ENOENT;
}

int knob_from_policy_key(const char *section, const char *key, Knob *ret) {
        if (!section || !key)
                return -EINVAL;
        FOREACH_KNOB(k)
                if (streq(knob_table[k].section, section) && streq(knob_table[k].key, key)) {
                        *ret = k;
                        return 0;
                }
        return -ENOENT;
}

static int word_index(const KnobInfo *info, const char *word, size_t len) {
        const char *w;

        for (int i = 0; (w = knob_word(info, i)); i++)
                if (strlen(w) == len && strncmp(w, word, len) == 0)
                        return i;
        return -EINVAL;
}

static int number_in_range(const KnobInfo *info, const char *s, KnobValue *ret) {
        uint64_t n;
        int r;

        r = parse_u64(s, &n);
        if (r < 0)
                return r;
        if (n < info->min || n > info->max)
                return -ERANGE;
        *ret = (KnobValue) n;
        return 0;
}

int knob_value_from_string(Knob k, const char *s, KnobValue *ret) {
        const KnobInfo *info = knob_info(k);
        int i;

        if (!info || !s)
                return -EINVAL;

        if (info->kind == KNOB_KIND_NUMBER) {
                /* The 0/1 knobs are booleans to the kernel; accept the usual spellings. */
                if (info->min == 0 && info->max == 1) {
                        if (streq(s, "yes") || streq(s, "true") || streq(s, "on"))
                                s = "1";
                        else if (streq(s, "no") || streq(s, "false") || streq(s, "off"))
                                s = "0";
                }
                return number_in_range(info, s, ret);
        }

        i = word_index(info, s, strlen(s));
        if (i < 0)
                return i;
        *ret = i;
        return 0;
}

int knob_value_from_sysfs(Knob k, const char *content, KnobValue *ret) {
        const KnobInfo *info = knob_info(k);
        const char *open, *close;
        char word[64];
        size_t len;
        int i;

        if (!info || !content)
                return -EINVAL;

        if (info->kind == KNOB_KIND_NUMBER) {
                len = strcspn(content, "\n");
                if (len == 0 || len >= sizeof word)
                        return -EBADMSG;
                memcpy(word, content, len);
                word[len] = '\0';
                return number_in_range(info, word, ret) < 0 ? -EBADMSG : 0;
        }

        open = strchr(content, '[');
        if (open) {
                close = strchr(open, ']');
                if (!close || strchr(close + 1, '['))
                        return -EBADMSG;
                i = word_index(info, open + 1, (size_t) (close - open - 1));
        } else {
                /* A single bare word: what a plain file in a test tree holds after a write. */
                while (isspace((unsigned char) *content))
                        content++;
                len = strcspn(content, " \t\n");
                if (content[len] != '\0' && content[len + strspn(content + len, " \t\n")] != '\0')
                        return -EBADMSG;
                i = word_index(info, content, len);
        }
        if (i < 0)
                return -EBADMSG;
        *ret = i;
        return 0;
}

const char *knob_value_to_string(Knob k, KnobValue v, char buf[static 24]) {
        const KnobInfo *info = knob_info(k);

        if (!info || v == KNOB_VALUE_UNSET)
                return "(unset)";
        if (info->kind == KNOB_KIND_NUMBER) {
                snprintf(buf, 24, "%" PRIi64, v);
                return buf;
        }
        return knob_word(info, v) ?: "(invalid)";
}

/* Per-size shmem words rank as the same word of the global shmem_enabled, which has "deny"
 * before "never": one scale for an explicit word and an "inherit" of the global value. */
static KnobValue strictness_rank(Knob k, KnobValue v, KnobValue global) {
        const KnobInfo *info = knob_info(k);

        if (knob_is_mthp_shmem(k)) {
                if (v == KNOB_MTHP_SHMEM_INHERIT)
                        return global == KNOB_VALUE_UNSET ? 0 : global;
                return v + 1;
        }
        if (knob_is_mthp(k) && v == KNOB_MTHP_INHERIT)
                return global == KNOB_VALUE_UNSET ? 0 : global;
        if (info->kind == KNOB_KIND_NUMBER && info->higher_is_stricter)
                return -v;
        return v;
}

int knob_compare_strictness(Knob k, KnobValue a, KnobValue b, KnobValue global) {
        KnobValue ra = strictness_rank(k, a, global), rb = strictness_rank(k, b, global);

        return ra < rb ? -1 : ra > rb ? 1 : 0;
}

void knob_write_order(const KnobValue target[static _KNOB_MAX], Knob ret[static _KNOB_MAX]) {
        KnobValue force = word_index(knob_info(KNOB_SHMEM_ENABLED), "force", strlen("force"));
        bool shmem_last = target[KNOB_SHMEM_ENABLED] == force;
        size_t n = 0;

        assert(force >= 0);
        /* The per-size shmem knobs are last in the table: after them means at the end. */
        FOREACH_KNOB(k)
                if (!(shmem_last && k == KNOB_SHMEM_ENABLED))
                        ret[n++] = k;
        if (shmem_last)
                ret[n++] = KNOB_SHMEM_ENABLED;
        assert(n == _KNOB_MAX);
}

const char *knob_describe_values(Knob k, char buf[static 96]) {
        const KnobInfo *info = knob_info(k);
        size_t n = 0;

        if (!info)
                return "";
        if (info->kind == KNOB_KIND_NUMBER) {
                snprintf(buf, 96, "%" PRIu64 "-%" PRIu64, info->min, info->max);
                return buf;
        }
        buf[0] = '\0';
        for (KnobValue i = 0; knob_word(info, i); i++)
                n += (size_t) snprintf(buf + n, 96 - n, "%s%s", i > 0 ? ", " : "", knob_word(info, i));
        return buf;
}
