/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <glib.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>

#include "util.h"

/* Suffixes as arrays, not pointers: a table of pointers is written by the dynamic loader at start
 * and costs each thpd process private memory (see KnobInfo in knob.h). */
typedef struct UnitSuffix {
        char suffix[4];
        uint64_t factor;
} UnitSuffix;

/* A decimal number followed by one of the suffixes in table ("" for none), times its factor.
 * Signs and blanks are refused, which strtoull() alone would take. */
static int parse_with_units(const char *s, const UnitSuffix *table, size_t n_table, uint64_t *ret) {
        char *end = NULL;
        unsigned long long n;

        if (!s || !isdigit((unsigned char) s[0]))
                return -EINVAL;

        errno = 0;
        n = strtoull(s, &end, 10);
        if (errno == ERANGE)
                return -ERANGE;
        if (errno != 0 || end == s)
                return -EINVAL;

        for (size_t i = 0; i < n_table; i++)
                if (streq(end, table[i].suffix)) {
                        if (n > UINT64_MAX / table[i].factor)
                                return -ERANGE;
                        *ret = (uint64_t) n * table[i].factor;
                        return 0;
                }

        return -EINVAL;
}

int parse_u64(const char *s, uint64_t *ret) {
        static const UnitSuffix none[] = { { "", 1ULL } };

        return parse_with_units(s, none, ELEMENTSOF(none), ret);
}

int parse_size(const char *s, uint64_t *ret) {
        static const UnitSuffix table[] = {
                { "",    1ULL },
                { "B",   1ULL },
                { "K",   1ULL << 10 }, { "KB",  1ULL << 10 }, { "KiB", 1ULL << 10 }, { "k", 1ULL << 10 }, { "kB", 1ULL << 10 },
                { "M",   1ULL << 20 }, { "MB",  1ULL << 20 }, { "MiB", 1ULL << 20 },
                { "G",   1ULL << 30 }, { "GB",  1ULL << 30 }, { "GiB", 1ULL << 30 },
                { "T",   1ULL << 40 }, { "TB",  1ULL << 40 }, { "TiB", 1ULL << 40 },
        };

        return parse_with_units(s, table, ELEMENTSOF(table), ret);
}

int parse_duration_usec(const char *s, uint64_t *ret) {
        static const UnitSuffix table[] = {
                { "",     1000000ULL },
                { "us",   1ULL },
                { "ms",   1000ULL },
                { "s",    1000000ULL }, { "sec",  1000000ULL },
                { "m",    60000000ULL }, { "min", 60000000ULL },
                { "h",    3600000000ULL },
                { "d",    86400000000ULL },
        };

        return parse_with_units(s, table, ELEMENTSOF(table), ret);
}

int parse_duration_usec_in_range(const char *s, uint64_t min, uint64_t max, uint64_t *ret) {
        uint64_t v;
        int r;

        r = parse_duration_usec(s, &v);
        if (r < 0)
                return r;
        if (v < min || v > max)
                return -ERANGE;

        *ret = v;
        return 0;
}

int parse_double_in_range(const char *s, bool percent, double min, bool min_inclusive, double max, double *ret) {
        g_autofree char *copy = NULL;
        char *end = NULL;
        size_t len;
        double d;

        if (!s || !g_ascii_isdigit(s[0]))
                return -EINVAL;

        copy = g_strdup(s);
        len = strlen(copy);
        if (percent && copy[len - 1] == '%')
                copy[len - 1] = '\0';

        errno = 0;
        d = g_ascii_strtod(copy, &end);
        if (errno == ERANGE || !isfinite(d))
                return -ERANGE;
        if (end == copy || *end != '\0')
                return -EINVAL;
        if (d > max || d < min || (!min_inclusive && d == min))
                return -ERANGE;

        *ret = d;
        return 0;
}

const char *format_page_size(uint64_t kb, char buf[static 24]) {
        if (kb >= (1ULL << 20) && kb % (1ULL << 20) == 0)
                snprintf(buf, 24, "%lluG", (unsigned long long) (kb >> 20));
        else if (kb >= 1024 && kb % 1024 == 0)
                snprintf(buf, 24, "%lluM", (unsigned long long) (kb >> 10));
        else
                snprintf(buf, 24, "%lluK", (unsigned long long) kb);
        return buf;
}

/* Optimal string alignment distance, ignoring ASCII case: "Enabeld" is one step from
 * "Enabled", as people count typos. Words longer than SUGGEST_MAX_LEN get no suggestion. */
#define SUGGEST_MAX_LEN 64

static unsigned edit_distance(const char *a, size_t la, const char *b, size_t lb) {
        /* Row i needs only rows i-1 and i-2 (the transposition); the whole matrix would be 17 kB
         * of stack, which stays resident in the daemon for good once a policy has a typo. */
        unsigned rows[3][SUGGEST_MAX_LEN + 1];

        for (size_t j = 0; j <= lb; j++)
                rows[0][j] = (unsigned) j;
        for (size_t i = 1; i <= la; i++) {
                unsigned *d = rows[i % 3];
                const unsigned *up = rows[(i + 2) % 3], *up2 = rows[(i + 1) % 3]; /* rows i-1, i-2 */

                d[0] = (unsigned) i;
                for (size_t j = 1; j <= lb; j++) {
                        unsigned cost = tolower((unsigned char) a[i - 1]) != tolower((unsigned char) b[j - 1]);
                        unsigned best = up[j - 1] + cost;

                        if (up[j] + 1 < best)
                                best = up[j] + 1;
                        if (d[j - 1] + 1 < best)
                                best = d[j - 1] + 1;
                        if (i > 1 && j > 1 && tolower((unsigned char) a[i - 1]) == tolower((unsigned char) b[j - 2]) &&
                            tolower((unsigned char) a[i - 2]) == tolower((unsigned char) b[j - 1]) &&
                            up2[j - 2] + 1 < best)
                                best = up2[j - 2] + 1;
                        d[j] = best;
                }
        }
        return rows[la % 3][lb];
}

const char *closest_match(const char *word, const char *const *candidates, size_t n) {
        size_t lw = strlen(word);
        const char *best = NULL;
        unsigned best_distance = UINT_MAX;

        if (lw == 0 || lw > SUGGEST_MAX_LEN)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                size_t lc = strlen(candidates[i]);
                /* Short names tolerate one typo, longer ones two or three; more is another word. */
                unsigned allowed = lc <= 4 ? 1 : lc <= 10 ? 2 : 3, d;

                if (lc > SUGGEST_MAX_LEN)
                        continue;
                d = edit_distance(word, lw, candidates[i], lc);
                if (d <= allowed && d < best_distance) {
                        best = candidates[i];
                        best_distance = d;
                }
        }
        return best;
}

bool string_is_digits(const char *s) {
        if (!*s)
                return false;
        for (; *s; s++)
                if (!isdigit((unsigned char) *s))
                        return false;
        return true;
}

int string_table_lookup(const char *const *table, size_t n, const char *s) {
        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                if (streq_ptr(table[i], s))
                        return (int) i;
        return -EINVAL;
}

int compare_strings(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

size_t sorted_strings_search(const char *const *sorted, size_t n, const char *name, bool *ret_found) {
        size_t lo = 0, hi = n;

        *ret_found = false;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = strcmp(sorted[mid], name);

                if (c == 0) {
                        *ret_found = true;
                        return mid;
                }
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

uint64_t now_usec(clockid_t clock) {
        struct timespec ts;

        clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

uint64_t fnv1a_feed(uint64_t h, const void *data, size_t size) {
        const uint8_t *p = data;

        for (size_t i = 0; i < size; i++)
                h = (h ^ p[i]) * UINT64_C(0x100000001b3);
        return h;
}
